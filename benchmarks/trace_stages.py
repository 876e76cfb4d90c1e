"""Where ``analyze --format json`` on an nvprof metrics + trace pair spends its time, stage by stage, in one
fresh process (the figure ``benchmarks/run.py`` compares with a bare ``read_csv`` is the command's whole run):

    python benchmarks/trace_stages.py METRICS TRACE [--gpu gtx-1080-ti] [--json]

Stages, in the order the command runs them: import (pandas, the importers, the models' registry), read metrics,
read trace, combine (drop overlaps, the metrics + trace join), models (launch geometry and every built-in
model), review + JSON (groups, verdicts, advice and the report, encoded and thrown away). Each line gives wall
and CPU seconds (the process's, every thread's), the main thread's own CPU seconds and the process's peak RSS
after the stage; ``--json`` prints them as one JSON object. The trace is parsed by pyarrow on a thread of its own
while the main thread takes the blocks apart (``nvprof_trace._ReadAhead``): on an idle machine the stage's wall is
about the main thread's CPU, the rest of its CPU ran beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path


def stages(metrics: Path, trace: Path, gpu: str | None) -> list[dict[str, float | str]]:
    """[{stage, wall_s, cpu_s, main_s, peak_mb}] of one analysis of the pair, in this process."""
    out: list[dict[str, float | str]] = []
    mark = [time.perf_counter(), time.process_time(), time.thread_time()]

    def lap(stage: str) -> None:
        wall, cpu, main = time.perf_counter(), time.process_time(), time.thread_time()
        out.append({"stage": stage, "wall_s": wall - mark[0], "cpu_s": cpu - mark[1], "main_s": main - mark[2],
                    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
        mark[:] = [wall, cpu, main]

    from nvperf_bridge.text_storage import python_text

    with python_text():  # the text storage the command line runs with
        from nvperf_bridge.analysis import analyze
        from nvperf_bridge.importers import read_parts
        from nvperf_bridge.importers.merge import combine
        from nvperf_bridge.registry import load_registry
        from nvperf_bridge.reports.json_report import iter_json

        registry = load_registry([])
        lap("import")
        parsed = read_parts(metrics)
        lap("read metrics")
        parsed += read_parts(trace)
        lap("read trace")
        imported = combine(parsed)
        del parsed
        lap("combine")
        analysis = analyze(imported, gpu=gpu, registry=registry)
        lap("models")
        with open(os.devnull, "wb") as sink:
            for chunk in iter_json(analysis):
                sink.write(chunk)
        lap("review + JSON")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("metrics", type=Path)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--gpu", default="gtx-1080-ti", help="GPU profile id (default: gtx-1080-ti, the generator's)")
    parser.add_argument("--json", action="store_true", help="print the stages as JSON")
    args = parser.parse_args(argv)
    rows = stages(args.metrics, args.trace, args.gpu)
    if args.json:
        print(json.dumps(rows))
    else:
        for row in rows:
            print(f"{row['stage']:14s} {row['wall_s']:7.3f} s wall {row['cpu_s']:7.3f} s CPU "
                  f"({row['main_s']:6.3f} s main thread)  peak {row['peak_mb']:6.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

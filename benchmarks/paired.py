"""Two installs of nvperf-bridge timed in alternation on the same inputs, with the floor measured between them.

    python benchmarks/paired.py OLD_VENV/bin/nvperf-bridge NEW_VENV/bin/nvperf-bridge --workdir /tmp/nvb \\
        --case small-json --case details --pairs 8

One run of ``benchmarks/run.py`` per commit cannot tell a 5% change from this machine's noise (its floors move
by more than that between runs). Here each round runs the old and the new command back to back (their order
swapped every round) and then the floor (``python -c "import pandas"`` for the small file, a bare ``read_csv``
of the same file for the large inputs), each a fresh process measured by ``run.run_child`` (wall, CPU of the
whole process tree). Printed per case: the medians, each command against the floor, and the median of the
per-round new/old ratios, the figure that says whether a change made a command faster.

Cases: small-json, small-md, small-xlsx (the magus rodinia lud pair, as ``run.py``'s small step runs it), raw,
details, details-old, nvprof (the generated inputs of ``--workdir``, ``--size`` launches each, as ``run.py``
names them; ``python benchmarks/generate.py all N DIR`` writes them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import run

SIZES = {"raw": 100_000, "details": 10_000, "details-old": 20_000, "nvprof": 1_000_000}
KINDS = {"raw": "ncu-raw", "details": "ncu-details", "details-old": "ncu-details-old", "nvprof": "nvprof"}
SMALL_FORMATS = {"small-json": ("small.json", ["--format", "json"]), "small-md": ("small.md", []),
                 "small-xlsx": ("small.xlsx", [])}


def case_commands(case: str, workdir: Path, realdata: Path, size: int | None) -> tuple[list[str], list[str]]:
    """The analyze arguments of ``case`` (after the console script) and its floor command."""
    if case in SMALL_FORMATS:
        out, extra = SMALL_FORMATS[case]
        pair = [str(realdata / "magus" / name) for name in run.SMALL_PAIR]
        args = ["analyze", *pair, "-o", str(workdir / f"paired-{out}"), "--force", "-q", *extra]
        return args, [sys.executable, "-c", "import pandas"]
    n = size or SIZES[case]
    names = {"raw": [f"train_step_{n}.ncu-raw.csv"], "details": [f"train_step_{n}.ncu-details.csv"],
             "details-old": [f"train_step_{n}.ncu-details-old.log"],
             "nvprof": [f"train_step_{n}_metrics.csv", f"train_step_{n}_trace.csv"]}[case]
    paths = [workdir / name for name in names]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise SystemExit(f"paired.py: {', '.join(missing)} not found; write it with benchmarks/generate.py")
    args = ["analyze", *map(str, paths), "--gpu", run.GPU[KINDS[case]], "--format", "json",
            "-o", str(workdir / "paired.json"), "--force", "-q"]
    table = paths[-1]  # an nvprof pair's floor reads its trace, as run.py's json step does
    return args, [sys.executable, "-c", run.read_csv_code([table])]


def measure(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh run of ``cmd``."""
    wall, _ = run.run_child(cmd)
    return wall, run.CPU_SECONDS[" ".join(cmd)][-1]


def compare(old: str, new: str, case: str, pairs: int, workdir: Path, realdata: Path, size: int | None) -> list[str]:
    args, floor = case_commands(case, workdir, realdata, size)
    times: dict[str, list[tuple[float, float]]] = {"old": [], "new": [], "floor": []}
    for round_ in range(pairs):
        for name in ("old", "new") if round_ % 2 == 0 else ("new", "old"):
            times[name].append(measure([old if name == "old" else new, *args]))
        times["floor"].append(measure(floor))

    def median(name: str, part: int) -> float:
        return statistics.median(t[part] for t in times[name])

    lines = [f"{case} ({pairs} rounds):"]
    for name in ("old", "new"):
        lines.append(f"  {name}: wall {median(name, 0):.3f} s ({median(name, 0) / median('floor', 0):.2f}x the floor), "
                     f"CPU {median(name, 1):.3f} s ({median(name, 1) / median('floor', 1):.2f}x)")
    lines.append(f"  floor: wall {median('floor', 0):.3f} s, CPU {median('floor', 1):.3f} s")
    wall_ratio = statistics.median(n[0] / o[0] for n, o in zip(times["new"], times["old"]))
    cpu_ratio = statistics.median(n[1] / o[1] for n, o in zip(times["new"], times["old"]))
    lines.append(f"  new/old per round (median): wall {wall_ratio:.3f}x, CPU {cpu_ratio:.3f}x")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the old install's nvperf-bridge console script")
    parser.add_argument("new", help="the new install's nvperf-bridge console script")
    parser.add_argument("--case", action="append", choices=[*SMALL_FORMATS, *SIZES], required=True)
    parser.add_argument("--pairs", type=int, default=6, help="rounds per case (default 6)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/nvb"), help="the generated inputs' folder")
    parser.add_argument("--size", type=int, help="launches of the generated input (default: run.py's sizes)")
    parser.add_argument("--realdata", type=Path, default=run.REPO.parent / "shared" / "realdata")
    options = parser.parse_args(argv)
    for script in (options.old, options.new):
        if not os.access(script, os.X_OK):
            raise SystemExit(f"paired.py: {script}: no such console script; pass an install's bin/nvperf-bridge")
    for case in options.case:
        print("\n".join(compare(options.old, options.new, case, options.pairs, options.workdir, options.realdata,
                                options.size)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

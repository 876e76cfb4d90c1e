"""Are the reports the same before and after a speed-only change? Writes them, then compares two runs.

    python benchmarks/same_results.py /tmp/before                      # on the old code
    python benchmarks/same_results.py /tmp/after --against /tmp/before # on the new code: lists what differs
    python benchmarks/same_results.py /tmp/x --file /tmp/bench/train_step_100000.ncu-raw.csv=b200

Each input is analysed alone, in a fresh ``nvperf-bridge analyze`` process per output format (JSON, CSV,
Markdown), as a user runs it. Inputs: every real ncu file (raw page and details) and nvprof trace under
``../shared/realdata`` (found by content, as the importers find them; ``--realdata``), and the files named
by ``--file PATH[=GPU]`` (generated pages; GPU is the ``--gpu`` profile). What a run writes per input and
format: the report, or the exit code and the error message where ``analyze`` refused the file (a file
that names no device is analysed again with the GPU its folder's README names, ``README_GPU``). Nothing is
left out of the comparison but the report's creation time (JSON ``created``, Markdown's "Created" line):
every kernel, every number, every warning and note counts.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("json", "csv", "md")
# the formats whose tables the speed work touches: ncu raw and details, the nvprof trace (pyarrow's reader)
SNIFFED = ("ncu-raw", "ncu-details", "nvprof-trace")
# the GPU each folder's README names, for files that name no device (analyze then needs --gpu)
README_GPU = {"actual-parameter-collection": "a100-40gb", "deeplearningprofiling": "v100-sxm2",
              "optimal_unified_memory": "v100-sxm2"}
# the creation time, the one thing that differs between two runs of the same analysis
_CREATED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:\+00:00|Z)")


def real_inputs(realdata: Path, kinds: tuple[str, ...] = SNIFFED) -> list[tuple[Path, str | None]]:
    """Every file under ``realdata`` whose first table is one of ``kinds`` (its head sniffed), and the
    error-only ncu output (ncu's kinds only)."""
    from nvperf_bridge.importers.sniff import sniff_text

    found = []
    for path in sorted(p for p in realdata.rglob("*") if p.is_file() and p.name != "README.md"):
        with open(path, "rb") as fh:
            head = fh.read(1 << 20).decode("utf-8", "replace")
        try:
            sniffed = sniff_text(head)
        except Exception:  # noqa: BLE001 - a file the sniffer refuses is not one of ours
            continue
        error_only = sniffed is None and "==ERROR==" in head and any(k.startswith("ncu") for k in kinds)
        if sniffed is not None and sniffed.format in kinds or error_only:
            found.append((path, None))
    return found


def cli() -> list[str]:
    script = Path(sys.executable).with_name("nvperf-bridge")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nvperf_bridge"]


def write(out: Path, inputs: list[tuple[Path, str | None]]) -> None:
    """Each input's report in each format under ``out`` (named after the input), the creation time masked."""
    out.mkdir(parents=True, exist_ok=True)
    for path, gpu in inputs:
        for fmt in FORMATS:
            target = out / f"{path.name}.{fmt}"
            cmd = cli() + ["analyze", str(path), "-o", str(target), "--force", "-q", "--format", fmt]
            done = subprocess.run(cmd + (["--gpu", gpu] if gpu else []), capture_output=True, text=True, cwd=REPO)
            if done.returncode != 0 and gpu is None and path.parent.name in README_GPU and "--gpu" in done.stderr:
                done = subprocess.run(cmd + ["--gpu", README_GPU[path.parent.name]], capture_output=True, text=True,
                                      cwd=REPO)
            refused = out / f"{path.name}.{fmt}.refused"
            refused.unlink(missing_ok=True)
            if done.returncode != 0:
                target.unlink(missing_ok=True)
                refused.write_text(f"exit {done.returncode}\n{done.stderr}")
                continue
            target.write_text(_CREATED.sub("<created>", target.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {path.name}", flush=True)


def compare(new: Path, old: Path) -> int:
    """Number of outputs that differ between the two folders (each listed)."""
    names = sorted({p.name for p in new.iterdir() if p.is_file()} | {p.name for p in old.iterdir() if p.is_file()})
    differ = 0
    for name in names:
        a, b = new / name, old / name
        if not (a.exists() and b.exists()) or a.read_bytes() != b.read_bytes():
            differ += 1
            print(f"DIFFERS: {name}" + ("" if a.exists() and b.exists() else " (only in one run)"))
    print(f"{len(names) - differ} of {len(names)} outputs identical ({new} against {old})")
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for this run's reports")
    parser.add_argument("--against", type=Path, help="an earlier run's folder: compare with it")
    parser.add_argument("--file", action="append", default=[], metavar="PATH[=GPU]", help="another input")
    parser.add_argument("--realdata", type=Path, default=REPO.parent / "shared" / "realdata")
    parser.add_argument("--kinds", default=",".join(SNIFFED),
                        help=f"which real files, by layout (comma-separated; default {','.join(SNIFFED)})")
    parser.add_argument("--no-realdata", action="store_true", help="only the --file inputs")
    args = parser.parse_args(argv)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    inputs = [] if args.no_realdata else real_inputs(args.realdata, kinds)
    for item in args.file:
        path, _, gpu = item.partition("=")
        inputs.append((Path(path), gpu or None))
    write(args.out, inputs)
    if args.against is not None:
        return 1 if compare(args.out, args.against) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

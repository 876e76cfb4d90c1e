"""What becomes of every counter of every real profiler file: mapped, unmapped (by name), derived, unparsed.

Usage (from the repository root)::

    python benchmarks/coverage.py                   # every file under ../shared/realdata, one row each
    python benchmarks/coverage.py FILE_OR_DIR ...   # other files (real files not seen before)
    python benchmarks/coverage.py --names           # also list the unmapped names per file

Each file is read alone (``read_profiles([file])``), as ``nvperf-bridge inspect FILE`` reads it; the
figures are the file's coverage record (``InputFile.mapped`` / ``unmapped`` / ``unparsed``) and the
derivation record (``ImportResult.derived_from``; "time" counts the columns derived from the duration
or a rate over it). Output is Markdown. A file that is not profiler output is listed with its error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REALDATA = ROOT.parent / "shared" / "realdata"


def files_under(paths: list[Path]) -> list[Path]:
    """Profiler files: the given files, and every file under the given folders but READMEs."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.name != "README.md"))
        elif path.exists():
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[REALDATA])
    parser.add_argument("--names", action="store_true", help="list the unmapped counter names")
    args = parser.parse_args(argv)

    from nvperf_bridge.errors import NvperfError
    from nvperf_bridge.importers import read_profiles

    base = REALDATA if all(REALDATA in p.resolve().parents or p.resolve() == REALDATA for p in args.paths) else None
    print("| file | format | kernels | counters | mapped | unmapped | derived (time) | unparsed |")
    print("|---|---|---|---|---|---|---|---|")
    for path in files_under(args.paths):
        name = path.resolve().relative_to(REALDATA) if base else path
        try:
            result = read_profiles([path])
        except NvperfError as exc:
            print(f"| {name} | error: {str(exc).splitlines()[0][:60]} | | | | | | |")
            continue
        mapped = sum(len(f.mapped) for f in result.inputs)
        unmapped = [n for f in result.inputs for n in f.unmapped]
        unparsed = sum(len(f.unparsed) for f in result.inputs)
        derived = result.derived_from
        timed = sum(1 for d in derived.values() if d["time_derived"])
        formats = ", ".join(dict.fromkeys(f.format for f in result.inputs))
        print(f"| {name} | {formats} | {len(result.kernels)} | {mapped + len(unmapped)} | {mapped} | {len(unmapped)} "
              f"| {len(derived)} ({timed}) | {unparsed} |")
        if args.names and unmapped:
            print(f"|  | unmapped: {', '.join(unmapped)} | | | | | | |")


if __name__ == "__main__":
    main()

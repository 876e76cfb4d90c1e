"""Digests of every report format for every nvprof input we have, to show a speed-only change changed nothing:

    python benchmarks/nvprof_outputs.py --save before.json [EXTRA ...]     # on the commit before the change
    python benchmarks/nvprof_outputs.py --compare before.json [EXTRA ...]  # after it: lists every difference

Inputs: each nvprof file of ``../shared/realdata`` (magus, magus-corpus, nvprof-result) and of
``tests/fixtures/import`` alone, each metrics + trace pair of the same application together, and each EXTRA
argument (a file, or several joined by ``+``: ``m.csv+t.csv``, e.g. the 1M-launch pair of ``generate.py``).
For each input ``analyze`` runs in this process (``cli.main``, as the command line runs it) to JSON, CSV and
Markdown; the digest is the SHA-256 of the output's bytes with the one line that holds the creation time left
out (JSON ``"created"``, Markdown's ``Created`` row) and the checkout's own path written as ``<repo>``, and of each figure the Markdown report writes. An input
that ends in an error records its exit code and message instead. ``--formats`` picks formats (Markdown, with
its figures, is the slow one); ``--extra-only`` leaves the real files and fixtures out.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REALDATA = REPO.parent / "shared" / "realdata"
FIXTURES = REPO / "tests" / "fixtures" / "import"
_CREATED = re.compile(rb'^\s*"created": .*\n|^\| Created \|.*\n', re.M)


def inputs(extra: list[str], realdata: Path, corpus: bool = True) -> dict[str, list[Path]]:
    """Name -> the files analysed together (``corpus`` False: the extra inputs alone)."""
    found: dict[str, list[Path]] = {}
    files = [] if not corpus else sorted((realdata / "magus").glob("*.csv")) \
        + sorted((realdata / "magus-corpus").glob("*.csv")) + sorted((realdata / "nvprof-result").glob("*.csv")) \
        + sorted(FIXTURES.glob("nv*"))
    for path in files:
        found[_name(path)] = [path]
    for path in files:
        partner = None
        if path.name.startswith("metrics_"):
            partner = path.with_name("traces_" + path.name[len("metrics_"):])
        elif "__metrics_" in path.name:
            partner = path.with_name(path.name.replace("__metrics_", "__traces_"))
        elif path.name.endswith("_metrics.csv"):
            partner = path.with_name(path.name[:-len("_metrics.csv")] + "_trace.csv")
        if partner is not None and partner.exists():
            found[f"{_name(path)} + {partner.name}"] = [path, partner]
    for item in extra:
        found[item] = [Path(p) for p in item.split("+")]
    return found


def _name(path: Path) -> str:
    """The input's name in the digests: the same from every checkout."""
    for root in (REPO, path.parent.parent.parent):  # a fixture; realdata/FOLDER/FILE
        if path.is_relative_to(root):
            return str(path.relative_to(root))
    return str(path)


def digest(paths: list[Path], fmt: str, work: Path) -> dict[str, str]:
    """{output file name: sha256} of one analyze run, or {"error": "CODE: message"}. An input without a
    device name (some fixtures) is analysed again for the GTX 1080 Ti."""
    from nvperf_bridge.cli import main

    out = work / f"report.{fmt}"
    for gpu in ([], ["--gpu", "gtx-1080-ti"]):
        for old in work.iterdir():
            old.unlink()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["analyze", *map(str, paths), "-o", str(out), "--force", "-q", *gpu])
        if code != 2 or "which GPU profile" not in err.getvalue():
            break
    if code:
        return {"error": f"{code}: {err.getvalue().strip().replace(str(REPO), '<repo>')}"}
    result = {}
    for file in sorted(work.iterdir()):
        data = file.read_bytes()
        if file == out:  # the creation time and where this checkout is (fixtures are named by their path) left out
            data = _CREATED.sub(b"", data).replace(str(REPO).encode(), b"<repo>")
        result[file.name] = hashlib.sha256(data).hexdigest()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("extra", nargs="*", help="more inputs: a file, or files joined by '+'")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", type=Path, help="write the digests here")
    what.add_argument("--compare", type=Path, help="compare with digests saved by --save")
    parser.add_argument("--formats", default="json,csv,md", help="comma-separated (default json,csv,md)")
    parser.add_argument("--realdata", type=Path, default=REALDATA, help=f"the real files (default {REALDATA})")
    parser.add_argument("--extra-only", action="store_true", help="only the EXTRA inputs (not the real files)")
    args = parser.parse_args(argv)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    digests: dict[str, dict[str, dict[str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="nvprof-outputs-") as folder:
        for name, paths in inputs(args.extra, args.realdata, not args.extra_only).items():
            digests[name] = {fmt: digest(paths, fmt, Path(folder)) for fmt in formats}
    if args.save:
        args.save.write_text(json.dumps(digests, indent=1, sort_keys=True))
        errors = sum("error" in d for run in digests.values() for d in run.values())
        print(f"{len(digests)} inputs x {len(formats)} formats saved to {args.save} ({errors} end in an error)")
        return 0
    saved = json.loads(args.compare.read_text())
    differ = [f"{name} [{fmt}]" for name, run in digests.items() for fmt, d in run.items()
              if saved.get(name, {}).get(fmt) != d]
    missing = [name for name in saved if name not in digests]
    for line in differ:
        print(f"DIFFERS: {line}")
    for name in missing:
        print(f"NOT RUN: {name}")
    print(f"{len(digests)} inputs x {len(formats)} formats: {len(differ)} differ, {len(missing)} saved inputs not run")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())

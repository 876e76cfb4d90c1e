"""Importers: profiler files in, one canonical KernelFrame out.

``read_profiles(paths)`` sniffs every file by content, reads it with the
importer for its layout, and combines the files into one table
(``merge.py``). ``sniff(path)`` says which layout a file holds.

Layouts (one module each): ``ncu_raw`` (``ncu --csv --page raw``),
``ncu_details`` (``ncu --csv``, long: one metric per row), ``nvprof_metrics``
(``nvprof --metrics/--events --csv``), ``nvprof_trace`` (``--print-gpu-trace``
and ``--print-gpu-summary``), ``kernel_yaml`` (hand-written records).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from nvperf_bridge.errors import InputError
from nvperf_bridge.kernelframe import ImportResult

# format name -> module that reads it (each has ``read(path, text) -> Parsed``)
IMPORTERS: dict[str, str] = {
    "ncu-raw": "nvperf_bridge.importers.ncu_raw",
    "ncu-details": "nvperf_bridge.importers.ncu_details",
    "nvprof-metrics": "nvperf_bridge.importers.nvprof_metrics",
    "nvprof-trace": "nvperf_bridge.importers.nvprof_trace",
    "nvprof-summary": "nvperf_bridge.importers.nvprof_trace",
    "kernel-yaml": "nvperf_bridge.importers.kernel_yaml",
}

FORMATS: tuple[str, ...] = tuple(IMPORTERS)


def sniff(path: str | Path) -> str:
    """The layout a file holds ("ncu-raw", "ncu-details", ...), judged by content.

    Raises InputError (naming the file, and what to do) when it holds no
    table nvperf-bridge can read.
    """
    from nvperf_bridge.importers.text import read_text

    path = Path(path)
    return _sniff(path, read_text(path)).format


def _sniff(path: Path, text: str):
    from nvperf_bridge.importers.errors import no_table_error

    found = _sniff_bounded(path, text)
    if found is None:
        raise no_table_error(path, text)
    return found


def _sniff_bounded(path: Path, text: str):
    """``sniff_text``, with a header past the column / size caps turned into a clear InputError."""
    from nvperf_bridge.importers.sniff import MAX_COLUMNS, HeaderTooWide, sniff_text

    try:
        return sniff_text(text)
    except HeaderTooWide as exc:
        raise InputError(f"the header line has {exc.columns:,} columns ({exc.chars:,} characters); nvperf-bridge "
                         f"reads at most {MAX_COLUMNS:,} (a full ncu raw page has a few thousand)",
                         path=path, line=text.count("\n", 0, exc.offset) + 1,
                         hint="collect only the metrics you need: `nvperf-bridge metrics` prints the ncu command") from None


def read_file(path: str | Path, *, raw_columns: frozenset[str] | None = None):
    """Read one file with the importer for its layout (a ``Parsed``, before combining).

    ``raw_columns``: None keeps every column of an ncu raw page; a set parses
    only the used ones (mapped to canonical columns, the launch section, and
    the raw names in the set; ``ncu_raw.column_filter``)."""
    from nvperf_bridge.importers.text import drop_cut_last_line, read_head, read_text_as

    path = Path(path)
    head = read_head(path)
    if head is not None and _ends_with_newline(path):  # a cut-off file goes the whole-text way: its last row is dropped
        found = _sniff_bounded(path, head.text)
        if found is not None and found.format == "ncu-raw":
            # the wide raw page is streamed from the file, never held whole in memory
            from nvperf_bridge.importers.ncu_raw import read_stream

            parsed = read_stream(path, head, found, raw_columns)
            if parsed is not None:
                parsed.info.encoding = "UTF-8 with BOM" if head.bom else "UTF-8"
                return parsed
    text, encoding = read_text_as(path)
    text, cut = drop_cut_last_line(text)
    found = _sniff(path, text)
    module = importlib.import_module(IMPORTERS[found.format])
    if found.format == "kernel-yaml":
        parsed = module.read(path, text)
    elif found.format == "ncu-raw":
        parsed = module.read(path, text, found, raw_columns)
    else:
        parsed = module.read(path, text, found)
    parsed.info.encoding = encoding
    if cut is not None:
        parsed.info.warnings.append(f"{path}:{cut}: the last line is cut off (the file ends inside a row: "
                                    "profiling interrupted?); that row was dropped, every complete row was kept")
    return parsed


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return False
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def read_profiles(paths: list[Path], *, progress: bool = False) -> ImportResult:
    """Read and combine profiler files into one canonical KernelFrame.

    Every path is sniffed by content. Files from one run combine (nvprof
    metrics with their trace, one-metric-per-file ncu outputs); other files
    are concatenated. Kernels found in only one of the files that should
    combine are listed in ``warnings``. Raises InputError naming the file and
    line for anything unreadable.
    """
    from nvperf_bridge.importers.merge import combine

    if not paths:
        raise InputError("no input files given", hint="pass one or more profiler CSV files")
    parsed = []
    for i, path in enumerate(paths):
        if progress:
            import sys

            print(f"reading {path} ({i + 1}/{len(paths)})", file=sys.stderr)
        parsed.append(read_file(path))
    return combine(parsed)  # combine also runs the range checks, for the command line's path as well

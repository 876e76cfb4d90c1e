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
import re
from pathlib import Path

import pandas as pd

from nvperf_bridge.errors import InputError
# the submodule is loaded before the function ``sniff`` below is defined: importing it later would rebind
# the package attribute ``sniff`` to the module (then ``from nvperf_bridge.importers import sniff`` breaks)
from nvperf_bridge.importers import sniff as _sniff_module  # noqa: F401  (light: csv, io, re only)
from nvperf_bridge.kernelframe import ImportResult

# format name -> module that reads it (each has ``read(path, text) -> Parsed``)
IMPORTERS: dict[str, str] = {
    "ncu-raw": "nvperf_bridge.importers.ncu_raw",
    "ncu-details": "nvperf_bridge.importers.ncu_details",
    "nvprof-metrics": "nvperf_bridge.importers.nvprof_metrics",
    "nvprof-trace": "nvperf_bridge.importers.nvprof_trace",
    "nvprof-launch-counters": "nvperf_bridge.importers.nvprof_metrics",
    "nvvp-trace": "nvperf_bridge.importers.nvprof_trace",
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
    the raw names in the set; ``ncu_raw.column_filter``). A file whose tables
    are of different layouts (see ``read_parts``) is an InputError here: pass
    it to ``read_profiles``, which combines them.
    """
    parts = read_parts(path, raw_columns=raw_columns)
    if len(parts) > 1:
        raise InputError(f"the file holds {len(parts)} tables of different layouts "
                         f"({', '.join(p.info.format for p in parts)})", path=path,
                         hint="read it with read_profiles / the command line, which combines them")
    return parts[0]


def read_parts(path: str | Path, *, raw_columns: frozenset[str] | None = None) -> list:
    """Every table of one file, read by the importer for its layout: a list of ``Parsed``.

    Most files hold one table. nvprof writes more into one file: an Event
    table then a Metric table (read together as one nvprof-metrics table), a
    GPU summary then an API-call summary or a Unified Memory table. Each
    table goes to its importer; a table of host-side API calls is not read
    (a note says so); anything else left unread is named in a note with its
    line. Never a silent stop at the end of the first table.
    """
    from nvperf_bridge.importers.text import drop_cut_last_line, read_head, read_text_as

    path = Path(path)
    head = read_head(path)
    if head is not None and _ends_with_newline(path):  # a cut-off file goes the whole-text way: its last row is dropped
        found = _sniff_bounded(path, head.text)
        streamed = {"ncu-raw": "nvperf_bridge.importers.ncu_raw", "nvprof-trace": "nvperf_bridge.importers.nvprof_trace",
                    "ncu-details": "nvperf_bridge.importers.ncu_details"}
        if found is not None and found.format in streamed:
            # the wide raw page and the long trace and details tables are streamed from the file, never
            # held whole in memory
            module = importlib.import_module(streamed[found.format])
            parsed = (module.read_stream(path, head, found, raw_columns) if found.format in ("ncu-raw", "ncu-details")
                      else module.read_stream(path, head, found))
            if parsed is not None:
                parsed.info.encoding = "UTF-8 with BOM" if head.bom else "UTF-8"
                return [parsed]
    text, encoding = read_text_as(path)
    text, cut = drop_cut_last_line(text)
    tables = _tables(path, text)
    parts = []
    unread: list[str] = []
    spans: list[tuple[int, int]] = []
    for found in tables:
        spans.extend(_spans(text, found))
        if _is_api(text, found):
            banner = _banner_before(text, found.start) or ""
            unread.append(f"not read: the API-call table at line {text.count(chr(10), 0, found.start) + 1} "
                          f"({banner.strip()!r}): host-side CUDA API calls, not GPU kernels")
            continue
        module = importlib.import_module(IMPORTERS[found.format])
        if found.format == "kernel-yaml":
            parsed = module.read(path, text)
        elif found.format in ("ncu-raw", "ncu-details"):  # both parse only the counters in use
            parsed = module.read(path, text, found, raw_columns)
        else:
            parsed = module.read(path, text, found)
        parsed.info.encoding = encoding
        parts.append(parsed)
    if not parts:
        raise InputError("the file holds only CUDA API-call summaries (host side), no GPU kernel table",
                         path=path, line=text.count("\n", 0, tables[0].start) + 1,
                         hint="profile with `nvprof --csv --print-gpu-trace ./app` (kernel times) or "
                              "`nvprof --csv --metrics all ./app` (counters)")
    parts = _join_runs(parts, [t for t in tables if not _is_api(text, t)], text)
    first = parts[0].info
    first.notes.extend(unread)
    if tables[0].format != "kernel-yaml":
        first.notes.extend(_unread_text_notes(text, tables[0].start, spans))
    if cut is not None:
        parts[-1].info.warnings.append(f"{path}:{cut}: the last line is cut off (the file ends inside a row: "
                                       "profiling interrupted?); that row was dropped, every complete row was kept")
    return parts


def _is_api(text: str, found) -> bool:
    """A summary table that nvprof's banner calls API calls (host side, not kernels)."""
    banner = _banner_before(text, found.start)
    return found.format == "nvprof-summary" and banner is not None and "API" in banner


# layouts whose tables, when one follows another in a file, are runs of one program appended to one log
_APPENDED_RUNS = frozenset({"nvprof-trace", "nvprof-summary", "nvvp-trace"})


def _join_runs(parts: list, tables: list, text: str) -> list:
    """Tables of one trace/summary layout that follow each other in a file, as one ``Parsed``.

    Each table was read with its own units row (one run's Size column in KB,
    the next one's in MB); their kernel rows are then one table of the file,
    so the file is listed once, with a note naming the lines its runs start at.
    """
    from nvperf_bridge.importers.canonical import finish

    out: list = []
    starts: list[list[int]] = []
    for parsed, found in zip(parts, tables):
        if out and parsed.info.format == out[-1].info.format and parsed.info.format in _APPENDED_RUNS:
            last = out[-1]
            last.frame = pd.concat([last.frame, parsed.frame], ignore_index=True, sort=False)
            last.names = None  # the first run's names alone: found again from the joined frame
            last.info.kernels += parsed.info.kernels
            last.info.skipped.extend(parsed.info.skipped)
            last.info.warnings.extend(parsed.info.warnings)
            last.info.notes.extend(n for n in parsed.info.notes if n not in last.info.notes)
            devices = [d for d in (last.info.device, parsed.info.device) if d]
            last.info.device = ", ".join(dict.fromkeys(", ".join(devices).split(", "))) if devices else None
            starts[-1].append(found.start)
            continue
        out.append(parsed)
        starts.append([found.start])
    for parsed, where in zip(out, starts):
        if len(where) > 1:
            parsed.frame = finish(parsed.frame)
            lines = ", ".join(str(text.count("\n", 0, s) + 1) for s in where)
            parsed.info.notes.append(f"{len(where)} {parsed.info.format} tables (runs appended to one file, headers at "
                                     f"lines {lines}) read as one; each with its own units row")
    return out


def _tables(path: Path, text: str) -> list:
    """The tables of ``text`` (sniff.sniff_tables), nvprof metric/event tables that follow each other
    grouped into one entry (one run's Event and Metric tables); an InputError when there is none."""
    from dataclasses import replace

    from nvperf_bridge.importers.errors import no_table_error
    from nvperf_bridge.importers.sniff import MAX_COLUMNS, HeaderTooWide, sniff_tables

    try:
        tables = sniff_tables(text)
    except HeaderTooWide as exc:
        raise InputError(f"the header line has {exc.columns:,} columns ({exc.chars:,} characters); nvperf-bridge "
                         f"reads at most {MAX_COLUMNS:,} (a full ncu raw page has a few thousand)",
                         path=path, line=text.count("\n", 0, exc.offset) + 1,
                         hint="collect only the metrics you need: `nvperf-bridge metrics` prints the ncu command") from None
    if not tables:
        raise no_table_error(path, text)
    grouped: list = []
    for found in tables:
        if grouped and found.format == "nvprof-metrics" and grouped[-1].format == "nvprof-metrics":
            grouped[-1] = replace(grouped[-1], more=grouped[-1].more + (found.start,))
        else:
            grouped.append(found)
    return grouped


def _spans(text: str, found) -> list[tuple[int, int]]:
    """Character spans of the table(s) one sniffed entry stands for."""
    from nvperf_bridge.importers.text import table_at

    if found.format == "kernel-yaml":
        return [(0, len(text))]
    return [(table_at(text, start).start, table_at(text, start).end) for start in (found.start, *found.more)]


_BANNER = re.compile(r"^==[^=\n]*==\s*(?P<what>[^\n]*)$", re.M)


def _banner_before(text: str, start: int) -> str | None:
    """The nvprof/ncu banner (``==1234== API calls:``) on the non-blank line just before a table header."""
    before = text[:start].rstrip("\n \t")
    line = before[before.rfind("\n") + 1:]
    found = _BANNER.match(line)
    return found.group("what") if found else None


def _unread_text_notes(text: str, first: int, spans: list[tuple[int, int]], lines_before: int = 0) -> list[str]:
    """A note per stretch of text after the first table that no importer read (a Unified Memory table,
    'Total CPU Page faults: 49'): its first line and line number, the banner that names it.
    ``lines_before``: lines of the file before ``text`` (a streamed table's importer passes only the
    text after its table)."""
    notes = []
    spans = sorted(spans)
    gaps = [(end, next_start) for (_, end), (next_start, _) in zip(spans, spans[1:] + [(len(text), 0)])]
    for start, end in gaps:
        if end <= start or start < first:
            continue
        block = text[start:end]
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        banners = [m.group("what").strip() for m in map(_BANNER.match, lines) if m is not None]
        content = [line for line in lines if _BANNER.match(line) is None]
        if not content and all(b.endswith(":") for b in banners):
            continue  # only the banners that introduce the next table ("==1234== Metric result:")
        shown = content[0] if content else lines[0]
        offset = start + block.find(shown)
        what = next((b.rstrip(":") for b in banners if b.endswith(":")), None)
        notes.append(f"ignored {len(lines)} line{'s' if len(lines) != 1 else ''} after the table, from line "
                     f"{lines_before + text.count(chr(10), 0, offset) + 1}" + (f" ({what}: not a kernel table)" if what else "")
                     + f": {shown[:60]!r}")
    return notes


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
        parsed.extend(read_parts(path))
    return combine(parsed)  # combine also runs the range checks, for the command line's path as well

"""nvprof-trace (``--print-gpu-trace --csv``) and nvprof-summary (``--print-gpu-summary --csv``).

Trace: one row per GPU activity, with a units row after the header whose
units differ between files (Duration in ms or us, Static SMem in KB or B).
Kernel names carry a correlation suffix (``"mysgemmNT(...) [1173]"``) that is
stripped (and used as the launch id when there is no Correlation_ID column).
Memcpy, memset and Unified Memory rows are not kernels: they are left out
and counted in the file's ``skipped`` list.

Summary: one row per kernel with Time(%), Time, Calls, Avg, Min, Max, each
column in its own unit (Avg in us while Max is in ms). ``duration_ns`` is the
Avg, ``invocations`` the Calls. A second table (Unified Memory) and trailing
text are ignored with a note.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers.base import Parsed, count_reasons
from nvperf_bridge.importers.canonical import to_parsed
from nvperf_bridge.importers.sniff import Sniffed
from nvperf_bridge.importers.text import (
    Head,
    has_units_row,
    parse_numbers,
    read_streamed_table,
    read_table,
    strip_device_index,
    table_at,
    unparsed,
)
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import lookup

_SUFFIX = re.compile(r"\s\[(\d+)\]\s*$")
# what a bracketed non-kernel row is, as data: pattern -> reason
NON_KERNEL = (
    (r"^\[CUDA memcpy", "memcpy (not a kernel)"),
    (r"^\[CUDA memset", "memset (not a kernel)"),
    (r"^\[Unified Memory", "Unified Memory activity (not a kernel)"),
    (r"^\[", "other GPU activity (not a kernel)"),
)
_TEXT_COLUMNS = ("Name", "Device", "Context", "Stream", "SrcMemType", "DstMemType", "Type", "Unified Memory",
                 "Virtual Address", "Correlation_ID")
NVVP_FORMAT = "nvvp-trace"
_UNIT_IN_NAME = re.compile(r"^(?P<name>[^()]+?)\s*\((?P<unit>[A-Za-z/%]+)\)$")
_NVVP_NAMES = {"Start Time": "Start"}  # the nvvp export's column names that differ from nvprof's trace
_DEVICE_IN_TEXT = re.compile(r'^"([^"]+?) \(\d+\)",', re.M)


def read(path: Path, text: str, found: Sniffed) -> Parsed:
    """Read an nvprof GPU trace or GPU summary CSV."""
    table = table_at(text, found.start)
    # only the text columns are read as strings; the C parser reads the numbers (parse_numbers takes both)
    raw, units = read_table(text, table, path, skip_units_row=has_units_row(text, table.start),
                            text_columns=list(_TEXT_COLUMNS))
    fmt = found.format if found.format in ("nvprof-summary", NVVP_FORMAT) else "nvprof-trace"
    return _from_table(path, raw, units, table.header_line, fmt, text, table.end)


def read_stream(path: Path, head: Head, found: Sniffed) -> Parsed | None:
    """Read an nvprof GPU trace straight from the file (the C parser fed by ``TableStream``), never holding
    its text; None where ``read`` must do it: another layout, text after the table (a second table or
    run, an API summary), carriage returns, bytes that are not UTF-8, ragged rows. The result is the one
    ``read`` gives from the whole text, value for value.
    """
    import csv
    import io

    if found.format != "nvprof-trace":
        return None
    text = head.text
    units: list[str] | None = None
    if has_units_row(text, found.start):
        header_end = text.find("\n", found.start)
        units_end = text.find("\n", header_end + 1)
        if units_end < 0:
            return None
        units = next(csv.reader(io.StringIO(text[header_end + 1:units_end])), [])
    read = read_streamed_table(path, head, found.start, dtype={c: str for c in _TEXT_COLUMNS},
                               skiprows=[1] if units is not None else None, low_memory=False)
    if read is None:
        return None
    raw, header, rest = read
    if rest is None or rest.strip() or raw.empty:
        return None  # more after the table: the whole-text path reads it or names it in a note
    first = raw.iloc[:, 0]
    if first.dtype.kind not in "fiub":  # object or text: a header line may sit among the rows
        if (first.astype(object) == header[0]).any():
            return None  # the header again under the rows (runs appended to one file): the whole-text path splits them
    return _from_table(path, raw, units, text.count("\n", 0, found.start), "nvprof-trace", None, None)


def _from_table(path: Path, raw: pd.DataFrame, units: list[str] | None, header_line: int, fmt: str,
                text: str | None, table_end: int | None) -> Parsed:
    """The canonical rows of a read trace or summary table (``raw``: text columns as strings, the rest as
    the C parser read them; ``units``: the units row, if any; ``text``/``table_end``: the whole text and
    where the table ends, for the summary's device name in a table after it)."""
    unit_of = dict(zip(raw.columns, units)) if units else {}
    first_line = header_line + (3 if units else 2)
    info = InputFile(path=str(path), format=fmt, kernels=0)
    if fmt == NVVP_FORMAT:
        raw, unit_of = _units_from_header(raw)
        info.notes.append("NVIDIA Visual Profiler (nvvp) GPU details export: units taken from the column names "
                          "(Duration(ns)); one row per GPU activity")
    header_cols = list(raw.columns)
    raw["_line"] = np.arange(first_line, first_line + len(raw))
    if "Name" not in raw.columns:
        raise InputError("the nvprof table has no Name column", path=path, line=header_line + 1)

    # names differ from launch to launch only in their [correlation id] suffix: split that off with a plain
    # string method per row, then classify and keep the few distinct kernel names (one regex per name)
    base, suffix = _split_suffix(raw["Name"].to_numpy(dtype=object, na_value=None))
    codes, distinct = pd.factorize(base, use_na_sentinel=True)
    why = pd.Series(None, index=range(len(distinct)), dtype=object)
    distinct_text = pd.Series(distinct, dtype=object)
    for pattern, label in NON_KERNEL:
        why[why.isna() & distinct_text.str.contains(pattern, regex=True)] = label
    reason = pd.Series(np.append(why.to_numpy(), None)[codes], index=raw.index, dtype=object)  # code -1: no name
    names = raw["Name"]
    reason[names.isna()] = "row without a name"
    if "Type" in raw.columns:
        api = reason.isna() & raw["Type"].fillna("").astype(str).str.contains("API", regex=False)
        reason[api] = "API call (host side, not a kernel)"
    skipped = reason.notna()
    info.skipped.extend(count_reasons(reason[skipped], raw.loc[skipped, "_line"]))
    kernels = raw.loc[~skipped].copy()
    if kernels.empty:
        raise InputError("the nvprof table lists no kernels (only memcpy/memset or other activities)",
                         path=path, line=header_line + 1)

    frame = pd.DataFrame(index=kernels.index)
    keep = ~skipped.to_numpy()
    suffix = pd.Series(suffix[keep], index=kernels.index, dtype=object)
    frame["kernel_name"] = pd.Series(distinct.astype(object)[codes[keep]], index=kernels.index, dtype=object)
    if "Correlation_ID" in kernels.columns:
        frame["kernel_id"] = kernels["Correlation_ID"].astype(object).combine_first(suffix)
    else:
        frame["kernel_id"] = suffix
    frame["kernel_id"] = frame["kernel_id"].combine_first(kernels["_line"].astype(str))
    frame["source"] = str(path)
    frame["source_row"] = kernels["_line"]
    if "Device" in kernels.columns:
        frame["device"] = strip_device_index(kernels["Device"])
    kinds: dict[str, str] = {}
    unknown: set[str] = set()
    in_cells: list[str] = []  # columns whose cells carry their own unit ("44.725us")
    not_numbers: list[str] = []  # columns kept as text: neither numbers nor numbers with a known unit
    for column in header_cols:
        if column in _TEXT_COLUMNS:
            if column in ("Context", "Stream"):
                frame[column] = kernels[column]
            continue
        numbers = parse_numbers(kernels[column])
        if unparsed(kernels[column], numbers).any():
            read = _cells_with_units(kernels[column])
            if read is None:
                frame[column] = kernels[column]
                bad = unparsed(kernels[column], numbers)
                not_numbers.append(f"{column} (first at line {int(kernels.loc[bad, '_line'].iloc[0])}: "
                                   f"{str(kernels.loc[bad, column].iloc[0])[:30]!r})")
                continue
            frame[column], kinds[column] = read
            in_cells.append(column)
            continue
        unit = (unit_of.get(column) or "").strip()
        found_unit = lookup(unit)
        if found_unit is None:
            unknown.add(unit)
            found_unit = (1.0, "?")
        frame[column] = numbers * found_unit[0]
        kinds[column] = found_unit[1]
    if unknown:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown))}")
    if in_cells:
        info.notes.append(f"units inside the cells ({', '.join(in_cells)}): each value converted by its own unit")
    if not_numbers:
        info.notes.append(f"values that are not numbers kept as text in: {'; '.join(not_numbers)}")
    duration_column = "Avg" if fmt == "nvprof-summary" else "Duration"
    if duration_column in _columns_of(not_numbers) or duration_column not in frame.columns:
        info.warnings.append(f"{path}: the {duration_column} column could not be read as times, so these kernels "
                             "have no measured duration; pass nvprof's CSV unchanged (`nvprof --csv ...`)")
    per_kernel = fmt == "nvprof-summary"
    if per_kernel:
        frame["duration_ns"] = frame.get("Avg")
        frame["invocations"] = frame.get("Calls")
        frame["kernel_id"] = frame["kernel_name"]
        frame = frame.rename(columns={"Time": "total_time_ns", "Min": "min_duration_ns", "Max": "max_duration_ns",
                                      "Avg": "avg_duration_ns", "Calls": "calls"})
        device = _DEVICE_IN_TEXT.search(text, table_end) if text is not None else None
        if device is not None and "device" not in frame.columns:
            frame["device"] = device.group(1)
            info.notes.append(f"device name {device.group(1)!r} taken from the Unified Memory table after the summary")
    return to_parsed(frame, kinds, info, per_kernel=per_kernel, join="name")


def _units_from_header(raw: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Columns named with their unit ("Duration(ns)", "Start Time(ns)") -> the trace's names ("Duration",
    "Start") and that unit; other columns keep their name."""
    renamed: dict[str, str] = {}
    unit_of: dict[str, str] = {}
    for column in raw.columns:
        found = _UNIT_IN_NAME.match(str(column))
        if found is None or lookup(found.group("unit")) is None:
            continue
        name = _NVVP_NAMES.get(found.group("name").strip(), found.group("name").strip())
        renamed[column] = name
        unit_of[name] = found.group("unit")
    return raw.rename(columns=renamed), unit_of


def _columns_of(entries: list[str]) -> set[str]:
    """Column names of the 'COLUMN (first at line ...)' entries."""
    return {entry.split(" (first at line", 1)[0] for entry in entries}


def _cells_with_units(values: pd.Series) -> tuple[pd.Series, str] | None:
    """A column whose cells carry their unit (``268.35ms``, ``44.725us``, ``68.74%``), in its base unit, and that
    base unit; None when some cell is not a number with a known unit or the units mix kinds (ms beside GB/s).
    A bare number beside them (nvprof prints ``0``) takes the column's unit kind."""
    from nvperf_bridge.units import parse_cells

    converted, bases, unknown, bad = parse_cells(values)
    kinds = set(bases[values.notna() & ~bad]) - {"count"}
    if bad.any() or unknown or len(kinds) > 1:
        return None
    return converted, (kinds.pop() if kinds else "count")


def _split_suffix(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(name without its `` [123]`` correlation suffix, the suffix's digits or None) for each name (None: None).

    ``str.rpartition`` per row does what ``_SUFFIX`` says for the usual single-space form; the rare name it does
    not settle (no suffix, as memcpy rows have; another space character before ``[``, trailing blanks) goes
    through the regex itself. Where every name is text, the split is done by C-level ``map`` calls and the
    names it does not settle are found by one regex over the joined suffixes, so the Python loop visits only
    those (1M trace rows: about 2 s of the import when every row went through it).
    """
    quick = _split_usual(names)
    if quick is not None:
        base, digits, unsettled = quick
    else:
        base = np.empty(len(names), dtype=object)
        digits = np.empty(len(names), dtype=object)
        unsettled = range(len(names))
    for i in unsettled:
        name = names[i]
        if name is None:
            base[i], digits[i] = None, None
            continue
        if not isinstance(name, str):
            name = str(name)
        head, sep, tail = name.rpartition(" [")
        if sep and tail[-1:] == "]" and tail[:-1].isdigit() and tail[:-1].isascii():
            base[i], digits[i] = head, tail[:-1]
            continue
        found = _SUFFIX.search(name)
        base[i], digits[i] = (name[:found.start()], found.group(1)) if found else (name, None)
    return base, digits


_USUAL_TAILS = re.compile(r"(?:[0-9]+\]\n)*", re.ASCII)
_UNUSUAL_TAIL = re.compile(rb"^(?![0-9]+\]$)", re.M)  # the start of a suffix line that is not "digits]"


def _split_usual(names: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
    """``_split_suffix`` by C-level calls where every name is a ``str``: (bases, digits, the rows it did not
    settle: a name without text before `` [`` or whose suffix is not digits and ``]``); None when a name is
    not a ``str`` (the loop then settles each one)."""
    from operator import itemgetter, methodcaller

    from pandas.api.types import infer_dtype

    if not len(names) or infer_dtype(names, skipna=False) != "string":
        return None
    parts = list(map(methodcaller("rpartition", " ["), names.tolist()))
    base = np.empty(len(names), dtype=object)
    base[:] = list(map(itemgetter(0), parts))
    tails = list(map(itemgetter(2), parts))
    del parts  # a million tuples: freed before the next lists are made
    digits = np.empty(len(names), dtype=object)
    digits[:] = list(map(itemgetter(slice(None, -1)), tails))
    joined = "\n".join(tails) + "\n"
    # a name without " [" partitions to ("", "", name): an empty head; a head may be empty only then here
    empty_head = np.fromiter(map(len, base.tolist()), dtype=np.int64, count=len(base)) == 0
    if not empty_head.any() and _USUAL_TAILS.fullmatch(joined) is not None:
        return base, digits, []
    text = joined.encode("utf-8")
    line_ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10)
    if len(line_ends) != len(tails):  # a suffix holding a newline: lines are not rows, the loop settles all
        return base, digits, list(range(len(names)))
    starts = np.fromiter((m.start() for m in _UNUSUAL_TAIL.finditer(text)), dtype=np.int64)
    starts = starts[starts < len(text)]  # the empty line after the last newline is no row
    unusual = np.searchsorted(line_ends, starts)  # a line's row: the newlines before its start
    return base, digits, np.union1d(unusual, np.flatnonzero(empty_head)).tolist()

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

import contextlib
import queue
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

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
    streamed_header,
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
_KEPT_TEXT = ("Context", "Stream")  # the text columns the frame keeps under their own name (the others: read or left)
_UNUSED_TEXT = ("SrcMemType", "DstMemType", "Unified Memory", "Virtual Address")  # memcpy columns, never kept
NVVP_FORMAT = "nvvp-trace"
_UNIT_IN_NAME = re.compile(r"^(?P<name>[^()]+?)\s*\((?P<unit>[A-Za-z/%]+)\)$")
_NVVP_NAMES = {"Start Time": "Start"}  # the nvvp export's column names that differ from nvprof's trace
_DEVICE_IN_TEXT = re.compile(r'^"([^"]+?) \(\d+\)",', re.M)


@dataclass
class NameSplit:
    """The Name column split into kernel name and correlation suffix: ``codes`` (-1: no name) into the
    distinct names ``distinct`` (an object array), each row's suffix digits ``suffix`` (an object array,
    None where there is none; ``ArrowSuffixes`` where pyarrow read the names) and ``missing`` (rows
    without a name)."""

    codes: np.ndarray
    distinct: np.ndarray
    suffix: np.ndarray | ArrowSuffixes
    missing: np.ndarray

    def release(self) -> None:
        """Let go of the per-row arrays once the kept rows are taken (a million rows each)."""
        empty = np.empty(0, dtype=object)
        self.codes, self.suffix, self.missing = empty.astype(np.int64), empty, empty.astype(bool)


class ArrowSuffixes:
    """Each row's suffix digits as pyarrow text, a block at a time (null where a row has none), beside the
    digits of the few rows ``_split_one`` split (``unusual``: row -> digits): no Python string is made for
    a row until ``kept`` is asked (a million launch ids that a paired trace, averaged per kernel, never reads)."""

    def __init__(self) -> None:
        self.blocks: list = []
        self.unusual: dict[int, str] = {}

    def kept(self, keep: np.ndarray) -> np.ndarray:
        """The ``keep`` rows' digits as an object array (None: no suffix), as ``_split_suffix`` gives them."""
        import pyarrow as pa

        kept = pa.chunked_array(self.blocks, type=pa.string()).filter(pa.array(keep)).to_numpy(zero_copy_only=False)
        out = np.asarray(kept, dtype=object)
        if not out.flags.writeable:
            out = out.copy()
        if self.unusual:
            rows = np.fromiter(self.unusual, dtype=np.int64, count=len(self.unusual))
            at = np.cumsum(keep)[rows] - 1  # each row's place among the kept rows
            for row, place, kept_row in zip(rows.tolist(), at.tolist(), keep[rows].tolist()):
                if kept_row:
                    out[place] = self.unusual[row]
        return out


@dataclass
class LaunchIds:
    """A trace's ``kernel_id`` and ``source`` columns, and its ``_KEPT_TEXT`` columns (Context, Stream),
    made when its frame is read (``Parsed.deferred``): a paired trace is averaged per kernel without them.
    Made as ``_from_table`` makes them for a frame read whole (``launch_ids``, then ``finish``'s text
    typing); the text columns stand in the frame until then as ``_text_stand_in`` (their place in the
    column order, and whether ``finish`` keeps them), their values pyarrow text (``texts``)."""

    path: str
    suffix: ArrowSuffixes
    keep: np.ndarray  # the kernel rows among the rows read
    correlation: pd.Series | None  # the kernel rows' Correlation_ID column, where the trace has one
    lines: np.ndarray  # the kernel rows' line numbers
    texts: dict[str, object] = field(default_factory=dict)  # column -> every row's text (a pyarrow ChunkedArray)
    text_dtype: object = object  # the dtype the whole-text path gives a text column (``read_csv(dtype=str)``'s)

    NAMES = ("kernel_id", "source")

    def columns(self, lean: pd.DataFrame) -> list[str]:
        from nvperf_bridge.columns import IDENTITY_COLUMNS

        identity = [c for c in IDENTITY_COLUMNS if c in lean.columns or c in self.NAMES]  # finish's order
        return identity + [c for c in lean.columns if c not in IDENTITY_COLUMNS]

    def added_to(self, lean: pd.DataFrame) -> pd.DataFrame:
        from nvperf_bridge.importers.canonical import as_text

        index = lean.index
        suffix = pd.Series(self.suffix.kept(self.keep), index=index, dtype=object, copy=False)
        correlation = None if self.correlation is None else self.correlation.set_axis(index)
        made = {"kernel_id": as_text(launch_ids(suffix, correlation, pd.Series(self.lines, index=index))),
                "source": as_text(pd.Series(np.full(len(index), self.path, dtype=object), index=index, copy=False))}
        for name, values in self.texts.items():
            if name in lean.columns:  # ``finish`` left out a column without any value
                made[name] = pd.Series(_arrow_objects(_kept_text(values, self.keep)), index=index,
                                       dtype=self.text_dtype, copy=False)
        return pd.DataFrame({c: made[c] if c in made else lean[c] for c in self.columns(lean)}, index=index,
                            copy=False)


def launch_ids(suffix: pd.Series, correlation: pd.Series | None, lines: pd.Series) -> pd.Series:
    """Each launch's id: its Correlation_ID where the trace has that column, else (or where it is blank) the
    name's ``[suffix]`` digits, else its line number."""
    ids = correlation.astype(object).combine_first(suffix) if correlation is not None else suffix
    if ids.isna().any():  # the line number where a launch has neither (a million line numbers made text otherwise)
        ids = ids.combine_first(lines.astype(str))
    return ids


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
    header_line = text.count("\n", 0, found.start)
    by_arrow = _arrow_table(path, head, found.start, units)
    if by_arrow is not None:
        raw, split, select, scaled, raw_units, texts = by_arrow
        return _from_table(path, raw, raw_units, header_line, "nvprof-trace", None, None, split=split, select=select,
                           scaled=scaled, texts=texts)
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
    return _from_table(path, raw, units, header_line, "nvprof-trace", None, None)


def _from_table(path: Path, raw: pd.DataFrame, units: list[str] | None, header_line: int, fmt: str,
                text: str | None, table_end: int | None, split: NameSplit | None = None,
                select: Callable[[pd.DataFrame, np.ndarray], pd.DataFrame] | None = None,
                scaled: frozenset[str] = frozenset(), texts: ArrowTexts | None = None) -> Parsed:
    """The canonical rows of a read trace or summary table (``raw``: text columns as strings, the rest as
    the C parser read them; ``units``: the units row, if any; ``text``/``table_end``: the whole text and
    where the table ends, for the summary's device name in a table after it; ``split``: the Name column
    already split (``_arrow_table``), in which case ``raw`` holds no Name column; ``select(raw, keep)``:
    the kept rows of ``raw``, where the reader has a cheaper way than ``raw.loc[keep]``; ``scaled``: number
    columns the reader already converted to their base unit by the units row; ``texts``: the ``_KEPT_TEXT``
    columns the reader left as pyarrow text, ``raw`` holding ``_no_text`` in their place: made when the
    frame is read, ``LaunchIds``)."""
    unit_of = dict(zip(raw.columns, units)) if units else {}
    first_line = header_line + (3 if units else 2)
    info = InputFile(path=str(path), format=fmt, kernels=0)
    if fmt == NVVP_FORMAT:
        raw, unit_of = _units_from_header(raw)
        info.notes.append("NVIDIA Visual Profiler (nvvp) GPU details export: units taken from the column names "
                          "(Duration(ns)); one row per GPU activity")
    header_cols = list(raw.columns)
    raw["_line"] = np.arange(first_line, first_line + len(raw))
    if split is None:
        if "Name" not in raw.columns:
            raise InputError("the nvprof table has no Name column", path=path, line=header_line + 1)
        # names differ from launch to launch only in their [correlation id] suffix: split that off with a
        # plain string method per row, then classify and keep the few distinct kernel names (one regex per name)
        base, suffix = _split_suffix(raw["Name"].to_numpy(dtype=object, na_value=None))
        codes, distinct = pd.factorize(base, use_na_sentinel=True)
        split = NameSplit(codes, distinct, suffix, raw["Name"].isna().to_numpy())
    codes, distinct, suffix = split.codes, split.distinct, split.suffix
    why = pd.Series(None, index=range(len(distinct)), dtype=object)
    distinct_text = pd.Series(distinct, dtype=object)
    for pattern, label in NON_KERNEL:
        why[why.isna() & distinct_text.str.contains(pattern, regex=True)] = label
    # each row's reason to skip it, by its name's code (code -1: no name); made text for the skipped rows only
    skipped = np.append(why.notna().to_numpy(), False)[codes] | split.missing
    api = None
    if "Type" in raw.columns:
        api = ~skipped & raw["Type"].fillna("").astype(str).str.contains("API", regex=False).to_numpy()
        skipped |= api
    rows = np.flatnonzero(skipped)
    reason = np.append(why.to_numpy(), None)[codes[rows]]
    reason[split.missing[rows]] = "row without a name"
    if api is not None:
        reason[api[rows]] = "API call (host side, not a kernel)"
    info.skipped.extend(count_reasons(pd.Series(reason, dtype=object), pd.Series(raw["_line"].to_numpy()[rows])))
    keep = ~skipped
    del reason, skipped, api  # million-row columns not needed below: freed before the frame is made
    if keep.all():
        kernels = raw  # only read below: no copy of its own
    else:
        kernels = raw.loc[keep] if select is None else select(raw, keep)
    if kernels.empty:
        raise InputError("the nvprof table lists no kernels (only memcpy/memset or other activities)",
                         path=path, line=header_line + 1)

    frame = pd.DataFrame(index=kernels.index)
    kept_codes = codes[keep]
    # arrays made here are the Series' own: pandas 3 would copy each again
    frame["kernel_name"] = pd.Series(distinct.astype(object)[kept_codes], index=kernels.index, dtype=object,
                                     copy=False)
    del codes
    correlation = kernels["Correlation_ID"] if "Correlation_ID" in kernels.columns else None
    deferred = None
    if isinstance(suffix, ArrowSuffixes):  # the launch ids made when the frame is read (LaunchIds)
        deferred = LaunchIds(str(path), suffix, keep, correlation, kernels["_line"].to_numpy(),
                             *((texts.columns, texts.dtype) if texts is not None else ()))
    else:
        suffix = pd.Series(suffix[keep], index=kernels.index, dtype=object, copy=False)
        frame["kernel_id"] = launch_ids(suffix, correlation, kernels["_line"])
        frame["source"] = str(path)
    split.release()
    frame["source_row"] = kernels["_line"]
    if "Device" in kernels.columns:
        frame["device"] = strip_device_index(kernels["Device"])
    kinds: dict[str, str] = {}
    unknown: set[str] = set()
    in_cells: list[str] = []  # columns whose cells carry their own unit ("44.725us")
    not_numbers: list[str] = []  # columns kept as text: neither numbers nor numbers with a known unit
    for column in header_cols:
        if column in _TEXT_COLUMNS:
            if column in _KEPT_TEXT:
                frame[column] = (kernels[column] if texts is None or column not in texts.columns
                                 else _text_stand_in(texts.columns[column], keep, len(kernels), kernels.index))
            continue
        numbers = parse_numbers(kernels[column])
        # a column read as numbers has nothing unparsed (three million-row passes each, to find none)
        if kernels[column].dtype.kind not in "fiub" and unparsed(kernels[column], numbers).any():
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
        # x * 1.0 is x, and a column without values stays one (no million NaNs made for it)
        convert = found_unit[0] != 1.0 and column not in scaled and numbers.notna().any()
        frame[column] = numbers * found_unit[0] if convert else numbers
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
    kept_codes, kept = pd.factorize(kept_codes)  # the kept rows' names, numbered as pd.factorize numbers them
    return to_parsed(frame, kinds, info, per_kernel=per_kernel, join="name",
                     names=(kept_codes, distinct.astype(object)[kept]), deferred=deferred)


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
        base[i], digits[i] = _split_one(names[i])
    return base, digits


def _split_one(name: object) -> tuple[str | None, str | None]:
    """One name's (base, suffix digits): `` [123]`` at the end split off by ``str.rpartition`` in the usual
    form, else by ``_SUFFIX`` itself; (None, None) for a missing name, (name, None) without a suffix."""
    if name is None:
        return None, None
    if not isinstance(name, str):
        name = str(name)
    head, sep, tail = name.rpartition(" [")
    if sep and tail[-1:] == "]" and tail[:-1].isdigit() and tail[:-1].isascii():
        return head, tail[:-1]
    found = _SUFFIX.search(name)
    return (name[:found.start()], found.group(1)) if found else (name, None)


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


# ---- pyarrow's CSV reader (a runtime dependency; pandas' C parser where it cannot be imported) ---------

ARROW_BLOCK = 1 << 22  # bytes per block of pyarrow's streaming reader: one block's names are held at a time
# blocks between returns of freed buffers to the system: jemalloc and the C heap keep them a while otherwise
# (1M-launch trace: the read's peak 575 -> 525 MB)
RELEASE_EVERY = 8
# blocks pyarrow may parse ahead of the one being taken apart (``_ReadAhead``): 4 MiB each
READ_AHEAD = 2
# blocks the file may be read ahead of the batches taken (``arrow_csv.FileRegion``): pyarrow's reader would
# hold up to 32 (1M-launch trace, pyarrow's read alone: peak RSS 205 -> 82 MB over the interpreter's)
READ_BLOCKS_AHEAD = 8


@dataclass
class ArrowTexts:
    """Text columns a trace read by pyarrow holds as pyarrow text (``columns``: name -> ChunkedArray, a value
    per row read) instead of Python objects, and the dtype they take once made (``LaunchIds``)."""

    columns: dict[str, object]
    dtype: object


def _arrow_table(path: Path, head: Head, start: int, units: list[str] | None
                 ) -> tuple[pd.DataFrame, NameSplit, Callable[[pd.DataFrame, np.ndarray], pd.DataFrame],
                            frozenset[str], list[str] | None, ArrowTexts] | None:
    """The trace table read by pyarrow's streaming CSV reader, a block at a time: the columns but Name
    as ``read_streamed_table`` gives them (numbers as float64, ``_TEXT_COLUMNS`` as text), and the Name
    column already split (``NameSplit``): its million texts are never made Python strings, only the few
    distinct kernel names are (each row's suffix digits stay pyarrow text, ``ArrowSuffixes``). The number
    columns are rows of one float64 block; the third item selects kept rows by moving them down that block
    in place (``_kept_rows``). A number column whose unit (``units``: the units row) is not its base unit is
    converted as it is copied into the block (the same products ``_from_table`` would make, without a
    million-row array made for each): the fourth item names those columns, the fifth is the units row of
    the frame's columns (no Name column). The ``_KEPT_TEXT`` columns (Context, Stream: a million texts that
    only a report of the launches shows) and the unused ``_UNUSED_TEXT`` ones are not made Python objects:
    the frame holds ``_no_text`` in their place, the sixth item the kept ones as pyarrow text.

    None (the caller then takes pandas' path, which gives the same frame or says what is wrong) where
    pyarrow cannot be imported, or the table holds anything pyarrow reads otherwise than pandas' parser
    or that the whole-text path must see: a column not in ``_TEXT_COLUMNS`` that is not all plain numbers
    (units in the cells, words), no Name column, text or blank lines after the table (a row of other
    length stops pyarrow), ragged rows, quoted newlines, carriage returns, NUL bytes, bytes that are not
    UTF-8, a row without a name (a blank line reads so), or no rows.
    """
    from nvperf_bridge.free_memory import release_free_memory
    from nvperf_bridge.importers.arrow_csv import FileRegion, NotPlain, csv_reader, memory_pool, rows_expected

    reader_modules = csv_reader()
    if reader_modules is None:
        return None
    pa, pa_csv = reader_modules

    has_units = units is not None
    table = streamed_header(head, start, lambda *_: has_units)
    if table is None or "Name" not in table.names:
        return None
    names = table.names
    types = {name: pa.string() if name in _TEXT_COLUMNS else pa.float64() for name in names}
    numeric = [name for name in names if name not in _TEXT_COLUMNS]
    unit_of = dict(zip(names, units)) if units else {}
    factors = [lookup((unit_of.get(name) or "").strip()) for name in numeric]
    scale = [None if found is None or found[0] == 1.0 else found[0] for found in factors]
    texts: dict[str, list] = {name: [] for name in names
                              if name in _TEXT_COLUMNS and name != "Name" and name not in _UNUSED_TEXT}
    # the numbers go straight into one block, a row per column, sized from the rows of the head
    storage = np.empty((len(numeric), rows_expected(path, table.start, head.text[start:])))
    filled: set[int] = set()  # the storage rows of columns with a value so far
    n = 0
    split = _ArrowNames()
    pool = memory_pool()
    try:
        # read once, each block looked at for carriage returns and NUL bytes (NotPlain) as it is read
        with FileRegion(path, table.start, path.stat().st_size, ahead=READ_BLOCKS_AHEAD) as source:
            reader = pa_csv.open_csv(
                source,
                read_options=pa_csv.ReadOptions(skip_rows=2 if has_units else 1, column_names=names,
                                                block_size=ARROW_BLOCK),
                parse_options=pa_csv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False),
                convert_options=pa_csv.ConvertOptions(column_types=types, null_values=[""],
                                                      strings_can_be_null=True, quoted_strings_can_be_null=True,
                                                      check_utf8=True),
                memory_pool=pool,
            )
            with _ReadAhead(reader, READ_AHEAD, source) as batches:
                for batch in batches:
                    if batch.column("Name").null_count:
                        # a row without a name, or a blank line (a row of nulls to pyarrow, where the table ends
                        # for pandas' path): pandas' path tells them apart
                        return None
                    m = batch.num_rows
                    if n + m > storage.shape[1]:  # more rows than the head promised: a larger block
                        grown = np.empty((len(numeric), (n + m) * 3 // 2 + 1024))
                        grown[:, :n] = storage[:, :n]
                        storage = grown
                    for row, name in enumerate(numeric):
                        column = batch.column(name)
                        if column.null_count == m and row not in filled:
                            continue  # no value yet (memcpy's Size on kernel rows): the row is not touched
                        if row not in filled:  # its first value: the rows before it are missing
                            storage[row, :n] = np.nan
                            filled.add(row)
                        values = column.to_numpy(zero_copy_only=False)  # nulls: NaN
                        if scale[row] is None:
                            storage[row, n:n + m] = values
                        else:  # in its base unit (ms -> ns), written straight into the block
                            np.multiply(values, scale[row], out=storage[row, n:n + m])
                    n += m
                    for name, chunks in texts.items():
                        chunks.append(batch.column(name))
                    split.add(batch.column("Name"))
                    if split.blocks % RELEASE_EVERY == 0:
                        # the blocks' freed buffers go back now, not at the end: pyarrow's, and the C heap's (the
                        # file's blocks are read into Python bytes on pyarrow's I/O thread)
                        release_free_memory()
    except (pa.ArrowInvalid, NotPlain):
        return None  # ragged, text after the table, words in a number column, not UTF-8, CR or NUL: pandas' path
    finally:
        pool.release_unused()
    if not split.rows:
        return None
    columns: dict[str, object] = {}
    text_dtype = pd.Series(["text"]).dtype  # what read_csv(dtype=str) gives a text column
    index = pd.RangeIndex(split.rows)
    later = ArrowTexts({}, text_dtype)
    for name in names:
        if name in numeric:
            row = numeric.index(name)
            columns[name] = storage[row, :n] if row in filled else _missing(n)
        elif name in _KEPT_TEXT or name in _UNUSED_TEXT:
            if name in _KEPT_TEXT:
                later.columns[name] = pa.chunked_array(texts.pop(name), type=pa.string())
            columns[name] = pd.Series(_no_text(split.rows), index=index, dtype=object, copy=False)
        elif name in texts:
            columns[name] = pd.Series(_arrow_objects(pa.chunked_array(texts.pop(name), type=pa.string())),
                                      index=index, dtype=text_dtype, copy=False)
    pool.release_unused()  # the text columns' Arrow buffers, now Python objects, go back to the system
    frame = pd.DataFrame(columns, index=index, copy=False)  # the block's rows as they are, no copy
    empty = frozenset(name for row, name in enumerate(numeric) if row not in filled)
    scaled = frozenset(name for row, name in enumerate(numeric) if scale[row] is not None and row in filled)
    frame_units = [unit for name, unit in zip(names, units) if name != "Name"] if units else None
    return (frame, split.result(), lambda raw, keep: _kept_rows(raw, keep, storage[:, :n], numeric, empty), scaled,
            frame_units, later)


def _kept_rows(raw: pd.DataFrame, keep: np.ndarray, storage: np.ndarray, numeric: list[str],
               empty: frozenset[str]) -> pd.DataFrame:
    """``raw.loc[keep]`` for a frame whose ``numeric`` columns are the rows of ``storage`` (``_arrow_table``;
    ``empty``: those without any value, held as ``_missing``):
    those rows' kept values are moved down in place, a million-row column at a time, instead of a copy of
    every column. ``raw`` is used up: its numbers are overwritten and its columns removed. The kept rows are
    numbered 0.. (a ``RangeIndex``, as ``finish`` numbers them in the end): a million labels taken from
    ``raw``'s would make pandas align every column built on them by hashing them."""
    count = int(np.count_nonzero(keep))
    index = pd.RangeIndex(count)
    columns: dict[str, object] = {}
    for name in raw.columns:
        if name in numeric:
            if name in empty:  # a column without values (_missing)
                columns[name] = _missing(count)
                continue
            row = storage[numeric.index(name)]
            row[:count] = row[keep]
            columns[name] = row[:count]
        elif name in _KEPT_TEXT or name in _UNUSED_TEXT:  # held as pyarrow text (ArrowTexts), or never read
            columns[name] = pd.Series(_no_text(count), index=index, dtype=object, copy=False)
        else:
            columns[name] = raw[name].array[keep]  # its dtype kept (text stays text)
    for name in list(raw.columns):
        del raw[name]  # its text columns and line numbers (a million rows each) are not held any longer
    return pd.DataFrame(columns, index=index, copy=False)


def _missing(n: int) -> np.ndarray:
    """``n`` missing numbers that take no memory (one NaN seen ``n`` times, read-only)."""
    return np.broadcast_to(np.float64(np.nan), (n,))


def _no_text(n: int) -> np.ndarray:
    """``n`` missing texts that take no memory (one None seen ``n`` times, read-only): the place of a text
    column ``_arrow_table`` keeps as pyarrow text, or does not read."""
    return np.broadcast_to(np.array(None, dtype=object), (n,))


def _kept_text(values, keep: np.ndarray):
    """The ``keep`` rows of a pyarrow text column (``values`` itself where every row is kept)."""
    import pyarrow as pa

    return values if keep.all() else values.filter(pa.array(keep))


def _text_stand_in(values, keep: np.ndarray, count: int, index: pd.Index) -> pd.Series:
    """What stands in the frame for a text column made later (``LaunchIds``): as many rows as it keeps
    (``count``), one empty text seen in every row where any kept row has a value, else None in every row
    (so ``finish`` keeps the column, or leaves it out, as it would the texts themselves)."""
    from nvperf_bridge.importers.text import same_text

    if values.null_count == 0:
        present = count > 0
    elif values.null_count == len(values):
        present = False
    else:
        present = _kept_text(values, keep).null_count < count
    return pd.Series(same_text(count, "") if present else _no_text(count), index=index, dtype=object, copy=False)


def _arrow_objects(column) -> np.ndarray:
    """A text ChunkedArray as an object array (None where missing), each distinct text one Python string."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column).combine_chunks()
    distinct = np.array(encoded.dictionary.to_pylist() + [None], dtype=object)
    codes = encoded.indices.fill_null(len(distinct) - 1).to_numpy(zero_copy_only=False)
    return distinct[codes]


# the most digits a suffix found by ``_usual_suffixes`` may have (a longer one goes through ``_split_one``)
SUFFIX_DIGITS = 21
_DIGIT_0, _DIGIT_9, _SPACE, _OPEN, _CLOSE = b"0"[0], b"9"[0], b" "[0], b"["[0], b"]"[0]


def _name_buffers(name) -> tuple[np.ndarray, np.ndarray]:
    """A pyarrow string array's first and end byte per row in its data buffer, and that buffer's bytes."""
    m = len(name)
    offsets = np.frombuffer(name.buffers()[1], dtype=np.int32, count=m + 1, offset=name.offset * 4).astype(np.int64)
    buffer = name.buffers()[2]
    return offsets, np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.empty(0, dtype=np.uint8)


def _usual_suffixes(name) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a pyarrow string array that end in the usual `` [digits]`` (what ``_split_one`` splits
    with ``str.rpartition``: a space, ``[``, 1 to ``SUFFIX_DIGITS`` ASCII digits, ``]``), and the number of
    digits of each. Read from the array's buffer without a copy of any name: the rows that end in ``]``,
    then their digits, up to 8 at once from a word of the bytes before the ``]`` (``_digits_in_a_word``),
    and for the rows that leaves open byte by byte leftwards, each step looking only at the rows still in
    their digits (about as many steps as the longest id has digits); the four characters are ASCII, so no
    byte of a multi-byte UTF-8 character is taken for one."""
    offsets, data = _name_buffers(name)
    first, end = offsets[:-1], offsets[1:]
    rows = np.flatnonzero((end - first >= 4) & ~name.is_null().to_numpy(zero_copy_only=False))
    rows = rows[data[end[rows] - 1] == _CLOSE]
    row_first, last = first[rows], end[rows] - 1  # each row's first byte and its "]"
    digits, reading = _digits_in_a_word(data, row_first, last)
    for step in range(1, SUFFIX_DIGITS + 2):  # one step past the most digits: a longer run is no usual suffix
        at = last[reading] - step
        inside = at >= row_first[reading]
        byte = data[np.where(inside, at, 0)]
        reading = reading[inside & (byte >= _DIGIT_0) & (byte <= _DIGIT_9)]
        if not len(reading):
            break
        digits[reading] += 1
    bracket = last - digits - 1
    usual = (digits >= 1) & (digits <= SUFFIX_DIGITS) & (bracket - 1 >= row_first)
    usual[usual] &= (data[bracket[usual]] == _OPEN) & (data[bracket[usual] - 1] == _SPACE)
    return rows[usual], digits[usual]


_WORD_ZEROS = np.uint64(0x3030303030303030)  # "0" in each byte of a word
_WORD_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_WORD_TO_TEN = np.uint64(0x7676767676767676)  # 0x76 + a byte's low 7 bits reach 0x80 from 10 on
_WORD_HIGH = np.uint64(0x8080808080808080)


def _digits_in_a_word(data: np.ndarray, row_first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How many ASCII digits stand right before each ``last`` byte (a row's "]") within its row (from
    ``row_first`` on), read from the 8 bytes before it as one little-endian word: each byte XOR "0" is a
    digit where it is below 10, which sets no high bit in ``(x & 0x7f) + 0x76 | x``; the topmost byte
    with that bit set ends the run (the word's highest set bit, by ``frexp``). (digits, the rows it did not
    settle: all 8 bytes digits in a longer row, or fewer than 8 bytes before the "]" in ``data``), those
    rows' digits 0: ``_usual_suffixes`` counts them byte by byte."""
    digits = np.zeros(len(last), dtype=np.int64)
    if len(data) < 8:
        return digits, np.arange(len(last))
    window = last - 8
    near = np.flatnonzero(window >= 0)
    words = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))  # the 8 bytes from each byte on
    x = words[window[near]] ^ _WORD_ZEROS
    not_digit = (((x & _WORD_LOW7) + _WORD_TO_TEN) | x) & _WORD_HIGH  # bit 8k+7: byte k is no digit
    # the highest such bit's byte h (frexp's exponent is 8h+8; exact: the bits are 8 apart) ends the run
    run = 8 - np.frexp(not_digit.astype(np.float64))[1] // 8
    room = last[near] - row_first[near]  # the row's bytes before its "]"
    settled = (run < 8) | (room <= 8)
    digits[near] = np.where(settled, np.minimum(run, room), 0)
    return digits, np.sort(np.concatenate([np.flatnonzero(window < 0), near[~settled]]))


def _byte_views(name, first: np.ndarray, length: np.ndarray):
    """A pyarrow ``string_view`` array of the byte ranges ``first`` .. ``first + length`` of ``name``'s data
    buffer: parts of its names, viewed, not copied (Arrow's 16-byte view per row: the length and the bytes
    inline up to 12 bytes, else the length, 4 first bytes, buffer 0 and the offset)."""
    import pyarrow as pa

    _, data = _name_buffers(name)
    views = np.zeros((len(first), 4), dtype=np.int32)
    views[:, 0] = length
    long = np.flatnonzero(length > 12)
    if len(long):
        words = np.ndarray((len(data) - 3,), dtype="<i4", buffer=data, strides=(1,))  # the 4 bytes from each byte on
        views[long, 1] = words[first[long]]
        views[long, 3] = first[long]
    short = np.flatnonzero(length <= 12)
    if len(short) and len(data):  # the bytes themselves, zero after the text
        places = np.arange(12)
        inline = data[np.minimum(first[short, None] + places, len(data) - 1)]
        views.view(np.uint8)[short, 4:] = np.where(places < length[short, None], inline, 0)
    return pa.Array.from_buffers(pa.string_view(), len(first), [None, pa.py_buffer(views), name.buffers()[2]])


def _byte_copies(name, first: np.ndarray, length: np.ndarray, present: np.ndarray):
    """A pyarrow string array of copies of the byte ranges ``first`` .. ``first + length`` of ``name``'s data
    buffer (short parts of its names: the suffixes' digits), null where ``present`` is False."""
    import pyarrow as pa

    _, data = _name_buffers(name)
    offsets = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    taken = data[np.repeat(first - offsets[:-1], length) + np.arange(offsets[-1])]
    valid = pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), len(first), [valid, pa.py_buffer(offsets.astype(np.int32)),
                                                           pa.py_buffer(taken)])


class _ArrowNames:
    """``_split_suffix`` and ``pd.factorize`` of the kernel names, block by block, in pyarrow: the rows
    that end in the usual `` [digits]`` (``_usual_suffixes``, from the buffers) are told apart by the text
    before it (pyarrow's hash of views into the block's names, ``_byte_views``: no name is copied or made
    a Python string), and only the rest (memcpy rows, a name without a suffix or another space before
    ``[``) go through ``_split_one``, once per distinct name. The suffix digits are copied out of each
    block as pyarrow text (``ArrowSuffixes``)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}  # kernel name -> code, in order of first appearance
        self.codes: list[np.ndarray] = []
        self.suffix = ArrowSuffixes()
        self.missing: list[np.ndarray] = []
        self.rows = 0
        self.blocks = 0

    def add(self, name) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        m = len(name)
        missing = name.is_null().to_numpy(zero_copy_only=False)
        rows, digits = _usual_suffixes(name)
        usual = np.zeros(m, dtype=bool)
        usual[rows] = True
        local = np.full(m, -1, dtype=np.int64)  # codes into ``texts``, this block's names
        texts: list[str] = []
        digits_at, digits_count = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)  # each row's suffix
        if len(rows):
            offsets, _ = _name_buffers(name)
            first, end = offsets[rows], offsets[rows + 1]
            encoded = pc.dictionary_encode(_byte_views(name, first, end - first - digits - 3))
            texts = encoded.dictionary.to_pylist()
            local[rows] = encoded.indices.to_numpy()
            digits_at[rows], digits_count[rows] = end - digits - 1, digits
        self.suffix.blocks.append(_byte_copies(name, digits_at, digits_count, usual))
        other = ~usual & ~missing
        if other.any():
            encoded = pc.dictionary_encode(name.filter(pa.array(other)))
            pairs = [_split_one(n) for n in encoded.dictionary.to_pylist()]
            which = encoded.indices.to_numpy()
            local[other] = len(texts) + which
            texts += [base for base, _ in pairs]
            has_digits = np.array([d is not None for _, d in pairs], dtype=bool)[which]
            rows_with = np.flatnonzero(other)[has_digits]  # memcpy rows have none: not visited
            self.suffix.unusual.update(zip((self.rows + rows_with).tolist(), (pairs[i][1] for i in which[has_digits])))
        # the block's names numbered on in order of first appearance (as pd.factorize numbers them)
        code_of = np.full(len(texts) + 1, -1, dtype=np.int64)  # the last entry: a row without a name
        for label in pd.unique(local[local >= 0]):  # in order of first appearance
            code_of[label] = self.ids.setdefault(texts[label], len(self.ids))
        self.codes.append(code_of[local])
        self.missing.append(missing)
        self.rows += m
        self.blocks += 1

    def result(self) -> NameSplit:
        distinct = np.empty(len(self.ids), dtype=object)
        distinct[:] = list(self.ids)
        return NameSplit(np.concatenate(self.codes), distinct, self.suffix,
                         np.concatenate(self.missing))


class _ReadAhead:
    """The items of ``batches`` (pyarrow's streaming reader), taken from it by a thread of its own, started
    at once, at most ``depth`` ahead: pyarrow's parse (single-threaded, and it lets go of the interpreter
    lock) runs on the other core while this thread takes the previous block apart. ``source`` (the
    reader's ``FileRegion``, if given) is told of each batch taken, and is let read on freely once closed.
    An exception of the reader is raised by ``__next__``; ``close`` stops the thread (a context manager
    closes it)."""

    _DONE = object()

    def __init__(self, batches, depth: int, source=None) -> None:
        self._ready: queue.Queue = queue.Queue(depth)
        self._stop = threading.Event()
        self._source = source
        self._thread = threading.Thread(target=self._take, args=(batches,), name="nvprof-trace-parse", daemon=True)
        self._thread.start()

    def _take(self, batches) -> None:
        try:
            for item in batches:
                if self._source is not None:
                    self._source.taken()
                if self._stop.is_set():
                    return
                self._ready.put(item)
        except BaseException as exc:  # handed to the consumer, raised there
            self._ready.put(exc)
            return
        self._ready.put(self._DONE)

    def __iter__(self) -> "_ReadAhead":
        return self

    def __next__(self):
        item = self._ready.get()
        if item is self._DONE:
            self._ready.put(item)  # a later call says the same
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        if self._source is not None:
            self._source.unpace()  # a reader waiting to read on (the thread waits for it) goes ahead
        while self._thread.is_alive():  # a put waiting for room returns once the queue is drained
            with contextlib.suppress(queue.Empty):
                self._ready.get(timeout=0.05)
        self._thread.join()

    def __enter__(self) -> "_ReadAhead":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

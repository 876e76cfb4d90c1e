"""ncu-raw: ``ncu --csv --page raw`` (wide: one row per launch, hundreds of metric columns).

The row after the header holds each column's unit (empty for the identity
columns). Columns mix numbers, tuples such as ``"(16, 8, 1)"`` and words such
as ``NVIDIA B200`` or ``CachePreferNone``: numeric columns are converted to
base units with one multiplication per column; the others stay text. The
device name comes from ``device__attribute_display_name``.

Large files are read straight from the file (``read_stream``), never held
whole as text: by pyarrow's CSV reader (only the columns in use, parsed on
every core), else pandas' C parser in chunks; each numeric column is copied
into one float64 block (one row per column, the final frame's storage), and
repeated strings (kernel names, device names) share one object per distinct
value.
Anything unusual (carriage returns, ragged rows, not UTF-8) is read the
whole-text way (``read``), which gives the same frame.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers.arrow_csv import FileRegion, NotPlain, csv_reader, memory_pool
from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.importers.canonical import to_parsed
from nvperf_bridge.importers.sniff import Sniffed
from nvperf_bridge.importers.text import (
    Head,
    NeedsWholeText,
    TableStream,
    parse_numbers,
    read_table,
    same_text,
    streamed_header,
    table_at,
    tuple_product,
    unparsed,
)
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import lookup

FORMAT = "ncu-raw"

# identity columns -> canonical (or kept raw) name; they are always read as text
IDENTITY = {
    "ID": "kernel_id",
    "Kernel Name": "kernel_name",
    "Device": "device_index",
    "CC": "cc",
    "Process ID": "Process ID",
    "Process Name": "Process Name",
    "Host Name": "Host Name",
    "Context": "Context",
    "Stream": "Stream",
    "Kernel Time": "Kernel Time",
}
SHAPE = {"Block Size": "launch__block_size", "Grid Size": "launch__grid_size"}
# raw columns kept even when only the used columns are parsed: the launch section (geometry; roofline reads
# launch__waves_per_multiprocessor) and the device name
KEPT_PREFIXES = ("launch__", "device__attribute_display_name")


def column_filter(extra: frozenset[str] | None):
    """Which raw columns to parse: None (every column, ``--keep-raw``) or a test of a column name that
    keeps the identity and shape columns, every column the alias table maps to a canonical column or a
    part of one, the launch section, and the raw names in ``extra`` (what the models ask for)."""
    if extra is None:
        return None
    from nvperf_bridge.importers.aliases import alias_metrics

    wanted = alias_metrics() | set(extra) | set(IDENTITY) | set(SHAPE)
    return lambda name: name in wanted or name.startswith(KEPT_PREFIXES)


def read(path: Path, text: str, found: Sniffed, raw_columns: frozenset[str] | None = None) -> Parsed:
    """Read an ncu raw-page CSV into one canonical row per launch (``raw_columns``: see ``read_stream``)."""
    table = table_at(text, found.start)
    header_end = text.find("\n", table.start)
    header = next(csv.reader(io.StringIO(text[table.start:header_end])), [])
    text_cols = [c for c in header if c.strip() in IDENTITY or c.strip() in SHAPE]
    raw, units = read_table(text, table, path, skip_units_row=_has_units_row(text, header_end), text_columns=text_cols)
    keep = column_filter(raw_columns)
    if keep is not None:
        if units is not None:
            units = [u for h, u in zip(header, units) if keep(h.strip())]
        header = [h for h in header if keep(h.strip())]
        raw = raw[[c for c in raw.columns if keep(c)]]
    info = InputFile(path=str(path), format=FORMAT, kernels=0)
    if raw.empty:
        raise InputError("the ncu raw table has a header but no launches", path=path, line=table.header_line + 1)
    first_line = table.header_line + (3 if units is not None else 2)
    unit_of = dict(zip([h.strip() for h in header], units or [""] * len(header)))
    if units is None:
        info.notes.append("no units row after the header: values taken as printed (collect with --print-units base)")

    frame = pd.DataFrame(index=raw.index)
    metrics: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    unknown: set[str] = set()
    for column in raw.columns:
        series = raw[column]
        if column in IDENTITY:
            frame[IDENTITY[column]] = series.astype(object)
            continue
        if column in SHAPE:
            if SHAPE[column] not in raw.columns:
                metrics[SHAPE[column]] = tuple_product(series)
            continue
        unit = (unit_of.get(column) or "").strip()
        numbers = series.astype("float64") if series.dtype.kind in "fiub" else parse_numbers(series)
        if series.dtype.kind not in "fiub" and unparsed(series, numbers).any():
            metrics[column] = series  # words, tuples: kept as text
            continue
        found = lookup(unit)
        if found is None:
            unknown.add(unit)
            found = (1.0, "?")
        metrics[column] = numbers * found[0] if found[0] != 1.0 else numbers
        kinds[column] = found[1]
    if unknown:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown))}")
    frame = pd.concat([frame, pd.DataFrame(metrics, index=raw.index)], axis=1)
    frame["source"] = str(path)
    frame["source_row"] = np.arange(first_line, first_line + len(frame))
    for needed in ("kernel_id", "kernel_name"):
        blank = frame[needed].isna() if needed in frame.columns else pd.Series(True, index=frame.index)
        if blank.any():
            raise InputError(f"a launch row has no {'ID' if needed == 'kernel_id' else 'Kernel Name'}", path=path,
                             line=int(frame.loc[blank, "source_row"].iloc[0]),
                             hint="the table may be cut off or edited by hand")
    if "device__attribute_display_name" not in frame.columns and "device_index" in frame.columns:
        frame["device"] = frame["device_index"]
    frame = frame.drop(columns=["device_index"], errors="ignore")
    return to_parsed(frame, kinds, info, per_kernel=False, join="launch")


def _has_units_row(text: str, header_end: int) -> bool:
    """The line after the header is a units row when its first field (the ID column) is empty."""
    if header_end < 0:
        return False
    nxt = text[header_end + 1: header_end + 64]
    return nxt.startswith('"",') or nxt.startswith(",")


# ---- streamed path ------------------------------------------------------------

CHUNK_ROWS = 20_000


def read_stream(path: Path, head: Head, found: Sniffed, raw_columns: frozenset[str] | None = None) -> Parsed | None:
    """Read an ncu raw page straight from the file, in chunks; None where ``read`` must do it.

    ``raw_columns`` None parses every column; a set parses only the columns
    that are used (``column_filter``: those the alias table maps, the launch
    section, identity and shape columns, and the raw names in the set): the
    C parser skips the others (``usecols``), most of a 475-column page.
    The result is the frame ``read`` builds from the whole text, value for value.
    """
    text = head.text
    # a header at the very end of the head (no line after it): the whole-text path
    table = streamed_header(head, found.start, lambda text, _, header_end: _has_units_row(text, header_end),
                            next_line=True)
    if table is None:
        return None
    header, names, units = table.header, table.names, table.units
    has_units = units is not None
    keep = column_filter(raw_columns)
    file_header = header
    if keep is not None:
        if units is not None and len(units) != len(names):
            return None  # a units row that does not line up: the whole-text path says what it can
        chosen = [i for i, name in enumerate(names) if keep(name)]
        if units is not None:
            units = [units[i] for i in chosen]
        header, names = [header[i] for i in chosen], [names[i] for i in chosen]
    start, header_line = table.start, table.line
    built = _arrow_columns(path, start, file_header, header, names, has_units, text[found.start:])
    if built is None:  # no pyarrow, or a table only pandas' parser reads the way read() does
        try:
            built = _stream_columns(path, start, header, names, has_units, selected=keep is not None)
        except (NeedsWholeText, UnicodeDecodeError, ValueError, csv.Error, pd.errors.ParserError,
                pd.errors.ParserWarning, pd.errors.EmptyDataError):
            return None
    if built is None:
        return None
    columns, storage, n = built
    text_dtype = pd.Series(["text"]).dtype  # what read_csv gives a column of words (the whole-text path's dtype)
    if n == 0:
        return None

    info = InputFile(path=str(path), format=FORMAT, kernels=0)
    first_line = header_line + (3 if units is not None else 2)
    unit_of = dict(zip(names, units or [""] * len(names)))
    if units is None:
        info.notes.append("no units row after the header: values taken as printed (collect with --print-units base)")
    kinds: dict[str, str] = {}
    unknown: set[str] = set()
    ident: dict[str, np.ndarray] = {}
    metrics: dict[str, np.ndarray] = {}
    for name, (kind, values) in columns.items():
        if kind == "identity":
            ident[IDENTITY[name]] = values
        elif kind == "shape":
            if SHAPE[name] not in columns:
                metrics[SHAPE[name]] = values
        elif kind == "text":
            metrics[name] = pd.Series(values, index=pd.RangeIndex(n), dtype=text_dtype, copy=False)
        else:
            unit = (unit_of.get(name) or "").strip()
            factor = lookup(unit)
            if factor is None:
                unknown.add(unit)
                factor = (1.0, "?")
            if factor[0] != 1.0:
                values *= factor[0]  # in place: the row of the storage block
            metrics[name] = values
            kinds[name] = factor[1]
    if unknown:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown))}")
    index = pd.RangeIndex(n)
    data: dict[str, object] = {**ident, **{k: v for k, v in metrics.items() if k not in ident}}
    for name, values in data.items():
        if isinstance(values, np.ndarray) and values.dtype == object:  # kept as Python objects, as the whole-text path keeps them
            data[name] = pd.Series(values, index=index, dtype=object, copy=False)
    data["source"] = pd.Series(same_text(n, str(path)), index=index, dtype=object, copy=False)
    data["source_row"] = np.arange(first_line, first_line + n)
    for needed in ("kernel_id", "kernel_name"):
        blank = pd.isna(data[needed]).to_numpy() if needed in data else np.ones(n, dtype=bool)
        if blank.any():
            raise InputError(f"a launch row has no {'ID' if needed == 'kernel_id' else 'Kernel Name'}", path=path,
                             line=int(data["source_row"][np.flatnonzero(blank)[0]]),
                             hint="the table may be cut off or edited by hand")
    if "device__attribute_display_name" not in data and "device_index" in data:
        data["device"] = data["device_index"]
    data.pop("device_index", None)
    frame = pd.DataFrame(data, index=index, copy=False)  # one block per column, no copy
    return to_parsed(frame, kinds, info, per_kernel=False, join="launch", storage=storage)


def _shared_strings(values: pd.Series) -> np.ndarray:
    """Object array of the values, one Python object per distinct value (missing stays NaN)."""
    codes, uniques = pd.factorize(values.astype(object), use_na_sentinel=True)
    table = np.empty(len(uniques) + 1, dtype=object)
    table[:-1] = np.asarray(uniques, dtype=object)
    table[-1] = np.nan
    return table[codes]


def _stream_columns(path: Path, start: int, header: list[str], names: list[str], has_units: bool,
                    selected: bool = False):
    """Parse the table in chunks: {name: (kind, array)}, the float storage block and the row count.

    Kinds: "identity" and "text" (object arrays), "shape" (float products of
    tuples), "number" (a row of the storage block, not yet in base units).
    """
    import warnings

    text_cols = [c for c in header if c.strip() in IDENTITY or c.strip() in SHAPE]
    size = path.stat().st_size
    numeric = [i for i, name in enumerate(names) if name not in IDENTITY and name not in SHAPE]
    row_of = {i: r for r, i in enumerate(numeric)}
    storage: np.ndarray | None = None
    capacity = 0
    state: dict[int, str] = {i: "number" for i in numeric}
    pieces: dict[int, list[np.ndarray]] = {i: [] for i in range(len(names)) if i not in row_of}
    reread: set[int] = set()
    n = 0
    stream = TableStream(path, start)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            reader = pd.read_csv(
                stream, dtype={c: str for c in text_cols}, keep_default_na=False, na_values=[""], index_col=False,
                skiprows=[1] if has_units else None, skipinitialspace=False, engine="c", encoding="utf-8",
                chunksize=CHUNK_ROWS, usecols=header if selected else None,
            )
            with reader:
                for chunk in reader:
                    if [str(c).strip() for c in chunk.columns] != names:
                        return None
                    m = len(chunk)
                    if storage is None or n + m > capacity:
                        # rows expected from the bytes per row so far; grown (copied) only when wrong
                        done = max(1, stream.tell_bytes())
                        expected = int((n + m) * size / done * 1.02) + CHUNK_ROWS
                        capacity = max(expected, n + m, 2 * capacity if storage is not None else 0)
                        grown = np.empty((len(numeric), capacity))
                        if storage is not None:
                            grown[:, :n] = storage[:, :n]
                        storage = grown
                    for i, name in enumerate(names):
                        series = chunk.iloc[:, i]
                        if i not in row_of:  # identity or shape: text
                            pieces[i].append(_shared_strings(series))
                            continue
                        kind = series.dtype.kind
                        if state[i] == "text":
                            if kind in "fiub":
                                reread.add(i)
                            else:
                                pieces[i].append(_shared_strings(series))
                            continue
                        if kind in "fiub":
                            storage[row_of[i], n:n + m] = series.to_numpy(dtype="float64")
                            continue
                        numbers = parse_numbers(series)
                        if unparsed(series, numbers).any():
                            state[i] = "text"  # words, tuples: the column is kept as text
                            pieces[i] = [_shared_strings(series)]
                            if n > 0:
                                reread.add(i)
                            continue
                        storage[row_of[i], n:n + m] = numbers.to_numpy(dtype="float64")
                    n += m
    finally:
        stream.close()
    if storage is None:
        return None
    if reread:
        # a column that turned out to be text after numeric chunks: its printed strings, read again
        for i, values in _reread_text(path, start, [header[i] for i in sorted(reread)], has_units, n).items():
            pieces[sorted(reread)[i]] = [values]
    columns: dict[str, tuple[str, np.ndarray]] = {}
    for i, name in enumerate(names):
        if name in IDENTITY:
            columns[name] = ("identity", np.concatenate(pieces[i]) if pieces[i] else np.empty(0, dtype=object))
        elif name in SHAPE:
            columns[name] = ("shape", _tuple_products(np.concatenate(pieces[i])))
        elif state[i] == "text":
            columns[name] = ("text", np.concatenate(pieces[i]))
        else:
            columns[name] = ("number", storage[row_of[i], :n])
    return columns, storage[:, :n], n


# ---- pyarrow's CSV reader (a runtime dependency; pandas' parser where it cannot be imported) ----------

ARROW_BLOCK = 1 << 20  # bytes per block of pyarrow's reader (each block is parsed by one of its threads)


def _arrow_columns(path: Path, start: int, file_header: list[str], header: list[str], names: list[str],
                   has_units: bool, head: str):
    """``_stream_columns`` by pyarrow's multithreaded CSV reader: only the chosen columns (``header``, of
    the file's ``file_header``; ``head``: the text from the header line on) are converted
    (``include_columns``), numbers straight to float64 in C; None where pyarrow cannot be imported or the
    table holds anything it would read differently from pandas' parser (the caller then takes that path).

    Numeric columns are asked for as float64; a column pyarrow cannot read so (words, tuples, "1,234",
    "n/a") is read again as text and goes through ``parse_numbers`` exactly as on the pandas path. A
    table that does not run to the end of the file (a blank line, a ``==`` line or any line of fewer
    fields after it), ragged rows, a launch without an ID, carriage returns, NUL bytes or bytes that are
    not UTF-8 return None (pandas' path and the whole-text path handle those).
    """
    reader_modules = csv_reader()
    if reader_modules is None:
        return None
    pa = reader_modules[0]
    if "ID" not in names:
        return None
    numeric = [i for i, name in enumerate(names) if name not in IDENTITY and name not in SHAPE]
    # the first rows in the head say which columns hold numbers; the others are read as text first
    guess = _first_rows(head, has_units)
    position = {raw_name: k for k, raw_name in enumerate(file_header)}
    # text is read dictionary-encoded: each block's distinct texts once and a code per row (a column of
    # kernel names is a few hundred texts, not 100k; the rows become Python objects once per distinct text)
    text_type = pa.dictionary(pa.int32(), pa.string())
    types: dict[str, object] = {}
    for i, raw_name in enumerate(header):
        if i not in numeric:
            types[raw_name] = text_type
        elif all(_is_plain_number(row[position[raw_name]]) for row in guess if position[raw_name] < len(row)):
            types[raw_name] = pa.float64()
        else:
            types[raw_name] = text_type
    row_of = {i: r for r, i in enumerate(numeric)}
    read = None
    for _attempt in range(len(header) + 1):
        try:
            read = _arrow_table(path, start, file_header, header, types, has_units, len(numeric), row_of)
            break
        except NotPlain:
            return None  # carriage returns or NUL bytes: the whole-text path's to handle
        except pa.ArrowInvalid as exc:
            failed = _failed_column(str(exc), file_header)
            if failed is None or types.get(failed) != pa.float64():
                return None  # ragged, not UTF-8, a text column that failed: pandas' path says what it is
            types[failed] = text_type
    if read is None:
        return None
    storage, texts, n = read
    ident = texts.get(header[names.index("ID")])
    if n == 0 or ident is None or ident.null_count:
        # a launch without an ID, or a blank line (a row of nulls here; where the table ends for the
        # pandas path, which also names the line of a missing ID)
        return None
    columns: dict[str, tuple[str, np.ndarray]] = {}
    for i, (raw_name, name) in enumerate(zip(header, names)):
        column = texts.get(raw_name)
        if i not in row_of:
            strings = _arrow_strings(column)
            columns[name] = ("identity", strings) if name in IDENTITY else ("shape", _tuple_products(strings))
            continue
        if column is None:  # read as float64 into its storage row
            columns[name] = ("number", storage[row_of[i]])
            continue
        distinct, codes = _arrow_distinct(column)
        # each distinct text converted once (parse_numbers and unparsed go value by value)
        series = pd.Series(distinct, dtype=object, copy=False)
        flags = _booleans(distinct)
        numbers = parse_numbers(series) if flags is None else pd.Series(flags)
        if unparsed(series, numbers).any():
            columns[name] = ("text", distinct[codes])  # words, tuples: the column is kept as text
            continue
        storage[row_of[i]] = numbers.to_numpy(dtype="float64")[codes]
        columns[name] = ("number", storage[row_of[i]])
    return columns, storage, n


def _arrow_table(path: Path, start: int, file_header: list[str], header: list[str], types: dict,
                 has_units: bool, rows: int, row_of: dict[int, int]):
    """Read the table with pyarrow's multithreaded reader (its blocks parsed on every core at once, where the
    streaming reader parses them one after another in this thread), then copy the float64 columns into one
    storage block (a row per numeric column, exactly the rows read), each column dropped from the table, its
    memory freed, once copied; text columns stay chunked arrow arrays (dictionary-encoded).
    Returns (storage, {raw name: text ChunkedArray}, rows read); raises ArrowInvalid as pyarrow does."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    position = {raw_name: k for k, raw_name in enumerate(header)}
    floats = [(raw_name, row_of[position[raw_name]]) for raw_name in header
              if position[raw_name] in row_of and types[raw_name] == pa.float64()]
    pool = memory_pool()
    # read through a stream that checks each block for carriage returns and NUL bytes (NotPlain): the file
    # is read once, not scanned first
    with FileRegion(path, start, path.stat().st_size) as source:
        table = pa_csv.read_csv(
            source,
            read_options=pa_csv.ReadOptions(skip_rows=2 if has_units else 1, column_names=file_header,
                                            block_size=ARROW_BLOCK, use_threads=True),
            parse_options=pa_csv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(include_columns=header, column_types=types, null_values=[""],
                                                  strings_can_be_null=True, quoted_strings_can_be_null=True,
                                                  check_utf8=True),
            memory_pool=pool,
        )
    n = table.num_rows
    storage = np.empty((rows, n))
    for raw_name, row in floats:
        at = 0
        for chunk in table.column(raw_name).chunks:
            storage[row, at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)  # nulls: NaN
            at += len(chunk)
        table = table.drop_columns([raw_name])  # its buffers go back to the pool as the storage row fills
    texts = {raw_name: table.column(raw_name) for raw_name in table.column_names}
    del table
    pool.release_unused()  # the parser's block buffers go back to the system, not held for later
    return storage, texts, n


def _first_rows(head: str, has_units: bool, limit: int = 200) -> list[list[str]]:
    """The first data rows of the table (at most ``limit``), from the text that starts at its header."""
    lines = head.split("\n", limit + 3)[1 + (1 if has_units else 0):][:limit]
    return list(csv.reader(line for line in lines[:-1] if line))  # the last piece may be cut


# what pandas' C parser reads as booleans (then 1.0 / 0.0 in a numeric column)
_BOOLEAN_TEXT = {"True": 1.0, "TRUE": 1.0, "true": 1.0, "False": 0.0, "FALSE": 0.0, "false": 0.0}


def _booleans(strings: np.ndarray) -> np.ndarray | None:
    """A text column of only pandas' boolean words (and missing values) as 1.0 / 0.0, else None."""
    present = [value for value in pd.unique(strings).tolist() if isinstance(value, str)]
    if not present or not all(value in _BOOLEAN_TEXT for value in present):
        return None
    return np.array([_BOOLEAN_TEXT.get(value, np.nan) if isinstance(value, str) else np.nan
                     for value in strings.tolist()])


_PLAIN_NUMBER = frozenset("0123456789.-+eE")


def _is_plain_number(value: str) -> bool:
    """An empty field or one that float() reads (pyarrow reads it the same)."""
    if not value:
        return True
    if not set(value) <= _PLAIN_NUMBER:
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _failed_column(message: str, header: list[str]) -> str | None:
    """The column pyarrow named in a conversion error ("In CSV column #12: ... conversion error")."""
    import re

    found = re.match(r"In CSV column #(\d+): .*conversion error", message, re.S)
    if found is None or int(found.group(1)) >= len(header):
        return None
    return header[int(found.group(1))]


def _arrow_strings(column) -> np.ndarray:
    """An arrow text column as an object array, one Python string per distinct value (missing: NaN)."""
    distinct, codes = _arrow_distinct(column)
    return distinct[codes]


def _arrow_distinct(column) -> tuple[np.ndarray, np.ndarray]:
    """A dictionary-encoded arrow text column's distinct values (an object array ending with NaN, for
    missing; in order of first appearance) and each row's position in it."""
    chunks = column.unify_dictionaries().chunks  # one dictionary for every block's codes
    values = chunks[0].dictionary.to_pylist() if chunks else []
    distinct = np.empty(len(values) + 1, dtype=object)
    distinct[:-1] = np.asarray(values, dtype=object)
    distinct[-1] = np.nan
    codes = [(chunk.indices.fill_null(-1) if chunk.indices.null_count else chunk.indices)
             .to_numpy(zero_copy_only=False) for chunk in chunks]
    return distinct, np.concatenate(codes) if codes else np.empty(0, dtype=np.int32)


def _reread_text(path: Path, start: int, header: list[str], has_units: bool, n: int) -> dict[int, np.ndarray]:
    stream = TableStream(path, start)
    try:
        frame = pd.read_csv(stream, usecols=header, dtype=str, keep_default_na=False, na_values=[""],
                            index_col=False, skiprows=[1] if has_units else None, engine="c", encoding="utf-8")
    finally:
        stream.close()
    if len(frame) != n:
        raise ValueError("the table changed while it was read")
    return {k: _shared_strings(frame[name]) for k, name in enumerate(header)}


def _tuple_products(values: np.ndarray) -> np.ndarray:
    """``tuple_product`` of each value, computed once per distinct string."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    products = tuple_product(pd.Series(np.asarray(uniques, dtype=object), dtype=object)).to_numpy(dtype="float64")
    out = np.append(products, tuple_product(pd.Series([np.nan], dtype=object)).to_numpy(dtype="float64"))
    return out[codes]

"""Text columns as codes: each distinct string once, and per row its position among them.

A long ncu details table repeats a few strings hundreds of thousands of times (the kernel name on every
metric row of its launch, a few dozen metric names and units): holding them as codes lets the importer
parse each distinct value once, pivot with integer arrays, and never build a Python string per row.
``from_frame`` codes a table pandas read; ``read_arrow_table`` reads a table region with pyarrow's
streaming CSV reader straight into codes (dictionary-encoded columns, the strings never materialised per
row), giving what pandas' C parser gives for the same rows, or None where it cannot promise that.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.free_memory import release_free_memory
from nvperf_bridge.importers.arrow_csv import FileRegion, NotPlain, csv_reader
from nvperf_bridge.importers.arrow_csv import memory_pool

@dataclass
class Coded:
    """One text column: ``distinct`` (an object array of str) and ``codes`` (one per row: a position in
    ``distinct``, or -1 for a missing value: an empty field, as pandas reads it with ``na_values=[""]``)."""

    distinct: np.ndarray
    codes: np.ndarray  # a signed integer type that also holds len(distinct) (``code_type``): widen before other arithmetic

    def values(self, rows: np.ndarray | slice | None = None) -> np.ndarray:
        """The rows' values as an object array (NaN where missing), as pandas' parser gives them."""
        codes = self.codes if rows is None else self.codes[rows]
        return np.append(self.distinct, np.nan).astype(object)[codes]

    def series(self, rows: np.ndarray | slice | None = None) -> pd.Series:
        return pd.Series(self.values(rows), dtype=object, copy=False)

    def take(self, rows: np.ndarray) -> "Coded":
        return Coded(self.distinct, self.codes[rows])


def code_type(n_distinct: int) -> np.dtype:
    """The narrowest signed integer type for the codes of ``n_distinct`` values: -1 (missing) to
    ``n_distinct``, one above the largest code, so that a code + 1 still fits. A column of a few distinct
    texts (most of a details table's: units, sections, the device) takes a byte per row, not four."""
    return np.min_scalar_type(-(n_distinct + 1))


def from_frame(frame: pd.DataFrame) -> dict[str, Coded]:
    """Every column of a table read as text, coded (distinct values in order of first appearance)."""
    out = {}
    for name in frame.columns:
        codes, distinct = pd.factorize(frame[name].astype(object), use_na_sentinel=True, sort=False)
        out[str(name)] = Coded(np.asarray(distinct, dtype=object), codes.astype(np.intp, copy=False))
    return out


# ---- pyarrow's streaming reader ------------------------------------------------------------------------

BLOCK = 1 << 20  # bytes per block of the reader: a block at a time is held, never the file (4 MB blocks
# measured 201 MB more peak RSS than 1 MB ones on a 153 MB details file: the freed blocks stay in the heap)
# a table ends at a blank line, a ``==`` line or a line without a comma (text.table_at's rule, on bytes)
_TABLE_END = re.compile(rb"\n(?=[ \t]*\n|[ \t]*$|==|[^,\n]*(?:\n|$))")


def table_end(path: Path, data_start: int, tail_bytes: int) -> int | None:
    """Where the table whose rows start at byte ``data_start`` ends, judged from the last ``tail_bytes`` of
    the file only (None when the tail holds no complete line): the first end-of-table line in that tail. An end-of-table line before the tail is not seen here; the reader meets it as a row of the
    wrong width, and ``read_arrow_table`` then gives up."""
    size = path.stat().st_size
    begin = max(data_start, size - tail_bytes)
    with open(path, "rb") as fh:
        fh.seek(begin)
        tail = fh.read()
    if begin > data_start:  # the tail starts inside a row: look from the end of that row on
        first = tail.find(b"\n")
        if first < 0:
            return None
        offset = first
    else:
        tail = b"\n" + tail  # the header's newline: the first row may itself end the table
        offset, begin = 0, begin - 1
    found = _TABLE_END.search(tail, offset)
    if found is None:
        return size if tail.endswith(b"\n") else None
    end = begin + found.start() + 1
    if end - 1 < data_start and begin == data_start - 1:
        return data_start  # no rows at all
    return end


def read_arrow_table(path: Path, data_start: int, end: int, header: list[str], include: list[str],
                     width: int) -> tuple[dict[str, Coded], int] | None:
    """The rows between bytes ``data_start`` and ``end`` of ``path`` (a table under the header fields
    ``header``), columns ``include`` coded; None where pyarrow is missing or the rows hold anything pandas'
    C parser (``dtype=object, keep_default_na=False, na_values=[""]``) might read differently.

    ``width`` is the number of fields most rows have (ncu's metric rows end early with a trailing comma: 16
    fields under a 20-column header). The reader takes rows of that width; a row of another width (a rule
    row that fills every column) comes to a handler, which keeps it when it is an ordinary CSV row no wider
    than the header (padded with missing values, as pandas pads it) and gives up on anything else: a blank
    line or a line without a comma (the table would end there), a ``==`` line, a row wider than the header,
    the header again, carriage returns or NUL bytes, bytes that are not UTF-8, a value with a line break.
    """
    reader_modules = csv_reader()
    if reader_modules is None:
        return None
    pa, pa_csv = reader_modules
    names = header[:width]
    read_names = [name for name in names if name in include]
    other: list[tuple[int, str, int]] = []

    def handle(row) -> str:
        if row.number is None:
            raise NotPlain()
        other.append((row.number, row.text, row.actual_columns))
        return "skip"

    text_type = pa.dictionary(pa.int32(), pa.string())
    read_options = pa_csv.ReadOptions(column_names=names, block_size=BLOCK, use_threads=False)
    parse_options = pa_csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False, invalid_row_handler=handle)
    source = FileRegion(path, data_start, end)
    # each batch's columns as their dictionaries and numpy codes: the batch itself is freed as the next one is
    # read, so the reader's allocator reuses its blocks (holding the batches to decode them at the end kept
    # the reader's memory and the codes made from it at once: 66 + 65 MB of a 153 MB details file)
    pieces: dict[str, list[tuple[Any, np.ndarray]]] = {name: [] for name in read_names}
    valid = 0
    try:
        # UTF-8 is checked once per distinct value (``_decode``), not in every row's field: the same bytes
        # either way, and a value that is not UTF-8 still sends the table to pandas' parser
        reader = pa_csv.open_csv(source, read_options=read_options, parse_options=parse_options,
                                 convert_options=_text_columns(pa_csv, read_names, text_type, check_utf8=False),
                                 memory_pool=memory_pool())
        for batch in reader:
            valid += batch.num_rows
            for name in read_names:
                pieces[name].append(_local_codes(batch.column(name)))
    except (NotPlain, pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OSError):
        return None
    finally:
        source.close()
        # the reader's blocks and the bytes it read ahead (some 30 blocks): freed, but kept by the allocators,
        # they would stay under what the decoding below adds (here and twice below: memory only, same values)
        release_free_memory()
    rows = valid + len(other)
    if rows == 0:
        return None
    # where the rows of another width sat among the others (row numbers count from 1)
    positions = np.array([number - 1 for number, _, _ in other], dtype=np.intp)
    if len(positions) and (positions.min() < 0 or positions.max() >= rows or len(np.unique(positions)) != len(positions)):
        return None
    if any(count > len(header) or "," not in text or "\n" in text or text.lstrip().startswith("==")
           for _, text, count in other):
        return None  # wider than the header, a line without a comma (the table ends there), a value on two
        # lines, a banner
    in_header = [name for name in include if name in header]
    n_other = len(other)
    others = _other_rows(other, header, in_header, text_type) if other else None
    del other  # their text (a rule row's prose, once per launch) is read: nothing holds it now
    release_free_memory()
    if n_other and others is None:
        return None
    at_valid = np.ones(rows, dtype=bool)
    at_valid[positions] = False
    columns: dict[str, Coded] = {}
    for name in in_header:
        parts = pieces.pop(name, []) + ([_local_codes(chunk) for chunk in others.column(name).chunks]
                                        if others is not None else [])
        decoded = _decode(parts, pa)
        if decoded is None:
            return None  # a line break inside a value (the stream's end-of-table rule reads lines, not rows),
            # or a value that is not UTF-8
        distinct, codes = decoded
        if n_other or name not in read_names:  # a column past the rows' width is missing where no wider row fills it
            merged = np.full(rows, -1, dtype=codes.dtype)
            if name in read_names:
                merged[at_valid] = codes[:valid]
            if n_other:
                merged[positions] = codes[len(codes) - n_other:]
            codes = merged
        columns[name] = Coded(distinct, codes)
    release_free_memory()  # the chunks' dictionaries and the other rows' table
    first = columns.get(header[0])
    if first is None or (first.codes < 0).any():
        return None  # a row without the first field (a blank line read as a row): pandas' path decides
    if any(value == header[0] or value.startswith("==") for value in first.distinct.tolist()):
        return None  # the header again under the rows, or a banner read as a row
    return columns, rows


def _text_columns(pa_csv, names: list[str], text_type, check_utf8: bool = True):
    """Convert options: ``names`` as dictionary-encoded text, empty fields missing (as pandas'
    ``na_values=[""]`` reads them, quoted or not); ``check_utf8`` False leaves the UTF-8 check to the
    caller (``_decode`` checks each distinct value once)."""
    return pa_csv.ConvertOptions(include_columns=names, column_types={name: text_type for name in names},
                                 null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True,
                                 check_utf8=check_utf8)


def _other_rows(rows: list[tuple[int, str, int]], header: list[str], names: list[str], text_type):
    """The rows of another width (``(number, text, fields)`` as the reader's handler met them; each padded
    with empty fields to the header's width, as pandas pads a short row) read by the same reader as the rest:
    a table of ``names``, or None when they do not read as one row each. Their bytes are made in one pass
    (no padded copy of every text, no joined text beside them)."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pa_csv

    try:
        data = b"".join((text + "," * (len(header) - count) + "\n").encode("utf-8") for _, text, count in rows)
        table = pa_csv.read_csv(
            io.BytesIO(data),
            read_options=pa_csv.ReadOptions(column_names=header, use_threads=False),
            parse_options=pa_csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
            convert_options=_text_columns(pa_csv, names, text_type))
    except (pa.ArrowInvalid, UnicodeError):
        return None
    return table if table.num_rows == len(rows) else None


def _local_codes(chunk) -> tuple[Any, np.ndarray]:
    """A dictionary-encoded chunk as its dictionary (the distinct values in order of first appearance in the
    chunk) and a copy of its codes (-1 for missing): nothing of the chunk's own blocks is held after."""
    indices = chunk.indices.fill_null(-1) if chunk.indices.null_count else chunk.indices
    return chunk.dictionary, indices.to_numpy(zero_copy_only=False).astype(code_type(len(chunk.dictionary)))


def _decode(parts: list[tuple[Any, np.ndarray]], pa) -> tuple[np.ndarray, np.ndarray] | None:
    """The chunks of one column (``_local_codes``, in row order) -> (distinct values as str in order of first
    appearance, codes per row with -1 for missing); None when a value holds a line break or is not UTF-8.
    The chunks' dictionaries, concatenated in order and encoded, give each chunk's values their positions among
    all of them (as ``unify_dictionaries`` orders them: a value first met in a later chunk comes after)."""
    import pyarrow.compute as pc

    if not parts:
        return np.empty(0, dtype=object), np.empty(0, dtype=np.intp)
    every = pa.concat_arrays([dictionary for dictionary, _ in parts])
    try:
        every.validate(full=True)  # each value UTF-8 (the reader leaves that check to here: ``read_arrow_table``)
    except pa.ArrowInvalid:
        return None
    encoded = pc.dictionary_encode(every)
    distinct = encoded.dictionary
    if len(distinct) and pc.any(pc.match_substring(distinct, "\n")).as_py():
        return None
    positions = encoded.indices.to_numpy()
    codes = np.empty(sum(len(local) for _, local in parts), dtype=code_type(len(distinct)))
    row = offset = 0
    for dictionary, local in parts:
        # a chunk's code -> the value's position among all, and -1 (a missing value) -> -1
        to_all = np.append(positions[offset:offset + len(dictionary)], -1).astype(codes.dtype)
        codes[row:row + len(local)] = to_all[local]
        row, offset = row + len(local), offset + len(dictionary)
    return np.asarray(distinct.to_pylist(), dtype=object), codes


def modal_width(rows: list[list[str]]) -> int | None:
    """The number of fields most of the first rows have (ties: the wider), None without rows."""
    if not rows:
        return None
    counts = Counter(len(row) for row in rows)
    return max(counts, key=lambda width: (counts[width], width))


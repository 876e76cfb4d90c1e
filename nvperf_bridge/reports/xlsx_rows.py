"""Fast data rows for the streamed workbook.

openpyxl builds an XML element per cell, which makes the bulk of a big
workbook (tens of thousands of kernels times dozens of columns) cost far
more than everything else in it. The workbook is therefore written in two
steps: openpyxl writes every sheet's frame (column widths, frozen panes,
notes, the styled header row with its comments, autofilter, conditional
formatting, charts, images) and registers the cell styles; then this module
writes the data rows as plain SpreadsheetML (``<row><c>`` elements, numbers
as ``<v>``, text inline) into those sheets while copying openpyxl's saved
frame into the final zip (``write_rows``: a temporary file the writer then
reads in chunks), streaming them into each zip entry.

The result is an ordinary .xlsx: the cells carry the style ids openpyxl
registered (``cell.style_id``) and text is always written as text
(``t="inlineStr"``), so nothing becomes a formula.
"""

from __future__ import annotations

import io
import math
import zipfile
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator, Sequence

import numpy as np

_ROWS_PER_CHUNK = 500
ZIP_LEVEL = 3  # deflate level: sheet XML compresses almost as well as at 6, in about half the time


class Quoted(str):
    """Text that looks like a formula: written as text with the quote-prefix style."""


@dataclass
class RawColumn:
    """One column of data cells: its letter, its values (None = no cell) and style ids. ``values`` may
    be a float64 numpy array (NaN and infinities: no cell), turned into Python numbers a chunk of rows
    at a time: a list of every Python float of a 100k-kernel Inputs sheet took about 250 MB."""

    letter: str
    values: Sequence[Any] | np.ndarray
    style: int = 0  # style id for the column's cells (0 = default)


def plain_numbers(array: np.ndarray) -> list[Any]:
    """Python floats of a float array, None where a value is NaN or infinite (no cell)."""
    finite = np.isfinite(array)
    if finite.all():
        return array.tolist()
    return np.where(finite, array, None).tolist()


def _rows_of(values: Sequence[Any] | np.ndarray, start: int, stop: int) -> Sequence[Any]:
    """The values of rows ``start`` to ``stop`` as Python objects."""
    part = values[start:stop]
    return plain_numbers(part) if isinstance(part, np.ndarray) else part


@dataclass
class RawBlock:
    """Data rows for one sheet, from ``first_row`` down."""

    sheet_path: str  # zip entry, e.g. "xl/worksheets/sheet1.xml"
    first_row: int
    rows: int
    columns: list[RawColumn]
    quoted_style: int  # style id with quotePrefix, for formula-looking text
    side_first_column: int = 0  # 1-based column of the block right of the table (0 = none)
    side_rows: list[list[Any]] = field(default_factory=list)
    heights: dict[int, float] = field(default_factory=dict)  # row offset -> height in points


def _escape(text: str) -> str:
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _text_cell(ref: str, text: str, style: int) -> str:
    s = f' s="{style}"' if style else ""
    space = ' xml:space="preserve"' if text != text.strip() else ""
    return f'<c r="{ref}"{s} t="inlineStr"><is><t{space}>{_escape(text)}</t></is></c>'


def _cell(ref: str, value: Any, style: int, quoted_style: int) -> str:
    kind = type(value)
    if kind is float and not math.isfinite(value):
        return ""
    if kind is float or kind is int:
        s = f' s="{style}"' if style else ""
        return f'<c r="{ref}"{s}><v>{value!r}</v></c>'
    if kind is Quoted:
        return _text_cell(ref, str(value), quoted_style)
    if isinstance(value, str):
        return _text_cell(ref, value, style)
    if isinstance(value, bool):
        return _text_cell(ref, str(value).lower(), style)
    if isinstance(value, (int, float)):
        return _cell(ref, float(value) if isinstance(value, float) else int(value), style, quoted_style)
    return _text_cell(ref, str(value), style)


def _letter(index: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(index)


def block_rows(block: RawBlock) -> Iterator[str]:
    """The block's ``<row>`` elements, a chunk of rows per string."""
    columns = [(c.letter, c.values, c.style) for c in block.columns]
    side_letters = [_letter(block.side_first_column + i) for i in range(max((len(r) for r in block.side_rows),
                                                                           default=0))]
    quoted = block.quoted_style
    total = max(block.rows, len(block.side_rows))
    # text repeats a lot (labels, states, sources): build each distinct cell body once per column
    bodies: list[dict[Any, str]] = [{} for _ in columns]
    chunk: list[str] = []
    part: list[Sequence[Any]] = []
    for offset in range(total):
        if offset % _ROWS_PER_CHUNK == 0:  # the next chunk's values as Python objects (arrays converted here)
            part = [_rows_of(values, offset, offset + _ROWS_PER_CHUNK) for _, values, _ in columns]
        number = block.first_row + offset
        height = block.heights.get(offset)
        head = f'<row r="{number}" ht="{height:g}" customHeight="1">' if height else f'<row r="{number}">'
        cells = [head]
        if offset < block.rows:
            at = offset % _ROWS_PER_CHUNK
            for (letter, _, style), values, body in zip(columns, part, bodies):
                value = values[at]
                if value is None:
                    continue
                if type(value) is float:  # the common case, inlined
                    cells.append(f'<c r="{letter}{number}" s="{style}"><v>{value!r}</v></c>' if style
                                 else f'<c r="{letter}{number}"><v>{value!r}</v></c>')
                    continue
                key = (type(value), value)
                text = body.get(key)
                if text is None:
                    text = _cell("", value, style, quoted)[len('<c r=""'):]  # "" for NaN / inf: no cell
                    if len(body) < 10_000:
                        body[key] = text
                if text:
                    cells.append(f'<c r="{letter}{number}"{text}')
        if offset < len(block.side_rows):
            for letter, value in zip(side_letters, block.side_rows[offset]):
                if value is not None:
                    cells.append(_cell(f"{letter}{number}", value, 0, quoted))  # "" for NaN / inf
        cells.append("</row>")
        chunk.append("".join(cells))
        if len(chunk) >= _ROWS_PER_CHUNK:
            yield "".join(chunk)
            chunk = []
    if chunk:
        yield "".join(chunk)


def write_rows(xlsx: bytes, blocks: Sequence[RawBlock], target_file: BinaryIO) -> None:
    """Write the workbook ``xlsx`` (openpyxl's frame) to ``target_file`` (seekable: zipfile writes each
    entry's sizes back into its header) with each block's rows appended to its sheet's ``sheetData``."""
    by_path = {block.sheet_path.lstrip("/"): block for block in blocks if block.rows or block.side_rows}
    source = zipfile.ZipFile(io.BytesIO(xlsx))
    with zipfile.ZipFile(target_file, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            block = by_path.get(info.filename)
            if block is None:
                target.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
                continue
            text = data.decode("utf-8")
            closing = text.rfind("</sheetData>")
            if closing < 0:  # an empty sheetData is written self-closed
                empty = text.find("<sheetData />")
                empty_len = len("<sheetData />")
                if empty < 0:
                    empty = text.find("<sheetData/>")
                    empty_len = len("<sheetData/>")
                if empty < 0:
                    raise ValueError(f"{info.filename}: no sheetData element to fill")
                head, tail = text[:empty] + "<sheetData>", "</sheetData>" + text[empty + empty_len:]
            else:
                head, tail = text[:closing], text[closing:]
            entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            entry.compress_type = zipfile.ZIP_DEFLATED
            with target.open(entry, "w", force_zip64=True) as stream:
                stream.write(head.encode("utf-8"))
                for chunk in block_rows(block):
                    stream.write(chunk.encode("utf-8"))
                stream.write(tail.encode("utf-8"))


__all__ = ["Quoted", "RawBlock", "RawColumn", "block_rows", "plain_numbers", "write_rows"]

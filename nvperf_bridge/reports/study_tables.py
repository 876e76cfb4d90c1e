"""Small tables for the study reports (``whatif``, ``compare``): Markdown cells and a plain workbook.

The analyze workbook (``excel.py``) is built for thousands of kernels; a study has tens of rows,
so its workbook is written cell by cell here, with the same header colours, text safety (a value
that looks like a formula stays text) and figures embedded as PNG.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from nvperf_bridge.reports.common import format_number, format_percent, format_time, python_value
from nvperf_bridge.reports.markdown import escape


@dataclass
class Sheet:
    """One sheet: a title, notes above the table, the header and the rows (plain Python values)."""

    title: str
    header: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    widths: dict[int, float] = field(default_factory=dict)  # column position (0-based) -> width
    formats: dict[int, str] = field(default_factory=dict)  # column position -> number format


def time_cell(ns: Any) -> str:
    """A duration for a Markdown cell ('' when missing)."""
    value = python_value(ns)
    return format_time(value) if isinstance(value, (int, float)) else ""


def number_cell(value: Any) -> str:
    return format_number(python_value(value))


def percent_cell(fraction: Any, signed: bool = False) -> str:
    value = python_value(fraction)
    return format_percent(value, signed=signed) if isinstance(value, (int, float)) else ""


def text_cell(value: Any) -> str:
    value = python_value(value)
    return "" if value is None else escape(value)


def cell_value(value: Any) -> Any:
    """A value for a workbook cell: plain Python, NaN and infinities as empty."""
    value = python_value(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def render_sheets(sheets: Sequence[Sheet], images: Sequence[tuple[str, bytes]] = (), *, title: str = "",
                  creator: str = "") -> bytes:
    """A workbook with one sheet per ``Sheet`` and a 'Figures' sheet holding ``images`` (caption, PNG)."""
    from openpyxl import Workbook
    from openpyxl.drawing.image import Image
    from openpyxl.styles import Font, PatternFill
    from openpyxl.utils import get_column_letter

    from nvperf_bridge.reports.excel import FONT, HEADER_FILL, HEADER_FONT_COLOR, NOTE_COLOR, _set_value

    wb = Workbook()
    wb.remove(wb.active)
    wb.properties.title = title
    wb.properties.creator = creator
    header_font = Font(name=FONT, bold=True, color=HEADER_FONT_COLOR)
    header_fill = PatternFill("solid", fgColor=HEADER_FILL)
    for sheet in sheets:
        ws = wb.create_sheet(sheet.title[:31])
        for row_number, note in enumerate(sheet.notes, start=1):
            cell = ws.cell(row=row_number, column=1)
            _set_value(cell, note)
            cell.font = Font(name=FONT, bold=row_number == 1, italic=row_number > 1, color=None if row_number == 1
                             else NOTE_COLOR)
        header_row = len(sheet.notes) + 1
        for position, name in enumerate(sheet.header, start=1):
            cell = ws.cell(row=header_row, column=position)
            _set_value(cell, name)
            cell.font, cell.fill = header_font, header_fill
            width = sheet.widths.get(position - 1, max(10.0, min(40.0, len(name) + 2.0)))
            ws.column_dimensions[get_column_letter(position)].width = width
        for offset, row in enumerate(sheet.rows, start=1):
            for position, value in enumerate(row, start=1):
                cell = ws.cell(row=header_row + offset, column=position)
                _set_value(cell, cell_value(value))
                if position - 1 in sheet.formats and isinstance(cell.value, (int, float)):
                    cell.number_format = sheet.formats[position - 1]
        ws.freeze_panes = f"A{header_row + 1}"
        if sheet.rows and sheet.header:
            ws.auto_filter.ref = f"A{header_row}:{get_column_letter(len(sheet.header))}{header_row + len(sheet.rows)}"
    if images:
        ws = wb.create_sheet("Figures")
        ws.column_dimensions["A"].width = 100
        row = 1
        for caption, png in images:
            _set_value(ws.cell(row=row, column=1), caption)
            ws.cell(row=row, column=1).font = Font(name=FONT, bold=True, size=12)
            image = Image(io.BytesIO(png))
            scale = min(1.0, 820.0 / max(image.width, 1))
            image.width, image.height = int(image.width * scale), int(image.height * scale)
            ws.add_image(image, f"A{row + 1}")
            row += int(image.height / 20) + 3
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


__all__ = ["Sheet", "cell_value", "number_cell", "percent_cell", "render_sheets", "text_cell", "time_cell"]

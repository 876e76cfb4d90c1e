"""The Excel workbook for performance reviews (openpyxl, streaming write-only mode).

Sheets, in order:

- **Kernel groups**: the review (``nvperf_bridge.review``): one row per kernel
  group (kernel + launch shape), longest first, with its share of GPU time,
  verdict and 1-3 actions right after the kernel, then launches and times,
  Nsight's speed-of-light view (flagged where it disagrees), what the verdict
  rests on, Nsight's rules and, for unpredicted groups, the command that
  collects the missing counters.
- **Summary**: one row per kernel, longest first: its group, the group's share,
  verdict and first action, then measured time, each model's
  prediction and signed error, each model's bottleneck, the consensus
  bottleneck and how many models agree; the full kernel name in the last column.
- **Accuracy**: per model n, MAPE, median APE, geometric-mean absolute error
  (Hong & Kim) and mean accuracy (Luo & Suda).
- **Charts**: native Excel charts with their data: measured vs predicted time
  of the kernel groups with the most GPU time (each by its longest launch), and
  bottleneck counts per model.
- **Figures**: the measured-vs-predicted scatter, the Transit figure and the
  roofline of the kernel groups (PNG), each where the analysis has its data.
- **one sheet per model**: header note citing the paper, every kernel's
  prediction, state and intermediate quantities under the paper's symbols,
  and to the right the machine constants (value, unit, status, source) and
  the reasons kernels were not predicted.
- **Inputs**: the canonical KernelFrame, units in the headers; raw profiler
  counters without a canonical name after it.
- **GPU**: the profile used, with sources, and every model constant used with
  its status (paper, measured, datasheet, calibrated, default).
- **Notes**: input files and formats, skipped rows, warnings, failed models,
  tool version, timestamp, how the GPU was chosen.

Finish: frozen header rows (and name columns), autofilter, sized columns,
per-column time units (ns, µs, ms, s) named in the header, percentages as %,
conditional fills for error bands (on |ln(predicted / measured)|, so 2x over and 2x under
look the same) and bottleneck labels; number columns as wide as their widest formatted value, landscape printing
one page wide. Text that a spreadsheet could take for a formula (starting
with ``= + - @``, tab or CR, or an error literal like ``#N/A``) is stored as
text with a quote prefix, never as a formula.

Speed: openpyxl (``write_only=True``) writes each sheet's frame and registers
one style per column; the data rows are written as plain SpreadsheetML by
``xlsx_rows`` (openpyxl's per-cell XML would dominate the run time).
Conditional formatting is one rule per column range, never per cell. Model
sheets list the ``MODEL_SHEET_ROWS`` longest kernels (the reasons beside them,
the Summary and the JSON and CSV reports count every kernel); above
``LARGE_INPUT`` kernels the Inputs sheet has no per-cell number formats.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from nvperf_bridge.analysis import Analysis, ModelRun
from nvperf_bridge.columns import CANONICAL_COLUMNS, IDENTITY_COLUMNS
from nvperf_bridge.free_memory import release_free_memory
from nvperf_bridge.model import BOTTLENECKS
from nvperf_bridge.review.build import Review, build_review
from nvperf_bridge.review.groups import TOP_SHARE
from nvperf_bridge.run_options import describe_options
from nvperf_bridge.reports.xlsx_rows import Quoted, RawBlock, RawColumn, plain_numbers, write_rows
from nvperf_bridge.reports.common import (
    BOTTLENECK_COLORS,
    ERROR_BANDS,
    FORMULA_START,
    NOT_JUDGED,
    NOT_JUDGED_NOTE,
    constant_status_summary,
    detail_columns,
    display_names,
    error_fraction,
    error_reasons,
    full_names,
    kernel_ids,
    longest_per_group,
    not_judged,
    ranking_times,
    shorten,
    time_derived_masks,
    TIME_UNITS,
    time_unit,
)

LARGE_INPUT = 20_000  # kernels above which the workbook takes its fast path
MODEL_SHEET_ROWS = 2_000  # kernels listed per model sheet (the longest); JSON and CSV hold every kernel
CHART_KERNELS = 15  # kernel groups in the measured-vs-predicted chart (each by its longest launch)
NAME_WIDTH = 50  # characters of the short kernel name column (its width fits them)
PRINT_PAGE_WIDTH = 220.0  # column-width characters per printed landscape page

FONT = "Calibri"  # openpyxl's default body font; headers and notes use it too
HEADER_FILL = "1F4E78"
BAND_FILL = "F2F6FA"  # every other data row
MEASURED_COLOR = "404040"
SERIES_COLORS = ("1F77B4", "D62728", "2CA02C", "9467BD", "FF7F0E", "8C564B", "E377C2", "17BECF")  # as the figures
HEADER_FONT_COLOR = "FFFFFF"
RAW_HEADER_FILL = "595959"
NOTE_COLOR = "404040"
STATUS_FILLS = {"overridden": "FFD966", "default": "FCE4D6", "calibrated": "E2EFDA", "measured": "DDEBF7", "paper": "F2F2F2",
                "datasheet": "F2F2F2"}
ERROR_FILLS = ("C6EFCE", "FFEB9C", "F8CBAD", "FF9B9B")  # within 1.1x, 1.3x, 2x, beyond (over or under)

# Text a spreadsheet would evaluate or treat specially if typed in.
_FORMULA_START = FORMULA_START  # shared with the CSV and Markdown reports (reports.common)
_ERROR_LITERALS = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A")
_ILLEGAL = re.compile(r"[\000-\010]|[\013-\014]|[\016-\037]")
_MAX_CELL_TEXT = 32_767
_SHEET_NAME_BAD = re.compile(r"[\[\]:*?/\\]")


_Quoted = Quoted  # text that looks like a formula: stored as text with a quote prefix


@dataclass
class Column:
    """One column of a sheet table: header, values (None = empty cell) and how to show them."""

    header: str
    values: list[Any] | np.ndarray  # a float64 array: numbers (NaN, infinities: empty), converted as written
    kind: str = "text"  # text | number | label
    number_format: str = "General"
    width: float = 12.0
    comment: str = ""
    raw: bool = False  # a raw profiler column (grey header)
    wrap: bool = False
    align: str = ""  # horizontal alignment of the data cells ("" = the type's default)


@dataclass
class TableSheet:
    """What ``_write_table`` needs besides the columns."""

    title: str
    columns: list[Column]
    notes: list[str] = field(default_factory=list)
    freeze_columns: int = 0  # leading columns that stay visible when scrolling right
    error_columns: tuple[int, ...] = ()  # positions (0-based) of signed or absolute error fractions
    label_columns: tuple[int, ...] = ()  # positions of bottleneck label columns
    status_columns: tuple[int, ...] = ()  # positions of constant status columns
    side: list[list[Any]] = field(default_factory=list)  # rows written to the right of the table
    side_widths: list[float] = field(default_factory=list)
    styled: bool = True  # per-cell number formats (off for big Inputs)
    tab_color: str | None = None
    print_columns: int = 0  # leading columns to print (0 = all): keeps the full-name column off paper


# ---- values -------------------------------------------------------------------------

def text_values(series: pd.Series | Sequence[Any], width: int | None = None) -> list[Any]:
    """Text column values: cleaned of XML-illegal characters, formula-looking ones marked, missing
    ones None. Each distinct value is cleaned once (columns repeat labels, states and sources)."""
    values = series.astype("object") if isinstance(series, pd.Series) else pd.Series(list(series), dtype="object")
    raw = values.tolist()
    missing = values.isna().to_numpy()
    clean: dict[Any, Any] = {}
    out: list[Any] = []
    for value, absent in zip(raw, missing):
        if absent:
            out.append(None)
            continue
        try:
            done = clean.get(value, _MISSING)
        except TypeError:  # unhashable (a list in a detail column): clean it each time
            done = _MISSING
        if done is _MISSING:
            done = _clean_text(str(value), width)
            try:
                clean[value] = done
            except TypeError:
                pass
        out.append(done)
    return out


_MISSING = object()


def _clean_text(text: str, width: int | None) -> Any:
    if _ILLEGAL.search(text):
        text = _ILLEGAL.sub("\ufffd", text)
    if width is not None:
        text = shorten(text, width)
    text = text[:_MAX_CELL_TEXT]
    if not text:
        return None
    if text[:1] in _FORMULA_START or text in _ERROR_LITERALS:
        return Quoted(text)
    return text


def number_values(series: pd.Series | Sequence[Any], scale: float = 1.0) -> list[Any]:
    """Numeric column values divided by ``scale``; NaN and infinities become empty cells."""
    return plain_numbers(number_array(series, scale))


def number_array(series: pd.Series | Sequence[Any], scale: float = 1.0) -> np.ndarray:
    """``number_values`` as a float64 array (NaN, infinities: empty cells), for a long column: the
    workbook writer turns it into Python numbers a chunk of rows at a time. Unscaled, a float column is
    read in place (the Inputs sheet's 80-odd columns of 100k kernels were another 60 MB as copies)."""
    values = pd.Series(series)
    if values.dtype != np.float64:  # to_numeric copies even a float column
        values = pd.to_numeric(values, errors="coerce")
    array = values.to_numpy(dtype="float64")
    return array if scale == 1.0 else array / scale


def number_format_for(values: pd.Series) -> str:
    """A readable number format for a column of numbers (integers, big, ordinary or tiny)."""
    numbers = pd.to_numeric(values, errors="coerce")
    # plain numpy from here: a workbook asks this of every numeric column, and a Series per step cost
    # more than the arithmetic on a few hundred values
    array = (numbers.to_numpy(dtype="float64", na_value=np.nan) if isinstance(numbers, pd.Series)
             else np.asarray(numbers, dtype="float64"))
    finite = array[np.isfinite(array)]
    if finite.size == 0:
        return "General"
    if (finite == np.round(finite)).all():
        return "#,##0"
    typical = float(np.median(np.abs(finite)))
    if typical >= 1000:
        return "#,##0"
    if typical >= 1:
        return "#,##0.00"
    if typical >= 0.001 or typical == 0:
        return "0.0000"
    return "0.00E+00"


def number_width(header: str, values: Sequence[Any] | np.ndarray, number_format: str, floor: float = 8.0) -> float:
    """A column width that shows every number in ``number_format`` (never '###'): the widest
    formatted value (thousands separators, decimals, sign, %), or the header's longest word."""
    if isinstance(values, np.ndarray):
        numbers = values[np.isfinite(values)]
        finite = [float(numbers[np.argmax(np.abs(numbers))])] if numbers.size else []  # the first largest
    else:
        finite = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    word = max((len(w) for w in header.split()), default=4)
    if not finite:
        return float(max(floor, word + 2))
    biggest = max(finite, key=abs)
    decimals = number_format.split(";")[0].split(".")[1].count("0") if "." in number_format else 0
    if "E+" in number_format:
        text = f"{biggest:.{decimals}E}"
    elif number_format.rstrip(";").split(";")[0].endswith("%"):
        text = f"{biggest * 100:+,.{decimals}f}%"
    else:
        text = f"{biggest:,.{decimals}f}" if "," in number_format else f"{biggest:.{decimals}f}"
    return float(max(floor, word + 2, len(text) + 3))


def _text_width(header: str, values: list[Any], cap: float = 60.0, floor: float = 8.0) -> float:
    sample = [len(str(v)) for v in values[:2000] if v is not None]
    longest = max(sample) if sample else 0
    word = max((len(w) for w in header.split()), default=4)
    return float(min(cap, max(floor, word + 2, longest + 2)))


def header_height(headers: Sequence[tuple[str, float]]) -> float:
    """Row height (points) that shows every header, word-wrapped at its column's width."""
    lines = 1
    for text, width in headers:
        usable = max(4, int(width * 0.95) - 1)  # bold header text runs a little wider than body text
        count, current = 1, 0
        for word in str(text).split():
            if current and current + 1 + len(word) > usable:
                count += 1
                current = len(word)
            else:
                current += len(word) + (1 if current else 0)
        lines = max(lines, count)
    return 15.0 * lines + 3.0


def _id_column(kernels: pd.DataFrame) -> Column:
    ids = text_values(kernel_ids(kernels))
    return Column("Kernel ID", ids, width=_text_width("Kernel ID", ids, cap=24, floor=9))


def _time_column(header: str, values_ns: pd.Series, comment: str = "") -> Column:
    unit = time_unit(values_ns)
    numbers = number_array(values_ns, unit.ns)
    title = f"{header} ({unit.label})"
    return Column(title, numbers, "number", "#,##0.00", max(13.0, number_width(title, numbers, "#,##0.00")),
                  comment or f"times in {unit.label} (1 {unit.label} = {unit.ns:g} ns)")


def _error_column(header: str, fractions: pd.Series, hidden: pd.Series | None = None) -> Column:
    """Signed errors as %; where ``hidden`` (``common.not_judged``) the cell says 'not judged' instead:
    the prediction read an input derived from the measured time, as the accuracy table leaves out."""
    comment = "(predicted - measured) / measured"
    if hidden is None or not hidden.any():
        return Column(header, number_array(fractions), "number", "+0.0%;-0.0%;0.0%", 10.0, comment)
    values = number_values(fractions)  # a list: some cells hold text
    for position in np.flatnonzero(hidden.to_numpy(dtype=bool)):
        values[position] = NOT_JUDGED
    return Column(header, values, "number", "+0.0%;-0.0%;0.0%", 11.0, f"{comment}; {NOT_JUDGED_NOTE}",
                  align="right")


# ---- cells ---------------------------------------------------------------------------

class _Cells:
    """Styled write-only cells for one worksheet (header, notes, templates)."""

    def __init__(self, ws: Any) -> None:
        from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

        self.ws = ws
        self._Alignment, self._Font, self._PatternFill = Alignment, Font, PatternFill
        self.header_font = Font(name=FONT, bold=True, color=HEADER_FONT_COLOR)
        self.header_fill = PatternFill("solid", fgColor=HEADER_FILL)
        self.raw_fill = PatternFill("solid", fgColor=RAW_HEADER_FILL)
        self.header_align = Alignment(wrap_text=True, vertical="center", horizontal="center")
        self.header_border = Border(bottom=Side(style="medium", color="000000"))
        # style arrays already registered with the workbook, by what they style: a new cell copies one
        # (openpyxl looks each font, fill, alignment and border up again on every assignment)
        self._styles: dict[Any, Any] = {}

    def _styled(self, cell: Any, key: Any, apply: Callable[[Any], None]) -> Any:
        """``cell`` styled by ``apply``, or with the style array of an earlier cell styled the same way."""
        from copy import copy

        known = self._styles.get(key)
        if known is None:
            apply(cell)
            self._styles[key] = copy(cell._style)
        else:
            cell._style = copy(known)
        return cell

    def cell(self, value: Any, *, bold: bool = False, italic: bool = False, size: float | None = None,
             color: str | None = None, fill: str | None = None, number_format: str | None = None,
             wrap: bool = False) -> Any:
        from openpyxl.cell import WriteOnlyCell

        cell = WriteOnlyCell(self.ws)
        _set_value(cell, value)
        if bold or italic or size or color:
            cell.font = self._Font(name=FONT, bold=bold, italic=italic, size=size or 11, color=color)
        if fill:
            cell.fill = self._PatternFill("solid", fgColor=fill)
        if number_format:
            cell.number_format = number_format
        if wrap:
            cell.alignment = self._Alignment(wrap_text=True, vertical="top")
        return cell

    def header(self, column: Column) -> Any:
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.comments import Comment

        def apply(target: Any) -> None:
            target.font = self.header_font
            target.fill = self.raw_fill if column.raw else self.header_fill
            target.alignment = self.header_align
            target.border = self.header_border

        cell = self._styled(WriteOnlyCell(self.ws), ("header", column.raw), apply)
        _set_value(cell, column.header)  # after the style: a quote prefix is this cell's own
        if column.comment:
            comment = Comment(column.comment, "nvperf-bridge")
            comment.width, comment.height = 320, 110
            cell.comment = comment
        return cell

    def template(self, column: Column) -> Any:
        from openpyxl.cell import WriteOnlyCell

        def apply(target: Any) -> None:
            target.number_format = column.number_format
            # every cell top-aligned: a row made tall by wrapped text keeps its values level with it
            target.alignment = self._Alignment(wrap_text=column.wrap or None, vertical="top",
                                               horizontal=column.align or None)

        return self._styled(WriteOnlyCell(self.ws), ("template", column.number_format, bool(column.wrap),
                                                     column.align or None), apply)

    def quoted(self) -> Any:
        from openpyxl.cell import WriteOnlyCell

        cell = WriteOnlyCell(self.ws)
        cell.quotePrefix = True
        return cell


def _set_value(cell: Any, value: Any) -> None:
    """Assign a value; any text is stored as text (never a formula or an error literal)."""
    if isinstance(value, str):
        text = _ILLEGAL.sub("\ufffd", value)[:_MAX_CELL_TEXT]
        cell.value = text
        cell.data_type = "s"
        if text[:1] in _FORMULA_START or text in _ERROR_LITERALS:
            cell.quotePrefix = True
    else:
        cell.value = value


def safe_text(value: str) -> Any:
    """A text value for a plain row: marked for a quote prefix when it looks like a formula."""
    text = _ILLEGAL.sub("\ufffd", value)[:_MAX_CELL_TEXT]
    if text[:1] in _FORMULA_START or text in _ERROR_LITERALS:
        return _Quoted(text)
    return text


# ---- table writer --------------------------------------------------------------------

def _write_table(wb: Any, sheet: TableSheet) -> tuple[Any, RawBlock]:
    """One sheet: openpyxl writes the frame (widths, panes, notes, header, filters, formatting) and
    registers the cell styles; the data rows come back as a ``RawBlock`` that ``xlsx_rows``
    writes into the saved file (see that module for why)."""
    from openpyxl.utils import get_column_letter

    ws = wb.create_sheet(sheet.title)
    cells = _Cells(ws)
    columns = sheet.columns
    rows = len(columns[0].values) if columns else 0
    header_row = len(sheet.notes) + 1
    gap = 1 if sheet.side else 0

    for position, column in enumerate(columns, start=1):
        ws.column_dimensions[get_column_letter(position)].width = column.width
    for offset, width in enumerate(sheet.side_widths):
        ws.column_dimensions[get_column_letter(len(columns) + gap + 1 + offset)].width = width
    if gap:
        ws.column_dimensions[get_column_letter(len(columns) + 1)].width = 3
    ws.freeze_panes = f"{get_column_letter(sheet.freeze_columns + 1)}{header_row + 1}"
    ws.row_dimensions[header_row].height = header_height(
        [(c.header, c.width) for c in columns] + [(str(t), w) for t, w in zip(sheet.side[0] if sheet.side else [],
                                                                             sheet.side_widths)])
    if sheet.tab_color:
        ws.sheet_properties.tabColor = sheet.tab_color
    printed = columns[: sheet.print_columns] if sheet.print_columns else columns
    total_width = sum(c.width for c in printed) + sum(sheet.side_widths) + 3 * gap
    _print_setup(ws, header_row, total_width)

    for note_position, note in enumerate(sheet.notes):
        first = note_position == 0
        ws.append([cells.cell(note, bold=first, size=12 if first else None,
                              italic=not first, color=None if first else NOTE_COLOR)])
    header = [cells.header(column) for column in columns]
    if sheet.side:
        header += [None, *(cells.header(Column(str(title), [])) for title in sheet.side[0])]
    ws.append(header)

    raw_columns = []
    for position, column in enumerate(columns, start=1):
        styled = sheet.styled or column.wrap or column.align  # every styled cell is top-aligned
        style = cells.template(column).style_id if styled else 0  # registers the style in the workbook
        raw_columns.append(RawColumn(get_column_letter(position), column.values, style))
    side_rows = [[value if not isinstance(value, str) or type(value) is Quoted else safe_text(value)
                  for value in row] for row in sheet.side[1:]]
    block = RawBlock(sheet_path="", first_row=header_row + 1, rows=rows, columns=raw_columns,
                     quoted_style=cells.quoted().style_id, side_first_column=len(columns) + gap + 1 if gap else 0,
                     side_rows=side_rows, heights=_wrapped_row_heights(columns))
    side_count = len(side_rows)

    last = get_column_letter(max(1, len(columns)))
    if sheet.print_columns:
        ws.print_area = f"A1:{get_column_letter(sheet.print_columns)}{header_row + max(rows, 1)}"
    if columns and rows:
        ws.auto_filter.ref = f"A{header_row}:{last}{header_row + rows}"
    first_data, last_data = header_row + 1, header_row + max(rows, 1)
    _error_formatting(ws, sheet.error_columns, first_data, last_data)
    _label_formatting(ws, sheet.label_columns, first_data, last_data)
    if columns and rows:
        _banding(ws, f"A{first_data}:{last}{last_data}")
    _status_formatting(ws, [len(columns) + gap + p for p in sheet.status_columns], header_row + 1,
                       header_row + max(side_count, 1))
    return ws, block


def _wrapped_row_heights(columns: Sequence[Column]) -> dict[int, float]:
    """Row offset -> height for rows whose wrapped text needs several lines (a streamed sheet is
    not re-measured by every spreadsheet on opening). Lines are counted once per distinct text:
    the Summary repeats each group's first action on every kernel of the group."""
    heights: dict[int, float] = {}
    wrapped = [c for c in columns if c.wrap]
    if not wrapped:
        return heights
    counts = []
    for column in wrapped:
        per_line = max(8, int(column.width * 1.1))
        known: dict[Any, int] = {None: 1}
        lines = []
        for value in column.values:
            count = known.get(value)
            if count is None:
                count = max(1, sum(-(-max(1, len(part)) // per_line) for part in str(value).split("\n")))
                known[value] = count
            lines.append(count)
        counts.append(lines)
    for r, row in enumerate(zip(*counts)):
        lines = max(row)
        if lines > 1:
            heights[r] = 15.0 * lines + 2
    return heights


def _print_setup(ws: Any, header_row: int | None, total_width: float) -> None:
    """Landscape, as many pages wide as keeps the text legible (about 200 characters a page)."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth = max(1, int(np.ceil(total_width / PRINT_PAGE_WIDTH)))
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    if header_row:
        ws.print_title_rows = f"{header_row}:{header_row}"


def _ranges(positions: Sequence[int], first: int, last: int) -> str:
    from openpyxl.utils import get_column_letter

    return " ".join(f"{get_column_letter(p + 1)}{first}:{get_column_letter(p + 1)}{last}" for p in positions)


def _error_formatting(ws: Any, positions: Sequence[int], first: int, last: int) -> None:
    """Fill by how many times off the prediction is, over or under alike: the band of
    |ln(predicted / measured)| = |ln(1 + error)|, with the bands' limits as factors (within
    1.1x green, 1.3x amber, 2x orange, beyond red). +100% and -50% are both 2x off and look the same."""
    from openpyxl.formatting.rule import FormulaRule
    from openpyxl.styles import PatternFill
    from openpyxl.utils import get_column_letter

    for position in positions:
        cell = f"{get_column_letter(position + 1)}{first}"
        area = _ranges([position], first, last)
        for limit, color in zip((*ERROR_BANDS, None), ERROR_FILLS):
            if limit is None:  # beyond the last band, or a prediction of zero (infinitely far off)
                test = "TRUE"
            else:
                test = f"AND(1+{cell}>0,ABS(LN(MAX(1+{cell},1E-300)))<={math.log(1.0 + limit):.6f})"
            ws.conditional_formatting.add(area, FormulaRule(
                formula=[f"AND(ISNUMBER({cell}),{test})"], fill=PatternFill("solid", bgColor=color), stopIfTrue=True))


def _banding(ws: Any, area: str) -> None:
    """Light fill on every other row (lowest priority: error and label fills win)."""
    from openpyxl.formatting.rule import FormulaRule
    from openpyxl.styles import PatternFill

    ws.conditional_formatting.add(area, FormulaRule(formula=["MOD(ROW(),2)=0"],
                                                    fill=PatternFill("solid", bgColor=BAND_FILL)))


def _label_formatting(ws: Any, positions: Sequence[int], first: int, last: int) -> None:
    """One fill per bottleneck label (the same colours as the charts)."""
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.styles import PatternFill

    if not positions:
        return
    area = _ranges(positions, first, last)
    for label in BOTTLENECKS:
        ws.conditional_formatting.add(area, CellIsRule(
            operator="equal", formula=[f'"{label}"'], fill=PatternFill("solid", bgColor=BOTTLENECK_COLORS[label])))


def _status_formatting(ws: Any, positions: Sequence[int], first: int, last: int) -> None:
    """Constant status: 'default' amber (calibrate before trusting), 'calibrated' green."""
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.styles import PatternFill

    if not positions:
        return
    area = _ranges(positions, first, last)
    for status, color in STATUS_FILLS.items():
        ws.conditional_formatting.add(area, CellIsRule(
            operator="equal", formula=[f'"{status}"'], fill=PatternFill("solid", bgColor=color)))


# ---- sheets ------------------------------------------------------------------------------

def _sheet_names(analysis: Analysis) -> dict[str, str]:
    """Model id -> a unique, valid sheet name (31 characters, case-insensitive, no []:*?/\\)."""
    taken = {"kernel groups", "summary", "accuracy", "charts", "figures", "inputs", "gpu", "notes"}
    names: dict[str, str] = {}
    for mid in analysis.runs:
        base = _SHEET_NAME_BAD.sub("-", mid).strip("'")[:31] or "model"
        name, suffix = base, 2
        if name.lower() in taken:
            name = f"{base[:24]} (model)"
        while name.lower() in taken:
            name = f"{base[:26]} ({suffix})"
            suffix += 1
        taken.add(name.lower())
        names[mid] = name
    return names


def _order(analysis: Analysis) -> np.ndarray:
    """Row positions, longest kernel first (stable)."""
    return np.argsort(-ranking_times(analysis).to_numpy(dtype="float64"), kind="stable")


def _tail(analysis: Analysis, order: np.ndarray, review: Review) -> tuple[np.ndarray, pd.DataFrame | None]:
    """For a large input (``LARGE_INPUT``): the kernel rows of the top groups (``review.groups``'
    ``top``, the longest groups holding ``TOP_SHARE`` of the time) in ``order``, and the other
    groups (one summary row each). Smaller inputs: every row, no tail."""
    groups = review.groups
    if len(analysis.kernels) <= LARGE_INPUT or groups.time_source == "none":
        return order, None
    top = groups.table["top"].to_numpy(dtype=bool)
    in_top = top[groups.group_of.to_numpy()]
    if in_top.all():
        return order, None
    return order[in_top[order]], groups.table[~top]


def _summary_sheet(analysis: Analysis, summary: pd.DataFrame, order: np.ndarray, review: Review,
                   time_derived: dict[str, pd.Series]) -> TableSheet:
    """``summary``: ``analysis.summary()``, every kernel (the rows in ``order`` are shown)."""
    order, tail = _tail(analysis, order, review)
    kernels = analysis.kernels.iloc[order]
    summary = summary.iloc[order]
    columns = [
        Column("#", list(range(1, len(kernels) + 1)), "number", "0", 6.0, "rank by measured time, longest first",
               align="center"),
        _id_column(kernels),
    ]
    names = text_values(display_names(kernels), NAME_WIDTH)
    columns.append(Column("Kernel", names, width=_text_width("Kernel", names, cap=NAME_WIDTH + 2, floor=16),
                          comment="short name; the full name is in the last column"))
    # the review's answer first: the kernel group's share of GPU time, its verdict and first action
    group = review.groups.group_of.to_numpy()[order]
    table = review.groups.table
    verdict_of = dict(zip(review.verdicts["group"], review.verdicts["verdict"]))
    advice_of = {int(g): (_plain(items[0]["text"]) if items else "")
                 for g, items in zip(review.verdicts["group"], review.advice)}
    columns.append(Column("Group", [f"G{int(g) + 1}" for g in group], width=7.0, align="center",
                          comment="kernel group (kernel + launch shape), G1 the longest; see the Kernel groups sheet"))
    if review.groups.time_source != "none":
        columns.append(Column("Group share of GPU time", number_array(table["share"].to_numpy()[group]), "number",
                              "0.0%", 11.0, "the group's total time / the run's GPU time"))
    labels: list[int] = [len(columns)]
    columns.append(Column("Verdict", text_values([verdict_of.get(int(g), "") for g in group]), "label", width=17.0,
                          comment="the group's bottleneck from the models within 2x of the measured time"))
    advice = text_values([advice_of.get(int(g), "") for g in group])
    # wrapped, as on the Kernel groups sheet: a long action runs on over lines rather than off the cell edge
    columns.append(Column("First action", advice, width=_text_width("First action", advice, cap=60, floor=14),
                          comment="the first of the group's actions (all of them on the Kernel groups sheet)",
                          wrap=True))
    if "invocations" in kernels.columns and (pd.to_numeric(kernels["invocations"], errors="coerce") > 1).any():
        columns.append(Column("Invocations", number_array(kernels["invocations"]), "number", "#,##0", 11.0))
    columns.append(_time_column("Measured", summary["measured_ns"], "measured kernel duration"))
    errors: list[int] = []
    runs = analysis.ok_runs()
    for mid, run in runs.items():
        columns.append(_time_column(f"{mid} predicted", summary[f"{mid}.predicted_ns"]))
        errors.append(len(columns))
        fractions = summary[f"{mid}.error_pct"] / 100.0
        columns.append(_error_column(f"{mid} error", fractions, not_judged(fractions, time_derived.get(mid))))
    for mid in runs:
        labels.append(len(columns))
        columns.append(Column(f"{mid} bottleneck", text_values(summary[f"{mid}.bottleneck"]), "label", width=17.0))
    labels.append(len(columns))
    columns.append(Column("Consensus bottleneck", text_values(summary["consensus_bottleneck"]), "label", width=18.0,
                          comment="most common label among the models within 2x of the kernel's measured time "
                                  "('unknown' does not vote); a split vote goes to the measured side, as "
                                  "in the group verdicts"))
    columns.append(Column("Models agreeing", number_array(summary["models_agreeing"]), "number", "0", 10.0))
    columns.append(Column("Models voting", number_array(summary["models_voting"]), "number", "0", 9.0))
    full = text_values(full_names(kernels))
    columns.append(Column("Full kernel name", full, width=_text_width("Full kernel name", full, cap=100, floor=20)))
    notes: list[str] = []
    if tail is not None:
        notes = _append_tail(columns, tail, len(order), len(analysis.kernels))
    return TableSheet("Summary", columns, notes=notes, freeze_columns=3, error_columns=tuple(errors),
                      label_columns=tuple(labels), tab_color=HEADER_FILL, print_columns=len(columns) - 1)


def _append_tail(columns: list[Column], tail: pd.DataFrame, shown: int, total: int) -> list[str]:
    """One row per tail group under the top groups' kernels: its launches, name, group, share and mean
    time per launch; the other cells empty. Returns the sheet's note saying so."""
    by_header = {column.header.split(" (")[0]: column for column in columns}
    for column in columns:
        if isinstance(column.values, np.ndarray):  # numbers: NaN is an empty cell
            column.values = np.concatenate([column.values, np.full(len(tail), np.nan)])
        else:
            column.values = list(column.values) + [None] * len(tail)
    labels = [f"G{int(g) + 1}" for g in tail["group"]]

    def put(header: str, values: list[Any]) -> None:
        if header in by_header:
            _set_tail(by_header[header], shown, values)

    put("Kernel ID", text_values([f"{int(n):,} launch{'es' if int(n) != 1 else ''}" for n in tail["launches"]]))
    put("Kernel", text_values(tail["kernel"], NAME_WIDTH))
    put("Group", labels)
    put("Group share of GPU time", number_values(tail["share"].to_numpy()))
    put("First action", text_values(["tail group: one row for all its launches (each on the Inputs sheet)"] * len(tail)))
    put("Invocations", number_values(tail["launches"].to_numpy()))
    put("Full kernel name", text_values(tail["kernel_name"]))
    measured = next((c for c in columns if c.header.startswith("Measured (")), None)
    if measured is not None:  # mean time per launch, in the column's unit
        scale = next(ns for label, ns in TIME_UNITS if f"({label})" in measured.header)
        _set_tail(measured, shown, number_values(tail["mean_ns"], scale))
    share = float(tail["share"].sum(skipna=True))
    return [f"Kernels of the top kernel groups ({TOP_SHARE:.0%} of the GPU time: {shown:,} of {total:,} kernels, "
            f"longest first), then one row per other group ({len(tail):,} groups, "
            f"{share:.1%} of the GPU time; Measured there is the mean per launch). Every kernel is on the Inputs "
            "sheet; --format json or csv has every kernel with its predictions."]


def _set_tail(column: Column, shown: int, values: list[Any]) -> None:
    """The tail rows' cells of ``column`` (from row ``shown`` on); None is an empty cell."""
    if isinstance(column.values, np.ndarray):
        column.values[shown:] = np.array(values, dtype="float64")  # None -> NaN
    else:
        column.values[shown:] = values


def _plain(text: str) -> str:
    """Advice text without its Markdown code-span backticks (a spreadsheet shows them literally)."""
    return text.replace("`", "")


def _groups_sheet(review: Review) -> TableSheet:
    """Kernel groups, longest first: share, verdict and actions right after the kernel, then time,
    Nsight's view, what the verdict rests on and, for unpredicted groups, the command."""
    rows = review.group_rows()
    table = review.groups.table.head(len(rows))
    has_time = review.groups.time_source != "none"
    names = text_values(table["kernel"], NAME_WIDTH)
    columns = [
        Column("Group", [f"G{int(g) + 1}" for g in table["group"]], width=7.0, align="center",
               comment="G1 = the longest group; ★ groups hold the first 80% of the GPU time"),
        Column("Kernel", names, width=_text_width("Kernel", names, cap=NAME_WIDTH + 2, floor=16),
               comment="short name; the full name is in the last column"),
    ]
    if has_time:
        columns.append(Column("Share of GPU time", number_values(table["share"]), "number", "0.0%", 10.0))
    columns.append(Column("Top 80%", ["★" if top else None for top in table["top"]], width=7.0, align="center"))
    labels = [len(columns)]
    columns.append(Column("Verdict", text_values([r["verdict"] for r in rows]), "label", width=17.0,
                          comment="bottleneck from the models within 2x of the measured time; the measured "
                                  "view decides a split vote and stands where no model earned its vote "
                                  "('Verdict rests on' says which)"))
    for i in range(3):
        texts = text_values([_plain(r["advice"][i]["text"]) if len(r["advice"]) > i else None for r in rows])
        columns.append(Column(f"Action {i + 1}", texts, width=_text_width(f"Action {i + 1}", texts, cap=60, floor=12),
                              wrap=True))
    columns.append(Column("Launches", number_values(table["launches"]), "number", "#,##0",
                          number_width("Launches", number_values(table["launches"]), "#,##0")))
    if has_time:
        for header, key in (("Total", "total_ns"), ("Mean", "mean_ns"), ("Min", "min_ns"), ("Max", "max_ns")):
            if table[key].notna().any():  # rows averaged over launches have no min or max
                columns.append(_time_column(header, table[key]))
        columns.append(Column("Cumulative share", number_values(table["cumulative_share"]), "number", "0.0%", 11.0))
    columns.append(Column("Nsight compute", number_values([r["nsight"]["compute"] for r in rows]), "number", "0%",
                          10.0, "SM throughput, % of peak (nvprof: issue-slot utilization or the busiest "
                          "function unit's level)"))
    columns.append(Column("Nsight memory", number_values([r["nsight"]["memory"] for r in rows]), "number", "0%",
                          10.0, "memory throughput, % of peak (nvprof: DRAM bytes / time / peak or the busiest "
                          "L2 / texture / shared level)"))
    labels_view = text_values([r["nsight"]["view"] or None for r in rows])
    columns.append(Column("Nsight view", labels_view, width=11.0))
    columns.append(Column("Disagrees", ["yes" if r["nsight"]["disagrees_with_verdict"] else None for r in rows],
                          width=10.0, align="center", comment="the verdict and Nsight's view name different sides"))
    basis = text_values([r["basis"] for r in rows])
    columns.append(Column("Verdict rests on", basis, width=_text_width("Verdict rests on", basis, cap=60, floor=16),
                          wrap=True))
    rules = text_values(["; ".join(f"{x['rule']}: {x['message']}" for x in r["nsight_rules"]) or None for r in rows])
    columns.append(Column("Nsight rules", rules, width=_text_width("Nsight rules", rules, cap=60, floor=12), wrap=True))
    commands = text_values([r.get("unpredicted", {}).get("command") for r in rows])
    columns.append(Column("Command for missing counters", commands,
                          width=_text_width("Command for missing counters", commands, cap=60, floor=14), wrap=True))
    shapes = text_values([f"{r['grid_blocks']:,.0f} x {r['block_threads']:,.0f}"
                          if r["grid_blocks"] is not None and r["block_threads"] is not None else None for r in rows])
    columns.append(Column("Grid x block", shapes, width=_text_width("Grid x block", shapes, cap=20, floor=12)))
    full = text_values(table["kernel_name"])
    columns.append(Column("Full kernel name", full, width=_text_width("Full kernel name", full, cap=100, floor=20)))
    notes = [f"Kernel groups: {len(review.groups.table):,} (kernel + launch shape), longest first"
             + (f"; the {len(rows):,} longest are listed" if len(rows) < len(review.groups.table) else ""),
             *(f"Warning: {w}" for w in review.warnings)]
    # printed: up to the speed-of-light view (what the verdict rests on, the rules and commands stay on screen)
    printed = next(i for i, c in enumerate(columns) if c.header == "Disagrees") + 1
    return TableSheet("Kernel groups", columns, notes=notes, freeze_columns=2, label_columns=tuple(labels),
                      tab_color=HEADER_FILL, print_columns=printed)


def _accuracy_sheet(analysis: Analysis) -> TableSheet:
    accuracy = analysis.accuracy()
    has_measured = bool(analysis.measured_ns.notna().any())
    mids = list(analysis.runs)
    rows = {key: [] for key in ("n", "mape", "median_ape", "gm_abs_error", "mean_accuracy")}
    predicted, status = [], []
    for mid in mids:
        run = analysis.runs[mid]
        if run.result is None:
            predicted.append(None)
            status.append(safe_text(f"failed: {run.failure}"))
            for key in rows:
                rows[key].append(None)
            continue
        predicted.append(int(run.result["predicted_ns"].notna().sum()))
        status.append("ok")
        for key in rows:
            value = accuracy.loc[mid, key] if mid in accuracy.index else np.nan
            rows[key].append(None if pd.isna(value) else (int(value) if key == "n" else float(value)))
    notes = [
        f"Accuracy over the kernels with a measured time and a prediction ({analysis.gpu.name})",
        "APE = |predicted - measured| / measured. GM abs. error = geometric mean of the APEs (Hong & Kim's "
        "statistic). Mean accuracy = mean of min/max of the two times (Luo & Suda).",
    ]
    if not has_measured:
        notes.append("The input has no measured times (duration_ns): accuracy cannot be computed.")
    pct = "0.0%"
    columns = [
        Column("Model", text_values(mids), width=14.0),
        Column("Kernels predicted", predicted, "number", "#,##0", 11.0),
        Column("Kernels compared (n)", rows["n"], "number", "#,##0", 11.0),
        Column("MAPE", rows["mape"], "number", pct, 10.0, "mean absolute percentage error"),
        Column("Median APE", rows["median_ape"], "number", pct, 10.0),
        Column("GM abs. error", rows["gm_abs_error"], "number", pct, 10.0, "geometric mean of |error| (Hong & Kim)"),
        Column("Mean accuracy (Luo-Suda)", rows["mean_accuracy"], "number", pct, 13.0,
               "mean of min(predicted, measured) / max(predicted, measured)"),
        Column("Status", status, width=_text_width("Status", status, cap=90, floor=10)),
    ]
    return TableSheet("Accuracy", columns, notes=notes, freeze_columns=1, error_columns=(3, 4, 5))


def _model_sheet(analysis: Analysis, run: ModelRun, title: str, order: np.ndarray,
                 time_derived: pd.Series | None) -> TableSheet:
    notes = [f"{run.model_id} {run.version}: {run.paper}".strip()]
    if run.description:
        notes.append(run.description)
    options = describe_options(run.options, run.extension_options, run.options_from)
    if options:
        notes.append(f"Options: {'; '.join(options)}.")
    side = _constants_block(run)
    side_widths = [22.0, 12.0, 10.0, 11.0, 45.0, 45.0]
    if run.result is None:
        notes.append(f"This model failed as a whole and predicted nothing: {run.failure}")
        notes.append("Its machine constants are listed to the right.")
        columns = [Column("Kernel", [], width=20.0)]
        return TableSheet(title, columns, notes=notes, side=side, side_widths=side_widths, status_columns=(3,))
    shown = order[:MODEL_SHEET_ROWS]
    result = run.result.iloc[shown]
    kernels = analysis.kernels.iloc[shown]
    details = detail_columns(run)
    counts = f"{int(run.result['predicted_ns'].notna().sum()):,} of {len(run.result):,} kernels predicted"
    notes.append(
        f"{counts}. Columns after 'State' are the paper's intermediate quantities, named by its symbols. "
        f"Machine constants ({constant_status_summary(run)}) and the reasons kernels have no prediction are to "
        "the right of the table.")
    if len(shown) < len(order):
        notes.append(f"The {len(shown):,} longest of {len(order):,} kernels are listed here (the reasons to the "
                     "right count every kernel); --format json or csv has every kernel.")
    names = text_values(display_names(kernels), NAME_WIDTH)
    errors = error_fraction(analysis, run)
    columns = [
        Column("#", [int(p) + 1 for p in range(len(shown))], "number", "0", 6.0, "rank by measured time"),
        Column("Kernel ID", text_values(kernel_ids(kernels)), width=10.0, align="center"),
        Column("Kernel", names, width=_text_width("Kernel", names, cap=NAME_WIDTH + 2, floor=16)),
        _time_column("Measured", analysis.measured_ns.iloc[shown]),
        _time_column("Predicted", result["predicted_ns"]),
        _error_column("Error", errors.iloc[shown], not_judged(errors, time_derived).iloc[shown]),
        Column("Predicted cycles", number_values(result["predicted_cycles"]), "number", "#,##0", 13.0),
        Column("Bottleneck", text_values(result["bottleneck"]), "label", width=17.0),
    ]
    states = text_values(result["state"])
    columns.append(Column("State", states, width=_text_width("State", states, cap=30, floor=10),
                          comment="the paper's own label for the kernel's regime"))
    for name in details:
        values = result[name]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            columns.append(Column(name, number_values(values), "number", number_format_for(values),
                                  max(11.0, len(name) + 2.0)))
        else:
            texts = text_values(values.map(lambda v: v if not isinstance(v, (bool, np.bool_)) else str(bool(v)).lower()))
            columns.append(Column(name, texts, width=_text_width(name, texts, cap=40, floor=10)))
    reasons = text_values(result["error"])
    columns.append(Column("Reason (no prediction)", reasons, width=_text_width("Reason (no prediction)", reasons,
                                                                               cap=70, floor=14)))
    return TableSheet(title, columns, notes=notes, freeze_columns=3, error_columns=(5,), label_columns=(7,),
                      side=side, side_widths=side_widths, status_columns=(3,))


def _constants_block(run: ModelRun) -> list[list[Any]]:
    """Rows of the block right of a model table: constants, then reasons without a prediction."""
    block: list[list[Any]] = [["Constant", "Value", "Unit", "Status", "Source", "Meaning"]]
    for name, constant in run.constants.items():
        spec = run.constant_specs.get(name)
        block.append([safe_text(name), float(constant.value), safe_text(getattr(spec, "unit", "") or "") or None,
                      constant.status, safe_text(constant.source) or None,
                      safe_text(getattr(spec, "description", "") or "") or None])
    if not run.constants:
        block.append(["(no machine constants)"])
    reasons = error_reasons(run)
    if reasons:
        block.append([])
        block.append(["Kernels", "Reason without a prediction"])
        block.extend([[n, safe_text(reason)] for reason, n in reasons])
    return block


def _profiles_sheet(analysis: Analysis) -> TableSheet | None:
    """Every file given or found in a folder, with format, kernels, device and status (several files only)."""
    from nvperf_bridge.discovery import profile_rows, show_profiles

    if not show_profiles(analysis.inputs):
        return None
    rows = profile_rows(analysis.inputs)
    columns = [
        Column("File", text_values([r["path"] for r in rows]), width=60.0),
        Column("Format", text_values([r["format"] for r in rows]), width=16.0),
        Column("Kernels", [r["kernels"] for r in rows], kind="number", number_format="#,##0", width=10.0),
        Column("Device", text_values([r["device"] for r in rows]), width=24.0),
        Column("Status", text_values([r["status"] for r in rows]), width=60.0),
    ]
    skipped = sum(1 for r in rows if r["status"].startswith("skipped"))
    return TableSheet("Profiles", columns, notes=[
        f"{len(rows)} files: {len(rows) - skipped} read and analysed together, {skipped} skipped (not profiler "
        f"output). Files of one run (nvprof metrics + trace, one-metric-per-file ncu) are joined; others are "
        f"concatenated."])


def _inputs_sheet(analysis: Analysis, large: bool) -> TableSheet:
    kernels = analysis.kernels
    canonical = [name for name in CANONICAL_COLUMNS if name in kernels.columns]
    raw = [name for name in kernels.columns if name not in CANONICAL_COLUMNS]
    columns = []
    for name in [*canonical, *raw]:
        spec = CANONICAL_COLUMNS.get(name)
        values = kernels[name]
        unit = spec.unit if spec else ""
        header = f"{name} ({unit})" if unit else name
        if spec:
            comment = spec.description + (f"; ncu: {spec.ncu}" if spec.ncu else "") + (
                f"; nvprof: {spec.nvprof}" if spec.nvprof else "")
        else:
            comment = "raw profiler counter without a canonical name (base units)"
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) and (
            name not in IDENTITY_COLUMNS or name in ("source_row", "invocations"))
        if numeric:
            fmt = "0.0%" if unit == "fraction" else number_format_for(values)
            numbers = number_array(values)  # every kernel: an array, not a list of Python floats
            width = max(number_width(header, numbers, fmt), min(len(header), 28) + 2.0)
            columns.append(Column(header, numbers, "number", fmt, width, comment, raw=spec is None))
        else:
            texts = text_values(values)
            columns.append(Column(header, texts, width=_text_width(header, texts, cap=50, floor=10),
                                  comment=comment, raw=spec is None))
    notes = [
        f"Inputs: the canonical kernel table ({len(kernels):,} rows, {len(canonical)} canonical columns, "
        f"{len(raw)} raw profiler columns with grey headers)",
        "Units in the headers; fractions shown as %. Hover a header for its meaning and the ncu / nvprof metric.",
    ]
    freeze = 3 if canonical[:3] == ["kernel_id", "kernel_name", "kernel"] else 1
    return TableSheet("Inputs", columns, notes=notes, freeze_columns=freeze, styled=not large)


_GPU_FIELDS_SKIP = {"schema_version", "sources", "models", "calibration", "notes"}


def _flat_fields(raw: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """A profile's fields with nested mappings spelt out, one row per leaf
    (``model_options.hong-kim.l2_reads``): a cell holds one value, never a mapping."""
    for key, value in raw.items():
        if isinstance(value, Mapping) and not (not prefix and key in _GPU_FIELDS_SKIP):
            yield from _flat_fields(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _calibration_fields(calibration: Mapping[str, Any], profile: str) -> Iterator[tuple[str, Any]]:
    """A calibrated profile's provenance block as rows a reviewer reads: the files as a count (their
    sha256 stay in the profile), one row per model with its held-out error, fitted constants and
    chosen options, and nested settings spelt out; never a mapping's repr in one cell."""
    for key, value in calibration.items():
        if key == "data" and isinstance(value, list):
            yield key, f"{len(value)} file(s), each with its sha256 under calibration.data in {profile}"
        elif key == "models" and isinstance(value, Mapping):
            for mid, block in value.items():
                if not isinstance(block, Mapping):
                    yield f"models.{mid}", value
                    continue
                held = (block.get("error") or {}).get("cv_held_out") or {}
                parts = [f"held-out median APE {held['median_ape']:.1%}"
                         if isinstance(held.get("median_ape"), (int, float)) else "not cross-validated"]
                if block.get("fitted"):
                    parts.append(f"fitted {', '.join(block['fitted'])}")
                chosen = (block.get("options") or {}).get("chosen") or {}
                if chosen:
                    parts.append("options chosen: " + ", ".join(f"{name}={v}" for name, v in chosen.items()))
                made_by = block.get("carried_from")
                if isinstance(made_by, Mapping):  # a model this calibration left alone: its earlier record
                    parts.append(f"from the calibration of {made_by.get('date')} ({made_by.get('profile')})")
                yield f"models.{mid}", "; ".join(parts)
        elif isinstance(value, Mapping):
            yield from ((f"{key}.{name}", leaf) for name, leaf in _flat_fields(value))
        else:
            yield key, value


def _gpu_sheet(analysis: Analysis) -> TableSheet:
    gpu = analysis.gpu
    fields, values, sources = [], [], []
    for key, value in _flat_fields(gpu.raw):
        if key in _GPU_FIELDS_SKIP:
            continue
        fields.append(key)
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        values.append(safe_text(value) if isinstance(value, str) else (
            str(value).lower() if isinstance(value, bool) else value))
        sources.append(safe_text(gpu.sources.get(key, "")) or None)
    for key, value in (("profile file", gpu.path), ("calibrated", "yes" if gpu.is_calibrated else "no"),
                       ("notes", gpu.raw.get("notes", ""))):
        if value:
            fields.append(key)
            values.append(safe_text(str(value)))
            sources.append(None)
    calibration = gpu.raw.get("calibration")
    if isinstance(calibration, dict):
        for key, value in _calibration_fields(calibration, gpu.path or gpu.id):
            fields.append(f"calibration.{key}")
            values.append(safe_text(str(value)) if not isinstance(value, (int, float)) else value)
            sources.append(None)
    side: list[list[Any]] = [["Model", "Constant", "Value", "Status", "Source"]]
    for mid, run in analysis.runs.items():
        for name, constant in run.constants.items():
            side.append([mid, safe_text(name), float(constant.value), constant.status, safe_text(constant.source)])
    defaults = sum(1 for run in analysis.runs.values() for c in run.constants.values() if c.status == "default")
    notes = [
        f"GPU profile: {gpu.name} (id {gpu.id}), chosen by {analysis.gpu_choice}",
        f"Model constants used are listed to the right with their status; {defaults} come from the models' defaults "
        "(amber: calibrate before trusting), 'calibrated' ones (green) were fitted on measured data.",
    ]
    columns = [
        Column("Field", text_values(fields), width=26.0),
        Column("Value", values, width=_text_width("Value", [str(v) for v in values], cap=40, floor=14), wrap=False),
        Column("Source", sources, width=_text_width("Source", sources, cap=70, floor=20)),
    ]
    return TableSheet("GPU", columns, notes=notes, freeze_columns=1, side=side,
                      side_widths=[13.0, 22.0, 12.0, 11.0, 70.0], status_columns=(3,))


def _notes_sheet(analysis: Analysis, large: bool) -> TableSheet:
    sections, items, details = [], [], []

    def add(section: str, item: str, detail: Any) -> None:
        sections.append(section)
        items.append(item)
        details.append(detail)

    add("Report", "tool", f"nvperf-bridge {analysis.tool_version}")
    add("Report", "created (UTC)", analysis.created)
    add("Report", "kernels", len(analysis.kernels))
    if len(analysis.kernels) > MODEL_SHEET_ROWS:
        add("Report", "model sheets", f"list the {MODEL_SHEET_ROWS:,} longest of {len(analysis.kernels):,} kernels "
                                      "(--format json or csv has every kernel)")
    if large:
        add("Report", "large input", f"more than {LARGE_INPUT:,} kernels: the Inputs sheet has no per-cell number "
                                     "formats")
    add("GPU", "profile", f"{analysis.gpu.name} ({analysis.gpu.id})")
    add("GPU", "how it was chosen", analysis.gpu_choice)
    for number, item in enumerate(analysis.inputs, start=1):
        add("Inputs", f"file {number}", item.path)
        add("Inputs", f"file {number} format", item.format)
        add("Inputs", f"file {number} kernels", int(item.kernels))
        if item.device:
            add("Inputs", f"file {number} device", item.device)
        for skipped in item.skipped:
            add("Inputs", f"file {number} skipped", skipped)
        for note in item.notes:
            add("Inputs", f"file {number} note", note)
    for mid, run in analysis.runs.items():
        if run.result is None:
            add("Models", mid, f"FAILED as a whole: {run.failure}")
        else:
            predicted = int(run.result["predicted_ns"].notna().sum())
            options = describe_options(run.options, run.extension_options, run.options_from)
            add("Models", mid, f"version {run.version}; predicted {predicted:,} of {len(run.result):,} kernels; "
                               f"constants: {constant_status_summary(run)}; from {run.origin}"
                               + (f"; options: {'; '.join(options)}" if options else ""))
    for warning in analysis.warnings:
        add("Warnings", "warning", warning)
    if not analysis.warnings:
        add("Warnings", "warning", "none")
    detail_texts = [safe_text(d if isinstance(d, str) else f"{d:,}") for d in details]
    columns = [
        Column("Section", text_values(sections), width=12.0),
        Column("Item", text_values(items), width=24.0),
        Column("Detail", detail_texts, width=120.0, wrap=True),
    ]
    return TableSheet("Notes", columns, freeze_columns=0)


# ---- charts and figures ------------------------------------------------------------------

def _not_judged_share(analysis: Analysis, run: ModelRun | None, shown: pd.Series) -> str:
    """', not judged' when every prediction ``shown`` (the chart's kernels) read an input derived from the
    measured time, ', N of M not judged' when some did, else '' (a model's column title on the Charts sheet:
    its bars beside the measured ones are no test of it there, as the Summary sheet marks kernel by kernel)."""
    if run is None:
        return ""
    predicted = shown.notna() & (shown > 0)
    derived = analysis.time_derived_inputs(run).reindex(shown.index, fill_value=False) & predicted
    count, total = int(derived.sum()), int(predicted.sum())
    if not count:
        return ""
    return f", {NOT_JUDGED}" if count == total else f", {count} of {total} {NOT_JUDGED}"


def _charts_sheet(wb: Any, analysis: Analysis) -> None:
    """Native charts with their data: measured vs predicted (the kernel groups with the most GPU time),
    bottleneck counts."""
    from openpyxl.chart import BarChart, Reference
    from openpyxl.utils import get_column_letter

    from nvperf_bridge.review.build import review_groups

    ws = wb.create_sheet("Charts")
    cells = _Cells(ws)
    runs = analysis.ok_runs()
    # the longest launch of each of the groups with the most GPU time (on a per-launch page the longest
    # launches are launches of one kernel)
    top = list(longest_per_group(analysis, review_groups(analysis))[:CHART_KERNELS])
    measured = analysis.measured_ns
    series_ns = ([("Measured", measured)] if measured.notna().any() else []) + [
        (mid, run.result["predicted_ns"]) for mid, run in runs.items()]
    unit = time_unit(pd.concat([s.loc[top] for _, s in series_ns])) if series_ns else time_unit([])
    titles = [f"{name} ({unit.label}{_not_judged_share(analysis, runs.get(name), values.loc[top])})"
              for name, values in series_ns]
    ws.column_dimensions["A"].width = 34
    for position in range(2, 2 + max(len(series_ns), len(BOTTLENECKS))):
        ws.column_dimensions[get_column_letter(position)].width = 16
    ws.row_dimensions[3].height = 32
    _print_setup(ws, None, PRINT_PAGE_WIDTH)
    ws.append([cells.cell(f"Charts: {analysis.gpu.name}", bold=True, size=12)])
    note = (f"Measured vs predicted time of the {len(top)} kernel groups with the most GPU time, each by its longest "
            f"launch ({unit.label}; the chart's time axis is logarithmic)")
    if any(NOT_JUDGED in title for title in titles):
        note += f"; {NOT_JUDGED_NOTE}"
    ws.append([cells.cell(note, italic=True, color=NOTE_COLOR)])
    header_row = 3
    ws.append([cells.header(Column("Kernel", [])), *(cells.header(Column(title, [])) for title in titles)])
    fmt = Column("", [], "number", "#,##0.00")
    templates = [cells.template(fmt) for _ in series_ns]
    names = text_values(display_names(analysis.kernels).loc[top], 32)
    for position, index in enumerate(top):
        row: list[Any] = [cells.cell(str(names[position] or ""))]
        for template, (_, values) in zip(templates, series_ns):
            value = values.loc[index]
            row.append(cells.cell(float(value) / unit.ns, number_format="#,##0.00")
                       if pd.notna(value) and value > 0 else None)
        ws.append(row)
    last_row = header_row + len(top)
    if top and series_ns:
        chart = BarChart()
        chart.type = "bar"
        chart.style = 10
        chart.title = f"Measured vs predicted, {len(top)} kernel groups with the most GPU time"
        chart.y_axis.title = f"time ({unit.label}, log scale)"
        chart.y_axis.scaling.logBase = 10
        chart.y_axis.majorGridlines = None
        chart.x_axis.scaling.orientation = "maxMin"  # longest kernel at the top
        chart.y_axis.crosses = "max"
        chart.x_axis.delete = False
        chart.y_axis.delete = False
        data = Reference(ws, min_col=2, max_col=1 + len(series_ns), min_row=header_row, max_row=last_row)
        chart.add_data(data, titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=header_row + 1, max_row=last_row))
        models_seen = 0
        for series, (name, _) in zip(chart.series, series_ns):
            if name == "Measured":
                color = MEASURED_COLOR
            else:
                color = SERIES_COLORS[models_seen % len(SERIES_COLORS)]
                models_seen += 1
            series.graphicalProperties.solidFill = color
            series.graphicalProperties.line.solidFill = color
        chart.height = min(30.0, max(9.0, 3.0 + 0.25 * len(top) * len(series_ns)))
        chart.width = 22.0
        chart.legend.position = "b"
        chart.gapWidth = 60
        chart.y_axis.number_format = "General"
        anchor_col = get_column_letter(max(len(series_ns), len(BOTTLENECKS)) + 3)
        ws.add_chart(chart, f"{anchor_col}{header_row}")

    # Bottleneck counts per model (stacked columns, one colour per label).
    ws.append([])
    ws.append([])
    count_header = last_row + 3
    ws.append([cells.cell("Bottleneck counts per model (kernels the model predicted)", bold=True)])
    count_header += 1
    ws.row_dimensions[count_header].height = 32
    ws.append([cells.header(Column("Model", [])), *(cells.header(Column(label, [])) for label in BOTTLENECKS)])
    models = list(runs)
    for mid in models:
        result = runs[mid].result
        labels = result["bottleneck"][result["error"] == ""]
        counts = labels.value_counts()
        ws.append([cells.cell(mid), *(int(counts.get(label, 0)) for label in BOTTLENECKS)])
    if models:
        stacked = BarChart()
        stacked.type = "col"
        stacked.grouping = "stacked"
        stacked.overlap = 100
        stacked.title = "Bottleneck per model"
        stacked.y_axis.title = "kernels"
        stacked.x_axis.title = "model"
        stacked.x_axis.delete = False
        stacked.y_axis.delete = False
        data = Reference(ws, min_col=2, max_col=1 + len(BOTTLENECKS), min_row=count_header,
                         max_row=count_header + len(models))
        stacked.add_data(data, titles_from_data=True)
        stacked.set_categories(Reference(ws, min_col=1, min_row=count_header + 1, max_row=count_header + len(models)))
        for series, label in zip(stacked.series, BOTTLENECKS):
            series.graphicalProperties.solidFill = BOTTLENECK_COLORS[label]
            series.graphicalProperties.line.solidFill = BOTTLENECK_COLORS[label]
        stacked.height, stacked.width = 10.0, max(16.0, 3.2 * len(models) + 6.0)
        stacked.legend.position = "r"
        ws.add_chart(stacked, f"A{count_header + len(models) + 3}")


def _figures_sheet(wb: Any) -> Any:
    """The Figures sheet in its place among the sheets; ``_fill_figures`` puts the figures on it."""
    ws = wb.create_sheet("Figures")
    _print_setup(ws, None, PRINT_PAGE_WIDTH)
    ws.column_dimensions["A"].width = 100
    return ws


def _fill_figures(ws: Any, figures: Sequence[Any]) -> None:
    """The PNG figures, one under the other, each with a caption."""
    from openpyxl.drawing.image import Image

    cells = _Cells(ws)
    row = 1
    for figure in figures:
        ws.append([cells.cell(figure.caption, bold=True, size=12)])
        image = Image(io.BytesIO(figure.png))
        scale = min(1.0, 820.0 / max(figure.width_px, 1))
        image.width, image.height = int(figure.width_px * scale), int(figure.height_px * scale)
        ws.add_image(image, f"A{row + 1}")
        rows = int(image.height / 20) + 2  # default rows are 20 px high
        for _ in range(rows):
            ws.append([])
        row += rows + 1
    if not figures:
        ws.append([cells.cell("No figures: the input has no measured times and the transit model predicted no "
                              "kernel.", italic=True, color=NOTE_COLOR)])


# ---- workbook ------------------------------------------------------------------------------

def _index_differential_styles(wb: Any) -> None:
    """Give the workbook a conditional-format style list that finds a style by its hash. openpyxl's own
    compares each rule's style with every stored one, twice, on saving: a quarter of the saving time of a
    small workbook's ~200 rules (error bands, labels, banding on every sheet). Same styles, same order,
    same ids."""
    from openpyxl.styles.differential import DifferentialStyleList

    class IndexedStyleList(DifferentialStyleList):
        def __init__(self) -> None:
            super().__init__()
            self._ids: dict[Any, int] = {}

        def add(self, dxf: Any) -> int:
            found = self._ids.get(dxf)
            if found is None:
                found = self._ids[dxf] = super().add(dxf)
            return found

    if type(getattr(wb, "_differential_styles", None)) is DifferentialStyleList and not wb._differential_styles:
        wb._differential_styles = IndexedStyleList()


def render_workbook(analysis: Analysis, figures: Sequence[Any] | None = None,
                    progress: Callable[[str], None] | None = None) -> bytes:
    """The review workbook as .xlsx bytes; ``figures`` are ``figures.ReportFigure`` PNGs to embed."""
    return b"".join(iter_workbook(analysis, figures, progress))


WORKBOOK_CHUNK = 1 << 20  # bytes handed to the writer at a time


def iter_workbook(analysis: Analysis, figures: Sequence[Any] | None = None,
                  progress: Callable[[str], None] | None = None) -> Iterator[bytes]:
    """The review workbook as chunks of .xlsx bytes, for writing as they come: the zip is filled in a
    temporary file, never held whole in memory (a 100k-kernel workbook of 57 MB was held twice, the
    zip being filled and its bytes, on top of the analysis). ``figures``: the ``figures.ReportFigure``
    PNGs, or a ``figures.PendingFigures`` (drawn by the figure worker meanwhile), whose ``result()`` is
    asked for only when every other sheet is made, just before saving."""
    import tempfile

    frame, blocks = _workbook_frame(analysis, figures, progress)
    release_free_memory()  # the sheets' temporaries, before the rows are written
    with tempfile.TemporaryFile() as spool:
        write_rows(frame, blocks, spool)
        del frame, blocks  # the rows are in the file: their values can go before the copying
        spool.seek(0)
        while chunk := spool.read(WORKBOOK_CHUNK):
            yield chunk


def _workbook_frame(analysis: Analysis, figures: Sequence[Any] | None,
                    progress: Callable[[str], None] | None) -> tuple[bytes, list[RawBlock]]:
    """openpyxl's workbook without its data rows (every sheet's frame, styles, charts, images), and
    the rows for ``xlsx_rows`` to write into it."""
    from openpyxl import Workbook

    step = progress or (lambda _label: None)
    large = len(analysis.kernels) > LARGE_INPUT
    order = _order(analysis)
    wb = Workbook(write_only=True)
    _index_differential_styles(wb)
    wb.properties.creator = f"nvperf-bridge {analysis.tool_version}"
    wb.properties.title = f"nvperf-bridge review: {analysis.gpu.name}"
    tables: list[tuple[Any, RawBlock]] = []
    # the per-kernel summary before the review: its consensus pass (about 90 MiB of temporaries at 100k
    # kernels) then never adds up with what the review holds, and it holds only 11 MiB itself
    summary = analysis.summary()
    release_free_memory()  # its temporaries' pages go back (the allocator would keep them for the process)
    step("Kernel groups")
    review = build_review(analysis)
    tables.append(_write_table(wb, _groups_sheet(review)))
    step("Summary")
    time_derived = time_derived_masks(analysis)  # read by the Summary's and the model sheets' errors
    tables.append(_write_table(wb, _summary_sheet(analysis, summary, order, review, time_derived)))
    del summary
    release_free_memory()
    tables.append(_write_table(wb, _accuracy_sheet(analysis)))
    step("charts")
    _charts_sheet(wb, analysis)
    figures_sheet = _figures_sheet(wb)
    names = _sheet_names(analysis)
    for mid, run in analysis.runs.items():
        step(f"model sheet {mid}")
        tables.append(_write_table(wb, _model_sheet(analysis, run, names[mid], order, time_derived.get(mid))))
    release_free_memory()
    step("Inputs")
    profiles = _profiles_sheet(analysis)
    if profiles is not None:
        tables.append(_write_table(wb, profiles))
    tables.append(_write_table(wb, _inputs_sheet(analysis, large)))
    tables.append(_write_table(wb, _gpu_sheet(analysis)))
    tables.append(_write_table(wb, _notes_sheet(analysis, large)))
    # figures still being drawn (a ``figures.PendingFigures``: the figure worker) are waited for only now,
    # and every other sheet is finished first (its tail: conditional formats, print setup, drawing links),
    # as saving would finish it, in the same order: that part of the save is then done while they are drawn
    for ws in wb.worksheets:
        if ws is not figures_sheet:
            ws.close()
    drawn = figures.result() if hasattr(figures, "result") else figures
    _fill_figures(figures_sheet, list(drawn or ()))
    step("saving")
    buffer = io.BytesIO()
    wb.save(buffer)
    for ws, block in tables:
        block.sheet_path = ws.path.lstrip("/")  # known once saved
    return buffer.getvalue(), [block for _, block in tables]


__all__ = ["LARGE_INPUT", "MODEL_SHEET_ROWS", "iter_workbook", "render_workbook", "number_format_for", "text_values"]

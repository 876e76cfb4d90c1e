"""The CSV report: one row per kernel x model, in a stable column order.

Columns (``CSV_COLUMNS``): ``kernel_id, kernel, kernel_name, measured_ns,
model, predicted_ns, predicted_cycles, error_pct, bottleneck, state, error``.
``error_pct`` is the signed error 100 x (predicted - measured) / measured.
Rows come kernel by kernel, models in the order they ran. A model that failed
as a whole still gets its rows, with no prediction and the failure as
``error``, so every kernel x model pair is accounted for. Missing numbers are
empty fields. Numbers are written as they are; a text field that a
spreadsheet would run as a formula (starting with ``= + - @``, tab or CR, and
not simply a number: a hostile kernel name such as ``=HYPERLINK(...)``) gets
a leading apostrophe (``reports.common.neutralise_formula``), so opening the
file by double-click never evaluates it; a CR inside a text field is written
as LF (a bare CR would split the row). ``build_table`` returns the values
unchanged.
"""

from __future__ import annotations

import io
from typing import Iterator

import numpy as np
import pandas as pd

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.reports.common import display_names, full_names, kernel_ids, neutralise_formula

CSV_COLUMNS: tuple[str, ...] = (
    "kernel_id", "kernel", "kernel_name", "measured_ns", "model", "predicted_ns",
    "predicted_cycles", "error_pct", "bottleneck", "state", "error",
)
# kernels per written chunk (x models rows): at 100k kernels 20,000 held 170 MB more than 5,000, and 5,000
# 50 MB more than 2,000 (to_csv's text of a chunk), for 10% less CPU time
CHUNK_KERNELS = 2_000
TEXT_COLUMNS: tuple[str, ...] = ("kernel_id", "kernel", "kernel_name", "model", "bottleneck", "state", "error")


def build_table(analysis: Analysis, rows: slice | None = None) -> pd.DataFrame:
    """The long table behind the CSV (one row per kernel x model); ``rows``: only these kernel
    positions (``iter_csv`` builds the table a slice of kernels at a time)."""
    return _table(analysis, rows or slice(None))


def _base(analysis: Analysis, rows: slice) -> pd.DataFrame:
    """Per kernel of ``rows``: the identity and measured columns every model's rows repeat. Built for
    the slice alone (each name is derived from its own row): the names of every kernel at once held
    tens of MB more than a chunk's at 100k kernels."""
    kernels = analysis.kernels.iloc[rows]
    first = range(len(analysis.kernels))[rows].start if len(kernels) else 0
    return pd.DataFrame({
        "kernel_id": kernel_ids(kernels, first),
        "kernel": display_names(kernels),
        "kernel_name": full_names(kernels),
        "measured_ns": analysis.measured_ns.iloc[rows],
    })


def _table(analysis: Analysis, rows: slice) -> pd.DataFrame:
    base = _base(analysis, rows)
    base["_position"] = np.arange(len(base))
    parts = []
    for order, (mid, run) in enumerate(analysis.runs.items()):
        part = base.copy()
        part["model"] = mid
        part["_order"] = order
        if run.result is None:
            part["predicted_ns"] = np.nan
            part["predicted_cycles"] = np.nan
            part["bottleneck"] = "unknown"
            part["state"] = ""
            part["error"] = f"model failed as a whole: {run.failure}"
        else:
            result = run.result.iloc[rows]
            part["predicted_ns"] = result["predicted_ns"].to_numpy()
            part["predicted_cycles"] = pd.to_numeric(result["predicted_cycles"], errors="coerce").to_numpy()
            part["bottleneck"] = result["bottleneck"].to_numpy()
            part["state"] = result["state"].to_numpy()
            part["error"] = result["error"].to_numpy()
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=list(CSV_COLUMNS))
    table = pd.concat(parts, ignore_index=True).sort_values(["_position", "_order"], kind="stable")
    valid = table["measured_ns"] > 0
    table["error_pct"] = (100.0 * (table["predicted_ns"] - table["measured_ns"]) / table["measured_ns"]).where(valid)
    return table[list(CSV_COLUMNS)].reset_index(drop=True)


def _text_field(value: object) -> object:
    """A text field made safe: no formula, and a CR inside it written as LF. Python's csv writer
    quotes a field only for the characters of its own line terminator ('\\n' here), so a bare CR
    was written unquoted and split the row for every reader; the workbook's XML reads a CR back as
    LF too."""
    if not isinstance(value, str):
        return value
    return neutralise_formula(value).replace("\r\n", "\n").replace("\r", "\n")


def _text_fields(column: pd.Series) -> pd.Series:
    """``_text_field`` of every value, made once per distinct text: a chunk repeats each kernel's names
    once per model and the model names, labels, states and reasons thousands of times (one call per
    value was a third of the report's time). Values that are not text are kept as they are."""
    values = column.to_numpy(dtype=object)
    codes, uniques = pd.factorize(values)
    uniques = np.asarray(uniques, dtype=object)
    made = np.empty(len(uniques), dtype=object)
    made[:] = [_text_field(value) for value in uniques]
    text = np.fromiter((isinstance(value, str) for value in uniques), dtype=bool, count=len(uniques))
    take = codes >= 0
    take[take] = text[codes[take]]
    out = values.copy()
    out[take] = made[codes[take]]
    return pd.Series(out, index=column.index, dtype=object)


def render_csv(analysis: Analysis) -> str:
    """The CSV report as text (RFC 4180 quoting, '\\n' line ends, full float precision)."""
    return b"".join(iter_csv(analysis)).decode("utf-8")


def iter_csv(analysis: Analysis, chunk: int = CHUNK_KERNELS) -> Iterator[bytes]:
    """The CSV report as byte chunks of ``chunk`` kernels (x models) each, the header in the first: the
    long table is never built whole (a million kernels x seven models held at once took 3x the input
    file's size in memory). Each row is formatted exactly as one whole-table ``to_csv`` would."""
    total = len(analysis.kernels)
    for start in range(0, max(total, 1), chunk):
        table = _table(analysis, slice(start, start + chunk))
        for column in TEXT_COLUMNS:
            table[column] = _text_fields(table[column])
        buffer = io.StringIO()
        table.to_csv(buffer, index=False, header=start == 0, lineterminator="\n", float_format="%.12g")
        yield buffer.getvalue().encode("utf-8")


__all__ = ["CSV_COLUMNS", "build_table", "iter_csv", "render_csv"]

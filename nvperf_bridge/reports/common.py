"""Small helpers every report shares: time units, names, detail columns, rankings.

Kept free of any output format so the Markdown, Excel, JSON and CSV renderers
(and the figures) say the same thing about the same analysis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd
from pandas.api.types import infer_dtype

from nvperf_bridge.analysis import Analysis, ModelRun
from nvperf_bridge.labels import factorize_text
from nvperf_bridge.model import RESULT_COLUMNS
from nvperf_bridge.reports.number_text import format_number

# Text a spreadsheet runs as a formula (or a DDE command) when a cell starts with it: CSV opened by
# double-click, a Markdown table pasted into a sheet. The workbook stores such text with a quote prefix.
FORMULA_START: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(text: str) -> str:
    """``text`` with an apostrophe in front when a spreadsheet would take it for a formula: it starts
    with = + - @, a tab or a CR and is not simply a number (``-5.2`` stays as it is, and so does a lone
    ``-``). A spreadsheet shows the rest as text; strip one leading apostrophe to get the original back
    (the JSON report keeps every name exactly)."""
    if len(text) < 2 or text[0] not in FORMULA_START:
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


# (unit label, nanoseconds per unit), smallest first.
TIME_UNITS: tuple[tuple[str, float], ...] = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))

# One colour per bottleneck label, used by the workbook and the figures alike.
BOTTLENECK_COLORS: dict[str, str] = {
    "compute": "F4A261",
    "memory-bandwidth": "4C9BE8",
    "memory-latency": "9B7FD4",
    "parallelism": "E9C46A",
    "synchronization": "E76F51",
    "balanced": "7BC47F",
    "unknown": "D9D9D9",
}

# |error| thresholds (fractions) for the green / amber / red bands of the reports.
ERROR_BANDS: tuple[float, float, float] = (0.10, 0.30, 1.00)


@dataclass(frozen=True)
class TimeUnit:
    label: str
    ns: float

    def convert(self, values: pd.Series) -> pd.Series:
        return values / self.ns


def time_unit(values_ns: Iterable[float] | pd.Series) -> TimeUnit:
    """The unit (ns, µs, ms, s) that makes the column's typical (median) value readable.

    Chosen per column from the median of its positive values so most numbers
    land between 1 and 1000; an empty column keeps ns.
    """
    if isinstance(values_ns, np.ndarray) and values_ns.dtype.kind in "fiu":
        # numpy alone (no list of a million Python floats): the positive values' median, partitioned in place
        array = values_ns.astype("float64", copy=False)
        positive = array[(array > 0) & np.isfinite(array)]
        return _unit_for(float(np.median(positive, overwrite_input=True)) if positive.size else None)
    series = pd.to_numeric(pd.Series(list(values_ns) if not isinstance(values_ns, pd.Series) else values_ns),
                           errors="coerce")
    positive = series[(series > 0) & np.isfinite(series)]
    return _unit_for(None if positive.empty else float(positive.median()))


def _unit_for(typical: float | None) -> TimeUnit:
    """The largest unit not above ``typical`` ns (ns for None: no positive value)."""
    if typical is None:
        return TimeUnit("ns", 1.0)
    chosen = TIME_UNITS[0]
    for label, scale in TIME_UNITS:
        if typical >= scale:
            chosen = (label, scale)
    return TimeUnit(*chosen)


def format_time(ns: float | None) -> str:
    """One duration with its own unit, 3 significant digits ('12.3 µs'); '' for missing."""
    if ns is None or not isinstance(ns, (int, float)) or not math.isfinite(ns):
        return ""
    unit = time_unit([abs(ns)]) if ns else TimeUnit("ns", 1.0)
    return f"{format_number(ns / unit.ns)} {unit.label}"


def format_percent(fraction: float | None, signed: bool = False) -> str:
    """A fraction as a percentage ('12.3%', '+4.0%'); '' for missing."""
    if fraction is None or not isinstance(fraction, (int, float)) or not math.isfinite(fraction):
        return ""
    percent = 100.0 * fraction
    sign = "+" if signed and percent > 0 else ""
    if abs(percent) >= 1000:
        return f"{sign}{percent:,.0f}%"
    return f"{sign}{percent:.1f}%"


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters with an ellipsis when longer."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    return text[: max(1, width - 1)].rstrip() + "…"


def display_names(kernels: pd.DataFrame) -> pd.Series:
    """The short display name per kernel: ``kernel``, else ``kernel_name``, else ``kernel_id``.

    Looked at in that order, each column only for the rows the ones before left blank: where every kernel
    has a ``kernel``, the others (the kernel ids: a hundred thousand distinct texts) are never read."""
    names = pd.Series("", index=kernels.index, dtype="object")
    blank = np.ones(len(kernels), dtype=bool)  # rows no column has named yet
    for column in ("kernel", "kernel_name", "kernel_id"):
        if column not in kernels.columns:
            continue
        values = kernels[column].astype("object")
        if infer_dtype(values.to_numpy(), skipna=True) == "string":
            # texts: each distinct one looked at once (100k launches share a few hundred names, told
            # apart by their few string objects first: factorize_text)
            codes, distinct = factorize_text(values)
            empty = np.append(pd.Series(distinct, dtype=object).str.strip().to_numpy() == "", True)
            present = ~empty[codes]
        else:
            present = (values.notna() & (values.astype(str).str.strip() != "")).to_numpy()
            values = values.astype(str)
        names = names.where(~(blank & present), values)
        blank &= ~present
        if not blank.any():
            break
    return names


def full_names(kernels: pd.DataFrame) -> pd.Series:
    """The full kernel name per kernel (``kernel_name``, else the display name)."""
    if "kernel_name" in kernels.columns:
        full = kernels["kernel_name"].astype("object")
        present = full.notna() & (full.astype(str) != "")
        if present.all():  # the display names are needed only where a full name is missing
            return full.astype(str)
        return full.where(present, display_names(kernels)).astype(str)
    return display_names(kernels)


def kernel_ids(kernels: pd.DataFrame, first_position: int = 0) -> pd.Series:
    """``kernel_id`` as text, else the row position (``first_position``: the position of the first row
    when ``kernels`` is a slice of the whole table, as a report written in chunks passes it)."""
    if "kernel_id" in kernels.columns:
        return kernels["kernel_id"].astype("object").where(kernels["kernel_id"].notna(), "").astype(str)
    return pd.Series([str(i) for i in range(first_position, first_position + len(kernels))], index=kernels.index,
                     dtype="object")


def detail_columns(run: ModelRun) -> list[str]:
    """A model's intermediate quantities: its result columns beyond the standard five."""
    if run.result is None:
        return []
    return [c for c in run.result.columns if c not in RESULT_COLUMNS]


def ranking_times(analysis: Analysis) -> pd.Series:
    """What to rank kernels by: measured time, else the largest prediction of any model."""
    measured = analysis.measured_ns
    if measured.notna().any():
        return measured.fillna(-1.0)
    predictions = [run.result["predicted_ns"] for run in analysis.ok_runs().values()]
    if not predictions:
        return pd.Series(0.0, index=analysis.kernels.index)
    return pd.concat(predictions, axis=1).max(axis=1).fillna(-1.0)


def top_kernels(analysis: Analysis, count: int) -> pd.Index:
    """Index labels of the ``count`` longest kernels (stable order for ties)."""
    times = ranking_times(analysis)
    order = np.argsort(-times.to_numpy(dtype="float64"), kind="stable")
    return analysis.kernels.index[order[:count]]


def longest_per_group(analysis: Analysis, groups: Any, rows: pd.Index | None = None) -> pd.Index:
    """Index labels of one row per kernel group (``review.groups.KernelGroups``), the groups in their order
    (most GPU time first), each group's longest row by ``ranking_times`` among ``rows`` (every row when
    None); a group without such a row is left out. A figure or chart of "the kernels" shows these, not
    the longest rows, which on a per-launch page are launches of one kernel."""
    order = top_kernels(analysis, len(analysis.kernels))  # longest row first
    if rows is not None:
        order = order[order.isin(rows)]
    # each group's first row in that order is its longest; np.unique gives the groups sorted, and group
    # numbers go by GPU time (0: the most)
    _, first = np.unique(groups.group_of.reindex(order).to_numpy(), return_index=True)
    return order[first]


def error_reasons(run: ModelRun) -> list[tuple[str, int]]:
    """The distinct per-kernel reasons a model gave, with how many kernels each, most common first."""
    if run.result is None:
        return []
    reasons = run.result["error"][run.result["error"] != ""]
    counts = reasons.value_counts()
    return [(str(reason), int(n)) for reason, n in counts.items()]


def error_fraction(analysis: Analysis, run: ModelRun) -> pd.Series:
    """Signed relative error (predicted - measured) / measured per kernel; NaN where undefined."""
    measured = analysis.measured_ns
    measured = measured.where(measured > 0)
    return (run.result["predicted_ns"] - measured) / measured


# What a per-kernel error cell says instead of a number when the prediction read an input derived from
# the measured time (DRAM bytes = throughput x duration): the error would score the model against a
# time it has seen. The accuracy table and the verdict leave these kernels out (Analysis.accuracy,
# review.verdict); the per-kernel tables say so rather than print the number.
NOT_JUDGED = "not judged"
NOT_JUDGED_NOTE = ("'not judged': the model read an input derived from the measured time (throughput x duration), "
                   "so its error says nothing about its accuracy")


def time_derived_masks(analysis: Analysis) -> dict[str, pd.Series]:
    """Per model that ran: the kernels whose prediction read an input derived from the measured time
    (``Analysis.time_derived_inputs``), computed once for a whole report."""
    return {mid: analysis.time_derived_inputs(run) for mid, run in analysis.ok_runs().items()}


def not_judged(errors: pd.Series, time_derived: pd.Series | None) -> pd.Series:
    """Per kernel: is there an error (``errors``, from ``error_fraction``) that must not be shown because
    the prediction read a time-derived input (``time_derived``: one of ``time_derived_masks``)?"""
    if time_derived is None:
        return pd.Series(False, index=errors.index)
    return errors.notna() & time_derived.reindex(errors.index, fill_value=False)


def constant_status_summary(run: ModelRun) -> str:
    """'3 paper, 2 default' for the Notes and section headers."""
    counts: dict[str, int] = {}
    for constant in run.constants.values():
        counts[constant.status] = counts.get(constant.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no machine constants"


def python_value(value: Any) -> Any:
    """A numpy / pandas scalar as a plain Python value; NaN, NA and infinities as None."""
    if value is None:
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (int, str)):
        return value
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)

"""Figures (matplotlib, Agg backend): measured vs predicted, the Transit figure, the roofline.

The same functions feed ``nvperf-bridge plot``, the PNGs linked from the
Markdown report and the images embedded in the workbook. Each ``*_figure``
function returns a matplotlib ``Figure``; ``figure_bytes`` renders it (PNG by
default) and closes it. Nothing here writes files.

Each figure is made in two steps: its data from the analysis (``*_data``,
``transit_panels``: numbers and finished texts, here) and the drawing of that
data (``figure_draw``: numpy and matplotlib only). ``analyze`` hands the data
of a report's figures to a figure worker (``figure_worker``), a second process
that imported matplotlib while this one read the input and ran the models, and
draws while this one writes the rest of the report.

The Transit curves are not recomputed here: they come from the transit
model's own pure function (``nvperf_bridge.builtin_plugins.transit``), so the
figure always shows what the model computed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.reports.common import (
    BOTTLENECK_COLORS,
    display_names,
    format_percent,
    shorten,
    time_unit,
)
from nvperf_bridge.reports.figure_draw import (
    MAX_SCATTER_POINTS,
    MODEL_STYLES,
    AccuracyData,
    AccuracySeries,
    FigureOrder,
    ReportFigure,
    RooflineData,
    RooflinePoint,
    TransitCurves,
    draw_accuracy,
    draw_order,
    draw_roofline,
    figure_bytes,
    new_figure,
    sig,
    transit_figure,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from nvperf_bridge.reports.figure_worker import FigureWorker
    from nvperf_bridge.review.groups import KernelGroups

TRANSIT_ID = "transit"

_new_figure = new_figure  # the name other reports (what-if) import
_sig = sig


def _spread_subset(order: np.ndarray, limit: int) -> np.ndarray:
    """At most ``limit`` positions evenly spread over ``order`` (keeps the distribution's shape)."""
    if len(order) <= limit:
        return order
    picks = np.unique(np.linspace(0, len(order) - 1, limit).round().astype(int))
    return order[picks]


def accuracy_data(analysis: Analysis) -> AccuracyData:
    """What the measured-vs-predicted figure shows, every model's points in one time unit.

    Each model's legend entry carries its MAPE over the kernels shown. Kernels without a measured time or
    a prediction are left out, and so are those whose prediction read an input derived from the measured
    time (``Analysis.time_derived_inputs``): they are the kernels the Accuracy table leaves out, so the
    legend's MAPE is the table's. A model with more than ``MAX_SCATTER_POINTS`` such kernels is drawn as an
    evenly spread subset of them (the title says so), its MAPE and count still over all of them.
    """
    measured = analysis.measured_ns
    pairs = []
    for mid, run in analysis.ok_runs().items():
        predicted = run.result["predicted_ns"]
        both = (measured > 0) & (predicted > 0) & ~analysis.time_derived_inputs(run)
        pairs.append((mid, measured[both].to_numpy(float), predicted[both].to_numpy(float)))
    # one concatenation: a model-by-model one first held every value twice (40 MB more at 100k kernels)
    values = np.concatenate([a for _, m, p in pairs for a in (m, p)]) if pairs else np.array([])
    unit = time_unit(values) if values.size else time_unit([])
    series = []
    thinned = False
    for position, (mid, meas, pred) in enumerate(pairs):
        if meas.size == 0:
            continue
        keep = _spread_subset(np.argsort(meas, kind="stable"), MAX_SCATTER_POINTS)
        thinned = thinned or len(keep) < meas.size
        ape = np.abs(pred - meas) / meas
        series.append(AccuracySeries(meas[keep] / unit.ns, pred[keep] / unit.ns, position,
                                     f"{mid}  (MAPE {format_percent(float(ape.mean()))}, n={meas.size:,})",
                                     len(keep) > 2000))
    limits = None
    if values.size:
        low, high = float(values.min()) / unit.ns, float(values.max()) / unit.ns
        limits = (low / 2.0, high * 2.0)
    title = f"Measured vs predicted - {analysis.gpu.name}"
    if thinned:
        title += f"\n(an evenly spread {MAX_SCATTER_POINTS:,} kernels per model drawn)"
    return AccuracyData(series, limits, unit.label, title)


def accuracy_figure(analysis: Analysis, *, width: float = 7.0, height: float = 7.2) -> "Figure":
    """Measured vs predicted time, every model, log-log, with the y = x line (``accuracy_data``)."""
    return draw_accuracy(accuracy_data(analysis), width=width, height=height)


# ---- Transit figure ---------------------------------------------------------------

def transit_curves_for(analysis: Analysis, index: Any, samples: int = 200) -> TransitCurves | None:
    """The Transit figure data of one kernel, from the transit model's own ``transit_curves``.

    Uses the workload inputs the transit run computed for the kernel (``n``,
    ``Z``, ``precision``) and the run's resolved constants and options, so
    the figure shows exactly the equilibrium the model reported. None when
    transit did not run or did not predict this kernel.
    """
    run = analysis.runs.get(TRANSIT_ID)
    if run is None or run.result is None or index not in run.result.index:
        return None
    row = run.result.loc[index]
    if row["error"] or not pd.notna(row.get("n")):
        return None
    from nvperf_bridge.builtin_plugins.transit import transit_curves

    workload = {"n": float(row["n"]), "Z": float(row["Z"]) if pd.notna(row.get("Z")) else float("inf"),
                "precision": str(row.get("precision", "sp"))}
    constants = {name: c.value for name, c in run.constants.items()}
    data = transit_curves(workload, analysis.gpu, constants=constants, samples=samples, options=run.options)
    n = float(data["n"])
    k_eq, _x_eq, r_eq = (float(v) for v in data["equilibrium"])
    marks: dict[str, tuple[float, float]] = {}
    delta, R = (float(v) for v in data["delta_point"])
    if 0.0 <= delta <= n:
        marks["δ"] = (delta, R)
    M, g_M = (float(v) for v in data["pi_point"])
    if 0.0 <= M <= n:
        marks["π"] = (n - M, g_M)  # pi sits on g(x) at x = M, i.e. k = n - M on the reversed axis
    z_text = "∞" if not np.isfinite(float(data["Z"])) else _sig(float(data["Z"]))
    return TransitCurves(
        title=kernel_title(analysis, index),
        k=np.asarray(data["k"], dtype=float),
        f=np.asarray(data["f"], dtype=float),
        g=np.asarray(data["g_of_n_minus_k"], dtype=float),
        k_eq=k_eq,
        throughput_eq=r_eq,
        n=n,
        state=f"{data['state']}, Z = {z_text}, R = {_sig(float(data['R']))} GB/s per SM",
        throughput_unit="GB/s per SM",
        marks=marks,
    )


def transit_panels(analysis: Analysis, count: int = 4,
                   groups: "KernelGroups | None" = None) -> tuple[list[TransitCurves], str] | None:
    """The Transit figure's panels and its title; None without transit results. One panel per kernel group
    (``review.groups``: a kernel with one launch shape), the ``count`` groups with the most GPU time whose
    launches transit predicted, each drawn for its longest such launch: a profile of 100 launches of four
    kernels shows those four, not four launches of its longest one. ``groups``: the report's groups
    (``review.build.review_groups``), when the caller holds them."""
    from nvperf_bridge.reports.common import longest_per_group
    from nvperf_bridge.review.build import review_groups

    run = analysis.runs.get(TRANSIT_ID)
    if run is None or run.result is None:
        return None
    result = run.result
    drawable = result["error"] == ""
    if "n" in result.columns:
        drawable &= result["n"].notna()
    if not drawable.any():  # on a trace transit predicts nothing: no kernel-by-kernel scan to find that out
        return None
    groups = review_groups(analysis) if groups is None else groups
    panels = []
    for index in longest_per_group(analysis, groups, drawable.index[drawable.to_numpy()]):
        if len(panels) >= count:
            break
        curves = transit_curves_for(analysis, index)
        if curves is not None:
            panels.append(curves)
    if not panels:
        return None
    return panels, f"Transit figure (Li et al., HPDC'15, Fig. 6) - {analysis.gpu.name}"


def transit_report_figure(analysis: Analysis, count: int = 4) -> "Figure | None":
    """The Transit figure of the ``count`` longest kernels transit predicted; None without transit results."""
    found = transit_panels(analysis, count)
    return None if found is None else transit_figure(found[0], suptitle=found[1])


# ---- roofline -----------------------------------------------------------------------

def roofline_data(points: pd.DataFrame, roofs: dict[str, dict[str, float]]) -> RooflineData:
    """The roofline figure's data from ``review.roofline.roofline_points`` (the placed groups: those
    whose ``why_not`` is empty) and the roofs by GPU name."""
    placed = points[points["why_not"] == ""]
    return RooflineData([RooflinePoint(float(row.intensity), float(row.achieved), float(row.share), bool(row.top),
                                       int(row.group))
                         for row in placed.itertuples(index=False)], dict(roofs))


def roofline_figure(points: pd.DataFrame, roofs: dict[str, dict[str, float]], *, width: float = 7.5,
                    height: float = 5.2) -> "Figure":
    """Each placed kernel group at its arithmetic intensity and achieved FLOP/s under its GPU's roofs
    (``roofs``: GPU name -> peak FP32 FLOP/s, DRAM bandwidth, ridge; one roof line per GPU; log-log;
    marker size by share of GPU time, labels G1, G2, ... as in the reports)."""
    return draw_roofline(roofline_data(points, roofs), width=width, height=height)


def review_roofline_data(analysis: Analysis, groups: "KernelGroups | None" = None) -> RooflineData | None:
    """The roofline of the reviewed kernel groups, or None when no group can be placed. ``groups``: the
    report's groups (``review.build.review_groups``), when the caller holds them."""
    from nvperf_bridge.review.build import review_groups
    from nvperf_bridge.review.roofline import roofline_points, roofs_by_gpu

    groups = review_groups(analysis) if groups is None else groups
    points = roofline_points(analysis, groups, limit=30)
    if not (points["why_not"] == "").any():
        return None
    return roofline_data(points, roofs_by_gpu(analysis, points))


def review_roofline_figure(analysis: Analysis) -> "Figure | None":
    """The roofline of the reviewed kernel groups, or None when no group can be placed."""
    data = review_roofline_data(analysis)
    return None if data is None else draw_roofline(data)


# ---- the report's figures -----------------------------------------------------------

def figure_orders(analysis: Analysis) -> list[FigureOrder]:
    """The figures every report carries, as data to draw: measured vs predicted (when some model can be
    judged on some measured kernel, as in the Accuracy table), Transit, the roofline of the reviewed groups."""
    from nvperf_bridge.review.build import review_groups

    groups = review_groups(analysis)  # the Transit panels' groups and the roofline's, made once
    orders: list[FigureOrder] = []
    accuracy = accuracy_data(analysis) if analysis.measured_ns.notna().any() and analysis.ok_runs() else None
    if accuracy is not None and accuracy.series:  # some model judged on some kernel (the Accuracy table's)
        orders.append(FigureOrder("measured-vs-predicted", "Measured vs predicted time, all models", accuracy))
    transit = transit_panels(analysis, groups=groups)
    if transit is not None:
        orders.append(FigureOrder("transit", "Transit figure of the kernels with the most GPU time", transit))
    roofline = review_roofline_data(analysis, groups)
    if roofline is not None:
        orders.append(FigureOrder("roofline", "Roofline: the kernel groups under the GPU's roofs", roofline))
    return orders


def report_figures(analysis: Analysis, worker: "FigureWorker | None" = None) -> list[ReportFigure]:
    """The report's figures as PNGs, drawn here, or by ``worker`` (a figure worker already started,
    which draws the same data with the same functions) when one is given."""
    return start_figures(analysis, worker).result()


class PendingFigures:
    """The report's figures on their way: ``result()`` gives the PNGs. With a worker they are drawn in
    its process while this one goes on; without, ``result()`` draws them here (after whatever the caller
    did meanwhile, so that work's temporaries are gone first)."""

    def __init__(self, orders: list[FigureOrder], worker: "FigureWorker | None") -> None:
        self.orders = orders
        self._ticket = worker.submit(orders) if worker is not None and orders else None
        self._figures: list[ReportFigure] | None = None

    def result(self) -> list[ReportFigure]:
        if self._figures is None:
            drawn = self._ticket.result() if self._ticket is not None else None
            # without a worker, or when it could not draw (it died, or was never able to start): here
            self._figures = drawn if drawn is not None else [draw_order(order) for order in self.orders]
        return self._figures


def start_figures(analysis: Analysis, worker: "FigureWorker | None" = None) -> PendingFigures:
    """Work out the report's figures (``figure_orders``) and hand them to ``worker`` to draw, if given."""
    return PendingFigures(figure_orders(analysis), worker)


def bottleneck_color(label: str) -> str:
    """The hex colour (with '#') the reports use for a bottleneck label."""
    return "#" + BOTTLENECK_COLORS.get(label, BOTTLENECK_COLORS["unknown"])


def kernel_title(analysis: Analysis, index: Any, width: int = 48) -> str:
    """A panel title: the kernel's short name and measured time."""
    from nvperf_bridge.reports.common import format_time

    name = shorten(display_names(analysis.kernels).loc[index], width)
    measured = analysis.measured_ns.loc[index]
    return f"{name} ({format_time(float(measured))})" if pd.notna(measured) else name


__all__ = [
    "MAX_SCATTER_POINTS", "PendingFigures", "ReportFigure", "TransitCurves", "accuracy_data", "accuracy_figure",
    "bottleneck_color", "figure_bytes", "figure_orders", "kernel_title", "report_figures", "review_roofline_data",
    "roofline_data", "start_figures", "transit_curves_for", "transit_figure", "transit_panels",
    "transit_report_figure",
]

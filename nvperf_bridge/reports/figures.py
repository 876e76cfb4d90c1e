"""Figures (matplotlib, Agg backend): measured vs predicted, and the Transit figure.

The same functions feed ``nvperf-bridge plot``, the PNGs linked from the
Markdown report and the images embedded in the workbook. Each ``*_figure``
function returns a matplotlib ``Figure``; ``figure_bytes`` renders it (PNG by
default) and closes it. Nothing here writes files.

The Transit curves are not recomputed here: they come from the transit
model's own pure function (``nvperf_bridge.builtin_plugins.transit``), so the
figure always shows what the model computed.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

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

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

TRANSIT_ID = "transit"

# Points per model in the scatter beyond which an evenly spread subset is drawn.
MAX_SCATTER_POINTS = 5000

MODEL_STYLES: tuple[tuple[str, str], ...] = (
    ("#1f77b4", "o"), ("#d62728", "s"), ("#2ca02c", "^"), ("#9467bd", "D"),
    ("#ff7f0e", "v"), ("#8c564b", "P"), ("#e377c2", "X"), ("#17becf", "*"),
)


def _new_figure(width: float, height: float, layout: str | None = "constrained") -> "Figure":
    """A figure on the Agg canvas (no display needed, no global pyplot state). The report figures pass
    ``layout=None`` and place their axes once with ``figure_layout.fixed_layout``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def figure_bytes(fig: "Figure", fmt: str = "png", dpi: int = 150) -> bytes:
    """Render a figure to bytes (png, svg, pdf) and release it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=dpi, facecolor="white")
    return buffer.getvalue()


def _spread_subset(order: np.ndarray, limit: int) -> np.ndarray:
    """At most ``limit`` positions evenly spread over ``order`` (keeps the distribution's shape)."""
    if len(order) <= limit:
        return order
    picks = np.unique(np.linspace(0, len(order) - 1, limit).round().astype(int))
    return order[picks]


def accuracy_figure(analysis: Analysis, *, width: float = 7.0, height: float = 7.2) -> "Figure":
    """Measured vs predicted time, every model, log-log, with the y = x line.

    Each model's legend entry carries its MAPE over the kernels shown.
    Kernels without a measured time or a prediction are left out (the title
    says how many points are drawn).
    """
    from nvperf_bridge.reports.figure_layout import fixed_layout, minor_log_marks

    fig = _new_figure(width, height, layout=None)
    ax = fig.add_subplot(1, 1, 1)
    measured = analysis.measured_ns
    runs = analysis.ok_runs()
    pairs = []
    for mid, run in runs.items():
        predicted = run.result["predicted_ns"]
        both = (measured > 0) & (predicted > 0)
        pairs.append((mid, measured[both].to_numpy(float), predicted[both].to_numpy(float)))
    # one concatenation: a model-by-model one first held every value twice (40 MB more at 100k kernels)
    values = np.concatenate([a for _, m, p in pairs for a in (m, p)]) if pairs else np.array([])
    unit = time_unit(values) if values.size else time_unit([])
    legend = None
    drawn = 0
    thinned = False
    for position, (mid, meas, pred) in enumerate(pairs):
        if meas.size == 0:
            continue
        color, marker = MODEL_STYLES[position % len(MODEL_STYLES)]
        keep = _spread_subset(np.argsort(meas, kind="stable"), MAX_SCATTER_POINTS)
        thinned = thinned or len(keep) < meas.size
        ape = np.abs(pred - meas) / meas
        ax.scatter(meas[keep] / unit.ns, pred[keep] / unit.ns, s=28, marker=marker, color=color, alpha=0.75,
                   edgecolors="white", linewidths=0.4, rasterized=len(keep) > 2000,
                   label=f"{mid}  (MAPE {format_percent(float(ape.mean()))}, n={meas.size:,})")
        drawn += meas.size
    if values.size:
        low, high = float(values.min()) / unit.ns, float(values.max()) / unit.ns
        low, high = low / 2.0, high * 2.0
        line = np.array([low, high])
        ax.plot(line, line, color="black", linewidth=1.2, label="predicted = measured")
        ax.fill_between(line, line / 2.0, line * 2.0, color="grey", alpha=0.12, linewidth=0, label="within 2x")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax)
        minor_log_marks(ax, grid={"color": "#f0f0f0", "linewidth": 0.4})
        ax.set_aspect("equal", adjustable="box")
        legend = fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncols=2, fontsize=9, frameon=False)
    else:
        ax.text(0.5, 0.5, "no kernel has both a measured time and a prediction",
                ha="center", va="center", transform=ax.transAxes, fontsize=11)
        ax.set_xticks([])
        ax.set_yticks([])
    ax.set_xlabel(f"Measured kernel time ({unit.label})", fontsize=11)
    ax.set_ylabel(f"Predicted kernel time ({unit.label})", fontsize=11)
    title = f"Measured vs predicted - {analysis.gpu.name}"
    if thinned:
        title += f"\n(an evenly spread {MAX_SCATTER_POINTS:,} kernels per model drawn)"
    ax.set_title(title, fontsize=12)
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    ax.tick_params(labelsize=10)
    fixed_layout(fig, [ax], 1, 1, legend=legend)
    return fig


def _plain_log_ticks(ax: Any) -> None:
    """Log axes labelled 0.1, 1, 10, 1,000 rather than 10^-1 ... (easier to read off)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def label(value: float, _position: Any) -> str:
        if value <= 0:
            return ""
        if value >= 1:
            return f"{value:,.0f}"
        return f"{value:.{max(0, -int(math.floor(math.log10(value))))}f}"

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10.0))
        axis.set_major_formatter(FuncFormatter(label))
        axis.set_minor_formatter(NullFormatter())


# ---- Transit figure ---------------------------------------------------------------

@dataclass
class TransitCurves:
    """What the Transit figure of one kernel shows (Li et al., HPDC'15, Fig. 6).

    ``k`` is the number of threads in the memory system (0..n); ``f`` the
    memory system's service supply f(k) and ``g`` the demand g(x) of the
    compute system at x = n - k (the reversed axis of the paper's Fig. 6),
    both in the same throughput unit. ``k_eq``, ``throughput_eq`` is the
    equilibrium f(k) = g(x) (Eq. 3).
    """

    title: str
    k: np.ndarray
    f: np.ndarray
    g: np.ndarray
    k_eq: float
    throughput_eq: float
    n: float
    state: str = ""
    throughput_unit: str = ""
    k_label: str = "k: threads in the memory system (per SM)"
    marks: dict[str, tuple[float, float]] = field(default_factory=dict)  # e.g. {"δ": (k, f)}


def transit_figure(panels: Sequence[TransitCurves], *, columns: int = 2, panel_size: tuple[float, float] = (5.2, 3.9),
                   suptitle: str = "") -> "Figure":
    """One panel per kernel: f(k) and g(n - k) against k, the equilibrium marked."""
    from nvperf_bridge.reports.figure_layout import fixed_layout

    count = max(1, len(panels))
    columns = max(1, min(columns, count))
    rows = math.ceil(count / columns)
    fig = _new_figure(panel_size[0] * columns, panel_size[1] * rows, layout=None)
    if not panels:
        ax = fig.add_subplot(1, 1, 1)
        ax.text(0.5, 0.5, "no kernel could be drawn (the transit model predicted none)",
                ha="center", va="center", transform=ax.transAxes, fontsize=11)
        ax.set_axis_off()
        return fig
    axes = []
    for position, panel in enumerate(panels):
        axes.append(fig.add_subplot(rows, columns, position + 1))
        _draw_transit(axes[-1], panel, legend=len(panels) == 1)
    legend = None
    if len(panels) > 1:  # one shared legend rather than one per panel
        legend = fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncols=3, fontsize=10,
                            frameon=False)
    title = fig.suptitle(suptitle, fontsize=13) if suptitle else None
    fixed_layout(fig, axes, rows, columns, legend=legend, suptitle=title)
    return fig


def _draw_transit(ax: Any, panel: TransitCurves, legend: bool = True) -> None:
    ax.plot(panel.k, panel.f, color="#1f77b4", linewidth=2.0, label="f(k): memory system supply")
    ax.plot(panel.k, panel.g, color="#d62728", linewidth=2.0, label="g(x), x = n - k: compute demand")
    ax.plot([panel.k_eq], [panel.throughput_eq], marker="o", markersize=8, color="black", zorder=5,
            label="equilibrium f(k) = g(x)")
    # the label on the side of the point with more room, so it stays inside the axes (the layout is fixed)
    right = panel.k_eq <= 0.5 * max(float(panel.n), 1.0)
    high = panel.throughput_eq <= 0.6 * _transit_top(panel)
    ax.annotate(f"k* = {panel.k_eq:,.0f}, x* = {panel.n - panel.k_eq:,.0f}\nf(k*) = {_sig(panel.throughput_eq)} "
                f"{panel.throughput_unit}".strip(),
                xy=(panel.k_eq, panel.throughput_eq), xytext=(12 if right else -12, 14 if high else -14),
                textcoords="offset points", fontsize=9, ha="left" if right else "right",
                va="baseline" if high else "top",
                bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "edgecolor": "#999999", "alpha": 0.9},
                arrowprops={"arrowstyle": "-", "color": "#666666", "linewidth": 0.8})
    for label, (x, y) in panel.marks.items():
        ax.plot([x], [y], marker="x", color="#555555", markersize=7)
        inside = x <= 0.9 * max(float(panel.n), 1.0)  # near the right edge the label goes left of the mark
        ax.annotate(label, xy=(x, y), xytext=(5 if inside else -5, -15), textcoords="offset points", fontsize=10,
                    color="#555555", ha="left" if inside else "right")
    ax.set_xlim(0, max(float(panel.n), 1.0))
    n = float(panel.n)
    top = ax.secondary_xaxis("top", functions=(lambda k: n - k, lambda x: n - x))
    top.set_xlabel("x = n - k: threads in the compute system", fontsize=9, color="#d62728")
    top.tick_params(labelsize=8, colors="#d62728")
    ax.set_ylim(0, _transit_top(panel))
    ax.set_xlabel(panel.k_label + f"   (n = {panel.n:,.0f})", fontsize=10)
    ax.set_ylabel(f"throughput ({panel.throughput_unit})" if panel.throughput_unit else "throughput", fontsize=10)
    title = panel.title if not panel.state else f"{panel.title}\n{panel.state}"
    ax.set_title(title, fontsize=10.5)
    ax.grid(True, color="#e5e5e5", linewidth=0.6)
    ax.tick_params(labelsize=9)
    if legend:
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)


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


def transit_report_figure(analysis: Analysis, count: int = 4) -> "Figure | None":
    """The Transit figure of the ``count`` longest kernels transit predicted; None without transit results."""
    from nvperf_bridge.reports.common import top_kernels

    run = analysis.runs.get(TRANSIT_ID)
    if run is None or run.result is None:
        return None
    result = run.result
    drawable = result["error"] == ""
    if "n" in result.columns:
        drawable &= result["n"].notna()
    if not drawable.any():  # on a trace transit predicts nothing: no kernel-by-kernel scan to find that out
        return None
    order = top_kernels(analysis, len(analysis.kernels))
    candidates = order[order.isin(drawable.index[drawable.to_numpy()])]
    panels = []
    for index in candidates:
        if len(panels) >= count:
            break
        curves = transit_curves_for(analysis, index)
        if curves is not None:
            panels.append(curves)
    if not panels:
        return None
    return transit_figure(panels, suptitle=f"Transit figure (Li et al., HPDC'15, Fig. 6) - {analysis.gpu.name}")


def roofline_figure(points: pd.DataFrame, roofs: dict[str, dict[str, float]], *, width: float = 7.5,
                    height: float = 5.2) -> "Figure":
    """Each placed kernel group at its arithmetic intensity and achieved FLOP/s under its GPU's roofs
    (``roofs``: GPU name -> peak FP32 FLOP/s, DRAM bandwidth, ridge; one roof line per GPU; log-log;
    marker size by share of GPU time, labels G1, G2, ... as in the reports)."""
    from nvperf_bridge.reports.figure_layout import fixed_layout, minor_log_marks

    fig = _new_figure(width, height, layout=None)
    ax = fig.add_subplot(1, 1, 1)
    placed = points[points["why_not"] == ""]
    ridges = [r["ridge_flop_per_byte"] for r in roofs.values()]
    low = min([min(ridges) / 100.0, *(placed["intensity"] / 3.0)])
    high = max([max(ridges) * 100.0, *(placed["intensity"] * 3.0)])
    x = np.geomspace(low, high, 200)
    several = len(roofs) > 1
    for position, (gpu_name, roof) in enumerate(roofs.items()):
        peak, bandwidth, ridge = roof["peak_flop_per_s"], roof["bandwidth_bytes_per_s"], roof["ridge_flop_per_byte"]
        style = ("-", "--", "-.", ":")[position % 4]
        # several GPUs: the legend names each roof with its numbers (labels on the lines would overlap)
        label = f"{gpu_name}: {_sig(peak / 1e9)} GFLOP/s, {_sig(bandwidth / 1e9)} GB/s" if several else None
        ax.plot(x, np.minimum(peak, x * bandwidth) / 1e9, color="#404040", linewidth=2.0, linestyle=style,
                label=label)
        if not several:
            ax.annotate(f"peak FP32 {_sig(peak / 1e9)} GFLOP/s", (high, peak / 1e9), ha="right", va="bottom",
                        fontsize=9)
            ax.annotate(f"DRAM {_sig(bandwidth / 1e9)} GB/s", (low * 1.3, low * 1.3 * bandwidth / 1e9), rotation=0,
                        ha="left", va="bottom", fontsize=9)
        ax.axvline(ridge, color="#BBBBBB", linestyle=":", linewidth=1.0)
    for row in placed.itertuples(index=False):
        share = row.share if row.share == row.share else 0.1
        ax.scatter([row.intensity], [row.achieved / 1e9], s=40 + 600 * share, alpha=0.75,
                   color="#D62728" if row.top else "#1F77B4", edgecolor="black", linewidth=0.5, zorder=3)
        ax.annotate(f"G{row.group + 1}", (row.intensity, row.achieved / 1e9), textcoords="offset points",
                    xytext=(6, 4), fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax)  # 0.1, 1, 1,000 as on the accuracy figure (no math text to typeset)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("achieved GFLOP/s")
    title = f"Roofline - {', '.join(roofs)}"
    if not len(placed):
        title += " (no group has FLOP counters, DRAM bytes and a time)"
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    if several:
        ax.legend(loc="lower right", fontsize=8)
    minor_log_marks(ax)
    fixed_layout(fig, [ax], 1, 1)
    return fig


@dataclass(frozen=True)
class ReportFigure:
    """One PNG a report embeds or links: a short file-name key, a caption and the bytes."""

    key: str
    caption: str
    png: bytes
    width_px: int
    height_px: int


def report_figures(analysis: Analysis) -> list[ReportFigure]:
    """The figures every report carries: measured vs predicted (when measured times exist), Transit."""
    figures: list[ReportFigure] = []
    if analysis.measured_ns.notna().any() and analysis.ok_runs():
        figures.append(_as_report_figure("measured-vs-predicted", "Measured vs predicted time, all models",
                                         accuracy_figure(analysis)))
    transit = transit_report_figure(analysis)
    if transit is not None:
        figures.append(_as_report_figure("transit", "Transit figure of the longest kernels", transit))
    roofline = review_roofline_figure(analysis)
    if roofline is not None:
        figures.append(_as_report_figure("roofline", "Roofline: the kernel groups under the GPU's roofs", roofline))
    return figures


def review_roofline_figure(analysis: Analysis) -> "Figure | None":
    """The roofline of the reviewed kernel groups, or None when no group can be placed."""
    from nvperf_bridge.review.groups import kernel_groups
    from nvperf_bridge.review.roofline import roofline_points, roofs_by_gpu

    points = roofline_points(analysis, kernel_groups(analysis.kernels), limit=30)
    if not (points["why_not"] == "").any():
        return None
    return roofline_figure(points, roofs_by_gpu(analysis, points))


def _as_report_figure(key: str, caption: str, fig: "Figure", dpi: int = 110) -> ReportFigure:
    width, height = fig.get_size_inches()
    return ReportFigure(key, caption, figure_bytes(fig, dpi=dpi), int(width * dpi), int(height * dpi))


def _sig(value: float) -> str:
    from nvperf_bridge.reports.common import format_number

    return format_number(float(value))


def _transit_top(panel: TransitCurves) -> float:
    """Upper y limit that keeps the equilibrium readable: f(k)'s ramp may leave the plot when it
    dwarfs the demand curve (a kernel with little DRAM traffic), as in the paper's own sketches."""
    demand = float(np.nanmax(panel.g)) if panel.g.size else 0.0
    focus = max(demand, float(panel.throughput_eq))
    supply = float(np.nanmax(panel.f)) if panel.f.size else 0.0
    top = max(focus, supply) if supply <= 3.0 * focus else 2.0 * focus
    return top * 1.25 if np.isfinite(top) and top > 0 else 1.0


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
    "MAX_SCATTER_POINTS", "ReportFigure", "TransitCurves", "report_figures", "transit_curves_for",
    "transit_report_figure", "accuracy_figure", "bottleneck_color", "figure_bytes",
    "kernel_title", "transit_figure",
]

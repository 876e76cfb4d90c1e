"""Drawing the report figures from plain data (numpy and matplotlib only, never pandas).

``figures.py`` turns an analysis into the data of each figure (``AccuracyData``, ``TransitCurves``,
``RooflineData``: numbers and finished texts); the functions here draw that data. Kept apart so the
figure worker (``figure_worker.py``), a second process that draws while the first one writes the rest
of the report, needs only this module and matplotlib: it starts without pandas.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from nvperf_bridge.reports.number_text import format_number

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

# Points per model in the scatter beyond which an evenly spread subset is drawn.
MAX_SCATTER_POINTS = 5000

MODEL_STYLES: tuple[tuple[str, str], ...] = (
    ("#1f77b4", "o"), ("#d62728", "s"), ("#2ca02c", "^"), ("#9467bd", "D"),
    ("#ff7f0e", "v"), ("#8c564b", "P"), ("#e377c2", "X"), ("#17becf", "*"),
)


def new_figure(width: float, height: float, layout: str | None = "constrained") -> "Figure":
    """A figure on the Agg canvas (no display needed, no global pyplot state). The report figures pass
    ``layout=None`` and place their axes once with ``figure_layout.fixed_layout``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def figure_bytes(fig: "Figure", fmt: str = "png", dpi: int = 150, png_level: int | None = None) -> bytes:
    """Render a figure to bytes (png, svg, pdf) and release it; ``png_level``: the PNG's zlib
    compression level (None: Pillow's default, 6)."""
    buffer = io.BytesIO()
    extra = {"pil_kwargs": {"compress_level": png_level}} if fmt == "png" and png_level is not None else {}
    fig.savefig(buffer, format=fmt, dpi=dpi, facecolor="white", **extra)
    return buffer.getvalue()


# ---- measured vs predicted ----------------------------------------------------------

@dataclass
class AccuracySeries:
    """One model's points: measured and predicted times in the figure's unit (an evenly spread subset
    when the model has more than ``MAX_SCATTER_POINTS``), its style position and its legend text."""

    x: np.ndarray
    y: np.ndarray
    position: int
    label: str
    rasterized: bool


@dataclass
class AccuracyData:
    """What the measured-vs-predicted figure shows: the series, the axes' limits in the unit (None: no
    kernel has both a measured time and a prediction), the unit's label and the title."""

    series: list[AccuracySeries]
    limits: tuple[float, float] | None
    unit_label: str
    title: str


def draw_accuracy(data: AccuracyData, *, width: float = 7.0, height: float = 7.2) -> "Figure":
    """Measured vs predicted time, every model, log-log, with the y = x line and the within-2x band."""
    from nvperf_bridge.reports.figure_layout import fixed_layout, minor_log_marks

    fig = new_figure(width, height, layout=None)
    ax = fig.add_subplot(1, 1, 1)
    legend = None
    for series in data.series:
        color, marker = MODEL_STYLES[series.position % len(MODEL_STYLES)]
        ax.scatter(series.x, series.y, s=28, marker=marker, color=color, alpha=0.75, edgecolors="white",
                   linewidths=0.4, rasterized=series.rasterized, label=series.label)
    if data.limits is not None:
        low, high = data.limits
        line = np.array([low, high])
        ax.plot(line, line, color="black", linewidth=1.2, label="predicted = measured")
        ax.fill_between(line, line / 2.0, line * 2.0, color="grey", alpha=0.12, linewidth=0, label="within 2x")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_aspect("equal", adjustable="box")
        minor_log_marks(ax, grid={"color": "#f0f0f0", "linewidth": 0.4})
        _log_axes_ticks(ax, ACCURACY_TICKS)
        legend = fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncols=2, fontsize=9, frameon=False)
    else:
        ax.text(0.5, 0.5, "no kernel has both a measured time and a prediction",
                ha="center", va="center", transform=ax.transAxes, fontsize=11)
        ax.set_xticks([])
        ax.set_yticks([])
    ax.set_xlabel(f"Measured kernel time ({data.unit_label})", fontsize=11)
    ax.set_ylabel(f"Predicted kernel time ({data.unit_label})", fontsize=11)
    ax.set_title(data.title, fontsize=12)
    fixed_layout(fig, [ax], 1, 1, legend=legend)
    if data.limits is not None and _log_axes_ticks(ax, ACCURACY_TICKS):  # other ticks at the final size
        fixed_layout(fig, [ax], 1, 1, legend=legend)
    return fig


# the major ticks' label size and grid lines of the accuracy figure and of the roofline
ACCURACY_TICKS: dict[str, Any] = {"fontsize": 10.0, "grid": {"color": "#dddddd", "linewidth": 0.6}}
ROOFLINE_TICKS: dict[str, Any] = {"fontsize": 10.0, "grid": {"color": "#b0b0b0", "linewidth": 0.8, "alpha": 0.3}}


def _log_axes_ticks(ax: Any, style: dict[str, Any]) -> bool:
    """Put (or put again) the decade ticks of ``ax``'s two log axes where matplotlib's ``LogLocator``
    puts them at the axes' current size, labelled by ``plain_log_label``, as plain artists
    (``figure_layout.plain_ticks``: no tick objects, nothing located at draw time); ``style``: their
    label size and grid lines. Call it once the limits are final. True when they changed."""
    from matplotlib.ticker import LogLocator

    from nvperf_bridge.reports.figure_layout import auto_tick_count, plain_ticks

    changed = False
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        low, high = sorted(float(v) for v in axis.get_view_interval())
        count = auto_tick_count(ax, name, style["fontsize"], least=2)
        values = LogLocator(base=10.0, numticks=count).tick_values(low, high)
        inside = np.abs(np.log10(values) - np.clip(np.log10(values), math.log10(low), math.log10(high))) <= 1e-10 * \
            max(1.0, abs(math.log10(high) - math.log10(low)))
        values = values[inside]
        if np.array_equal(values, getattr(ax, f"_log_{name}_ticks", None)):
            continue
        setattr(ax, f"_log_{name}_ticks", values)
        plain_ticks(ax, name, values, [plain_log_label(v) for v in values], fontsize=style["fontsize"],
                    grid=style["grid"])
        changed = True
    return changed


def plain_log_label(value: float) -> str:
    """A log axis' label: 0.1, 1, 10, 1,000 rather than 10^-1 ... (easier to read off)."""
    if value <= 0:
        return ""
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:.{max(0, -int(math.floor(math.log10(value))))}f}"


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
    fig = new_figure(panel_size[0] * columns, panel_size[1] * rows, layout=None)
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
    # matplotlib would locate the ticks at the panels' final size: where that gives other ticks than the
    # size before the layout did, they are put again and the layout is made with their labels
    if [_transit_axis_ticks(ax) for ax in axes].count(True):
        fixed_layout(fig, axes, rows, columns, legend=legend, suptitle=title)
    return fig


def _draw_transit(ax: Any, panel: TransitCurves, legend: bool = True) -> None:
    from nvperf_bridge.reports.figure_layout import top_scale

    ax.plot(panel.k, panel.f, color="#1f77b4", linewidth=2.0, label="f(k): memory system supply")
    ax.plot(panel.k, panel.g, color="#d62728", linewidth=2.0, label="g(x), x = n - k: compute demand")
    ax.plot([panel.k_eq], [panel.throughput_eq], marker="o", markersize=8, color="black", zorder=5,
            label="equilibrium f(k) = g(x)")
    # the label on the side of the point with more room, so it stays inside the axes (the layout is fixed)
    right = panel.k_eq <= 0.5 * max(float(panel.n), 1.0)
    high = panel.throughput_eq <= 0.6 * transit_top(panel)
    ax.annotate(f"k* = {panel.k_eq:,.0f}, x* = {panel.n - panel.k_eq:,.0f}\nf(k*) = {sig(panel.throughput_eq)} "
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
    n, right_end = float(panel.n), max(float(panel.n), 1.0)
    ax.set_xlim(0, right_end)
    ax.set_ylim(0, transit_top(panel))
    _transit_axis_ticks(ax)  # k and the throughput, at round values
    # the paper's reversed axis: x = n - k, at the positions k = n - x of round values of x
    x_values = _transit_ticks(n - right_end, n)
    top_scale(ax, n - x_values, _plain_tick_labels(x_values, n - right_end, n),
              "x = n - k: threads in the compute system", color="#d62728", fontsize=8, title_fontsize=9)
    ax.set_xlabel(panel.k_label + f"   (n = {panel.n:,.0f})", fontsize=10)
    ax.set_ylabel(f"throughput ({panel.throughput_unit})" if panel.throughput_unit else "throughput", fontsize=10)
    title = panel.title if not panel.state else f"{panel.title}\n{panel.state}"
    ax.set_title(title, fontsize=10.5)
    if legend:
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)


TRANSIT_TICK_FONTSIZE = 9.0


def _transit_axis_ticks(ax: Any) -> bool:
    """Put (or put again) the k and throughput ticks of a Transit panel where matplotlib's default locator
    would at the panel's current size, as plain artists (``figure_layout.plain_ticks``: no tick objects,
    nothing located at draw time); True when they changed."""
    from nvperf_bridge.reports.figure_layout import auto_tick_count, plain_ticks

    changed = False
    for name, (low, high) in (("x", ax.get_xlim()), ("y", ax.get_ylim())):
        values = _transit_ticks(low, high, auto_tick_count(ax, name, TRANSIT_TICK_FONTSIZE))
        if np.array_equal(values, getattr(ax, f"_transit_{name}_ticks", None)):
            continue
        setattr(ax, f"_transit_{name}_ticks", values)
        plain_ticks(ax, name, values, _plain_tick_labels(values, low, high), fontsize=TRANSIT_TICK_FONTSIZE,
                    grid={"color": "#e5e5e5", "linewidth": 0.6})
        changed = True
    return changed


def _transit_ticks(low: float, high: float, intervals: int = 9) -> np.ndarray:
    """Round tick values inside [low, high], as matplotlib's default locator (``AutoLocator``) chooses
    them for at most ``intervals`` intervals (9: an axes wider than about 3.4 inches)."""
    from matplotlib.ticker import MaxNLocator

    values = MaxNLocator(nbins=intervals, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
    slack = (high - low) * 1e-10
    return values[(values >= low - slack) & (values <= high + slack)]


def _plain_tick_labels(values: np.ndarray, low: float, high: float) -> list[str]:
    """``values`` written as a linear axis over [low, high] labels its ticks (matplotlib's ScalarFormatter)."""
    from matplotlib.ticker import ScalarFormatter

    formatter = ScalarFormatter()
    formatter.create_dummy_axis()
    formatter.axis.set_view_interval(low, high)
    return formatter.format_ticks(values)


def transit_top(panel: TransitCurves) -> float:
    """Upper y limit that keeps the equilibrium readable: f(k)'s ramp may leave the plot when it
    dwarfs the demand curve (a kernel with little DRAM traffic), as in the paper's own sketches."""
    demand = float(np.nanmax(panel.g)) if panel.g.size else 0.0
    focus = max(demand, float(panel.throughput_eq))
    supply = float(np.nanmax(panel.f)) if panel.f.size else 0.0
    top = max(focus, supply) if supply <= 3.0 * focus else 2.0 * focus
    return top * 1.25 if np.isfinite(top) and top > 0 else 1.0


# ---- roofline -----------------------------------------------------------------------

@dataclass
class RooflinePoint:
    """One placed kernel group: arithmetic intensity (FLOP per DRAM byte), achieved FLOP/s, share of GPU
    time (NaN: unknown), whether it is a top group, and its 0-based group number (labelled G1, G2, ...)."""

    intensity: float
    achieved: float
    share: float
    top: bool
    group: int


@dataclass
class RooflineData:
    """The roofline figure: the placed groups, and per GPU name its peak FP32 FLOP/s, DRAM bandwidth
    and ridge (``peak_flop_per_s``, ``bandwidth_bytes_per_s``, ``ridge_flop_per_byte``)."""

    points: list[RooflinePoint]
    roofs: dict[str, dict[str, float]]


def draw_roofline(data: RooflineData, *, width: float = 7.5, height: float = 5.2) -> "Figure":
    """Each placed kernel group at its arithmetic intensity and achieved FLOP/s under its GPU's roofs
    (one roof line per GPU; log-log; marker size by share of GPU time, labels G1, G2, ... as in the reports)."""
    from nvperf_bridge.reports.figure_layout import fixed_layout, minor_log_marks

    fig = new_figure(width, height, layout=None)
    ax = fig.add_subplot(1, 1, 1)
    placed, roofs = data.points, data.roofs
    ridges = [r["ridge_flop_per_byte"] for r in roofs.values()]
    low = min([min(ridges) / 100.0, *(p.intensity / 3.0 for p in placed)])
    high = max([max(ridges) * 100.0, *(p.intensity * 3.0 for p in placed)])
    x = np.geomspace(low, high, 200)
    several = len(roofs) > 1
    for position, (gpu_name, roof) in enumerate(roofs.items()):
        peak, bandwidth, ridge = roof["peak_flop_per_s"], roof["bandwidth_bytes_per_s"], roof["ridge_flop_per_byte"]
        style = ("-", "--", "-.", ":")[position % 4]
        # several GPUs: the legend names each roof with its numbers (labels on the lines would overlap)
        label = f"{gpu_name}: {sig(peak / 1e9)} GFLOP/s, {sig(bandwidth / 1e9)} GB/s" if several else None
        ax.plot(x, np.minimum(peak, x * bandwidth) / 1e9, color="#404040", linewidth=2.0, linestyle=style,
                label=label)
        if not several:
            ax.annotate(f"peak FP32 {sig(peak / 1e9)} GFLOP/s", (high, peak / 1e9), ha="right", va="bottom",
                        fontsize=9)
            ax.annotate(f"DRAM {sig(bandwidth / 1e9)} GB/s", (low * 1.3, low * 1.3 * bandwidth / 1e9), rotation=0,
                        ha="left", va="bottom", fontsize=9)
        ax.axvline(ridge, color="#BBBBBB", linestyle=":", linewidth=1.0)
    for point in placed:
        share = point.share if point.share == point.share else 0.1
        ax.scatter([point.intensity], [point.achieved / 1e9], s=40 + 600 * share, alpha=0.75,
                   color="#D62728" if point.top else "#1F77B4", edgecolor="black", linewidth=0.5, zorder=3)
        ax.annotate(f"G{point.group + 1}", (point.intensity, point.achieved / 1e9), textcoords="offset points",
                    xytext=(6, 4), fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("achieved GFLOP/s")
    title = f"Roofline - {', '.join(roofs)}"
    if not placed:
        title += " (no group has FLOP counters, DRAM bytes and a time)"
    ax.set_title(title, fontsize=11)
    if several:
        ax.legend(loc="lower right", fontsize=8)
    minor_log_marks(ax)
    _log_axes_ticks(ax, ROOFLINE_TICKS)  # 0.1, 1, 1,000 as on the accuracy figure (no math text to typeset)
    fixed_layout(fig, [ax], 1, 1)
    if _log_axes_ticks(ax, ROOFLINE_TICKS):  # other ticks at the final size
        fixed_layout(fig, [ax], 1, 1)
    return fig


# ---- report figures ---------------------------------------------------------------

@dataclass(frozen=True)
class ReportFigure:
    """One PNG a report embeds or links: a short file-name key, a caption and the bytes."""

    key: str
    caption: str
    png: bytes
    width_px: int
    height_px: int


@dataclass(frozen=True)
class FigureOrder:
    """One report figure to draw: its key and caption, and the data (``AccuracyData``, the Transit panels
    with their title, or ``RooflineData``) that ``draw_order`` turns into the PNG."""

    key: str
    caption: str
    data: Any
    dpi: int = 110


# How the report figures are drawn (``draw_order``), chosen for a small report's wall time, which its
# figures set: text without hinting (FreeType's autohinter, run on every glyph drawn, was 15% of the
# Transit figure's drawing; unhinted antialiased text at 110 dpi reads the same), and PNGs deflated at
# zlib level 3 instead of 6 (the same pixels, 30% less encoding time, files within 10% of the size).
REPORT_RC = {"text.hinting": "no_hinting"}
REPORT_PNG_LEVEL = 3


def draw_order(order: FigureOrder) -> ReportFigure:
    """The PNG of one report figure (the same function in this process and in the figure worker)."""
    from matplotlib import rc_context

    data = order.data
    with rc_context(REPORT_RC):  # the layout's text metrics and the drawing alike
        if isinstance(data, AccuracyData):
            fig = draw_accuracy(data)
        elif isinstance(data, RooflineData):
            fig = draw_roofline(data)
        else:
            panels, suptitle = data
            fig = transit_figure(panels, suptitle=suptitle)
        png = figure_bytes(fig, dpi=order.dpi, png_level=REPORT_PNG_LEVEL)
    width, height = fig.get_size_inches()
    return ReportFigure(order.key, order.caption, png, int(width * order.dpi), int(height * order.dpi))


def warm_up_drawing() -> None:
    """Draw and encode one small figure that uses what the report figures use (lines, markers, a
    scatter, a band, plain ticks on linear and log axes with the minor marks, an annotation with its
    box and arrow, a top scale, legends, the fixed layout), at a low resolution, and throw it away:
    matplotlib's set-up on a first draw (caches, lazily built objects) is then done before a report's
    figures come (figure_worker)."""
    from matplotlib import rc_context

    from nvperf_bridge.reports.figure_layout import fixed_layout, minor_log_marks, top_scale

    with rc_context(REPORT_RC):
        fig = new_figure(2.0, 2.0, layout=None)
        ax = fig.add_subplot(1, 2, 1)
        ax.plot([0.0, 1.0], [0.0, 1.0], linewidth=2.0, label="a")
        ax.plot([0.5], [0.5], marker="o", markersize=8)
        ax.scatter([0.2, 0.3], [0.2, 0.3], s=20, marker="s", edgecolors="white", linewidths=0.4, label="b")
        ax.annotate("k*\nf", xy=(0.5, 0.5), xytext=(5, 5), textcoords="offset points", fontsize=9,
                    bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "edgecolor": "#999999", "alpha": 0.9},
                    arrowprops={"arrowstyle": "-", "linewidth": 0.8})
        top_scale(ax, [0.5], ["1"], "x", color="#d62728", fontsize=8, title_fontsize=9)
        ax.set_title("t\nu", fontsize=10.5)
        ax.set_xlabel("k", fontsize=10)
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        _transit_axis_ticks(ax)
        ax.legend(fontsize=8)
        log_ax = fig.add_subplot(1, 2, 2)
        log_ax.fill_between([1.0, 10.0], [0.5, 5.0], [2.0, 20.0], alpha=0.12, linewidth=0)
        log_ax.set_xscale("log")
        log_ax.set_yscale("log")
        minor_log_marks(log_ax, grid={"color": "#f0f0f0", "linewidth": 0.4})
        _log_axes_ticks(log_ax, ACCURACY_TICKS)
        legend = fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncols=2, fontsize=9,
                            frameon=False)
        fixed_layout(fig, [ax, log_ax], 1, 2, legend=legend)
        figure_bytes(fig, dpi=30, png_level=REPORT_PNG_LEVEL)


def sig(value: float) -> str:
    """A number in a figure's text: three significant digits, as the reports write it."""
    return format_number(float(value))


__all__ = [
    "AccuracyData", "AccuracySeries", "FigureOrder", "MAX_SCATTER_POINTS", "MODEL_STYLES", "ReportFigure",
    "RooflineData", "RooflinePoint", "TransitCurves", "draw_accuracy", "draw_order", "draw_roofline",
    "figure_bytes", "new_figure", "plain_log_label", "sig", "transit_figure", "transit_top",
    "warm_up_drawing",
]

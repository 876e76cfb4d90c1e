"""Fixed figure layouts, computed once from the text each figure carries.

Matplotlib's constrained layout finds the margins by laying out every tick label
of every axes, twice per draw, and an axes title finds its height the same way;
on a small report that was about half the time of its three figures. Here the
margins come from the few strings the figure will draw (tick labels from the
axes' own locators and formatters, labels, titles, the legend), measured with
the Agg renderer's own text metrics, and the axes are placed once with
``subplots_adjust``. Minor ticks of log axes, 60-odd full tick objects per axis,
become one line of tick marks (and one of grid lines where asked).

The figures in ``figures.py`` call ``fixed_layout`` last, once everything is on
them, so the layout sees the final texts and limits.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

POINT = 1.0 / 72.0  # inches per point
OUTER_PAD = 6 * POINT  # blank border around the figure
LINE_SPACING = 1.2  # matplotlib's default line spacing, in font sizes

# Inches each axes' top scale (``top_scale``) takes above its box, for ``axes_margins``.
_TOP_SCALES: "weakref.WeakKeyDictionary[Axes, float]" = weakref.WeakKeyDictionary()
# Per axes and axis ('x', 'y'), its plain ticks (``plain_ticks``): inches they take beside the box, inches
# the last label stands out to the right (x), and their artists (replaced when drawn again).
_PLAIN_TICKS: "weakref.WeakKeyDictionary[Axes, dict[str, tuple[float, float, list[Any]]]]" = \
    weakref.WeakKeyDictionary()


def _renderer(dpi: float) -> Any:
    """A 1 x 1 pixel Agg renderer: its text metrics are the ones the saved figure uses, at no drawing cost.
    One per hinting setting: matplotlib caches text metrics per renderer, not per hinting, so a text
    measured hinted would otherwise be reused unhinted (``figure_draw.REPORT_RC``)."""
    from matplotlib import rcParams

    return _renderer_for(dpi, str(rcParams["text.hinting"]))


@lru_cache(maxsize=8)
def _renderer_for(dpi: float, _hinting: str) -> Any:
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(1, 1, dpi)


def text_inches(text: str, fontsize: float, dpi: float = 100.0) -> tuple[float, float]:
    """Width and height in inches of ``text`` (several lines allowed; math text as matplotlib draws it)."""
    from matplotlib import cbook
    from matplotlib.font_manager import FontProperties

    if not text:
        return 0.0, 0.0
    renderer = _renderer(dpi)
    prop = FontProperties(size=fontsize)
    lines = text.split("\n")
    width = 0.0
    for line in lines:
        w, _h, _d = renderer.get_text_width_height_descent(line, prop, ismath=cbook.is_math_text(line))
        width = max(width, w / dpi)
    return width, len(lines) * fontsize * LINE_SPACING * POINT


def _tick_labels(axis: Any) -> list[str]:
    """The major tick labels ``axis`` will draw: its locator's ticks inside the view, through its formatter."""
    low, high = sorted(axis.get_view_interval())
    locs = np.asarray(axis.get_majorticklocs(), dtype=float)
    labels = axis.get_major_formatter().format_ticks(locs)
    span = (high - low) * 1e-9
    return [text for loc, text in zip(locs, labels) if low - span <= loc <= high + span and text]


def _tick_fontsize(axis: Any) -> float:
    """The font size of ``axis``'s tick labels (its first tick; that tick is reused when drawn)."""
    return float(axis.get_major_ticks(1)[0].label1.get_fontsize())


def _tick_extent(axis: Any, along: str) -> float:
    """Inches the ticks and tick labels of ``axis`` take beside the axes: tick, pad, label width ('x'
    along means a horizontal axis, so label height counts) or 0 when it draws no labels."""
    from matplotlib import rcParams

    labels = _tick_labels(axis)
    if not labels:
        return 0.0
    size = _tick_fontsize(axis)
    key = "xtick" if along == "x" else "ytick"
    base = (rcParams[f"{key}.major.size"] + rcParams[f"{key}.major.pad"]) * POINT
    if along == "x":
        return base + max(text_inches(t, size)[1] for t in labels)
    return base + max(text_inches(t, size)[0] for t in labels)


def _label_extent(axis: Any) -> float:
    """Inches the axis label takes across the axis (its line height and pad), 0 when it has none."""
    text = axis.label.get_text()
    if not text:
        return 0.0
    return text_inches(text, axis.label.get_fontsize())[1] + axis.labelpad * POINT


@dataclass
class Margins:
    """Inches the decorations of one axes take on each side of its box."""

    left: float = 0.0
    right: float = 0.0
    bottom: float = 0.0
    top: float = 0.0
    above: float = 0.0  # of ``top``, what a second scale on top (``top_scale``) takes (the title goes above it)


def axes_margins(ax: "Axes") -> Margins:
    """What ``ax`` draws outside its box: bottom x ticks and label, left y ticks and label, the title and
    a second scale on top (``top_scale``: the title is then placed above it, once, instead of matplotlib
    measuring every tick label for it at each draw)."""
    from matplotlib import rcParams

    margins = Margins()
    plain = _PLAIN_TICKS.get(ax, {})  # ticks drawn as plain artists (``plain_ticks``): measured when made
    margins.bottom = (plain["x"][0] if "x" in plain else _tick_extent(ax.xaxis, "x")) + _label_extent(ax.xaxis)
    margins.left = (plain["y"][0] if "y" in plain else _tick_extent(ax.yaxis, "y")) + _label_extent(ax.yaxis)
    top_axes = _TOP_SCALES.get(ax, 0.0)  # a second scale along the top (``top_scale``)
    title = ax.title.get_text()
    title_height = text_inches(title, ax.title.get_fontsize())[1] + rcParams["axes.titlepad"] * POINT if title \
        else 0.0
    margins.above = top_axes
    margins.top = top_axes + title_height
    labels = _tick_labels(ax.xaxis)
    if "x" in plain:
        margins.right = plain["x"][1]
    elif labels:  # the last x tick label may stand half outside the box
        margins.right = text_inches(labels[-1], _tick_fontsize(ax.xaxis))[0] / 2
    return margins


def fixed_layout(fig: "Figure", axes: Sequence["Axes"], rows: int, columns: int, *, legend: Any = None,
                 suptitle: Any = None) -> None:
    """Place the ``rows`` x ``columns`` grid of ``axes`` (made with ``add_subplot``) so that every
    tick label, label and title fits, with ``legend`` (a figure legend made with loc="lower center")
    centred along the bottom and ``suptitle`` (the figure's) along the top. Each title is set again at
    its final height with its font size (our titles set nothing else), so that matplotlib does not
    measure the tick labels to place it at every draw."""
    width, height = (float(v) for v in fig.get_size_inches())
    each = [axes_margins(ax) for ax in axes]
    left = max(m.left for m in each)
    right = max(m.right for m in each)
    bottom = max(m.bottom for m in each)
    top = max(m.top for m in each)
    legend_height = 0.0
    if legend is not None:
        legend_height = legend.get_window_extent(_renderer(fig.dpi)).height / fig.dpi
        legend.set_bbox_to_anchor((0.5, OUTER_PAD / height), transform=fig.transFigure)
    title_height = 0.0
    if suptitle is not None and suptitle.get_text():
        title_height = text_inches(suptitle.get_text(), suptitle.get_fontsize())[1] + OUTER_PAD
        suptitle.set_y(1.0 - OUTER_PAD / height)
        suptitle.set_verticalalignment("top")
    outer_bottom = OUTER_PAD + legend_height + (OUTER_PAD if legend is not None else 0.0) + bottom
    outer_top = OUTER_PAD + title_height + top
    outer_left = OUTER_PAD + left
    outer_right = OUTER_PAD + right
    gap_w = left + right + OUTER_PAD  # between panels: one panel's right side, the next one's left
    gap_h = top + bottom + OUTER_PAD
    box_w = (width - outer_left - outer_right - gap_w * (columns - 1)) / columns
    box_h = (height - outer_bottom - outer_top - gap_h * (rows - 1)) / rows
    if box_w <= 0.2 or box_h <= 0.2:  # labels longer than the figure: keep matplotlib's default placement
        return
    fig.subplots_adjust(left=outer_left / width, right=1 - outer_right / width, bottom=outer_bottom / height,
                        top=1 - outer_top / height, wspace=gap_w / box_w, hspace=gap_h / box_h)
    for ax, margins in zip(axes, each):
        # a title placed by hand stays where it is at draw time (no measuring pass of its own)
        ax.set_title(ax.title.get_text(), fontsize=ax.title.get_fontsize(), y=1.0 + margins.above / box_h)


def top_scale(ax: "Axes", positions: Sequence[float], labels: Sequence[str], title: str, *, color: str,
              fontsize: float, title_fontsize: float) -> None:
    """A second scale along the top of ``ax``: tick marks at ``positions`` (data x) labelled ``labels``,
    and ``title`` above them, in ``color``; ``axes_margins`` then leaves room for it.

    What ``secondary_xaxis`` shows, drawn as plain artists: one line of tick marks and one text per
    label (a secondary axis is a second Axes whose locator, transforms and tick objects are worked out
    again at every draw; on the Transit figure it was a fifth of the drawing). Looks like a major
    x axis on top: the rcParams' tick length, width and pad, the axis label pad."""
    from matplotlib import rcParams
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKUP
    from matplotlib.text import Text
    from matplotlib.transforms import offset_copy

    fig = ax.get_figure()
    size, pad = rcParams["xtick.major.size"], rcParams["xtick.major.pad"]
    along_top = ax.get_xaxis_transform()  # x in data, y in axes fraction
    positions = np.asarray(positions, dtype=float)
    if positions.size:
        ax.add_artist(Line2D(positions, np.ones_like(positions), linestyle="none", marker=TICKUP, markersize=size,
                             markeredgewidth=rcParams["xtick.major.width"], color=color, transform=along_top,
                             clip_on=False, zorder=2.5, label="_top scale ticks"))
    at_labels = offset_copy(along_top, fig, y=size + pad, units="points")
    for position, label in zip(positions, labels):
        ax.add_artist(Text(position, 1.0, label, color=color, fontsize=fontsize, ha="center", va="bottom",
                           transform=at_labels, clip_on=False, gid="top scale label"))
    label_height = fontsize * LINE_SPACING if labels else 0.0  # points
    labelpad = rcParams["axes.labelpad"]
    ax.add_artist(Text(0.5, 1.0, title, color=color, fontsize=title_fontsize, ha="center", va="bottom",
                       transform=offset_copy(ax.transAxes, fig, y=size + pad + label_height + labelpad,
                                             units="points"), clip_on=False, gid="top scale title"))
    _TOP_SCALES[ax] = ((size + pad + label_height + labelpad) * POINT
                       + (text_inches(title, title_fontsize)[1] if title else 0.0))


def plain_ticks(ax: "Axes", name: str, values: Sequence[float], labels: Sequence[str], *, fontsize: float,
                grid: dict[str, Any]) -> None:
    """The major ticks of ``ax``'s linear ``name`` axis ('x' or 'y') at fixed ``values`` (inside the
    limits) labelled ``labels``, drawn as plain artists: one line of tick marks, one of grid lines
    (``grid``: their style) and one text per label; the axis label is placed beyond them, and
    ``axes_margins`` leaves room for them. Called again for the same axis, it replaces them.

    The same marks, lines and labels as matplotlib's ticks in the default style, without a tick object
    (two lines and two texts, each set up and drawn apart) per value: on the Transit figure, three
    panels of 8-9 ticks a side, that was a sixth of the drawing."""
    from matplotlib import rcParams
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKDOWN, TICKLEFT
    from matplotlib.text import Text
    from matplotlib.ticker import NullLocator
    from matplotlib.transforms import offset_copy

    fig = ax.get_figure()
    drawn = _PLAIN_TICKS.setdefault(ax, {})
    for artist in drawn.pop(name, (0.0, 0.0, []))[2]:
        artist.remove()
    axis = ax.xaxis if name == "x" else ax.yaxis
    axis.set_major_locator(NullLocator())
    axis.set_minor_locator(NullLocator())
    values = np.asarray(values, dtype=float)
    size, pad = rcParams[f"{name}tick.major.size"], rcParams[f"{name}tick.major.pad"]
    transform = ax.get_xaxis_transform() if name == "x" else ax.get_yaxis_transform()
    across = np.zeros_like(values)
    artists = [Line2D(*((values, across) if name == "x" else (across, values)), linestyle="none",
                      marker=TICKDOWN if name == "x" else TICKLEFT, markersize=size,
                      markeredgewidth=rcParams[f"{name}tick.major.width"], color=rcParams[f"{name}tick.color"],
                      transform=transform, clip_on=False, zorder=1.5, label=f"_{name} ticks")]
    ends = np.repeat(values, 3)
    ends[2::3] = np.nan  # a break between grid lines
    span = np.tile([0.0, 1.0, np.nan], values.size)
    artists.append(Line2D(*((ends, span) if name == "x" else (span, ends)), transform=transform, zorder=1.5,
                          label=f"_{name} grid", **grid))
    shift = size + pad  # points from the box to the labels, as matplotlib's tick labels
    labels = list(labels)
    if name == "x":
        place = offset_copy(transform, fig, y=-shift, units="points")
        artists += [Text(value, 0.0, label, fontsize=fontsize, ha="center", va="top", transform=place, clip_on=False,
                         zorder=1.5, gid=f"{name} tick label") for value, label in zip(values, labels)]
        extent = shift * POINT + (text_inches("0", fontsize)[1] if labels else 0.0)
    else:
        place = offset_copy(transform, fig, x=-shift, units="points")
        artists += [Text(0.0, value, label, fontsize=fontsize, ha="right", va="center_baseline", transform=place,
                         clip_on=False, zorder=1.5, gid=f"{name} tick label") for value, label in zip(values, labels)]
        extent = shift * POINT + max((text_inches(t, fontsize)[0] for t in labels), default=0.0)
    for artist in artists:
        ax.add_artist(artist)
    # the axis label beyond the tick labels, with matplotlib's label pad (placed once, not measured at draw)
    beyond = extent + rcParams["axes.labelpad"] * POINT
    if name == "x":
        axis.set_label_coords(0.5, 0.0, transform=offset_copy(ax.transAxes, fig, y=-beyond, units="inches"))
    else:
        axis.set_label_coords(0.0, 0.5, transform=offset_copy(ax.transAxes, fig, x=-beyond, units="inches"))
    right = text_inches(labels[-1], fontsize)[0] / 2 if name == "x" and labels else 0.0
    drawn[name] = (extent, right, artists)


def auto_tick_count(ax: "Axes", name: str, fontsize: float, least: int = 1) -> int:
    """``Axis.get_tick_space`` of ``ax``'s ``name`` axis at its current size (its box as drawn, after a
    fixed aspect), which matplotlib's default locators take as their most intervals (linear, at least
    ``least``=1) or ticks (log, ``least``=2): a label every 3 font sizes along x, 2 along y; at most 9."""
    ax.apply_aspect()
    box = ax.get_position(original=False)
    width, height = (float(v) for v in ax.get_figure().get_size_inches())
    length = (box.width * width if name == "x" else box.height * height) * 72.0
    return int(np.clip(np.floor(length / (fontsize * (3 if name == "x" else 2))), least, 9))


def minor_log_marks(ax: "Axes", *, grid: dict[str, Any] | None = None) -> None:
    """Replace the minor ticks of ``ax``'s log axes by one line of tick marks per axis (and one of grid
    lines when ``grid`` gives their style): the same marks, without a tick object per mark. Call it
    after the limits are final."""
    from matplotlib import rcParams
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKDOWN, TICKLEFT
    from matplotlib.ticker import LogLocator, NullLocator

    for axis, name, marker in ((ax.xaxis, "x", TICKDOWN), (ax.yaxis, "y", TICKLEFT)):
        if axis.get_scale() != "log":
            continue
        low, high = sorted(axis.get_view_interval())
        values = LogLocator(base=10.0, subs="auto").tick_values(low, high)
        values = values[(values >= low) & (values <= high)]
        axis.set_minor_locator(NullLocator())
        if not values.size:
            continue
        across = np.zeros_like(values)
        if name == "x":
            transform, xy = ax.get_xaxis_transform(), (values, across)
        else:
            transform, xy = ax.get_yaxis_transform(), (across, values)
        size = rcParams[f"{name}tick.minor.size"]
        ax.add_artist(Line2D(*xy, linestyle="none", marker=marker, markersize=size,
                             markeredgewidth=rcParams[f"{name}tick.minor.width"], color=rcParams[f"{name}tick.color"],
                             transform=transform, clip_on=False, zorder=2.5, label="_minor ticks"))
        if grid is not None:
            ends = np.repeat(values, 3)
            ends[2::3] = np.nan  # a break between grid lines
            span = np.tile([0.0, 1.0, np.nan], values.size)
            lines = (ends, span) if name == "x" else (span, ends)
            ax.add_artist(Line2D(*lines, transform=transform, zorder=1.5, label="_minor grid", **grid))

"""The report figures' fixed layout (reports/figure_layout.py): every text a reviewer reads lies inside
the figure, and nothing covers anything else (legend, tick labels, titles, the Transit figure's top axis)."""

from __future__ import annotations

from pathlib import Path

import pytest
from reports_fakes import make_analysis

from nvperf_bridge.reports.figure_layout import text_inches
from nvperf_bridge.reports.figures import accuracy_figure, report_figures, review_roofline_figure, \
    transit_report_figure

DEMO = Path(__file__).resolve().parent / "fixtures" / "reports" / "demo_gtx280.yaml"
MAGUS_PAIR = ("magus__metrics_rodinia_lud.csv", "magus__traces_rodinia_lud.csv")


def _all_axes(fig):
    """The figure's axes and their child axes (a secondary axis, if any)."""
    return [a for ax in fig.axes for a in (ax, *ax.child_axes)]


def _top_scale(ax, part):
    """The texts of ``ax``'s top scale (the Transit figure's x = n - k axis, ``figure_layout.top_scale``):
    part 'label' its tick labels, 'title' its title."""
    return [t for t in ax.texts if t.get_gid() == f"top scale {part}"]


def _tick_labels(fig, renderer):
    """(text, extent) of the tick labels drawn (those of ticks inside the view), and the ids of all."""
    drawn, every = [], set()
    for ax in _all_axes(fig):
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                for label in (tick.label1, tick.label2):
                    every.add(id(label))
                    if label.get_visible() and label.get_text() and low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                        drawn.append((label.get_text(), label.get_window_extent(renderer)))
        # tick labels drawn as plain texts: the top scale's, and those of ticks fixed as plain artists
        for label in _top_scale(ax, "label") + [t for t in ax.texts if str(t.get_gid()).endswith("tick label")]:
            every.add(id(label))
            drawn.append((label.get_text(), label.get_window_extent(renderer)))
    return drawn, every


def _check_layout(fig) -> None:
    """Every text inside the figure; no title, axis label, legend or figure title covers another or a
    tick label."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    ticks, tick_ids = _tick_labels(fig, renderer)
    texts = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.findobj(Text)
             if id(t) not in tick_ids and t.get_visible() and t.get_text()]
    assert texts and ticks
    for text, extent in texts + ticks:
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, f"{text!r} leaves the figure sideways"
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, f"{text!r} leaves the figure at top/bottom"
    axes = _all_axes(fig)
    framed = [(ax.title.get_text(), ax.title.get_window_extent(renderer)) for ax in axes if ax.title.get_text()]
    framed += [(a.label.get_text(), a.label.get_window_extent(renderer))
               for ax in axes for a in (ax.xaxis, ax.yaxis) if a.label.get_text()]
    framed += [(t.get_text(), t.get_window_extent(renderer)) for ax in axes for t in _top_scale(ax, "title")]
    framed += [("legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    if fig._suptitle is not None:
        framed.append(("figure title", fig._suptitle.get_window_extent(renderer)))
    for name, extent in framed:
        for other, other_extent in ticks + framed:
            if other_extent is not extent:
                assert not extent.overlaps(other_extent), f"{name!r} covers {other!r}"
    for ax in axes:  # labels on the data (the Transit equilibrium, the roofline's groups) stay in their axes
        for text in ax.texts:
            if str(text.get_gid()).endswith(("top scale label", "top scale title", "tick label")):
                continue  # tick labels and the top scale's title: outside the axes by design (checked above)
            extent = text.get_window_extent(renderer)
            assert ax.bbox.x0 - 1 <= extent.x0 and extent.x1 <= ax.bbox.x1 + 1, f"{text.get_text()!r} leaves its axes"
            assert ax.bbox.y0 - 1 <= extent.y0 and extent.y1 <= ax.bbox.y1 + 1, f"{text.get_text()!r} leaves its axes"


def test_text_inches_measures_like_the_drawn_text() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3), dpi=100)
    FigureCanvasAgg(fig)
    text = fig.text(0.1, 0.5, "Measured kernel time (µs)", fontsize=11)
    fig.canvas.draw()
    drawn = text.get_window_extent(fig.canvas.get_renderer())
    width, height = text_inches("Measured kernel time (µs)", 11)
    assert width * 100 == pytest.approx(drawn.width, abs=2)
    assert height * 100 == pytest.approx(drawn.height, rel=0.25)
    assert text_inches("two\nlines", 10)[1] == pytest.approx(2 * text_inches("one", 10)[1])


def test_accuracy_figure_fits_and_keeps_its_minor_grid() -> None:
    fig = accuracy_figure(make_analysis())
    _check_layout(fig)
    ax = fig.axes[0]
    assert fig.get_layout_engine() is None, "placed once, not by constrained layout at each draw"
    minor = [line for line in ax.get_lines() if line.get_label() == "_minor grid"]
    assert len(minor) == 2, "one line of minor grid lines per log axis"


def test_transit_figure_title_sits_above_the_top_axis() -> None:
    from nvperf_bridge.analysis import analyze_files

    fig = transit_report_figure(analyze_files([DEMO], model_ids=["transit", "roofline"]), count=3)
    _check_layout(fig)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        top_texts = _top_scale(ax, "label") + _top_scale(ax, "title")
        assert _top_scale(ax, "title") and len(_top_scale(ax, "label")) >= 2, "each panel has its x = n - k scale"
        top = max(text.get_window_extent(renderer).y1 for text in top_texts)
        assert ax.title.get_window_extent(renderer).y0 >= top - 1, "the title covers the top axis"
        labels = _top_scale(ax, "label")
        assert min(t.get_window_extent(renderer).y0 for t in labels) >= ax.bbox.y1, "top tick labels above the box"


def test_transit_ticks_are_where_matplotlib_would_put_them(realdata_dir: Path) -> None:
    """The Transit panels' ticks, drawn as plain artists at fixed values, are the values matplotlib's
    default locator picks for each panel at its final size (the magus lud pair: one panel's throughput
    axis gets fewer ticks once the layout has shrunk it), and each x = n - k tick stands at k = n - x."""
    from matplotlib.ticker import AutoLocator

    from nvperf_bridge.analysis import analyze_files

    fig = transit_report_figure(analyze_files([realdata_dir / "magus" / name for name in MAGUS_PAIR]))
    for ax in fig.axes:
        for name, axis, (low, high) in (("x", ax.xaxis, ax.get_xlim()), ("y", ax.yaxis, ax.get_ylim())):
            axis.set_tick_params(labelsize=9)  # the panels' tick label size, which the locator's count uses
            locator = AutoLocator()
            locator.set_axis(axis)
            expected = [v for v in locator.tick_values(low, high) if low - 1e-9 * high <= v <= high * (1 + 1e-9)]
            drawn = [t for t in ax.texts if t.get_gid() == f"{name} tick label"]
            where = [t.get_position()[0 if name == "x" else 1] for t in drawn]
            assert where == pytest.approx(expected), f"{ax.get_title()!r}: {name} ticks"
            assert [t.get_text() for t in drawn] == axis.get_major_formatter().format_ticks(expected)
        n = ax.get_xlim()[1]  # the panel spans k = 0..n
        for text in _top_scale(ax, "label"):
            assert n - float(text.get_text()) == pytest.approx(text.get_position()[0])


def test_log_ticks_are_where_matplotlib_would_put_them(realdata_dir: Path) -> None:
    """The accuracy figure's and the roofline's decade ticks, drawn as plain artists, are the values
    matplotlib's LogLocator picks on each axis at its final size, labelled 0.001, 1, 1,000."""
    from matplotlib.ticker import LogLocator

    from nvperf_bridge.analysis import analyze_files
    from nvperf_bridge.reports.figure_draw import plain_log_label

    analysis = analyze_files([realdata_dir / "magus" / name for name in MAGUS_PAIR])
    for fig in (accuracy_figure(analysis), review_roofline_figure(analysis)):
        ax = fig.axes[0]
        ax.apply_aspect()
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            low, high = sorted(axis.get_view_interval())
            axis.set_tick_params(labelsize=10)  # the figures' tick label size, which the locator's count uses
            locator = LogLocator(base=10.0)
            locator.set_axis(axis)
            expected = [v for v in locator.tick_values(low, high) if low * (1 - 1e-9) <= v <= high * (1 + 1e-9)]
            drawn = [t for t in ax.texts if t.get_gid() == f"{name} tick label"]
            assert len(expected) >= 3
            assert [t.get_position()[0 if name == "x" else 1] for t in drawn] == pytest.approx(expected)
            assert [t.get_text() for t in drawn] == [plain_log_label(v) for v in expected]


def test_real_report_figures_fit(realdata_dir: Path) -> None:
    """The three figures of a real nvprof pair (magus rodinia lud): every text inside, nothing covered."""
    from nvperf_bridge.analysis import analyze_files

    analysis = analyze_files([realdata_dir / "magus" / name for name in MAGUS_PAIR])
    keys = [figure.key for figure in report_figures(analysis)]
    assert keys == ["measured-vs-predicted", "transit", "roofline"]
    for fig in (accuracy_figure(analysis), transit_report_figure(analysis), review_roofline_figure(analysis)):
        _check_layout(fig)


def test_real_transit_panels_keep_their_labels_inside(realdata_dir: Path) -> None:
    """Each kernel of a real ncu details file as ``plot transit`` draws it (one panel, legend inside):
    the equilibrium's label is placed on the side with room (cuda_compute_flux's is near the right edge)."""
    from nvperf_bridge.analysis import analyze_files
    from nvperf_bridge.reports.figures import transit_curves_for, transit_figure

    path = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    analysis = analyze_files([path], model_ids=["transit"])
    result = analysis.runs["transit"].result
    names = analysis.kernels["kernel"] if "kernel" in analysis.kernels.columns else analysis.kernels["kernel_name"]
    drawn = 0
    for _, rows in result.groupby(names.to_numpy()):
        curves = transit_curves_for(analysis, rows.index[0])
        if curves is not None:
            _check_layout(transit_figure([curves], columns=1, panel_size=(7.0, 5.0), suptitle="Transit figure"))
            drawn += 1
    assert drawn >= 2

"""Figures: measured vs predicted (log-log, y = x) and the Transit figure from the model's own curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from reports_fakes import make_analysis

from nvperf_bridge.reports import figures
from nvperf_bridge.reports.figures import (
    accuracy_figure,
    figure_bytes,
    report_figures,
    transit_curves_for,
    transit_report_figure,
)

DEMO = Path(__file__).resolve().parent / "fixtures" / "reports" / "demo_gtx280.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def demo():
    from nvperf_bridge.analysis import analyze_files

    return analyze_files([DEMO], model_ids=["transit", "roofline"])


def test_accuracy_figure_axes_units_and_identity_line() -> None:
    fig = accuracy_figure(make_analysis())
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "Measured kernel time (µs)"
    assert ax.get_ylabel() == "Predicted kernel time (µs)"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(label.startswith("alpha  (MAPE 20.0%, n=6)") for label in labels)
    assert "predicted = measured" in labels
    line = next(l for l in ax.get_lines() if l.get_label() == "predicted = measured")
    xs, ys = line.get_data()
    assert np.allclose(xs, ys)
    scatter = ax.collections[0].get_offsets()
    assert len(scatter) == 6, "alpha: every kernel with both times"
    assert figure_bytes(fig)[:8] == PNG_MAGIC


def test_accuracy_figure_thins_huge_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures, "MAX_SCATTER_POINTS", 10)
    fig = accuracy_figure(make_analysis(count=50))
    ax = fig.axes[0]
    assert len(ax.collections[0].get_offsets()) == 10
    assert "10 kernels per model drawn" in ax.get_title()


def test_transit_curves_come_from_the_model_and_match_its_equilibrium(demo) -> None:
    run = demo.runs["transit"]
    index = run.result.index[run.result["error"] == ""][0]
    curves = transit_curves_for(demo, index)
    assert curves is not None
    row = run.result.loc[index]
    assert curves.n == pytest.approx(float(row["n"]))
    assert curves.k_eq == pytest.approx(float(row["k"]), rel=1e-6)
    assert curves.throughput_eq == pytest.approx(float(row["MS_GBps"]), rel=1e-6)
    # f(k) and g(n - k) meet at the equilibrium point
    f_at = np.interp(curves.k_eq, curves.k, curves.f)
    g_at = np.interp(curves.k_eq, curves.k, curves.g)
    assert f_at == pytest.approx(curves.throughput_eq, rel=0.02)
    assert g_at == pytest.approx(curves.throughput_eq, rel=0.02)
    assert row["state"] in curves.state


def test_transit_report_figure_has_one_panel_per_top_kernel(demo) -> None:
    fig = transit_report_figure(demo, count=3)
    panels = [ax for ax in fig.axes if ax.get_xlabel().startswith("k: threads in the memory system")]
    assert len(panels) == 3
    ax = panels[0]
    assert ax.get_ylabel() == "throughput (GB/s per SM)"
    labels = [l.get_label() for l in ax.get_lines()]
    assert labels[:3] == ["f(k): memory system supply", "g(x), x = n - k: compute demand", "equilibrium f(k) = g(x)"]
    assert "matrixMul" in ax.get_title(), "the longest kernel comes first"


def test_report_figures_without_transit_or_measured_times() -> None:
    analysis = make_analysis()
    assert [f.key for f in report_figures(analysis)] == ["measured-vs-predicted"]
    analysis.kernels["duration_ns"] = float("nan")
    assert report_figures(analysis) == []


def test_transit_panels_show_the_kernels_with_the_most_time_not_launches_of_one(realdata_dir: Path) -> None:
    """The cfd page holds 100 launches of a few kernels, the 25 longest all cuda_compute_flux: the Transit
    figure shows one panel per kernel group, most GPU time first, each from the group's longest launch."""
    from nvperf_bridge.analysis import analyze_files
    from nvperf_bridge.reports.figures import transit_panels
    from nvperf_bridge.review.groups import kernel_groups

    path = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    if not path.exists():
        pytest.skip(f"{path} not found")
    analysis = analyze_files([path], gpu="v100-sxm2", model_ids=["transit"])
    found = transit_panels(analysis)
    assert found is not None
    titles = [panel.title for panel in found[0]]
    names = [title.split(" (")[0] for title in titles]
    assert len(names) == len(set(names)) >= 3, titles
    groups = kernel_groups(analysis.kernels)
    predicted = analysis.runs["transit"].result["error"] == ""
    expected = []
    for group in groups.table.index:  # most GPU time first; the groups transit predicted
        rows = groups.rows_of(group)
        rows = rows[predicted.loc[rows].to_numpy()]
        if len(rows):
            longest = analysis.kernels.loc[rows, "duration_ns"].idxmax()
            expected.append(figures.kernel_title(analysis, longest))
    assert titles == expected[:4]


def test_the_accuracy_figure_judges_the_kernels_the_accuracy_table_judges(realdata_dir: Path) -> None:
    """A prediction that read an input derived from the measured time (DRAM bytes = throughput x duration) is
    left out of the Accuracy table; the figure's points and legend leave out the same kernels. On the cfd
    page no model is judged on any kernel: no measured-vs-predicted figure (it quoted a 9.3% MAPE for transit
    there, on predictions that had seen the times). On the magus lud pair the legend is the table's."""
    from nvperf_bridge.analysis import analyze_files
    from nvperf_bridge.reports.common import format_percent
    from nvperf_bridge.reports.figures import accuracy_data, figure_orders

    cfd = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    pair = [realdata_dir / "magus" / name for name in ("magus__metrics_rodinia_lud.csv", "magus__traces_rodinia_lud.csv")]
    if not cfd.exists() or not all(p.exists() for p in pair):
        pytest.skip("realdata cfd page or magus lud pair not found")
    derived_only = analyze_files([cfd], gpu="v100-sxm2")
    assert (derived_only.accuracy()["n"] == 0).all()
    assert accuracy_data(derived_only).series == []
    assert "measured-vs-predicted" not in [order.key for order in figure_orders(derived_only)]

    analysis = analyze_files(pair)
    table = analysis.accuracy()
    judged = table[table["n"] > 0]
    assert len(judged) >= 3
    legends = [series.label for series in accuracy_data(analysis).series]
    assert legends == [f"{mid}  (MAPE {format_percent(float(row['mape']))}, n={int(row['n']):,})"
                       for mid, row in judged.iterrows()]

"""The figure worker draws a report's figures in a second process: the same PNGs, and the command
draws them itself whenever the worker cannot (figure_worker.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nvperf_bridge import cli
from nvperf_bridge.commands import analyze as analyze_module
from nvperf_bridge.reports import figure_worker
from nvperf_bridge.reports.figure_draw import draw_order
from nvperf_bridge.reports.figures import figure_orders, start_figures

PAIR = ("magus__metrics_rodinia_lud.csv", "magus__traces_rodinia_lud.csv")


@pytest.fixture(scope="module")
def pair() -> list[Path]:
    from conftest import REALDATA

    paths = [REALDATA / "magus" / name for name in PAIR]
    if not all(p.exists() for p in paths):
        pytest.skip("magus rodinia lud pair not found")
    return paths


@pytest.fixture(scope="module")
def analysis(pair: list[Path]):  # type: ignore[no-untyped-def]
    from nvperf_bridge.commands.analyze import build_analysis

    return build_analysis(pair, gpu=None, model_ids=[], plugin_files=[], model_data=[], option=[], profile_dirs=[],
                          keep_raw=False)


def test_the_worker_draws_the_pngs_this_process_draws(analysis) -> None:  # type: ignore[no-untyped-def]
    orders = figure_orders(analysis)
    assert [o.key for o in orders] == ["measured-vs-predicted", "transit", "roofline"]
    with figure_worker.FigureWorker.start() as worker:
        drawn = start_figures(analysis, worker).result()
    here = [draw_order(order) for order in orders]
    assert drawn == here  # keys, captions, sizes and every PNG byte


def test_a_worker_of_another_package_copy_is_not_used(analysis, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The worker checks it runs the command's own files; when it does not, it draws nothing and the
    command draws the figures itself."""
    monkeypatch.setattr(figure_worker, "_draw_module_file", lambda: "/elsewhere/figure_draw.py")
    with figure_worker.FigureWorker.start() as worker:
        pending = start_figures(analysis, worker)
        assert pending._ticket is not None and pending._ticket.result() is None
        figures = pending.result()
    assert [f.key for f in figures] == ["measured-vs-predicted", "transit", "roofline"]
    assert all(f.png.startswith(b"\x89PNG") for f in figures)


def test_the_worker_runs_openblas_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker only draws: its OpenBLAS starts one thread, whatever the command's own setting, so no pool
    spins on the core the command is using (blas_threads). The rest of its environment is the command's."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    monkeypatch.setenv("NVPERF_BRIDGE_TEST_MARK", "kept")
    environments: list[dict[str, str]] = []
    real_popen = figure_worker.subprocess.Popen

    def recording_popen(*args, **kwargs):  # type: ignore[no-untyped-def]
        environments.append(kwargs["env"])
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(figure_worker.subprocess, "Popen", recording_popen)
    with figure_worker.FigureWorker.start() as worker:
        assert worker is not None
    assert len(environments) == 1
    assert environments[0]["OPENBLAS_NUM_THREADS"] == "1" and environments[0]["NVPERF_BRIDGE_TEST_MARK"] == "kept"
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"  # the command's own setting is left as it was


def test_a_dead_worker_leaves_the_drawing_to_the_command(analysis) -> None:  # type: ignore[no-untyped-def]
    worker = figure_worker.FigureWorker.start()
    assert worker is not None
    worker._process.kill()
    worker._process.wait()
    try:
        figures = start_figures(analysis, worker).result()
    finally:
        worker.close()
    assert figures == [draw_order(order) for order in figure_orders(analysis)]


def test_analyze_writes_the_same_markdown_and_workbook_with_and_without_the_worker(
        pair: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[figure_worker.FigureWorker] = []
    real_start = analyze_module.start_figure_worker

    def recording_start(files: list[Path]) -> figure_worker.FigureWorker | None:
        worker = real_start(files)
        assert worker is not None  # small files: the worker is used
        started.append(worker)
        return worker

    monkeypatch.setattr(analyze_module, "start_figure_worker", recording_start)
    with_worker, without = tmp_path / "with", tmp_path / "without"
    with_worker.mkdir()
    without.mkdir()
    for folder in (with_worker,):
        assert cli.main(["analyze", *map(str, pair), "-o", str(folder / "r.md"), "-q"]) == 0
        assert cli.main(["analyze", *map(str, pair), "-o", str(folder / "r.xlsx"), "-q"]) == 0
    assert len(started) == 2 and all(w._process.poll() is not None for w in started)  # both ended
    monkeypatch.setattr(analyze_module, "start_figure_worker", lambda files: None)
    assert cli.main(["analyze", *map(str, pair), "-o", str(without / "r.md"), "-q"]) == 0
    assert cli.main(["analyze", *map(str, pair), "-o", str(without / "r.xlsx"), "-q"]) == 0
    for key in ("measured-vs-predicted", "transit", "roofline"):
        assert (with_worker / f"r-{key}.png").read_bytes() == (without / f"r-{key}.png").read_bytes()

    def stable(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("| Created |")]

    assert stable((with_worker / "r.md").read_text()) == stable((without / "r.md").read_text())
    import openpyxl

    first, second = (openpyxl.load_workbook(folder / "r.xlsx") for folder in (with_worker, without))
    assert first.sheetnames == second.sheetnames
    images = [[(img.width, img.height, img._data()) for img in book["Figures"]._images] for book in (first, second)]
    assert images[0] == images[1] and len(images[0]) == 3


def test_the_worker_ends_when_the_analysis_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[figure_worker.FigureWorker] = []
    real_start = analyze_module.start_figure_worker
    monkeypatch.setattr(analyze_module, "start_figure_worker",
                        lambda files: started.append(real_start(files)) or started[-1])
    bad = tmp_path / "bad.csv"
    bad.write_text("not,a,profile\n1,2,3\n")
    assert cli.main(["analyze", str(bad), "-o", str(tmp_path / "r.md"), "-q"]) == 1
    assert len(started) == 1 and started[0] is not None and started[0]._process.poll() is not None
    assert not (tmp_path / "r.md").exists()


def test_large_inputs_and_folders_start_no_worker_with_the_command(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Above discovery.IN_PROCESS_BYTES (and for a folder) no worker beside the models: its memory would add to
    theirs (the figures are drawn apart, after them)."""
    small = tmp_path / "a.csv"
    small.write_text("x\n")
    monkeypatch.setattr("nvperf_bridge.discovery.IN_PROCESS_BYTES", 1)
    assert analyze_module.start_figure_worker([small]) is None
    assert analyze_module.start_figure_worker([tmp_path]) is None


def test_figures_apart_are_the_figures_drawn_here(analysis, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A large report's figures come from a worker started after the models and ended before the text is
    made (matplotlib never loads in the command): the same files as drawing them in process."""
    from nvperf_bridge.reports.render import report_outputs

    apart = report_outputs(analysis, "md", tmp_path / "r.md", figures_apart=True)
    here = report_outputs(analysis, "md", tmp_path / "r.md")
    assert sorted(p.name for p in apart if p is not None) == ["r-measured-vs-predicted.png", "r-roofline.png",
                                                               "r-transit.png", "r.md"]
    assert {p: data for p, data in apart.items() if p.suffix == ".png"} == \
        {p: data for p, data in here.items() if p.suffix == ".png"}
    workbook_apart = b"".join(report_outputs(analysis, "xlsx", tmp_path / "r.xlsx", figures_apart=True)[
        tmp_path / "r.xlsx"])
    import io

    import openpyxl

    images = [img._data() for img in openpyxl.load_workbook(io.BytesIO(workbook_apart))["Figures"]._images]
    assert images == [f.png for f in (draw_order(o) for o in figure_orders(analysis))]

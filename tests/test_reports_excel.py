"""The review workbook, read back with openpyxl (and opened by LibreOffice when installed)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from openpyxl import load_workbook
from reports_fakes import LONG_NAME, make_analysis

from nvperf_bridge.reports import excel
from nvperf_bridge.reports.excel import render_workbook
from nvperf_bridge.reports.figures import report_figures


@pytest.fixture(scope="module")
def workbook_bytes() -> bytes:
    analysis = make_analysis()
    return render_workbook(analysis, report_figures(analysis))


@pytest.fixture
def wb(workbook_bytes: bytes):
    return load_workbook(io.BytesIO(workbook_bytes))


def _header(ws, row: int) -> list:
    return [c.value for c in ws[row]]


def _column(ws, title: str, header_row: int = 1) -> int:
    return _header(ws, header_row).index(title) + 1


def test_sheet_names_and_order(wb) -> None:
    assert wb.sheetnames == ["Kernel groups", "Summary", "Accuracy", "Charts", "Figures", "alpha", "beta", "gamma",
                             "Inputs", "GPU", "Notes"]


def test_summary_values_units_and_order(wb) -> None:
    ws = wb["Summary"]
    header = _header(ws, 1)
    # the review's answer right after the kernel: its group, the group's share, verdict and first action
    assert header[:8] == ["#", "Kernel ID", "Kernel", "Group", "Group share of GPU time", "Verdict", "First action",
                          "Measured (µs)"]
    assert "Invocations" not in header, "a column of ones says nothing"
    assert header[-1] == "Full kernel name"
    assert {"alpha predicted (µs)", "alpha error", "beta error", "alpha bottleneck", "Consensus bottleneck",
            "Models agreeing"} <= set(header)
    first = {h: c.value for h, c in zip(header, ws[2])}
    assert first["Kernel ID"] == "3", "longest kernel first"
    assert first["Measured (µs)"] == pytest.approx(2500.0)
    assert first["alpha predicted (µs)"] == pytest.approx(3000.0)
    assert first["alpha error"] == pytest.approx(0.2)
    assert first["beta error"] == pytest.approx(-0.5)
    assert first["Consensus bottleneck"] == "memory-bandwidth"
    assert first["Group"] == "G1" and first["Verdict"] == "memory-bandwidth"
    assert first["Group share of GPU time"] == pytest.approx(2500.0 / (2500 + 45 + 12 + 3.1 + 0.8 + 0.15))
    assert first["Kernel"] == "cutlass::Kernel" and first["Full kernel name"] == LONG_NAME
    assert ws.max_row == 1 + 7


def test_summary_finish(wb) -> None:
    ws = wb["Summary"]
    assert ws.freeze_panes == "D2", "header row and the #, id and name columns stay put"
    assert ws.auto_filter.ref == f"A1:{ws.cell(1, ws.max_column).column_letter}8"
    assert ws.cell(2, _column(ws, "Measured (µs)")).number_format == "#,##0.00"
    assert "%" in ws.cell(2, _column(ws, "alpha error")).number_format
    assert ws.column_dimensions["C"].width >= 16
    assert ws.row_dimensions[1].height >= 30, "wrapped headers get the room they need"
    rules = {str(cf.sqref): [r.type for r in cf.rules] for cf in ws.conditional_formatting}
    error_col = ws.cell(1, _column(ws, "alpha error")).column_letter
    assert any(error_col in ref and "expression" in types for ref, types in rules.items()), rules
    label_col = ws.cell(1, _column(ws, "Consensus bottleneck")).column_letter
    assert any(label_col in ref and "cellIs" in types for ref, types in rules.items()), rules
    verdict_col = ws.cell(1, _column(ws, "Verdict")).column_letter
    assert any(verdict_col in ref and "cellIs" in types for ref, types in rules.items()), rules
    assert ws.cell(1, 4).comment is not None, "headers explain themselves"


def test_formula_injection_is_stored_as_text(wb) -> None:
    for title in ("Summary", "Inputs", "alpha"):
        ws = wb[title]
        found = {}
        for row in ws.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and (cell.value[:1] in ("=", "+", "-", "@") or cell.value == "#N/A"):
                    found[cell.value] = cell
        assert '=HYPERLINK("http://x","click")' in found, title
        for value, cell in found.items():
            assert cell.data_type == "s", (title, value, cell.data_type)
            assert cell.quotePrefix, (title, value)
    assert {"=HYPERLINK(\"http://x\",\"click\")", "+1-2", "@sum", "#N/A"} <= {
        c.value for c in wb["Summary"]["C"]}
    state = [c for c in wb["alpha"]["I"] if c.value == "=cmd|' /C calc'!A0"]
    assert state and all(c.data_type == "s" for c in state)


def test_accuracy_sheet(wb) -> None:
    ws = wb["Accuracy"]
    header_row = next(r for r in range(1, 6) if ws.cell(r, 1).value == "Model")
    rows = {ws.cell(r, 1).value: [c.value for c in ws[r]] for r in range(header_row + 1, ws.max_row + 1)}
    header = _header(ws, header_row)
    alpha = dict(zip(header, rows["alpha"]))
    assert alpha["Kernels compared (n)"] == 6
    assert alpha["MAPE"] == pytest.approx(0.2)
    assert alpha["Mean accuracy (Luo-Suda)"] == pytest.approx(1 / 1.2)
    assert ws.cell(header_row + 1, header.index("MAPE") + 1).number_format == "0.0%"
    gamma = dict(zip(header, rows["gamma"]))
    assert gamma["Status"].startswith("failed:") and gamma["MAPE"] is None
    assert ws.freeze_panes == f"B{header_row + 1}"


def test_model_sheet_note_details_constants_and_reasons(wb) -> None:
    ws = wb["beta"]
    assert ws["A1"].value.startswith("beta 1.0: beta et al., Conf'09, Eq. (1)-(20)")
    header_row = next(r for r in range(1, 8) if ws.cell(r, 1).value == "#")
    header = _header(ws, header_row)
    for name in ("Predicted (µs)", "Error", "Bottleneck", "State", "MWP", "CWP", "Mem_L", "Reason (no prediction)",
                 "Constant", "Value", "Status", "Source"):
        assert name in header, name
    values = {(r, h): ws.cell(r, i + 1).value for r in range(header_row + 1, header_row + 8)
              for i, h in enumerate(header)}
    reasons = [values[(r, "Reason (no prediction)")] for r in range(header_row + 1, header_row + 8)]
    assert sum(1 for r in reasons if r and r.startswith("missing inst_executed")) == 2
    constants = {values[(r, "Constant")]: (values[(r, "Value")], values[(r, "Status")])
                 for r in range(header_row + 1, header_row + 4)}
    assert constants["Mem_LD"] == (420.0, "paper")
    assert constants["Departure_del_coal"] == (4.0, "default")
    assert ws.freeze_panes == f"D{header_row + 1}"
    assert ws.auto_filter.ref.startswith(f"A{header_row}:")
    failed = wb["gamma"]
    assert any("failed as a whole" in str(c.value) for c in failed["A"])


def test_inputs_sheet_has_units_and_raw_columns(wb) -> None:
    ws = wb["Inputs"]
    header_row = next(r for r in range(1, 6) if ws.cell(r, 1).value == "kernel_id")
    header = _header(ws, header_row)
    assert "duration_ns (ns)" in header and "dram_read_bytes (bytes)" in header
    assert "achieved_occupancy (fraction)" in header
    assert header[-1] == "smsp__pcsamp_sample_count", "raw counters come after the canonical columns"
    occupancy = ws.cell(header_row + 1, header.index("achieved_occupancy (fraction)") + 1)
    assert occupancy.number_format == "0.0%"
    assert ws.cell(header_row, header.index("duration_ns (ns)") + 1).comment is not None


def test_gpu_and_notes_sheets(wb) -> None:
    gpu = wb["GPU"]
    fields = {gpu.cell(r, 1).value: gpu.cell(r, 2).value for r in range(1, gpu.max_row + 1)}
    assert fields["sm_count"] == 30 and fields["id"] == "gtx280"
    statuses = {c.value for row in gpu.iter_rows() for c in row if c.value in ("paper", "default", "calibrated")}
    assert statuses == {"paper", "default", "calibrated"}
    notes = wb["Notes"]
    text = "\n".join(" | ".join(str(c.value) for c in row if c.value is not None) for row in notes.iter_rows())
    for expected in ("nvperf-bridge 9.9.9", "2025-01-31T12:00:00+00:00", "--gpu gtx280", "profile.csv", "ncu-raw",
                     "2 memcpy rows (not kernels)", "FAILED as a whole: ModelError: needs sm_cycles",
                     "model gamma produced no results"):
        assert expected in text, expected
    assert notes.freeze_panes == "A2" and notes.auto_filter.ref


def test_charts_and_images_are_present(wb) -> None:
    charts = wb["Charts"]._charts
    assert len(charts) == 2
    kinds = sorted(type(c).__name__ for c in charts)
    assert kinds == ["BarChart", "BarChart"]
    assert {c.grouping for c in charts} == {"clustered", "stacked"}
    images = wb["Figures"]._images
    assert len(images) == 1, "measured-vs-predicted scatter (the fake has no transit run)"


def test_large_input_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(excel, "LARGE_INPUT", 10)
    monkeypatch.setattr(excel, "MODEL_SHEET_ROWS", 5)
    analysis = make_analysis(count=40)
    wb = load_workbook(io.BytesIO(render_workbook(analysis, [])))
    summary = wb["Summary"]
    assert "then one row per other group (18 groups" in str(summary.cell(1, 1).value)
    header = [c.value for c in summary[2]]
    assert header[:4] == ["#", "Kernel ID", "Kernel", "Group"]
    rows = list(summary.iter_rows(min_row=3, values_only=True))
    assert len(rows) == 22 + 18, "the top groups' 22 kernels in full, then one row per tail group"
    assert [r[3] for r in rows] == [f"G{g}" for g in range(1, 41)]
    assert all(r[0] is not None for r in rows[:22]) and all(r[0] is None for r in rows[22:])
    assert [r[1] for r in rows[22:]] == ["1 launch"] * 18
    # a tail row's numbers: its group's share and mean time per launch; no per-kernel prediction or error
    measured = next(i for i, h in enumerate(header) if str(h).startswith("Measured ("))
    share = header.index("Group share of GPU time")
    predicted = [i for i, h in enumerate(header) if " predicted (" in str(h) or str(h).endswith(" error")]
    assert predicted and all(isinstance(r[measured], float) and r[measured] > 0 for r in rows)
    assert all(0 < r[share] < 1 for r in rows)
    assert all(r[i] is None for r in rows[22:] for i in predicted)
    assert all(r[i] is not None for r in rows[:22] for i in predicted)
    alpha = wb["alpha"]
    header_row = next(r for r in range(1, 8) if alpha.cell(r, 1).value == "#")
    assert alpha.max_row == header_row + 5
    assert any("The 5 longest of 40 kernels" in str(alpha.cell(r, 1).value) for r in range(1, header_row))
    inputs = wb["Inputs"]
    header_row = next(r for r in range(1, 6) if inputs.cell(r, 1).value == "kernel_id")
    assert inputs.max_row == header_row + 40
    assert inputs.cell(header_row + 1, 8).number_format == "General", "no per-cell formats on big inputs"
    notes = " ".join(str(c.value) for row in wb["Notes"].iter_rows() for c in row)
    assert "large input" in notes and "list the 5 longest of 40 kernels" in notes


def test_model_ids_become_valid_distinct_sheet_names() -> None:
    from nvperf_bridge.analysis import ModelRun

    analysis = make_analysis()
    for mid in ("summary", "a" * 40):
        analysis.runs[mid] = ModelRun(mid, "1", "", "", None, failure="x")
    names = excel._sheet_names(analysis)
    assert names["summary"] == "summary (model)"
    assert len(names["a" * 40]) <= 31
    assert len({n.lower() for n in names.values()}) == len(names)


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_opens_and_converts_the_workbook(workbook_bytes: bytes, tmp_path: Path) -> None:
    source = tmp_path / "review.xlsx"
    source.write_bytes(workbook_bytes)
    profile = tmp_path / "lo-profile"
    result = subprocess.run(
        ["soffice", f"-env:UserInstallation=file://{profile}", "--headless", "--convert-to", "pdf",
         "--outdir", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=240)
    pdf = tmp_path / "review.pdf"
    assert pdf.exists() and pdf.stat().st_size > 10_000, result.stdout + result.stderr
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, timeout=60).stdout
        assert "cutlass::Kernel" in text and "Consensus" in text
        assert '=HYPERLINK("http://x","click")' in text, "shown as text, not evaluated"


def test_number_arrays_are_written_as_their_python_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A float array column (the Inputs sheet's numbers, converted a chunk of rows at a time) gives the
    same cells and width as the list of its Python numbers, across chunk boundaries; NaN and infinities
    are no cell."""
    import numpy as np

    from nvperf_bridge.reports import xlsx_rows

    monkeypatch.setattr(xlsx_rows, "_ROWS_PER_CHUNK", 3)
    array = np.array([1.5, np.nan, -2.0, np.inf, 1e300, 0.0, -np.inf, 3.25, -7.5])
    listed = excel.number_values(array)
    assert listed[1] is None and listed[4] == 1e300

    def xml(values) -> str:
        texts = ["a", None, "b", "=c", "d", "e", "f", "g", "h"]
        block = xlsx_rows.RawBlock("x", first_row=4, rows=len(array), quoted_style=9,
                                   columns=[xlsx_rows.RawColumn("C", values, 7), xlsx_rows.RawColumn("D", texts)])
        return "".join(xlsx_rows.block_rows(block))

    assert xml(array) == xml(listed)
    assert '<c r="C4" s="7"><v>1.5</v></c>' in xml(array) and '<c r="C12" s="7"><v>-7.5</v></c>' in xml(array)
    assert all(f'r="C{row}"' not in xml(array) for row in (5, 7, 10))  # NaN, inf, -inf: no cell
    for fmt in ("#,##0", "#,##0.00", "0.00E+00", "0.0%"):
        assert excel.number_width("value", array, fmt) == excel.number_width("value", listed, fmt)
    assert excel.number_width("v", np.array([np.nan]), "#,##0") == excel.number_width("v", [None], "#,##0")


def test_charts_sheet_shows_kernel_groups_and_marks_predictions_that_read_the_measured_time(
        realdata_dir: Path) -> None:
    """The chart shows the longest launch of each kernel group, most GPU time first. On the V100 cfd page kerr, recommended, roofline and transit read DRAM bytes derived from the measured time
    (throughput x duration): their bars beside the measured ones are no test of them, and the Charts sheet's
    column titles (the chart's legend) and note say so, as the Summary sheet's 'not judged' cells do."""
    from nvperf_bridge.analysis import analyze_files

    path = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    if not path.exists():
        pytest.skip(f"{path} not found")
    wb = load_workbook(io.BytesIO(render_workbook(analyze_files([path], gpu="v100-sxm2"))))
    rows = list(wb["Charts"].iter_rows(min_row=2, max_row=3, values_only=True))
    assert "'not judged'" in str(rows[0][0])
    titles = {str(title).split(" (")[0]: str(title) for title in rows[1][1:] if title}
    for mid in ("kerr", "recommended", "roofline", "transit"):
        assert titles[mid].endswith(", not judged)"), titles
    assert titles["Measured"] == "Measured (µs)" and "not judged" not in titles["hong-kim"]
    # one row per kernel group, most GPU time first (the 15 longest launches were all cuda_compute_flux)
    kernels = [row[0] for row in wb["Charts"].iter_rows(min_row=4, max_row=20, values_only=True)]
    assert kernels[:4] == ["cuda_compute_flux", "cuda_time_step", "cuda_compute_step_factor", None]

"""Every report leads with the review (issue 12 items 1, 7): Markdown, workbook and the roofline,
on real files; readable output (no HTML entities, code spans verbatim, no '###' cells, error colours
on the log ratio)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from openpyxl import load_workbook

from nvperf_bridge.analysis import analyze_files
from nvperf_bridge.cli import main
from nvperf_bridge.reports.markdown import render_markdown
from nvperf_bridge.review.build import build_review
from nvperf_bridge.review.roofline import roofline_points

REAL_SETS = {
    "trace-14k": ("nvprof-result/nvprof-result__cfd-setpreferredlocation__print-gpu-trace.csv",),
    "b200": ("roofline-analysis/roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv",),
    "rtx5090": ("llm-perf-opt/llm-perf-opt__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu.details.csv",),
    "magus-lud": ("magus/magus__metrics_rodinia_lud.csv", "magus/magus__traces_rodinia_lud.csv"),
    "v100-cfd": ("optimal_unified_memory/optimal_unified_memory__cfd__nsight_cfd_097K.log",),
    "a100-bert": ("actual-parameter-collection/actual-param__attention_5-9__bert_flashattn_nsight.csv",),
}
SGEMM = ("magus/magus__metrics_parboil_sgemm.csv", "magus/magus__traces_parboil_sgemm.csv")
V100 = REAL_SETS["v100-cfd"]


@pytest.mark.parametrize("name", sorted(REAL_SETS))
def test_markdown_leads_with_groups_and_answers_each_top_group(realdata_dir: Path, name: str) -> None:
    gpu = "a100-40gb" if name == "a100-bert" else None
    analysis = analyze_files([realdata_dir / f for f in REAL_SETS[name]], gpu=gpu)
    review = build_review(analysis)
    text = render_markdown(analysis, review=review)
    sections = re.findall(r"^## (.+)$", text, flags=re.M)
    assert sections[:2] == ["Where the time goes", "Top kernels"]
    assert "&amp;" not in text and "&lt;" not in text and "&gt;" not in text
    for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text):
        assert "\\" not in span.replace("\\|", ""), f"stray escape in code span {span!r}"
    top = review.groups.table[review.groups.table["top"]]
    blocks = text.split("## Top kernels")[1].split("\n## ")[0].split("\n### ")[1:]
    assert len(blocks) == len(top)
    for block in blocks:
        assert "**Verdict: " in block
        assert "Nsight's view" in block or "Speed of light" in block
        # advice with the kernel's numbers, or the command that fixes an unpredicted kernel
        assert re.search(r"What to do:\n  1\. .*\d", block) or "No model predicted it. Collect" in block, block
    for item in review.unpredicted:
        assert item["command"] and item["command"] in text
    assert "## Warnings\n\nNone." not in text or not review.unpredicted


def test_workbook_leads_with_groups_and_verdict_after_the_kernel(realdata_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "review.xlsx"
    assert main(["analyze", *(str(realdata_dir / f) for f in V100), "-o", str(target), "-q"]) == 0
    wb = load_workbook(target)
    assert wb.sheetnames[:2] == ["Kernel groups", "Summary"]
    groups = wb["Kernel groups"]
    header = [c.value for c in next(groups.iter_rows(min_row=2, max_row=2))]
    assert header[:6] == ["Group", "Kernel", "Share of GPU time", "Top 80%", "Verdict", "Action 1"]
    first = [c.value for c in next(groups.iter_rows(min_row=3, max_row=3))]
    assert first[1] == "cuda_compute_flux" and first[2] == pytest.approx(0.709, abs=0.001) and first[3] == "★"
    summary = wb["Summary"]
    header_row = next(row for row in summary.iter_rows(max_row=5) if row[0].value == "#")
    names = [c.value for c in header_row]
    assert names[2:7] == ["Kernel", "Group", "Group share of GPU time", "Verdict", "First action"]
    # errors coloured by |ln(predicted/measured)|: +100% and -50% fall in the same band
    formulas = [rule.formula[0] for cf in summary.conditional_formatting for rule in cf.rules if rule.formula]
    ln_rules = [f for f in formulas if "LN(" in f]
    assert ln_rules
    assert any(f"{math.log(2.0):.6f}" in f for f in ln_rules)


def test_number_columns_are_wide_enough_for_their_values(realdata_dir: Path, tmp_path: Path) -> None:
    """No '###': every number column of Inputs is at least as wide as its widest formatted value
    (sm_clock_hz of the RTX 5090 file is 2.4e9)."""
    target = tmp_path / "r.xlsx"
    assert main(["analyze", *(str(realdata_dir / f) for f in REAL_SETS["rtx5090"]), "-o", str(target), "-q"]) == 0
    sheet = load_workbook(target)["Inputs"]
    header_row = next(row for row in sheet.iter_rows(max_row=5) if row[0].value and "kernel_id" in str(row[0].value))
    checked = 0
    for cell in header_row:
        values = [c.value for c in sheet[cell.column_letter][header_row[0].row:]
                  if isinstance(c.value, (int, float)) and not isinstance(c.value, bool)]
        if not values:
            continue
        fmt = sheet.cell(row=header_row[0].row + 1, column=cell.column).number_format
        widest = max(values, key=abs)
        if fmt == "0.0%":
            text = f"{widest * 100:.1f}%"
        elif "0.00" in fmt:
            text = f"{widest:,.2f}"
        else:
            text = f"{widest:,.0f}"
        assert sheet.column_dimensions[cell.column_letter].width >= len(text) + 1, (cell.value, text)
        checked += 1
    assert checked >= 5
    assert any("sm_clock_hz" in str(c.value) for c in header_row)


def test_roofline_points_from_the_kernels_numbers(realdata_dir: Path, tmp_path: Path) -> None:
    analysis = analyze_files([realdata_dir / f for f in SGEMM], model_ids=["roofline"])
    review = build_review(analysis)
    points = roofline_points(analysis, review.groups)
    row = analysis.kernels.iloc[0]
    flops = row["flop_sp"] + (row.get("flop_dp", 0) or 0) + (row.get("flop_hp", 0) or 0)
    assert points["intensity"].iloc[0] == pytest.approx(flops / row["dram_bytes"], rel=1e-9)
    assert points["achieved"].iloc[0] == pytest.approx(flops / (row["duration_ns"] * 1e-9), rel=1e-9)
    assert points["achieved"].iloc[0] <= points["attainable"].iloc[0]
    figure = tmp_path / "roofline.png"
    assert main(["plot", "roofline", *(str(realdata_dir / f) for f in SGEMM), "-o", str(figure), "-q"]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = tmp_path / "r.md"
    assert main(["analyze", *(str(realdata_dir / f) for f in SGEMM), "-o", str(report), "-q"]) == 0
    text = report.read_text()
    assert "## Roofline" in text and "(r-roofline.png)" in text and (tmp_path / "r-roofline.png").exists()


def test_plot_roofline_without_flops_names_what_is_missing(realdata_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plot", "roofline", str(realdata_dir / REAL_SETS["b200"][0]), "-o", str(tmp_path / "r.png"), "-q"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no kernel group can be placed on the roofline" in err and "dram__bytes.sum" in err


def test_summary_first_action_wraps_with_rows_tall_enough(realdata_dir: Path, tmp_path: Path) -> None:
    """The Summary's First action wraps inside its column, as the Kernel groups' actions do: printed,
    a long action runs on over lines instead of being cut at the cell edge."""
    target = tmp_path / "review.xlsx"
    assert main(["analyze", *(str(realdata_dir / f) for f in REAL_SETS["magus-lud"]), "-o", str(target), "-q"]) == 0
    summary = load_workbook(target)["Summary"]
    header_row = next(row for row in summary.iter_rows(max_row=5) if row[0].value == "#")
    column = next(c.column_letter for c in header_row if c.value == "First action")
    width = summary.column_dimensions[column].width
    cells = [summary[f"{column}{r}"] for r in range(header_row[0].row + 1, summary.max_row + 1)]
    longest = max(cells, key=lambda c: len(str(c.value or "")))
    assert len(longest.value) > width, "the lud advice is longer than the column: the case this test is about"
    for cell in cells:
        assert cell.alignment.wrap_text, cell.coordinate
        lines = math.ceil(len(str(cell.value or "")) / (width * 1.1))
        if lines > 1:
            assert summary.row_dimensions[cell.row].height >= 15.0 * lines, cell.coordinate


def test_errors_of_predictions_made_from_the_measured_time_read_not_judged(realdata_dir: Path,
                                                                           tmp_path: Path) -> None:
    """V100 cfd: DRAM bytes are throughput x the measured duration, and transit and kerr read them.
    Their per-kernel errors are not printed (the accuracy table leaves them out too); luo-suda,
    which reads no time-derived input, is not marked (it predicts none of these kernels: empty cells)."""
    files = [str(realdata_dir / f) for f in V100]
    target = tmp_path / "review.xlsx"
    assert main(["analyze", *files, "-m", "transit", "-m", "kerr", "-m", "luo-suda", "-o", str(target), "-q"]) == 0
    wb = load_workbook(target)
    summary = wb["Summary"]
    header_row = next(row for row in summary.iter_rows(max_row=5) if row[0].value == "#")
    position = {c.value: c.column - 1 for c in header_row}
    rows = list(summary.iter_rows(min_row=header_row[0].row + 1, values_only=True))
    assert len(rows) == 100
    for model in ("transit", "kerr"):
        assert {row[position[f"{model} error"]] for row in rows} == {"not judged"}, model
        assert all(isinstance(row[position[f"{model} predicted (µs)"]], float) for row in rows), model
    for row in rows:
        predicted, error = row[position["luo-suda predicted (ns)"]], row[position["luo-suda error"]]
        assert (error is None) if predicted is None else isinstance(error, float)
    sheet = wb["transit"]
    header = next(row for row in sheet.iter_rows(max_row=8) if row[0].value == "#")
    error = next(c.column - 1 for c in header if c.value == "Error")
    assert {row[error] for row in sheet.iter_rows(min_row=header[0].row + 1, values_only=True)} == {"not judged"}
    report = tmp_path / "r.md"
    assert main(["analyze", *files, "-m", "transit", "-m", "luo-suda", "-o", str(report), "-q"]) == 0
    summary_md = report.read_text().split("## Summary")[1].split("\n## ")[0]
    lines = [line for line in summary_md.splitlines() if line.startswith("| 1 |")]
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    header_md = [c.strip() for c in next(l for l in summary_md.splitlines() if l.startswith("| # |")).strip("|").split("|")]
    assert cells[header_md.index("transit error")] == "not judged"
    assert cells[header_md.index("luo-suda error")] == cells[header_md.index("luo-suda (ns)")] == ""
    assert "'not judged': the model read an input derived from the measured time" in summary_md

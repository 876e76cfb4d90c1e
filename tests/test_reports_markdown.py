"""Markdown report: snapshot, table safety, shortened names, figure links.

Update the snapshot after an intended change with
``NVPERF_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_reports_markdown.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from reports_fakes import LONG_NAME, make_analysis

from nvperf_bridge.reports.markdown import MAX_KERNELS, code, escape, render_markdown

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def normalise(text: str) -> str:
    """Blank out what changes from run to run: timestamps, tool version, absolute paths."""
    text = re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\+00:00|Z)?", "<TIMESTAMP>", text)
    text = re.sub(r"nvperf-bridge \d+\.\d+\.\d+\S*", "nvperf-bridge <VERSION>", text)
    text = re.sub(r"(/[\w.\-]+)+/", "<PATH>/", text)
    return text


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    text = normalise(text)
    if os.environ.get("NVPERF_UPDATE_SNAPSHOTS") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if not os.environ.get("NVPERF_UPDATE_SNAPSHOTS"):
            pytest.fail(f"snapshot {name} was missing and has been written; check it in and rerun")
    assert text == path.read_text(encoding="utf-8")


def _cells(line: str) -> list[str]:
    """Split a GFM table row on unescaped pipes, as GitHub does."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_snapshot_of_the_fake_analysis() -> None:
    check_snapshot("report_fake.md", render_markdown(make_analysis(), {
        "Measured vs predicted time, all models": "review-measured-vs-predicted.png"}))


def test_every_table_row_has_as_many_cells_as_its_header() -> None:
    text = render_markdown(make_analysis())
    blocks = [b for b in text.split("\n\n") if b.startswith("|")]
    assert len(blocks) >= 6
    for block in blocks:
        lines = block.splitlines()
        width = len(_cells(lines[0]))
        assert all(len(_cells(line)) == width for line in lines), block


def test_kernel_names_are_escaped_in_tables() -> None:
    text = render_markdown(make_analysis())
    # a name is a code span: verbatim, no entities or escapes inside but the table's pipe
    assert "| ``a\\|b`c<d>*e_f`` |" in text
    assert "&lt;" not in text and "&amp;" not in text, "no HTML entities anywhere"
    assert escape("x|y\nz") == r"x\|y z"
    assert escape("*bold* _it_ [link](u) <b> a&b") == r"\*bold\* \_it\_ \[link\](u) \<b\> a\&b"
    assert escape("smsp__inst_executed.sum") == "smsp__inst_executed.sum", "intraword _ is not emphasis"
    assert code("a`b|c") == "``a`b\\|c``"


def test_long_names_are_shortened_and_listed_in_full() -> None:
    text = render_markdown(make_analysis())
    summary = text.split("## Bottlenecks")[0]
    assert LONG_NAME not in summary
    names = text.split("## Kernel names")[1]
    assert f"- #1: `{LONG_NAME}`" in names, "the longest kernel is #1 and its full name is listed"


def test_failed_model_warnings_and_accuracy_are_reported() -> None:
    text = render_markdown(make_analysis())
    assert "**Failed as a whole:** ModelError: needs sm_cycles in every row" in text
    assert "- profile.csv: 2 memcpy rows (not kernels) skipped" in text
    accuracy = text.split("## Accuracy")[1].split("## Models")[0]
    assert "| alpha | 6 | 20.0% | 20.0% | 20.0% | 83.3% |" in accuracy
    assert "- 2 kernels: missing inst_executed" in text


def test_figures_are_linked_relatively_only_when_given() -> None:
    assert "## Figures" not in render_markdown(make_analysis())
    text = render_markdown(make_analysis(), {"Transit figure": "my review-transit.png"})
    assert "![Transit figure](my%20review-transit.png)" in text


def test_large_inputs_show_the_longest_kernels() -> None:
    analysis = make_analysis(count=MAX_KERNELS + 30)
    text = render_markdown(analysis)
    summary = text.split("## Summary")[1].split("## Bottlenecks")[0]
    rows = [line for line in summary.splitlines() if line.startswith("| ") and not line.startswith("| #")]
    assert len(rows) == MAX_KERNELS
    assert f"Showing the {MAX_KERNELS} longest of {MAX_KERNELS + 30} kernels" in summary
    assert rows[0].startswith(f"| 1 | `k{MAX_KERNELS + 29}` |"), "longest (last in this fake) first"


def test_no_measured_times_says_so() -> None:
    analysis = make_analysis()
    analysis.kernels["duration_ns"] = float("nan")
    text = render_markdown(analysis)
    assert "the input has no measured times" in text
    assert "No kernel has both a measured time and a prediction" in text


def test_the_readme_example_counts_one_launch_in_the_singular() -> None:
    """The README's first command (one kernel, one launch) reads as English."""
    from nvperf_bridge.analysis import analyze_files

    example = Path(__file__).resolve().parent.parent / "examples" / "papers" / "hong-kim-table2.yaml"
    text = render_markdown(analyze_files([example]))
    assert "1 launch in 1 kernel group " in text and "1 launches" not in text

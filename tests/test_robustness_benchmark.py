"""The reliability suite (benchmarks/robustness.py) classifies what it sees correctly.

The large run is rerunnable by hand (README, docs/robustness.md); here its CLI check is tried on a
good input, a damaged one and a report with a silent zero, so a broken classifier cannot report 0
failures by accident.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import robustness  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reports" / "demo_gtx280.yaml"


def test_good_input_is_a_complete_report(tmp_path: Path) -> None:
    assert robustness.check_cli([FIXTURE], tmp_path) == ("cli-ok", "")
    assert (tmp_path / "out" / "report.json").read_bytes() != robustness.SENTINEL


def test_damaged_input_keeps_the_earlier_report(tmp_path: Path) -> None:
    bad = tmp_path / "cut.csv"
    bad.write_bytes(b'"ID","Kernel Name","gpu__time_duration.sum"\n"0","k(float*)","1')
    outcome, detail = robustness.check_cli([bad], tmp_path)
    assert outcome == "cli-error", detail
    assert (tmp_path / "out" / "report.json").read_bytes() == robustness.SENTINEL


def test_silent_zeros_are_found() -> None:
    report = {"schema_version": 3, "kernel_count": 2,
              "kernels": {"kernel_id": ["1", "2"], "measured_ns": [10.0, 0.0]},
              "predictions": {"a": {"predicted_ns": [0.0, 5.0], "error": {"constant": ""}},
                              "b": {"predicted_ns": [None, 0.0], "error": ["x", "y"]}},
              "details": {}}
    assert robustness._zeros(report) == ["kernel 1 a: predicted_ns 0.0", "kernel 2: measured_ns 0.0"]

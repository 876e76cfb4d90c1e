"""Command-line hygiene (issue 12 item 6) on a real magus pair: unknown option keys, models and
constants are usage errors with a did-you-mean; -o's suffix must agree with --format;
--constant overrides a machine constant for one run and every report shows it as overridden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.reports.json_read import kernel_records

LUD = ("magus/magus__metrics_rodinia_lud.csv", "magus/magus__traces_rodinia_lud.csv")


def _run(realdata: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["analyze", *(str(realdata / n) for n in LUD), "-q", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("args, message", [
    (("--option", "hong-kim.case_selectoin=paper"),
     "model hong-kim has no option 'case_selectoin' (did you mean 'case_selection'?)"),
    (("--option", "hong-kim.x=1"), "model hong-kim has no option 'x'"),
    (("-m", "hong-kin"), "unknown model 'hong-kin' (did you mean 'hong-kim'?)"),
    (("--option", "hong-kin.cache_aware=true"), "model 'hong-kin', which is not installed (did you mean 'hong-kim'?)"),
    (("--constant", "hong-kim.Mem_LX=500"), "model hong-kim has no constant 'Mem_LX' (did you mean 'Mem_LD'?)"),
    (("--constant", "hong-kim.Mem_LD=1e12"), "outside its physical bounds"),
    (("--constant", "hong-kim.Mem_LD"), "is not MODEL.NAME=VALUE"),
])
def test_typos_are_usage_errors_with_a_did_you_mean(realdata_dir: Path, capsys: pytest.CaptureFixture[str],
                                                    args: tuple[str, ...], message: str) -> None:
    code, out, err = _run(realdata_dir, capsys, *args)
    assert code == 2
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_known_options_still_run(realdata_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(realdata_dir, capsys, "--option", "hong-kim.case_selection=section-3.2",
                          "--option", "kerr.seed=3")
    assert code == 0, err
    assert out.startswith("# nvperf-bridge report")


def test_suffix_contradicting_format_is_an_error(realdata_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.json"
    code, _, err = _run(realdata_dir, capsys, "-o", str(target), "--format", "csv")
    assert code == 2
    assert "--format csv contradicts the output name 'r.json' (json)" in err
    assert not target.exists()
    # an agreeing suffix, or one that names no format, is fine
    assert _run(realdata_dir, capsys, "-o", str(tmp_path / "r.csv"), "--format", "csv")[0] == 0
    assert _run(realdata_dir, capsys, "-o", str(tmp_path / "r.txt"), "--format", "md")[0] == 0


def test_constant_override_changes_the_prediction_and_is_shown(realdata_dir: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    changed = tmp_path / "changed.json"
    assert _run(realdata_dir, capsys, "-m", "hong-kim", "-o", str(base))[0] == 0
    assert _run(realdata_dir, capsys, "-m", "hong-kim", "--constant", "hong-kim.Mem_LD=2000", "-o", str(changed))[0] == 0
    before, after = json.loads(base.read_text()), json.loads(changed.read_text())
    constant = after["models"]["hong-kim"]["constants"]["Mem_LD"]
    assert constant == {"value": 2000.0, "source": "--constant (this run only)", "status": "overridden"}
    assert before["models"]["hong-kim"]["constants"]["Mem_LD"]["status"] != "overridden"
    slower = [a["models"]["hong-kim"]["predicted_ns"] >= b["models"]["hong-kim"]["predicted_ns"]
              for a, b in zip(kernel_records(after), kernel_records(before))]
    assert all(slower) and after["predictions"] != before["predictions"]
    code, out, _ = _run(realdata_dir, capsys, "-m", "hong-kim", "--constant", "hong-kim.Mem_LD=2000")
    assert code == 0
    assert "| Mem_LD | 2000 | overridden | --constant (this run only) |" in out

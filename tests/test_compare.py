"""``nvperf-bridge compare``: kernel groups matched across two real runs, the time change, the CI gate.

Real pairs: the two V100 cfd ncu runs of one study (#15 full sections, #16 SOL/launch/occupancy only;
#15 prints bare function names, #16 adds the parameter list), and the GTX 1080 Ti matrixMul run of
magus against the same application in the magus corpus (same launch, same counters, 25% apart in time).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.commands.compare import split_against
from nvperf_bridge.compare import compare, compare_files, gate, pair_groups, parse_threshold
from nvperf_bridge.errors import UsageError

LAUNCH_MODELS = ["hong-kim", "transit", "roofline"]


@pytest.fixture
def cfd(realdata_dir: Path) -> tuple[Path, Path]:
    folder = realdata_dir / "optimal_unified_memory"
    return (folder / "optimal_unified_memory__cfd__nsight_cfd_097K.log",
            folder / "optimal_unified_memory__cfd-ip-128-115-246-7__nsight_cfd_097K.log")


@pytest.fixture
def matrixmul(realdata_dir: Path) -> tuple[list[Path], list[Path]]:
    return ([realdata_dir / "magus" / "magus__matrixMul_metrics.csv", realdata_dir / "magus" / "magus__matrixMul_trace.csv"],
            [realdata_dir / "magus-corpus" / "metrics_cudasdk_matrixMul.csv",
             realdata_dir / "magus-corpus" / "traces_cudasdk_matrixMul.csv"])


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main(["compare", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cfd_runs_match_every_group_despite_different_name_spellings(cfd) -> None:
    result = compare_files([cfd[0]], [cfd[1]], model_ids=["roofline"])
    g = result.groups.set_index("kernel")
    assert sorted(g.index) == ["cuda_compute_flux", "cuda_compute_step_factor", "cuda_time_step"]
    assert result.unmatched_before.empty and result.unmatched_after.empty
    assert set(g["match"]) == {"name and shape"} and set(g["shape_before"]) == {"506 x 192"}
    assert list(g.loc[["cuda_compute_flux", "cuda_time_step"], "launches_before"]) == [43, 42]
    # #15 -> #16: every kernel a little faster; step_factor 10.22 -> 9.10 µs per launch
    assert g.loc["cuda_compute_step_factor", "measured_change"] == pytest.approx(9096.53 / 10216.53 - 1, abs=1e-4)
    # the total weights the per-launch means by the before run's launches: sum over groups by hand
    expected_before = sum(g["mean_ns_before"] * g["launches_before"])
    expected_after = sum(g["mean_ns_after"] * g["launches_before"])
    assert result.total["measured"]["before_ns"] == pytest.approx(expected_before)
    assert result.total_change == pytest.approx(expected_after / expected_before - 1)
    assert -0.04 < result.total_change < -0.03
    # the counters that changed most include the register count the second build used (58 -> 60)
    flux = result.counters[result.counters["kernel"] == "cuda_compute_flux"]
    regs = flux[flux["counter"] == "registers_per_thread"].iloc[0]
    assert (regs["before"], regs["after"]) == (58, 60)


def test_gate_reads_the_measured_change(cfd) -> None:
    result = compare_files([cfd[0]], [cfd[1]], model_ids=["roofline"])
    assert not gate(result, 0.05).slower and "faster" in gate(result, 0.05).message
    backwards = compare_files([cfd[1]], [cfd[0]], model_ids=["roofline"])
    assert backwards.total_change == pytest.approx(0.0328, abs=5e-4)
    assert gate(backwards, 0.02).slower and gate(backwards, 0.02).message.startswith("FAIL")
    assert not gate(backwards, 0.05).slower


def test_cli_exit_codes_make_a_ci_gate(tmp_path: Path, capsys, cfd) -> None:
    code, out, err = run(capsys, cfd[1], "--against", cfd[0], "--fail-if-slower", "2%", "-m", "roofline")
    assert code == 1 and "FAIL: measured time of the matched kernel groups: 3.3% slower (threshold 2%)" in err
    assert out.startswith("# Before / after comparison") and "**FAIL" in out  # the report is still written
    code, out, err = run(capsys, cfd[1], "--against", cfd[0], "--fail-if-slower", "5%", "-m", "roofline")
    assert code == 0 and "pass:" in err
    target = tmp_path / "c.json"
    code, _, err = run(capsys, cfd[0], "--against", cfd[1], "--fail-if-slower", "5", "-m", "roofline", "-o", target)
    doc = json.loads(target.read_text())
    assert code == 0 and doc["verdict"]["slower"] is False and doc["verdict"]["threshold"] == 0.05
    assert len(doc["groups"]) == 3 and doc["unmatched_before"] == [] and doc["schema"] == "nvperf-bridge/compare/1"
    book = tmp_path / "c.xlsx"
    code, _, err = run(capsys, cfd[0], "--against", cfd[1], "-m", "roofline", "-o", book)
    assert code == 0, err
    import openpyxl

    wb = openpyxl.load_workbook(book)
    assert wb.sheetnames[:4] == ["Groups", "Total", "Counters", "Model views"]


def test_cli_usage_errors(capsys, cfd) -> None:
    for args, needle in (([cfd[0]], "needs the AFTER run"), (["--against", cfd[1]], "needs the BEFORE run"),
                         ([cfd[0], "--against", cfd[1], "--fail-if-slower", "fast"], "not a percentage"),
                         ([cfd[0], "--against", cfd[1], "--gate-on", "nope"], "--gate-on 'nope'"),
                         ([cfd[0], "--against", cfd[1], "-f", "csv"], "md, json or xlsx"),
                         ([cfd[0], "--bogus", "--against", cfd[1]], "no such option: --bogus")):
        code, out, err = run(capsys, *args)
        assert code == 2 and out == "" and needle in err, (args, err)


def test_same_work_different_time_is_seen_by_the_models(matrixmul) -> None:
    # magus vs the magus corpus: one launch shape, near-identical counters, 76.5 -> 95.9 µs per launch.
    result = compare_files(*matrixmul, model_ids=LAUNCH_MODELS)
    g = result.groups.iloc[0]
    assert g["match"] == "name and shape" and g["launches_before"] == g["launches_after"] == 301
    assert result.total_change == pytest.approx(95916.13 / g["mean_ns_before"] - 1, rel=1e-6)
    assert result.total_change > 0.2
    for mid in LAUNCH_MODELS:  # the work did not change, so no model predicts the slowdown
        assert abs(g[f"{mid}.predicted_change"]) < 0.01, mid
        assert g[f"{mid}.bottleneck_before"] == g[f"{mid}.bottleneck_after"] != ""
    assert gate(result, 0.05, "transit").slower is False
    assert gate(result, 0.05).slower is True


def test_unrelated_runs_match_nothing_and_the_gate_refuses_to_guess(cfd, matrixmul) -> None:
    result = compare_files([cfd[0]], matrixmul[1], model_ids=["roofline"])
    assert result.groups.empty and len(result.unmatched_before) == 3 and len(result.unmatched_after) == 1
    assert any("could be matched" in w for w in result.warnings)
    with pytest.raises(UsageError, match="neither run gives it"):
        gate(result, 0.05)


def test_shape_change_is_paired_when_unambiguous() -> None:
    before = pd.DataFrame({"kernel_name": ["k(int)", "k(int)", "other"], "grid_blocks": [10.0, 20.0, 5.0],
                           "block_threads": [128.0, 128.0, 64.0]})
    after = pd.DataFrame({"kernel_name": ["k(int)", "k(int)", "other"], "grid_blocks": [10.0, 40.0, 5.0],
                          "block_threads": [128.0, 64.0, 128.0]})
    pairs, only_before, only_after = pair_groups(before, after)
    assert sorted(zip(pairs["before_group"], pairs["after_group"], pairs["match"])) == [
        (0, 0, "name and shape"), (1, 1, "shape changed"), (2, 2, "shape changed")]
    assert only_before.empty and only_after.empty


def test_threshold_and_against_parsing() -> None:
    assert parse_threshold("5%") == pytest.approx(0.05) and parse_threshold("0.5") == pytest.approx(0.005)
    for bad in ("-1%", "x", "nan"):
        with pytest.raises(UsageError):
            parse_threshold(bad)
    assert split_against(["a", "b", "--against", "c", "d"]) == ([Path("a"), Path("b")], [Path("c"), Path("d")])
    assert split_against(["a", "--against=c"]) == ([Path("a")], [Path("c")])
    with pytest.raises(UsageError, match="twice"):
        split_against(["a", "--against", "b", "--against", "c"])


def test_compare_of_a_run_with_itself_changes_nothing(cfd) -> None:
    from nvperf_bridge.analysis import analyze_files

    analysis = analyze_files([cfd[0]], model_ids=LAUNCH_MODELS)
    result = compare(analysis, analysis)
    assert result.total_change == 0.0 and result.counters.empty and result.details.empty
    for mid in LAUNCH_MODELS:
        assert result.total["models"][mid]["change"] in (0.0, None)

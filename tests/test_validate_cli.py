"""``nvperf-bridge validate``: the accuracy table and the CI exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from calibration_data import PLUGIN, plugin_module, write_inputs

from nvperf_bridge import cli
from nvperf_bridge.commands.validate import parse_fraction
from nvperf_bridge.errors import UsageError


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(data, base profile with the default constants, profile with the true constants)."""
    data, base = write_inputs(tmp_path)
    document = yaml.safe_load(base.read_text())
    document["id"] = "test-gpu-true"
    document["models"] = {"fake-linear": {name: {"value": value, "source": "truth", "status": "measured"}
                                          for name, value in plugin_module().TRUE.items()}}
    true = tmp_path / "test-gpu-true.yaml"
    true.write_text(yaml.safe_dump(document))
    return data, base, true


def validate(data: Path, gpu: Path, *extra: str) -> list[str]:
    return ["validate", str(data), "--gpu", str(gpu), "--plugin", str(PLUGIN), *extra]


@pytest.mark.parametrize("threshold", ["1%", "0.01"])
def test_passes_when_the_required_model_is_within_the_threshold(
    inputs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], threshold: str
) -> None:
    data, _, true = inputs
    code, stdout, stderr = run(validate(data, true, "--model", "fake-linear", "--require", "fake-linear",
                                        "--max-mape", threshold), capsys)
    assert code == 0, stderr
    assert "| fake-linear | 8 | 0.0% |" in stdout and "MAPE 0.0% <= 1%" in stdout
    assert "### Per kernel group (MAPE)" in stdout and "| kernel_0 | 1 |" in stdout


def test_fails_when_the_required_model_exceeds_the_threshold(
    inputs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, base, _ = inputs
    code, stdout, stderr = run(validate(data, base, "--model", "fake-linear", "--require", "fake-linear",
                                        "--max-mape", "5%"), capsys)
    assert code == 1
    assert "| fake-linear | 8 |" in stdout
    assert "nvperf-bridge: validate: fake-linear: MAPE" in stderr and "> 5%" in stderr


def test_threshold_is_only_enforced_for_required_models(
    inputs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, base, _ = inputs
    code, stdout, _ = run(validate(data, base, "--model", "fake-linear", "--max-mape", "5%"), capsys)
    assert code == 0 and "> 5%" in stdout


def test_required_model_without_predictions_fails(inputs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, _, true = inputs
    code, _, stderr = run(validate(data, true, "--model", "fake-linear", "--require", "fake-broken"), capsys)
    assert code == 1 and "fake-broken: no predictions" in stderr


def test_json_output(inputs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, _, true = inputs
    code, stdout, _ = run(validate(data, true, "--model", "fake-linear", "--model", "fake-broken", "--json"), capsys)
    assert code == 0
    report = json.loads(stdout)
    rows = {row["model"]: row for row in report["models"]}
    assert rows["fake-linear"]["n"] == 8 and rows["fake-linear"]["mape"] < 1e-6
    assert rows["fake-broken"]["n"] == 0 and rows["fake-broken"]["mape"] is None
    assert report["gpu"] == "test-gpu-true" and len(report["kernel_groups"]) == 8


@pytest.mark.parametrize(("text", "value"), [("0.25", 0.25), ("25%", 0.25), (" 150% ", 1.5), ("0", 0.0), ("1", 1.0)])
def test_parse_fraction(text: str, value: float) -> None:
    assert parse_fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["25", "abc", "-1%", "nan"])
def test_parse_fraction_refuses_ambiguous_or_bad_values(text: str) -> None:
    with pytest.raises(UsageError):
        parse_fraction(text)


def test_ambiguous_threshold_exits_2(inputs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, _, true = inputs
    code, _, stderr = run(validate(data, true, "--max-mape", "25"), capsys)
    assert code == 2 and "write 25% for a percentage or 0.25 as a fraction" in stderr


def test_every_model_is_compared_with_the_scaled_roofline_baseline(
    realdata_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On real nvprof pairs (a folder, as analyze takes it) the report carries the trivial baseline:
    the stock roofline scaled by the median measured/roofline ratio of the *other* applications,
    and says for each model whether it beats it."""
    corpus = realdata_dir / "magus-corpus"
    files = [corpus / f"{kind}_{app}.csv" for app in ("cudasdk_transpose", "poly_3mm", "cudasdk_dct8x8")
             for kind in ("metrics", "traces")]
    code, stdout, stderr = run(["validate", *map(str, files), "--model", "transit", "--model", "roofline", "--json"],
                               capsys)
    assert code == 0, stderr
    report = json.loads(stdout)
    baseline = report["baseline"]
    assert "leave-one-application-out" in baseline["how"] and baseline["n"] > 0
    assert 0 <= baseline["within_2x"] <= 1
    rows = {row["model"]: row for row in report["models"]}
    assert rows["transit"]["beats_baseline"] == (rows["transit"]["median_ape"] < baseline["median_ape"])
    code, stdout, _ = run(["validate", *map(str, files), "--model", "transit"], capsys)
    assert "| baseline: roofline x median measured/predicted |" in stdout and "beats baseline" in stdout

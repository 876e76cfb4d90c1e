"""``nvperf-bridge analyze``: formats, files, --force, options, warnings and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from nvperf_bridge.cli import main
from nvperf_bridge.reports.json_read import kernel_records

DEMO = Path(__file__).resolve().parent / "fixtures" / "reports" / "demo_gtx280.yaml"

# A plugin with one model that fails as a whole and one that echoes its options into 'state'.
PLUGIN = '''
import json
import pandas as pd
from nvperf_bridge.model import Requirements


class Broken:
    id = "broken"
    version = "0.1"
    description = "always fails"
    paper = "nobody"
    requires = Requirements(required=())
    constants = ()

    def evaluate(self, kernels, gpu, options):
        raise RuntimeError("no luck")


class Echo:
    id = "echo"
    version = "0.1"
    description = "predicts the measured time and reports its options"
    paper = "none"
    requires = Requirements(required=())
    constants = ()

    def evaluate(self, kernels, gpu, options):
        return pd.DataFrame({"predicted_ns": kernels["duration_ns"], "bottleneck": "balanced",
                             "state": json.dumps(dict(options), sort_keys=True), "error": ""}, index=kernels.index)


def register_models(register):
    register(Broken())
    register(Echo())
'''


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["analyze", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "plugin_models.py"
    path.write_text(PLUGIN)
    return path


def test_markdown_on_stdout_by_default(capsys) -> None:
    code, out, err = run(capsys, DEMO, "--model", "transit", "--model", "roofline")
    assert code == 0, err
    assert out.startswith("# nvperf-bridge report\n")
    assert "| transit error |" in out and "## Figures" not in out
    assert err == ""


def test_json_to_stdout(capsys) -> None:
    code, out, err = run(capsys, DEMO, "--format", "json", "-m", "roofline")
    assert code == 0, err
    document = json.loads(out)
    assert document["schema_version"] == 3
    assert document["kernel_count"] == len(kernel_records(document)) == 12
    assert set(document["predictions"]) == {"roofline"}


def test_format_from_suffix_csv_and_xlsx(tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, DEMO, "-m", "transit", "-o", tmp_path / "r.csv")
    assert code == 0 and out == "", err
    assert (tmp_path / "r.csv").read_text().startswith("kernel_id,kernel,kernel_name,measured_ns,model,")
    code, out, err = run(capsys, DEMO, "-m", "transit", "-m", "roofline", "-o", tmp_path / "review.xlsx")
    assert code == 0 and out == "", err
    wb = load_workbook(tmp_path / "review.xlsx")
    assert wb.sheetnames[:5] == ["Kernel groups", "Summary", "Accuracy", "Charts", "Figures"]
    assert len(wb["Figures"]._images) == 3, "scatter, Transit figure and roofline"
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


def test_existing_output_needs_force(tmp_path: Path, capsys) -> None:
    target = tmp_path / "review.json"
    target.write_text("keep me")
    code, out, err = run(capsys, DEMO, "-m", "roofline", "-o", target)
    assert code == 1
    assert err.startswith("nvperf-bridge: error: ") and "already exists" in err and "--force" in err
    assert target.read_text() == "keep me"
    code, out, err = run(capsys, DEMO, "-m", "roofline", "-o", target, "--force")
    assert code == 0, err
    assert json.loads(target.read_text())["schema_version"] == 3


def test_markdown_file_gets_its_figures_beside_it(tmp_path: Path, capsys) -> None:
    target = tmp_path / "review.md"
    code, out, err = run(capsys, DEMO, "-m", "transit", "-o", target)
    assert code == 0 and out == "", err
    text = target.read_text()
    assert "![Measured vs predicted time, all models](review-measured-vs-predicted.png)" in text
    assert "![Transit figure of the kernels with the most GPU time](review-transit.png)" in text
    for name in ("review-measured-vs-predicted.png", "review-transit.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    # a second run refuses before touching anything, figures included
    (tmp_path / "review.md").unlink()
    code, _, err = run(capsys, DEMO, "-m", "transit", "-o", target)
    assert code == 1 and "review-" in err and "already exists" in err
    assert not target.exists()


@pytest.mark.parametrize("args, message", [
    (["--format", "xlsx"], "needs a file"),
    (["-o", "out.txt"], "cannot tell the report format"),
    (["--format", "docx"], "unknown format"),
    (["--option", "transit.precision"], "not MODEL.KEY=VALUE"),
    (["--model", "nope"], "unknown model 'nope'"),
    (["--option", "nope.x=1"], "not installed"),
])
def test_usage_errors_exit_2(capsys, tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = run(capsys, DEMO, *[str(tmp_path / a) if a.endswith(".txt") else a for a in args])
    assert code == 2, err
    assert message in err and out == ""
    assert len(err.strip().splitlines()) == 1


def test_bad_model_data_names_the_file(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "kerr.json"
    bad.write_text('{"weights": [1, 2,,]}')
    code, out, err = run(capsys, DEMO, "--model-data", f"kerr={bad}")
    assert code == 1 and out == ""
    assert f"{bad}:1: not valid JSON" in err
    code, _, err = run(capsys, DEMO, "--model-data", f"kerr={tmp_path / 'missing.json'}")
    assert code == 1 and "missing.json" in err and "cannot read model data" in err


def test_options_and_model_data_reach_the_model(tmp_path: Path, plugin: Path, capsys) -> None:
    data = tmp_path / "echo.json"
    data.write_text('{"w": [1, 2]}')
    code, out, err = run(capsys, DEMO, "--plugin", plugin, "-m", "echo", "--format", "json",
                         "--option", "echo.precision=dp", "--option", "echo.tolerance=0.05",
                         "--model-data", f"echo={data}")
    assert code == 0, err
    state = json.loads(kernel_records(json.loads(out))[0]["models"]["echo"]["state"])
    assert state == {"model_data": {"w": [1, 2]}, "precision": "dp", "tolerance": 0.05}


def test_failed_model_warns_and_only_a_named_one_fails_the_run(tmp_path: Path, plugin: Path, capsys) -> None:
    code, out, err = run(capsys, DEMO, "--plugin", plugin, "-m", "echo", "-m", "broken", "-o", tmp_path / "r.json")
    assert code == 1
    lines = err.strip().splitlines()
    assert lines[0].startswith("nvperf-bridge: warning: model broken raised RuntimeError: no luck")
    assert lines[-1].startswith("nvperf-bridge: error: ") and "broken" in lines[-1]
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["models"]["broken"]["failed"] is True, "the report is still written"
    assert any("broken" in w for w in document["warnings"])


def test_quiet_keeps_stderr_empty(tmp_path: Path, plugin: Path, capsys) -> None:
    code, out, err = run(capsys, DEMO, "--plugin", plugin, "-m", "echo", "-o", tmp_path / "r.md", "--quiet")
    assert code == 0 and err == ""
    code, out, err = run(capsys, DEMO, "--plugin", plugin, "-m", "echo", "-m", "broken", "--quiet")
    assert code == 1 and "## Warnings" in out
    assert err.startswith("nvperf-bridge: error:"), "errors are never silenced"


def test_input_errors_are_one_line(tmp_path: Path, capsys) -> None:
    junk = tmp_path / "junk.csv"
    junk.write_text("hello\nworld\n")
    code, out, err = run(capsys, junk)
    assert code == 1 and out == ""
    assert err.startswith("nvperf-bridge: error: ") and str(junk) in err

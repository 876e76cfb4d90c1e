"""Robustness: third-party plugins that misbehave, through the CLI (``--plugin FILE.py``).

Each bad plugin is written to tmp_path. The run must go on with the other
models, the report's warnings must say what happened, stderr must carry one
line per warning and no traceback, and the exit code is 1 only when the user
named the failing model with ``--model``.
"""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.reports.json_read import kernel_records

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reports" / "demo_gtx280.yaml"

HEADER = """
import ctypes, math, os, sys, time
import numpy as np
import pandas as pd
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.model import Requirements, empty_result

class Base:
    version = "1.0"
    description = "test plugin"
    paper = "none"
    requires = Requirements(required=())
    constants = ()
"""

BODIES = {
    "raises-on-import": 'raise ImportError("this plugin needs torch")\n',
    "raises-in-evaluate": """
class M(Base):
    id = "raises-in-evaluate"
    def evaluate(self, kernels, gpu, options):
        raise ZeroDivisionError("evaluate divided by zero")
""",
    "wrong-shape": """
class M(Base):
    id = "wrong-shape"
    def evaluate(self, kernels, gpu, options):
        return pd.DataFrame({"predicted_ns": [1.0, 2.0, 3.0]})
""",
    "not-a-frame": """
class M(Base):
    id = "not-a-frame"
    def evaluate(self, kernels, gpu, options):
        return [1.0] * len(kernels)
""",
    "bad-times": """
class M(Base):
    id = "bad-times"
    def evaluate(self, kernels, gpu, options):
        out = empty_result(kernels)
        values = np.array([np.nan, -5.0, 0.0, np.inf] * len(kernels))[: len(kernels)]
        out["predicted_ns"] = values
        out["MWP"] = np.inf  # a detail column that is infinite
        out["bottleneck"] = "gremlins"
        return out
""",
    "too-slow": """
class M(Base):
    id = "too-slow"
    def evaluate(self, kernels, gpu, options):
        time.sleep(60)
        out = empty_result(kernels)
        out["predicted_ns"] = 1.0
        return out
""",
    "exits": """
class M(Base):
    id = "exits"
    def evaluate(self, kernels, gpu, options):
        sys.exit(0)
""",
    "hard-exit": """
class M(Base):
    id = "hard-exit"
    def evaluate(self, kernels, gpu, options):
        os._exit(0)
""",
    "segfault": """
class M(Base):
    id = "segfault"
    def evaluate(self, kernels, gpu, options):
        ctypes.string_at(0)  # reads address 0: SIGSEGV in C code
""",
    "spins": """
class M(Base):
    id = "spins"
    def evaluate(self, kernels, gpu, options):
        while True:
            pass
""",
    "prints": """
class M(Base):
    id = "prints"
    def evaluate(self, kernels, gpu, options):
        for _ in range(200):
            print("PLUGIN-SPAM " * 100)
        sys.stderr.write("PLUGIN-ERR\\n")
        os.write(1, b"C-LEVEL-SPAM\\n")
        out = empty_result(kernels)
        out["predicted_ns"] = 1000.0
        return out
""",
    "duplicate": """
class M(Base):
    id = "roofline"
    description = "an impostor that reuses a built-in id"
    def evaluate(self, kernels, gpu, options):
        out = empty_result(kernels)
        out["predicted_ns"] = 42.0
        return out
""",
    "raises-in-register": """
class M(Base):
    id = "raises-in-register"
    def evaluate(self, kernels, gpu, options):
        return empty_result(kernels)
""",
}

REGISTER = """
@hookimpl
def register_models(register):
    register(M())
"""
RAISING_REGISTER = """
@hookimpl
def register_models(register):
    raise RuntimeError("cannot find my license file")
"""


def plugin_file(tmp_path: Path, name: str) -> Path:
    body = BODIES[name]
    text = HEADER + body
    if name == "raises-in-register":
        text += RAISING_REGISTER
    elif name != "raises-on-import":
        text += REGISTER
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(textwrap.dedent(text))
    return path


def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, *extra: str) -> tuple[int, dict, str]:
    out = tmp_path / "report.json"
    code = main(["analyze", str(FIXTURE), "--plugin", str(plugin_file(tmp_path, name)), "-o", str(out),
                 "--force", *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert captured.out == ""
    report = json.loads(out.read_text()) if out.exists() else {}
    return code, report, captured.err


# (plugin, text expected in a warning, model id a user would name, exit code when named)
CASES = [
    ("raises-on-import", "failed to import: ImportError: this plugin needs torch", None, None),
    ("raises-in-register", "register_models raised RuntimeError: cannot find my license file", None, None),
    ("raises-in-evaluate", "raised ZeroDivisionError: evaluate divided by zero", "raises-in-evaluate", 1),
    ("wrong-shape", "returned 3 rows for 12 kernels", "wrong-shape", 1),
    ("not-a-frame", "evaluate returned list, expected a pandas DataFrame", "not-a-frame", 1),
    ("bad-times", "NaN, infinite, zero or negative prediction without a reason", "bad-times", 0),
    ("duplicate", "model id 'roofline' is already registered", "roofline", 0),
    # ended or crashed the process: isolated in a worker, only this model's column is lost
    ("exits", "raised SystemExit: 0", "exits", 1),
    ("hard-exit", "ended its worker process (exit code 0) without returning a result", "hard-exit", 1),
    ("segfault", "crashed (its worker process was killed by SIGSEGV)", "segfault", 1),
]


@pytest.mark.parametrize("name, warning, model_id, named_code", CASES, ids=[c[0] for c in CASES])
def test_bad_plugin_is_reported_and_the_others_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                   warning: str, model_id: str | None, named_code: int | None) -> None:
    code, report, err = run_cli(tmp_path, capsys, name)
    assert code == 0, err
    assert any(warning in w for w in report["warnings"]), report["warnings"]
    assert sum(warning in line for line in err.splitlines()) == 1, err
    assert all(line.startswith("nvperf-bridge: warning: ") for line in err.splitlines())
    # the built-in models still ran and predicted
    predicted = [k["models"]["hong-kim"]["predicted_ns"] for k in kernel_records(report)]
    assert any(p is not None and p > 0 for p in predicted)
    if model_id is not None and named_code is not None:
        code, report, err = run_cli(tmp_path, capsys, name, "--model", model_id, "--model", "roofline")
        assert code == named_code, err
        assert report, "the report is still written when a named model failed"
        if named_code == 1:
            assert err.splitlines()[-1].startswith("nvperf-bridge: error: model "), err
            assert report["models"][model_id]["failed"] is True


def test_bad_times_become_per_kernel_errors_and_json_stays_valid(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = run_cli(tmp_path, capsys, "bad-times")
    assert code == 0
    entries = [k["models"]["bad-times"] for k in kernel_records(report)]
    assert all(e["predicted_ns"] is None and e["error"] for e in entries)
    assert [e["details"]["MWP"] for e in entries] == [None] * len(entries)  # inf written as null, not Infinity
    assert {e["bottleneck"] for e in entries} == {"unknown"}
    assert any("gremlins" in w for w in report["warnings"])
    # strict JSON: no NaN/Infinity tokens anywhere
    json.loads((tmp_path / "report.json").read_text(), parse_constant=lambda token: pytest.fail(token))


def test_duplicate_id_keeps_the_builtin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = run_cli(tmp_path, capsys, "duplicate")
    assert code == 0
    assert report["models"]["roofline"]["origin"].startswith("entry point")
    assert all(k["models"]["roofline"]["predicted_ns"] != 42.0 for k in kernel_records(report))


def test_slow_model_is_given_up_with_model_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = run_cli(tmp_path, capsys, "too-slow", "--model-timeout", "0.5")
    assert code == 0, err
    assert report["models"]["too-slow"]["failed"] is True
    assert "0.5 s model timeout" in report["models"]["too-slow"]["failure"]
    assert any("too-slow" in w and "timeout" in w for w in report["warnings"])
    assert report["models"]["hong-kim"]["failed"] is False
    code, report, err = run_cli(tmp_path, capsys, "too-slow", "--model-timeout", "0.5", "--model", "too-slow")
    assert code == 1
    assert "too-slow" in err.splitlines()[-1] and "timeout" in err.splitlines()[-1]


def test_model_timeout_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(FIXTURE), "--model-timeout", "0"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_named_model_whose_plugin_failed_to_import_exits_1(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = plugin_file(tmp_path, "raises-on-import")
    code = main(["analyze", str(FIXTURE), "--plugin", str(path), "--model", "torch-model", "-f", "json"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "this plugin needs torch" in err and "torch-model" in err
    # the failed plugin registered nothing, so a typo cannot be told from its model: the message
    # offers both readings, with the ids that are installed
    assert "is not installed (installed: hong-kim, kerr, kothapalli, luo-suda, recommended, roofline, transit" in err


def test_workbook_notes_say_what_happened(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    out = tmp_path / "review.xlsx"
    code = main(["analyze", str(FIXTURE), "--plugin", str(plugin_file(tmp_path, "raises-in-evaluate")),
                 "--model", "raises-in-evaluate", "--model", "roofline", "-o", str(out)])
    assert code == 1
    assert "Traceback" not in capsys.readouterr().err
    wb = openpyxl.load_workbook(out)
    texts = [str(c.value) for ws in wb.worksheets for row in ws.iter_rows() for c in row if c.value is not None]
    assert any("evaluate divided by zero" in t for t in texts)


def _live_children() -> list[int]:
    """Processes whose parent is this test process and that have not ended (zombies excluded)."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("name", ["spins", "too-slow"])
def test_model_past_its_timeout_is_stopped_not_left_running(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           name: str) -> None:
    before = set(_live_children())
    started = time.monotonic()
    code, report, err = run_cli(tmp_path, capsys, name, "--model-timeout", "1")
    assert code == 0, err
    assert time.monotonic() - started < 30  # not the 60 s sleep, not forever
    assert report["models"][name]["failed"] is True
    assert "1 s model timeout; its worker process was stopped" in report["models"][name]["failure"]
    assert report["models"]["hong-kim"]["failed"] is False
    assert set(_live_children()) <= before  # the worker was killed and reaped


def test_plugin_output_goes_to_the_warnings_not_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = plugin_file(tmp_path, "prints")
    assert main(["analyze", str(FIXTURE), "--plugin", str(path)]) == 0
    captured = capsys.readouterr()
    # the report on stdout is the report: the plugin's text appears only inside its one warning line (Notes)
    assert captured.out.startswith("# ")
    spam_lines = [line for line in captured.out.splitlines() if "SPAM" in line or "PLUGIN-ERR" in line]
    assert len(spam_lines) == 1 and "model prints printed: PLUGIN-SPAM" in spam_lines[0], spam_lines[:3]
    printed = [line for line in captured.err.splitlines() if "model prints printed:" in line]
    assert len(printed) == 1 and "PLUGIN-SPAM" in printed[0] and "bytes in all" in printed[0]
    assert len(printed[0]) < 2500  # capped: 200 lines of spam are counted, not repeated
    # the model's results are kept
    code, report, err = run_cli(tmp_path, capsys, "prints")
    assert code == 0 and report["models"]["prints"]["failed"] is False
    assert any(w.startswith("model prints printed: ") for w in report["warnings"])


def test_no_isolation_runs_in_process_and_still_survives_sys_exit(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = run_cli(tmp_path, capsys, "exits", "--no-isolation", "--model", "exits", "--model", "roofline")
    assert code == 1 and report["models"]["exits"]["failed"] is True
    assert "SystemExit" in report["models"]["exits"]["failure"]
    assert report["models"]["roofline"]["failed"] is False
    path = plugin_file(tmp_path, "prints")
    assert main(["analyze", str(FIXTURE), "--plugin", str(path), "--no-isolation"]) == 0
    captured = capsys.readouterr()
    spam_lines = [line for line in captured.out.splitlines() if "SPAM" in line]  # Python-level output captured
    assert captured.out.startswith("# ") and len(spam_lines) == 1 and "model prints printed:" in spam_lines[0]
    assert "model prints printed: PLUGIN-SPAM" in captured.err

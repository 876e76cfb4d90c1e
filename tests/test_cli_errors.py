"""The CLI turns every failure into one line on stderr and an exit code."""

from __future__ import annotations

import pytest

from nvperf_bridge import cli
from nvperf_bridge.errors import InputError


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "analyze" in capsys.readouterr().out
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("nvperf-bridge ")


def test_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "--no-such-option"]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out


def test_input_error_is_one_line_with_file_and_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise InputError("no CSV table found", path="run.log", line=12, hint="export with ncu --csv")

    monkeypatch.setattr("nvperf_bridge.registry.load_registry", boom)
    assert cli.main(["models"]) == 1
    err = capsys.readouterr().err
    assert err == "nvperf-bridge: error: run.log:12: no CSV table found (export with ncu --csv)\n"


def test_unexpected_exception_is_one_line_and_debug_shows_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def bug(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("oops")

    monkeypatch.setattr("nvperf_bridge.registry.load_registry", bug)
    assert cli.main(["models"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ZeroDivisionError: oops" in err
    with pytest.raises(ZeroDivisionError):
        cli.main(["--debug", "models"])

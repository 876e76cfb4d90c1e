"""The command line's start-up path (cli.build_app, cli_params): a command runs with only its own
parameters built and its option values converted without pydantic, with the same values and the
same messages as typer's own conversion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nvperf_bridge.cli import build_app, invoked_command, main

LUD = ("magus/magus__metrics_rodinia_lud.csv", "magus/magus__traces_rodinia_lud.csv")


def test_a_command_run_imports_neither_pydantic_nor_the_other_commands(realdata_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code = ("import sys\n"
            "from nvperf_bridge.cli import main\n"
            f"rc = main(['analyze', {str(realdata_dir / LUD[0])!r}, {str(realdata_dir / LUD[1])!r}, '--format', "
            f"'json', '-o', {str(out)!r}, '-q', '--model-timeout', '60', '-m', 'roofline'])\n"
            "commands = sorted(m for m in sys.modules if m.startswith('nvperf_bridge.commands.'))\n"
            "print(rc, 'pydantic' in sys.modules, commands)\n")
    # cwd outside the checkout: `python -c` puts the cwd first on sys.path (see test_gpus_cli)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert run.stdout.split("\n")[0] == "0 False ['nvperf_bridge.commands.analyze']", run.stdout + run.stderr
    assert out.stat().st_size > 0


def test_root_help_lists_every_command_with_its_first_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    import typer.main

    full = typer.main.get_command(build_app())
    for name, command in full.commands.items():
        assert f"  {name} " in text
        first = (command.help or "").split(".")[0].split()[0]
        assert first in text.split(f"  {name} ")[1].split("\n")[0], name


def test_the_invoked_command_is_found_after_root_options() -> None:
    assert invoked_command(["--debug", "analyze", "x.csv"]) == "analyze"
    assert invoked_command(["analyze", "--help"]) == "analyze"
    assert invoked_command(["--help", "analyze"]) is None  # the root's help, as click answers it
    assert invoked_command(["analize", "x.csv"]) is None  # not a command: click lists them
    assert invoked_command([]) is None


@pytest.mark.parametrize("args, message", [
    (["--model-timeout", "abc"], "Invalid value for '--model-timeout': Input should be a valid number"),
    (["--model-timeout", "0"], "Invalid value for '--model-timeout': Input should be greater than or equal to 0.001"),
])
def test_bad_option_values_get_typers_own_message(args: list[str], message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "x.csv", *args]) == 2
    assert message in capsys.readouterr().err


def test_plain_conversion_matches_typers(tmp_path: Path) -> None:
    """Every parameter of every command, converted here and by typer's own converter, for the values a
    user types: the same value and type, or the same error."""
    import typer.main
    from typer import core

    from nvperf_bridge import cli_params

    if not cli_params.install():
        pytest.skip("this typer converts through click types: there is no pydantic step to skip")
    from typer._click import Context
    from typer._click.exceptions import BadParameter
    existing = tmp_path / "a file.csv"
    existing.write_text("x")
    samples = {
        str: ["text", "", " padded ", "-x", "=1+2", "ü"],
        bool: [True, False],
        int: ["3", "-0", "007", "1_000", " 4", "5.0", "x", 150, "49", "50", "600", "601"],
        float: ["0.5", "1.", ".5", "1e3", "+2", "nan", "inf", "1e400", "0.0005", "0.001", "abc", " 1"],
        Path: [str(existing), str(tmp_path / "missing.csv"), str(tmp_path), "-", "relative/x.csv"],
    }
    group = typer.main.get_command(build_app())
    checked = 0
    for command in group.commands.values():
        ctx = Context(command)
        for param in command.params:
            descriptor = param.type_descriptor
            annotation = descriptor.annotation
            many = getattr(annotation, "__origin__", None) is list
            leaf = annotation.__args__[0] if many else annotation
            plain = core.build_runtime_param(descriptor)
            reference = cli_params.typer_runtime_param(descriptor)
            for value in samples.get(leaf, []):
                given = (value,) if many else value
                results = []
                for converter in (plain, reference):
                    try:
                        results.append(("ok", converter._coerce_value(given, param=param, ctx=ctx)))
                    except BadParameter as exc:
                        results.append(("error", exc.format_message()))
                (kind, mine), (expected_kind, theirs) = results
                assert kind == expected_kind and mine == theirs, (command.name, param.name, value, mine, theirs)
                assert type(mine) is type(theirs), (command.name, param.name, value)
                if many and kind == "ok":
                    assert [type(v) for v in mine] == [type(v) for v in theirs]
                checked += 1
    assert checked > 300


def test_a_typer_whose_private_parameters_changed_still_gets_typers_converter(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """typer's converter hook is private: if building our converter fails (a typer release changed the
    parameter object), the option still converts through typer's own, and the command runs."""
    from nvperf_bridge import cli_params

    def changed(_descriptor: object) -> None:
        raise TypeError("RuntimeParam.__init__() got an unexpected keyword argument 'leaf'")

    monkeypatch.setattr(cli_params, "_plain_converter", changed)
    assert main(["analyze", "x.csv", "--model-timeout", "abc"]) == 2  # typer's message path still works
    assert main(["gpus", "--help"]) == 0

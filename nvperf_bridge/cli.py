"""The ``nvperf-bridge`` command line.

Each command lives in its own module under ``nvperf_bridge.commands``; those
modules import only typer at load time (pandas, numpy and matplotlib are
imported inside the command bodies) so ``nvperf-bridge --help`` stays fast.

Errors: the library raises ``NvperfError``; here it becomes one line on
stderr and an exit code (0 ok, 1 bad input or analysis error, 2 usage).
Tracebacks only with ``--debug``.
"""

from __future__ import annotations

import importlib
import sys

import typer

# command name -> (module under nvperf_bridge.commands, function name)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("analyze", "analyze", "analyze_command"),
    ("inspect", "inspect", "inspect_command"),
    ("models", "models", "models_command"),
    ("gpus", "gpus", "gpus_command"),
    ("metrics", "metrics", "metrics_command"),
    ("fit", "fit", "fit_command"),
    ("plot", "plot", "plot_command"),
    ("calibrate", "calibrate", "calibrate_command"),
    ("validate", "validate", "validate_command"),
    ("whatif", "whatif", "whatif_command"),
    ("compare", "compare", "compare_command"),
)

app = typer.Typer(
    name="nvperf-bridge",
    help="Read Nsight Compute / nvprof CSV and run the classic analytical GPU performance models on every kernel.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: typer's rich formatter alone costs ~75 ms of start-up
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    if version:
        from nvperf_bridge import __version__

        typer.echo(f"nvperf-bridge {__version__}")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


for _name, _module, _function in COMMANDS:
    _mod = importlib.import_module(f"nvperf_bridge.commands.{_module}")
    _command = getattr(_mod, _function)
    # a command may ask for click context settings (compare: BEFORE... --against AFTER...)
    app.command(_name, context_settings=getattr(_command, "context_settings", None))(_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Typer runs in standalone mode, so usage errors are printed by it with
    exit code 2; our own errors and unexpected ones are turned into one line.
    """
    from nvperf_bridge.errors import NvperfError
    from nvperf_bridge.signals import handle_signals

    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        with handle_signals():  # Ctrl-C / SIGTERM anywhere: temporary files removed, exit 130 / 143
            app(args=args, prog_name="nvperf-bridge")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except NvperfError as exc:
        if debug:
            raise
        typer.echo(f"nvperf-bridge: error: {exc}", err=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        typer.echo("nvperf-bridge: interrupted", err=True)
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # a bug: one line, the traceback only with --debug
        if debug:
            raise
        typer.echo(
            f"nvperf-bridge: internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)", err=True
        )
        code = 1
    return int(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

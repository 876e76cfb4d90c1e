"""The ``nvperf-bridge`` command line.

Each command lives in its own module under ``nvperf_bridge.commands``; those
modules import only typer at load time (pandas, numpy and matplotlib are
imported inside the command bodies) so ``nvperf-bridge --help`` stays fast.
A run of one command builds an application holding only that command (typer
builds the parameters of every command it holds), and option values are
converted without pydantic (``cli_params``).

Errors: the library raises ``NvperfError``; here it becomes one line on
stderr and an exit code (0 ok, 1 bad input or analysis error, 2 usage).
Tracebacks only with ``--debug``.
"""

from __future__ import annotations

import importlib
import sys
from contextlib import AbstractContextManager, nullcontext

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

ROOT_OPTIONS = frozenset({"--debug", "--version", "-h", "--help"})  # the root's options; none takes a value


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


def build_app(names: frozenset[str] | None = None, *, listing: bool = False) -> typer.Typer:
    """The typer application with every command, or only ``names`` (what ``main`` runs: typer
    builds the parameters of every command it holds, and one command needs only its own).
    ``listing``: each command stands in without its parameters, for the root's help, the version
    and an unknown command's message, which show only the commands' names and first lines."""
    application = typer.Typer(
        name="nvperf-bridge",
        help="Read Nsight Compute / nvprof CSV and run the classic analytical GPU performance models on every "
             "kernel.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain click help: typer's rich formatter alone costs ~75 ms of start-up
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    application.callback(invoke_without_command=True)(_root)
    for name, module, function in COMMANDS:
        if names is not None and name not in names:
            continue
        command = getattr(importlib.import_module(f"nvperf_bridge.commands.{module}"), function)
        if listing:
            command = _stand_in(command)
        # a command may ask for click context settings (compare: BEFORE... --against AFTER...)
        application.command(name, context_settings=getattr(command, "context_settings", None))(command)
    return application


def _stand_in(command: object) -> object:
    """A function without parameters and with ``command``'s docstring (a listing shows its first line)."""

    def stand_in() -> None:  # pragma: no cover - never run: a named command gets the real one
        raise RuntimeError("a listing stand-in was run")

    stand_in.__doc__ = command.__doc__
    return stand_in


def invoked_command(args: list[str]) -> str | None:
    """The command ``args`` run (``analyze`` in ``--debug analyze x.csv``), or None for the root's
    own help, its version, or a name that is not a command (click then lists the commands)."""
    for arg in args:
        if arg in ROOT_OPTIONS:
            if arg in ("-h", "--help", "--version"):
                return None  # eager: answered before any command runs
            continue
        return arg if any(arg == name for name, _, _ in COMMANDS) else None
    return None


def __getattr__(name: str) -> object:
    if name == "app":  # the whole application, for tools that import it (typer's docs generator)
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# commands that never make a pandas text column: they do not import pandas for the text storage setting
_NO_TABLES = frozenset({"gpus"})
# commands that enter the text storage themselves (``text_storage.python_text``), a moment later: analyze
# first starts its figure worker, whose matplotlib import then runs beside this process's import of pandas
_OWN_TEXT_STORAGE = frozenset({"analyze"})


def _text_storage(command: str | None, args: list[str]) -> AbstractContextManager[None]:
    """Python-backed pandas text for a command that reads tables (``text_storage``: Arrow-backed text,
    pandas' default where pyarrow is installed, measured slower and larger for the kernel table); a
    command's own help does not import pandas for it."""
    if command is None or command in _NO_TABLES or command in _OWN_TEXT_STORAGE or "--help" in args or "-h" in args:
        return nullcontext()
    from nvperf_bridge.text_storage import python_text

    return python_text()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Typer runs in standalone mode, so usage errors are printed by it with
    exit code 2; our own errors and unexpected ones are turned into one line.
    ``argv`` None means the process's own command line (the console script,
    ``python -m nvperf_bridge``): the process ends when this returns, and the
    cycle collector is told so (``collector``: what is imported is frozen out
    of its passes). A caller passing its own ``argv`` keeps its collector as it was.
    """
    from nvperf_bridge import collector
    from nvperf_bridge.cli_params import install as install_plain_params
    from nvperf_bridge.errors import NvperfError
    from nvperf_bridge.signals import handle_signals

    args = list(sys.argv[1:] if argv is None else argv)
    collections_before = collector.fewer_collections()
    collector.own_process(argv is None)
    debug = "--debug" in args
    command = invoked_command(args)
    install_plain_params()  # option values converted without importing pydantic (cli_params)
    application = build_app(None, listing=True) if command is None else build_app(frozenset({command}))
    import gc

    try:
        try:
            # Ctrl-C / SIGTERM anywhere: temporary files removed, exit 130 / 143
            with handle_signals(), _text_storage(command, args):
                application(args=args, prog_name="nvperf-bridge")
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
                f"nvperf-bridge: internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)",
                err=True,
            )
            code = 1
    finally:
        gc.set_threshold(*collections_before)
        collector.command_done()
        collector.own_process(False)
    return int(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

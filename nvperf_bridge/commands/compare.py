"""``nvperf-bridge compare``: two runs of the same program, kernel groups matched, a verdict a CI job can act on.

Exit codes: 0 (not slower than ``--fail-if-slower``, or no gate), 1 (slower: the report is still
written), 2 (usage), 1 for bad input as everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def compare_command(
    files: List[str] = typer.Argument(..., metavar="BEFORE... --against AFTER...",
                                      help="Profiler outputs (files or folders) of the BEFORE run, then --against "
                                           "and those of the AFTER run.", show_default=False),
    fail_if_slower: Optional[str] = typer.Option(None, "--fail-if-slower", metavar="PERCENT",
                                                 help="Exit 1 when the matched kernel groups got slower by more "
                                                      "than this, e.g. 5%."),
    gate_on: str = typer.Option("measured", "--gate-on", metavar="measured|MODEL",
                                help="What --fail-if-slower reads: the measured times or a model's predictions."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU profile of both runs (default: from the device name)."),
    gpu_after: Optional[str] = typer.Option(None, "--gpu-after", help="GPU profile of the after run, if different."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Run only this model (repeatable)."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="md, json or xlsx (default: from -o, else md)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here (default: stdout; xlsx needs -o)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", help="Also load models from this .py file."),
    option: Optional[List[str]] = typer.Option(None, "--option", metavar="MODEL.KEY=VALUE", help="A model option."),
    profile_dir: Optional[List[Path]] = typer.Option(None, "--profile-dir", help="Also look for GPU profiles here."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No verdict or warnings on stderr."),
) -> None:
    """Compare a BEFORE and an AFTER run: matched kernels, time change, bottleneck shifts, and why."""
    from nvperf_bridge.commands.analyze import (check_named_models_loaded, check_option_models, parse_options,
                                                print_warnings)
    from nvperf_bridge.compare import compare_files, gate, parse_threshold
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.registry import load_registry
    from nvperf_bridge.reports.compare_report import compare_outputs
    from nvperf_bridge.reports.render import format_for
    from nvperf_bridge.reports.write import check_writable, write_outputs

    before, against = split_against(files)
    report_format = format_for(fmt, output)
    if report_format == "csv":
        raise UsageError("compare writes md, json or xlsx", hint="pass -f json for a machine-readable report")
    if report_format == "xlsx" and output is None:
        raise UsageError("an Excel report needs a file", hint="pass -o compare.xlsx")
    threshold = parse_threshold(fail_if_slower) if fail_if_slower is not None else None
    if output is not None:
        check_writable(output, force=force)
    options = parse_options(list(option or []))
    registry = load_registry(list(plugin or []))
    check_named_models_loaded(registry, list(model or []))
    check_option_models(options, registry, list(model or []))
    if gate_on != "measured" and gate_on not in registry.models:
        raise UsageError(f"--gate-on {gate_on!r} is neither 'measured' nor an installed model",
                         hint="run 'nvperf-bridge models' to list the installed ones")
    result = compare_files(before, against, gpu=gpu, gpu_after=gpu_after,
                           model_ids=list(model or []) or None, options=options, registry=registry,
                           profile_dirs=list(profile_dir or []))
    verdict = gate(result, threshold, gate_on)
    outputs = compare_outputs(result, verdict, report_format, output)
    if output is None:
        typer.echo(outputs[None].decode("utf-8"), nl=False)
    else:
        write_outputs({path: data for path, data in outputs.items() if path is not None}, force=force)
    if not quiet:
        print_warnings(result.warnings)
        typer.echo(f"nvperf-bridge: {verdict.message}", err=True)
    if verdict.slower:
        raise typer.Exit(1)


# ``--against`` is not a click option (an option takes one value): unknown options reach FILES in
# order, and split_against cuts the list there.
compare_command.context_settings = {"ignore_unknown_options": True}  # type: ignore[attr-defined]


def split_against(files: List[str]) -> tuple[list[Path], list[Path]]:
    """``A B --against C D`` -> ([A, B], [C, D]); ``--against=C`` works too. Anything else starting
    with '-' is an unknown option (usage error)."""
    from nvperf_bridge.errors import UsageError

    before: list[Path] = []
    after: list[Path] = []
    seen = False
    for item in files:
        if item == "--against" or item == "-a":
            if seen:
                raise UsageError("--against is given twice", hint="list every AFTER file after one --against")
            seen = True
            continue
        if item.startswith("--against="):
            seen = True
            after.append(Path(item.partition("=")[2]))
            continue
        if item.startswith("-") and item != "-":
            raise UsageError(f"no such option: {item}", hint="see 'nvperf-bridge compare --help'")
        (after if seen else before).append(Path(item))
    if not seen or not after:
        raise UsageError("compare needs the AFTER run", hint="nvperf-bridge compare BEFORE... --against AFTER...")
    if not before:
        raise UsageError("compare needs the BEFORE run", hint="nvperf-bridge compare BEFORE... --against AFTER...")
    return before, after

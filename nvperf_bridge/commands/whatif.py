"""``nvperf-bridge whatif``: one measured kernel at other launch shapes or on other GPUs, through every model."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def whatif_command(
    files: List[Path] = typer.Argument(..., help="Profiler outputs (ncu or nvprof CSV), or folders to search.",
                                       show_default=False),
    kernel: str = typer.Option(..., "--kernel", "-k", help="Kernel id, short or full name (or a unique part of it).",
                               show_default=False),
    vary: Optional[List[str]] = typer.Option(None, "--vary", metavar="PARAM=V1,V2,...",
                                             help="Values to try (repeatable; several give every combination): "
                                                  "block_threads, grid_blocks, registers_per_thread, "
                                                  "shared_mem_per_block_bytes."),
    gpu_target: Optional[List[str]] = typer.Option(None, "--gpu-target", metavar="ID",
                                                   help="Run the points on this GPU profile (repeatable; default: "
                                                        "the measured GPU)."),
    keep: str = typer.Option("work", "--keep", help="When block_threads changes: keep the total 'work' (threads; "
                                                    "the grid follows) or the 'grid'."),
    launch: Optional[str] = typer.Option(None, "--launch", metavar="ID",
                                         help="Which launch of the kernel (kernel_id; default: the longest)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="Profile of the measured GPU (default: from the device name)."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Run only this model (repeatable)."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="md, json, csv or xlsx (default: from -o, else md)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here (default: stdout; xlsx needs -o)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", help="Also load models from this .py file."),
    model_data: Optional[List[str]] = typer.Option(None, "--model-data", metavar="MODEL=FILE.json",
                                                   help="JSON a model needs, e.g. kerr=kerr.json (from 'fit')."),
    option: Optional[List[str]] = typer.Option(None, "--option", metavar="MODEL.KEY=VALUE", help="A model option."),
    profile_dir: Optional[List[Path]] = typer.Option(None, "--profile-dir", help="Also look for GPU profiles here."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No warnings on stderr (they stay in the report)."),
) -> None:
    """Rebuild one kernel for other launch shapes or GPUs and compare every model's predicted time."""
    from nvperf_bridge.commands.analyze import (check_named_models_loaded, check_option_models, parse_options,
                                                print_warnings, read_model_data)
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.registry import load_registry
    from nvperf_bridge.reports.render import format_for
    from nvperf_bridge.reports.whatif_report import whatif_outputs
    from nvperf_bridge.reports.write import check_writable, write_outputs
    from nvperf_bridge.whatif import KEEP_CHOICES, parse_vary, run_study

    report_format = format_for(fmt, output)
    if report_format == "xlsx" and output is None:
        raise UsageError("an Excel report needs a file", hint="pass -o whatif.xlsx")
    if keep not in KEEP_CHOICES:
        raise UsageError(f"--keep {keep!r} is not one of {', '.join(KEEP_CHOICES)}")
    varied = parse_vary(vary or [])
    if not varied and not gpu_target:
        raise UsageError("nothing to vary", hint="pass --vary block_threads=64,128,256 and/or --gpu-target ID")
    if output is not None:
        check_writable(output, force=force)
    options = parse_options(list(option or []))
    for model_id, data in read_model_data(list(model_data or [])).items():
        options.setdefault(model_id, {})["model_data"] = data
    registry = load_registry(list(plugin or []))
    check_named_models_loaded(registry, list(model or []))
    check_option_models(options, registry, list(model or []))
    imported = read_inputs(list(files))
    study = run_study(imported.kernels, kernel=kernel, vary=varied, launch=launch, keep=keep, gpu=gpu,
                      gpu_targets=list(gpu_target or []), model_ids=list(model or []) or None, options=options,
                      registry=registry, profile_dirs=list(profile_dir or []), inputs=imported.inputs,
                      warnings=imported.warnings)
    outputs = whatif_outputs(study, report_format, output)
    if output is None:
        typer.echo(outputs[None].decode("utf-8"), nl=False)
    else:
        write_outputs({path: data for path, data in outputs.items() if path is not None}, force=force)
    if not quiet:
        print_warnings(study.warnings)

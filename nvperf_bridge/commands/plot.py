"""``nvperf-bridge plot``: one figure as PNG (or SVG, PDF) from profiler outputs.

    nvperf-bridge plot transit FILE... --kernel NAME -o transit.png [--gpu ID]
    nvperf-bridge plot accuracy FILE... -o accuracy.png
    nvperf-bridge plot roofline FILE... -o roofline.png

``transit`` draws the Transit figure (Li et al., HPDC'15, Fig. 6) of one
kernel from the transit model's own curves; ``accuracy`` draws measured vs
predicted time for every model. The same figure code feeds the reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

FIGURE_SUFFIXES = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
KINDS = ("transit", "accuracy", "roofline")


def plot_command(
    kind: str = typer.Argument(..., help="Which figure: transit, accuracy or roofline.", show_default=False),
    files: List[Path] = typer.Argument(..., help="Profiler outputs (ncu or nvprof CSV).", show_default=False),
    output: Path = typer.Option(..., "--output", "-o", help="Figure file: .png, .svg or .pdf."),
    kernel: Optional[str] = typer.Option(None, "--kernel", "-k",
                                         help="transit: the kernel (id, name, or a unique part of the name)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU profile id or YAML file (default: from the device name)."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="accuracy: only these models (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", help="Also load models from this .py file."),
    model_data: Optional[List[str]] = typer.Option(None, "--model-data", metavar="MODEL=FILE.json",
                                                   help="JSON a model needs, e.g. kerr=kerr.json."),
    option: Optional[List[str]] = typer.Option(None, "--option", metavar="MODEL.KEY=VALUE",
                                               help="A model option, e.g. transit.precision=dp."),
    profile_dir: Optional[List[Path]] = typer.Option(None, "--profile-dir", help="Also look for GPU profiles here."),
    dpi: int = typer.Option(150, "--dpi", min=50, max=600, help="Resolution of PNG output."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no warnings on stderr."),
) -> None:
    """Draw the Transit figure of one kernel, or measured vs predicted time for every model."""
    from nvperf_bridge.commands.analyze import build_analysis, print_warnings
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.reports.figures import figure_bytes, transit_curves_for, transit_figure
    from nvperf_bridge.reports.progress import Progress
    from nvperf_bridge.reports.write import check_writable, write_bytes

    what = kind.strip().lower()
    if what not in KINDS:
        raise UsageError(f"unknown figure {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    fmt = FIGURE_SUFFIXES.get(output.suffix.lower())
    if fmt is None:
        raise UsageError(f"cannot tell the figure format from {output.name!r}", hint="name it .png, .svg or .pdf")
    if what == "transit" and not kernel:
        raise UsageError("plot transit needs --kernel NAME", hint="see 'nvperf-bridge analyze' for the kernel names")
    check_writable(output, force=force)
    model_ids = ["transit"] if what == "transit" else list(model or [])
    progress = Progress(3, enabled=not quiet)
    try:
        analysis = build_analysis(files, gpu=gpu, model_ids=model_ids, plugin_files=list(plugin or []),
                                  model_data=list(model_data or []), option=list(option or []),
                                  profile_dirs=list(profile_dir or []), progress=progress)
        progress.step("drawing")
        if what == "transit":
            index = pick_kernel(analysis, str(kernel), quiet=quiet)
            curves = transit_curves_for(analysis, index)
            if curves is None:
                raise _transit_failure(analysis, index)
            fig = transit_figure([curves], columns=1, panel_size=(7.0, 5.0),
                                 suptitle=f"Transit figure (Li et al., HPDC'15, Fig. 6) - {analysis.gpu.name}")
        elif what == "roofline":
            fig = _roofline(analysis)
        else:
            if not analysis.measured_ns.notna().any():
                raise UsageError("the input has no measured kernel times, so there is nothing to compare",
                                 hint="add a trace or ncu output with gpu__time_duration.sum")
            fig = _accuracy(analysis)
        write_bytes(output, figure_bytes(fig, fmt=fmt, dpi=dpi), force=force)
    finally:
        progress.done()
    if not quiet:
        print_warnings(analysis.warnings)


def _accuracy(analysis: Any) -> Any:
    """Measured vs predicted; an error when no model can be judged on any kernel (the Accuracy table's rule:
    a prediction that read an input derived from the measured time is not)."""
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.reports.figure_draw import draw_accuracy
    from nvperf_bridge.reports.figures import accuracy_data

    data = accuracy_data(analysis)
    if not data.series:
        raise UsageError("no kernel has a prediction that can be judged against its measured time: every "
                         "prediction failed or read an input derived from that time (such as DRAM bytes = "
                         "throughput x duration)",
                         hint="collect the counts themselves: ncu --metrics dram__bytes_read.sum,"
                              "dram__bytes_write.sum, nvprof --metrics dram_read_transactions,"
                              "dram_write_transactions; 'nvperf-bridge analyze' lists what each model lacks")
    return draw_accuracy(data)


def _roofline(analysis: Any) -> Any:
    """The roofline of the kernel groups; an error naming what is missing when none can be placed."""
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.reports.figures import roofline_figure
    from nvperf_bridge.review.build import review_groups
    from nvperf_bridge.review.roofline import roofline_points, roofs_by_gpu

    points = roofline_points(analysis, review_groups(analysis), limit=30)
    if not (points["why_not"] == "").any():
        why = points["why_not"].iloc[0] if len(points) else "no kernels"
        raise UsageError(f"no kernel group can be placed on the roofline: {why}",
                         hint="collect FLOPs and DRAM bytes: ncu --metrics dram__bytes.sum,"
                              "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,"
                              "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,"
                              "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum "
                              "(nvprof: --metrics flop_count_sp,dram_read_transactions,dram_write_transactions)")
    return roofline_figure(points, roofs_by_gpu(analysis, points))


def pick_kernel(analysis: Any, wanted: str, *, quiet: bool = False) -> Any:
    """The row for ``--kernel``: exact id, exact short or full name, else a unique name fragment.

    Several launches of the same kernel: the longest one (said on stderr).
    """
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.reports.common import display_names, full_names, kernel_ids, ranking_times

    kernels = analysis.kernels
    ids, short, full = kernel_ids(kernels), display_names(kernels), full_names(kernels)
    matches = kernels.index[ids == wanted]
    if matches.empty:
        matches = kernels.index[(short == wanted) | (full == wanted)]
    if matches.empty:
        needle = wanted.lower()
        matches = kernels.index[short.str.lower().str.contains(needle, regex=False)
                                | full.str.lower().str.contains(needle, regex=False)]
    if matches.empty:
        names = ", ".join(sorted(set(short))[:8])
        raise UsageError(f"no kernel matches {wanted!r}", hint=f"kernels in the input include: {names}")
    distinct = sorted(set(short.loc[matches]))
    if len(distinct) > 1:
        listed = ", ".join(distinct[:8]) + (" ..." if len(distinct) > 8 else "")
        raise UsageError(f"{wanted!r} matches {len(distinct)} different kernels: {listed}",
                         hint="give the full name or the kernel id")
    times = ranking_times(analysis).loc[matches]
    chosen = times.idxmax()
    if len(matches) > 1 and not quiet:
        typer.echo(f"nvperf-bridge: note: {len(matches)} launches of {distinct[0]}; plotting the longest "
                   f"(kernel id {ids.loc[chosen]})", err=True)
    return chosen


def _transit_failure(analysis: Any, index: Any) -> Exception:
    from nvperf_bridge.errors import ModelError

    run = analysis.runs.get("transit")
    if run is None or run.result is None:
        reason = run.failure if run is not None else "the transit model is not installed"
        return ModelError(f"cannot draw the Transit figure: {reason}", model_id="transit")
    from nvperf_bridge.reports.common import kernel_ids

    reason = run.result.loc[index, "error"] or "no prediction"
    return ModelError(f"cannot draw the Transit figure: {reason}", model_id="transit",
                      kernel_id=str(kernel_ids(analysis.kernels).loc[index]))

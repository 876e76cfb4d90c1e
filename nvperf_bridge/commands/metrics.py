"""``nvperf-bridge metrics``: the profiler command line that collects what the installed models need."""

from __future__ import annotations

from typing import List, Optional

import typer

# nvprof names that are events (``--events``), not metrics (``--metrics``)
NVPROF_EVENTS = ("gld_request", "gst_request", "shared_load", "shared_store", "elapsed_cycles_sm")
# nvprof metrics the importer uses to derive request counts where the events above do not exist (CC >= 6)
NVPROF_EXTRA = ("gld_transactions_per_request", "gst_transactions_per_request",
                "shared_load_transactions_per_request", "shared_store_transactions_per_request")
# columns every analysis wants besides the models' own: measured time and launch shape
ALWAYS = ("duration_ns", "grid_blocks", "block_threads", "registers_per_thread", "shared_mem_per_block_bytes",
          "achieved_occupancy")


def metrics_command(
    profiler: str = typer.Option("ncu", "--profiler", help="ncu (Nsight Compute) or nvprof."),
    plugin: Optional[List[str]] = typer.Option(None, "--plugin", help="Also load a model plugin from this .py file."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Print the profiler command that collects every counter the installed models use."""
    import json
    import re

    from nvperf_bridge.columns import CANONICAL_COLUMNS, IDENTITY_COLUMNS, collecting_metric
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.registry import load_registry

    if profiler not in ("ncu", "nvprof"):
        raise UsageError(f"--profiler must be 'ncu' or 'nvprof', not {profiler!r}")
    registry = load_registry(plugin or [])
    columns: list[str] = list(ALWAYS)
    for loaded in registry.models.values():
        req = loaded.model.requires
        columns.extend(c for c in (*req.required, *req.optional) if c not in columns)
    columns = [c for c in columns if c in CANONICAL_COLUMNS and c not in IDENTITY_COLUMNS]

    metrics: list[str] = []
    events: list[str] = []
    from_trace: list[str] = []
    uncollected: list[str] = []
    for column in columns:
        spec = collecting_metric(column, profiler)
        if not spec:
            uncollected.append(column)
            continue
        if profiler == "nvprof" and "(trace)" in spec:
            from_trace.append(column)
            continue
        names = re.findall(r"[A-Za-z_][\w.]*", spec) if profiler == "nvprof" else spec.split(",")
        for name in names:
            name = name.strip()
            if profiler == "nvprof" and (name == "x" or not name.islower()):
                continue  # "x 32" scale factors and prose
            target = events if name in NVPROF_EVENTS else metrics
            if name and name not in target:
                target.append(name)
    if profiler == "nvprof":
        metrics.extend(m for m in NVPROF_EXTRA if m not in metrics)
    if profiler == "ncu":
        metrics.append("device__attribute_display_name")  # so the GPU profile is picked by name
        commands = [f"ncu --csv --page raw --print-units base --metrics {','.join(metrics)} ./app > profile.csv"]
        usage = "nvperf-bridge analyze profile.csv"
    else:
        parts = [f"--metrics {','.join(metrics)}"] + ([f"--events {','.join(events)}"] if events else [])
        commands = [
            f"nvprof --csv {' '.join(parts)} ./app 2> metrics.csv",
            "nvprof --csv --print-gpu-trace ./app 2> trace.csv",
        ]
        usage = "nvperf-bridge analyze metrics.csv trace.csv   (joined on kernel name)"
    if as_json:
        typer.echo(json.dumps({"profiler": profiler, "columns": columns, "metrics": metrics, "events": events,
                               "from_trace": from_trace, "not_collected": uncollected, "commands": commands,
                               "problems": registry.problems}, indent=2))
        return
    for command in commands:
        typer.echo(command)
    typer.echo(f"# then: {usage}", err=True)
    typer.echo(f"# covers: {', '.join(c for c in columns if c not in uncollected)}", err=True)
    if from_trace:
        typer.echo(f"# from the GPU trace: {', '.join(from_trace)}", err=True)
    if uncollected:
        typer.echo(f"# no {profiler} metric for: {', '.join(uncollected)}", err=True)
    for problem in registry.problems:
        typer.echo(f"nvperf-bridge: warning: {problem}", err=True)

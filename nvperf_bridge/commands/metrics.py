"""``nvperf-bridge metrics``: the profiler command line that collects what the installed models need."""

from __future__ import annotations

from typing import List, Optional

import typer

# nvprof names that are events (``--events``), not metrics (``--metrics``). Events differ per compute
# capability (gld_request is Kepler's, global_load Maxwell/Pascal's) and nvprof stops on a name the GPU
# does not have, so the command asks for none: the request counts come from the metrics below, which
# every GPU nvprof supports has.
NVPROF_EVENTS = ("gld_request", "gst_request", "global_load", "global_store", "shared_load", "shared_store",
                 "elapsed_cycles_sm")
KEPLER_EVENTS_HINT = "gld_request,gst_request,shared_load,shared_store"
# read when present (exact 32-byte sectors on Kepler, counters.global_sectors) but not asked for by
# default: nvprof stops on a metric the GPU lacks, and Maxwell and later lack these
KEPLER_ONLY = ("l2_l1_read_transactions", "l2_l1_write_transactions")
# nvprof metrics the importer uses to derive request counts (transactions / transactions per request)
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

    from nvperf_bridge.counters import NVPROF_RAW_INPUTS
    from nvperf_bridge.importers.aliases import alias_metrics

    # what the importers map (data/metric_aliases.csv) or the models read under nvprof's own name
    readable = alias_metrics() | frozenset(NVPROF_RAW_INPUTS)
    not_mapped: list[str] = []
    metrics: list[str] = []
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
        asked_before = len(metrics)
        for name in names:
            name = name.strip()
            if profiler == "nvprof" and (name == "x" or not name.islower()):
                continue  # "x 32" scale factors and prose
            if profiler == "nvprof" and name in NVPROF_EVENTS:
                continue  # see NVPROF_EVENTS
            if profiler == "nvprof" and name not in readable:
                if name not in not_mapped:
                    not_mapped.append(name)  # e.g. dram_utilization: a 0-10 level no importer reads
                continue
            if name and name not in metrics:
                metrics.append(name)
        if profiler == "nvprof" and len(metrics) == asked_before and any(n in not_mapped for n in names):
            uncollected.append(column)  # only names no importer reads: not asked, so not covered
    if profiler == "nvprof":
        metrics.extend(m for m in (*NVPROF_EXTRA, *NVPROF_RAW_INPUTS) if m not in metrics and m not in KEPLER_ONLY)
    if profiler == "ncu":
        metrics.append("device__attribute_display_name")  # so the GPU profile is picked by name
        commands = [f"ncu --csv --page raw --print-units base --metrics {','.join(metrics)} ./app > profile.csv"]
        usage = "nvperf-bridge analyze profile.csv"
    else:
        parts = [f"--metrics {','.join(metrics)}"]  # no --events: see NVPROF_EVENTS
        commands = [
            f"nvprof --csv {' '.join(parts)} ./app 2> metrics.csv",
            "nvprof --csv --print-gpu-trace ./app 2> trace.csv",
        ]
        usage = "nvperf-bridge analyze metrics.csv trace.csv   (joined on kernel name)"
    if as_json:
        typer.echo(json.dumps({"profiler": profiler, "columns": columns, "metrics": metrics, "events": [],
                               "from_trace": from_trace, "not_collected": uncollected, "not_mapped": not_mapped,
                               "commands": commands,
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
    if not_mapped:
        typer.echo(f"# not asked for (no importer reads them): {', '.join(not_mapped)}", err=True)
    if profiler == "nvprof":
        typer.echo(f"# request counts come from transactions / transactions per request; on Kepler "
                   f"--events {KEPLER_EVENTS_HINT} counts them directly, and --metrics "
                   f"{','.join(KEPLER_ONLY)} gives exact 32-byte sector counts", err=True)
    for problem in registry.problems:
        typer.echo(f"nvperf-bridge: warning: {problem}", err=True)

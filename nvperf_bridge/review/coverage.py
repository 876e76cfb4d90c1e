"""Thin answers are loud: which kernels each model predicted, and for those none did, the
counters that are missing and the exact profiler command that collects them.

The command follows the input: nvprof files get an ``nvprof --metrics`` line
(Nsight Compute does not run on GPUs before Volta), everything else an
``ncu --section ... --metrics ...`` line. Metric names come from the
canonical column table (``columns.py``), so the advice and ``nvperf-bridge
metrics`` never disagree.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.columns import CANONICAL_COLUMNS
from nvperf_bridge.model import without_reason

# ncu sections that collect a canonical column better than a bare metric (the section adds
# the context Nsight's own rules need).
_NCU_SECTION = {
    "grid_blocks": "LaunchStats", "block_threads": "LaunchStats", "registers_per_thread": "LaunchStats",
    "shared_mem_per_block_bytes": "LaunchStats", "achieved_occupancy": "Occupancy",
    "theoretical_occupancy": "Occupancy", "sol_sm_fraction": "SpeedOfLight", "sol_memory_fraction": "SpeedOfLight",
    "sol_dram_fraction": "SpeedOfLight", "duration_ns": "SpeedOfLight",
}


# Columns the review reads beside the models' inputs: the speed-of-light view and achieved occupancy.
REVIEW_INPUTS: tuple[str, ...] = ("sol_sm_fraction", "achieved_occupancy")


def throughput_command(nvprof: bool) -> str:
    """The command that collects what the speed-of-light view reads."""
    if nvprof:
        return ("nvprof --metrics dram_read_transactions,dram_write_transactions,issue_slot_utilization "
                "--csv --log-file metrics.csv ./your_app")
    return "ncu --section SpeedOfLight --csv --page raw ./your_app > profile.csv"


def model_coverage(analysis: Any) -> list[dict[str, Any]]:
    """Per model (failed ones too): kernels predicted / not predicted and the commonest reason."""
    lines = []
    total = len(analysis.kernels)
    for mid, run in analysis.runs.items():
        if run.result is None:
            lines.append({"model": mid, "predicted": 0, "not_predicted": total, "reason": run.failure})
            continue
        predicted = int(run.result["predicted_ns"].notna().sum())
        reasons = run.result["error"][~without_reason(run.result["error"])].value_counts()
        lines.append({"model": mid, "predicted": predicted, "not_predicted": total - predicted,
                      "reason": str(reasons.index[0]) if len(reasons) else ""})
    return lines


def missing_counters(analysis: Any, rows: pd.Index) -> dict[str, list[str]]:
    """Per model that did not predict these rows: the required canonical columns they lack."""
    out: dict[str, list[str]] = {}
    kernels = analysis.kernels
    for mid, run in analysis.runs.items():
        if run.result is not None and run.result.loc[rows, "predicted_ns"].notna().any():
            continue
        required = getattr(run, "requires", ()) or ()
        lacking = [c for c in required if c not in kernels.columns or kernels.loc[rows, c].isna().all()]
        if lacking:
            out[mid] = lacking
    return out


def uses_nvprof(analysis: Any) -> bool:
    return any(str(getattr(item, "format", "")).startswith("nvprof") for item in analysis.inputs)


def collect_command(columns: list[str], nvprof: bool) -> str:
    """The one profiler command line that collects ``columns`` (canonical names)."""
    if nvprof:
        metrics, trace = [], False
        for name in columns:
            spec = CANONICAL_COLUMNS.get(name)
            if spec is None or not spec.nvprof:
                continue
            if "(trace)" in spec.nvprof:
                trace = True
                continue
            # "dram_read_transactions + dram_write_transactions, x 32" -> the two metric names
            metrics.extend(re.findall(r"[a-z][a-z0-9]*_[a-z0-9_]+", spec.nvprof))
        parts = []
        if metrics:
            parts.append(f"nvprof --metrics {','.join(dict.fromkeys(metrics))} --csv --log-file metrics.csv ./your_app")
        if trace:
            parts.append("nvprof --print-gpu-trace --csv --log-file trace.csv ./your_app")
        return " ; ".join(parts)
    sections, metrics = [], []
    for name in columns:
        spec = CANONICAL_COLUMNS.get(name)
        if name in _NCU_SECTION:
            sections.append(_NCU_SECTION[name])
        elif spec is not None and spec.ncu:
            metrics.extend(m.strip() for m in spec.ncu.split(",") if m.strip())
    command = ["ncu"]
    command += [f"--section {s}" for s in dict.fromkeys(sections)]
    if metrics:
        command.append(f"--metrics {','.join(dict.fromkeys(metrics))}")
    command += ["--csv", "--page raw", "./your_app", "> profile.csv"]
    return " ".join(command)


def unpredicted_groups(analysis: Any, groups: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """Every kernel group (of the first ``limit``) no model predicted: what each model lacks and the
    command that collects all of it."""
    code = groups.group_of.to_numpy()
    nvprof = uses_nvprof(analysis)
    # the rows any model predicted, then the groups holding one: one pass per model, not one lookup per group
    predicted_row = np.zeros(len(analysis.kernels), dtype=bool)
    for run in analysis.runs.values():
        if run.result is not None:
            predicted_row |= run.result["predicted_ns"].reindex(analysis.kernels.index).notna().to_numpy()
    predicted_groups = set(np.unique(code[predicted_row]).tolist())
    out = []
    for position, group in enumerate(groups.table["group"][:limit]):
        if group in predicted_groups:
            continue
        rows = analysis.kernels.index[code == group]
        lacking = missing_counters(analysis, rows)
        union = list(dict.fromkeys(c for cols in lacking.values() for c in cols))
        # the review itself (Nsight's view, the occupancy advice) reads these too
        union += [c for c in REVIEW_INPUTS if c not in analysis.kernels.columns and c not in union]
        out.append({"group": int(group), "kernel": str(groups.table["kernel"].iloc[position]),
                    "missing": lacking, "command": collect_command(union, nvprof) if union else ""})
    return out


def thin_warnings(analysis: Any, groups: Any, unpredicted: list[dict[str, Any]]) -> list[str]:
    """Warnings the report must show when the answer is thin (never 'None' beside an empty result)."""
    warnings = []
    if not analysis.ok_runs() and analysis.runs:
        warnings.append("no model produced results")
    if unpredicted:
        kernels = len(unpredicted)
        share = groups.table.set_index("group").loc[[u["group"] for u in unpredicted], "share"].sum()
        text = f"no model predicted {kernels} of {len(groups.table)} kernel group{'s' if len(groups.table) != 1 else ''}"
        if share == share and share > 0:
            text += f" ({share:.0%} of the GPU time)"
        warnings.append(text + "; the counters that are missing and the command that collects them are listed")
    if groups.time_source == "none":
        warnings.append("the input has no measured times: no time share, and no model's accuracy can be checked")
    return warnings


__all__ = ["REVIEW_INPUTS", "collect_command", "throughput_command", "missing_counters", "model_coverage", "thin_warnings", "unpredicted_groups",
           "uses_nvprof"]

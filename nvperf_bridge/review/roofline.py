"""Where each reviewed kernel group sits under the GPU's roofs (Williams et al.'s roofline).

Per group (time-weighted over its launches): arithmetic intensity = FLOPs /
DRAM bytes, achieved rate = FLOPs / measured time, and the attainable rate
min(peak FLOP/s, intensity x peak bandwidth) of the group's GPU profile. A
group needs FLOP counters (``flop_sp``/``flop_dp``/``flop_hp``), DRAM bytes and a
measured time to be placed; the others are listed as not placed, with why.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.model import column_or_nan


def roofline_points(analysis: Any, groups: Any, limit: int | None = None) -> pd.DataFrame:
    """One row per group (of the first ``limit``): kernel, gpu (the group's device profile name), share, flops, bytes, intensity, achieved,
    attainable (FLOP/s), fraction_of_roof, bound ('memory' left of the ridge, 'compute' right), why_not."""
    kernels = analysis.kernels
    flops = (column_or_nan(kernels, "flop_sp").fillna(0) + column_or_nan(kernels, "flop_dp").fillna(0)
             + column_or_nan(kernels, "flop_hp").fillna(0))
    has_flops = kernels.columns.intersection(["flop_sp", "flop_dp", "flop_hp"]).size > 0
    dram = column_or_nan(kernels, "dram_bytes")
    dram = dram.fillna(column_or_nan(kernels, "dram_read_bytes") + column_or_nan(kernels, "dram_write_bytes"))
    duration = analysis.measured_ns.where(analysis.measured_ns > 0)
    launches = column_or_nan(kernels, "invocations").fillna(1.0).clip(lower=1.0)
    code = groups.group_of.to_numpy()
    rows = []
    for position, row in enumerate(groups.table.head(limit).itertuples(index=False)):
        index = kernels.index[code == row.group]
        gpu = analysis.gpu_of(index)  # a group lives on one device: its own roofs
        peak = float(gpu.peak_fp32_flop_per_s)
        bandwidth = float(gpu.memory_bandwidth_bytes_per_s)
        ok = duration.loc[index].notna() & dram.loc[index].notna()
        why = ""
        if not has_flops:
            why = "no FLOP counters (flop_sp / flop_dp)"
        elif not ok.any():
            why = "no DRAM bytes or no measured time"
        total_flops = float((flops.loc[index][ok] * launches.loc[index][ok]).sum())
        total_bytes = float((dram.loc[index][ok] * launches.loc[index][ok]).sum())
        total_time = float((duration.loc[index][ok] * launches.loc[index][ok]).sum()) * 1e-9
        if not why and (total_flops <= 0 or total_bytes <= 0 or total_time <= 0):
            why = "no floating-point work" if total_flops <= 0 else "no DRAM traffic"
        intensity = total_flops / total_bytes if not why else np.nan
        achieved = total_flops / total_time if not why else np.nan
        attainable = min(peak, intensity * bandwidth) if not why else np.nan
        rows.append({
            "group": int(row.group), "kernel": row.kernel, "gpu": gpu.name, "share": row.share, "top": bool(row.top),
            "flops": total_flops if not why else np.nan, "bytes": total_bytes if not why else np.nan,
            "intensity": intensity, "achieved": achieved, "attainable": attainable,
            "fraction_of_roof": achieved / attainable if not why and attainable > 0 else np.nan,
            "bound": ("" if why else ("memory" if intensity * bandwidth < peak else "compute")),
            "why_not": why,
        })
    return pd.DataFrame(rows, columns=["group", "kernel", "gpu", "share", "top", "flops", "bytes", "intensity", "achieved",
                                       "attainable", "fraction_of_roof", "bound", "why_not"])


def roofs(gpu: Any) -> dict[str, float]:
    """The GPU's roofs: peak FP32 FLOP/s, peak DRAM bandwidth (bytes/s) and the ridge intensity."""
    peak = float(gpu.peak_fp32_flop_per_s)
    bandwidth = float(gpu.memory_bandwidth_bytes_per_s)
    return {"peak_flop_per_s": peak, "bandwidth_bytes_per_s": bandwidth, "ridge_flop_per_byte": peak / bandwidth}


def roofs_by_gpu(analysis: Any, points: pd.DataFrame) -> dict[str, dict[str, float]]:
    """The roofs of every GPU that holds a placed group (profile name -> ``roofs``), the run's main GPU
    first; just the main GPU when nothing is placed."""
    profiles = {analysis.gpu.name: analysis.gpu}
    for profile in {id(p): p for p in analysis.row_gpus()}.values():
        profiles.setdefault(profile.name, profile)
    placed = set(points.loc[points["why_not"] == "", "gpu"]) if len(points) else set()
    chosen = [name for name in profiles if name in placed] or [analysis.gpu.name]
    return {name: roofs(profiles[name]) for name in chosen}


__all__ = ["roofline_points", "roofs", "roofs_by_gpu"]

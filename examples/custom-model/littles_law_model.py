"""A complete third-party nvperf-bridge model plugin: Little's law for DRAM traffic.

Little's law says the bandwidth a kernel can sustain is the data it keeps in
flight divided by the memory latency. With N active warps per SM on S SMs,
each with one outstanding global access of B bytes per memory warp
instruction, the sustainable bandwidth is

    BW_littles = N * S * B / latency                      (Little's law)
    BW         = min(BW_littles, peak DRAM bandwidth)
    time       = DRAM bytes / BW

Inputs (canonical KernelFrame columns): dram_bytes, inst_global_ld,
inst_global_st, achieved_occupancy (optional: falls back to launch
resources), grid_blocks, block_threads. Machine constant: memory_latency_ns,
taken from the GPU profile's ``models: littles-law:`` block when it has one.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.launch import active_sms, active_warps_per_sm
from nvperf_bridge.model import (
    ConstantSpec,
    Requirements,
    column_or_nan,
    constant_values,
    empty_result,
    missing_inputs,
)


class LittlesLawModel:
    id = "littles-law"
    version = "0.1.0"
    description = "Sustainable DRAM bandwidth from memory concurrency (Little's law); memory time only."
    paper = "Little, J. D. C. (1961). A proof for the queuing formula L = lambda W. Operations Research 9(3)."
    requires = Requirements(
        required=("dram_bytes", "inst_global_ld", "inst_global_st", "grid_blocks", "block_threads"),
        optional=("achieved_occupancy",),
    )
    constants = (
        ConstantSpec(
            name="memory_latency_ns",
            default=500.0,
            unit="ns",
            bounds=(50.0, 5000.0),
            description="average DRAM access latency under load",
            source="order of magnitude from microbenchmark studies (e.g. Jia et al. 2018); calibrate per GPU",
        ),
    )

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        out = empty_result(kernels)
        out["error"] = missing_inputs(kernels, self.requires.required)
        latency_s = constant_values(self, gpu)["memory_latency_ns"] * 1e-9

        dram_bytes = column_or_nan(kernels, "dram_bytes")
        mem_insts = column_or_nan(kernels, "inst_global_ld") + column_or_nan(kernels, "inst_global_st")
        bytes_per_mem_inst = dram_bytes / mem_insts.where(mem_insts > 0)
        n_warps, _ = active_warps_per_sm(kernels, gpu)
        in_flight_bytes = n_warps * active_sms(kernels, gpu) * bytes_per_mem_inst
        bw_littles = in_flight_bytes / latency_s
        bw = np.minimum(bw_littles, gpu.memory_bandwidth_bytes_per_s)

        no_traffic = (out["error"] == "") & ~(dram_bytes > 0)
        out.loc[no_traffic, "error"] = "no DRAM traffic: this model predicts memory time only"
        out["predicted_ns"] = dram_bytes / bw * 1e9
        limited = bw_littles < gpu.memory_bandwidth_bytes_per_s
        out["bottleneck"] = np.where(limited, "memory-latency", "memory-bandwidth")
        out["state"] = np.where(limited, "concurrency-limited", "bandwidth-limited")
        out["in_flight_bytes"] = in_flight_bytes
        out["bandwidth_gb_per_s"] = bw / 1e9
        return out


@hookimpl
def register_models(register):  # type: ignore[no-untyped-def]
    register(LittlesLawModel())

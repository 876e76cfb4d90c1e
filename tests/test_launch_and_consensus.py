"""Launch geometry shared by the models, and the consensus bottleneck."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from profile_factory import make_profile

from nvperf_bridge.review.verdict import weighted_consensus
from nvperf_bridge.launch import (
    active_blocks_per_sm,
    active_warps_per_sm,
    per_thread,
    repetitions,
    resource_blocks_per_sm,
)


@pytest.fixture
def gpu():
    # Volta-like limits: 64 warps, 32 blocks, 64K registers, 96 KiB shared memory per SM, 80 SMs.
    return make_profile()


def frame(**columns: list[float]) -> pd.DataFrame:
    return pd.DataFrame(columns)


def test_resource_limits_match_the_occupancy_calculator(gpu) -> None:
    k = frame(block_threads=[256, 256, 256, 1024], registers_per_thread=[32, 64, 32, 32],
              shared_mem_per_block_bytes=[0, 0, 49152, 0], grid_blocks=[1000] * 4)
    # 32 regs x 256 threads = 8K regs -> 8 blocks (also the 64-warp limit); 64 regs -> 4 blocks;
    # 48 KiB shared -> 2 blocks; 1024 threads = 32 warps -> 2 blocks.
    assert list(resource_blocks_per_sm(k, gpu)) == [8, 4, 2, 2]


def test_active_warps_prefer_achieved_then_theoretical_then_resources(gpu) -> None:
    k = frame(block_threads=[256, 256, 256], registers_per_thread=[64, 64, 64], grid_blocks=[1000] * 3,
              achieved_occupancy=[0.25, np.nan, np.nan], theoretical_occupancy=[0.5, 0.5, np.nan])
    n, source = active_warps_per_sm(k, gpu)
    assert list(n) == [16, 32, 32]
    assert list(source) == ["achieved_occupancy", "theoretical_occupancy", "occupancy calculator"]


def test_small_grid_caps_active_warps_and_reps(gpu) -> None:
    k = frame(block_threads=[128], grid_blocks=[40], achieved_occupancy=[0.9], registers_per_thread=[16])
    n, _ = active_warps_per_sm(k, gpu)
    assert n[0] == 4  # 40 blocks x 4 warps over 40 SMs: one block each
    assert active_blocks_per_sm(k, gpu)[0] == 1
    assert repetitions(k, gpu)[0] == 1


def test_per_thread_counts_divide_by_total_warps(gpu) -> None:
    k = frame(block_threads=[96], grid_blocks=[10], inst_executed=[3000.0])
    assert per_thread(k, gpu, "inst_executed")[0] == 100.0  # 3 warps x 10 blocks


def test_consensus_ignores_unknown_and_errors() -> None:
    labels = pd.DataFrame({
        "a": ["compute", "memory-bandwidth", None, "unknown"],
        "b": ["compute", "memory-latency", None, "unknown"],
        "c": ["memory-bandwidth", "memory-bandwidth", "parallelism", None],
    })
    weights = (labels.notna() & (labels != "unknown")).astype(float)
    best, agree, voters = weighted_consensus(labels, weights)
    assert list(best) == ["compute", "memory-bandwidth", "parallelism", "unknown"]
    assert list(agree) == [2, 2, 1, 0]
    assert list(voters) == [3, 3, 1, 0]

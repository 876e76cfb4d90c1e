"""LaunchGeometry: one per frame, and the issue-15 defect (N x #Rep double counting) fixed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from profile_factory import make_profile

from nvperf_bridge import launch
from nvperf_bridge.analysis import run_models
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.launch import compute_geometry, launch_geometry, shared_geometry
from nvperf_bridge.registry import load_registry


@pytest.fixture
def gpu():
    # Volta limits (cc 7.0): 64 warps, 32 blocks, 64K registers, 96 KiB shared memory per SM, 80 SMs.
    return make_profile()


def test_fractional_achieved_occupancy_does_not_double_count(gpu) -> None:
    # 256-thread blocks (8 warps), 1000 blocks on 80 SMs: each SM runs 100 warps over the launch.
    # Achieved occupancy 0.24 -> N = 15.36 warps. The old geometry took floor(15.36 / 8) = 1 block,
    # #Rep = 1000 / 80 = 12.5 and so N x #Rep = 192 warps per SM: 1.92x the work.
    k = pd.DataFrame({"grid_blocks": [1000.0], "block_threads": [256.0], "registers_per_thread": [32.0],
                      "shared_mem_per_block_bytes": [0.0], "achieved_occupancy": [0.24]})
    g = compute_geometry(k, gpu)
    assert g.active_warps_per_sm[0] == pytest.approx(15.36)
    assert g.warps_per_sm[0] == 100.0
    assert g.active_warps_per_sm[0] * g.repetitions[0] == pytest.approx(100.0)
    assert g.active_blocks_per_sm[0] * g.repetitions[0] == pytest.approx(1000 / 80)
    assert g.theoretical_blocks_per_sm[0] == 8 and g.occupancy_limiter[0] == "warps"
    assert g.occupancy_limiters[0] == "warps and registers"  # 32 registers x 64 warps fill the file too


@pytest.mark.parametrize("achieved", [0.1, 0.37, 0.5, 0.93])
def test_n_times_rep_is_the_warps_each_sm_runs(gpu, achieved: float) -> None:
    k = pd.DataFrame({"grid_blocks": [333.0, 5000.0, 81.0], "block_threads": [96.0, 512.0, 1024.0],
                      "registers_per_thread": [40.0, 64.0, 24.0], "achieved_occupancy": [achieved] * 3})
    g = compute_geometry(k, gpu)
    np.testing.assert_allclose(g.active_warps_per_sm * g.repetitions, g.total_warps / g.active_sms)


def test_without_measured_occupancy_rep_is_hong_kim_eq21(gpu) -> None:
    # 64 registers x 256 threads: 4 resident blocks (registers). Eq. 21: #Rep = 1000 / (4 x 80).
    k = pd.DataFrame({"grid_blocks": [1000.0], "block_threads": [256.0], "registers_per_thread": [64.0],
                      "shared_mem_per_block_bytes": [0.0]})
    g = compute_geometry(k, gpu)
    assert g.active_warps_source[0] == launch.N_FROM_CALCULATOR
    assert (g.resident_blocks_per_sm[0], g.active_warps_per_sm[0]) == (4, 32)
    assert g.repetitions[0] == pytest.approx(1000 / (4 * 80))
    assert g.occupancy_limiter[0] == "registers"
    # what each resource allows, for advice ("64 registers per thread allow 4 blocks of 256 threads")
    assert (g.blocks_limit_registers[0], g.blocks_limit_warps[0], g.blocks_limit_blocks[0]) == (4, 8, 32)
    assert g.allocated_registers_per_block[0] == 64 * 256


def test_tail_wave(gpu) -> None:
    # 8 blocks per SM x 80 SMs = 640 blocks a wave; 1000 blocks = 1.5625 waves, the second a tail.
    k = pd.DataFrame({"grid_blocks": [1000.0, 640.0], "block_threads": [256.0, 256.0],
                      "registers_per_thread": [32.0, 32.0], "shared_mem_per_block_bytes": [0.0, 0.0]})
    g = compute_geometry(k, gpu)
    assert list(g.waves) == [1000 / 640, 1.0]
    assert list(g.full_waves) == [2.0, 1.0]


def test_grid_smaller_than_the_machine(gpu) -> None:
    k = pd.DataFrame({"grid_blocks": [40.0, 120.0], "block_threads": [128.0, 128.0], "registers_per_thread": [16.0] * 2,
                      "achieved_occupancy": [0.9, np.nan]})
    g = compute_geometry(k, gpu)
    # 40 blocks on 80 SMs: 40 active SMs, one block (4 warps) each, whatever occupancy said.
    assert (g.active_sms[0], g.resident_blocks_per_sm[0], g.active_warps_per_sm[0], g.repetitions[0]) == (40, 1, 4, 1)
    # 120 blocks: every SM, at most 2 blocks resident (ceil(120 / 80)), 6 warps per SM on average.
    assert (g.active_sms[1], g.resident_blocks_per_sm[1], g.warps_per_sm[1]) == (80, 2, 6)
    assert g.active_warps_per_sm[1] * g.repetitions[1] == pytest.approx(6.0)


def test_invalid_launch_has_no_resident_blocks(gpu) -> None:
    k = pd.DataFrame({"grid_blocks": [100.0], "block_threads": [2048.0], "registers_per_thread": [32.0]})
    g = compute_geometry(k, gpu)
    assert g.occupancy_limiter[0] == "invalid launch" and "2048 threads" in g.occupancy_invalid_reason[0]
    assert np.isnan(g.resident_blocks_per_sm[0]) and np.isnan(g.waves[0])


def test_waves_match_ncu(realdata_dir: Path) -> None:
    # ncu's launch__waves_per_multiprocessor / "Waves Per SM" = grid / (theoretical blocks per SM x SMs).
    from nvperf_bridge.gpu import load_profiles

    profiles = load_profiles()
    cases = [("roofline-analysis/roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv", "b200",
              "launch__waves_per_multiprocessor"),
             ("optimal_unified_memory/optimal_unified_memory__cfd__nsight_cfd_097K.log", "v100-sxm2", "Waves Per SM")]
    for name, gpu_id, column in cases:
        k = read_profiles([realdata_dir / name]).kernels
        g = compute_geometry(k, profiles[gpu_id])
        np.testing.assert_allclose(g.waves, k[column], atol=0.006, err_msg=name)


def test_one_geometry_per_run_shared_by_every_model(gpu, monkeypatch) -> None:
    k = pd.DataFrame({"grid_blocks": [1000.0, 64.0], "block_threads": [256.0, 128.0],
                      "registers_per_thread": [32.0, 40.0], "shared_mem_per_block_bytes": [0.0, 4096.0],
                      "achieved_occupancy": [0.4, 0.2], "inst_executed": [1e6, 2e5], "inst_issued": [1e6, 2e5],
                      "inst_global_ld": [1e5, 1e4], "inst_global_st": [1e4, 1e3], "global_ld_sectors": [4e5, 4e4],
                      "global_st_sectors": [4e4, 4e3], "dram_read_bytes": [1e7, 1e6], "dram_write_bytes": [1e6, 1e5],
                      "duration_ns": [1e5, 2e4]})
    calls: list[int] = []
    real = launch.compute_geometry
    monkeypatch.setattr(launch, "compute_geometry", lambda *a: calls.append(1) or real(*a))
    runs, _ = run_models(k, gpu, load_registry(), ["hong-kim", "luo-suda", "transit", "kothapalli"])
    assert all(run.result is not None for run in runs.values()), {m: r.failure for m, r in runs.items()}
    assert len(calls) == 1
    # outside a run (a third-party plugin, a script) it is computed, and a shallow copy shares the run's one
    with shared_geometry(k, gpu) as shared:
        assert launch_geometry(k.copy(deep=False), gpu) is shared
        changed = k.assign(block_threads=[128.0, 128.0])
        assert launch_geometry(changed, gpu) is not shared
    assert launch_geometry(k, gpu) is not shared


def test_a_run_inside_a_shared_block_reuses_its_geometry(gpu, monkeypatch) -> None:
    """Models run one run_models call at a time (benchmarks, a caller timing them apart) inside one
    shared_geometry block compute the geometry once, not once per call."""
    k = pd.DataFrame({"grid_blocks": [1000.0, 64.0], "block_threads": [256.0, 128.0],
                      "registers_per_thread": [32.0, 40.0], "shared_mem_per_block_bytes": [0.0, 4096.0],
                      "achieved_occupancy": [0.4, 0.2], "inst_executed": [1e6, 2e5], "inst_issued": [1e6, 2e5],
                      "dram_read_bytes": [1e7, 1e6], "dram_write_bytes": [1e6, 1e5]})
    calls: list[int] = []
    real = launch.compute_geometry
    monkeypatch.setattr(launch, "compute_geometry", lambda *a: calls.append(1) or real(*a))
    with shared_geometry(k, gpu) as outer:
        for model_id in ("transit", "luo-suda"):
            runs, _ = run_models(k, gpu, load_registry(), [model_id])
            assert runs[model_id].result is not None, runs[model_id].failure
        assert launch_geometry(k, gpu) is outer  # the inner blocks left the outer one in place
    assert len(calls) == 1


def test_the_calculators_details_are_made_when_read_with_the_values_of_every_launch(gpu) -> None:
    # a large frame of few launch shapes: the calculator runs per shape and its details (the limiter, each
    # resource's block limit) are taken back to every launch when first read, with the values a frame of
    # one row per shape gives each of its launches
    from nvperf_bridge.occupancy import DISTINCT_SHAPES_FROM

    shapes = pd.DataFrame({"grid_blocks": [1000.0, 4.0, 96.0], "block_threads": [256.0, 1024.0, 96.0],
                           "registers_per_thread": [32.0, 255.0, 64.0],
                           "shared_mem_per_block_bytes": [0.0, 49152.0, 1024.0],
                           "achieved_occupancy": [0.24, np.nan, 0.5]})
    pick = np.random.default_rng(2).integers(0, 3, DISTINCT_SHAPES_FROM + 10)
    k = shapes.iloc[pick].reset_index(drop=True)
    g = compute_geometry(k, gpu)
    deferred = {"occupancy_limiter", "occupancy_limiters", "blocks_limit_registers", "theoretical_occupancy_calc"}
    assert not deferred & set(g.made_columns())
    assert list(g.columns) == list(launch.GEOMETRY_COLUMNS) and list(g.table.columns) == list(launch.GEOMETRY_COLUMNS)
    assert deferred <= set(g.made_columns())  # the table read them
    each = compute_geometry(shapes, gpu)  # fewer rows than DISTINCT_SHAPES_FROM: every row computed
    for name in launch.GEOMETRY_COLUMNS:
        got, expected = g.columns[name], each.columns[name].iloc[pick].reset_index(drop=True)
        assert got.dtype == expected.dtype, name
        assert got.tolist() == expected.tolist() or np.array_equal(got.to_numpy(), expected.to_numpy(),
                                                                   equal_nan=True), name

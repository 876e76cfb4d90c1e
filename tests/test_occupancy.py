"""The occupancy calculator against documented worked values and against what Nsight Compute
computed on real launches (../shared/realdata: V100 and A100 details files print the block
limits and the theoretical occupancy; the B200 raw files carry launch__occupancy_limit_*)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from profile_factory import make_profile

from nvperf_bridge.errors import UsageError
from nvperf_bridge.gpu import load_profiles
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.occupancy import (
    LIMIT_INVALID,
    LIMIT_REGISTERS,
    LIMIT_SHARED,
    LIMIT_WARPS,
    cc_limits,
    cc_table,
    frame_occupancy,
    frame_occupancy_arrays,
    limits_for_profile,
    occupancy,
)


def one(cc: str, threads: float, regs: float, smem: float, **kw) -> pd.Series:
    return occupancy([threads], [regs], [smem], cc_limits(cc), **kw).iloc[0]


# ---- documented worked values -------------------------------------------------------

def test_best_practices_guide_example_cc70() -> None:
    # CUDA C++ Best Practices Guide, "Calculating Occupancy": on compute 7.0, 128-thread blocks with
    # 37 registers per thread give 75% occupancy with 12 blocks per SM; 320-thread blocks with the same
    # 37 registers give 63% (four blocks).
    a = one("7.0", 128, 37, 0)
    assert (a.theoretical_blocks_per_sm, a.theoretical_occupancy, a.occupancy_limiter) == (12, 0.75, LIMIT_REGISTERS)
    b = one("7.0", 320, 37, 0)
    assert b.theoretical_blocks_per_sm == 4 and b.theoretical_occupancy == 0.625  # printed as 63%


def test_hong_kim_table2_five_blocks_on_compute_10() -> None:
    # Hong & Kim ISCA'09 Table 2: 128 threads x 12 registers on an 8192-register compute 1.0 SM:
    # "5 blocks are actively assigned to each SM instead of 8 maximum blocks" (block-granular allocation).
    r = one("1.0", 128, 12, 0)
    assert r.theoretical_blocks_per_sm == 5 and r.occupancy_limiter == LIMIT_REGISTERS
    assert r.allocated_registers_per_block == 1536


def test_register_allocation_unit_rounds_per_warp() -> None:
    # 33 registers x 32 threads = 1056 -> 1280 (unit 256): 12 warps per sub-partition, 48 per SM.
    assert one("8.0", 128, 33, 0).theoretical_warps_per_sm == 48
    # Fermi allocates in units of 64 per warp: 21 x 32 = 672 -> 704; floor(32768 / 2 / 704) x 2 = 46 warps,
    # 23 blocks of 2 warps.
    fermi = one("2.0", 64, 21, 0)
    assert fermi.allocated_registers_per_block == 1408 and fermi.blocks_limit_registers == 23


def test_shared_memory_reserved_and_unit_from_cc80() -> None:
    # A100: 48 KiB + 1 KiB reserved per block = 50176 bytes -> 3 blocks of the 164 KiB carve-out.
    r = one("8.0", 256, 16, 48 * 1024)
    assert r.allocated_shared_mem_per_block_bytes == 50176
    assert r.theoretical_blocks_per_sm == 3 and r.occupancy_limiter == LIMIT_SHARED
    # The same block on Volta (no reservation, 96 KiB): 2 blocks.
    assert one("7.0", 256, 16, 48 * 1024).theoretical_blocks_per_sm == 2
    # A configured 100 KiB carve-out (ncu launch__shared_mem_config_size) leaves room for 2.
    assert one("8.0", 256, 16, 48 * 1024, shared_mem_config_bytes=[100 * 1024]).theoretical_blocks_per_sm == 2


def test_invalid_launches_name_the_reason() -> None:
    frame = occupancy([2048, 256, 256, 256], [32, 300, 32, 32], [0, 0, 200 * 1024, 0], cc_limits("8.6"))
    assert list(frame.occupancy_limiter[:3]) == [LIMIT_INVALID] * 3
    assert list(frame.theoretical_blocks_per_sm[:3]) == [0, 0, 0]
    assert "2048 threads per block exceeds the maximum of 1024" in frame.occupancy_invalid_reason[0]
    assert "300 registers per thread" in frame.occupancy_invalid_reason[1]
    assert "shared memory per block exceeds the maximum of 101376" in frame.occupancy_invalid_reason[2]
    assert frame.occupancy_limiter[3] == LIMIT_WARPS and frame.occupancy_invalid_reason[3] == ""


def test_missing_inputs_give_an_upper_bound_and_say_so() -> None:
    frame = occupancy([256, 256, np.nan], [np.nan, 64, 32], [0, np.nan, 0], cc_limits("7.0"))
    assert frame.theoretical_blocks_per_sm[0] == 8 and frame.occupancy_missing_inputs[0] == "registers_per_thread"
    assert frame.theoretical_blocks_per_sm[1] == 4 and frame.occupancy_missing_inputs[1] == "shared_mem_per_block_bytes"
    assert np.isnan(frame.theoretical_occupancy[2]) and frame.occupancy_limiter[2] == ""


def test_a_large_profile_gets_the_calculator_of_each_launch_shape_exactly() -> None:
    """From DISTINCT_SHAPES_FROM launches on the calculator runs once per distinct launch shape: every
    launch must get exactly what the calculator gives its own row (bits, dtypes, texts), invalid launches,
    missing counters, zero registers and -0.0 included."""
    from nvperf_bridge.occupancy import DISTINCT_SHAPES_FROM

    profile = next(p for p in load_profiles().values() if p.id == "a100-40gb")
    shapes = [(128, 37, 0), (256, 64, 49152), (1024, 255, 0), (2048, 32, 0), (96, np.nan, 1024), (64, 0, np.nan),
              (32, 16, 200000), (np.nan, 32, 0), (128, -0.0, 0), (0, 32, 0)]
    rng = np.random.default_rng(4)
    pick = rng.integers(0, len(shapes), DISTINCT_SHAPES_FROM + 50)
    kernels = pd.DataFrame([shapes[i] for i in pick], columns=["block_threads", "registers_per_thread",
                                                                "shared_mem_per_block_bytes"])
    kernels["registers_per_thread"] = kernels["registers_per_thread"].astype(object)  # as text-read columns may be
    fast = frame_occupancy_arrays(kernels, profile)
    plain = occupancy(kernels["block_threads"], kernels["registers_per_thread"], kernels["shared_mem_per_block_bytes"],
                      limits_for_profile(profile), index=kernels.index)
    assert list(fast) == list(plain.columns)
    for name, values in fast.items():
        expected = plain[name].to_numpy()
        assert values.dtype == expected.dtype, name
        if values.dtype == object:
            assert values.tolist() == expected.tolist(), name
        else:
            np.testing.assert_array_equal(values.view(np.uint64), expected.view(np.uint64), err_msg=name)


def test_table_covers_every_shipped_profile_and_agrees_with_it() -> None:
    table = cc_table()
    for cc in ("1.0", "1.3", "2.0", "3.0", "3.5", "3.7", "5.2", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9",
               "9.0", "10.0", "12.0"):
        assert cc in table and table[cc].source and table[cc].allocation_source
    for profile in load_profiles().values():
        limits = cc_limits(profile.compute_capability)
        assert limits.cc == profile.compute_capability, profile.id
        if profile.get("hypothetical"):
            continue
        for key in ("max_warps_per_sm", "max_blocks_per_sm", "registers_per_sm", "shared_mem_per_sm_bytes"):
            assert getattr(profile, key) == getattr(limits, key), (profile.id, key)


def test_unknown_minor_takes_its_major_and_profile_facts_override() -> None:
    assert cc_limits("8.8").cc == "8.7"
    assert cc_limits("13.0").cc == "12.1"  # newer than the table: its newest rules
    with pytest.raises(UsageError, match="no occupancy rules for compute capability 4.0"):
        cc_limits("4.0")
    gpu = make_profile(compute_capability="7.0", max_warps_per_sm=32)
    assert limits_for_profile(gpu).max_warps_per_sm == 32
    k = pd.DataFrame({"block_threads": [256], "registers_per_thread": [16], "shared_mem_per_block_bytes": [0]})
    assert frame_occupancy(k, gpu).theoretical_occupancy[0] == 1.0  # 4 blocks x 8 warps of 32


# ---- what Nsight Compute computed on real launches ----------------------------------

DETAILS = [  # (file, compute capability of the GPU it ran on)
    ("optimal_unified_memory/optimal_unified_memory__cfd__nsight_cfd_097K.log", "7.0"),
    ("optimal_unified_memory/optimal_unified_memory__cfd-ip-128-115-246-7__nsight_cfd_097K.log", "7.0"),
    ("optimal_unified_memory/optimal_unified_memory__hotspot__nsight_hotspot_1024", "7.0"),
    ("actual-parameter-collection/actual-param__attention_5-9__bert_flashattn_nsight.csv", "8.0"),
]


@pytest.mark.parametrize("name,cc", DETAILS)
def test_block_limits_match_ncu_details(realdata_dir: Path, name: str, cc: str) -> None:
    kernels = read_profiles([realdata_dir / name]).kernels
    ours = occupancy(kernels.block_threads, kernels.registers_per_thread, kernels.shared_mem_per_block_bytes,
                     cc_limits(cc), index=kernels.index)
    assert len(kernels) >= 1
    np.testing.assert_array_equal(ours.blocks_limit_registers, kernels["Block Limit Registers"])
    np.testing.assert_array_equal(ours.blocks_limit_warps, kernels["Block Limit Warps"])
    # ncu prints the SM's block limit where shared memory sets none
    np.testing.assert_array_equal(ours.blocks_limit_shared_mem.replace(np.inf, cc_limits(cc).max_blocks_per_sm),
                                  kernels["Block Limit Shared Mem"])
    np.testing.assert_allclose(ours.theoretical_occupancy, kernels.theoretical_occupancy, atol=5e-5)


B200_RAW = [
    "roofline-analysis/roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv",
    "roofline-analysis/roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv",
]


@pytest.mark.parametrize("name", B200_RAW)
def test_block_limits_match_ncu_raw_on_b200(realdata_dir: Path, name: str) -> None:
    k = read_profiles([realdata_dir / name]).kernels
    ours = occupancy(k.block_threads, k.registers_per_thread, k.shared_mem_per_block_bytes, cc_limits("10.0"),
                     shared_mem_config_bytes=k["launch__shared_mem_config_size"], index=k.index)
    for column, ncu in (("blocks_limit_registers", "registers"), ("blocks_limit_warps", "warps"),
                        ("blocks_limit_shared_mem", "shared_mem"), ("blocks_limit_blocks", "blocks")):
        np.testing.assert_array_equal(ours[column], k[f"launch__occupancy_limit_{ncu}"], err_msg=column)
    np.testing.assert_array_equal(ours.allocated_shared_mem_per_block_bytes,
                                  k["launch__shared_mem_per_block_allocated"])
    np.testing.assert_allclose(ours.theoretical_occupancy, k.theoretical_occupancy, atol=5e-5)


def test_review_names_each_groups_limiter_from_one_calculator_call_per_gpu() -> None:
    # the review's advice asks which resource caps a kernel group's resident blocks; it now asks the calculator
    # for every group at once (per GPU): the same answer as the calculator asked for one launch at a time
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.occupancy import limits_for_profile, occupancy_arrays
    from nvperf_bridge.review.advice import calculator_rows, occupancy_limiter

    v100, a100 = resolve_profile("v100-sxm2"), resolve_profile("a100-40gb")
    launches = [  # (threads, registers, shared bytes): register-bound, shared-bound, refused, registers unrecorded
        {"block_threads": 256.0, "registers_per_thread": 128.0, "shared_mem_per_block_bytes": 0.0},
        {"block_threads": 128.0, "registers_per_thread": 32.0, "shared_mem_per_block_bytes": 40_000.0},
        {"block_threads": 2048.0, "registers_per_thread": 32.0, "shared_mem_per_block_bytes": 0.0},
        {"block_threads": 96.0, "shared_mem_per_block_bytes": 1024.0},  # 21 blocks of 3 warps: 63 of 64 warps
    ]
    gpus = [v100, a100, v100, a100]
    batched = calculator_rows(launches, gpus)
    for launch, gpu, found in zip(launches, gpus, batched):
        one = occupancy_arrays([launch["block_threads"]], [launch.get("registers_per_thread", np.nan)],
                               [launch["shared_mem_per_block_bytes"]], limits_for_profile(gpu))
        assert found.keys() == one.keys()
        for column, values in one.items():
            assert np.array_equal(np.asarray([found[column]]), values, equal_nan=values.dtype.kind == "f"), column
    limiters = [occupancy_limiter(launch, gpu, found) for launch, gpu, found in zip(launches, gpus, batched)]
    assert limiters == ["registers", "shared memory", "none", "block size"]
    assert limiters == [occupancy_limiter(launch, gpu) for launch, gpu in zip(launches, gpus)]

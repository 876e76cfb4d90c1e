"""Roofline (Williams et al. 2009) and the Nsight Compute SOLBottleneck rule label."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.builtin_plugins.roofline import MODEL, ncu_rule_labels
from nvperf_bridge.gpu import GpuProfile, ModelConstant
from nvperf_bridge.model import validate_result
from nvperf_bridge.registry import load_registry


def make_gpu(**raw: float) -> GpuProfile:
    # 1 TB/s and 10 TFLOP/s FP32: ridge point 10 FLOP/byte
    return GpuProfile(
        id="test-gpu", name="Test GPU", match=["Test GPU"], compute_capability="8.0", sm_count=100,
        cores_per_sm=64, max_warps_per_sm=64, max_blocks_per_sm=32, registers_per_sm=65536,
        shared_mem_per_sm_bytes=167936, sm_clock_mhz=1000.0, memory_bandwidth_gb_per_s=1000.0, sources={},
        raw={"peak_fp32_gflops": 10000.0, **raw},
    )


@pytest.fixture
def gpu() -> GpuProfile:
    return make_gpu(peak_fp64_gflops=5000.0)


def test_registered_through_the_entry_point() -> None:
    assert "roofline" in load_registry().models


def test_time_is_the_higher_roof_and_the_bottleneck_follows_the_ridge(gpu: GpuProfile) -> None:
    kernels = pd.DataFrame({"flop_sp": [1e9, 1e10, 1e9], "dram_bytes": [1e9, 1e8, 1e8]})
    result = MODEL.evaluate(kernels, gpu, {})
    # AI 1 (memory): 1e9 B / 1e12 B/s = 1 ms; AI 100 (compute): 1e10 / 1e13 = 1 ms; AI 10 = ridge
    np.testing.assert_allclose(result["predicted_ns"], [1e6, 1e6, 1e5])
    assert list(result["bottleneck"]) == ["memory-bandwidth", "compute", "balanced"]
    np.testing.assert_allclose(result["arithmetic_intensity"], [1.0, 100.0, 10.0])
    np.testing.assert_allclose(result["ridge_point"], [10.0, 10.0, 10.0])
    np.testing.assert_allclose(result["attainable_flop_per_s"], [1e12, 1e13, 1e13])
    np.testing.assert_allclose(result["t_compute_ns"], [1e5, 1e6, 1e5])
    np.testing.assert_allclose(result["t_memory_ns"], [1e6, 1e5, 1e5])
    assert result["predicted_cycles"].isna().all()
    _, warnings = validate_result("roofline", kernels, result)
    assert warnings == []


def test_balanced_tolerance_is_ten_percent_around_the_ridge(gpu: GpuProfile) -> None:
    kernels = pd.DataFrame({"flop_sp": [1.09e9, 1.12e9, 0.92e9, 0.89e9], "dram_bytes": [1e8] * 4})
    result = MODEL.evaluate(kernels, gpu, {})
    assert list(result["bottleneck"]) == ["balanced", "compute", "balanced", "memory-bandwidth"]


def test_each_precision_is_charged_against_its_own_peak(gpu: GpuProfile) -> None:
    kernels = pd.DataFrame({"flop_sp": [1e10], "flop_dp": [5e9], "dram_bytes": [1.0]})
    result = MODEL.evaluate(kernels, gpu, {})
    assert result.loc[0, "t_compute_ns"] == pytest.approx(1e6 + 1e6)  # 1e10/1e13 s + 5e9/5e12 s


def test_missing_fp64_peak_leaves_it_out_and_says_so() -> None:
    kernels = pd.DataFrame({"flop_sp": [1e9], "flop_dp": [1e9], "dram_bytes": [1e6]})
    result = MODEL.evaluate(kernels, make_gpu(), {})
    assert result.loc[0, "t_compute_ns"] == pytest.approx(1e5)
    assert "peak_fp64_gflops" in result.loc[0, "state"]


def test_one_roof_only_is_a_lower_bound_and_neither_is_an_error(gpu: GpuProfile) -> None:
    kernels = pd.DataFrame({"flop_sp": [np.nan, 1e9, np.nan, 0.0], "dram_bytes": [1e6, np.nan, np.nan, 0.0]})
    result = MODEL.evaluate(kernels, gpu, {})
    assert result.loc[0, "predicted_ns"] == pytest.approx(1e3)
    assert "memory-only lower bound" in result.loc[0, "state"] and result.loc[0, "bottleneck"] == "unknown"
    assert result.loc[1, "predicted_ns"] == pytest.approx(1e5)
    assert "compute-only lower bound" in result.loc[1, "state"]
    assert np.isnan(result.loc[2, "predicted_ns"]) and "dram__bytes.sum" in result.loc[2, "error"]
    assert np.isnan(result.loc[3, "predicted_ns"]) and "zero" in result.loc[3, "error"]
    _, warnings = validate_result("roofline", kernels, result)
    assert warnings == []


def test_read_plus_write_bytes_stand_in_for_dram_bytes(gpu: GpuProfile) -> None:
    kernels = pd.DataFrame({"dram_read_bytes": [6e8], "dram_write_bytes": [4e8], "flop_sp": [0.0]})
    assert MODEL.evaluate(kernels, gpu, {}).loc[0, "predicted_ns"] == pytest.approx(1e6)


def test_constants_from_the_profile_lower_the_roofs() -> None:
    gpu = make_gpu()
    gpu.model_constants["roofline"] = {"attainable_bandwidth_fraction": ModelConstant(0.8, "measured", "measured")}
    result = MODEL.evaluate(pd.DataFrame({"flop_sp": [0.0], "dram_bytes": [8e8]}), gpu, {})
    assert result.loc[0, "predicted_ns"] == pytest.approx(1e6)


@pytest.mark.parametrize(
    ("sm", "mem", "grid", "label"),
    [
        (0.85, 0.30, 10000, "High Throughput (compute)"),
        (0.30, 0.92, 10000, "High Throughput (memory)"),
        (0.80, 0.80, 10000, "High Throughput (compute)"),  # the rule's '< 80' is strict
        (0.30, 0.20, 10000, "Latency Issue"),
        (0.30, 0.20, 10, "Small Grid"),  # 10 blocks on 100 SMs: 0.0125 waves
        (0.75, 0.50, 10000, "High Compute Throughput"),
        (0.55, 0.70, 10000, "High Memory Throughput"),
        (0.65, 0.70, 10000, "Balanced Throughput"),
        (0.59, 0.60, 10000, "Balanced Throughput"),  # both must be < 60 for latency
    ],
)
def test_ncu_sol_rule_label(gpu: GpuProfile, sm: float, mem: float, grid: int, label: str) -> None:
    kernels = pd.DataFrame({"sol_sm_fraction": [sm], "sol_memory_fraction": [mem], "grid_blocks": [grid],
                            "block_threads": [256]})
    labels, source = ncu_rule_labels(kernels, gpu)
    assert labels[0] == label
    assert source[0] == "sol_memory_fraction"


def test_ncu_label_uses_dram_when_memory_throughput_is_absent_and_blank_without_sol(gpu: GpuProfile) -> None:
    kernels = pd.DataFrame({"sol_sm_fraction": [0.2, np.nan], "sol_dram_fraction": [0.9, 0.9], "dram_bytes": [1e6, 1e6]})
    result = MODEL.evaluate(kernels, gpu, {})
    assert result.loc[0, "ncu_rule_label"] == "High Throughput (memory)"
    assert result.loc[0, "ncu_rule_memory_metric"].startswith("sol_dram_fraction")
    assert result.loc[1, "ncu_rule_label"] == ""


def test_precision_not_collected_is_named_in_state() -> None:
    """flop_sp collected but not flop_dp: the time uses what was counted, and state says dp counted as 0."""
    from nvperf_bridge.builtin_plugins.roofline import RooflineModel
    from nvperf_bridge.gpu import load_profiles

    gpu = load_profiles()["v100-sxm2"]
    frame = pd.DataFrame({"flop_sp": [1e9, 1e9], "flop_dp": [np.nan, 0.0], "flop_hp": [0.0, 0.0],
                          "dram_bytes": [1e6, 1e6], "grid_blocks": [80.0, 80.0], "block_threads": [256.0, 256.0]})
    result = RooflineModel().evaluate(frame, gpu, {})
    assert "flop_dp not collected" in result.loc[0, "state"]
    assert "not collected" not in result.loc[1, "state"]
    assert result.loc[0, "predicted_ns"] == pytest.approx(result.loc[1, "predicted_ns"])


def test_fp16_flops_meet_the_non_tensor_roof_not_the_tensor_peak() -> None:
    """Counted FP16 FLOPs (nvprof flop_count_hp, ncu ..._op_h*) run on the SM's FP16 lanes, not on
    tensor cores: an A100's half-precision FMA roof is 256 results/clock/SM x 108 SMs x 2 x 1410 MHz
    = 78 Tflop/s (the whitepaper's non-tensor FP16 peak), not the 312 Tflop/s tensor figure."""
    from nvperf_bridge.builtin_plugins.roofline import MODEL as ROOFLINE
    from nvperf_bridge.builtin_plugins.roofline import non_tensor_fp16_flop_per_s
    from nvperf_bridge.gpu import resolve_profile

    a100 = resolve_profile("a100-40gb")
    assert non_tensor_fp16_flop_per_s(a100) == pytest.approx(256 * 108 * 2 * 1410e6)
    assert float(a100.get("peak_fp16_gflops")) * 1e9 > 3.9 * non_tensor_fp16_flop_per_s(a100)
    flops = 78e12 * 1e-3  # one millisecond at the non-tensor roof, negligible DRAM traffic
    frame = pd.DataFrame({"flop_sp": [0.0], "flop_dp": [0.0], "flop_hp": [flops], "dram_bytes": [1.0]})
    row = ROOFLINE.evaluate(frame, a100, {}).iloc[0]
    assert row["predicted_ns"] == pytest.approx(1e6 * 78e12 / non_tensor_fp16_flop_per_s(a100), rel=1e-6)
    # the GTX 1080 Ti (compute 6.1) runs FP16 at 1/64 of its FP32 rate
    gp102 = resolve_profile("gtx-1080-ti")
    assert non_tensor_fp16_flop_per_s(gp102) == pytest.approx(gp102.peak_fp32_flop_per_s / 64)

"""Transit (Li, Tay, Kumar, Corporaal, HPDC'15): equilibrium, bounds, time, figure data.

Most tests use a round-number GPU written to a temporary profile (10 SMs,
32 lanes and 1024 threads per SM, 1 GHz, 100 GB/s), so every number below
can be followed by hand:

    R       = 100 GB/s / 10 SMs                 = 10 GB/s per SM
    delta   = delta_fraction x 1024 threads
    M       = M_fraction x 1024 threads         (default 0.375 -> 384)
    CS_peak = 32 lanes / 32 x 1 GHz             = 1e9 warp instructions/s per SM
    machine balance R / CS_peak                 = 10 DRAM bytes per warp instruction
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from nvperf_bridge.analysis import analyze
from nvperf_bridge.kernelframe import ImportResult

transit = pytest.importorskip("nvperf_bridge.builtin_plugins.transit")

REPO = Path(__file__).resolve().parent.parent
SMS, MAX_THREADS, CLOCK_HZ, BANDWIDTH = 10, 1024, 1.0e9, 100.0e9

TEST_GPU = {
    "schema_version": 1, "id": "transit-test", "name": "Transit Test GPU", "match": ["Transit Test GPU"],
    "compute_capability": "9.9", "sm_count": SMS, "cores_per_sm": 32, "max_warps_per_sm": 32,
    "max_blocks_per_sm": 16, "registers_per_sm": 65536, "shared_mem_per_sm_bytes": 65536,
    "sm_clock_mhz": 1000, "memory_bandwidth_gb_per_s": 100,
}
# every hardware fact is a made-up round number: say so for each one
TEST_GPU["sources"] = {key: "round number for the tests" for key in TEST_GPU
                       if key not in ("schema_version", "id", "name", "match")}


@pytest.fixture
def gpu_path(tmp_path: Path) -> str:
    path = tmp_path / "transit-test.yaml"
    path.write_text(yaml.safe_dump(TEST_GPU), encoding="utf-8")
    return str(path)


def kernel(n_threads: float, bytes_per_inst: float, instructions: float = 1.0e8, **extra: float) -> dict:
    """A kernel with n resident threads per SM and w = DRAM bytes per warp instruction."""
    row = {
        "kernel_name": f"n{n_threads:g}_w{bytes_per_inst:g}", "grid_blocks": 400, "block_threads": 256,
        "achieved_occupancy": n_threads / MAX_THREADS, "inst_issued": instructions,
        "dram_bytes": bytes_per_inst * instructions,
    }
    row.update(extra)
    return row


def run(rows: list[dict], gpu: str, **options: float | str) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    analysis = analyze(ImportResult(kernels=frame, inputs=[]), gpu=gpu, model_ids=["transit"],
                       options={"transit": options})
    run_ = analysis.runs["transit"]
    assert run_.result is not None, run_.failure
    return run_.result


# ---- one constructed kernel per bound (Section 2.4) ---------------------------------

def test_each_bound_is_classified_and_mapped(gpu_path: str) -> None:
    # delta = 512 threads so that f can reach its flat part with n = 1024 (n > delta).
    rows = [
        # thread bound: 128 threads, w = 10 B/inst. a = 10e9/512, c1 = 1e9/384, both on slopes:
        # X = a c1 n / (a + c1 w) = 1.43e8 < min(R/w = 1e9, CS_peak = 1e9).
        kernel(128, 10.0),
        # memory bound: w = 100 B/inst, R / w = 1e8 < CS_peak; slopes would cross at 1.86e8.
        kernel(1024, 100.0),
        # computation bound: w = 0.1 B/inst, R / w = 1e11; CS_peak = 1e9 is the lowest.
        kernel(1024, 0.1),
        # capacity bound: w = 10 B/inst = machine balance, R / w = CS_peak = 1e9; slopes at 1.14e9.
        kernel(1024, 10.0),
    ]
    result = run(rows, gpu_path, delta_fraction=0.5)
    assert list(result["error"]) == ["", "", "", ""]
    assert list(result["state"]) == ["thread bound", "memory bound", "computation bound", "capacity bound"]
    assert list(result["bottleneck"]) == ["parallelism", "memory-bandwidth", "compute", "balanced"]


def test_thread_bound_time_by_hand(gpu_path: str) -> None:
    n, w, instructions = 128.0, 10.0, 1.0e8
    result = run([kernel(n, w, instructions)], gpu_path, delta_fraction=0.5)
    R, delta, M, cs_peak = 10.0e9, 512.0, 384.0, 1.0e9
    a = R / delta  # f's slope, bytes/s per thread in MS
    c1 = cs_peak / M  # one thread's CS rate, warp instructions/s
    # a k = c1 w (n - k)  ->  k = c1 w n / (a + c1 w)
    k = c1 * w * n / (a + c1 * w)
    r = a * k  # MS throughput, bytes/s per SM
    cs = r / w  # CS throughput = Z r, warp instructions/s per SM
    seconds = instructions / (cs * SMS)
    assert result["k"].iloc[0] == pytest.approx(k, rel=1e-12)
    assert result["MS_GBps"].iloc[0] == pytest.approx(r / 1e9, rel=1e-12)
    assert result["predicted_ns"].iloc[0] == pytest.approx(seconds * 1e9, rel=1e-12)
    assert result["predicted_cycles"].iloc[0] == pytest.approx(seconds * CLOCK_HZ, rel=1e-12)
    # Z as the paper writes it: instructions issued per 32-byte DRAM transaction
    assert result["Z"].iloc[0] == pytest.approx(instructions / (w * instructions / 32.0))


# ---- a kernel that saturates bandwidth is predicted at R ------------------------------

def test_memory_bound_kernel_runs_at_R(gpu_path: str) -> None:
    row = kernel(1024, 100.0, instructions=3.0e8)
    result = run([row], gpu_path, delta_fraction=0.5, R_fraction=0.8)
    R_total = 0.8 * BANDWIDTH  # R per SM x 10 SMs
    assert result["MS_GBps"].iloc[0] == pytest.approx(0.8 * BANDWIDTH / SMS / 1e9, rel=1e-12)
    assert result["predicted_ns"].iloc[0] == pytest.approx(row["dram_bytes"] / R_total * 1e9, rel=0.01)


def test_streaming_kernel_at_full_occupancy_is_within_one_percent_of_bandwidth(gpu_path: str) -> None:
    # Default delta = max resident threads (the paper's C2075 and GTX690): f only reaches R as k -> n,
    # so a streaming kernel (w = 1000 B/inst) at full occupancy gets within 1 % of bytes / bandwidth.
    row = kernel(1024, 1000.0)
    result = run([row], gpu_path)
    assert result["state"].iloc[0] == "memory bound"
    assert result["predicted_ns"].iloc[0] == pytest.approx(row["dram_bytes"] / BANDWIDTH * 1e9, rel=0.01)
    assert result["predicted_ns"].iloc[0] >= row["dram_bytes"] / BANDWIDTH * 1e9  # never faster than R


# ---- the equilibrium solves f(k) = g(n - k) ------------------------------------------

def test_equilibrium_solves_flow_balance_to_1e_9() -> None:
    rng = np.random.default_rng(7)
    size = 5000
    n = rng.uniform(1, 4096, size)
    w = np.exp(rng.uniform(np.log(1e-3), np.log(1e4), size))
    R = rng.uniform(1e9, 1e11, size)
    delta = rng.uniform(32, 4096, size)
    M = rng.uniform(32, 4096, size)
    cs_peak = rng.uniform(1e8, 1e10, size)
    # add exact capacity-bound cases (R / w == CS_peak) with enough threads for both to be flat
    w[:50] = R[:50] / cs_peak[:50]
    n[:50] = delta[:50] + M[:50] + 100
    eq = transit.equilibrium(n, w, R, delta, M, cs_peak)
    assert np.all(eq["k"] >= -1e-9 * n) and np.all(eq["k"] <= n * (1 + 1e-12))
    supply = transit.f_supply(eq["k"], R, delta)
    demand = transit.g_demand(n - eq["k"], w, M, cs_peak)
    np.testing.assert_allclose(supply, demand, rtol=1e-9)
    np.testing.assert_allclose(eq["r"], supply, rtol=1e-9)
    assert set(eq["bound"][:50]) == {"capacity bound"}


# ---- invariants ------------------------------------------------------------------------

def test_time_is_positive_and_more_dram_traffic_is_never_faster(gpu_path: str) -> None:
    traffic = np.geomspace(1e-3, 1e4, 60)
    rows = [kernel(n, w) for n in (64, 384, 1024) for w in traffic]
    result = run(rows, gpu_path)
    assert (result["error"] == "").all()
    predicted = result["predicted_ns"].to_numpy().reshape(3, len(traffic))
    assert np.all(np.isfinite(predicted)) and np.all(predicted > 0)
    assert np.all(np.diff(predicted, axis=1) >= -1e-9 * predicted[:, 1:])


def test_more_threads_are_never_slower(gpu_path: str) -> None:
    rows = [kernel(n, 5.0) for n in np.linspace(32, 1024, 32)]
    predicted = run(rows, gpu_path)["predicted_ns"].to_numpy()
    assert np.all(np.diff(predicted) <= 1e-9 * predicted[:-1])


def test_kernel_without_dram_traffic_is_timed_by_the_cs_alone(gpu_path: str) -> None:
    result = run([kernel(1024, 0.0, instructions=2.0e9), kernel(96, 0.0, instructions=2.0e9)], gpu_path)
    # Z infinite: g = 0, all n threads in CS; G = CS_peak min(n, M) / M
    assert list(result["state"]) == ["computation bound", "thread bound"]
    assert result["predicted_ns"].iloc[0] == pytest.approx(2.0e9 / (1.0e9 * SMS) * 1e9)
    assert result["predicted_ns"].iloc[1] == pytest.approx(2.0e9 / (1.0e9 * 96 / 384 * SMS) * 1e9)
    assert result["k"].iloc[0] == 0.0


# ---- inputs: errors, fallbacks, precision ---------------------------------------------

def test_missing_counters_are_named_with_their_ncu_metric(gpu_path: str) -> None:
    no_dram = kernel(512, 1.0)
    del no_dram["dram_bytes"]
    no_inst = kernel(512, 1.0)
    del no_inst["inst_issued"]
    fallback = kernel(512, 1.0)
    fallback["inst_executed"] = fallback.pop("inst_issued")
    result = run([no_dram, no_inst, fallback], gpu_path)
    assert "dram_bytes" in result["error"].iloc[0] and "dram__bytes.sum" in result["error"].iloc[0]
    assert "inst_issued" in result["error"].iloc[1] and "smsp__inst_issued.sum" in result["error"].iloc[1]
    assert math.isnan(result["predicted_ns"].iloc[0]) and result["bottleneck"].iloc[0] == "unknown"
    assert result["error"].iloc[2] == ""
    assert result["Z_source"].iloc[2].startswith("inst_executed")


def test_dram_read_plus_write_stand_in_for_dram_bytes(gpu_path: str) -> None:
    split = kernel(1024, 4.0)
    total = split.pop("dram_bytes")
    split.update(dram_read_bytes=0.75 * total, dram_write_bytes=0.25 * total)
    both = run([kernel(1024, 4.0), split], gpu_path)["predicted_ns"]
    assert both.iloc[1] == pytest.approx(both.iloc[0], rel=1e-12)


def test_double_precision_kernels_use_the_dp_transition_points(gpu_path: str) -> None:
    rows = [kernel(1024, 1.0, flop_sp=1e9, flop_dp=0.0), kernel(1024, 1.0, flop_sp=1e6, flop_dp=1e9)]
    result = run(rows, gpu_path, M_fraction=0.5, M_fraction_dp=0.25, delta_fraction_dp=0.5)
    assert list(result["precision"]) == ["sp", "dp"]
    assert list(result["M"]) == [512.0, 256.0]
    assert list(result["delta"]) == [1024.0, 512.0]
    forced = run(rows, gpu_path, precision="sp", M_fraction=0.5)
    assert list(forced["M"]) == [512.0, 512.0]
    # PCT: predicted computation throughput in GFLOP/s over the GPU
    pct = (1e9 + 0.0) / (result["predicted_ns"].iloc[0] * 1e-9) / 1e9
    assert result["PCT_gflops"].iloc[0] == pytest.approx(pct)


# ---- the paper's machine constants (profiles) ------------------------------------------

@pytest.mark.parametrize(
    ("profile_id", "R", "delta", "M", "R_dp", "delta_dp", "M_dp"),
    [("tesla-c2075", 8.93, 1536, 576, 9.29, 768, 384), ("gtx690", 16.25, 2048, 2048, 18.86, 1024, 384)],
)
def test_paper_transition_points_come_back_from_the_profiles(
    profile_id: str, R: float, delta: float, M: float, R_dp: float, delta_dp: float, M_dp: float,
) -> None:
    """Section 3: delta(SP), delta(DP), pi(SP), pi(DP) abscissae and R, in threads and GB/s per SM."""
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.model import constant_values

    gpu = resolve_profile(profile_id)
    if "transit" not in gpu.model_constants:
        pytest.skip(f"profile {profile_id} has no models.transit block yet")
    values = constant_values(transit.MODEL, gpu)
    sp = {key: float(v[0]) for key, v in transit.machine_parameters(gpu, values, [False]).items()}
    dp = {key: float(v[0]) for key, v in transit.machine_parameters(gpu, values, [True]).items()}
    assert sp["R"] / 1e9 == pytest.approx(R, abs=5e-3)
    assert (sp["delta"], sp["M"]) == pytest.approx((delta, M))
    assert dp["R"] / 1e9 == pytest.approx(R_dp, abs=5e-3)
    assert (dp["delta"], dp["M"]) == pytest.approx((delta_dp, M_dp))


# ---- transit figure data ----------------------------------------------------------------

def test_transit_curves_from_paper_inputs(gpu_path: str) -> None:
    from nvperf_bridge.gpu import resolve_profile

    gpu = resolve_profile(gpu_path)
    curves = transit.transit_curves({"n": 1024, "Z": 3.2}, gpu, constants={"delta_fraction": 0.5}, samples=101)
    assert curves["k"].shape == curves["f"].shape == curves["g_of_n_minus_k"].shape == (101,)
    assert curves["k"][0] == 0.0 and curves["k"][-1] == 1024.0
    # Z = 3.2 warp instructions per 32 B = 10 B per instruction = machine balance: capacity bound
    assert str(curves["state"]) == "capacity bound"
    k_eq, x_eq, r_eq = curves["equilibrium"]
    assert k_eq + x_eq == pytest.approx(1024.0)
    assert r_eq == pytest.approx(10.0)  # GB/s per SM = R
    assert list(curves["delta_point"]) == pytest.approx([512.0, 10.0])
    assert list(curves["pi_point"]) == pytest.approx([384.0, 10.0])  # g(M) = CS_peak / Z = 1e9 x 10 B
    # f rises to R at delta and stays; g(n - k) mirrors g(x)
    assert curves["f"].max() == pytest.approx(10.0) and np.all(np.diff(curves["f"]) >= 0)
    np.testing.assert_allclose(curves["g_of_n_minus_k"], curves["g"][::-1], rtol=1e-12, atol=1e-15)
    assert float(curves["CS_throughput"]) == pytest.approx(1.0)  # G warp instructions/s = CS_peak


def test_transit_curves_from_a_kernel_row_match_evaluate(gpu_path: str) -> None:
    from nvperf_bridge.gpu import resolve_profile

    gpu = resolve_profile(gpu_path)
    row = kernel(256, 20.0)
    result = run([row], gpu_path)
    curves = transit.transit_curves(pd.Series(row), gpu)
    assert curves["equilibrium"][0] == pytest.approx(result["k"].iloc[0], rel=1e-12)
    assert curves["equilibrium"][2] == pytest.approx(result["MS_GBps"].iloc[0], rel=1e-12)
    assert str(curves["state"]) == result["state"].iloc[0]
    # the equilibrium lies on both curves
    k_eq, x_eq, r_eq = curves["equilibrium"]
    assert np.interp(k_eq, curves["k"], curves["f"]) == pytest.approx(r_eq, rel=1e-6)


# ---- the worked example on the paper's GPU, through the file importer ------------------

def test_worked_example_file_on_the_c2075() -> None:
    importers = pytest.importorskip("nvperf_bridge.importers")
    paths = sorted((REPO / "examples" / "papers").glob("transit-*.yaml"))
    if not paths:
        pytest.skip("no examples/papers/transit-*.yaml")
    imported = importers.read_profiles(paths[:1])
    doc = yaml.safe_load(paths[0].read_text(encoding="utf-8"))
    analysis = analyze(imported, gpu=doc.get("gpu"), model_ids=["transit"])
    result = analysis.runs["transit"].result
    # each item carries its hand-computed answer (see the comments in the file) as raw columns
    assert list(result["state"]) == [item["expected_state"] for item in doc["kernels"]]
    for got, item in zip(result["predicted_ns"], doc["kernels"]):
        assert got == pytest.approx(item["expected_ns"], rel=1e-3)

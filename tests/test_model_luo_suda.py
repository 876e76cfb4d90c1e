"""Luo & Suda (2011): MPD (1)-(2), CPD (3)-(5), the four calculate-period types (6)-(13).

Every expected number is worked out by hand in the test, step by step, from
the paper's equations; the implementation is not consulted. The paper prints
no per-kernel inputs (its Fig. 8 is a plot of six benchmarks, and the PTX
traces are not given), so its measurements cannot be reproduced; the GTX 260
constants (Section 3.4: a = 3, b = 11, c = 0.5, d = 80; Table 1: ld/st 200,
add 65 clocks) and Table 2's machine are used instead.
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

luo_suda = pytest.importorskip("nvperf_bridge.builtin_plugins.luo_suda")

REPO = Path(__file__).resolve().parent.parent

# GTX 260, Luo & Suda Table 2
SMS, CLOCK_HZ, BANDWIDTH, MAX_WARPS = 24, 1242e6, 111.9e9, 32
A, B, C, D = 3.0, 11.0, 0.5, 80.0  # Section 3.4
T_MEM, COST_COMP = 200.0, 65.0  # Table 1


PUBLISHED = {"mpd_form": "printed", "memory_cost": "per-instruction"}  # Eq. (2) and Section 3.4 as printed


def run(rows: list[dict], **options: float | str) -> pd.DataFrame:
    analysis = analyze(ImportResult(kernels=pd.DataFrame(rows), inputs=[]), gpu="gtx260", model_ids=["luo-suda"],
                       options={"luo-suda": options})
    run_ = analysis.runs["luo-suda"]
    assert run_.result is not None, run_.failure
    return run_.result


# ---- (6)-(13): one calculate period of each type ---------------------------------------
# N_act = 8 warps, MPD = 2, CPD = 4 throughout.

def test_type_1_computation_hides_memory() -> None:
    # c_{i-1} = 300 >= m_{i-1} = 200 and c_i = 301 >= m_i = 200
    # (6): T_i = ceil(8 * 301 / 3) = ceil(802.67) = 803 (CPD = 3 here to exercise the ceiling)
    out = luo_suda.period_times(300, 200, 301, 200, 8, 2, 3)
    assert int(out["type"]) == 1
    assert float(out["T_i"]) == 803.0
    assert float(out["T_p"]) == 0.0 and float(out["T_c"]) == 0.0


def test_type_2_long_memory_in_this_period() -> None:
    # c_{i-1} = 300 >= m_{i-1} = 200; c_i = 50 < m_i = 1000
    # (7) first term: ceil(8 * 50 / 4) = 100
    # (8): T_c = max(1000 - (8 - 1) * 50, 0) = 650
    # T_i = 100 + 650 = 750
    out = luo_suda.period_times(300, 200, 50, 1000, 8, 2, 4)
    assert int(out["type"]) == 2
    assert float(out["T_c"]) == 650.0
    assert float(out["T_i"]) == 750.0


def test_type_3_long_memory_in_the_previous_period() -> None:
    # c_{i-1} = 50 < m_{i-1} = 1000; c_i = 300 >= m_i = 200
    # (9) first term: ceil(8 * 300 / 4) = 600
    # (10): T_p = max(1000 * floor(8 / 2 - 1) - (8 - 1) * 300, 0) = max(3000 - 2100, 0) = 900
    # T_i = 600 + 900 = 1500
    out = luo_suda.period_times(50, 1000, 300, 200, 8, 2, 4)
    assert int(out["type"]) == 3
    assert float(out["T_p"]) == 900.0 and float(out["T_c"]) == 0.0
    assert float(out["T_i"]) == 1500.0


def test_type_3_floor_of_warps_per_mpd() -> None:
    # N_act / MPD need not be whole: N_act = 8, MPD = 3
    # (9) first term: ceil(8 * 100 / 4) = 200
    # (10): T_p = max(1000 * floor(8 / 3 - 1) - 7 * 100, 0) = max(1000 * floor(1.67) - 700, 0) = 300
    out = luo_suda.period_times(50, 1000, 100, 100, 8, 3, 4)
    assert int(out["type"]) == 3
    assert float(out["T_i"]) == 500.0


def test_type_4_long_memory_in_both_periods() -> None:
    # c_{i-1} = 50 < m_{i-1} = 1000; c_i = 100 < m_i = 4000
    # (11) first term: ceil(8 * 100 / 4) = 200
    # (12): T_p = max(1000 * floor(8 / 2 - 1) - 7 * 100, 0) = 3000 - 700 = 2300
    # (13): T_c = max(4000 - (7 * 100 + 2300), 0) = 1000
    # T_i = 200 + 2300 + 1000 = 3500
    out = luo_suda.period_times(50, 1000, 100, 4000, 8, 2, 4)
    assert int(out["type"]) == 4
    assert (float(out["T_p"]), float(out["T_c"]), float(out["T_i"])) == (2300.0, 1000.0, 3500.0)


def test_a_first_period_has_no_previous_memory_task() -> None:
    # same numbers as type 4, but no previous period: type 2, T_c by (8) = 4000 - 700 = 3300, T = 200 + 3300
    out = luo_suda.period_times(50, 1000, 100, 4000, 8, 2, 4, has_prev=False)
    assert int(out["type"]) == 2
    assert float(out["T_i"]) == 3500.0 and float(out["T_p"]) == 0.0


def test_period_times_are_vectorised() -> None:
    out = luo_suda.period_times([300, 300, 50, 50], [200, 200, 1000, 1000], [301, 50, 300, 100],
                                [200, 1000, 200, 4000], 8, 2, [3, 4, 4, 4])
    assert list(out["type"]) == [1, 2, 3, 4]
    assert list(out["T_i"]) == [803.0, 750.0, 1500.0, 3500.0]


# ---- (2) MPD and (3)-(5) CPD ------------------------------------------------------------

def test_mpd_as_printed_and_per_sm() -> None:
    gpu_bwt = BANDWIDTH / CLOCK_HZ  # 90.097 bytes per clock
    warp_bwt = 32 * 4 / (2 * T_MEM)  # (1): 32 threads x 4 B / (2 transactions x 200) = 0.32 B/clock
    # (2) N_act = 4: floor(90.097 / (4 * 24 * 0.32)) = floor(2.93) = 2 -> min(4, 2) = 2
    # (2) N_act = 16: floor(90.097 / (16 * 24 * 0.32)) = floor(0.73) = 0 -> floored to 1 warp
    # per-SM reading, N_act = 16: floor(90.097 / (24 * 0.32)) = floor(11.73) = 11 -> min(16, 11) = 11
    assert list(luo_suda.mpd([4, 16], 24, warp_bwt, gpu_bwt)) == [2.0, 1.0]
    assert list(luo_suda.mpd([4, 16], 24, warp_bwt, gpu_bwt, "per-sm")) == [4.0, 11.0]


def test_cpd_low_and_high_computation_proportion() -> None:
    # P = 0.26 (svm), N_act = 16, m = 32 warps:
    #   (3) CPD1 = (0.5 - 0.26) * (16 - 11) + 3 = 4.2
    #   (5) n = 80 * (0.26 - 0.5)^2 = 4.608
    #   (4) CPD2 = 4.608 / 31 * sqrt(31^2 - (16 - 32)^2) + 3 = 4.608 / 31 * sqrt(705) + 3 = 6.9468
    #   CPD = min = 4.2
    # P = 0.8697 (blackscholes), N_act = 32:
    #   (3) CPD1 = (0.5 - 0.8697) * 21 + 3 = -4.764 (negative: (3) does not hold for P > c)
    #   (5) n = 80 * 0.3697^2 = 10.934;  (4) CPD2 = 10.934 / 31 * 31 + 3 = 13.934 -> CPD = CPD2
    # P = 0.1, N_act = 1: CPD1 = 0.4 * (-10) + 3 = -1 -> floored to cpd_min = 1
    out = luo_suda.cpd([0.26, 0.8697, 0.1], [16, 32, 1], A, B, C, D, MAX_WARPS)
    cpd2_svm = 4.608 / 31 * math.sqrt(705) + 3
    assert out["CPD1"] == pytest.approx([4.2, -4.7637, -1.0], abs=1e-4)
    assert out["CPD2"][0] == pytest.approx(cpd2_svm, rel=1e-12)
    assert out["CPD"] == pytest.approx([4.2, 80 * 0.3697**2 + 3, 1.0], rel=1e-9)
    printed = luo_suda.cpd([0.26], [1], A, B, C, D, MAX_WARPS, cpd_min=0.01)
    assert printed["CPD"][0] == pytest.approx(0.24 * -10 + 3)  # 0.6, as (3) prints it


# ---- whole kernels on the GTX 260 ---------------------------------------------------------

def kernel(name: str, per_warp_insts: float, per_warp_loads: float, sectors_per_load: float, **extra: float) -> dict:
    """240 blocks x 256 threads (8 warps) = 1920 warps, half occupancy: N_act = 16, 2 blocks per SM."""
    warps = 240 * 8
    row = {
        "kernel_name": name, "grid_blocks": 240, "block_threads": 256, "achieved_occupancy": 0.5,
        "inst_executed": per_warp_insts * warps, "inst_global_ld": per_warp_loads * warps, "inst_global_st": 0.0,
        "global_ld_sectors": sectors_per_load * per_warp_loads * warps, "global_st_sectors": 0.0,
    }
    row.update(extra)
    return row


def test_compute_heavy_kernel_by_hand() -> None:
    result = run([kernel("compute", 40, 4, 2)], **PUBLISHED)
    # per warp: 40 instructions, 4 global loads (2 transactions each), 36 computation instructions
    cost_c = 36 * COST_COMP  # 2340 clocks
    cost_m = 4 * T_MEM  # 800 clocks
    P = cost_c / (cost_c + cost_m)  # 0.7452 > c = 0.5 -> CPD = CPD2
    N = 16.0
    n = D * (P - C) ** 2  # (5)
    CPD = n / 31 * math.sqrt(31**2 - (N - 32) ** 2) + A  # (4): 7.1204
    K = 4  # one load per memory task -> 4 calculate periods
    c_i, m_i = cost_c / K, 1 * 2 * T_MEM  # 585 >= 400: every period is type 1
    T = math.ceil(N * c_i / CPD)  # (6): ceil(1314.5) = 1315
    rep = 240 / (2 * SMS)  # 5 rounds of 2 blocks on 24 SMs
    cycles = rep * K * T  # 26300
    row = result.iloc[0]
    assert row["error"] == ""
    assert row["P"] == pytest.approx(P)
    assert row["CPD"] == pytest.approx(CPD)
    assert (row["c_i"], row["m_i"]) == pytest.approx((c_i, m_i))
    assert row["period_type"] == 1 and row["state"].startswith("type 1")
    assert row["predicted_cycles"] == pytest.approx(cycles)
    assert row["predicted_ns"] == pytest.approx(cycles / CLOCK_HZ * 1e9)
    assert row["bottleneck"] == "compute"


def test_memory_heavy_kernel_by_hand() -> None:
    result = run([kernel("memory", 10, 4, 8)], **PUBLISHED)
    # per warp: 10 instructions, 4 uncoalesced loads (8 transactions each), 6 computation instructions
    cost_c, cost_m = 6 * COST_COMP, 4 * T_MEM  # 390, 800
    P = cost_c / (cost_c + cost_m)  # 0.3277 <= c
    N = 16.0
    cpd1 = (C - P) * (N - B) + A  # (3): 3.8613
    cpd2 = D * (P - C) ** 2 / 31 * math.sqrt(31**2 - (N - 32) ** 2) + A  # (4)-(5): 5.0334
    CPD = min(cpd1, cpd2)
    c_i, m_i = cost_c / 4, 8 * T_MEM  # 97.5 < 1600
    warp_bwt = 32 * 4 / (8 * T_MEM)  # (1): 0.08 B/clock
    MPD = min(N, math.floor(BANDWIDTH / CLOCK_HZ / (N * SMS * warp_bwt)))  # (2): floor(2.93) = 2
    comp = math.ceil(N * c_i / CPD)  # ceil(404.004) = 405
    first = comp + max(m_i - (N - 1) * c_i, 0)  # type 2, (7)-(8): 405 + 137.5
    T_p = max(m_i * math.floor(N / MPD - 1) - (N - 1) * c_i, 0)  # (12): 1600 * 7 - 1462.5 = 9737.5
    T_c = max(m_i - ((N - 1) * c_i + T_p), 0)  # (13): 0
    steady = comp + T_p + T_c  # type 4, (11)
    cycles = 5 * (first + 3 * steady)
    row = result.iloc[0]
    assert row["MPD"] == MPD == 2
    assert row["CPD"] == pytest.approx(CPD)
    assert (row["T_first"], row["T_steady"], row["T_p"]) == pytest.approx((first, steady, T_p))
    assert row["period_type"] == 4
    assert row["predicted_cycles"] == pytest.approx(cycles)
    assert row["bottleneck"] == "memory-bandwidth"  # MPD = 2 < N_act = 16


def test_options_change_the_documented_inputs() -> None:
    base = kernel("memory", 10, 4, 8)
    plain, per_sm, grouped, lines = (
        run([base], mpd_form="printed").iloc[0], run([base], mpd_form="per-sm").iloc[0],
        run([base], mem_insts_per_task=2).iloc[0], run([base], sectors_per_transaction=4).iloc[0],
    )
    # per-SM reading: floor(90.097 / (24 * 0.08)) = 46 -> min(16, 46) = 16
    assert per_sm["MPD"] == 16.0 and per_sm["predicted_ns"] < plain["predicted_ns"]
    assert grouped["periods"] == 2.0 and grouped["m_i"] == pytest.approx(2 * 8 * T_MEM)
    assert lines["N_trans"] == 2.0


@pytest.mark.parametrize("form", ["printed", "per-sm"])
def test_more_bytes_per_access_are_never_faster(form: str) -> None:
    # D_mem raises Warp_bwt (1), which lowers MPD (2), which lengthens T_p (10): monotone.
    # (Transactions and t_mem are not: they lower Warp_bwt and raise m_i together, and the floors of
    # (2) and (10) quantise the product -- a property of the paper's equations, see docs/models/luo-suda.md.)
    rows = [kernel(f"t{t}", 30, 4, t) for t in (1, 2, 4, 8, 16, 32)]
    times = np.array([run(rows, D_mem=d, mpd_form=form)["predicted_ns"].to_numpy()
                      for d in (1, 2, 4, 8, 16, 32, 64)])
    assert np.all(np.isfinite(times)) and np.all(times > 0)
    assert np.all(np.diff(times, axis=0) >= 0)
    assert times[-1].sum() > times[0].sum()  # and the inputs do matter


def test_kernel_without_global_memory_is_one_computation_period() -> None:
    row = kernel("alu", 100, 0, 0)
    result = run([row]).iloc[0]
    # P = 1 -> CPD2 with n = 80 * 0.25 = 20: 20 / 31 * sqrt(961 - 256) + 3; T = ceil(16 * 6500 / CPD); x 5 rounds
    CPD = 20 / 31 * math.sqrt(705) + 3
    assert result["error"] == ""
    assert result["predicted_cycles"] == pytest.approx(5 * math.ceil(16 * 100 * COST_COMP / CPD))
    assert result["bottleneck"] == "compute"


def test_missing_counters_are_named_with_their_ncu_metric() -> None:
    row = kernel("x", 40, 4, 2)
    del row["global_ld_sectors"]
    result = run([row, kernel("ok", 40, 4, 2)])
    assert "global_ld_sectors" in result["error"].iloc[0]
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in result["error"].iloc[0]
    assert math.isnan(result["predicted_ns"].iloc[0]) and result["bottleneck"].iloc[0] == "unknown"
    assert result["error"].iloc[1] == ""


def test_paper_constants_come_from_the_gtx260_profile() -> None:
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.model import resolve_constants

    gpu = resolve_profile("gtx260")
    if "luo-suda" not in gpu.model_constants:
        pytest.skip("gtx260 profile has no models.luo-suda block yet")
    resolved = resolve_constants(luo_suda.MODEL, gpu)
    assert {name: resolved[name].value for name in ("a", "b", "c", "d", "t_mem", "cost_comp")} == {
        "a": 3.0, "b": 11.0, "c": 0.5, "d": 80.0, "t_mem": 200.0, "cost_comp": 65.0}
    assert all(resolved[name].status == "paper" for name in ("a", "b", "c", "d", "t_mem", "cost_comp"))


def test_worked_example_file_on_the_gtx260() -> None:
    importers = pytest.importorskip("nvperf_bridge.importers")
    paths = sorted((REPO / "examples" / "papers").glob("luo-suda-*.yaml"))
    if not paths:
        pytest.skip("no examples/papers/luo-suda-*.yaml")
    doc = yaml.safe_load(paths[0].read_text(encoding="utf-8"))
    analysis = analyze(importers.read_profiles(paths[:1]), gpu=doc.get("gpu"), model_ids=["luo-suda"],
                       options={"luo-suda": PUBLISHED})  # the file's hand computations are the published form
    result = analysis.runs["luo-suda"].result
    # each item carries its hand-computed answer (worked in the file's comments) as raw columns
    for (_, got), item in zip(result.iterrows(), doc["kernels"]):
        assert got["error"] == ""
        assert got["predicted_cycles"] == pytest.approx(item["expected_cycles"], rel=1e-9)
        assert got["period_type"] == item["expected_period_type"]


def test_uncollected_shared_counts_are_named_not_silently_zero() -> None:
    """Without shared-memory counters the instructions are costed as computation, and the
    detail column says which counter would separate them."""
    from nvperf_bridge.builtin_plugins.luo_suda import LuoSudaModel
    from nvperf_bridge.gpu import load_profiles

    gpu = load_profiles()["gtx260"]
    base = {"grid_blocks": 240.0, "block_threads": 256.0, "inst_executed": 240 * 8 * 200.0,
            "inst_global_ld": 240 * 8 * 4.0, "inst_global_st": 240 * 8 * 1.0,
            "global_ld_sectors": 240 * 8 * 4.0, "global_st_sectors": 240 * 8 * 1.0, "achieved_occupancy": 0.5}
    frame = pd.DataFrame([{**base, "inst_shared_ld": 240 * 8 * 10.0, "inst_shared_st": 0.0}, base])
    result = LuoSudaModel().evaluate(frame, gpu, {})
    assert (result["error"] == "").all()
    assert result.loc[0, "I_smem_source"] == "inst_shared_ld + inst_shared_st"
    assert "smsp__inst_executed_op_shared_ld.sum" in result.loc[1, "I_smem_source"]


def test_defaults_keep_p_and_the_memory_tasks_in_one_unit() -> None:
    """memory_cost per-transaction (default): P charges each memory instruction the N_trans x t_mem
    its memory task m_i costs; the published per-instruction P charges t_mem once."""
    row = kernel("memory", 10, 4, 8)  # 4 loads of 8 transactions, 6 computation instructions
    default, published = run([row]).iloc[0], run([row], **PUBLISHED).iloc[0]
    assert default["P"] == pytest.approx(6 * COST_COMP / (6 * COST_COMP + 4 * 8 * T_MEM))
    assert published["P"] == pytest.approx(6 * COST_COMP / (6 * COST_COMP + 4 * T_MEM))
    assert default["m_i"] == published["m_i"] == pytest.approx(8 * T_MEM)
    assert default["mpd_form"] == "per-sm" and published["mpd_form"] == "printed"


def test_a_coalesced_warp_is_one_transaction_on_a_sector_gpu() -> None:
    """On the GTX 1080 Ti a coalesced warp of 4-byte words is 4 x 32-byte sectors: one transaction
    (the profile's coalesced_sectors_per_request), costing t_mem once as on the GTX 260; a strided
    warp of 32 sectors is 8."""
    from nvperf_bridge.builtin_plugins.luo_suda import LuoSudaModel
    from nvperf_bridge.gpu import resolve_profile

    gpu = resolve_profile("gtx-1080-ti")
    rows = [kernel("coalesced", 40, 4, 4), kernel("strided", 40, 4, 32)]
    result = LuoSudaModel().evaluate(pd.DataFrame(rows), gpu, {})
    assert list(result["N_trans"]) == [1.0, 8.0]
    assert list(result["sectors_per_transaction"]) == [4.0, 4.0]
    assert result["predicted_ns"].iloc[1] > result["predicted_ns"].iloc[0]


def test_the_fit_predictor_gives_evaluates_times(realdata_dir: Path) -> None:
    """calibrate's fast path (fit_predictor: the inputs that do not depend on the constants computed
    once) gives evaluate's predicted_ns bit for bit, NaN where evaluate gives a reason, at constants
    anywhere in their bounds, on the GTX 1080 Ti corpus and on rows evaluate refuses."""
    from nvperf_bridge.builtin_plugins.luo_suda import MODEL
    from nvperf_bridge.calibration import measured_ns, predict_ns, with_constants
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.gpu import resolve_profile

    gpu = resolve_profile("gtx-1080-ti")
    corpus = read_inputs(sorted((realdata_dir / "magus-corpus").glob("*.csv"))).kernels
    corpus = corpus[measured_ns(corpus).notna()]
    refused = pd.DataFrame([kernel("no instructions", 0, 0, 0), kernel("no sectors", 40, 4, 0),
                            kernel("fine", 40, 4, 4), kernel("missing", 40, 4, 4, inst_global_st=np.nan)])
    rng = np.random.default_rng(7)
    option_sets = [{}, {"rounding": "continuous"}, {"launch_ns": 900.0},
                   {"global_memory": "dram", "mpd_form": "printed", "memory_cost": "per-instruction"}]
    for options in option_sets:
        for frame in (corpus, refused):
            predictor = MODEL.fit_predictor(frame, gpu, options)
            for _ in range(3):
                trial = {spec.name: float(np.exp(rng.uniform(np.log(max(spec.bounds[0], 1e-2)), np.log(spec.bounds[1]))))
                         for spec in MODEL.constants}
                fast = predictor(trial)
                full = predict_ns(MODEL, frame, with_constants(gpu, MODEL.id, trial, "trial", "calibrated"), options)
                np.testing.assert_array_equal(fast, full.to_numpy())
                assert np.isfinite(fast).sum() > 0
        assert np.isnan(predictor(trial)).tolist() == [True, True, False, True]


def test_continuous_rounding_keeps_the_fractions_of_mpd_and_of_the_waiting_rounds() -> None:
    """rounding=continuous (EXTENSION): the same numbers as the type 3 fraction case and the per-SM
    MPD above, without the floors and the ceiling."""
    # (9) first term: 8 * 100 / 4 = 200; (10): T_p = max(1000 * (8 / 3 - 1) - 7 * 100, 0) = 966.67
    out = luo_suda.period_times(50, 1000, 100, 100, 8, 3, 4, rounding="continuous")
    assert float(out["T_p"]) == pytest.approx(1000 * (8 / 3 - 1) - 700)
    assert float(out["T_i"]) == pytest.approx(200 + 1000 * (8 / 3 - 1) - 700)
    # per-SM MPD, N_act = 16: 90.097 / (24 * 0.32) = 11.73 warps, not floor(11.73) = 11
    gpu_bwt, warp_bwt = BANDWIDTH / CLOCK_HZ, 32 * 4 / (2 * T_MEM)
    assert float(luo_suda.mpd([16], 24, warp_bwt, gpu_bwt, "per-sm", "continuous")[0]) == pytest.approx(
        gpu_bwt / (24 * warp_bwt))
    # in evaluate (printed by default): 4 loads of 2 transactions per warp, N_act = 16 on the GTX 260, the same 11
    # and 11.73 warps
    row = kernel("memory", 40, 4, 2)
    printed, continuous = run([row]).iloc[0], run([row], rounding="continuous").iloc[0]
    assert printed["MPD"] == 11.0 and continuous["MPD"] == pytest.approx(gpu_bwt / (24 * warp_bwt))


def test_an_l2_hit_never_costs_more_than_the_dram_access_it_saves() -> None:
    """global_memory=levels: a fitted t_l2 above t_mem (or t_l1 above t_l2) is used as the cost of the
    level behind it, so a kernel served half by L2 costs no more than if DRAM had served it all."""
    warps = 240 * 8
    sectors = 4 * 8 * warps  # 4 loads of 8 sectors per warp
    row = kernel("half from L2", 40, 4, 8, dram_bytes=32 * sectors / 2, l2_read_bytes=32 * sectors, l2_write_bytes=0.0)
    capped = run([row], t_mem=200.0, t_l2=500.0).iloc[0]
    at_dram = run([row], t_mem=200.0, t_l2=200.0).iloc[0]
    assert (capped["f_dram"], capped["f_l2"]) == (0.5, 0.5)
    assert capped["t_mem_served"] == at_dram["t_mem_served"] == 200.0
    assert capped["predicted_ns"] == at_dram["predicted_ns"]
    below = run([row], t_mem=200.0, t_l2=100.0).iloc[0]
    assert below["t_mem_served"] == pytest.approx(0.5 * 200 + 0.5 * 100)
    l1_row = kernel("half from L1", 40, 4, 8, dram_bytes=0.0, l2_read_bytes=32 * sectors / 2, l2_write_bytes=0.0)
    assert run([l1_row], t_l2=100.0, t_l1=300.0).iloc[0]["t_mem_served"] == pytest.approx(100.0)

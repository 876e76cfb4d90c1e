"""Kothapalli et al. (HiPC'09) MAX/SUM model: the list-ranking golden estimate,
coalescing and bank-conflict costs, Eq. (3) scaling, missing counters, invariants."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvperf_bridge.analysis import analyze
from nvperf_bridge.gpu import resolve_profile
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.kernelframe import ImportResult
from nvperf_bridge.model import BOTTLENECKS
from nvperf_bridge.registry import load_registry

from nvperf_bridge.builtin_plugins.kothapalli import MODEL

REPO = Path(__file__).resolve().parent.parent
LIST_RANKING_YAML = REPO / "examples" / "papers" / "kothapalli-list-ranking.yaml"


@pytest.fixture(scope="module")
def gtx280():
    return resolve_profile("gtx280")


def list_ranking_frame(**overrides: float) -> pd.DataFrame:
    """Section 5.2 by hand: 373 blocks of 512 threads, 264 uncoalesced accesses per thread."""
    warps = 373 * 16
    row = {
        "kernel_id": "0", "kernel_name": "list_rank_local", "device": "gtx280",
        "grid_blocks": 373.0, "block_threads": 512.0,
        "inst_executed": 264.0 * warps,
        "inst_global_ld": 176.0 * warps, "inst_global_st": 88.0 * warps,
        "global_ld_sectors": 32 * 176.0 * warps, "global_st_sectors": 32 * 88.0 * warps,
        "inst_shared_ld": 0.0, "inst_shared_st": 0.0,
    }
    row.update(overrides)
    return pd.DataFrame([row])


# ---- golden: Section 5.2 list ranking ----------------------------------------

def _check_list_ranking(result: pd.DataFrame) -> None:
    row = result.iloc[0]
    assert row["error"] == ""
    # the paper's inputs
    assert row["N_B"] == 13  # ceil(ceil(2^22 / 22 / 512) / 30)
    assert row["N_w"] == 16 and row["N_t"] == 32 and row["N_C"] == 8 and row["D"] == 4
    assert row["k"] == pytest.approx(1.0)  # non-coalesced: one thread per transaction
    assert row["N_comp"] == 0.0  # "we ignore this completely"
    assert row["N_memory"] == pytest.approx(4 * 22 * 3 * 501)  # (L + k) / k = 501 at k = 1
    # "For N = 2^22 we get the time per SM to be ~ 21.0 millisecond"
    assert row["predicted_ns"] / 1e6 == pytest.approx(21.0, rel=0.02)
    assert row["T_max_ns"] == row["predicted_ns"]
    assert row["T_sum_ns"] == pytest.approx(row["T_max_ns"])  # MAX and SUM agree (no compute)
    assert row["prediction"] == "MAX"
    assert row["bottleneck"] == "memory-latency"
    assert row["state"] == "MAX: N_memory > N_comp (global memory latency)"


def test_list_ranking_golden_from_the_example_file() -> None:
    analysis = analyze(read_profiles([LIST_RANKING_YAML]), model_ids=["kothapalli"])
    assert analysis.gpu.id == "gtx280"
    run = analysis.runs["kothapalli"]
    assert run.failure == ""
    _check_list_ranking(run.result)
    # measured 24 ms in the paper: the model's error is what the paper reports (~12%)
    assert analysis.measured_ns.iloc[0] == 24e6


def test_list_ranking_uses_the_gtx280_constants() -> None:
    gpu = resolve_profile("gtx280")
    if gpu.constant("kothapalli", "global_latency") is None:
        pytest.skip("gtx280.yaml has no kothapalli constants yet")
    analysis = analyze(read_profiles([LIST_RANKING_YAML]), model_ids=["kothapalli"])
    statuses = {name: c.status for name, c in analysis.runs["kothapalli"].constants.items()}
    assert statuses["global_latency"] == "paper"
    assert statuses["D"] == "paper"


def test_list_ranking_golden_from_a_hand_built_frame() -> None:
    analysis = analyze(ImportResult(kernels=list_ranking_frame(), inputs=[]), gpu="gtx280", model_ids=["kothapalli"])
    _check_list_ranking(analysis.runs["kothapalli"].result)


def test_list_ranking_golden_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from nvperf_bridge.cli import main
    from nvperf_bridge.reports.json_read import kernel_records

    code = main(["analyze", str(LIST_RANKING_YAML), "--model", "kothapalli", "--format", "json", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    assert report["gpu"]["id"] == "gtx280"
    entry = kernel_records(report)[0]["models"]["kothapalli"]
    assert entry["predicted_ns"] / 1e6 == pytest.approx(21.0, rel=0.02)
    details = entry["details"]  # JSON schema 3: columnar, read back per kernel
    assert details["T_sum_ns"] == pytest.approx(details["T_max_ns"])


def test_registered_through_the_entry_point() -> None:
    registry = load_registry()
    assert "kothapalli" in registry.models
    assert registry.models["kothapalli"].origin.startswith("entry point")


# ---- MAX and SUM ---------------------------------------------------------------

def test_sum_adds_compute_and_memory(gtx280) -> None:
    warps = 373 * 16
    frame = list_ranking_frame(inst_executed=(264.0 + 10000.0) * warps)  # 10000 computation instructions
    by_max = MODEL.evaluate(frame, gtx280, {}).iloc[0]
    by_sum = MODEL.evaluate(frame, gtx280, {"prediction": "sum"}).iloc[0]
    assert by_max["N_comp"] == pytest.approx(40000.0)
    assert by_max["C_T_max"] == pytest.approx(max(40000.0, by_max["N_memory"]))
    assert by_sum["C_T_sum"] == pytest.approx(40000.0 + by_max["N_memory"])
    assert by_sum["predicted_ns"] == pytest.approx(by_max["T_sum_ns"])
    assert by_sum["predicted_ns"] > by_max["predicted_ns"]
    assert by_sum["prediction"] == "SUM" and by_sum["state"].startswith("SUM: ")


def test_exposed_fraction_runs_from_the_papers_max_to_its_sum(gtx280) -> None:
    # the extension constant: 0 (the default) is the published MAX, 1 is the published SUM, 0.5 hides half the smaller
    from nvperf_bridge.calibration import with_constants

    warps = 373 * 16
    frame = list_ranking_frame(inst_executed=(264.0 + 10000.0) * warps)  # N_comp 40000 < N_memory 132264
    published = MODEL.evaluate(frame, gtx280, {}).iloc[0]
    by_sum = MODEL.evaluate(frame, gtx280, {"prediction": "sum"}).iloc[0]
    assert published["exposed_fraction"] == 0.0
    assert published["C_T_max"] == pytest.approx(published["N_memory"])
    for fraction, expected in ((0.0, published["predicted_ns"]), (1.0, by_sum["predicted_ns"]),
                               (0.5, published["predicted_ns"] * (1 + 0.5 * 40000.0 / published["N_memory"]))):
        gpu = with_constants(gtx280, "kothapalli", {"exposed_fraction": fraction}, "test", "calibrated")
        row = MODEL.evaluate(frame, gpu, {}).iloc[0]
        assert row["predicted_ns"] == pytest.approx(expected)
        assert row["T_sum_ns"] == pytest.approx(by_sum["T_sum_ns"])  # the SUM prediction never moves


def test_compute_bound_and_balanced(gtx280) -> None:
    warps = 373 * 16
    compute = MODEL.evaluate(list_ranking_frame(inst_executed=(264.0 + 1e6) * warps), gtx280, {}).iloc[0]
    assert compute["bottleneck"] == "compute"
    memory_cycles = 264 * 501
    balanced = MODEL.evaluate(list_ranking_frame(inst_executed=(264.0 + memory_cycles / 4) * warps), gtx280, {}).iloc[0]
    assert balanced["bottleneck"] == "balanced"


def test_eq3_scales_with_blocks_per_sm(gtx280) -> None:
    # 780 blocks with the same per-thread work: twice the blocks per SM (26 = ceil(780 / 30))
    bigger = list_ranking_frame(kernel_id="1", grid_blocks=780.0)
    counts = ["inst_executed", "inst_global_ld", "inst_global_st", "global_ld_sectors", "global_st_sectors"]
    bigger[counts] = bigger[counts] * (780.0 / 373.0)
    frame = pd.concat([list_ranking_frame(), bigger], ignore_index=True)
    result = MODEL.evaluate(frame, gtx280, {})
    assert list(result["N_B"]) == [13, 26]
    assert result.loc[1, "predicted_ns"] == pytest.approx(2 * result.loc[0, "predicted_ns"])


def test_max_thread_factor(gtx280) -> None:
    base = MODEL.evaluate(list_ranking_frame(), gtx280, {}).iloc[0]
    scaled = MODEL.evaluate(list_ranking_frame(), gtx280, {"max_thread_factor": 4}).iloc[0]
    assert scaled["predicted_ns"] == pytest.approx(4 * base["predicted_ns"])


# ---- memory costs --------------------------------------------------------------

def test_coalesced_access_cost(gtx280) -> None:
    warps = 373 * 16
    # one transaction per request on the GTX280 profile (coalesced_sectors_per_request 1)
    row = MODEL.evaluate(list_ranking_frame(global_ld_sectors=176.0 * warps, global_st_sectors=88.0 * warps),
                         gtx280, {}).iloc[0]
    group = row["k"]
    assert group == pytest.approx(MODEL.constants[4].default if gtx280.constant("kothapalli", "coalescing_group") is None
                                  else gtx280.constant("kothapalli", "coalescing_group").value)
    assert row["global_access_cycles"] == pytest.approx((500 + group) / group)


def test_bank_conflicts_cost_4k(gtx280) -> None:
    warps = 10 * 16
    frame = pd.DataFrame([{
        "kernel_id": "h", "grid_blocks": 10.0, "block_threads": 512.0,
        "inst_executed": 200.0 * warps, "inst_global_ld": 0.0, "inst_global_st": 0.0,
        "inst_shared_ld": 0.0, "inst_shared_st": 100.0 * warps,
        "shared_st_wavefronts": 8 * 100.0 * warps,  # 8-way conflicts
    }])
    row = MODEL.evaluate(frame, gtx280, {}).iloc[0]
    assert row["error"] == ""
    assert row["k_shared"] == pytest.approx(8.0)
    assert row["N_memory_shared"] == pytest.approx(100 * 4 * 8)
    assert row["N_comp"] == pytest.approx(100 * 4)
    assert row["state"] == "MAX: N_memory > N_comp (shared-memory bank conflicts)"


def test_zero_memory_instructions(gtx280) -> None:
    frame = list_ranking_frame(inst_executed=1000.0 * 373 * 16, inst_global_ld=0.0, inst_global_st=0.0,
                               global_ld_sectors=np.nan, global_st_sectors=np.nan)
    row = MODEL.evaluate(frame, gtx280, {}).iloc[0]
    assert row["error"] == ""
    assert row["N_memory"] == 0.0
    assert row["bottleneck"] == "compute"
    assert np.isfinite(row["predicted_ns"]) and row["predicted_ns"] > 0


# ---- missing counters ------------------------------------------------------------

def test_missing_counters_name_the_ncu_metric(gtx280) -> None:
    frame = pd.concat([
        list_ranking_frame(),
        list_ranking_frame(kernel_id="1", global_st_sectors=np.nan),
        list_ranking_frame(kernel_id="2", inst_shared_ld=np.nan),
        list_ranking_frame(kernel_id="3", inst_shared_st=5.0),  # shared stores without wavefronts
    ], ignore_index=True)
    result = MODEL.evaluate(frame, gtx280, {})
    assert result.loc[0, "error"] == ""
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum" in result.loc[1, "error"]
    assert "smsp__inst_executed_op_shared_ld.sum" in result.loc[2, "error"]
    assert "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum" in result.loc[3, "error"]
    assert result.loc[1:, "predicted_ns"].isna().all()


def test_inconsistent_counters_are_an_error(gtx280) -> None:
    result = MODEL.evaluate(list_ranking_frame(inst_executed=10.0), gtx280, {})
    assert "exceed inst_executed" in result.loc[0, "error"]


def test_bad_options(gtx280) -> None:
    from nvperf_bridge.errors import ModelError

    with pytest.raises(ModelError, match="prediction"):
        MODEL.evaluate(list_ranking_frame(), gtx280, {"prediction": "mean"})
    with pytest.raises(ModelError, match="max_thread_factor"):
        MODEL.evaluate(list_ranking_frame(), gtx280, {"max_thread_factor": 0})


# ---- invariants (one vectorised evaluation per example) ---------------------------

kernel_counts = st.fixed_dictionaries({
    "grid_blocks": st.integers(1, 5000).map(float),
    "block_threads": st.sampled_from([32.0, 64.0, 128.0, 256.0, 512.0]),
    "comp": st.floats(0.0, 5000.0),
    "gmem": st.floats(0.0, 300.0),
    "smem": st.floats(0.0, 300.0),
    "sectors_per_request": st.floats(0.5, 32.0),
    "conflicts": st.floats(1.0, 16.0),
})
batches = st.lists(kernel_counts, min_size=1, max_size=25)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def frame_from(c: dict, kernel_id: str, *, comp: float = 0.0, gmem: float = 0.0, smem: float = 0.0,
               sectors: float = 0.0, conflicts: float = 0.0) -> dict:
    warps = c["grid_blocks"] * math.ceil(c["block_threads"] / 32)
    g = round((c["gmem"] + gmem) * warps)
    s = round((c["smem"] + smem) * warps)
    return {
        "kernel_id": kernel_id, "grid_blocks": c["grid_blocks"], "block_threads": c["block_threads"],
        "inst_executed": round((c["comp"] + comp) * warps) + g + s + 1,
        "inst_global_ld": g, "inst_global_st": 0.0, "global_ld_sectors": round((c["sectors_per_request"] + sectors) * g),
        "inst_shared_ld": s, "inst_shared_st": 0.0, "shared_ld_wavefronts": round((c["conflicts"] + conflicts) * s),
    }


def pairs(gpu, batch: list[dict], options: dict, **more: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [frame_from(c, str(i)) for i, c in enumerate(batch)]
    rows += [frame_from(c, f"more{i}", **more) for i, c in enumerate(batch)]
    result = MODEL.evaluate(pd.DataFrame(rows), gpu, options)
    n = len(batch)
    return result.iloc[:n].reset_index(drop=True), result.iloc[n:].reset_index(drop=True)


PREDICTION = st.sampled_from([{}, {"prediction": "sum"}])


@SETTINGS
@given(batch=batches, options=PREDICTION)
def test_predictions_are_finite_and_positive(gtx280, batch, options) -> None:
    frame = pd.DataFrame([frame_from(c, str(i)) for i, c in enumerate(batch)])
    result = MODEL.evaluate(frame, gtx280, options)
    assert result.index.equals(frame.index)
    assert (result["error"] == "").all(), result["error"].tolist()
    assert np.isfinite(result["predicted_ns"]).all() and (result["predicted_ns"] > 0).all()
    assert result["bottleneck"].isin(BOTTLENECKS).all()
    assert (result["T_sum_ns"] >= result["T_max_ns"] * (1 - 1e-12)).all()


@SETTINGS
@given(batch=batches, options=PREDICTION, extra=st.floats(1.0, 1000.0))
def test_more_instructions_never_faster(gtx280, batch, options, extra) -> None:
    base, more = pairs(gtx280, batch, options, comp=extra)
    assert (more["predicted_ns"] >= base["predicted_ns"] * (1 - 1e-9)).all()


@SETTINGS
@given(batch=batches, options=PREDICTION, gmem=st.floats(0.0, 50.0), smem=st.floats(0.0, 50.0),
       sectors=st.floats(0.0, 16.0), conflicts=st.floats(0.0, 8.0))
def test_more_memory_traffic_never_faster(gtx280, batch, options, gmem, smem, sectors, conflicts) -> None:
    base, more = pairs(gtx280, batch, options, gmem=gmem, smem=smem, sectors=sectors, conflicts=conflicts)
    assert (more["predicted_ns"] >= base["predicted_ns"] * (1 - 1e-9)).all()


def test_sector_gpu_strided_and_wide_accesses_cost_what_their_sectors_cost() -> None:
    """On a sector GPU (cc >= 2.0) a strided warp load touches 32 sectors: one thread per
    transaction (k = 1), not k = 4 as N_t x c / r gave; a coalesced warp of 16-byte words
    touches 16 sectors (k = 2) and of 4-byte words 4 sectors (k = 8). Memory cost per access
    is (L + k) / k, so strided costs about 8x the coalesced 4-byte access."""
    from nvperf_bridge.builtin_plugins.kothapalli import MODEL
    from nvperf_bridge.gpu import resolve_profile

    gpu = resolve_profile("gtx-1080-ti")
    base = {"kernel": "k", "grid_blocks": 1120.0, "block_threads": 256.0, "inst_executed": 8960.0 * 20,
            "inst_global_ld": 8960.0 * 4, "inst_global_st": 0.0, "inst_shared_ld": 0.0, "inst_shared_st": 0.0,
            "global_st_sectors": 0.0, "achieved_occupancy": 1.0}
    rows = pd.DataFrame([{**base, "global_ld_sectors": 8960.0 * 4 * r} for r in (4, 16, 32)],
                        index=["coalesced 4-byte", "coalesced 16-byte", "strided"])
    out = MODEL.evaluate(rows, gpu, {})
    assert list(out["k"]) == [8.0, 2.0, 1.0]
    assert (out["k_rule"] == "sectors: N_t / r (cc >= 2.0)").all()
    memory = out["N_memory"]  # cycles per thread: 4 accesses x (L + k) / k
    assert memory["strided"] > 7 * memory["coalesced 4-byte"]
    assert memory["coalesced 16-byte"] > 3 * memory["coalesced 4-byte"]
    # the paper's own GPU (cc 1.x) keeps Section 3.2.2's rule: a coalesced half-warp is one transaction
    g80 = resolve_profile("8800gtx")
    assert (MODEL.evaluate(rows, g80, {})["k_rule"] == "Section 3.2.2: N_t x c / r").all()

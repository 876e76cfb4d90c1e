"""Hong & Kim (ISCA'09) MWP/CWP model: the Table 2 golden numbers, each case of
Eqs. (22)-(24), the synchronization cost, missing counters and invariants."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nvperf_bridge.analysis import analyze
from nvperf_bridge.gpu import profile_from_mapping, resolve_profile
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.kernelframe import ImportResult
from nvperf_bridge.model import BOTTLENECKS
from nvperf_bridge.registry import load_registry

from nvperf_bridge.builtin_plugins.hong_kim import MODEL, STATE_COMP_GT_MEM, STATE_EQ22, STATE_MWP_LT_CWP

REPO = Path(__file__).resolve().parent.parent
TABLE2_YAML = REPO / "examples" / "papers" / "hong-kim-table2.yaml"
WARPS = 320  # Table 2: 80 blocks x 128 threads / 32


def paper(value: float, expected: float, rel: float = 1e-3) -> bool:
    """Within 0.1% of a number printed in the paper (the paper rounds MWP to 2.28)."""
    return abs(value - expected) <= rel * abs(expected)


def table2_frame(**overrides: float) -> pd.DataFrame:
    """The Table 2 kernel as canonical columns, built by hand (per-thread count x 320 warps)."""
    row = {
        "kernel_id": "0",
        "kernel_name": "MatrixMulKernel",
        "device": "hong-kim-example",
        "grid_blocks": 80.0,
        "block_threads": 128.0,
        "registers_per_thread": 12.0,
        "inst_executed": 33.0 * WARPS,
        "inst_global_ld": 6.0 * WARPS,
        "inst_global_st": 0.0,
        "global_ld_sectors": 32.0 * 6.0 * WARPS,
        "inst_barrier": 6.0 * WARPS,
    }
    row.update(overrides)
    return pd.DataFrame([row])


@pytest.fixture(scope="module")
def example_gpu():
    return resolve_profile("hong-kim-example")


# ---- golden: Table 2 through the public path --------------------------------

def _check_table2(result: pd.DataFrame) -> None:
    row = result.iloc[0]
    assert row["error"] == ""
    # Table 2, line by line
    assert row["Departure_delay"] == pytest.approx(320.0)
    assert row["Mem_L"] == pytest.approx(730.0)
    assert paper(row["MWP_Without_BW_full"], 2.28)
    assert paper(row["BW_per_warp"] / 1e9, 0.175, rel=2e-3)  # paper prints 0.175 GB/s (0.17534)
    assert paper(row["MWP_peak_BW"], 28.57, rel=2e-3)  # paper divides by the rounded 0.175
    assert paper(row["MWP"], 2.28)
    assert row["Comp_cycles"] == pytest.approx(132.0)  # 4 x (27 + 6), barriers not added again
    assert row["Mem_cycles"] == pytest.approx(4380.0)
    assert paper(row["CWP_full"], 34.18)
    assert row["CWP"] == pytest.approx(20.0)
    assert row["N"] == pytest.approx(20.0)
    assert row["Rep"] == pytest.approx(1.0)
    assert row["Active_blocks_per_SM"] == pytest.approx(5.0)
    assert row["equation"] == "23"
    assert row["state"] == STATE_MWP_LT_CWP
    assert paper(row["Exec_cycles_app"], 38450.0)
    assert paper(row["Synch_cost"], 12288.0)
    assert paper(row["predicted_cycles"], 50738.0)
    # the exact values behind the paper's rounding (MWP = 730 / 320 = 2.28125)
    assert row["Exec_cycles_app"] == pytest.approx(4380.0 * 20 / 2.28125 + 22.0 * 1.28125)
    assert row["Synch_cost"] == pytest.approx(320.0 * 1.28125 * 6 * 5)
    # 1 GHz: one cycle per nanosecond, from the profile clock
    assert row["predicted_ns"] == pytest.approx(row["predicted_cycles"])
    assert row["clock_source"].startswith("profile")
    assert row["bottleneck"] == "memory-latency"  # MWP limited by departure delay, not bandwidth


def test_table2_golden_from_the_example_file() -> None:
    analysis = analyze(read_profiles([TABLE2_YAML]), model_ids=["hong-kim"])
    assert analysis.gpu.id == "hong-kim-example"  # picked from the file's `gpu:` line
    run = analysis.runs["hong-kim"]
    assert run.failure == ""
    _check_table2(run.result)
    extensions = ("L2_LD", "L1_LD", "Shared_cycles_per_wavefront", "launch_ns")  # constants of the extensions, not in the paper
    assert {name: c.status for name, c in run.constants.items() if name not in extensions} == {
        "Mem_LD": "paper", "Departure_del_uncoal": "paper", "Departure_del_coal": "paper",
        "Issue_cycles": "paper", "Uncoal_per_mw": "paper", "Load_bytes_per_warp": "paper",
    }


def test_table2_golden_from_a_hand_built_frame() -> None:
    analysis = analyze(ImportResult(kernels=table2_frame(), inputs=[]), gpu="hong-kim-example", model_ids=["hong-kim"])
    _check_table2(analysis.runs["hong-kim"].result)


def test_table2_golden_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from nvperf_bridge.cli import main
    from nvperf_bridge.reports.json_read import kernel_records

    code = main(["analyze", str(TABLE2_YAML), "--model", "hong-kim", "--format", "json", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    assert report["gpu"]["id"] == "hong-kim-example"
    entry = kernel_records(report)[0]["models"]["hong-kim"]
    details = entry["details"]  # JSON schema 3: columnar, read back per kernel
    assert paper(details["MWP"], 2.28)
    assert details["CWP"] == pytest.approx(20.0)
    assert paper(details["Exec_cycles_app"], 38450.0)
    assert paper(entry["predicted_cycles"], 50738.0)
    assert entry["state"] == STATE_MWP_LT_CWP


def test_registered_through_the_entry_point() -> None:
    registry = load_registry()
    assert "hong-kim" in registry.models
    assert registry.models["hong-kim"].origin.startswith("entry point")


# ---- inputs ------------------------------------------------------------------

def test_measured_clock_is_used_when_present(example_gpu) -> None:
    result = MODEL.evaluate(table2_frame(sm_clock_hz=2e9), example_gpu, {})
    row = result.iloc[0]
    assert row["clock_source"] == "measured sm_clock_hz"
    # Freq also enters Eq. (7): only the bandwidth term changes, MWP stays latency-limited
    assert row["predicted_ns"] == pytest.approx(row["predicted_cycles"] / 2.0)


def test_coalesced_loads_use_the_profile_threshold(example_gpu) -> None:
    # 1 transaction per request on the example machine (#Coal_per_mw = 1): all coalesced
    row = MODEL.evaluate(table2_frame(global_ld_sectors=6.0 * WARPS), example_gpu, {}).iloc[0]
    assert row["Weight_coal"] == pytest.approx(1.0)
    assert row["Mem_L"] == pytest.approx(420.0)
    assert row["Departure_delay"] == pytest.approx(4.0)
    # halfway: 16.5 transactions per request -> half uncoalesced (Eqs. 13, 14 weights)
    row = MODEL.evaluate(table2_frame(global_ld_sectors=16.5 * 6.0 * WARPS), example_gpu, {}).iloc[0]
    assert row["Weight_uncoal"] == pytest.approx(0.5)
    assert row["Mem_L"] == pytest.approx(0.5 * 730 + 0.5 * 420)


# ---- the cases ---------------------------------------------------------------

def test_eq22_not_enough_warps(example_gpu) -> None:
    # one warp per SM: MWP = CWP = N = 1, all serialised
    frame = table2_frame(grid_blocks=16.0, block_threads=32.0, inst_executed=33.0 * 16, inst_global_ld=6.0 * 16,
                         global_ld_sectors=32.0 * 6 * 16, inst_barrier=0.0)
    row = MODEL.evaluate(frame, example_gpu, {}).iloc[0]
    assert row["N"] == pytest.approx(1.0)
    assert row["equation"] == "22"
    assert row["state"] == STATE_EQ22
    assert row["bottleneck"] == "parallelism"
    assert row["predicted_cycles"] == pytest.approx(row["Mem_cycles"] + row["Comp_cycles"])  # (22) with MWP = 1


def test_eq24_and_the_printed_comp_clause(example_gpu) -> None:
    # compute-heavy: 2000 instructions per thread, 1 coalesced load
    frame = table2_frame(inst_executed=2000.0 * WARPS, inst_global_ld=1.0 * WARPS, global_ld_sectors=1.0 * WARPS,
                         inst_barrier=0.0)
    published = MODEL.evaluate(frame, example_gpu, {}).iloc[0]
    assert published["Comp_cycles"] > published["Mem_cycles"]
    assert published["MWP"] > published["CWP"]
    # as printed: "If (CWP >= MWP) or (Comp_cycles > Mem_cycles)" -> Eq. (23)
    assert published["equation"] == "23"
    assert published["state"] == STATE_COMP_GT_MEM
    assert published["bottleneck"] == "compute"
    text = MODEL.evaluate(frame, example_gpu, {"case_selection": "section-3.2"}).iloc[0]
    assert text["equation"] == "24"
    assert text["predicted_cycles"] == pytest.approx(text["Mem_L"] + text["Comp_cycles"] * text["N"])  # (24)
    assert text["bottleneck"] == "compute"
    # the printed clause predicts below the issue time of N warps (documented in the model)
    assert published["predicted_cycles"] < published["Comp_cycles"] * published["N"] <= text["predicted_cycles"]


def test_bandwidth_limited_mwp() -> None:
    data = resolve_profile("hong-kim-example").raw | {"memory_bandwidth_gb_per_s": 2.0, "id": "slow"}
    slow = profile_from_mapping(data)
    row = MODEL.evaluate(table2_frame(global_ld_sectors=6.0 * WARPS), slow, {}).iloc[0]
    assert row["MWP"] == pytest.approx(row["MWP_peak_BW"])
    assert row["MWP_limit"].startswith("bandwidth")
    assert row["bottleneck"] == "memory-bandwidth"


def test_synchronization_dominated(example_gpu) -> None:
    row = MODEL.evaluate(table2_frame(inst_barrier=60.0 * WARPS, inst_executed=87.0 * WARPS), example_gpu, {}).iloc[0]
    assert row["Synch_cost"] >= row["Exec_cycles_app"]
    assert row["bottleneck"] == "synchronization"
    assert row["state"] == STATE_MWP_LT_CWP  # the paper's case is unchanged


def test_zero_memory_instructions(example_gpu) -> None:
    frame = table2_frame(inst_global_ld=0.0, global_ld_sectors=np.nan, inst_barrier=0.0)
    row = MODEL.evaluate(frame, example_gpu, {}).iloc[0]
    assert row["error"] == ""
    assert row["state"] == "no global memory instructions"
    assert row["bottleneck"] == "compute"
    assert row["predicted_cycles"] == pytest.approx(4 * 33 * 20)  # Comp_cycles x N x #Rep
    assert np.isfinite(row["predicted_ns"]) and row["predicted_ns"] > 0


# ---- missing counters --------------------------------------------------------

def test_missing_counters_name_the_ncu_metric(example_gpu) -> None:
    frame = pd.concat(
        [table2_frame(), table2_frame(kernel_id="2", global_ld_sectors=np.nan)],
        ignore_index=True,
    )
    result = MODEL.evaluate(frame, example_gpu, {})
    assert result.loc[0, "error"] == "" and result.loc[0, "predicted_ns"] > 0
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in result.loc[1, "error"]
    assert np.isnan(result.loc[1, "predicted_ns"])
    assert result.loc[1, "bottleneck"] == "unknown"


def test_without_barrier_counts_predicts_without_synch_cost_and_says_so(example_gpu) -> None:
    """nvprof cannot count barriers: the kernel is still predicted, by Eqs. (1)-(25)
    without Eq. (26), and the output names the missing counter and its ncu metric."""
    frame = pd.concat(
        [table2_frame(), table2_frame(kernel_id="1").assign(inst_barrier=np.nan)], ignore_index=True
    )
    result = MODEL.evaluate(frame, example_gpu, {})
    with_synch, without = result.loc[0], result.loc[1]
    assert without["error"] == ""
    assert without["predicted_cycles"] == pytest.approx(with_synch["Exec_cycles_app"])  # Eq. (27) minus Synch_cost
    assert without["predicted_cycles"] < with_synch["predicted_cycles"]
    assert without["state"].endswith("(no Synch_cost: inst_barrier not collected)")
    assert "smsp__inst_executed_op_barrier.sum" in without["Synch_source"]
    assert with_synch["Synch_source"] == "inst_barrier"
    assert np.isnan(without["Synch_insts"])


def test_missing_column_entirely(example_gpu) -> None:
    result = MODEL.evaluate(table2_frame().drop(columns=["inst_global_st"]), example_gpu, {})
    assert "smsp__inst_executed_op_global_st.sum" in result.loc[0, "error"]


def test_dram_option_needs_dram_bytes_and_says_so(example_gpu) -> None:
    result = MODEL.evaluate(table2_frame(), example_gpu, {"memory_inputs": "dram"})
    assert "dram__bytes.sum" in result.loc[0, "error"]
    # half of the sectors reach DRAM: half the memory warps wait Mem_L
    frame = table2_frame(dram_bytes=0.5 * 32 * 32 * 6 * WARPS)
    row = MODEL.evaluate(frame, example_gpu, {"memory_inputs": "dram"}).iloc[0]
    assert row["error"] == ""
    assert row["Mem_insts"] == pytest.approx(3.0)
    assert row["memory_inputs"].startswith("dram")
    assert row["Comp_cycles"] == pytest.approx(132.0)  # every instruction is still issued


def test_cache_aware_blends_latency(example_gpu) -> None:
    plain = MODEL.evaluate(table2_frame(l2_hit_rate=0.5), example_gpu, {}).iloc[0]
    blended = MODEL.evaluate(table2_frame(l2_hit_rate=0.5), example_gpu, {"cache_aware": True}).iloc[0]
    assert plain["Mem_LD"] == pytest.approx(420.0)
    assert blended["Mem_LD"] == pytest.approx(0.5 * 200.0 + 0.5 * 420.0)
    assert blended["predicted_ns"] < plain["predicted_ns"]
    missing = MODEL.evaluate(table2_frame(), example_gpu, {"cache_aware": "true"})
    assert "lts__t_sector_hit_rate.pct" in missing.loc[0, "error"]


def test_bad_option_is_a_model_error(example_gpu) -> None:
    from nvperf_bridge.errors import ModelError

    with pytest.raises(ModelError, match="memory_inputs"):
        MODEL.evaluate(table2_frame(), example_gpu, {"memory_inputs": "l2"})


# ---- invariants --------------------------------------------------------------
# Each example is a batch of kernels evaluated in one frame (the model is
# vectorised; this also checks that rows do not influence each other).

kernel_counts = st.fixed_dictionaries({
    "grid_blocks": st.integers(1, 5000).map(float),
    "block_threads": st.sampled_from([32.0, 64.0, 96.0, 128.0, 256.0, 512.0]),
    "comp": st.floats(0.0, 5000.0),
    "mem": st.floats(0.0, 200.0),
    "sectors_per_request": st.floats(0.5, 32.0),
    "barriers": st.floats(0.0, 1.0),  # barriers as a fraction of the memory instructions
    "occupancy": st.floats(0.01, 1.0),
})
batches = st.lists(kernel_counts, min_size=1, max_size=25)


def frame_from(counts: dict, *, extra_comp: float = 0.0, extra_mem: float = 0.0, extra_sectors: float = 0.0,
               kernel_id: str = "0") -> pd.DataFrame:
    """One kernel from per-thread counts, as whole-number warp-level totals like a profiler's."""
    warps = counts["grid_blocks"] * np.ceil(counts["block_threads"] / 32)
    mem_total = round((counts["mem"] + extra_mem) * warps)
    barrier_total = round(counts["barriers"] * counts["mem"] * warps)
    return pd.DataFrame([{
        "kernel_id": kernel_id,
        "grid_blocks": counts["grid_blocks"],
        "block_threads": counts["block_threads"],
        "achieved_occupancy": counts["occupancy"],
        "inst_executed": round((counts["comp"] + extra_comp) * warps) + mem_total + barrier_total + 1,
        "inst_global_ld": mem_total,
        "inst_global_st": 0.0,
        "global_ld_sectors": round((counts["sectors_per_request"] + extra_sectors) * mem_total),
        "inst_barrier": barrier_total,
    }])


def batch_frame(batch: list[dict], **more: float) -> pd.DataFrame:
    return pd.concat([frame_from(c, kernel_id=str(i), **more) for i, c in enumerate(batch)], ignore_index=True)


def evaluate_pairs(gpu, batch: list[dict], options: dict, **more: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(base, changed) results for every kernel of the batch, from one evaluation."""
    frame = pd.concat([batch_frame(batch), batch_frame(batch, **more)], ignore_index=True)
    result = MODEL.evaluate(frame, gpu, options)
    n = len(batch)
    return result.iloc[:n].reset_index(drop=True), result.iloc[n:].reset_index(drop=True)


OPTIONS = st.sampled_from([{}, {"case_selection": "section-3.2"}, {"cache_aware": True}])
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(batch=batches, options=OPTIONS, hit=st.floats(0.0, 1.0))
def test_predictions_are_finite_and_positive(example_gpu, batch, options, hit) -> None:
    frame = batch_frame(batch).assign(l2_hit_rate=hit)
    result = MODEL.evaluate(frame, example_gpu, options)
    assert result.index.equals(frame.index)
    assert (result["error"] == "").all(), result["error"].tolist()
    for column in ("predicted_ns", "predicted_cycles"):
        assert np.isfinite(result[column]).all() and (result[column] > 0).all()
    assert result["bottleneck"].isin(BOTTLENECKS).all() and (result["bottleneck"] != "unknown").all()
    assert (result["MWP"] > 0).all() and (result["CWP"] >= 1.0 - 1e-12).all()
    assert (result["Synch_cost"] >= 0).all()
    # rows are independent: each kernel alone gives the same prediction
    alone = MODEL.evaluate(frame.iloc[[-1]], example_gpu, options)
    assert alone["predicted_ns"].iloc[0] == pytest.approx(result["predicted_ns"].iloc[-1])


@SETTINGS
@given(batch=batches, extra=st.floats(1.0, 5000.0))
def test_more_instructions_never_faster(example_gpu, batch, extra) -> None:
    # section-3.2 case selection: monotone across the CWP = MWP boundary (Eq. 24 jumps up)
    base, more = evaluate_pairs(example_gpu, batch, {"case_selection": "section-3.2"}, extra_comp=extra)
    assert (more["predicted_ns"] >= base["predicted_ns"] * (1 - 1e-9)).all()


@SETTINGS
@given(batch=batches, extra_mem=st.floats(0.5, 100.0), extra_sectors=st.floats(0.0, 16.0))
def test_more_memory_traffic_never_faster_within_a_case(example_gpu, batch, extra_mem, extra_sectors) -> None:
    # More memory instructions or more transactions per request, same computation:
    # not faster while the paper's case stays the same. The published equations
    # jump down where CWP crosses MWP (Eq. 24 -> 23), and Eq. (23)'s Comp_p =
    # Comp_cycles / #Mem_insts shrinks with more memory instructions when the
    # printed Comp_cycles > Mem_cycles clause applies, so section-3.2 is used.
    base, more = evaluate_pairs(example_gpu, batch, {"case_selection": "section-3.2"},
                                extra_mem=extra_mem, extra_sectors=extra_sectors)
    same_case = base["equation"] == more["equation"]
    assume(same_case.any())
    # Eqs. (22)-(24), before the barrier term: Eq. (26)'s Synch_cost is not monotone (next test)
    assert (more["Exec_cycles_app"][same_case] >= base["Exec_cycles_app"][same_case] * (1 - 1e-9)).all()


def test_published_barrier_cost_shrinks_as_departure_delay_grows(example_gpu) -> None:
    """Documents a property of the published equations (found by the property test above with
    --hypothesis-seed=103): with MWP = Mem_L / Departure_delay (Eq. 6, neither bandwidth nor N
    binding), Eq. (26)'s Departure_delay x (MWP - 1) is Mem_L - Departure_delay, so one more
    uncoalesced transaction per request (Departure_delay +10.2, Mem_L +10) lowers the barrier
    cost by more than Exec_cycles_app rises, and Eq. (27)'s total drops by 0.6 cycles in 129k."""
    batch = [{"grid_blocks": 165.0, "block_threads": 32.0, "comp": 368.0, "mem": 26.0, "sectors_per_request": 5.0,
              "barriers": 1.0, "occupancy": 1.0}]
    base, more = evaluate_pairs(example_gpu, batch, {"case_selection": "section-3.2"}, extra_mem=1.0, extra_sectors=1.0)
    assert (base["equation"] == more["equation"]).all()
    assert base["MWP"].iloc[0] == pytest.approx(base["Mem_L"].iloc[0] / base["Departure_delay"].iloc[0])
    assert more["Exec_cycles_app"].iloc[0] > base["Exec_cycles_app"].iloc[0]
    assert more["Synch_cost"].iloc[0] < base["Synch_cost"].iloc[0]
    assert more["predicted_cycles"].iloc[0] < base["predicted_cycles"].iloc[0]


def test_published_case_rule_is_not_monotone_at_comp_equals_mem(example_gpu) -> None:
    # Documents why case_selection=section-3.2 exists: crossing Comp_cycles = Mem_cycles
    # (420 cycles: one coalesced load) under the printed condition switches Eq. (24)
    # to Eq. (23) and the prediction drops although instructions were added.
    below = table2_frame(inst_executed=100.0 * WARPS, inst_global_ld=1.0 * WARPS, global_ld_sectors=1.0 * WARPS,
                         inst_barrier=0.0)
    above = below.assign(inst_executed=110.0 * WARPS)
    a = MODEL.evaluate(below, example_gpu, {}).iloc[0]
    b = MODEL.evaluate(above, example_gpu, {}).iloc[0]
    assert (a["equation"], b["equation"]) == ("24", "23")
    assert b["predicted_cycles"] < a["predicted_cycles"]
    c = MODEL.evaluate(above, example_gpu, {"case_selection": "section-3.2"}).iloc[0]
    assert c["equation"] == "24" and c["predicted_cycles"] > a["predicted_cycles"]


def test_load_bytes_per_warp_is_the_data_size_the_threads_ask_for(realdata_dir: Path) -> None:
    # Table 1 row 21: Load_bytes_per_warp = data size x 32 threads. On the real nvprof run of the CUDA SDK scan,
    # uniformUpdate adds a uint4 (16 bytes) per thread: 512 B per memory warp (less the one 4-byte load per block
    # of the value it adds), not Table 1's typical 4 B x 32
    from nvperf_bridge.discovery import read_inputs

    corpus = realdata_dir / "magus-corpus"
    kernels = read_inputs([corpus / "metrics_cudasdk_scan.csv", corpus / "traces_cudasdk_scan.csv"]).kernels
    gpu = resolve_profile("gtx-1080-ti")
    requested = MODEL.evaluate(kernels, gpu, {})
    constant = MODEL.evaluate(kernels, gpu, {"load_bytes": "constant"})
    update = (kernels["kernel"] == "uniformUpdate").to_numpy()
    assert update.any()
    ask = requested.loc[update, "Load_bytes_per_warp"].to_numpy()
    assert ((ask > 3.5 * 128.0) & (ask <= 512.0)).all()
    assert (constant["Load_bytes_per_warp"] == 128.0).all()
    # more bytes per warp: fewer warps saturate the SM's share of the bandwidth (Eq. 6), in proportion
    assert (requested.loc[update, "MWP_peak_BW"].to_numpy()
            == pytest.approx(constant.loc[update, "MWP_peak_BW"].to_numpy() * 128.0 / ask, rel=1e-9))
    assert set(requested["load_bytes"]) == {"requested"}


def test_texture_fetches_are_memory_warps_with_l2_reads(realdata_dir: Path) -> None:
    # The CUDA SDK convolutionFFT2D reads its input through the texture path (tex1Dfetch): nvprof counts no global
    # load request for spPreprocess2D_kernel, yet L2 serves it ~16 read sectors per warp. The paper's #Mem_insts
    # (global ld/st requests) sees only its stores; l2_reads=memory-warps (EXTENSION) makes the unseen read
    # sectors coalesced memory warps of 4 sectors, and a kernel whose L2 reads are its global loads' is unchanged
    from nvperf_bridge.discovery import read_inputs

    corpus = realdata_dir / "magus-corpus"
    kernels = read_inputs([corpus / f"{kind}_cudasdk_{app}.csv" for app in ("convolutionFFT2D", "transpose")
                           for kind in ("metrics", "traces")]).kernels
    gpu = resolve_profile("gtx-1080-ti")
    paper = MODEL.evaluate(kernels, gpu, {})
    fetched = MODEL.evaluate(kernels, gpu, {"l2_reads": "memory-warps"})
    names = kernels["kernel"].astype(str)
    texture = (names == "spPreprocess2D_kernel").to_numpy()
    assert texture.any() and (kernels.loc[texture, "inst_global_ld"] == 0).all()
    warps = kernels.loc[texture, "grid_blocks"] * np.ceil(kernels.loc[texture, "block_threads"] / 32)
    unseen = kernels.loc[texture, "l2_read_bytes"] / 32 / warps / 4  # coalesced warps of 4 sectors
    assert (unseen > 3.5).all()
    assert fetched.loc[texture, "Unseen_mem_insts"].to_numpy() == pytest.approx(unseen.to_numpy(), rel=1e-6)
    assert fetched.loc[texture, "Mem_insts"].to_numpy() == pytest.approx(
        (paper.loc[texture, "Mem_insts"] + unseen).to_numpy(), rel=1e-6)
    assert (fetched.loc[texture, "Weight_uncoal"] <= paper.loc[texture, "Weight_uncoal"] + 1e-12).all()
    assert (fetched.loc[texture, "predicted_ns"] > 1.5 * paper.loc[texture, "predicted_ns"]).all()
    # the transposes read through global loads only: L2 reads are those loads' sectors, nothing unseen
    plain = names.str.startswith("transpose").to_numpy()
    assert plain.sum() >= 5
    assert (fetched.loc[plain, "Unseen_mem_insts"] < 0.05).all()
    assert fetched.loc[plain, "predicted_ns"].to_numpy() == pytest.approx(paper.loc[plain, "predicted_ns"].to_numpy(),
                                                                          rel=0.02)
    assert set(fetched["l2_reads"]) == {"memory-warps"} and set(paper["l2_reads"]) == {"off"}

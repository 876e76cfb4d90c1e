"""The named EXTENSIONS of the paper models (issue 15): memory traffic split by the level that
served it, the L2 hits' work in Transit's computation system, and the launch term.

Each test is a case a GPU engineer knows: a kernel that streams from L2 (a working set that
fits the 2.75 MB L2 of a GTX 1080 Ti) is not charged the DRAM round trip per transaction; the
same counts streaming from DRAM are; the published form (option / constant at its default)
gives the paper's number whatever the caches did."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.calibration import with_constants
from nvperf_bridge.gpu import resolve_profile
from nvperf_bridge.memory_levels import served_fractions
from nvperf_bridge.registry import load_registry

SECTOR = 32.0


@pytest.fixture(scope="module")
def gpu():
    return resolve_profile("gtx-1080-ti")


def streaming_kernel(served_by: str, **extra: float) -> dict:
    """A copy-like kernel: 4096 blocks of 256 threads, one coalesced 4-byte load and store per
    thread and iteration (4 sectors per request), 16 iterations, 8 instructions per memory access.
    ``served_by``: "dram" (every sector goes to DRAM), "l2" (all reach L2, none DRAM: the working
    set fits L2), "l1" (a quarter reach L2, none DRAM)."""
    warps = 4096 * 8
    requests = 2 * 16 * warps
    sectors = 4.0 * requests
    l2 = {"dram": sectors, "l2": sectors, "l1": sectors / 4}[served_by]
    dram = sectors if served_by == "dram" else 0.0
    row = {
        "kernel_name": f"stream_{served_by}", "grid_blocks": 4096.0, "block_threads": 256.0,
        "achieved_occupancy": 0.9, "inst_executed": 8.0 * requests, "inst_issued": 8.0 * requests,
        "inst_global_ld": requests / 2, "inst_global_st": requests / 2,
        "global_ld_sectors": sectors / 2, "global_st_sectors": sectors / 2,
        "inst_shared_ld": 0.0, "inst_shared_st": 0.0,
        "dram_read_bytes": dram * SECTOR / 2, "dram_write_bytes": dram * SECTOR / 2,
        "l2_read_bytes": l2 * SECTOR / 2, "l2_write_bytes": l2 * SECTOR / 2,
    }
    row.update(extra)
    return row


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def evaluate(model_id: str, kernels: pd.DataFrame, gpu, constants: dict | None = None, **options) -> pd.DataFrame:
    model = load_registry([]).get(model_id)
    if constants:
        gpu = with_constants(gpu, model_id, constants, "test", "assumed")
    result = model.evaluate(kernels, gpu, options)
    assert (result["error"] == "").all(), result["error"].tolist()
    return result


# ---- where the sectors were served (nvperf_bridge.memory_levels) ---------------------------

def test_served_fractions_of_dram_l2_and_l1_streams() -> None:
    kernels = frame(streaming_kernel("dram"), streaming_kernel("l2"), streaming_kernel("l1"))
    sectors = kernels["global_ld_sectors"] + kernels["global_st_sectors"]
    levels = served_fractions(kernels, sectors)
    assert levels["f_dram"].tolist() == [1.0, 0.0, 0.0]
    assert levels["f_l2"].tolist() == [0.0, 1.0, 0.25]
    assert levels["f_l1"].tolist() == [0.0, 0.0, 0.75]
    total = levels["f_dram"] + levels["f_l2"] + levels["f_l1"]
    assert np.allclose(total, 1.0)


def test_without_dram_counters_every_sector_is_charged_to_dram_and_said() -> None:
    row = streaming_kernel("l2")
    for name in ("dram_read_bytes", "dram_write_bytes"):
        del row[name]
    kernels = frame(row)
    levels = served_fractions(kernels, kernels["global_ld_sectors"] + kernels["global_st_sectors"])
    assert levels["f_dram"].iloc[0] == 1.0 and levels["f_l2"].iloc[0] == 0.0
    assert "not collected" in levels["levels_source"].iloc[0]


def test_dram_traffic_beyond_the_global_sectors_is_clipped_to_all_dram() -> None:
    # local-memory spills and texture reads also reach DRAM: the share never exceeds 1
    kernels = frame(streaming_kernel("dram", dram_read_bytes=1e12))
    levels = served_fractions(kernels, kernels["global_ld_sectors"] + kernels["global_st_sectors"])
    assert levels["f_dram"].iloc[0] == 1.0 and levels["f_l1"].iloc[0] == 0.0


# ---- kothapalli: global_memory=levels ------------------------------------------------------

def test_kothapalli_l2_served_stream_is_not_charged_dram_latency(gpu) -> None:
    kernels = frame(streaming_kernel("dram"), streaming_kernel("l2"))
    constants = {"global_latency": 500.0, "l2_latency": 200.0, "l1_latency": 30.0}
    levels = evaluate("kothapalli", kernels, gpu, constants)
    dram_row, l2_row = levels.iloc[0], levels.iloc[1]
    k = dram_row["k"]  # 8 threads per 32-byte sector: a coalesced warp of 4-byte words
    assert k == pytest.approx(8.0)
    assert dram_row["global_access_cycles"] == pytest.approx((500.0 + k) / k)
    assert l2_row["global_access_cycles"] == pytest.approx((200.0 + k) / k)
    assert l2_row["N_memory"] < dram_row["N_memory"]
    # the published form charges both the DRAM latency: the same prediction
    paper = evaluate("kothapalli", kernels, gpu, constants, global_memory="dram")
    assert paper["predicted_ns"].iloc[0] == pytest.approx(paper["predicted_ns"].iloc[1])
    assert paper["predicted_ns"].iloc[0] == pytest.approx(dram_row["predicted_ns"])


def test_kothapalli_stock_level_split_changes_nothing(gpu) -> None:
    # l2_latency and l1_latency default to global_latency: with stock constants the DRAM/L2/L1 split
    # gives what every access paying L gives (the paper's memory cost; thread_floor, on in both, is
    # the only extension left, and thread_floor=false is the published form)
    kernels = frame(streaming_kernel("dram"), streaming_kernel("l2"), streaming_kernel("l1"))
    stock = evaluate("kothapalli", kernels, gpu)
    paper = evaluate("kothapalli", kernels, gpu, global_memory="dram")
    assert np.allclose(stock["predicted_ns"], paper["predicted_ns"], rtol=1e-12)


# ---- hong-kim: memory_inputs=levels ----------------------------------------------------------

def test_hong_kim_memory_warp_waits_for_the_level_that_served_it(gpu) -> None:
    kernels = frame(streaming_kernel("dram"), streaming_kernel("l2"), streaming_kernel("l1"))
    constants = {"Mem_LD": 450.0, "L2_LD": 200.0, "L1_LD": 30.0}
    result = evaluate("hong-kim", kernels, gpu, constants, memory_inputs="levels")
    assert result["Mem_LD"].tolist() == pytest.approx([450.0, 200.0, 0.25 * 200.0 + 0.75 * 30.0])
    # only the DRAM share loads the DRAM bandwidth of Eq. (6)
    assert result["Load_bytes_per_warp"].iloc[1] == 0.0
    assert result["predicted_ns"].iloc[1] < result["predicted_ns"].iloc[0]
    # the paper (memory_inputs=requests) charges every memory warp Mem_LD
    paper = evaluate("hong-kim", kernels, gpu, constants)
    assert paper["Mem_LD"].tolist() == [450.0] * 3
    assert paper["predicted_ns"].iloc[0] == pytest.approx(paper["predicted_ns"].iloc[1])


# ---- luo-suda: global_memory=levels ----------------------------------------------------------

def test_luo_suda_transaction_cost_follows_the_serving_level(gpu) -> None:
    kernels = frame(streaming_kernel("dram"), streaming_kernel("l2"))
    constants = {"t_mem": 200.0, "t_l2": 100.0, "t_l1": 15.0}
    result = evaluate("luo-suda", kernels, gpu, constants)
    assert result["t_mem_served"].tolist() == pytest.approx([200.0, 100.0])
    assert result["m_i"].iloc[1] == pytest.approx(result["m_i"].iloc[0] / 2)
    assert result["predicted_ns"].iloc[1] < result["predicted_ns"].iloc[0]
    paper = evaluate("luo-suda", kernels, gpu, constants, global_memory="dram")
    assert paper["t_mem_served"].tolist() == [200.0, 200.0]
    assert paper["predicted_ns"].iloc[0] == pytest.approx(paper["predicted_ns"].iloc[1])


# ---- transit: l2_sector_cost -------------------------------------------------------------------

def test_transit_l2_resident_stream_is_limited_by_its_cache_work(gpu) -> None:
    # no DRAM traffic: the published Transit times it by its instructions alone, however many
    # sectors L2 served; with the extension each L2-hit sector costs issue slots in the CS
    kernels = frame(streaming_kernel("l2"))
    paper = evaluate("transit", kernels, gpu)
    cost = 2.0
    extended = evaluate("transit", kernels, gpu, {"l2_sector_cost": cost})
    row = kernels.iloc[0]
    hits = (row["l2_read_bytes"] + row["l2_write_bytes"]) / SECTOR
    assert extended["L2_hit_sectors"].iloc[0] == pytest.approx(hits)
    ratio = (row["inst_issued"] + cost * hits) / row["inst_issued"]
    assert extended["predicted_ns"].iloc[0] / paper["predicted_ns"].iloc[0] == pytest.approx(ratio, rel=1e-9)


def test_transit_dram_stream_has_no_l2_hit_work(gpu) -> None:
    kernels = frame(streaming_kernel("dram"))
    paper = evaluate("transit", kernels, gpu)
    extended = evaluate("transit", kernels, gpu, {"l2_sector_cost": 2.0})
    assert extended["L2_hit_sectors"].iloc[0] == 0.0
    assert extended["predicted_ns"].iloc[0] == pytest.approx(paper["predicted_ns"].iloc[0])


# ---- the launch term (nvperf_bridge.launch_cost) ------------------------------------------------

@pytest.mark.parametrize("model_id", ["hong-kim", "kothapalli", "luo-suda", "transit"])
def test_launch_term_adds_a_fixed_time_and_is_off_by_default(gpu, model_id: str) -> None:
    # a kernel of one small block: the paper's time is tens of ns, a real launch lasts about a us
    tiny = streaming_kernel("dram", grid_blocks=1.0, block_threads=32.0, achieved_occupancy=1 / 64)
    for name in ("inst_executed", "inst_issued", "inst_global_ld", "inst_global_st", "global_ld_sectors",
                 "global_st_sectors", "dram_read_bytes", "dram_write_bytes", "l2_read_bytes", "l2_write_bytes"):
        tiny[name] = tiny[name] / (4096 * 8)
    kernels = frame(tiny)
    stock = evaluate(model_id, kernels, gpu)
    assert stock["launch_ns"].iloc[0] == 0.0
    launched = evaluate(model_id, kernels, gpu, {"launch_ns": 1200.0})
    assert launched["predicted_ns"].iloc[0] == pytest.approx(stock["predicted_ns"].iloc[0] + 1200.0)
    cycles_per_ns = stock["predicted_cycles"].iloc[0] / stock["predicted_ns"].iloc[0]
    assert launched["predicted_cycles"].iloc[0] == pytest.approx(
        stock["predicted_cycles"].iloc[0] + 1200.0 * cycles_per_ns)


# ---- kothapalli: thread_floor ------------------------------------------------------------------

def test_kothapalli_a_lone_thread_takes_its_whole_cost(gpu) -> None:
    # one block of one thread (a serial kernel, e.g. thrust on a single thread): Eq. (3) divides the
    # thread's cost by N_C x D / 32 = 16 pipeline slots it cannot fill; the floor charges C(T)
    lone = streaming_kernel("dram", grid_blocks=1.0, block_threads=1.0, achieved_occupancy=1 / 64)
    for name in ("inst_executed", "inst_issued", "inst_global_ld", "inst_global_st", "global_ld_sectors",
                 "global_st_sectors", "dram_read_bytes", "dram_write_bytes", "l2_read_bytes", "l2_write_bytes"):
        lone[name] = lone[name] / (4096 * 8)
    kernels = frame(lone)
    floor = evaluate("kothapalli", kernels, gpu).iloc[0]
    paper = evaluate("kothapalli", kernels, gpu, thread_floor=False).iloc[0]
    assert floor["C_K_max"] == pytest.approx(floor["C_T_max"])
    assert paper["C_K_max"] == pytest.approx(paper["C_T_max"] * 32 / (128 * 4))
    # a full launch fills the pipelines: the floor changes nothing
    full = frame(streaming_kernel("dram"))
    assert evaluate("kothapalli", full, gpu)["predicted_ns"].iloc[0] == pytest.approx(
        evaluate("kothapalli", full, gpu, thread_floor=False)["predicted_ns"].iloc[0])


def test_time_derived_traffic_never_reaches_the_split() -> None:
    # ncu pages give DRAM bytes as throughput x duration ("dram_bytes (time)" in the derived column):
    # the split treats them as not collected, exactly as if they were absent
    derived = streaming_kernel("l2", derived="dram_read_bytes (time); dram_write_bytes (time)")
    kernels = frame(derived)
    sectors = kernels["global_ld_sectors"] + kernels["global_st_sectors"]
    levels = served_fractions(kernels, sectors)
    assert levels["f_dram"].iloc[0] == 1.0 and levels["f_l2"].iloc[0] == 0.0
    assert "not collected" in levels["levels_source"].iloc[0]
    counted = served_fractions(frame(streaming_kernel("l2")), sectors)
    assert counted["f_l2"].iloc[0] == 1.0

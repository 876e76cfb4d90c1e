"""Issue 13: nvprof event names and ncu DRAM byte spellings reach their canonical columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.importers import read_profiles

EVENTS_HEAD = ('==4242== Event result:\n'
               '"Device","Kernel","Invocations","Event Name","Min","Max","Avg"\n')


def test_kepler_and_pascal_event_names_are_mapped(tmp_path: Path) -> None:
    rows = [("gld_request", 1200), ("gst_request", 300), ("shared_load", 64), ("shared_store", 32),
            ("global_load_transaction", 4800), ("global_store_transaction", 1200), ("inst_executed", 90000)]
    text = EVENTS_HEAD + "".join(f'"Tesla K40m (0)","stencil(float*, int)",3,"{n}",{v},{v},{v}\n' for n, v in rows)
    path = tmp_path / "events.csv"
    path.write_text(text)
    k = read_profiles([path]).kernels.iloc[0]
    assert (k["inst_global_ld"], k["inst_global_st"]) == (1200.0, 300.0)
    assert (k["inst_shared_ld"], k["inst_shared_st"]) == (64.0, 32.0)
    assert (k["global_ld_sectors"], k["global_st_sectors"]) == (4800.0, 1200.0)
    assert k["inst_executed"] == 90000.0


def test_maxwell_global_load_store_events(tmp_path: Path) -> None:
    rows = [("global_load", 500), ("global_store", 250)]
    path = tmp_path / "events.csv"
    path.write_text(EVENTS_HEAD + "".join(f'"GeForce GTX 980 (0)","k(int*)",1,"{n}",{v},{v},{v}\n' for n, v in rows))
    k = read_profiles([path]).kernels.iloc[0]
    assert (k["inst_global_ld"], k["inst_global_st"]) == (500.0, 250.0)


def test_ncu_dram_bytes_op_spellings(tmp_path: Path) -> None:
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
            '"Section Name","Metric Name","Metric Unit","Metric Value"\n')
    ident = '"0","7","app","host","k(float*)","2024-Jan-01 10:00:00","1","7","Command line profiler metrics"'
    path = tmp_path / "details.csv"
    path.write_text(head + f'{ident},"dram__bytes_op_read.sum","Mbyte","2.5"\n'
                    + f'{ident},"dram__bytes_op_write.sum","Kbyte","4"\n')
    k = read_profiles([path]).kernels.iloc[0]
    assert k["dram_read_bytes"] == 2.5e6 and k["dram_write_bytes"] == 4000.0
    assert k["dram_bytes"] == 2.5e6 + 4000.0


# ---- the nvprof event table (data/nvprof_events.csv) ------------------------------------------------------

def _events_file(tmp_path: Path, rows: list[tuple[str, object]], device: str = "Tesla K40m (0)",
                 kernel: str = "stencil(float*, int)", name: str = "events.csv") -> Path:
    path = tmp_path / name
    path.write_text(EVENTS_HEAD + "".join(f'"{device}","{kernel}",3,"{n}",{v},{v},{v}\n' for n, v in rows))
    return path


def test_kepler_subpartition_events_are_summed_into_bytes(tmp_path: Path) -> None:
    # Kepler GK110: two frame-buffer subpartitions, four L2 slices; nvprof prints one event per unit
    rows = [("fb_subp0_read_sectors", 1000), ("fb_subp1_read_sectors", 1100),
            ("fb_subp0_write_sectors", 10), ("fb_subp1_write_sectors", 30),
            *[(f"l2_subp{i}_total_read_sector_queries", 500 + i) for i in range(4)],
            *[(f"l2_subp{i}_total_write_sector_queries", 7) for i in range(4)],
            ("tex0_cache_sector_queries", 99), ("prof_trigger_00", 0)]
    result = read_profiles([_events_file(tmp_path, rows)])
    k = result.kernels.iloc[0]
    assert k["dram_read_bytes"] == (1000 + 1100) * 32 and k["dram_write_bytes"] == 40 * 32
    assert k["dram_bytes"] == (2100 + 40) * 32
    assert k["l2_read_bytes"] == (500 + 501 + 502 + 503) * 32 and k["l2_write_bytes"] == 28 * 32
    info = result.inputs[0]
    assert info.mapped["fb_subp1_read_sectors"] == "dram_read_bytes"
    assert info.mapped["l2_subp3_total_write_sector_queries"] == "l2_write_bytes"
    assert info.unmapped == ["tex0_cache_sector_queries", "prof_trigger_00"]
    assert "tex0_cache_sector_queries" in result.kernels.columns  # unmapped is kept, by name


def test_sm_activity_and_issue_events(tmp_path: Path) -> None:
    rows = [("active_warps", 5_000_000), ("active_cycles", 100_000), ("elapsed_cycles_sm", 130_000),
            ("warps_launched", 4096), ("sm_cta_launched", 512), ("inst_issued1", 60_000), ("inst_issued2", 5_000),
            ("thread_inst_executed", 2_000_000), ("local_load", 12), ("local_store", 6)]
    k = read_profiles([_events_file(tmp_path, rows)]).kernels.iloc[0]
    assert (k["warps_active_sum"], k["sm_active_cycles_sum"], k["sm_cycles_sum"]) == (5e6, 1e5, 1.3e5)
    assert (k["warps_launched"], k["blocks_launched"], k["thread_inst_executed"]) == (4096, 512, 2e6)
    assert k["inst_issued"] == 60_000 + 2 * 5_000  # single-issue cycles + two per dual-issue cycle
    assert (k["inst_local_ld"], k["inst_local_st"]) == (12, 6)
    assert "inst_issued" in k["derived"] and "(time)" not in k["derived"]


def test_a_single_subpartition_sums_what_is_there_and_the_metric_wins(tmp_path: Path) -> None:
    # the metric dram_read_transactions (same quantity) is preferred to the summed events
    rows = [("fb_subp0_read_sectors", 100), ("fb_subp1_read_sectors", 100), ("dram_read_transactions", 250)]
    k = read_profiles([_events_file(tmp_path, rows)]).kernels.iloc[0]
    assert k["dram_read_bytes"] == 250 * 32


# ---- derivations and their record ------------------------------------------------------------------------

METRICS_HEAD = ('==1== Metric result:\n"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n')
TRACE_HEAD = ('==2== Profiling result:\n"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z",'
              '"Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","Device","Context","Stream","Name"\n'
              'ms,us,,,,,,,,KB,B,KB,MB/s,,,,\n')


def _pair(tmp_path: Path, metrics: list[tuple[str, str]]) -> list[Path]:
    dev, kern = "GeForce GTX 1080 Ti (0)", "axpy(float*, float*, int)"
    m = tmp_path / "metrics.csv"
    m.write_text(METRICS_HEAD + "".join(f'"{dev}","{kern}",1,"{n}","{n}",{v},{v},{v}\n' for n, v in metrics))
    t = tmp_path / "trace.csv"
    t.write_text(TRACE_HEAD + f'100.0,250.000000,64,2,1,100,1,1,16,0,0,,,"{dev}",1,7,"{kern} [12]"\n')
    return [m, t]


def test_dram_bytes_from_throughput_and_duration_are_marked_time_derived(tmp_path: Path) -> None:
    from nvperf_bridge.importers.derivations import time_derived, without_time_derived

    result = read_profiles(_pair(tmp_path, [("dram_read_throughput", "4.000000GB/s"),
                                            ("dram_write_throughput", "2.000000GB/s"), ("inst_executed", "1000")]))
    k = result.kernels
    assert k.loc[0, "duration_ns"] == 250_000
    assert k.loc[0, "dram_read_bytes"] == 4e9 * 250e-6 and k.loc[0, "dram_write_bytes"] == 2e9 * 250e-6
    assert k.loc[0, "dram_bytes"] == 6e9 * 250e-6
    record = result.derived_from
    assert record["dram_read_bytes"]["time_derived"] and record["dram_bytes"]["time_derived"]
    assert "dram_read_throughput" in " ".join(record["dram_read_bytes"]["inputs"])
    # the sum of two time-derived values carries the time too
    assert bool(time_derived(k, "dram_bytes").iloc[0])
    blank = without_time_derived(k)
    assert blank[["dram_read_bytes", "dram_write_bytes", "dram_bytes"]].isna().all().all()
    assert blank.loc[0, "inst_executed"] == 1000 and k.loc[0, "dram_bytes"] > 0  # the caller's frame is untouched


def test_counted_dram_transactions_win_over_throughput(tmp_path: Path) -> None:
    result = read_profiles(_pair(tmp_path, [("dram_read_throughput", "4.0GB/s"), ("dram_read_transactions", "10"),
                                            ("dram_write_transactions", "5")]))
    k = result.kernels.iloc[0]
    assert (k["dram_read_bytes"], k["dram_write_bytes"]) == (320, 160)
    assert not result.derived_from["dram_bytes"]["time_derived"]
    assert "dram_read_bytes" not in result.derived_from


def test_inst_executed_from_inst_per_warp_and_the_trace_launch_shape(tmp_path: Path) -> None:
    result = read_profiles(_pair(tmp_path, [("inst_per_warp", "52.000000")]))
    k = result.kernels.iloc[0]
    # 64 x 2 blocks of 100 threads = 4 warps per block (the last one partial)
    assert k["inst_executed"] == 52 * 128 * 4
    record = result.derived_from["inst_executed"]
    assert not record["time_derived"] and record["formulas"] == [
        "inst_executed = inst_per_warp x grid_blocks x ceil(block_threads / 32)"]


def test_inst_executed_from_ipc_and_active_cycles_is_time_derived(tmp_path: Path) -> None:
    rows = [("ipc", 1.5), ("active_cycles", 2000)]
    result = read_profiles([_events_file(tmp_path, rows)])
    assert result.kernels.loc[0, "inst_executed"] == 3000
    assert result.derived_from["inst_executed"]["time_derived"]
    assert result.kernels.loc[0, "derived"] == "inst_executed (time)"


# ---- utilisation levels ------------------------------------------------------------------------------------

def test_utilization_levels_are_tenths_of_peak_printed_either_way(tmp_path: Path) -> None:
    files = _pair(tmp_path, [("dram_utilization", '"High (7)"'), ("l2_utilization", "3"),
                             ("tex_utilization", '"Idle (0)"'), ("shared_utilization", '"Mid (5)"'),
                             ("ldst_fu_utilization", '"Max (10)"')])
    result = read_profiles(files)  # metrics + trace: canonicalized twice, converted once
    k = result.kernels.iloc[0]
    assert (k["sol_dram_fraction"], k["sol_l2_fraction"], k["sol_l1tex_fraction"]) == pytest.approx((0.7, 0.3, 0.0))
    assert (k["shared_utilization"], k["ldst_fu_utilization"]) == pytest.approx((0.5, 1.0))
    assert not result.warnings

"""nvprof --print-gpu-trace with --metrics/--events: one row per launch, a column per counter (metric columns
headed by the metric's description, event columns by the event name), joined launch by launch to the trace
of a timed run.

The fixtures copy the shape of public per-launch files (marcosamaris/gpuperfpredict, GTX 980 and Tesla K40c:
"Device","Context","Stream","Kernel" then the counters; percentages as percent numbers, throughputs in GB/s,
utilisation levels as "Low (2)"); the values are made up for these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.importers import read_profiles, sniff

FIX = Path(__file__).parent / "fixtures" / "import"


def test_per_launch_metric_file_is_recognised_and_read_by_metric_name() -> None:
    assert sniff(FIX / "nvprof_launch_metrics.csv") == "nvprof-launch-counters"
    result = read_profiles([FIX / "nvprof_launch_metrics.csv"])
    k = result.kernels
    assert list(k["kernel"]) == ["dotProd", "dotProd", "reduceSum", "dotProd"]  # one row per launch
    assert list(k["invocations"]) == [1, 1, 1, 1]
    assert k["achieved_occupancy"].iloc[0] == pytest.approx(0.8401)  # "Achieved Occupancy" -> achieved_occupancy
    assert k["inst_executed"].iloc[1] == 987136
    assert k["sm_activity"].iloc[0] == pytest.approx(0.7725)  # "Multiprocessor Activity" 77.25 (percent)
    assert k["gld_requested_throughput"].iloc[0] == pytest.approx(73.8e9)  # GB/s per launch
    # "Low (2)": level 2 on nvprof's 0-10 scale (impa's vocabulary turns it into a fraction)
    assert list(k["sol_dram_fraction"]) == pytest.approx([0.2, 0.2, 0.0, 0.3])
    notes = result.inputs[0].notes
    assert any("headed by nvprof's description" in n for n in notes)
    assert any("no units row" in n and "GB/s" in n for n in notes)


def test_per_launch_counters_join_the_trace_launch_by_launch() -> None:
    result = read_profiles([FIX / "nvprof_launch_metrics.csv", FIX / "nvprof_launch_trace.csv"])
    k = result.kernels
    assert len(k) == 4  # memcpy left out, each launch once
    dot = k[k["kernel"] == "dotProd"]
    # the n-th dotProd of the counters is the n-th dotProd of the trace: sizes grow together
    assert list(dot["grid_blocks"]) == [2048, 4096, 8192]
    assert list(dot["inst_executed"]) == [493568, 987136, 1974272]
    assert list(dot["duration_ns"]) == pytest.approx([14240.0, 25919.0, 50622.0])
    reduce_ = k[k["kernel"] == "reduceSum"].iloc[0]
    assert reduce_["achieved_occupancy"] == pytest.approx(0.12) and reduce_["duration_ns"] == pytest.approx(3100.0)
    assert any("launch by launch: 4 of 4" in n for n in result.inputs[0].notes)
    assert not result.warnings


def test_per_launch_events_keep_their_names_and_join() -> None:
    result = read_profiles([FIX / "nvprof_launch_events.csv", FIX / "nvprof_launch_trace.csv"])
    dot = result.kernels[result.kernels["kernel"] == "dotProd"]
    assert list(dot["inst_global_ld"]) == [8192, 16384, 32768]  # event global_load
    assert list(dot["sm_cycles_sum"]) == [276460, 472172, 886504]  # event elapsed_cycles_sm
    # reduceSum has no counters here: kept with its time, the counters file has no row for it
    assert result.kernels.loc[result.kernels["kernel"] == "reduceSum", "duration_ns"].iloc[0] == pytest.approx(3100.0)


def test_other_launch_counts_fall_back_to_per_kernel_averages_with_a_warning(tmp_path: Path) -> None:
    text = (FIX / "nvprof_launch_metrics.csv").read_text().splitlines()
    path = tmp_path / "three_launches.csv"
    path.write_text("\n".join(text[:-1]) + "\n")  # the last dotProd launch was not replayed
    result = read_profiles([path, FIX / "nvprof_launch_trace.csv"])
    dot = result.kernels[result.kernels["kernel"] == "dotProd"]
    assert len(dot) == 3
    assert list(dot["inst_executed"]) == pytest.approx([(493568 + 987136) / 2] * 3)
    assert any("another launch count" in w and "averaged" in w for w in result.warnings)


def test_a_bad_value_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text((FIX / "nvprof_launch_metrics.csv").read_text().replace("493568", "49x3568"))
    result = read_profiles([path])
    assert any("Instructions Executed (first at line 6: '49x3568')" in n for n in result.inputs[0].notes)

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


@pytest.mark.parametrize(("rows", "what"), [
    # public per-size files (gpuperfpredict Data/Tesla-K40/*-events.csv, *-kernel-traces.csv) hold nvprof rows
    # grep'ed out of the output, without the header: named by what they are, not "no CSV table found"
    (['"Tesla K40c (0)","1","7","VecAdd(float const *, float const *, float*, int)",0,0,10032,10059,4100',
      '"Tesla K40c (0)","1","7","VecAdd(float const *, float const *, float*, int)",0,0,38652,37835,8210'],
     "per-launch counter rows"),
    (['2.031179,1.020800e-05,512,1,1,256,1,1,11,0,0,,,"Tesla K40c (0)","1","7","VecAdd(float*, int) [100]"',
      '2.001990,2.080000e-05,1024,1,1,256,1,1,11,0,0,,,"Tesla K40c (0)","1","7","VecAdd(float*, int) [100]"'],
     "GPU-trace rows"),
])
def test_nvprof_rows_without_their_header_are_named(tmp_path: Path, rows: list[str], what: str) -> None:
    from nvperf_bridge.errors import InputError

    path = tmp_path / "rows.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError) as caught:
        read_profiles([path])
    message = str(caught.value)
    assert f"this is nvprof {what}" in message and "without their header" in message
    assert "rows.csv:1" in message and "--print-gpu-trace" in message and "\n" not in message


def test_visual_profiler_gpu_details_export_is_read_as_a_trace() -> None:
    """nvvp's "export details in CSV format" (GPU details, one row per activity). Only the columns a public
    parser of these exports reads are known (microsoft/onnxruntime PR 9127: "Name", "Start Time(ns)",
    "Duration(ns)"); the fixture holds those, with the units in the column names."""
    assert sniff(FIX / "nvvp_gpu_details.csv") == "nvvp-trace"
    result = read_profiles([FIX / "nvvp_gpu_details.csv"])
    k = result.kernels
    assert [name.split("<")[0].split("::")[-1] for name in k["kernel"]] == [
        "_BinaryElementWise", "volta_sgemm_128x64_nn", "_BinaryElementWise"]
    assert list(k["duration_ns"]) == [4128.0, 96352.0, 4096.0]  # ns from the column name, not a units row
    info = result.inputs[0]
    assert info.format == "nvvp-trace" and any("Visual Profiler" in n for n in info.notes)
    assert any("2 rows: memcpy" in s for s in info.skipped)


def test_nvprof_metrics_take_their_time_from_an_nvvp_export(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.csv"
    metrics.write_text('==1== Metric result:\n"Device","Kernel","Invocations","Metric Name","Metric Description",'
                       '"Min","Max","Avg"\n"Tesla V100-SXM2-16GB (0)","volta_sgemm_128x64_nn",1,"inst_executed",'
                       '"Instructions Executed",1000,1000,1000\n')
    result = read_profiles([metrics, FIX / "nvvp_gpu_details.csv"])
    row = result.kernels.set_index("kernel").loc["volta_sgemm_128x64_nn"]
    assert row["duration_ns"] == 96352.0 and row["inst_executed"] == 1000

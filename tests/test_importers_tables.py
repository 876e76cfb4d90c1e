"""Files that hold more than one table: every table read, each where it belongs, nothing dropped in silence.

Fixtures copy the shapes nvprof prints (banner lines ``==PID== Event result:`` /
``Metric result:`` / ``API calls:`` between tables, a Unified Memory table after a
GPU summary, two runs appended to one log); no bytes of real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import read_parts, read_profiles
from nvperf_bridge.importers.sniff import sniff_tables
from nvperf_bridge.importers.text import read_text

FIX = Path(__file__).parent / "fixtures" / "import"


def test_event_table_then_metric_table_give_one_row_per_kernel_with_both() -> None:
    result = read_profiles([FIX / "nvprof_events_then_metrics.csv"])
    k = result.kernels.set_index("kernel")
    assert list(k.index) == ["matMul", "vecScale"]
    # from the Event table (the first): Kepler request events
    assert k.loc["matMul", "inst_global_ld"] == 262144
    assert k.loc["matMul", "sm_cycles_sum"] == 1502514  # event elapsed_cycles_sm (data/nvprof_events.csv)
    # from the Metric table after the blank line and the banner: not lost
    assert k.loc["matMul", "inst_executed"] == 9437184
    assert k.loc["vecScale", "achieved_occupancy"] == pytest.approx(0.801)
    assert k.loc["matMul", "invocations"] == 2
    (info,) = result.inputs
    assert info.format == "nvprof-metrics" and info.kernels == 2
    assert any("Event table at line 6" in n and "Metric table at line 14" in n for n in info.notes)


def test_api_call_table_after_the_gpu_summary_is_named_not_read_as_kernels() -> None:
    result = read_profiles([FIX / "nvprof_summary_api_table.csv"])
    names = set(result.kernels["kernel"])
    assert names == {"update_agents<bool=1>", "reduce_state"}  # cudaLaunch / cudaFree are not kernels
    k = result.kernels.set_index("kernel")
    assert k.loc["update_agents<bool=1>", "duration_ns"] == pytest.approx(843532.0)  # Avg in us
    assert k.loc["update_agents<bool=1>", "max_duration_ns"] == pytest.approx(1249600.0)  # Max in ms
    notes = result.inputs[0].notes
    assert any("API-call table at line 10" in n and "not GPU kernels" in n for n in notes)


def test_api_rows_in_a_typed_summary_are_skipped_and_counted() -> None:
    result = read_profiles([FIX / "nvprof_summary.csv"])
    info = result.inputs[0]
    assert "cudaMalloc" not in set(result.kernels["kernel_name"])
    assert any("API call" in s for s in info.skipped)
    # the Unified Memory table that follows is named with its line, not dropped without a word
    assert any("line 13" in n and "Unified Memory profiling result" in n for n in info.notes)


def test_a_file_with_only_api_calls_is_a_one_line_error_naming_the_line() -> None:
    with pytest.raises(InputError) as caught:
        read_profiles([FIX / "nvprof_api_only.csv"])
    message = str(caught.value)
    assert "nvprof_api_only.csv" in message and ":4" in message
    assert "API-call" in message and "--print-gpu-trace" in message
    assert "\n" not in message


def test_a_trace_and_a_metric_run_appended_to_one_log_are_both_read_and_joined() -> None:
    parts = read_parts(FIX / "nvprof_trace_then_metrics.log")
    assert [p.info.format for p in parts] == ["nvprof-trace", "nvprof-metrics"]
    result = read_profiles([FIX / "nvprof_trace_then_metrics.log"])
    (row,) = result.kernels.to_dict("records")
    assert row["kernel"] == "mysgemmNT"
    assert row["duration_ns"] == pytest.approx(14000.0)  # mean of the trace's 13 and 15 us
    assert row["inst_executed"] == 130000
    assert row["invocations"] == 2


def test_sniff_tables_finds_every_table_in_order() -> None:
    found = sniff_tables(read_text(FIX / "nvprof_events_then_metrics.csv"))
    assert [f.format for f in found] == ["nvprof-metrics", "nvprof-metrics"]
    text = read_text(FIX / "nvprof_trace_then_metrics.log")
    found = sniff_tables(text)
    assert [f.format for f in found] == ["nvprof-trace", "nvprof-metrics"]
    assert text[found[1].start:].startswith('"Device","Kernel"')


def test_realdata_gpu_summary_notes_its_unified_memory_table(realdata_dir: Path) -> None:
    path = realdata_dir / "nvprof-result" / "nvprof-result__cfd-setpreferredlocation__print-gpu-summary.csv"
    result = read_profiles([path])
    assert len(result.kernels) == 4
    notes = result.inputs[0].notes
    assert any("Unified Memory profiling result" in n and "line 15" in n for n in notes)


def test_a_folder_with_a_multi_table_log_reads_every_table(tmp_path: Path) -> None:
    """The folder path (discovery, parallel or not) reads every table of a file, as read_profiles does."""
    from nvperf_bridge.discovery import read_inputs

    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "both.log").write_text((FIX / "nvprof_trace_then_metrics.log").read_text())
    for jobs in (1, 2):
        result = read_inputs([folder], jobs=jobs)
        (row,) = result.kernels.to_dict("records")
        assert row["inst_executed"] == 130000 and row["duration_ns"] == pytest.approx(14000.0)


def test_runs_appended_without_banners_split_at_the_repeated_header() -> None:
    """Public per-size trace files (gpuperfpredict) repeat the header and units row under the last row of the
    previous run, with no blank line; each run's units row is its own (Size in KB, then MB)."""
    (part,) = read_parts(FIX / "nvprof_trace_runs_appended.csv")
    k = part.frame
    assert list(k["grid_blocks"]) == [512, 1024, 2048]  # the header lines are not read as rows
    assert list(k["duration_ns"]) == pytest.approx([3520.0, 5569.0, 9696.0])
    assert part.info.kernels == 3
    assert any("3 nvprof-trace tables" in n and "lines 1, 6, 11" in n for n in part.info.notes)

"""Overlapping inputs of one run: counted once, with a note on the file left out; a GPU summary gives nvprof
metrics their measured time when no trace is given.

The summary fixture is the run the trace fixture shows (mysgemmNT: 3 launches of 13, 14 and 15 us), in the
shape ``nvprof --csv`` prints: a units row, GPU activities then API calls."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nvperf_bridge.importers import read_profiles

FIX = Path(__file__).parent / "fixtures" / "import"


def test_trace_and_summary_of_one_run_count_each_launch_once() -> None:
    result = read_profiles([FIX / "nvprof_trace.csv", FIX / "nvprof_summary_sgemm.csv"])
    counts = result.kernels.groupby("kernel")["invocations"].sum().to_dict()
    assert counts == {"mysgemmNT": 3, "trace_only_kernel": 1}  # not 6 and 2
    summary = result.inputs[1]
    assert summary.kernels == 0
    assert any("not counted: the same run as the trace" in n and "4 launches" in n for n in summary.notes)
    assert any("not counted again" in n for n in result.inputs[0].notes)


def test_the_order_of_the_files_does_not_matter() -> None:
    a = read_profiles([FIX / "nvprof_summary_sgemm.csv", FIX / "nvprof_trace.csv"])
    assert len(a.kernels) == 4 and set(a.kernels["source"].map(lambda s: Path(s).name)) == {"nvprof_trace.csv"}


def test_a_summary_of_another_run_is_kept_with_a_warning(tmp_path: Path) -> None:
    other = tmp_path / "summary_other_run.csv"
    other.write_text((FIX / "nvprof_summary_sgemm.csv").read_text().replace(",3,14.000000,", ",5,14.000000,"))
    result = read_profiles([FIX / "nvprof_trace.csv", other])
    assert result.inputs[1].kernels == 2
    assert any("also in the trace" in w and "counted in both" in w for w in result.warnings)


def test_the_same_file_given_twice_is_counted_once(tmp_path: Path) -> None:
    copy = tmp_path / "copy_of_trace.csv"
    shutil.copy(FIX / "nvprof_trace.csv", copy)
    result = read_profiles([FIX / "nvprof_trace.csv", copy])
    assert len(result.kernels) == 4
    assert any("the same 4 kernel rows as" in n for n in result.inputs[1].notes)


def test_metrics_with_a_gpu_summary_get_the_summary_duration() -> None:
    result = read_profiles([FIX / "nvprof_metrics.csv", FIX / "nvprof_summary_sgemm.csv"])
    k = result.kernels.set_index("kernel")
    assert k.loc["mysgemmNT", "duration_ns"] == pytest.approx(14000.0)  # the summary's Avg
    assert k.loc["mysgemmNT", "inst_executed"] == 130000  # the metrics' counter on the same row
    assert k.loc["mysgemmNT", "invocations"] == 3
    assert "cudaMalloc" not in set(k.index)
    assert k.index.value_counts().max() == 1  # each kernel once
    assert any("joined with the GPU summary" in n for n in result.inputs[0].notes)


def test_metrics_trace_and_summary_of_one_run(tmp_path: Path) -> None:
    result = read_profiles([FIX / "nvprof_metrics.csv", FIX / "nvprof_trace.csv", FIX / "nvprof_summary_sgemm.csv"])
    k = result.kernels.set_index("kernel")
    assert k.loc["mysgemmNT", "invocations"] == 3 and k.index.value_counts().max() == 1


def test_realdata_summary_and_trace_of_one_run(realdata_dir: Path) -> None:
    folder = realdata_dir / "nvprof-result"
    result = read_profiles([folder / "nvprof-result__cfd-setpreferredlocation__print-gpu-summary.csv",
                            folder / "nvprof-result__cfd-setpreferredlocation__print-gpu-trace.csv"])
    assert len(result.kernels) == 14_003  # the trace's launches, not 14,003 + 4 summary rows
    assert result.inputs[0].kernels == 0

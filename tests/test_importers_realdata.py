"""Conformance over ../shared/realdata: every kernel table imports with the README's kernel count."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REALDATA, realdata_files
from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import read_profiles

# file name -> (format, kernel rows) from the realdata README table
EXPECTED: dict[str, tuple[str, int]] = {
    "magus__metrics_parboil_sgemm.csv": ("nvprof-metrics", 1),
    "magus__traces_parboil_sgemm.csv": ("nvprof-trace", 1),
    "magus__metrics_rodinia_hotspot.csv": ("nvprof-metrics", 1),
    "magus__traces_rodinia_hotspot.csv": ("nvprof-trace", 1),
    "magus__metrics_rodinia_lud.csv": ("nvprof-metrics", 3),
    "magus__traces_rodinia_lud.csv": ("nvprof-trace", 46),
    "magus__metrics_poly_gemm.csv": ("nvprof-metrics", 1),
    "magus__traces_poly_gemm.csv": ("nvprof-trace", 1),
    "magus__matrixMul_metrics.csv": ("nvprof-metrics", 1),
    "magus__matrixMul_trace.csv": ("nvprof-trace", 301),
    "nvprof-result__cfd-setpreferredlocation__print-gpu-summary.csv": ("nvprof-summary", 4),
    "nvprof-result__cfd-setpreferredlocation__print-gpu-trace.csv": ("nvprof-trace", 14003),
    "optimal_unified_memory__cfd__nsight_cfd_097K.log": ("ncu-details", 100),
    "optimal_unified_memory__cfd-ip-128-115-246-7__nsight_cfd_097K.log": ("ncu-details", 100),
    "optimal_unified_memory__hotspot__nsight_hotspot_1024": ("ncu-details", 1),
    "deeplearningprofiling__TF-fp16-batch2-fw-amp__out.fp16.lag1.train.dram__bytes.sum": ("ncu-details", 559),
    "deeplearningprofiling__TF-fp16-batch2-fw-amp__out.fp16.lag1.train.sm__cycles_elapsed.avg": ("ncu-details", 559),
    "deeplearningprofiling__TF-fp16-batch2-fw-amp__out.fp16.lag1.train.sm__cycles_elapsed.avg.per_second": ("ncu-details", 559),
    "deeplearningprofiling__PT-fp32-O1-Adam-fw__out.sm__inst_executed_pipe_tensor.sum": ("ncu-details", 797),
    "llm-perf-opt__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu.details.csv": ("ncu-details", 1),
    "llm-perf-opt__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu.metrics.csv": ("ncu-details", 1),
    "llm-perf-opt__ncu-v2__kernel_0009_60b6526c428eef70c521b6a4c8ca71db__ncu.details.csv": ("ncu-details", 1),
    "llm-perf-opt__ncu-v2__kernel_0009_60b6526c428eef70c521b6a4c8ca71db__ncu.metrics.csv": ("ncu-details", 1),
    "roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv": ("ncu-raw", 64),
    "roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv": ("ncu-raw", 16),
    "actual-param__attention_5-9__bert_flashattn_nsight.csv": ("ncu-details", 10),
    "actual-param__dropout__nsight162.csv": ("ncu-details", 162),
}
ERROR_ONLY = "roofline-analysis__flashinfer_paged_decode__gqa_fp16_b64_ctx4k_p64.ncu.csv"


@pytest.mark.parametrize("path", realdata_files(), ids=lambda p: p.name[:60])
def test_every_realdata_file(path: Path) -> None:
    if path.name == ERROR_ONLY:
        with pytest.raises(InputError) as info:
            read_profiles([path])
        assert info.value.path == str(path) and "==ERROR==" in str(info.value)
        return
    assert path.name in EXPECTED, f"new realdata file {path.name}: add its expected count"
    fmt, count = EXPECTED[path.name]
    result = read_profiles([path])
    assert result.inputs[0].format == fmt
    assert len(result.kernels) == count
    assert result.kernels["kernel_id"].is_unique
    assert result.kernels["kernel"].notna().all()


def _file(realdata_dir: Path, name: str) -> Path:
    return next(realdata_dir.rglob(name))


def test_magus_sgemm_metrics_and_trace_fill_the_model_inputs(realdata_dir: Path) -> None:
    result = read_profiles([_file(realdata_dir, "magus__metrics_parboil_sgemm.csv"),
                            _file(realdata_dir, "magus__traces_parboil_sgemm.csv")])
    assert not result.warnings
    row = result.kernels.iloc[0]
    for column in ("duration_ns", "achieved_occupancy", "inst_executed", "inst_issued", "dram_read_bytes",
                   "dram_write_bytes", "global_ld_sectors", "inst_global_ld", "grid_blocks", "block_threads",
                   "registers_per_thread"):
        assert row[column] == row[column], f"{column} is missing"
    assert row["duration_ns"] == pytest.approx(13473.0)  # 13.473 us in the trace
    assert row["grid_blocks"] == 10 and row["block_threads"] == 128
    assert row["dram_write_bytes"] == 13 * 32
    assert row["device"] == "GeForce GTX 1080 Ti"


def test_print_gpu_trace_counts_non_kernel_rows(realdata_dir: Path) -> None:
    result = read_profiles([_file(realdata_dir, "nvprof-result__cfd-setpreferredlocation__print-gpu-trace.csv")])
    assert len(result.kernels) == 14003
    skipped = sum(int(s.split(" ", 1)[0]) for s in result.inputs[0].skipped)
    assert len(result.kernels) + skipped == 16238


def test_ncu_raw_b200_device(realdata_dir: Path) -> None:
    result = read_profiles([_file(realdata_dir, "roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv")])
    assert set(result.kernels["device"]) == {"NVIDIA B200"}
    assert result.kernels["duration_ns"].notna().all()


def test_units_per_value_in_ncu_2025(realdata_dir: Path) -> None:
    # kernel 0005: dram__bytes_read.sum "17.50" Mbyte, dram__bytes_write.sum "0" byte
    k = read_profiles([_file(realdata_dir, "llm-perf-opt__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu.metrics.csv")]).kernels
    assert k.loc[0, "dram_read_bytes"] == pytest.approx(17.5e6)
    assert k.loc[0, "dram_write_bytes"] == 0.0
    assert k.loc[0, "duration_ns"] == pytest.approx(111810.0)


def test_thousands_separators(realdata_dir: Path) -> None:
    k = read_profiles([_file(realdata_dir, "optimal_unified_memory__cfd-ip-128-115-246-7__nsight_cfd_097K.log")]).kernels
    assert k.loc[0, "sm_clock_hz"] == pytest.approx(1177954478.05)  # "1,177,954,478.05"
    assert k.loc[0, "duration_ns"] == 8992.0  # "8,992"


def test_one_metric_files_give_duration(realdata_dir: Path) -> None:
    files = sorted(realdata_dir.rglob("deeplearningprofiling__TF-fp16*"))
    result = read_profiles(files)
    k = result.kernels
    assert k["duration_ns"].notna().sum() > 500 and k["dram_bytes"].notna().sum() > 500
    assert result.warnings  # the three runs' launch lists differ a little: said, not hidden

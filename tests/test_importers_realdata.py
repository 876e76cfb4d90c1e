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
# magus-corpus (the GTX 1080 Ti accuracy set): application -> (kernels in metrics_<app>.csv,
# kernel launches in traces_<app>.csv). Counted once by hand-checked import; the folder README
# says 43 applications, about 122 timed kernels.
MAGUS_CORPUS: dict[str, tuple[int, int]] = {
    "cudasdk_FDTD3d": (1, 5),
    "cudasdk_MCEstimatePiInlineP": (2, 2),
    "cudasdk_MCEstimatePiInlineQ": (2, 2),
    "cudasdk_MCEstimatePiP": (3, 3),
    "cudasdk_SobolQRNG": (1, 1),
    "cudasdk_batchCUBLAS": (4, 44),
    "cudasdk_binomialOptions": (1, 1),
    "cudasdk_c++11Cuda": (2, 2),
    "cudasdk_concurrentKernels": (2, 9),
    "cudasdk_convolutionFFT2D": (14, 42),
    "cudasdk_convolutionSeparable": (2, 34),
    "cudasdk_dct8x8": (8, 118),
    "cudasdk_dxtc": (1, 2),
    "cudasdk_eigenvalues": (3, 300),
    "cudasdk_matrixMul": (1, 301),
    "cudasdk_mergeSort": (4, 49),
    "cudasdk_quasirandomGenerator": (2, 42),
    "cudasdk_radixSortThrust": (5, 2100),
    "cudasdk_reduction": (2, 201),
    "cudasdk_scalarProd": (1, 1),
    "cudasdk_scan": (3, 3300),
    "cudasdk_shflscan": (4, 5),
    "cudasdk_simpleCUFFTcallback": (3, 4),
    "cudasdk_sortingNetworks": (4, 290),
    "cudasdk_stereoDisparity": (1, 2),
    "cudasdk_transpose": (8, 808),
    "cudasdk_vectorAdd": (1, 1),
    "lonestar_dmr": (2, 258),
    "lonestar_mst": (6, 36),
    "parboil_bfs": (2, 11),
    "parboil_mriq": (2, 4),
    "parboil_stencil": (1, 100),
    "poly_3mm": (3, 3),
    "poly_correlation": (4, 4),
    "poly_fdtd2d": (3, 1500),
    "poly_syrk": (1, 1),
    "rodinia_b+tree": (2, 2),
    "rodinia_backprop": (2, 2),
    "rodinia_dwt2d": (3, 13),
    "rodinia_gaussian": (2, 30),
    "rodinia_needle": (2, 382),
    "rodinia_pathfinder": (1, 10),
    "shoc_lev1BFS": (1, 100),

}
for _app, (_metric_rows, _trace_rows) in MAGUS_CORPUS.items():
    EXPECTED[f"metrics_{_app}.csv"] = ("nvprof-metrics", _metric_rows)
    EXPECTED[f"traces_{_app}.csv"] = ("nvprof-trace", _trace_rows)

# amaris-kepler-maxwell: kernel-yaml records per GPU (the folder README's table).
AMARIS = {"gtx-680.yaml": 295, "gtx-970.yaml": 297, "gtx-titan.yaml": 297, "gtx-titan-black.yaml": 297,
          "quadro-k5200.yaml": 273}
EXPECTED.update({name: ("kernel-yaml", records) for name, records in AMARIS.items()})
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


def test_magus_corpus_pairs_time_every_kernel(realdata_dir: Path) -> None:
    """Each application's metrics + trace pair joins: every kernel with counters gets its measured time."""
    corpus = realdata_dir / "magus-corpus"
    if not corpus.is_dir():
        pytest.skip("magus-corpus is not present")
    assert len(list(corpus.glob("metrics_*.csv"))) == len(MAGUS_CORPUS) == 43
    timed = 0
    for app, (metric_rows, _trace_rows) in MAGUS_CORPUS.items():
        k = read_profiles([corpus / f"metrics_{app}.csv", corpus / f"traces_{app}.csv"]).kernels
        assert len(k) == metric_rows, app
        assert k["duration_ns"].notna().all() and (k["duration_ns"] > 0).all(), app
        assert k["inst_executed"].notna().all(), app
        timed += len(k)
    assert timed == 122


def test_amaris_records_carry_time_and_launch_shape(realdata_dir: Path) -> None:
    folder = realdata_dir / "amaris-kepler-maxwell"
    if not folder.is_dir():
        pytest.skip("amaris-kepler-maxwell is not present")
    for name, records in AMARIS.items():
        result = read_profiles([folder / name])
        k = result.kernels
        assert len(k) == records
        assert (k["duration_ns"] > 0).all() and (k["grid_blocks"] > 0).all() and (k["block_threads"] > 0).all()
        assert k["device"].nunique() == 1 and str(k["device"].iloc[0]).startswith("NVIDIA ")
        assert k["kernel"].nunique() == 9

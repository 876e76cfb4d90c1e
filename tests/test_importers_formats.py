"""Each layout's quirks, on small hand-written fixtures, through read_profiles / sniff."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nvperf_bridge.importers import read_profiles, sniff

FIX = Path(__file__).parent / "fixtures" / "import"


def one(name: str):
    return read_profiles([FIX / name])


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("ncu_details_old.log", "ncu-details"),
        ("ncu_details_2025.csv", "ncu-details"),
        ("ncu_details_rules15.csv", "ncu-details"),
        ("ncu_one_metric_cycles", "ncu-details"),
        ("ncu_raw.csv", "ncu-raw"),
        ("nvprof_metrics.csv", "nvprof-metrics"),
        ("nvprof_trace.csv", "nvprof-trace"),
        ("nvprof_trace_um.csv", "nvprof-trace"),
        ("nvprof_summary.csv", "nvprof-summary"),
        ("nvprof_summary_unquoted.csv", "nvprof-summary"),
        ("worked_examples.yaml", "kernel-yaml"),
    ],
)
def test_sniffed_by_content(name: str, fmt: str) -> None:
    assert sniff(FIX / name) == fmt


def test_ncu_details_old_layout_with_app_output_before_table() -> None:
    result = one("ncu_details_old.log")
    k = result.kernels.set_index("kernel_id")
    assert list(k.index) == ["0", "1"]
    assert k.loc["0", "kernel"] == "step_factor"
    assert k.loc["1", "kernel"] == "flux<float, 4>"
    assert k.loc["0", "duration_ns"] == 10720.0  # "10,720" nsecond
    assert k.loc["0", "sm_clock_hz"] == pytest.approx(1091433457.71)
    assert k.loc["0", "achieved_occupancy"] == pytest.approx(0.4818)  # % -> fraction
    assert math.isnan(k.loc["1", "achieved_occupancy"])  # n/a -> missing, never 0
    assert k.loc["0", "shared_mem_per_block_bytes"] == 1536.0  # static 1,024 + dynamic 512
    assert (k.loc["0", "grid_blocks"], k.loc["0", "block_threads"]) == (506.0, 192.0)
    assert k.loc["0", "sol_memory_fraction"] == pytest.approx(0.4007)
    # the bytes/s "Memory Throughput" is not a fraction: kept raw
    assert k.loc["0", "Memory Throughput"] == pytest.approx(303122388059.70)
    assert k.loc["1", "Function Cache Configuration"] == "CachePreferL1"  # words stay text
    assert k.loc["0", "source_row"] == 7
    assert set(k["device"]) == {"Tesla V100-SXM2-16GB"}
    assert any("application's output" in n for n in result.inputs[0].notes)


def test_ncu_details_2025_units_per_value_rules_and_ragged_rows() -> None:
    result = one("ncu_details_2025.csv")
    k = result.kernels.set_index("kernel_id")
    assert k.loc["0", "dram_read_bytes"] == pytest.approx(17.5e6)  # Mbyte
    assert k.loc["0", "dram_write_bytes"] == 4096.0  # byte, with a thousands separator
    assert k.loc["1", "dram_write_bytes"] == 2500.0  # Kbyte
    assert k.loc["1", "dram_read_bytes"] == 900.0
    assert k.loc["0", "dram_bytes"] == pytest.approx(17.5e6 + 4096)
    assert k.loc["0", "duration_ns"] == pytest.approx(111810.0)  # us
    assert k.loc["1", "duration_ns"] == pytest.approx(160000.0)  # ms
    assert k.loc["0", "sm_clock_hz"] == 2e9  # Ghz
    assert k.loc["0", "sol_memory_fraction"] == pytest.approx(0.2774)
    assert k.loc["0", "Memory Throughput [Memory Workload Analysis]"] == pytest.approx(156.55e9)
    assert "flop_count_hp.sum" not in k.columns  # n/a everywhere: nothing to keep, and never 0
    assert (k.loc["1", "grid_blocks"], k.loc["1", "block_threads"]) == (1024.0, 128.0)  # (64, 8, 2)
    assert k.loc["0", "cc"] == "12.0"
    assert k.loc["0", "device"] == "0"  # only an index in this layout
    assert len(result.rules) == 1 and result.rules["kernel_id"].iloc[0] in set(result.kernels["kernel_id"])
    assert any("1 rule rows" in s for s in result.inputs[0].notes)


def test_ncu_details_15_columns_lambda_names_flops_and_duration_from_cycles() -> None:
    result = one("ncu_details_rules15.csv")
    row = result.kernels.iloc[0]
    assert "[lambda(curandStatePhilox4_32_10 *) (instance 2)]" in row["kernel_name"]
    assert row["flop_sp"] == 2 * 1000 + 30 + 7
    assert row["duration_ns"] == pytest.approx(8382.70 / 999845384.51 * 1e9)
    assert any("sm__cycles_elapsed.avg /" in n for n in result.inputs[0].notes)
    assert row["achieved_occupancy"] == pytest.approx(0.4916)


def test_ncu_raw_units_row_tuples_words_and_device_name() -> None:
    result = one("ncu_raw.csv")
    k = result.kernels.set_index("kernel_id")
    assert set(k["device"]) == {"NVIDIA B200"}
    assert k.loc["0", "cc"] == "10.0"
    assert k.loc["0", "duration_ns"] == pytest.approx(14976.0)  # us column
    assert k.loc["0", "dram_read_bytes"] == pytest.approx(1.5e6)
    assert math.isnan(k.loc["1", "dram_read_bytes"])
    assert k.loc["0", "inst_executed"] == 12345.0
    assert k.loc["0", "achieved_occupancy"] == pytest.approx(0.625)
    assert k.loc["1", "shared_mem_per_block_bytes"] == 16384.0
    assert k.loc["1", "grid_blocks"] == 512.0
    assert k.loc["0", "launch__cluster_scheduling_policy"] == "PolicySpread"
    assert "numa__id_cpu" not in k.columns  # empty raw columns are dropped
    assert list(k["source_row"]) == [5, 6]


def test_nvprof_metrics_use_avg_and_units_in_text() -> None:
    k = one("nvprof_metrics.csv").kernels.set_index("kernel")
    row = k.loc["mysgemmNT"]
    assert row["invocations"] == 3
    assert row["achieved_occupancy"] == pytest.approx(0.062327)  # already 0..1
    assert row["dram_read_bytes"] == 11 * 32
    assert row["dram_write_bytes"] == 13 * 32
    assert row["inst_global_ld"] == 39680 / 8
    assert row["gld_efficiency"] == 1.0
    assert row["dram_read_throughput"] == pytest.approx(126.024706e9)
    assert row["single_precision_fu_utilization"] == pytest.approx(0.2)  # "Low (2)": level / 10 of peak
    assert row["device"] == "GeForce GTX 1080 Ti"


def test_nvprof_trace_strips_suffix_and_counts_non_kernel_rows() -> None:
    result = one("nvprof_trace.csv")
    k = result.kernels
    assert len(k) == 4
    assert list(k["kernel_id"]) == ["1173", "1180", "1187", "1190"]
    assert k.loc[0, "kernel_name"] == "mysgemmNT(float const *, int, float const *, int)"
    assert k.loc[0, "duration_ns"] == 13000.0  # us
    assert k.loc[0, "shared_mem_per_block_bytes"] == 512.0  # 0.5 KB static
    assert (k.loc[0, "grid_blocks"], k.loc[0, "block_threads"]) == (10.0, 128.0)
    skipped = " ".join(result.inputs[0].skipped)
    assert "2 rows: memcpy" in skipped and "1 row: memset" in skipped


def test_nvprof_trace_with_unified_memory_rows() -> None:
    result = one("nvprof_trace_um.csv")
    assert list(result.kernels["kernel_id"]) == ["132119", "132128"]
    assert result.kernels.loc[0, "duration_ns"] == pytest.approx(14912.0)  # ms
    assert "3 rows: Unified Memory" in " ".join(result.inputs[0].skipped)


def test_nvprof_summary_per_column_units_and_second_table() -> None:
    result = one("nvprof_summary.csv")
    k = result.kernels.set_index("kernel")
    assert list(k.index) == ["cuda_compute_flux", "cuda_compute_step_factor"]
    assert k.loc["cuda_compute_flux", "duration_ns"] == pytest.approx(44725.0)  # Avg in us
    assert k.loc["cuda_compute_flux", "max_duration_ns"] == pytest.approx(1791976.0)  # Max in ms
    assert k.loc["cuda_compute_flux", "invocations"] == 6000
    info = result.inputs[0]
    assert any("API call" in s for s in info.skipped)
    assert any("after the table" in n for n in info.notes)
    assert info.device == "TITAN Xp"


def test_unquoted_names_with_commas_are_repaired() -> None:
    k = one("nvprof_summary_unquoted.csv").kernels
    assert k.loc[0, "kernel_name"] == "void reduce<float, 256>(float*, float const *, int)"
    assert k.loc[0, "duration_ns"] == 500000.0
    assert k.loc[1, "invocations"] == 1


def test_metrics_and_trace_join_on_kernel_name() -> None:
    result = read_profiles([FIX / "nvprof_metrics.csv", FIX / "nvprof_trace.csv"])
    k = result.kernels.set_index("kernel")
    row = k.loc["mysgemmNT"]
    assert row["duration_ns"] == pytest.approx(14000.0)  # mean of 13, 14, 15 us
    assert row["invocations"] == 3  # trace launch count
    assert row["inst_executed"] == 130000 and row["registers_per_thread"] == 46
    assert "unused_kernel" in k.index and "trace_only_kernel" in k.index  # kept, not dropped
    text = " ".join(result.warnings)
    assert "unused_kernel" in text and "trace_only_kernel" in text


def test_one_metric_per_file_runs_join_on_id_and_name() -> None:
    result = read_profiles([FIX / "ncu_one_metric_cycles", FIX / "ncu_one_metric_clock"])
    k = result.kernels.set_index("kernel_id")
    assert k.loc["0", "duration_ns"] == pytest.approx(2000.0)  # 2,000 cycles / 1 GHz
    assert k.loc["1", "duration_ns"] == pytest.approx(2000.0)  # 3,000 cycles / 1,500 cycle/usecond
    assert math.isnan(k.loc["2", "duration_ns"])
    assert any("1 launch(es) only in the first" in w for w in result.warnings)


def test_different_runs_are_concatenated_with_unique_ids() -> None:
    result = read_profiles([FIX / "ncu_details_old.log", FIX / "ncu_details_2025.csv"])
    assert len(result.kernels) == 4
    assert result.kernels["kernel_id"].is_unique
    assert not result.warnings


def test_nvprof_requests_are_zero_when_a_kernel_has_no_transactions(tmp_path: Path) -> None:
    """nvprof writes 0 transactions and 0 per request for memory a kernel never touches:
    that is 0 requests (so models can run), while a real 0 / 0 elsewhere stays missing."""
    head = '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
    rows = [
        ("shared_load_transactions", 0), ("shared_load_transactions_per_request", 0.0),
        ("gld_transactions", 800), ("gld_transactions_per_request", 8.0),
        ("gst_transactions", 80), ("gst_transactions_per_request", 0.0),
    ]
    body = "".join(
        f'"Tesla V100-SXM2-16GB (0)","gemm(float*, float*)",1,"{name}","{name}",{v},{v},{v}\n' for name, v in rows
    )
    path = tmp_path / "metrics.csv"
    path.write_text(head + body)
    row = read_profiles([path]).kernels.iloc[0]
    assert row["inst_shared_ld"] == 0
    assert row["inst_global_ld"] == 100
    # 80 transactions but 0 per request is inconsistent: missing (absent column), never 0
    assert math.isnan(row.get("inst_global_st", math.nan))

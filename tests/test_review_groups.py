"""Kernel groups (issue 12 item 1) on real files: the 14,003-launch nvprof trace, its own
GPU summary, a magus metrics+trace pair, ncu files with and without parameter lists."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.importers import read_profiles
from nvperf_bridge.review.groups import TOP_SHARE, kernel_groups, match_name

TRACE = "nvprof-result/nvprof-result__cfd-setpreferredlocation__print-gpu-trace.csv"
SUMMARY = "nvprof-result/nvprof-result__cfd-setpreferredlocation__print-gpu-summary.csv"
LUD = ("magus/magus__metrics_rodinia_lud.csv", "magus/magus__traces_rodinia_lud.csv")


def _groups(realdata: Path, *names: str):
    return kernel_groups(read_profiles([realdata / n for n in names]).kernels)


def test_trace_of_14003_launches_is_four_kernels_longest_first(realdata_dir: Path) -> None:
    groups = _groups(realdata_dir, TRACE)
    table = groups.table
    assert groups.time_source == "measured"
    assert list(table["kernel"]) == ["cuda_compute_flux", "cuda_time_step", "cuda_compute_step_factor",
                                     "cuda_initialize_variables"]
    assert list(table["launches"]) == [6000, 6000, 2000, 3]
    assert int(table["launches"].sum()) == 14003
    assert table["share"].sum() == pytest.approx(1.0)
    assert table["total_ns"].is_monotonic_decreasing
    # mean x launches = total, and min <= mean <= max for every group
    assert (table["mean_ns"] * table["launches"]).to_numpy() == pytest.approx(table["total_ns"].to_numpy())
    assert ((table["min_ns"] <= table["mean_ns"]) & (table["mean_ns"] <= table["max_ns"])).all()
    # flux (74%) alone is under 80%, so time_step joins it; the other two are not top
    assert list(table["top"]) == [True, True, False, False]
    assert table.loc[table["top"], "share"].sum() >= TOP_SHARE
    # every launch row maps to its group
    kernels = read_profiles([realdata_dir / TRACE]).kernels
    assert (table["kernel"].to_numpy()[groups.group_of.to_numpy()] == kernels["kernel"].to_numpy()).all()
    assert len(groups.rows_of(0)) == 6000


def test_trace_groups_agree_with_nvprofs_own_summary(realdata_dir: Path) -> None:
    """The same run's --print-gpu-summary (rows of 6000 invocations with Min/Max) groups to the
    same kernels and nearly the same shares (the two files are separate profiling runs)."""
    trace = _groups(realdata_dir, TRACE).table.set_index("kernel")
    summary = _groups(realdata_dir, SUMMARY).table.set_index("kernel")
    assert list(summary.index) == list(trace.index)
    assert list(summary["launches"]) == list(trace["launches"])
    assert (summary["share"] - trace["share"]).abs().max() < 0.02
    assert summary.loc["cuda_compute_flux", "max_ns"] == pytest.approx(1791976.0)


def test_magus_pair_groups_invocations(realdata_dir: Path) -> None:
    groups = _groups(realdata_dir, *LUD)
    table = groups.table
    assert sorted(table["kernel"]) == ["lud_diagonal", "lud_internal", "lud_perimeter"]
    assert int(table["launches"].sum()) == 46
    assert table["share"].sum() == pytest.approx(1.0)
    # rows averaged over 15-16 launches (of several grid sizes) keep the shortest and longest of their
    # launches: those of the trace read alone, launch by launch
    launches = read_profiles([realdata_dir / LUD[1]]).kernels
    spread = launches.groupby(match_name(launches))["duration_ns"].agg(["min", "max", "size"])
    paired = table.set_index("kernel")
    assert (paired["min_ns"] < paired["max_ns"]).all()
    assert paired["min_ns"].to_dict() == pytest.approx(spread.loc[paired.index, "min"].to_dict())
    assert paired["max_ns"].to_dict() == pytest.approx(spread.loc[paired.index, "max"].to_dict())
    assert paired["launches"].to_dict() == spread.loc[paired.index, "size"].to_dict()


def test_metrics_without_durations_have_no_share_and_say_so(realdata_dir: Path) -> None:
    groups = _groups(realdata_dir, LUD[0])
    assert groups.time_source == "none"
    assert groups.table["share"].isna().all()
    assert groups.table["top"].all()
    estimate = pd.Series([1.0, 2.0, 3.0], index=read_profiles([realdata_dir / LUD[0]]).kernels.index)
    ranked = kernel_groups(read_profiles([realdata_dir / LUD[0]]).kernels, estimate, "hong-kim")
    assert ranked.time_source == "hong-kim"
    assert list(ranked.table["launches"]) == [15, 15, 16]  # 3 x 15 > 2 x 15 > 1 x 16


def test_b200_alternating_kernels_group_and_the_long_one_is_top(realdata_dir: Path) -> None:
    groups = _groups(realdata_dir, "roofline-analysis/"
                     "roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv")
    table = groups.table
    assert list(table["launches"]) == [32, 32]
    assert table["kernel_name"].iloc[0].startswith("void BatchDecodeWithPagedKVCacheKernel<")
    assert list(table["top"]) == [True, False]
    assert math.isclose(table["share"].iloc[0], 0.976, abs_tol=0.001)


def test_name_with_and_without_parameter_list_is_one_kernel() -> None:
    """Realdata quirk 10: #15 prints cuda_compute_step_factor, #16 adds (int,float*,float*,float*)."""
    kernels = pd.DataFrame({"kernel_name": ["cuda_compute_step_factor",
                                            "cuda_compute_step_factor(int,float*,float*,float*)",
                                            "void f<(int)2>(float*, int)", "void f<(int)3>(float*, int)"]})
    names = match_name(kernels)
    assert names[0] == names[1]
    assert names[2] != names[3]


def test_two_instances_of_one_template_are_two_groups_with_distinct_short_names() -> None:
    kernels = pd.DataFrame({"kernel_name": ["void gemm<128, float>(float*, int)", "void gemm<64, float>(float*, int)",
                                            "void gemm<128, float>(float*, int)"],
                            "duration_ns": [10.0, 20.0, 30.0]})
    table = kernel_groups(kernels).table
    assert list(table["launches"]) == [2, 1]
    assert table["kernel"].nunique() == 2
    assert all(name.startswith("gemm<") for name in table["kernel"])

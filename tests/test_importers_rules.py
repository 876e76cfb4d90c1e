"""ncu details rule rows (Rule Name / Type / Description / Estimated Speedup) kept as ImportResult.rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.discovery import read_inputs
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.kernelframe import RULE_COLUMNS

# the 20-column layout of ncu 2025 (shape of realdata #22): metric rows end early with a trailing comma,
# rule rows carry every field with prose holding commas, periods, parentheses and a URL
HEAD20 = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
          '"Rule Description","Estimated Speedup Type","Estimated Speedup"')


def _launch20(launch: int, name: str, dram: str) -> str:
    ident = f'"{launch}","4242","app","127.0.0.1","{name}","1","7","(256, 1, 1)","(332, 1, 1)","0","12.0"'
    return "\n".join([
        f'{ident},"GPU Speed Of Light Throughput","Duration","us","{10 + launch}.50",',
        f'{ident},"Command line profiler metrics","dram__bytes_read.sum","Mbyte","{dram}",',
        f'{ident},"SpeedOfLight","","","","SOLBottleneck","OPT","This workload exhibits low compute throughput, '
        f'see the Kernel Profiling Guide (https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#roofline).","",""',
        f'{ident},"Occupancy","","","","TheoreticalOccupancy","OPT","This kernel\'s theoretical occupancy (16.7%) is '
        f'limited by the number of required registers.","global","{60 + launch}.9"',
    ])


def test_rules_of_the_20_column_layout(tmp_path: Path) -> None:
    path = tmp_path / "details.csv"
    path.write_text("==PROF== Connected to process 4242\n" + HEAD20 + "\n"
                    + _launch20(0, "void Kernel2<cutlass_80_tensorop>(Params)", "17.50") + "\n"
                    + _launch20(1, "void Kernel2<cutlass_80_tensorop>(Params)", "18.25") + "\n")
    result = read_profiles([path])
    assert len(result.kernels) == 2
    rules = result.rules
    assert list(rules.columns) == list(RULE_COLUMNS)
    assert len(rules) == 4
    assert set(rules["kernel_id"]) == set(result.kernels["kernel_id"])
    occ = rules[rules["rule"] == "TheoreticalOccupancy"].sort_values("kernel_id")
    assert occ["estimated_speedup_pct"].tolist() == [60.9, 61.9]
    assert occ["speedup_type"].tolist() == ["global", "global"]
    assert occ["section"].tolist() == ["Occupancy", "Occupancy"]
    sol = rules[rules["rule"] == "SOLBottleneck"].iloc[0]
    assert sol["type"] == "OPT" and sol["estimated_speedup_pct"] != sol["estimated_speedup_pct"]  # NaN: none given
    assert "https://docs.nvidia.com" in sol["message"]
    assert int(sol["source_row"]) == 5  # the line of the rule row in the file
    # rule rows are not metrics: no column was made from them
    assert "Rule Description" not in result.kernels.columns


def test_rules_of_the_15_column_layout_and_unique_ids_across_files(tmp_path: Path) -> None:
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
            '"Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description"')
    paths = []
    for i in range(2):
        ident = f'"0","43201","python3.10","127.0.0.1","void fmha_fwd<{i}>(Params)","2022-Sep-07 16:22:11","1","7"'
        path = tmp_path / f"run{i}.csv"
        path.write_text("\n".join([head,
                                   f'{ident},"GPU Speed Of Light","Duration","usecond","{i + 5}.1",,,',
                                   f'{ident},"LaunchStats","","","","LaunchConfiguration","WRN","A wave, of blocks."',
                                   ]) + "\n")
        paths.append(path)
    result = read_inputs(paths, jobs=1)
    assert len(result.kernels) == 2 and result.kernels["kernel_id"].is_unique
    assert len(result.rules) == 2
    # each rule names the (made unique) id of its own launch
    by_id = dict(zip(result.kernels["kernel_id"], result.kernels["kernel_name"]))
    for _, rule in result.rules.iterrows():
        assert by_id[rule["kernel_id"]] == rule["kernel_name"]
        assert rule["type"] == "WRN" and rule["speedup_type"] is None


def test_realdata_details_and_metrics_pair_keeps_each_rule_once(realdata_dir: Path) -> None:
    folder = realdata_dir / "llm-perf-opt"
    stem = "llm-perf-opt__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu"
    result = read_profiles([folder / f"{stem}.details.csv", folder / f"{stem}.metrics.csv"])
    assert len(result.kernels) == 1
    rules = result.rules
    assert set(rules["rule"]) == {"SOLBottleneck", "SOLFPRoofline", "IssueSlotUtilization", "TheoreticalOccupancy"}
    assert len(rules) == 4
    assert rules.loc[rules["rule"] == "TheoreticalOccupancy", "estimated_speedup_pct"].item() == pytest.approx(67.9)


def test_realdata_15_column_rules_point_at_their_launches(realdata_dir: Path) -> None:
    path = realdata_dir / "actual-parameter-collection" / "actual-param__attention_5-9__bert_flashattn_nsight.csv"
    result = read_profiles([path])
    assert len(result.rules) > 0
    assert result.rules["kernel_id"].isin(set(result.kernels["kernel_id"])).all()
    assert result.rules["rule"].notna().all() and result.rules["message"].notna().all()


def test_files_without_rules_have_an_empty_rules_table(realdata_dir: Path) -> None:
    result = read_profiles([realdata_dir / "magus" / "magus__metrics_poly_gemm.csv"])
    assert result.rules.empty and list(result.rules.columns) == list(RULE_COLUMNS)

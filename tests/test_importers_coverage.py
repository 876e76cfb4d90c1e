"""Issue 13: every counter a file carries is mapped or listed as unmapped by name; derivations are recorded."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import realdata_files

from nvperf_bridge.cli import main
from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import read_profiles


def _metric_values(path: Path) -> dict[str, set[str]] | None:
    """Counter name -> the values a long-format file gives it (nvprof metrics/events, ncu details), read with csv."""
    rows = list(csv.reader(line for line in path.read_text().splitlines() if not line.startswith("==")))
    for i, row in enumerate(rows):
        for col in ("Metric Name", "Event Name"):
            if col in row:
                at, value = row.index(col), row.index("Avg") if "Avg" in row else row.index("Metric Value")
                out: dict[str, set[str]] = {}
                for r in rows[i + 1:]:
                    if len(r) > at and r[at]:
                        out.setdefault(r[at], set()).add(r[value].strip() if len(r) > value else "")
                return out
    return None


@pytest.mark.parametrize("path", realdata_files(), ids=lambda p: p.name[:60])
def test_every_counter_of_a_realdata_file_is_mapped_or_listed(path: Path) -> None:
    try:
        result = read_profiles([path])
    except InputError:
        return  # the error-only file: test_importers_realdata checks its message
    info = result.inputs[0]
    assert info.mapped or info.unmapped
    assert not set(info.mapped) & set(info.unmapped)
    assert not info.unparsed, info.unparsed
    values = _metric_values(path)
    if values is None:
        return
    # a long format: every metric of the file is accounted for, by name ...
    assert set(values) <= set(info.mapped) | set(info.unmapped), sorted(set(values) - set(info.mapped) - set(info.unmapped))
    for name in info.unmapped:  # ... and an unmapped one is kept under its name unless it holds no value at all
        assert name in result.kernels.columns or values[name] <= {"", "n/a"}, name


def test_magus_metrics_map_the_documented_nvprof_vocabulary(realdata_dir: Path) -> None:
    result = read_profiles([next(realdata_dir.rglob("magus__metrics_parboil_sgemm.csv"))])
    info = result.inputs[0]
    assert len(info.mapped) + len(info.unmapped) == 120
    for name, target in [("l2_read_transactions", "l2_read_bytes"), ("dram_utilization", "sol_dram_fraction"),
                         ("local_load_transactions", "local_ld_sectors"), ("achieved_occupancy", "achieved_occupancy")]:
        assert info.mapped[name] == target
    assert info.mapped["inst_per_warp"] == "used to derive inst_executed"
    assert "stall_sync" in info.unmapped
    k = result.kernels.iloc[0]
    assert k["l2_read_bytes"] == 20896 * 32 and k["sol_dram_fraction"] == pytest.approx(0.1)  # "Low (1)"


def test_magus_corpus_model_inputs_are_never_time_derived(realdata_dir: Path) -> None:
    """The accuracy set: no column a model reads may carry the measured time through a derivation."""
    corpus = realdata_dir / "magus-corpus"
    if not corpus.is_dir():
        pytest.skip("magus-corpus is not present")
    for metrics in sorted(corpus.glob("metrics_*.csv")):
        result = read_profiles([metrics, corpus / metrics.name.replace("metrics_", "traces_")])
        timed = {c for c, d in result.derived_from.items() if d["time_derived"]}
        assert not timed, (metrics.name, timed)


EVENTS = ('==4242== Event result:\n"Device","Kernel","Invocations","Event Name","Min","Max","Avg"\n'
          + "".join(f'"Tesla K40m (0)","k(int*)",2,"{n}",{v},{v},{v}\n'
                    for n, v in [("fb_subp0_read_sectors", 10), ("fb_subp1_read_sectors", 20), ("ipc", 2.0),
                                 ("active_cycles", 50), ("tex1_cache_sector_queries", 3)]))


def test_inspect_prints_a_coverage_line_per_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.csv"
    path.write_text(EVENTS)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("coverage: 1 kernels read; 5 counters: 4 mapped, 1 unmapped; 1 columns derived "
            "(1 from the duration or a rate over it); 0 values not parsed") in out
    assert "unmapped (kept raw): tex1_cache_sector_queries" in out
    assert "derived inst_executed for 1 kernels: inst_executed = executed_ipc x active_cycles" in out
    assert "[time-derived for 1]" in out


def test_inspect_json_carries_the_coverage_and_the_derivation_record(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.csv"
    path.write_text(EVENTS)
    assert main(["inspect", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    cov = report["files"][0]["coverage"]
    assert cov["mapped"]["fb_subp1_read_sectors"] == "dram_read_bytes" and cov["unmapped"] == ["tex1_cache_sector_queries"]
    assert report["derived_from"]["inst_executed"]["time_derived"] is True
    assert set(report["derived_from"]) == {"inst_executed"}  # dram_bytes needs the write sectors too: not derived


def test_values_no_number_can_be_read_from_are_named_by_column(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    metrics = tmp_path / "metrics.csv"
    head = '==1== Metric result:\n"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
    metrics.write_text(head + '"GeForce GTX 1080 Ti (0)","k(int*)",1,"inst_executed","Instructions Executed",5,5,5\n'
                       '"GeForce GTX 1080 Ti (0)","k(int*)",1,"gld_efficiency","Efficiency",1,1,"<overflow>"\n'
                       '"GeForce GTX 1080 Ti (0)","k2(int*)",1,"inst_executed","Instructions Executed",5,5,"12..5"\n')
    details = tmp_path / "details.csv"
    details.write_text('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
                       '"Section Name","Metric Name","Metric Unit","Metric Value"\n'
                       '"0","7","app","host","k(float*)","2024-Jan-01 10:00:00","1","7","SOL","Duration","nsecond","1,500"\n'
                       '"1","7","app","host","k(float*)","2024-Jan-01 10:00:01","1","7","SOL","Duration","nsecond","n/a"\n'
                       '"2","7","app","host","k(float*)","2024-Jan-01 10:00:02","1","7","SOL","Duration","nsecond","soon"\n')
    result = read_profiles([metrics])
    assert result.inputs[0].unparsed == {"gld_efficiency": "1 value, first at line 4: '<overflow>'",
                                         "inst_executed": "1 value, first at line 5: '12..5'"}
    info = read_profiles([details]).inputs[0]
    assert set(info.unparsed) == {"Duration"} and info.unparsed["Duration"].startswith("1 value")  # n/a is missing
    assert main(["inspect", str(metrics), str(details)]) == 0
    out = capsys.readouterr().out
    assert "not parsed in inst_executed: 1 value, first at line 5: '12..5' (kept as missing)" in out
    assert "not parsed in Duration: 1 value" in out and "'soon'" in out


def test_time_measures_are_canonical_and_no_kerr_feature_reads_one() -> None:
    from nvperf_bridge.builtin_plugins.kerr import FEATURES
    from nvperf_bridge.columns import CANONICAL_COLUMNS, TIME_MEASURES

    assert TIME_MEASURES <= set(CANONICAL_COLUMNS)
    assert not {c for _, _, _, sources in FEATURES for c in sources} & TIME_MEASURES


def test_accuracy_leaves_out_predictions_made_from_time_derived_inputs(tmp_path: Path) -> None:
    """ncu 2019 details: DRAM bytes only as Memory Throughput (byte/second) x Duration. The models that
    require dram_bytes predict, but their accuracy figures must not count those kernels."""
    from nvperf_bridge.analysis import analyze_files

    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
            '"Section Name","Metric Name","Metric Unit","Metric Value"\n')
    rows = []
    for i, (dur, bw) in enumerate([(10_000, 3e11), (40_000, 2e11)]):
        ident = f'"{i}","7","app","host","k{i}(float*)","2024-Jan-01 10:00:0{i}","1","7"'
        for section, name, unit, value in [("SOL", "Duration", "nsecond", dur), ("MWA", "Memory Throughput", "byte/second", bw),
                                           ("LaunchStats", "Grid Size", "", 1024), ("LaunchStats", "Block Size", "", 256),
                                           ("Compute", "Executed Instructions", "inst", 50_000),
                                           ("Compute", "Issued Instructions", "inst", 51_000),
                                           ("Occupancy", "Achieved Occupancy", "%", 60)]:
            rows.append(f'{ident},"{section}","{name}","{unit}","{value}"\n')
    path = tmp_path / "details.log"
    path.write_text("Tesla V100-SXM2-16GB\n" + head + "".join(rows))
    analysis = analyze_files([path])
    k = analysis.kernels
    assert k["dram_bytes"].tolist() == pytest.approx([3e6, 8e6]) and k["derived"].str.contains("(time)", regex=False).all()
    accuracy = analysis.accuracy()
    for mid, run in analysis.ok_runs().items():
        if "dram_bytes" in run.requires:
            assert run.result["predicted_ns"].notna().any(), mid  # the model still predicts ...
            assert accuracy.loc[mid, "n"] == 0, mid  # ... but its accuracy does not count them

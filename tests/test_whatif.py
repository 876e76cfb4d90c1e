"""``nvperf-bridge whatif``: rebuilt records, the occupancy of each point, every model run, the reports.

Real kernels: magus-corpus matrixMul (GTX 1080 Ti, nvprof metrics + trace) and the V100 cfd ncu run
(three kernels, 100 launches). Hand-checked numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.columns import CANONICAL_COLUMNS
from nvperf_bridge.errors import UsageError
from nvperf_bridge.whatif import parse_vary, rebuild_rules, run_study, whatif_files

MODELS_WITHOUT_TRAINING = ["hong-kim", "kothapalli", "luo-suda", "roofline", "transit"]


@pytest.fixture
def matrixmul(realdata_dir: Path) -> list[Path]:
    folder = realdata_dir / "magus-corpus"
    return [folder / "metrics_cudasdk_matrixMul.csv", folder / "traces_cudasdk_matrixMul.csv"]


@pytest.fixture
def matrixmul_study(matrixmul: list[Path]):
    return whatif_files(matrixmul, kernel="matrixMul", vary={"block_threads": [64, 128, 256, 512, 1024, 2048]},
                        model_ids=MODELS_WITHOUT_TRAINING)


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main(["whatif", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_canonical_column_has_a_rebuild_rule() -> None:
    rules = rebuild_rules()
    assert set(CANONICAL_COLUMNS) <= set(rules), set(CANONICAL_COLUMNS) - set(rules)
    known = {"identity", "target", "launch", "per-warp", "per-thread", "occupancy", "same-gpu", "kept", "dropped"}
    assert {r.rule for r in rules.values()} <= known


def test_block_sweep_keeps_the_work_and_recomputes_occupancy(matrixmul_study) -> None:
    s = matrixmul_study
    p = s.points.set_index("point")
    base = s.kernel
    # measured: 200 blocks x 1024 threads; --keep work keeps 204,800 threads
    assert list(p.loc[["block=64", "block=256", "block=1024"], "grid_blocks"]) == [3200, 800, 200]
    records = s.records.set_index(s.points["point"])
    for point in ("block=64", "block=256", "block=1024"):
        # same threads, whole warps: every count of the measured launch is unchanged
        for column in ("inst_executed", "inst_global_ld", "global_ld_sectors", "dram_read_bytes", "flop_sp"):
            assert records.loc[point, column] == pytest.approx(float(base[column]))
        assert np.isnan(records.loc[point, "duration_ns"])
    # GTX 1080 Ti (cc 6.1): 96 KB of shared memory per SM, 8 KB per block -> 12 blocks; at 64 threads
    # (2 warps) that is 24 of 64 warps = 37.5 %, limited by shared memory
    assert p.loc["block=64", "theoretical_occupancy"] == pytest.approx(0.375)
    assert p.loc["block=64", "occupancy_limiter"] == "shared memory"
    # the measured achieved/theoretical ratio (0.936 / 1.0) carried over
    assert p.loc["block=64", "achieved_occupancy"] == pytest.approx(float(base["achieved_occupancy"]) * 0.375)
    # 2048 threads per block is refused by the hardware: listed with the reason, not predicted
    assert p.loc["block=2048", "occupancy_limiter"] == "invalid launch"
    assert "exceeds the maximum of 1024" in p.loc["block=2048", "transit.error"]
    assert np.isnan(p.loc["block=2048", "transit.predicted_ns"])


def test_the_measured_point_is_marked_and_reproduced_by_its_rebuild(matrixmul_study) -> None:
    p = matrixmul_study.points
    assert p.loc[0, "point"] == "measured" and p.loc[0, "measured_ns"] == pytest.approx(95916.13, rel=1e-6)
    assert p["measured_ns"].iloc[1:].isna().all()  # no varied point claims a measurement
    marked = p.index[p["at_measured_setting"]].tolist()
    same = p.index[p["point"] == "block=1024"].tolist()
    assert marked == [0, *same]
    for mid in MODELS_WITHOUT_TRAINING:
        measured, rebuilt = p.loc[0, f"{mid}.predicted_ns"], p.loc[same[0], f"{mid}.predicted_ns"]
        assert measured > 0 and rebuilt == pytest.approx(measured, rel=1e-9), mid
        assert p.loc[0, f"{mid}.bottleneck"] == p.loc[same[0], f"{mid}.bottleneck"]


def test_keep_grid_scales_the_totals_with_the_threads(matrixmul: list[Path]) -> None:
    s = whatif_files(matrixmul, kernel="matrixMul", vary={"block_threads": [256]}, keep="grid", model_ids=["roofline"])
    rebuilt, base = s.records.iloc[1], s.kernel
    assert rebuilt["grid_blocks"] == 200 and rebuilt["block_threads"] == 256
    assert rebuilt["inst_executed"] == pytest.approx(float(base["inst_executed"]) / 4)
    assert rebuilt["flop_sp"] == pytest.approx(float(base["flop_sp"]) / 4)
    assert rebuilt["dram_bytes"] == pytest.approx(float(base["dram_bytes"]) / 4)
    # a quarter of the work: the bandwidth/compute roof is a quarter of the measured point's
    p = s.points
    assert p.loc[1, "roofline.predicted_ns"] == pytest.approx(p.loc[0, "roofline.predicted_ns"] / 4, rel=1e-6)


def test_registers_change_only_the_occupancy(matrixmul: list[Path]) -> None:
    s = whatif_files(matrixmul, kernel="matrixMul", vary={"registers_per_thread": [32, 64, 255, 256]},
                     model_ids=["transit"])
    p = s.points.set_index("point")
    # 1024 threads x 64 regs = 65,536 = the whole register file: one block; 32 regs -> two blocks
    assert p.loc["regs=32", "theoretical_occupancy"] == pytest.approx(1.0)
    assert p.loc["regs=64", "theoretical_occupancy"] == pytest.approx(0.5)
    assert p.loc["regs=64", "occupancy_limiter"] == "registers"
    assert p.loc["regs=256", "occupancy_limiter"] == "invalid launch"  # cc 6.1 allows 255
    counts = s.records.set_index(s.points["point"])["inst_executed"]
    assert counts.loc["regs=64"] == counts.loc["regs=32"] == pytest.approx(float(s.kernel["inst_executed"]))


def test_no_gain_keeps_the_measured_setting(matrixmul: list[Path]) -> None:
    """Registers that only lower the occupancy (or leave it) gain nothing: the 'fastest' answer is the
    measured setting, never the first of several tied points read as advice to change the launch;
    a point that is faster (another GPU) is named with its gain."""
    from nvperf_bridge.reports.whatif_report import KEEP_MEASURED, best_points, build_document

    s = whatif_files(matrixmul, kernel="matrixMul", vary={"registers_per_thread": [16, 32, 64]},
                     model_ids=["transit", "hong-kim"])
    reference = s.points.iloc[0]
    answers = best_points(s)
    assert [b.model for b in answers] == ["transit", "hong-kim"]
    for b in answers:
        assert b.keep_measured and b.answer.startswith(KEEP_MEASURED), b
        assert b.point == reference["point"]  # a row of the points table, not a sentence
        assert b.change == 0.0 and b.predicted_ns == pytest.approx(reference[f"{b.model}.predicted_ns"])
    document = build_document(s)
    assert {entry["point"] for entry in document["fastest"]} <= {entry["point"] for entry in document["points"]}
    assert all(entry["keep_measured"] and entry["answer"].startswith(KEEP_MEASURED) for entry in document["fastest"])
    faster = whatif_files(matrixmul, kernel="matrixMul", vary={}, gpu_targets=["v100-sxm2"], model_ids=["roofline"])
    [b] = best_points(faster)
    assert b.gpu == "v100-sxm2" and "v100-sxm2" in b.answer and not b.keep_measured and b.change < -0.01


def test_moving_to_another_gpu(matrixmul: list[Path]) -> None:
    s = whatif_files(matrixmul, kernel="matrixMul", vary={}, gpu_targets=["v100-sxm2"], model_ids=["roofline"])
    assert list(s.points["gpu"]) == ["gtx-1080-ti", "v100-sxm2"]
    moved = s.records.iloc[1]
    assert moved["cc"] == "7.0" and "V100" in moved["device"]
    assert pd.isna(moved.get("sm_clock_hz", np.nan))
    # a V100 has ~1.7x the GTX 1080 Ti's bandwidth and more FP32 throughput: the roofline time drops
    assert s.points.loc[1, "roofline.predicted_ns"] < s.points.loc[0, "roofline.predicted_ns"]


def test_kernel_selection_on_a_multi_kernel_ncu_run(realdata_dir: Path) -> None:
    cfd = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    s = whatif_files([cfd], kernel="cuda_compute_flux", vary={"block_threads": [128, 192]}, model_ids=["roofline"])
    assert "longest of" in s.kernel_note
    launches = s.points.iloc[0]
    assert launches["measured_ns"] > 0
    with pytest.raises(UsageError, match="matches 3 kernels"):
        whatif_files([cfd], kernel="cuda", vary={"block_threads": [128]})


def test_parse_vary_rejects_what_it_cannot_use() -> None:
    assert parse_vary(["block_threads=64, 128,64"]) == {"block_threads": [64.0, 128.0]}
    for bad in ("block_threads", "block_threads=", "warps=4", "block_threads=0", "block_threads=1.5",
                "registers_per_thread=-1"):
        with pytest.raises(UsageError):
            parse_vary([bad])
    with pytest.raises(UsageError, match="twice"):
        parse_vary(["grid_blocks=1", "grid_blocks=2"])


def test_cli_markdown_with_figure(tmp_path: Path, capsys, matrixmul: list[Path]) -> None:
    target = tmp_path / "w.md"
    code, out, err = run(capsys, *matrixmul, "--kernel", "matrixMul", "--vary", "block_threads=64,128,256,512,1024",
                         *sum((["-m", m] for m in MODELS_WITHOUT_TRAINING), []), "-o", target)
    assert code == 0, err
    text = target.read_text()
    figure = tmp_path / "w-whatif.png"
    assert "![Predicted time per setting](w-whatif.png)" in text
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| **measured** |" in text and "95.9 µs" in text and "(measured setting)" in text


def test_cli_json_csv_xlsx(tmp_path: Path, capsys, matrixmul: list[Path]) -> None:
    args = [*matrixmul, "--kernel", "matrixMul", "--vary", "block_threads=128,256", "--gpu-target", "gtx-1080-ti",
            "--gpu-target", "a100-40gb", "-m", "transit", "-m", "roofline"]
    code, out, err = run(capsys, *args, "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "nvperf-bridge/whatif/2" and doc["target_gpus"] == ["gtx-1080-ti", "a100-40gb"]
    assert [p["measured"] for p in doc["points"]] == [True] + [False] * 4
    assert doc["points"][3]["point"] == "block=128 on a100-40gb"
    assert doc["points"][3]["gpu"] == "a100-40gb" and doc["points"][3]["models"]["transit"]["predicted_ns"] > 0
    assert "stall_sync" in doc["not_carried"]
    code, out, err = run(capsys, *args, "-f", "csv")
    table = pd.read_csv(__import__("io").StringIO(out))
    assert code == 0 and len(table) == 5 and table["at_measured_setting"].tolist() == [True, False, False, False,
                                                                                        False]
    book = tmp_path / "w.xlsx"
    code, _, err = run(capsys, *args, "-o", book)
    assert code == 0, err
    import openpyxl

    wb = openpyxl.load_workbook(book)
    assert wb.sheetnames == ["Points", "Rebuilt records", "Rules", "Not carried", "Figures"]
    rows = list(wb["Points"].values)
    header_at = next(i for i, r in enumerate(rows) if r[0] == "kernel")
    assert rows[header_at + 1][1] == "measured" and rows[header_at + 1][rows[header_at].index("measured_ns")] > 0


def test_cli_errors(tmp_path: Path, capsys, matrixmul: list[Path]) -> None:
    code, out, err = run(capsys, *matrixmul, "--kernel", "nope", "--vary", "block_threads=64")
    assert code == 2 and out == "" and "no kernel matches --kernel 'nope'" in err and "matrixMulCUDA" in err
    code, _, err = run(capsys, *matrixmul, "--kernel", "matrixMul")
    assert code == 2 and "nothing to vary" in err
    code, _, err = run(capsys, *matrixmul, "--kernel", "matrixMul", "--vary", "block_threads=64", "-f", "xlsx")
    assert code == 2 and "needs a file" in err
    code, _, err = run(capsys, *matrixmul, "--kernel", "matrixMul", "--gpu-target", "no-such-gpu")
    assert code == 2 and "no-such-gpu" in err
    existing = tmp_path / "w.json"
    existing.write_text("keep me")
    code, _, err = run(capsys, *matrixmul, "--kernel", "matrixMul", "--vary", "block_threads=64", "-o", existing)
    assert code == 1 and "already exists" in err and existing.read_text() == "keep me"


def test_study_without_a_launch_shape_is_refused() -> None:
    kernels = pd.DataFrame({"kernel_id": ["1"], "kernel": ["k"], "kernel_name": ["k()"], "device": ["Tesla V100-SXM2"],
                            "duration_ns": [1000.0]})
    with pytest.raises(UsageError, match="has no block_threads"):
        run_study(kernels, kernel="k", vary={"block_threads": [64]})


def test_every_corpus_kernel_rebuilds_consistently(realdata_dir: Path) -> None:
    """All 122 timed kernels of the GTX 1080 Ti corpus: per-warp and per-thread work is kept at every
    block size, and the rebuild at the measured setting gives back the measured record's counters."""
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.whatif import rebuild_records

    kernels = read_inputs([realdata_dir / "magus-corpus"]).kernels
    assert len(kernels) == 122
    gpu = resolve_profile("gtx-1080-ti")
    for _, base in kernels.iterrows():
        settings = [{"block_threads": float(base["block_threads"])}, {"block_threads": 128.0},
                    {"block_threads": 1024.0}]
        records, occ, _ = rebuild_records(base, settings, gpu, gpu)
        warps = records["grid_blocks"] * np.ceil(records["block_threads"] / 32)
        threads = records["grid_blocks"] * records["block_threads"]
        warps0 = float(base["grid_blocks"]) * np.ceil(float(base["block_threads"]) / 32)
        threads0 = float(base["grid_blocks"]) * float(base["block_threads"])
        assert (threads >= threads0).all() and (threads - threads0 < records["block_threads"]).all()  # --keep work
        for column, per, per0 in (("inst_executed", warps, warps0), ("global_ld_sectors", warps, warps0),
                                  ("flop_sp", threads, threads0), ("dram_read_bytes", threads, threads0)):
            if pd.notna(base.get(column)) and float(base[column]) > 0:
                np.testing.assert_allclose(records[column] / per, float(base[column]) / per0, rtol=1e-9,
                                           err_msg=f"{base['kernel']} {column}")
        measured = records.iloc[0]
        for column in ("grid_blocks", "inst_executed", "inst_issued", "global_st_sectors", "dram_write_bytes"):
            if pd.notna(base.get(column)):
                assert measured[column] == pytest.approx(float(base[column]), rel=1e-12), (base["kernel"], column)
        assert pd.isna(measured["duration_ns"])
        assert (occ["theoretical_occupancy"].dropna() <= 1.0).all()

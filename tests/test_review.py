"""The review layer (issue 12 items 2-4) on real files: verdicts from accurate models only,
Nsight's speed-of-light view beside them, advice with the kernel's own numbers, and loud thin answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from nvperf_bridge.analysis import analyze_files
from nvperf_bridge.review.advice import load_rules, row_quantities
from nvperf_bridge.review.build import build_review, review_dict
from nvperf_bridge.review.verdict import (WITHIN, measured_label, nsight_side, speed_of_light,
                                          view_covers_every_unit, vote_weights)

LUD = ("magus/magus__metrics_rodinia_lud.csv", "magus/magus__traces_rodinia_lud.csv")
SGEMM = ("magus/magus__metrics_parboil_sgemm.csv", "magus/magus__traces_parboil_sgemm.csv")
V100_CFD = "optimal_unified_memory/optimal_unified_memory__cfd__nsight_cfd_097K.log"
B200 = ("roofline-analysis/roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv",
        "roofline-analysis/roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv")
TRACE = "nvprof-result/nvprof-result__cfd-setpreferredlocation__print-gpu-trace.csv"
RTX5090 = "llm-perf-opt/llm-perf-opt__ncu-v2__kernel_0009_60b6526c428eef70c521b6a4c8ca71db__ncu.details.csv"


def _analysis(realdata: Path, *names: str, **kwargs):
    return analyze_files([realdata / n for n in names], **kwargs)


@pytest.mark.parametrize("pair", [LUD, SGEMM])
def test_only_models_within_2x_vote(realdata_dir: Path, pair: tuple[str, str]) -> None:
    """The old consensus counted models off by 3x and more; now a model votes on a kernel only
    when its prediction is within 2x of the measured time."""
    analysis = _analysis(realdata_dir, *pair)
    weights, ratios = vote_weights(analysis)
    summary = analysis.summary()
    for index in analysis.kernels.index:
        within = [mid for mid in weights.columns
                  if 1 / WITHIN <= ratios.at[index, mid] <= WITHIN
                  and summary.at[index, f"{mid}.bottleneck"] != "unknown"]
        assert summary.at[index, "models_voting"] == len(within)
        off = [mid for mid in weights.columns if not 1 / WITHIN <= ratios.at[index, mid] <= WITHIN]
        assert all(weights.at[index, mid] == 0 for mid in off)
    review = build_review(analysis)
    for row in review.group_rows():
        assert all(1 / WITHIN <= m["ratio"] <= WITHIN for m in row["models_within"])
        assert all(not 1 / WITHIN <= m["ratio"] <= WITHIN for m in row["models_off"])
        for m in row["models_off"]:  # each one left out is named in the basis with how far off it is
            assert re.search(rf"{m['model']} \d+(\.\d)?x (over|under)", row["basis"]), row["basis"]
        voters = {m["model"] for m in row["models_within"]}
        if row["basis"].startswith("measured, not voted"):
            # no voter: the verdict is the measured side's (lud_internal: no model within 2x, SM and
            # memory both under 60% with every unit's level collected)
            assert all(row["model_labels"].get(v) == "unknown" for v in voters)
            assert SIDE_OF.get(row["verdict"]) == row["nsight"]["view"]
        elif row["verdict"] != "unknown":
            assert row["model_labels"] and any(row["model_labels"][v] == row["verdict"] for v in voters)


def test_nsight_speed_of_light_beside_the_verdict_v100(realdata_dir: Path) -> None:
    """#15 (ncu 2019 default sections): SOL SM / Memory % per kernel; time_step reads memory-bound."""
    analysis = _analysis(realdata_dir, V100_CFD)
    rows = {r["kernel"]: r for r in build_review(analysis).group_rows()}
    flux, step = rows["cuda_compute_flux"], rows["cuda_time_step"]
    assert step["nsight"]["source"] == "Nsight Compute speed of light"
    assert step["nsight"]["memory"] == pytest.approx(0.61, abs=0.02)
    assert step["nsight"]["view"] == "memory"
    assert flux["nsight"]["view"] == "latency"  # 23% SM, 35% memory: neither side near peak
    assert "DRAM at 61% of peak" in " ".join(a["text"] for a in step["advice"])
    occupancy = [a["text"] for a in flux["advice"] if a["rule"] == "low-occupancy"]
    assert occupancy and "limited by 58 registers per thread" in occupancy[0]


def test_nvprof_dram_advice_quotes_the_bytes_figure_not_the_0_to_10_level(realdata_dir: Path) -> None:
    """magus-corpus convolutionFFT2D (GTX 1080 Ti): nvprof's dram_utilization is a level (High (8) = 0.8);
    the kernel moved 0.69 of peak by its DRAM bytes over its time. The advice quotes the same figure as
    the speed-of-light line, so a reviewer does not read 69% and 80% for the same DRAM."""
    pair = ("magus-corpus/metrics_cudasdk_convolutionFFT2D.csv", "magus-corpus/traces_cudasdk_convolutionFFT2D.csv")
    analysis = _analysis(realdata_dir, *pair)
    kernels = analysis.kernels
    assert set(np.round(kernels["sol_dram_fraction"].dropna(), 6)) <= {round(0.1 * n, 6) for n in range(11)}
    from_bytes = ((kernels["dram_read_bytes"] + kernels["dram_write_bytes"]) / (analysis.measured_ns * 1e-9)
                  / analysis.row_gpu_value("memory_bandwidth_bytes_per_s"))
    compute, memory, _ = speed_of_light(analysis)
    quantities = row_quantities(analysis, compute, memory)
    assert np.allclose(quantities["dram_fraction"], from_bytes, equal_nan=True)
    assert (np.abs(quantities["dram_fraction"] - kernels["sol_dram_fraction"]) > 0.05).any(), \
        "the file should hold a kernel whose level and bytes disagree (else this test proves nothing)"
    for row in build_review(analysis).group_rows():
        quoted = [a["text"] for a in row["advice"] if a["rule"] == "memory-bandwidth"]
        if quoted:
            figure = int(re.search(r"DRAM at (\d+)% of peak", quoted[0]).group(1))
            # the speed-of-light memory side is the busiest memory unit: DRAM or one busier than it
            assert figure <= round(100 * row["nsight"]["memory"]), (quoted[0], row["nsight"])


def test_measured_view_overrules_a_vote_nothing_measured_backs(realdata_dir: Path) -> None:
    """The magus matrixMul metrics file alone: no measured time, so the one vote (roofline, compute,
    unvalidated on this GPU) rests on nothing checked, while nvprof's unit levels put the memory side
    (shared memory, the tiles) at 70% of peak and the SM at 40%. The verdict follows the
    measurement, says so and names the overruled label."""
    analysis = _analysis(realdata_dir, "magus/magus__matrixMul_metrics.csv")
    row = build_review(analysis).group_rows()[0]
    assert not row["models_within"] and row["model_labels"] == {"roofline": "compute"}
    assert row["nsight"]["view"] == "memory" and row["nsight"]["memory"] == pytest.approx(0.7)
    assert row["verdict"] == "memory-bandwidth" and not row["nsight"]["disagrees_with_verdict"]
    assert row["basis"].startswith("measured, not voted") and "against the models' compute" in row["basis"]


def test_v100_verdict_sides_with_nsight_where_the_models_split(realdata_dir: Path) -> None:
    """cuda_compute_flux: the two voting models read DRAM bytes derived from the time and split
    (recommended memory-bandwidth, Transit parallelism); Nsight measures memory at 35% and the SM at
    23% of peak, so the latency-side label is the verdict, as the advice already said."""
    analysis = _analysis(realdata_dir, V100_CFD)
    rows = {r["kernel"]: r for r in build_review(analysis).group_rows()}
    flux, step = rows["cuda_compute_flux"], rows["cuda_time_step"]
    assert "memory-bandwidth" in flux["model_labels"].values()
    assert flux["verdict"] == "parallelism" and not flux["nsight"]["disagrees_with_verdict"]
    assert "over memory-bandwidth" in flux["basis"]
    assert flux["advice"][0]["rule"] == "latency-bound"
    # where the measurement agrees with the larger vote, the vote stands as it was
    assert step["verdict"] == "memory-bandwidth" and step["basis"].startswith("2 of 3 voting models;")


def test_dram_only_latency_view_judges_nothing_amaris(realdata_dir: Path) -> None:
    """amaris GTX TITAN: the uncoalesced matrix multiply has DRAM bytes and a time but no L2, shared
    or pipe levels, so DRAM under 60% cannot say the kernel is not memory-bound (its loads are served
    by L2): the memory-bandwidth verdict stands, unflagged."""
    analysis = _analysis(realdata_dir, "amaris-kepler-maxwell/gtx-titan.yaml")
    assert not view_covers_every_unit(analysis).any()
    row = next(r for r in build_review(analysis).group_rows()
               if r["kernel"].startswith("matMul_gpu_uncoalesced n=8192 block=16x1"))
    assert row["nsight"]["view"] == "latency" and row["verdict"] == "memory-bandwidth"
    assert not row["nsight"]["disagrees_with_verdict"] and not row["basis"].startswith("measured")


SIDE_OF = {"compute": "compute", "memory-bandwidth": "memory", "memory-latency": "latency", "parallelism": "latency",
           "synchronization": "latency"}
SPLIT_APPS = ("cudasdk_sortingNetworks", "cudasdk_FDTD3d", "cudasdk_dct8x8", "cudasdk_MCEstimatePiInlineP",
              "cudasdk_mergeSort", "cudasdk_radixSortThrust")


def test_split_vote_goes_to_the_label_on_the_measured_side(realdata_dir: Path) -> None:
    """Where the models within 2x name labels on different sides and one of them is on the side
    nvprof's counters measure (every unit's level collected), the verdict is that label, never the
    larger vote against the measurement; e.g. bitonicSortShared, hong-kim compute against the
    recommended estimate's memory-bandwidth with shared memory at 90% of peak."""
    outvoted = 0
    for app in SPLIT_APPS:
        analysis = _analysis(realdata_dir, f"magus-corpus/metrics_{app}.csv", f"magus-corpus/traces_{app}.csv")
        assert view_covers_every_unit(analysis).all()
        for row in build_review(analysis).group_rows():
            voted = {SIDE_OF.get(row["model_labels"].get(m["model"]), "") for m in row["models_within"]}
            view = row["nsight"]["view"]
            if view and view in voted:
                assert SIDE_OF.get(row["verdict"]) == view, (app, row["kernel"], row["basis"])
                assert not row["nsight"]["disagrees_with_verdict"]
            if "the label on the measured side" in row["basis"]:
                outvoted += 1
                assert re.search(r"over [a-z-]+ \(\d+ of \d+\)", row["basis"]), row["basis"]
    assert outvoted >= 2  # the rule changed verdicts here: a split the measurement decided


def test_bottlenecks_table_names_the_verdict_of_the_same_launches(realdata_dir: Path) -> None:
    """The per-kernel consensus (Markdown's Bottlenecks table, the workbook's Summary) follows the
    verdict's rules: a reviewer never reads "Verdict: memory-bandwidth" for a kernel in Top kernels
    and "Consensus: compute" for the same launches further down (sortingNetworks'
    bitonicSortShared1: hong-kim compute against the recommended estimate's memory-bandwidth, with
    shared memory at 90% of peak, was "compute" by the vocabulary's order)."""
    checked = 0
    for app in SPLIT_APPS:
        analysis = _analysis(realdata_dir, f"magus-corpus/metrics_{app}.csv", f"magus-corpus/traces_{app}.csv")
        review = build_review(analysis)
        summary = analysis.summary()
        rows_of = review.groups.group_of.value_counts()
        for row in review.group_rows():
            if rows_of[row["group"]] != 1:  # a group of several rows is judged on their summed time
                continue
            kernel = review.groups.group_of.index[review.groups.group_of == row["group"]][0]
            assert summary.at[kernel, "consensus_bottleneck"] == row["verdict"], (app, row["kernel"], row["basis"])
            checked += 1
    assert checked >= 10
    analysis = _analysis(realdata_dir, "magus-corpus/metrics_cudasdk_sortingNetworks.csv",
                         "magus-corpus/traces_cudasdk_sortingNetworks.csv")
    summary = analysis.summary().set_index("kernel")
    assert summary.at["bitonicSortShared1", "consensus_bottleneck"] == "memory-bandwidth"
    assert summary.at["bitonicSortShared1", "models_agreeing"] == 1  # the recommended estimate's vote


def test_recommended_line_names_its_dominant_term(realdata_dir: Path) -> None:
    """bitonicSortShared runs shared memory at 90% of peak: the recommended estimate's line in the
    Markdown says which of its bounds set the time (its state's first clause), not just the label."""
    from nvperf_bridge.reports.markdown import render_markdown

    analysis = _analysis(realdata_dir, "magus-corpus/metrics_cudasdk_sortingNetworks.csv",
                         "magus-corpus/traces_cudasdk_sortingNetworks.csv")
    row = next(r for r in build_review(analysis).group_rows() if r["kernel"] == "bitonicSortShared")
    assert row["model_states"]["recommended"].startswith("dominant term: shared")
    text = render_markdown(analysis)
    assert re.search(r"Recommended estimate \(recommended\): .*memory-bandwidth \(dominant term: shared\)\.", text)


def test_no_model_within_2x_takes_the_measured_side_dct8x8(realdata_dir: Path) -> None:
    """dct8x8's first DCT kernel: every model that names a bottleneck is off by more than 2x (hong-kim
    2.6x under ... roofline 30x under; kerr is within 2x but gives no label), so none votes; nvprof's
    levels put both sides under 60% of peak. The verdict reads the measurement instead of 'unknown',
    and the basis still names the models left out and how far off they are."""
    analysis = _analysis(realdata_dir, "magus-corpus/metrics_cudasdk_dct8x8.csv",
                         "magus-corpus/traces_cudasdk_dct8x8.csv")
    row = next(r for r in build_review(analysis).group_rows() if r["kernel"] == "CUDAkernel1DCT")
    assert all(row["model_labels"][m["model"]] == "unknown" for m in row["models_within"])
    assert len(row["models_off"]) >= 5
    assert row["nsight"]["view"] == "latency" and SIDE_OF[row["verdict"]] == "latency"
    assert row["basis"].startswith("measured, not voted")
    assert all(re.search(rf"{m['model']} \d+(\.\d)?x (over|under)", row["basis"]) for m in row["models_off"])


def test_measured_label_for_each_view() -> None:
    assert measured_label("memory", 0.1, 0.8, ["compute"], {}) == "memory-bandwidth"
    assert measured_label("compute", 0.8, 0.1, [], {}) == "compute"
    # latency: the models' latency-side label when they gave one, else by the busier side
    assert measured_label("latency", 0.2, 0.3, ["memory-bandwidth", "parallelism"], {}) == "parallelism"
    assert measured_label("latency", 0.2, 0.3, ["compute"], {"a": "synchronization"}) == "synchronization"
    assert measured_label("latency", 0.2, 0.3, ["memory-bandwidth"], {"a": "memory-bandwidth"}) == "memory-latency"
    assert measured_label("latency", 0.4, 0.1, ["compute"], {"a": "compute"}) == "parallelism"


def test_nsight_side_and_disagreement_flag() -> None:
    assert nsight_side(0.85, 0.30) == "compute"
    assert nsight_side(0.20, 0.70) == "memory"
    assert nsight_side(0.20, 0.30) == "latency"
    assert nsight_side(float("nan"), float("nan")) == ""


def test_verdict_disagreeing_with_the_counters_is_flagged(realdata_dir: Path) -> None:
    """nvprof has no SOL: DRAM bytes / time / peak and issue-slot use stand in, labelled derived;
    a compute verdict on a kernel at a few % of peak issue is flagged."""
    analysis = _analysis(realdata_dir, *LUD)
    _, _, source = speed_of_light(analysis)
    assert source.startswith("derived from nvprof counters")
    for row in build_review(analysis).group_rows():
        side = {"compute": "compute", "memory-bandwidth": "memory"}.get(row["verdict"], "")
        expected = bool(side and row["nsight"]["view"] and side != row["nsight"]["view"])
        assert row["nsight"]["disagrees_with_verdict"] is expected


def test_advice_cites_the_kernels_numbers(realdata_dir: Path) -> None:
    analysis = _analysis(realdata_dir, *LUD)
    compute, memory, _ = speed_of_light(analysis)
    quantities = row_quantities(analysis, compute, memory)
    internal = analysis.kernels.index[analysis.kernels["kernel"] == "lud_internal"][0]
    # a 16x16 tile: each warp reads two 64-byte row pieces = 4 sectors per request (nvprof's
    # 8 gld_transactions per request are 16-byte pieces on Pascal, counters.global_sectors)
    assert quantities.at[internal, "load_sectors_per_request"] == pytest.approx(4.0, rel=0.01)
    review = build_review(analysis)
    for row in review.group_rows():
        assert 1 <= len(row["advice"]) <= 3
        for item in row["advice"]:
            assert re.search(r"\d", item["text"]), item["text"]  # the kernel's own numbers
            assert item["reads"], "every rule names the counters it reads"
    diagonal = next(r for r in review.group_rows() if r["kernel"] == "lud_diagonal")
    assert any(a["rule"] == "small-grid" and "1 blocks for 28 SMs" in a["text"] for a in diagonal["advice"])


def test_rules_table_names_counters_and_thresholds() -> None:
    rules = load_rules()
    assert len(rules) >= 8
    assert len({r.id for r in rules}) == len(rules)
    for rule in rules:
        assert rule.op in ("<", "<=", ">", ">=") and rule.reads and rule.action and "{" in rule.message


@pytest.mark.parametrize("name", B200)
def test_b200_default_sections_are_loud_with_the_command(realdata_dir: Path, name: str) -> None:
    """ncu default-ish raw page on a B200: no model can predict; the report says what is missing,
    per model, and prints the ncu command that collects it; never 'Warnings: None'."""
    from nvperf_bridge.reports.markdown import render_markdown

    analysis = _analysis(realdata_dir, name)
    review = build_review(analysis)
    assert len(review.unpredicted) == len(review.groups.table)
    for item in review.unpredicted:
        assert item["missing"] and all(item["missing"].values())
        assert item["command"].startswith("ncu --section SpeedOfLight --section Occupancy --metrics ")
        assert "smsp__inst_executed.sum" in item["command"] and "dram__bytes.sum" in item["command"]
    for line in review.coverage:
        assert line["predicted"] + line["not_predicted"] == len(analysis.kernels)
        if line["predicted"] == 0:
            assert line["reason"]
    groups = len(review.groups.table)
    assert review.warnings and review.warnings[0].startswith(f"no model predicted {groups} of {groups} kernel group")
    assert "(100% of the GPU time)" in review.warnings[0]
    text = render_markdown(analysis)
    assert "## Warnings\n\nNone." not in text
    assert text.index("## Where the time goes") < text.index("## Summary")
    assert review.unpredicted[0]["command"] in text


def test_nvprof_trace_gets_an_nvprof_command(realdata_dir: Path) -> None:
    review = build_review(_analysis(realdata_dir, TRACE))
    commands = {u["command"] for u in review.unpredicted}
    assert len(commands) == 1
    command = commands.pop()
    assert command.startswith("nvprof --metrics inst_executed,")
    assert "dram_read_transactions" in command and "ncu" not in command


def test_json_review_leads_with_groups_of_the_14k_trace(realdata_dir: Path) -> None:
    from nvperf_bridge.reports.json_report import render_json

    analysis = _analysis(realdata_dir, TRACE)
    document = json.loads(render_json(analysis))
    review = document["review"]
    assert list(document).index("review") < list(document).index("kernels")
    assert review["groups_total"] == 4
    assert [g["kernel"] for g in review["groups"][:2]] == ["cuda_compute_flux", "cuda_time_step"]
    assert [g["top"] for g in review["groups"]] == [True, True, False, False]
    assert sum(g["launches"] for g in review["groups"]) == 14003
    assert review["groups"][0]["unpredicted"]["command"].startswith("nvprof --metrics")
    assert review == json.loads(json.dumps(review_dict(build_review(analysis))))


def test_rtx5090_top_group_has_verdict_view_and_advice(realdata_dir: Path) -> None:
    analysis = _analysis(realdata_dir, RTX5090, gpu="rtx-5090")
    row = build_review(analysis).group_rows()[0]
    assert row["top"] and row["share"] == pytest.approx(1.0)
    assert row["nsight"]["view"] == "latency"
    assert row["basis"]
    assert any("achieved occupancy" in a["text"] and "limited by registers" in a["text"] for a in row["advice"])
    # Nsight's own rule results from the details page, largest estimated speedup first
    rules = row["nsight_rules"]
    assert rules[0]["rule"] == "IssueSlotUtilization" and rules[0]["estimated_speedup"] == pytest.approx(61.96)
    assert {"SOLBottleneck", "TheoreticalOccupancy"} <= {r["rule"] for r in rules}
    assert all(r["message"] and r["type"] for r in rules)


def test_rule_column_a_layout_lacks_reads_as_empty_not_nan(realdata_dir: Path) -> None:
    """A details layout without "Section Name" or "Rule Type" leaves NaN in that rules column: the review
    shows an empty section, never the word "nan"."""
    analysis = _analysis(realdata_dir, RTX5090, gpu="rtx-5090")
    analysis.rules["section"] = np.nan
    analysis.rules["type"] = np.nan
    rules = build_review(analysis).group_rows()[0]["nsight_rules"]
    assert rules and rules[0]["rule"] == "IssueSlotUtilization"
    assert {r["section"] for r in rules} == {""} and {r["type"] for r in rules} == {""}


def test_unmeasured_kernels_vote_with_validated_accuracy(realdata_dir: Path) -> None:
    """Metrics without a trace on the calibrated GTX 1080 Ti profile: no measured time, so each model
    votes with its held-out accuracy from the profile's calibration record."""
    from nvperf_bridge.review.verdict import validated_accuracy

    analysis = _analysis(realdata_dir, LUD[0], gpu="gtx-1080-ti-calibrated")
    weights, _ = vote_weights(analysis)
    for mid in weights.columns:
        accuracy = validated_accuracy(analysis.gpu, mid)
        voted = weights[mid][weights[mid] > 0]
        if accuracy is not None:
            assert (voted == accuracy).all()
    basis = {r["basis"] for r in build_review(analysis).group_rows()}
    assert any("weighted by validated accuracy" in b for b in basis), basis

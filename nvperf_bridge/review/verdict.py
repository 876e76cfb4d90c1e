"""A bottleneck verdict per kernel group that a reviewer can trust, beside Nsight's own view.

Who votes
    A model votes on a kernel only when it is accurate there. Where the kernel
    has a measured time: its prediction is within ``WITHIN`` (2x) of it, over or
    under. Where it has none: every model that predicted the kernel votes with
    the weight of its validated accuracy on this GPU (the profile's
    calibration record, ``calibration.models.<id>.error.cv_held_out``:
    ``mean_accuracy``, min/max of predicted and measured averaged); a model the
    profile records nothing for then weighs 1, and the basis says "unvalidated".
    'unknown' never votes. Ties go to the vocabulary's order.

Nsight's view
    Nsight Compute's speed-of-light throughputs (``sol_sm_fraction`` for compute,
    ``sol_memory_fraction`` for memory, both of peak). nvprof files have none;
    there the memory side is DRAM bytes / time / the profile's bandwidth or the
    busiest of nvprof's L2, shared and texture utilisation levels, and the compute
    side nvprof's ``issue_slot_utilization`` or its busiest function-unit level,
    labelled "derived". The view
    is "compute" or "memory" when one is at least ``SOL_BOUND`` (60%, ncu's own
    SpeedOfLight rule threshold) and above the other, "latency" when both are
    below it. The verdict and the view disagree when they name different sides
    (memory-latency, parallelism and synchronization count as the latency side).
    A latency view from DRAM bytes and issue slots alone (no unit levels) judges
    nothing: it cannot rule out an L2-, shared- or pipe-bound kernel.

When the measurement outweighs the vote
    A vote that no model earned against the measured time (no model of the group
    within 2x of a time it did not read its inputs from) is a claim nothing here
    has checked; where Nsight's view of the same launches contradicts it, the
    verdict follows the measured throughputs instead (``MEASURED_LABEL``) and the
    basis says so and names the models' overruled label. Where a model was judged
    within 2x, its vote stands and a disagreement is flagged for the reviewer. Where
    no model votes at all (none within 2x, or no label), a judging view gives the
    verdict the same way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.model import BOTTLENECKS, column_or_nan

WITHIN = 2.0  # a model votes on a kernel only when predicted/measured is within [1/WITHIN, WITHIN]
SOL_BOUND = 0.60  # ncu SpeedOfLight rule: under 60% of peak on both sides is a latency problem

# Which side of Nsight's speed-of-light view each bottleneck label is on.
_SIDE = {"compute": "compute", "memory-bandwidth": "memory", "memory-latency": "latency",
         "parallelism": "latency", "synchronization": "latency", "balanced": "", "unknown": ""}

# The label a measured compute or memory view gives when it decides the verdict (a latency view:
# measured_label)
MEASURED_LABEL = {"compute": "compute", "memory": "memory-bandwidth"}
# ties between labels go to the vocabulary's order
_ORDER = {label: i for i, label in enumerate(BOTTLENECKS)}


def validated_accuracy(gpu: Any, model_id: str) -> float | None:
    """The model's held-out mean accuracy (0..1) recorded by calibration in the GPU profile, if any."""
    raw = getattr(gpu, "raw", {}) or {}
    record = ((raw.get("calibration") or {}).get("models") or {}).get(model_id) or {}
    error = record.get("error") or {}
    for key in ("cv_held_out", "after_in_sample"):
        stats = error.get(key) or {}
        value = stats.get("mean_accuracy")
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            return float(value)
    return None


def vote_weights(analysis: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per kernel row and model: the weight of its vote (0 = does not vote) and predicted/measured.

    A row with a measured time: weight 1 when the model is within 2x, else 0.
    A row without: the model's validated accuracy on this GPU, else 1.
    A prediction that read an input derived from the measured time (DRAM bytes =
    throughput x duration) is judged as if the row had no measured time: being close to the
    time it was computed from proves nothing.
    """
    all_measured = analysis.measured_ns.where(analysis.measured_ns > 0)
    weights: dict[str, pd.Series] = {}
    ratios: dict[str, pd.Series] = {}
    for mid, run in analysis.ok_runs().items():
        result = run.result
        measured = all_measured.mask(analysis.time_derived_inputs(run))
        predicted = pd.to_numeric(result["predicted_ns"], errors="coerce").astype("float64")
        ok = predicted.notna() & (predicted > 0) & (result["error"] == "") & (result["bottleneck"] != "unknown")
        ratio = predicted / measured
        ratios[mid] = ratio
        accurate = (ratio >= 1.0 / WITHIN) & (ratio <= WITHIN)
        validated = validated_accuracy(analysis.gpu, mid)
        unmeasured_weight = validated if validated is not None else 1.0
        weight = pd.Series(np.where(measured.notna(), accurate.astype(float), unmeasured_weight), index=result.index)
        weights[mid] = weight.where(ok, 0.0)
    index = analysis.kernels.index
    return pd.DataFrame(weights, index=index), pd.DataFrame(ratios, index=index)


def weighted_consensus(labels: pd.DataFrame, weights: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per row: the label with the most vote weight, how many models voted for it, how many voted."""
    index = labels.index
    if labels.shape[1] == 0:
        zero = pd.Series(0, index=index)
        return pd.Series("unknown", index=index), zero, zero
    voting = weights > 0
    totals = pd.DataFrame({label: (weights.where(labels == label, 0.0)).sum(axis=1)
                           for label in BOTTLENECKS if label != "unknown"}, index=index)
    counts = pd.DataFrame({label: ((labels == label) & voting).sum(axis=1)
                           for label in BOTTLENECKS if label != "unknown"}, index=index)
    best = totals.idxmax(axis=1)
    best[totals.max(axis=1) <= 0] = "unknown"
    # the winner's count on each row, read by position (a label lookup per row took seconds at 100k kernels)
    column = counts.columns.get_indexer(best.to_numpy())  # -1 for "unknown": no count
    picked = counts.to_numpy()[np.arange(len(index)), np.maximum(column, 0)]
    agree = pd.Series(np.where(column >= 0, picked, 0), index=index)
    return best, agree.astype(int), voting.sum(axis=1).astype(int)


def speed_of_light(analysis: Any) -> tuple[pd.Series, pd.Series, str]:
    """Per row: compute and memory throughput as fractions of peak, and where they came from."""
    kernels = analysis.kernels
    compute = column_or_nan(kernels, "sol_sm_fraction")
    memory = column_or_nan(kernels, "sol_memory_fraction")
    if compute.notna().any() or memory.notna().any():
        return compute, memory, "Nsight Compute speed of light"
    duration = analysis.measured_ns.where(analysis.measured_ns > 0)
    dram = column_or_nan(kernels, "dram_bytes")
    dram = dram.fillna(column_or_nan(kernels, "dram_read_bytes") + column_or_nan(kernels, "dram_write_bytes"))
    memory = dram / (duration * 1e-9) / analysis.row_gpu_value("memory_bandwidth_bytes_per_s")
    compute = column_or_nan(kernels, "issue_slot_utilization")
    # Nsight's speed of light is the busiest unit of each side; nvprof's utilisation levels of the
    # other units stand in for theirs (an L2- or shared-bound kernel is memory-bound with DRAM idle)
    memory_levels = _busiest(kernels, NVPROF_MEMORY_LEVELS)
    compute_levels = _busiest(kernels, NVPROF_COMPUTE_LEVELS)
    memory = pd.concat([memory, memory_levels], axis=1).max(axis=1)  # NaN only where both are
    compute = pd.concat([compute, compute_levels], axis=1).max(axis=1)
    if compute.notna().any() or memory.notna().any():
        source = "derived from nvprof counters (DRAM bytes / time / peak; issue-slot utilization"
        if memory_levels.notna().any() or compute_levels.notna().any():
            source += "; the busiest unit's utilization level"
        return compute, memory, source + ")"
    return compute, memory, ""


# nvprof's utilisation levels (0 idle .. 10 max; the importer makes "Low (2)" 0.2 of peak), per side.
# DRAM's level is left out: DRAM bytes / time / peak says the same more finely.
NVPROF_MEMORY_LEVELS = ("sol_l2_fraction", "sol_l1tex_fraction", "shared_utilization")
NVPROF_COMPUTE_LEVELS = ("single_precision_fu_utilization", "double_precision_fu_utilization",
                         "half_precision_fu_utilization", "special_fu_utilization", "ldst_fu_utilization",
                         "cf_fu_utilization")


def view_covers_every_unit(analysis: Any) -> pd.Series:
    """Per row: whether both sides of the view read every unit, as Nsight's speed of light does.

    nvprof's DRAM bytes and issue slots alone are lower bounds of the busiest unit: with L2, shared
    and pipe levels not collected, "below 60% on both sides" cannot rule out an L2-, shared- or
    FP64-pipe-bound kernel, so such a latency view neither picks nor overrules a label nor flags one.
    """
    kernels = analysis.kernels
    nsight = column_or_nan(kernels, "sol_memory_fraction").notna() | column_or_nan(kernels, "sol_sm_fraction").notna()
    return nsight | (_busiest(kernels, NVPROF_MEMORY_LEVELS).notna() & _busiest(kernels, NVPROF_COMPUTE_LEVELS).notna())


def _busiest(kernels: pd.DataFrame, names: tuple[str, ...]) -> pd.Series:
    """Per row: the highest of the named fractions of peak (NaN where the file has none of them)."""
    present = [kernels[name] for name in names if name in kernels.columns]
    if not present:
        return pd.Series(np.nan, index=kernels.index)
    return pd.concat([pd.to_numeric(c, errors="coerce") for c in present], axis=1).max(axis=1)


def nsight_side(compute: float, memory: float) -> str:
    """'compute', 'memory', 'latency' or '' (nothing measured), from two fractions of peak."""
    values = [v for v in (compute, memory) if v is not None and math.isfinite(v)]
    if not values:
        return ""
    c = compute if compute is not None and math.isfinite(compute) else -1.0
    m = memory if memory is not None and math.isfinite(memory) else -1.0
    if max(c, m) < SOL_BOUND:
        return "latency"
    return "compute" if c > m else "memory"


def measured_label(view: str, compute: float, memory: float, ranked: list[str],
                   model_labels: dict[str, str]) -> str:
    """The bottleneck label of a measured view ('compute', 'memory', 'latency') that decides the verdict.

    'latency' takes the latency-side label the models weighted most (``ranked``: their votes, most
    weight first; then their labels), else memory-latency where the memory side is the busier one (a
    memory-bound kernel with every unit under 60% of peak waits on memory latency), else parallelism
    (too few warps issue to hide their own latency).
    """
    if view in MEASURED_LABEL:
        return MEASURED_LABEL[view]
    voted = [lab for lab in ranked if _SIDE.get(lab) == "latency"]
    if voted:
        return voted[0]
    labelled = [lab for lab in model_labels.values() if _SIDE.get(lab) == "latency"]
    if labelled:
        return max(sorted(set(labelled), key=lambda lab: _ORDER.get(lab, 99)), key=labelled.count)
    m = memory if math.isfinite(memory) else -1.0
    c = compute if math.isfinite(compute) else -1.0
    return "memory-latency" if m >= c else "parallelism"


def _percent(fraction: float) -> str:
    return f"{fraction:.0%}" if math.isfinite(fraction) else "not measured"


def _weighted_mean(values: np.ndarray, weight: np.ndarray) -> float:
    ok = ~np.isnan(values) & ~np.isnan(weight)
    if not ok.any():
        return float("nan")
    w = weight[ok]
    if float(w.sum()) <= 0:
        return float(values[ok].mean())
    return float((values[ok] * w).sum() / w.sum())


def group_verdicts(analysis: Any, groups: Any, limit: int | None = None) -> pd.DataFrame:
    """One row per kernel group (``groups.table`` order, the first ``limit`` groups when given):
    the verdict and what it rests on.

    Columns: ``verdict``, ``agreeing``, ``voting``, ``basis`` (one sentence), ``accurate`` /
    ``off`` (lists of (model id, predicted/measured) for the group), ``model_labels``
    (model id -> label), ``model_states`` (model id -> its own state text on the group's longest
    row), ``sol_compute``, ``sol_memory``, ``sol_source``, ``nsight_view``,
    ``disagree``.
    """
    weights, ratios = vote_weights(analysis)
    runs = analysis.ok_runs()
    labels = pd.DataFrame({mid: run.result["bottleneck"].astype(str) for mid, run in runs.items()},
                          index=analysis.kernels.index)
    predicted = pd.DataFrame({mid: pd.to_numeric(run.result["predicted_ns"], errors="coerce")
                              for mid, run in runs.items()}, index=analysis.kernels.index)
    launches = column_or_nan(analysis.kernels, "invocations").fillna(1.0).clip(lower=1.0)
    measured = analysis.measured_ns.where(analysis.measured_ns > 0)
    compute, memory, sol_source = speed_of_light(analysis)
    covered = view_covers_every_unit(analysis).to_numpy(dtype=bool)
    row_time = (measured * launches).fillna(launches)
    code = groups.group_of.to_numpy()
    # the loop below reads plain arrays by position (a label lookup per group and model on a large
    # frame cost seconds for 100 groups); the sums and group-bys are the same operations as before
    meas, lau, rt = (s.to_numpy(dtype="float64") for s in (measured, launches, row_time))
    comp, mem = compute.to_numpy(dtype="float64"), memory.to_numpy(dtype="float64")
    w_of = {mid: weights[mid].to_numpy(dtype="float64") for mid in runs}
    lab_of = {mid: labels[mid].to_numpy(dtype=object) for mid in runs}
    pred_of = {mid: predicted[mid].to_numpy(dtype="float64") for mid in runs}
    state_of = {mid: (run.result["state"] if "state" in run.result else pd.Series("", index=run.result.index))
                for mid, run in runs.items()}
    # where a model's required input was derived from the measured time, its prediction is not
    # compared with that time (vote_weights masks the same rows)
    leak_of = {mid: analysis.time_derived_inputs(run).to_numpy(dtype=bool) for mid, run in runs.items()}
    out = []
    for group in groups.table["group"][:limit]:
        at = np.flatnonzero(code == group)
        tally: dict[str, float] = {}
        count: dict[str, int] = {}
        accurate, off, model_labels, from_time = [], [], {}, []
        model_states: dict[str, str] = {}
        m_g, l_g, rt_g = meas[at], lau[at], rt[at]
        has_measured = bool((~np.isnan(m_g)).any())
        for mid in runs:
            w, lab, pred = w_of[mid][at], lab_of[mid][at], pred_of[mid][at]
            has_pred = ~np.isnan(pred)
            leaked = leak_of[mid][at]
            if (has_pred & leaked).any():
                from_time.append(mid)
            both = has_pred & ~np.isnan(m_g) & ~leaked
            if both.any():
                ratio = float((pred[both] * l_g[both]).sum() / (m_g[both] * l_g[both]).sum())
                (accurate if 1.0 / WITHIN <= ratio <= WITHIN else off).append((mid, ratio))
            if not has_pred.any():
                continue
            # the model's label for the group: the one covering most of the group's time
            by_label = pd.Series(rt_g[has_pred]).groupby(lab[has_pred]).sum()
            model_labels[mid] = str(by_label.idxmax())
            # and its own state (the paper's label, the recommended estimate's dominant term) on the longest row
            longest = at[np.flatnonzero(has_pred)[np.argmax(rt_g[has_pred])]]
            state = state_of[mid].iloc[longest]
            model_states[mid] = "" if pd.isna(state) else str(state)
            voted = (w > 0)
            if not voted.any():
                continue
            vote = pd.Series(rt_g[voted]).groupby(lab[voted]).sum()
            label = str(vote.idxmax())
            tally[label] = tally.get(label, 0.0) + float(w[voted].mean())
            count[label] = count.get(label, 0) + 1
        voting = sum(count.values())
        c = _weighted_mean(comp[at], rt_g)
        m = _weighted_mean(mem[at], rt_g)
        view = nsight_side(c, m)
        # the view that may judge the vote: a latency view only where every unit was read
        judging = view if view != "latency" or covered[at].any() else ""
        ranked = sorted(tally, key=lambda lab: (-tally[lab], _ORDER.get(lab, 99)))
        verdict = ranked[0] if ranked else "unknown"
        basis = _basis(verdict, count.get(verdict, 0), voting, has_measured, accurate, off, model_labels,
                       analysis, from_time)
        on_view = [lab for lab in ranked if judging and _SIDE.get(lab) == judging]
        if on_view and _SIDE.get(verdict, "") != judging:
            # the voting models split, and the measurement sides with the fewer: take theirs
            outvoted, verdict = verdict, on_view[0]
            rest = basis[basis.index(";"):] if ";" in basis else ""  # what the vote rests on, as before
            basis = (f"{count.get(verdict, 0)} of {voting} voting models, the label on the measured side ({view}: "
                     f"compute {_percent(c)}, memory {_percent(m)} of peak) over {outvoted} "
                     f"({count.get(outvoted, 0)} of {voting})") + rest
        side = _SIDE.get(verdict, "")
        disagree = bool(judging and side and judging != side)
        measured = (f"measured, not voted: {sol_source} puts compute at {_percent(c)} and memory at {_percent(m)} "
                    f"of peak")
        # the models judged within 2x of the measured time that name a bottleneck (kerr may be close, unlabelled)
        judged = [mid for mid, _ in accurate if model_labels.get(mid, "unknown") != "unknown"]
        if disagree and not judged:  # nothing measured backs the vote, and the measurement says otherwise
            overruled = verdict
            verdict = measured_label(view, c, m, ranked, model_labels)
            basis = (f"{measured}, against the models' {overruled}, which no model earned against the measured "
                     f"time ({basis})")
            disagree = False
        elif verdict == "unknown" and judging:  # no model can say, the measurement can
            verdict = measured_label(judging, c, m, ranked, model_labels)
            basis = f"{measured}; {basis}"
        out.append({
            "group": int(group), "verdict": verdict, "agreeing": count.get(verdict, 0), "voting": voting,
            "basis": basis,
            "accurate": accurate, "off": off, "model_labels": model_labels, "model_states": model_states,
            "sol_compute": c, "sol_memory": m, "sol_source": sol_source if (math.isfinite(c) or math.isfinite(m))
            else "", "nsight_view": view, "disagree": disagree,
        })
    return pd.DataFrame(out, columns=["group", "verdict", "agreeing", "voting", "basis", "accurate", "off",
                                      "model_labels", "model_states", "sol_compute", "sol_memory", "sol_source",
                                      "nsight_view",
                                      "disagree"])


def _basis(verdict: str, agreeing: int, voting: int, has_measured: bool, accurate: list, off: list,
           model_labels: dict, analysis: Any, from_time: list | None = None) -> str:
    """One sentence: which models the verdict rests on and which were left out and why
    (``from_time``: models whose inputs here were derived from the measured time)."""
    text = _basis_text(verdict, agreeing, voting, has_measured, accurate, off, model_labels, analysis)
    if from_time and model_labels:
        text += (f"; {', '.join(from_time)} read inputs derived from the measured time (throughput x duration): "
                 f"not judged against it, weighted as without a time")
    return text


def _basis_text(verdict: str, agreeing: int, voting: int, has_measured: bool, accurate: list, off: list,
                model_labels: dict, analysis: Any) -> str:
    if not model_labels:
        return "no model predicted this kernel"
    if verdict == "unknown":
        if has_measured and off:
            worst = ", ".join(f"{mid} {_ratio_text(r)}" for mid, r in off)
            return f"no model is within {WITHIN:g}x of the measured time ({worst})"
        if accurate:
            named = ", ".join(mid for mid, _ in accurate)
            return f"the model{'s' if len(accurate) != 1 else ''} within {WITHIN:g}x ({named}) give{'s' if len(accurate) == 1 else ''} no bottleneck label"
        return "no model gave a bottleneck label"
    parts = [f"{agreeing} of {voting} voting model{'s' if voting != 1 else ''}"]
    if has_measured:
        if accurate:  # models judged against the time (the others: left out, or time-derived inputs)
            parts.append(f"within {WITHIN:g}x of the measured time")
        if off:
            parts.append("left out: " + ", ".join(f"{mid} {_ratio_text(r)}" for mid, r in off))
    else:
        validated = [mid for mid in model_labels if validated_accuracy(analysis.gpu, mid) is not None]
        parts.append("no measured time: weighted by validated accuracy on this GPU" if validated
                     else "no measured time and no validated accuracy on this GPU: unvalidated")
    return "; ".join(parts)


def _ratio_text(ratio: float) -> str:
    """'3.4x over' / '2.5x under'."""
    if not math.isfinite(ratio) or ratio <= 0:
        return "(no ratio)"
    return f"{ratio:.1f}x over" if ratio >= 1 else f"{1 / ratio:.1f}x under"


__all__ = ["MEASURED_LABEL", "SOL_BOUND", "WITHIN", "group_verdicts", "measured_label", "nsight_side",
           "speed_of_light", "validated_accuracy", "view_covers_every_unit",
           "vote_weights", "weighted_consensus"]

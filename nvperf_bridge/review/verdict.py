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
    that names a bottleneck within 2x of a time it did not read its inputs from) is a claim nothing here
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

from nvperf_bridge.model import BOTTLENECKS, column_or_nan, without_reason

WITHIN = 2.0  # a model votes on a kernel only when predicted/measured is within [1/WITHIN, WITHIN]
SOL_BOUND = 0.60  # ncu SpeedOfLight rule: under 60% of peak on both sides is a latency problem

# Which side of Nsight's speed-of-light view each bottleneck label is on.
_SIDE = {"compute": "compute", "memory-bandwidth": "memory", "memory-latency": "latency",
         "parallelism": "latency", "synchronization": "latency", "balanced": "", "unknown": ""}

# The label a measured compute or memory view gives when it decides the verdict (a latency view:
# measured_label)
MEASURED_LABEL = {"compute": "compute", "memory": "memory-bandwidth"}
# the labels that vote, in the vocabulary's order (ties between labels go to it)
_VOTED: tuple[str, ...] = tuple(label for label in BOTTLENECKS if label != "unknown")
_VOTED_ARRAY = np.array(_VOTED, dtype=object)
_SIDES_OF_VOTED = np.array([_SIDE[label] for label in _VOTED], dtype=object)


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


def vote_weights(analysis: Any, time_derived: dict[str, np.ndarray] | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per kernel row and model: the weight of its vote (0 = does not vote) and predicted/measured
    (``time_derived``: each model's ``analysis.time_derived_inputs`` as a bool array, where the caller has it).

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
        derived = analysis.time_derived_inputs(run).to_numpy(dtype=bool) if time_derived is None else time_derived[mid]
        measured = all_measured.mask(derived)
        predicted = pd.to_numeric(result["predicted_ns"], errors="coerce").astype("float64")
        ok = predicted.notna() & (predicted > 0) & without_reason(result["error"]) & ~_is_unknown(result["bottleneck"])
        ratio = predicted / measured
        ratios[mid] = ratio
        accurate = (ratio >= 1.0 / WITHIN) & (ratio <= WITHIN)
        validated = validated_accuracy(analysis.gpu, mid)
        unmeasured_weight = validated if validated is not None else 1.0
        weight = pd.Series(np.where(measured.notna(), accurate.astype(float), unmeasured_weight), index=result.index)
        weights[mid] = weight.where(ok, 0.0)
    index = analysis.kernels.index
    return pd.DataFrame(weights, index=index), pd.DataFrame(ratios, index=index)


def _is_unknown(labels: pd.Series) -> np.ndarray:
    """Per row, ``labels == "unknown"``, read on the column's few distinct label objects where it refers to
    few (``labels.distinct_objects``: a model's labels), not compared row by row."""
    from nvperf_bridge.labels import distinct_objects, rows_holding

    values = labels.to_numpy(dtype=object)
    found = distinct_objects(values)
    if found is not None:
        return rows_holding(found, lambda label: isinstance(label, str) and label == "unknown")
    return np.asarray(values == "unknown", dtype=bool)


def weighted_consensus(labels: pd.DataFrame, weights: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per row, the vote alone: the label with the most vote weight, how many models voted for it,
    how many voted (``kernel_consensus`` adds what the measurement says)."""
    index = labels.index
    totals, counts = _label_votes(labels, weights)
    any_vote = totals.max(axis=1) > 0 if totals.shape[1] else np.zeros(len(index), dtype=bool)
    best = np.where(any_vote, _VOTED_ARRAY[totals.argmax(axis=1)], "unknown").astype(object)
    return (pd.Series(best, index=index), pd.Series(_count_for(counts, best), index=index),
            pd.Series(counts.sum(axis=1).astype(int), index=index))


def _label_votes(labels: pd.DataFrame, weights: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row and label (columns ``_VOTED``): the summed vote weight and how many models voted for it."""
    lab = labels.to_numpy(dtype=object)
    w = weights.reindex(columns=labels.columns).to_numpy(dtype="float64")
    voting = w > 0
    totals = np.column_stack([np.where(lab == label, w, 0.0).sum(axis=1) for label in _VOTED])
    counts = np.column_stack([((lab == label) & voting).sum(axis=1) for label in _VOTED])
    return totals, counts


def kernel_consensus(analysis: Any) -> pd.DataFrame:
    """Per kernel row: the consensus bottleneck by the same rules as the review's group verdicts
    (``decide``: the vote of the models within 2x, a split vote going to the measured side, a vote
    nothing checked yielding to a contradicting measurement), so that the Bottlenecks table never
    names another label than the verdict of the same launches. Columns ``consensus``,
    ``agreeing``, ``voting``, ``rule``."""
    index = analysis.kernels.index
    totals, counts, labelled, judged = _kernel_votes(analysis)
    compute, memory, _ = speed_of_light(analysis)
    decided = decide(totals, counts, labelled, judged, compute.to_numpy(dtype="float64"),
                     memory.to_numpy(dtype="float64"), view_covers_every_unit(analysis).to_numpy(dtype=bool))
    return pd.DataFrame({"consensus": decided["verdict"].to_numpy(), "agreeing": decided["agreeing"].to_numpy(),
                         "voting": decided["voting"].to_numpy(), "rule": decided["rule"].to_numpy()}, index=index)


def _kernel_votes(analysis: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``decide``'s vote inputs per kernel row: ``totals``, ``counts``, ``labelled`` and ``judged``.
    A function of its own so that the per-model frames it reads (labels, predictions, weights: about
    35 MiB at 100k kernels and 7 models) are gone before ``decide`` makes its own temporaries."""
    index = analysis.kernels.index
    runs = analysis.ok_runs()
    if not runs:
        empty = np.zeros((len(index), len(_VOTED)))
        return empty, empty.astype(int), empty.copy(), np.zeros(len(index), dtype=bool)
    weights, ratios = vote_weights(analysis)
    labels = pd.DataFrame({mid: run.result["bottleneck"].astype(str) for mid, run in runs.items()}, index=index)
    predicted = pd.DataFrame({mid: pd.to_numeric(run.result["predicted_ns"], errors="coerce")
                              for mid, run in runs.items()}, index=index)
    totals, counts = _label_votes(labels, weights)
    # the models that name a label on the row (voting or not), and whether one was judged against the time
    named = labels.where(predicted.notna())
    labelled = np.column_stack([(named == label).sum(axis=1).to_numpy() for label in _VOTED])
    judged = ((weights > 0) & ratios.notna()).any(axis=1).to_numpy(dtype=bool)
    return totals, counts, labelled.astype("float64"), judged


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


def nsight_rows(kernels: pd.DataFrame) -> pd.Series:
    """Per row: does it carry Nsight Compute's speed-of-light sections (SM or memory % of peak)?"""
    return column_or_nan(kernels, "sol_memory_fraction").notna() | column_or_nan(kernels, "sol_sm_fraction").notna()


def view_covers_every_unit(analysis: Any) -> pd.Series:
    """Per row: whether both sides of the view read every unit, as Nsight's speed of light does.

    nvprof's DRAM bytes and issue slots alone are lower bounds of the busiest unit: with L2, shared
    and pipe levels not collected, "below 60% on both sides" cannot rule out an L2-, shared- or
    FP64-pipe-bound kernel, so such a latency view neither picks nor overrules a label nor flags one.
    """
    kernels = analysis.kernels
    nsight = nsight_rows(kernels)
    return nsight | (_busiest(kernels, NVPROF_MEMORY_LEVELS).notna() & _busiest(kernels, NVPROF_COMPUTE_LEVELS).notna())


def _busiest(kernels: pd.DataFrame, names: tuple[str, ...]) -> pd.Series:
    """Per row: the highest of the named fractions of peak (NaN where the file has none of them)."""
    present = [kernels[name] for name in names if name in kernels.columns]
    if not present:
        return pd.Series(np.nan, index=kernels.index)
    return pd.concat([pd.to_numeric(c, errors="coerce") for c in present], axis=1).max(axis=1)


def nsight_side(compute: float, memory: float) -> str:
    """'compute', 'memory', 'latency' or '' (nothing measured), from two fractions of peak."""
    return str(nsight_sides(np.array([compute], dtype="float64"), np.array([memory], dtype="float64"))[0])


def nsight_sides(compute: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """Per row: 'compute' or 'memory' where the busier side is at least ``SOL_BOUND`` of peak,
    'latency' where both are below it, '' where neither was measured."""
    c, m = _measured_or_below(compute), _measured_or_below(memory)
    side = np.where(np.maximum(c, m) < SOL_BOUND, "latency", np.where(c > m, "compute", "memory"))
    return np.where(~np.isfinite(compute) & ~np.isfinite(memory), "", side).astype(object)


def _measured_or_below(fraction: np.ndarray) -> np.ndarray:
    """The fractions of peak with -1 where nothing finite was measured (NaN, or inf from a zero peak)."""
    return np.where(np.isfinite(fraction), fraction, -1.0)


def measured_label(view: str, compute: float, memory: float, ranked: list[str],
                   model_labels: dict[str, str]) -> str:
    """The bottleneck label of a measured view ('compute', 'memory', 'latency') that decides the verdict.

    'latency' takes the latency-side label the models weighted most (``ranked``: their votes, most
    weight first; then their labels), else memory-latency where the memory side is the busier one (a
    memory-bound kernel with every unit under 60% of peak waits on memory latency), else parallelism
    (too few warps issue to hide their own latency). One row of ``_measured_labels``.
    """
    totals = np.array([[float(len(ranked) - ranked.index(lab)) if lab in ranked else 0.0 for lab in _VOTED]])
    named = list(model_labels.values())
    labelled = np.array([[float(named.count(lab)) for lab in _VOTED]])
    return str(_measured_labels(np.array([view], dtype=object), np.array([compute], dtype="float64"),
                                np.array([memory], dtype="float64"), totals, labelled)[0])


def _measured_labels(view: np.ndarray, compute: np.ndarray, memory: np.ndarray, totals: np.ndarray,
                     labelled: np.ndarray) -> np.ndarray:
    """Per row: ``measured_label``'s label for each row's view, from the vote weight per label
    (``totals``, columns ``_VOTED``) and how many models name each label (``labelled``)."""
    latency = _SIDES_OF_VOTED == "latency"
    voted = np.where(latency, totals, 0.0)
    named = np.where(latency, labelled, 0.0)
    fallback = np.where(_measured_or_below(memory) >= _measured_or_below(compute), "memory-latency", "parallelism")
    # argmax takes the first of equal values: ties go to the vocabulary's order, as in the vote
    on_latency = np.where(voted.max(axis=1) > 0, _VOTED_ARRAY[voted.argmax(axis=1)],
                          np.where(named.max(axis=1) > 0, _VOTED_ARRAY[named.argmax(axis=1)], fallback))
    return np.where(view == "latency", on_latency,
                    np.where(view == "compute", MEASURED_LABEL["compute"], MEASURED_LABEL["memory"])).astype(object)


# The rule that gave a verdict (``decide``'s ``rule`` column)
RULE_VOTE = "vote"  # the label with the most vote weight (or "unknown": no vote and no judging view)
RULE_MEASURED_SIDE = "measured-side"  # a split vote: the label on the measured side over a larger vote
RULE_NOT_VOTED = "measured-not-voted"  # no model earned the vote against the time, and the view contradicts it
RULE_NO_VOTE = "measured-no-vote"  # no model voted; a judging view gives the label


def decide(totals: np.ndarray, counts: np.ndarray, labelled: np.ndarray, judged: np.ndarray,
           compute: np.ndarray, memory: np.ndarray, covered: np.ndarray) -> pd.DataFrame:
    """Per row (a kernel, or a kernel group): the bottleneck verdict and the rule that gave it.

    The one set of rules behind the review's group verdicts and the Bottlenecks table's
    per-kernel consensus, so that the two never contradict each other. Inputs are arrays
    with one row per kernel or group; the label columns are ``_VOTED`` (the vocabulary
    without 'unknown', in its order):

    - ``totals``: the vote weight each label got; ``counts``: how many models voted for it;
      ``labelled``: how many models name it, voting or not;
    - ``judged``: a model judged within 2x of a measured time it did not read its inputs
      from names a bottleneck (its vote was checked against the measurement);
    - ``compute``, ``memory``: the measured view's fractions of peak (NaN: not measured);
      ``covered``: the view read every unit (``view_covers_every_unit``).

    Columns: ``verdict``, ``voted`` (the vote's own winner), ``rule`` (``RULE_*``),
    ``agreeing`` / ``voted_agreeing`` (models that voted for the verdict / the vote's winner), ``voting``,
    ``view`` (``nsight_sides``),
    ``judging`` (the view where it may judge: a latency view only where every unit was read),
    ``disagree`` (a vote checked against the time stands against the view).
    """
    view = nsight_sides(compute, memory)
    judging = np.where((view != "latency") | covered, view, "").astype(object)
    any_vote = totals.max(axis=1) > 0 if totals.shape[1] else np.zeros(len(view), dtype=bool)
    voted = np.where(any_vote, _VOTED_ARRAY[totals.argmax(axis=1)], "unknown").astype(object)
    verdict = voted.copy()
    rule = np.full(len(view), RULE_VOTE, dtype=object)
    # a split vote: where the measured side has a voted label and the winner is not on it, take that label
    for side in ("compute", "memory", "latency"):
        on_side = np.where(_SIDES_OF_VOTED == side, totals, 0.0)
        split = (judging == side) & (on_side.max(axis=1) > 0) & (_side_of(verdict) != side)
        verdict[split] = _VOTED_ARRAY[on_side.argmax(axis=1)][split]
        rule[split] = RULE_MEASURED_SIDE
    side_now = _side_of(verdict)
    disagree = (judging != "") & (side_now != "") & (judging != side_now)
    from_view = _measured_labels(judging, compute, memory, totals, labelled)
    overrule = disagree & ~judged  # nothing measured backs the vote, and the measurement says otherwise
    no_vote = (verdict == "unknown") & (judging != "")  # no model can say, the measurement can
    verdict[overrule | no_vote] = from_view[overrule | no_vote]
    rule[overrule] = RULE_NOT_VOTED
    rule[no_vote] = RULE_NO_VOTE
    disagree &= ~overrule
    return pd.DataFrame({"verdict": verdict, "voted": voted, "rule": rule,
                         "agreeing": _count_for(counts, verdict), "voted_agreeing": _count_for(counts, voted),
                         "voting": counts.sum(axis=1).astype(int), "view": view, "judging": judging,
                         "disagree": disagree})


def _count_for(counts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per row: how many models voted for that row's label (0 for 'unknown')."""
    column = pd.Index(_VOTED).get_indexer(labels)  # -1 for "unknown": no count
    picked = counts[np.arange(len(labels)), np.maximum(column, 0)]
    return np.where(column >= 0, picked, 0).astype(int)


def _side_of(labels: np.ndarray) -> np.ndarray:
    """Per row: the measured side ('compute', 'memory', 'latency' or '') a label stands on."""
    return np.array([_SIDE.get(label, "") for label in labels], dtype=object)


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
    runs = analysis.ok_runs()
    # where a model's required input was derived from the measured time, its prediction is not
    # compared with that time (vote_weights masks the same rows)
    leak_of = {mid: analysis.time_derived_inputs(run).to_numpy(dtype=bool) for mid, run in runs.items()}
    weights, ratios = vote_weights(analysis, leak_of)
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
    state_of = {mid: (run.result["state"].to_numpy(dtype=object) if "state" in run.result
                      else np.full(len(run.result), "", dtype=object)) for mid, run in runs.items()}
    reviewed = groups.table["group"][:limit]
    in_review = np.isin(code, reviewed.to_numpy())
    # each model's label per group (the one covering most of the group's time among its predicted rows) and
    # its vote's label (among the rows it votes on): one group-by per model over every reviewed row instead
    # of two per group and model
    label_of = {mid: _top_labels(code, lab_of[mid], rt, in_review & ~np.isnan(pred_of[mid])) for mid in runs}
    vote_of = {mid: _top_labels(code, lab_of[mid], rt, in_review & (w_of[mid] > 0)) for mid in runs}
    out: list[dict] = []
    votes: list[tuple] = []  # per group: its vote, labels and measured view, decided together below
    for group, at in zip(reviewed, groups.positions(reviewed)):
        tally: dict[str, float] = {}
        count: dict[str, int] = {}
        accurate, off, model_labels, from_time = [], [], {}, []
        model_states: dict[str, str] = {}
        m_g, l_g, rt_g = meas[at], lau[at], rt[at]
        has_measured = bool((~np.isnan(m_g)).any())
        for mid in runs:
            w, pred = w_of[mid][at], pred_of[mid][at]
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
            model_labels[mid] = label_of[mid][group]
            # and its own state (the paper's label, the recommended estimate's dominant term) on the longest row
            longest = at[np.flatnonzero(has_pred)[np.argmax(rt_g[has_pred])]]
            state = state_of[mid][longest]
            model_states[mid] = "" if pd.isna(state) else str(state)
            voted = (w > 0)
            if not voted.any():
                continue
            label = vote_of[mid][group]
            tally[label] = tally.get(label, 0.0) + float(w[voted].mean())
            count[label] = count.get(label, 0) + 1
        judged = any(model_labels.get(mid, "unknown") != "unknown" for mid, _ in accurate)
        c, m = _weighted_mean(comp[at], rt_g), _weighted_mean(mem[at], rt_g)
        named = list(model_labels.values())
        votes.append(([tally.get(lab, 0.0) for lab in _VOTED], [count.get(lab, 0) for lab in _VOTED],
                      [named.count(lab) for lab in _VOTED], judged, c, m, bool(covered[at].any())))
        out.append({"group": int(group), "has_measured": has_measured, "accurate": accurate, "off": off,
                    "model_labels": model_labels, "model_states": model_states, "from_time": from_time,
                    "sol_compute": c, "sol_memory": m,
                    "sol_source": sol_source if (math.isfinite(c) or math.isfinite(m)) else ""})
    columns = ["group", "verdict", "agreeing", "voting", "basis", "accurate", "off", "model_labels", "model_states",
               "sol_compute", "sol_memory", "sol_source", "nsight_view", "disagree"]
    if not out:
        return pd.DataFrame(columns=columns)
    totals, counts, labelled, judged, c_of, m_of, covers = (np.array(v) for v in zip(*votes))
    decided = decide(totals.astype("float64"), counts.astype("int64"), labelled.astype("float64"),
                     judged.astype(bool), c_of.astype("float64"), m_of.astype("float64"), covers.astype(bool))
    for row, outcome in zip(out, decided.itertuples(index=False)):
        row.update(verdict=outcome.verdict, agreeing=int(outcome.agreeing), voting=int(outcome.voting),
                   nsight_view=outcome.view, disagree=bool(outcome.disagree),
                   basis=_decided_basis(outcome, row, analysis))
    return pd.DataFrame(out, columns=columns)


def _top_labels(group_of: np.ndarray, labels: np.ndarray, time: np.ndarray, rows: np.ndarray) -> dict[Any, str]:
    """Per group, the label whose ``rows`` hold most of ``time`` (the first such label in sorted order on a
    tie; rows without a label do not count), as ``pd.Series(time).groupby(labels).sum().idxmax()`` of each
    group's rows gives it: the same sums in the same row order."""
    if not rows.any():
        return {}
    codes, distinct = _sorted_codes(labels[rows])
    labelled = codes >= 0
    group_codes, group_values = pd.factorize(group_of[rows][labelled])
    # one integer key per (group, label), the labels of a group in sorted order: a group-by on one key
    # sums the same rows in the same order as one on the two columns, at half the cost
    width = max(len(distinct), 1)
    sums = pd.Series(time[rows][labelled]).groupby(group_codes.astype(np.int64) * width + codes[labelled]).sum()
    top = sums.groupby(sums.index.to_numpy() // width).idxmax()  # each group's first largest sum
    return {group_values[group]: str(distinct[key % width]) for group, key in top.items()}


def _sorted_codes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the position of its label among the distinct labels in sorted order (-1 where missing), and
    those labels: the order a group-by on the labels themselves sorts them in, found on the few distinct
    label objects (``labels.factorize_by_identity``) instead of hashing every row's text."""
    from nvperf_bridge.labels import factorize_by_identity

    found = factorize_by_identity(labels, 1024) if labels.dtype == object else None
    codes, distinct = found if found is not None else pd.factorize(labels, use_na_sentinel=True)
    order = np.argsort(np.asarray(distinct, dtype=object), kind="stable")
    rank = np.empty(len(order) + 1, dtype=np.intp)
    rank[order] = np.arange(len(order))
    rank[-1] = -1  # a missing label (code -1) stays missing
    return rank[codes], np.asarray(distinct, dtype=object)[order]


def _decided_basis(outcome: Any, group: dict, analysis: Any) -> str:
    """The verdict's one-sentence basis: what the vote rests on, and how the measurement changed it."""
    voted = outcome.voted
    agreeing_vote = int(outcome.voted_agreeing)
    basis = _basis(voted, agreeing_vote, int(outcome.voting), group["has_measured"], group["accurate"],
                   group["off"], group["model_labels"], analysis, group["from_time"])
    c, m = group["sol_compute"], group["sol_memory"]
    measured = (f"measured, not voted: {group['sol_source']} puts compute at {_percent(c)} and memory at "
                f"{_percent(m)} of peak")
    if outcome.rule == RULE_MEASURED_SIDE:  # the voting models split, and the measurement sides with the fewer
        rest = basis[basis.index(";"):] if ";" in basis else ""  # what the vote rests on, as before
        return (f"{outcome.agreeing} of {outcome.voting} voting models, the label on the measured side "
                f"({outcome.view}: compute {_percent(c)}, memory {_percent(m)} of peak) over {voted} "
                f"({agreeing_vote} of {outcome.voting})") + rest
    if outcome.rule == RULE_NOT_VOTED:
        return (f"{measured}, against the models' {voted}, which no model earned against the measured "
                f"time ({basis})")
    if outcome.rule == RULE_NO_VOTE:
        return f"{measured}; {basis}"
    return basis

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


__all__ = ["MEASURED_LABEL", "RULE_MEASURED_SIDE", "RULE_NOT_VOTED", "RULE_NO_VOTE", "RULE_VOTE", "SOL_BOUND",
           "WITHIN", "decide", "group_verdicts", "kernel_consensus", "measured_label", "nsight_side", "nsight_sides",
           "speed_of_light", "validated_accuracy", "view_covers_every_unit", "vote_weights", "weighted_consensus"]

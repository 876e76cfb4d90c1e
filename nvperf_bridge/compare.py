"""Before/after comparison of two runs: matched kernel groups, time change, bottleneck shifts, why.

``nvperf-bridge compare BEFORE... --against AFTER...`` lands here::

    from nvperf_bridge.compare import compare_files
    result = compare_files(["before.csv"], ["after.csv"])
    result.groups          # one row per matched kernel group: measured and predicted change
    result.total_change    # measured, per-launch means weighted by the before run's launch counts

Matching: each run's launches are grouped (:mod:`nvperf_bridge.review.groups`: kernel name
without its parameter list, launch shape, device); groups are paired across the runs when their
kernel names can be the same kernel (:func:`nvperf_bridge.names.match_names`: same function,
equal wherever both print template arguments or parameters; ambiguity is never guessed) and
their launch shape (grid blocks, block threads) is equal. A kernel left with exactly one
unpaired shape on each side is paired as "shape changed"; everything else is listed unmatched.

The total change compares like with like: each matched group's mean time per launch, weighted by
the number of launches it had in the *before* run (a profiling run that launched a kernel fewer
times is not "faster"). Both runs' raw totals are reported beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from nvperf_bridge.columns import CANONICAL_COLUMNS, IDENTITY_COLUMNS
from nvperf_bridge.errors import UsageError

TOP_COUNTERS = 5  # counters listed per group as "changed most"
TOP_DETAILS = 3  # model intermediate quantities listed per group as the model's "why"
# Columns that describe the launch or the measurement rather than what the kernel did.
_NOT_COUNTERS = frozenset({*IDENTITY_COLUMNS, "duration_ns", "min_duration_ns", "max_duration_ns", "grid_blocks",
                           "block_threads", "metrics_invocations", "sm_clock_hz",
                           # raw profiler columns that number or place a launch, or repeat its shape
                           "ID", "Context", "Stream", "Process ID", "Correlation_ID", "Start", "Duration",
                           "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z", "Device"})


@dataclass
class Side:
    """One run: its analysis, its kernel groups and each model's per-group view."""

    label: str  # "before" or "after"
    analysis: Any  # nvperf_bridge.analysis.Analysis
    groups: Any  # nvperf_bridge.review.groups.KernelGroups


@dataclass
class Comparison:
    before: Side
    after: Side
    pairs: pd.DataFrame  # one row per matched group pair (see _pair_groups)
    unmatched_before: pd.DataFrame  # group rows of the before run with no partner
    unmatched_after: pd.DataFrame
    groups: pd.DataFrame  # per matched pair: times, changes, per-model predictions and bottlenecks
    counters: pd.DataFrame  # per pair and counter: before, after, change (the largest changes first)
    details: pd.DataFrame  # per pair, model and intermediate quantity: before, after, change
    model_ids: list[str]
    total: dict[str, Any]  # measured and predicted totals, before/after, over the matched groups
    warnings: list[str] = field(default_factory=list)

    @property
    def total_change(self) -> float | None:
        """Measured change of the matched groups (fraction; positive = slower), None when unmeasured."""
        return self.total["measured"]["change"]


# ---- matching ----------------------------------------------------------------------------------------------

def _shape(row: pd.Series) -> tuple[float, float]:
    return (float(row["grid_blocks"]) if pd.notna(row["grid_blocks"]) else -1.0,
            float(row["block_threads"]) if pd.notna(row["block_threads"]) else -1.0)


def pair_groups(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Pair the two runs' group tables. Returns (pairs, unmatched before, unmatched after).

    ``pairs`` has ``before_group``, ``after_group``, ``name_key`` (how specifically the names
    matched) and ``match`` ('name and shape' or 'shape changed')."""
    from nvperf_bridge.names import match_names

    names = match_names(before["kernel_name"].astype(str), after["kernel_name"].astype(str))
    rows: list[dict[str, Any]] = []
    used_after: set[int] = set()
    leftover_before: dict[str, list[int]] = {}
    for b, brow in before.iterrows():
        found = names.get(str(brow["kernel_name"]))
        if found is None or found.right is None:
            continue
        candidates = after.index[(after["kernel_name"].astype(str) == found.right).to_numpy()]
        same = [a for a in candidates if a not in used_after and _shape(after.loc[a]) == _shape(brow)]
        if same:
            used_after.add(same[0])
            rows.append({"before_group": b, "after_group": same[0], "name_key": found.key, "match": "name and shape"})
        else:
            leftover_before.setdefault(found.right, []).append(b)
    for right, befores in leftover_before.items():
        free = [a for a in after.index[(after["kernel_name"].astype(str) == right).to_numpy()] if a not in used_after]
        if len(befores) == 1 and len(free) == 1:
            used_after.add(free[0])
            rows.append({"before_group": befores[0], "after_group": free[0],
                         "name_key": names[str(before.loc[befores[0], "kernel_name"])].key, "match": "shape changed"})
    pairs = pd.DataFrame(rows, columns=["before_group", "after_group", "name_key", "match"])
    matched_before = set(pairs["before_group"])
    return (pairs, before[~before.index.isin(matched_before)], after[~after.index.isin(used_after)])


# ---- per-group quantities -----------------------------------------------------------------------------------

def _weights(kernels: pd.DataFrame) -> pd.Series:
    from nvperf_bridge.review.groups import launch_times

    launches, _ = launch_times(kernels)
    return launches


def _group_mean(values: pd.Series, group_of: pd.Series, weights: pd.Series) -> pd.Series:
    """Launch-weighted mean of ``values`` per group (NaN values left out)."""
    v = pd.to_numeric(values, errors="coerce")
    w = weights.where(v.notna(), 0.0)
    num = (v.fillna(0.0) * w).groupby(group_of).sum()
    den = w.groupby(group_of).sum()
    return num / den.where(den > 0)


def _group_mode(labels: pd.Series, group_of: pd.Series, weights: pd.Series) -> pd.Series:
    """The label with the most launches per group ('' when none)."""
    frame = pd.DataFrame({"label": labels.astype(str), "group": group_of, "w": weights})
    frame = frame[frame["label"].str.len() > 0]
    if frame.empty:
        return pd.Series(dtype="object")
    sums = frame.groupby(["group", "label"])["w"].sum().reset_index()
    best = sums.sort_values(["group", "w", "label"], ascending=[True, False, True]).drop_duplicates("group")
    return best.set_index("group")["label"]


def _model_view(side: Side, mid: str) -> pd.DataFrame:
    """Per group of one run: the model's mean predicted time per launch and its bottleneck."""
    run = side.analysis.runs.get(mid)
    group_of = side.groups.group_of
    weights = _weights(side.analysis.kernels)
    if run is None or run.result is None:
        return pd.DataFrame({"predicted_ns": pd.Series(dtype="float64"), "bottleneck": pd.Series(dtype="object")})
    result = run.result
    ok = result["error"].astype(str) == ""
    predicted = pd.to_numeric(result["predicted_ns"], errors="coerce").where(ok)
    view = pd.DataFrame({"predicted_ns": _group_mean(predicted, group_of, weights),
                         "bottleneck": _group_mode(result["bottleneck"].where(ok, ""), group_of, weights)})
    view["bottleneck"] = view["bottleneck"].astype("object").where(view["bottleneck"].notna(), "")
    return view


def _counter_columns(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    shared = [c for c in a.columns if c in b.columns and c not in _NOT_COUNTERS]
    numeric = [c for c in shared if pd.api.types.is_numeric_dtype(a[c]) and pd.api.types.is_numeric_dtype(b[c])]
    # canonical counters first (what the models read), then the raw profiler counters
    return sorted(numeric, key=lambda c: (c not in CANONICAL_COLUMNS, numeric.index(c)))


def _change(before: Any, after: Any) -> float:
    """(after - before) / before; NaN when before is not positive or either is missing."""
    try:
        b, a = float(before), float(after)
    except (TypeError, ValueError):
        return float("nan")
    if not np.isfinite(b) or not np.isfinite(a) or b <= 0:
        return float("nan")
    return a / b - 1.0


def _largest_changes(before: pd.Series, after: pd.Series, top: int) -> list[tuple[str, float, float, float]]:
    """The entries whose value changed most (by |log ratio|; appearing from or dropping to zero first)."""
    b = pd.to_numeric(before, errors="coerce")
    a = pd.to_numeric(after, errors="coerce").reindex(b.index)
    both = np.isfinite(b) & np.isfinite(a) & ((b != 0) | (a != 0))
    b, a = b[both], a[both]
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.abs(np.log(np.abs(a.to_numpy()) / np.abs(b.to_numpy())))
    score = np.where(np.isfinite(score), score, np.inf)
    order = np.argsort(-score, kind="stable")
    out = []
    for i in order[:top]:
        if score[i] < 1e-9:
            break
        name = b.index[i]
        out.append((str(name), float(b.iloc[i]), float(a.iloc[i]), _change(b.iloc[i], a.iloc[i])))
    return out


def _details_mean(side: Side, mid: str) -> pd.DataFrame:
    """Per group: the launch-weighted mean of each numeric intermediate quantity of a model."""
    from nvperf_bridge.model import RESULT_COLUMNS

    run = side.analysis.runs.get(mid)
    if run is None or run.result is None:
        return pd.DataFrame()
    result = run.result
    columns = [c for c in result.columns if c not in RESULT_COLUMNS and c != "predicted_cycles"
               and pd.api.types.is_numeric_dtype(result[c])]
    weights = _weights(side.analysis.kernels)
    ok = result["error"].astype(str) == ""  # a kernel the model did not predict explains nothing
    return pd.DataFrame({c: _group_mean(result[c].where(ok), side.groups.group_of, weights) for c in columns})


# ---- the comparison ----------------------------------------------------------------------------------------

def compare(before: Any, after: Any) -> Comparison:
    """Compare two analyses (:class:`nvperf_bridge.analysis.Analysis`) of the same program."""
    from nvperf_bridge.review.groups import kernel_groups

    sides = [Side(label, analysis, kernel_groups(analysis.kernels)) for label, analysis in
             (("before", before), ("after", after))]
    b, a = sides
    pairs, unmatched_b, unmatched_a = pair_groups(b.groups.table, a.groups.table)
    model_ids = [m for m in b.analysis.runs if m in a.analysis.runs]
    views = {(s.label, m): _model_view(s, m) for s in sides for m in model_ids}
    counter_cols = _counter_columns(b.analysis.kernels, a.analysis.kernels)
    counter_means = {s.label: pd.DataFrame({c: _group_mean(s.analysis.kernels[c], s.groups.group_of,
                                                          _weights(s.analysis.kernels)) for c in counter_cols})
                     for s in sides}
    details_means = {(s.label, m): _details_mean(s, m) for s in sides for m in model_ids}

    rows, counter_rows, detail_rows = [], [], []
    for _, pair in pairs.iterrows():
        gb, ga = int(pair["before_group"]), int(pair["after_group"])
        tb, ta = b.groups.table.loc[gb], a.groups.table.loc[ga]
        row: dict[str, Any] = {
            "kernel": tb["kernel"], "kernel_name_before": tb["kernel_name"], "kernel_name_after": ta["kernel_name"],
            "match": pair["match"], "name_key": pair["name_key"],
            "shape_before": f"{_int_text(tb['grid_blocks'])} x {_int_text(tb['block_threads'])}",
            "shape_after": f"{_int_text(ta['grid_blocks'])} x {_int_text(ta['block_threads'])}",
            "launches_before": int(tb["launches"]), "launches_after": int(ta["launches"]),
            "share_before": tb["share"], "mean_ns_before": tb["mean_ns"], "mean_ns_after": ta["mean_ns"],
            "measured_change": _change(tb["mean_ns"], ta["mean_ns"]),
        }
        for mid in model_ids:
            vb, va = views[("before", mid)], views[("after", mid)]
            pb = vb["predicted_ns"].get(gb, np.nan)
            pa = va["predicted_ns"].get(ga, np.nan)
            row[f"{mid}.predicted_ns_before"] = pb
            row[f"{mid}.predicted_ns_after"] = pa
            row[f"{mid}.predicted_change"] = _change(pb, pa)
            row[f"{mid}.bottleneck_before"] = vb["bottleneck"].get(gb, "")
            row[f"{mid}.bottleneck_after"] = va["bottleneck"].get(ga, "")
            db, da = details_means[("before", mid)], details_means[("after", mid)]
            if not db.empty and not da.empty and gb in db.index and ga in da.index:
                for name, before_v, after_v, change in _largest_changes(db.loc[gb], da.loc[ga], TOP_DETAILS):
                    detail_rows.append({"kernel": tb["kernel"], "pair": len(rows), "model": mid, "quantity": name,
                                        "before": before_v, "after": after_v, "change": change})
        cb, ca = counter_means["before"], counter_means["after"]
        if gb in cb.index and ga in ca.index:
            for name, before_v, after_v, change in _largest_changes(cb.loc[gb], ca.loc[ga], TOP_COUNTERS):
                counter_rows.append({"kernel": tb["kernel"], "pair": len(rows), "counter": name, "before": before_v,
                                     "after": after_v, "change": change})
        rows.append(row)
    groups = pd.DataFrame(rows)
    total = _totals(b, a, groups, model_ids)
    warnings = [f"before: {w}" for w in b.analysis.warnings] + [f"after: {w}" for w in a.analysis.warnings]
    if pairs.empty:
        warnings.append("no kernel group of the two runs could be matched (names or launch shapes all differ)")
    return Comparison(b, a, pairs, unmatched_b, unmatched_a, groups,
                      pd.DataFrame(counter_rows, columns=["kernel", "pair", "counter", "before", "after", "change"]),
                      pd.DataFrame(detail_rows, columns=["kernel", "pair", "model", "quantity", "before", "after",
                                                         "change"]),
                      model_ids, total, warnings)


def _int_text(value: Any) -> str:
    return "?" if pd.isna(value) else f"{int(value)}"


def _weighted_total(groups: pd.DataFrame, before_col: str, after_col: str) -> dict[str, Any]:
    """Σ launches_before x mean per launch, over the pairs where both sides have a value."""
    if groups.empty:
        return {"before_ns": None, "after_ns": None, "change": None, "groups": 0}
    b = pd.to_numeric(groups[before_col], errors="coerce")
    a = pd.to_numeric(groups[after_col], errors="coerce")
    ok = b.notna() & a.notna() & (b > 0)
    if not ok.any():
        return {"before_ns": None, "after_ns": None, "change": None, "groups": 0}
    w = groups["launches_before"].astype("float64")
    before_ns, after_ns = float((b[ok] * w[ok]).sum()), float((a[ok] * w[ok]).sum())
    return {"before_ns": before_ns, "after_ns": after_ns, "change": after_ns / before_ns - 1.0,
            "groups": int(ok.sum())}


def _totals(b: Side, a: Side, groups: pd.DataFrame, model_ids: list[str]) -> dict[str, Any]:
    total = {"measured": _weighted_total(groups, "mean_ns_before", "mean_ns_after"),
             "run_before_ns": _run_total(b), "run_after_ns": _run_total(a),
             "models": {mid: _weighted_total(groups, f"{mid}.predicted_ns_before", f"{mid}.predicted_ns_after")
                        for mid in model_ids}}
    return total


def _run_total(side: Side) -> float | None:
    value = float(side.groups.table["total_ns"].sum(skipna=True))
    return value if value > 0 else None


# ---- the CI gate -------------------------------------------------------------------------------------------

def parse_threshold(text: str) -> float:
    """'5%' or '5' (percent) -> 0.05; negative or non-numbers are usage errors."""
    raw = str(text).strip()
    number = raw[:-1].strip() if raw.endswith("%") else raw
    try:
        value = float(number) / 100.0
    except ValueError:
        raise UsageError(f"--fail-if-slower {text!r} is not a percentage", hint="e.g. --fail-if-slower 5%") from None
    if not np.isfinite(value) or value < 0:
        raise UsageError(f"--fail-if-slower {text!r} must be a percentage >= 0", hint="e.g. --fail-if-slower 5%")
    return value


@dataclass(frozen=True)
class Verdict:
    slower: bool  # the gate failed
    change: float | None  # the change the gate read (fraction)
    basis: str  # "measured" or the model id
    threshold: float | None
    message: str


def gate(result: Comparison, threshold: float | None, basis: str = "measured") -> Verdict:
    """Whether the after run is slower than the before run by more than ``threshold``.

    ``basis`` is 'measured' (the matched groups' measured times) or a model id (its predictions)."""
    if basis == "measured":
        change = result.total["measured"]["change"]
        what = "measured time of the matched kernel groups"
    elif basis in result.total["models"]:
        change = result.total["models"][basis]["change"]
        what = f"{basis}'s predicted time of the matched kernel groups"
    else:
        raise UsageError(f"--gate-on {basis!r} is neither 'measured' nor a model of both runs",
                         hint=f"models: {', '.join(result.model_ids) or 'none'}")
    if change is None:
        if threshold is None:
            return Verdict(False, None, basis, None, f"no {what} to compare")
        raise UsageError(f"--fail-if-slower needs the {what}, and neither run gives it for a matched group",
                         hint="profile with durations (ncu gpu__time_duration.sum, nvprof --print-gpu-trace), "
                              "or gate on a model: --gate-on MODEL")
    direction = "slower" if change > 0 else "faster" if change < 0 else "unchanged"
    text = f"{what}: {abs(change) * 100:.1f}% {direction}" if direction != "unchanged" else f"{what}: unchanged"
    if threshold is None:
        return Verdict(False, change, basis, None, text)
    slower = change > threshold
    verdict = "FAIL" if slower else "pass"
    return Verdict(slower, change, basis, threshold, f"{verdict}: {text} (threshold {threshold * 100:g}%)")


def compare_files(before: Sequence[str | Path], after: Sequence[str | Path], *, gpu: str | None = None,
                  gpu_after: str | None = None, model_ids: list[str] | None = None,
                  options: Mapping[str, Mapping[str, Any]] | None = None, registry: Any = None,
                  profile_dirs: Iterable[Path] = (), timeout_s: float | None = None) -> Comparison:
    """Import and analyze both runs (each with its own GPU profile), then :func:`compare` them."""
    from nvperf_bridge.analysis import analyze
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.registry import load_registry

    registry = registry or load_registry()
    dirs = list(profile_dirs)
    analyses = []
    for paths, profile in ((before, gpu), (after, gpu_after or gpu)):
        imported = read_inputs([Path(p) for p in paths])
        analyses.append(analyze(imported, gpu=profile, model_ids=model_ids, options=options, registry=registry,
                                profile_dirs=dirs, timeout_s=timeout_s))
    return compare(*analyses)


__all__ = ["Comparison", "Side", "Verdict", "compare", "compare_files", "gate", "pair_groups", "parse_threshold"]

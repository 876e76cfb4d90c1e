"""The review of one analysis, built once and read by every report format.

``build_review(analysis)`` returns a :class:`Review`: the kernel groups, a
verdict per group with what it rests on, Nsight's speed-of-light view beside
it, Nsight's own rule results, 1-3 actions per group from the advice rules,
the coverage of each model and, for every group no model predicted, the
counters that are missing and the command that collects them.
``review_dict(review)`` gives the same content as plain dicts (JSON-ready).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from nvperf_bridge.review.advice import group_advice
from nvperf_bridge.review.coverage import model_coverage, thin_warnings, unpredicted_groups
from nvperf_bridge.review.groups import KernelGroups, kernel_groups
from nvperf_bridge.review.verdict import WITHIN, group_verdicts, speed_of_light

# Groups reviewed in full (verdict, Nsight's view, advice), longest first: a run of a million
# distinct launches still gets its review in seconds; the group table itself holds every group.
REVIEWED_GROUPS = 100


@dataclass
class Review:
    groups: KernelGroups
    verdicts: pd.DataFrame  # one row per group, groups.table order
    advice: list[list[dict[str, Any]]]  # per group
    nsight_rules: list[list[dict[str, Any]]]  # per group: Nsight Compute's own rule results
    coverage: list[dict[str, Any]]  # per model
    unpredicted: list[dict[str, Any]]  # per group no model predicted
    warnings: list[str] = field(default_factory=list)
    recommended: str = ""  # the model id of the recommended estimate, when installed and run

    def group_rows(self) -> list[dict[str, Any]]:
        """One plain dict per reviewed group: identity, time, verdict, Nsight's view, rules and advice."""
        out = []
        missing = {u["group"]: u for u in self.unpredicted}
        for position, row in enumerate(self.groups.table.head(len(self.verdicts)).itertuples(index=False)):
            verdict = self.verdicts.iloc[position]
            item = {
                "group": int(row.group), "kernel": row.kernel, "kernel_name": row.kernel_name,
                "device": row.device, "grid_blocks": _num(row.grid_blocks), "block_threads": _num(row.block_threads),
                "launches": int(row.launches), "total_ns": _num(row.total_ns), "mean_ns": _num(row.mean_ns),
                "min_ns": _num(row.min_ns), "max_ns": _num(row.max_ns), "share": _num(row.share),
                "cumulative_share": _num(row.cumulative_share), "top": bool(row.top),
                "verdict": verdict["verdict"], "agreeing": int(verdict["agreeing"]), "voting": int(verdict["voting"]),
                "basis": verdict["basis"],
                "models_within": [{"model": m, "ratio": _num(r)} for m, r in verdict["accurate"]],
                "models_off": [{"model": m, "ratio": _num(r)} for m, r in verdict["off"]],
                "model_labels": dict(verdict["model_labels"]),
                "model_states": dict(verdict["model_states"]),
                "nsight": {"compute": _num(verdict["sol_compute"]), "memory": _num(verdict["sol_memory"]),
                           "source": verdict["sol_source"], "view": verdict["nsight_view"],
                           "disagrees_with_verdict": bool(verdict["disagree"])},
                "nsight_rules": self.nsight_rules[position],
                "advice": [{k: (_num(v) if isinstance(v, float) else v) for k, v in a.items()}
                           for a in self.advice[position]],
            }
            if int(row.group) in missing:
                item["unpredicted"] = {"missing": missing[int(row.group)]["missing"],
                                       "command": missing[int(row.group)]["command"]}
            out.append(item)
        return out


def _num(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _recommended_id(analysis: Any) -> str:
    """The recommended-estimate model when it ran (its id or description says so)."""
    for mid, run in analysis.ok_runs().items():
        if "recommended" in mid or "recommended estimate" in (run.description or "").lower():
            return mid
    return ""


def nsight_rule_rows(analysis: Any, groups: KernelGroups, limit: int | None = None) -> list[list[dict[str, Any]]]:
    """Per group: Nsight Compute's rule results (rule, type, message, estimated speedup %) for its rows.

    Read from ``analysis.rules`` (the importer's ``ImportResult.rules``: one row per rule
    result, keyed by ``kernel_id``); the same rule on several launches of a group is shown
    once, with the largest estimated speedup, largest first.
    """
    rules = getattr(analysis, "rules", None)
    count = len(groups.table) if limit is None else min(limit, len(groups.table))
    out: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    if rules is None or len(rules) == 0 or "kernel_id" not in rules.columns or "kernel_id" not in analysis.kernels:
        return out
    group_of_id = dict(zip(analysis.kernels["kernel_id"].astype(str), groups.group_of.to_numpy()))
    position_of = dict(zip(groups.table["group"], range(len(groups.table))))
    # the columns as plain lists (a dict per record cost most of the time on 10,000 rule rows); a message is
    # normalised once per distinct text, and a rule already in the bucket is found by its key
    def values(name: str) -> list[Any]:
        return rules[name].tolist() if name in rules.columns else [None] * len(rules)

    normalised: dict[Any, str] = {}
    index: list[dict[tuple[str, str], dict[str, Any]]] = [{} for _ in range(count)]
    for kernel_id, rule_value, message_value, type_value, section_value, speedup_value in zip(
            values("kernel_id"), values("rule"), values("message"), values("type"), values("section"),
            values("estimated_speedup_pct")):
        group = group_of_id.get(str(kernel_id))
        if group is None or position_of[int(group)] >= count:
            continue
        position = position_of[int(group)]
        speedup = _num(speedup_value)
        rule = _text(rule_value)
        message = normalised.get(message_value) if isinstance(message_value, str) else None
        if message is None:
            message = " ".join(_text(message_value).split())
            if isinstance(message_value, str):
                normalised[message_value] = message
        existing = index[position].get((rule, message))
        if existing is not None:
            if speedup is not None and (existing["estimated_speedup"] or 0) < speedup:
                existing["estimated_speedup"] = speedup
            continue
        item = {"rule": rule, "type": _text(type_value), "section": _text(section_value),
                "message": message, "estimated_speedup": speedup}
        index[position][(rule, message)] = item
        out[position].append(item)
    for bucket in out:
        bucket.sort(key=lambda r: -(r["estimated_speedup"] or 0.0))
    return out


def _text(value: Any) -> str:
    """A rules-table cell as text: "" where it is missing (None, or NaN in every row where the file's layout
    has no such column: ``importers.ncu_details._rules``), never the word "nan"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def review_groups(analysis: Any) -> KernelGroups:
    """The kernel groups a report shows everywhere (the review, the figures, the workbook's chart): ranked by
    measured time, else by the recommended estimate's prediction (``kernel_groups``' ``estimate_ns``)."""
    recommended = _recommended_id(analysis)
    estimate = analysis.runs[recommended].result["predicted_ns"] if recommended else None
    return kernel_groups(analysis.kernels, estimate, recommended or "estimate")


def build_review(analysis: Any) -> Review:
    """Groups, verdicts, Nsight's view and rules, advice and coverage for one analysis."""
    recommended = _recommended_id(analysis)
    groups = review_groups(analysis)
    verdicts = group_verdicts(analysis, groups, REVIEWED_GROUPS)
    compute, memory, _ = speed_of_light(analysis)
    advice = group_advice(analysis, groups, verdicts, compute, memory)
    unpredicted = unpredicted_groups(analysis, groups, REVIEWED_GROUPS)
    review = Review(groups, verdicts, advice, nsight_rule_rows(analysis, groups, REVIEWED_GROUPS), model_coverage(analysis),
                    unpredicted, thin_warnings(analysis, groups, unpredicted), recommended)
    return review


def review_dict(review: Review) -> dict[str, Any]:
    """The review as plain dicts and lists (the JSON report's ``review`` key)."""
    return {
        "time_source": review.groups.time_source,
        "top_share": 0.8,
        "vote_rule": f"a model votes on a kernel when within {WITHIN:g}x of its measured time; without one, "
                     "weighted by the GPU profile's validated accuracy",
        "recommended_estimate": review.recommended or None,
        "groups_total": int(len(review.groups.table)),
        "groups": review.group_rows(),  # the REVIEWED_GROUPS longest
        "coverage": review.coverage,
        "unpredicted": review.unpredicted,
        "warnings": review.warnings,
    }


__all__ = ["Review", "build_review", "nsight_rule_rows", "review_dict", "review_groups"]

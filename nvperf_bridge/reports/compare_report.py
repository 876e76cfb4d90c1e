"""Reports of a before/after comparison (:class:`nvperf_bridge.compare.Comparison`): Markdown, JSON, workbook.

They lead with the verdict (the CI gate's reading), then the matched kernel groups (measured and
each model's predicted change, bottleneck shifts), the counters that changed most, each model's
view of why (its intermediate quantities that changed most), and the groups left unmatched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from nvperf_bridge import __version__
from nvperf_bridge.compare import Comparison, Verdict
from nvperf_bridge.reports.common import format_number, python_value, shorten
from nvperf_bridge.reports.markdown import escape, table
from nvperf_bridge.reports.study_tables import Sheet, percent_cell, render_sheets, time_cell

SCHEMA = "nvperf-bridge/compare/1"
NAME_WIDTH = 48


def _shift(before: Any, after: Any) -> str:
    b, a = str(before or ""), str(after or "")
    if not b and not a:
        return ""
    return b if b == a else f"{b or '?'} → {a or '?'}"


def _inputs(result: Comparison, label: str) -> str:
    side = result.before if label == "before" else result.after
    files = ", ".join(Path(i.path).name for i in side.analysis.inputs) or "(none)"
    return f"{files} on {side.analysis.gpu.name}"


def render_markdown(result: Comparison, verdict: Verdict) -> str:
    g = result.groups
    parts = ["# Before / after comparison", ""]
    parts.append(f"**{escape(verdict.message)}**")
    parts.append("")
    parts.append(f"- before: {escape(_inputs(result, 'before'))}")
    parts.append(f"- after: {escape(_inputs(result, 'after'))}")
    total = result.total
    parts.append(f"- matched kernel groups: {len(g)}; unmatched: {len(result.unmatched_before)} before, "
                 f"{len(result.unmatched_after)} after")
    parts.append(f"- whole runs (every launch, as profiled): {time_cell(total['run_before_ns']) or 'unmeasured'} → "
                 f"{time_cell(total['run_after_ns']) or 'unmeasured'}")
    parts.append("- the matched total weights each group's mean time per launch by its launches in the before run")
    parts.append("")
    parts.append("## Total over the matched groups")
    parts.append("")
    rows = [["measured", time_cell(total["measured"]["before_ns"]), time_cell(total["measured"]["after_ns"]),
             percent_cell(total["measured"]["change"], signed=True), str(total["measured"]["groups"])]]
    for mid in result.model_ids:
        t = total["models"][mid]
        rows.append([escape(mid), time_cell(t["before_ns"]), time_cell(t["after_ns"]),
                     percent_cell(t["change"], signed=True), str(t["groups"])])
    parts.append(table(["time", "before", "after", "change", "groups"], rows, ["l", "r", "r", "r", "r"]))
    parts.append("")
    if not g.empty:
        parts.append("## Kernel groups")
        parts.append("")
        header = ["kernel", "shape", "launches", "share before", "measured before", "after", "change"]
        align = ["l", "l", "r", "r", "r", "r", "r"]
        body = []
        for _, row in g.iterrows():
            shape = row["shape_before"] if row["shape_before"] == row["shape_after"] else \
                f"{row['shape_before']} → {row['shape_after']}"
            launches = str(row["launches_before"]) if row["launches_before"] == row["launches_after"] else \
                f"{row['launches_before']} → {row['launches_after']}"
            body.append([escape(shorten(row["kernel"], NAME_WIDTH)), escape(shape), launches,
                         percent_cell(row["share_before"]), time_cell(row["mean_ns_before"]),
                         time_cell(row["mean_ns_after"]), percent_cell(row["measured_change"], signed=True)])
        parts.append(table(header, body, align))
        parts.append("")
        parts.append("## Each model's view")
        parts.append("")
        header = ["kernel", *(escape(m) for m in result.model_ids)]
        body = []
        for _, row in g.iterrows():
            cells = [escape(shorten(row["kernel"], NAME_WIDTH))]
            for mid in result.model_ids:
                change = percent_cell(row[f"{mid}.predicted_change"], signed=True)
                shift = _shift(row[f"{mid}.bottleneck_before"], row[f"{mid}.bottleneck_after"])
                cells.append(escape(" ".join(x for x in (change, f"({shift})" if shift else "") if x)) or "—")
            body.append(cells)
        parts.append(table(header, body))
        parts.append("")
        parts.append("Predicted change per launch, and the bottleneck before → after (one label: no shift). "
                     "— : the model predicted the group in neither or only one of the runs.")
        parts.append("")
        parts.append("## Why: what changed most")
        parts.append("")
        for pair, row in g.iterrows():
            parts.append(f"### {escape(shorten(row['kernel'], 80))}")
            parts.append("")
            counters = result.counters[result.counters["pair"] == pair]
            if not counters.empty:
                listed = "; ".join(f"`{c.counter}` {format_number(c.before)} → {format_number(c.after)}"
                                   f" ({percent_cell(c.change, signed=True) or 'new'})" for c in counters.itertuples())
                parts.append(f"- counters: {listed}")
            details = result.details[result.details["pair"] == pair]
            for mid in result.model_ids:
                mine = details[details["model"] == mid]
                change = percent_cell(row[f"{mid}.predicted_change"], signed=True)
                if mine.empty and not change:
                    continue
                shift = _shift(row[f"{mid}.bottleneck_before"], row[f"{mid}.bottleneck_after"])
                listed = "; ".join(f"{escape(d.quantity)} {format_number(d.before)} → {format_number(d.after)}"
                                   for d in mine.itertuples())
                parts.append(f"- {escape(mid)}: {change or 'no prediction'}"
                             + (f", {escape(shift)}" if shift else "") + (f"; {listed}" if listed else ""))
            parts.append("")
    for label, frame in (("before", result.unmatched_before), ("after", result.unmatched_after)):
        if not frame.empty:
            parts.append(f"## Only in the {label} run")
            parts.append("")
            parts.append(table(["kernel", "shape", "launches", "time"],
                               [[escape(shorten(r["kernel_name"], 80)),
                                 f"{format_number(r['grid_blocks'])} x {format_number(r['block_threads'])}",
                                 str(r["launches"]), time_cell(r["total_ns"])] for _, r in frame.iterrows()],
                               ["l", "l", "r", "r"]))
            parts.append("")
    if result.warnings:
        parts.append("## Warnings")
        parts.append("")
        parts.extend(f"- {escape(w)}" for w in result.warnings)
        parts.append("")
    parts.append(f"_nvperf-bridge {__version__}_")
    return "\n".join(parts) + "\n"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): python_value(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def build_document(result: Comparison, verdict: Verdict) -> dict[str, Any]:
    groups = []
    for pair, row in result.groups.iterrows():
        entry = {k: python_value(row[k]) for k in ("kernel", "kernel_name_before", "kernel_name_after", "match",
                                                    "name_key", "shape_before", "shape_after", "launches_before",
                                                    "launches_after", "share_before", "mean_ns_before",
                                                    "mean_ns_after", "measured_change")}
        entry["models"] = {mid: {"predicted_ns_before": python_value(row[f"{mid}.predicted_ns_before"]),
                                 "predicted_ns_after": python_value(row[f"{mid}.predicted_ns_after"]),
                                 "predicted_change": python_value(row[f"{mid}.predicted_change"]),
                                 "bottleneck_before": python_value(row[f"{mid}.bottleneck_before"]) or None,
                                 "bottleneck_after": python_value(row[f"{mid}.bottleneck_after"]) or None,
                                 "changed_most": _records(result.details[(result.details["pair"] == pair)
                                                                         & (result.details["model"] == mid)]
                                                          [["quantity", "before", "after", "change"]])}
                           for mid in result.model_ids}
        entry["counters_changed_most"] = _records(result.counters[result.counters["pair"] == pair]
                                                  [["counter", "before", "after", "change"]])
        groups.append(entry)
    unmatched_columns = ["kernel", "kernel_name", "grid_blocks", "block_threads", "launches", "total_ns"]
    return {
        "schema": SCHEMA,
        "tool_version": __version__,
        "verdict": {"slower": verdict.slower, "change": verdict.change, "basis": verdict.basis,
                    "threshold": verdict.threshold, "message": verdict.message},
        "before": {"inputs": [i.path for i in result.before.analysis.inputs], "gpu": result.before.analysis.gpu.id},
        "after": {"inputs": [i.path for i in result.after.analysis.inputs], "gpu": result.after.analysis.gpu.id},
        "total": result.total,
        "groups": groups,
        "unmatched_before": _records(result.unmatched_before[unmatched_columns]),
        "unmatched_after": _records(result.unmatched_after[unmatched_columns]),
        "warnings": result.warnings,
    }


def render_json(result: Comparison, verdict: Verdict) -> str:
    return json.dumps(build_document(result, verdict), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_workbook(result: Comparison, verdict: Verdict) -> bytes:
    g = result.groups
    notes = ["Before / after comparison", verdict.message, f"before: {_inputs(result, 'before')}",
             f"after: {_inputs(result, 'after')}"]
    group_columns = [c for c in g.columns] if not g.empty else ["kernel"]
    pct = {i: "0.0%" for i, c in enumerate(group_columns) if c.endswith("change") or c.startswith("share")}
    sheets = [Sheet("Groups", group_columns, g.astype(object).values.tolist() if not g.empty else [], notes=notes,
                    formats=pct, widths={0: 36.0})]
    total_rows = [["measured", result.total["measured"]["before_ns"], result.total["measured"]["after_ns"],
                   result.total["measured"]["change"], result.total["measured"]["groups"]]]
    total_rows += [[mid, t["before_ns"], t["after_ns"], t["change"], t["groups"]]
                   for mid, t in result.total["models"].items()]
    sheets.append(Sheet("Total", ["time", "before_ns", "after_ns", "change", "groups"], total_rows,
                        notes=["Matched groups: mean time per launch weighted by the before run's launches"],
                        formats={3: "0.0%"}))
    sheets.append(Sheet("Counters", list(result.counters.columns), result.counters.astype(object).values.tolist(),
                        notes=["Counters that changed most per matched group (launch-weighted means)"],
                        formats={5: "0.0%"}, widths={0: 36.0, 2: 40.0}))
    sheets.append(Sheet("Model views", list(result.details.columns), result.details.astype(object).values.tolist(),
                        notes=["Each model's intermediate quantities that changed most per matched group"],
                        formats={6: "0.0%"}, widths={0: 36.0, 3: 30.0}))
    for label, frame in (("Only before", result.unmatched_before), ("Only after", result.unmatched_after)):
        columns = ["kernel_name", "grid_blocks", "block_threads", "launches", "total_ns"]
        sheets.append(Sheet(label, columns, frame[columns].astype(object).values.tolist(), widths={0: 60.0}))
    return render_sheets(sheets, title="nvperf-bridge compare", creator=f"nvperf-bridge {__version__}")


def compare_outputs(result: Comparison, verdict: Verdict, fmt: str, output: Path | None) -> dict[Path | None, bytes]:
    """Every file of the report; the key None is stdout."""
    if fmt == "json":
        return {output: render_json(result, verdict).encode("utf-8")}
    if fmt == "xlsx":
        return {output: render_workbook(result, verdict)}
    return {output: render_markdown(result, verdict).encode("utf-8")}


__all__ = ["build_document", "compare_outputs", "render_json", "render_markdown", "render_workbook"]

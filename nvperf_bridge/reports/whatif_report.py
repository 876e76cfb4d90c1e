"""Reports of a what-if study (:class:`nvperf_bridge.whatif.WhatIfStudy`): Markdown, JSON, CSV, workbook, figure.

Every format says the same things: the kernel and which launch was measured, one row per point
(launch shape, GPU, theoretical occupancy and its limiter, the estimated achieved occupancy, each
model's predicted time and bottleneck), the measured point marked with its measured time, and what
the rebuild assumed (the rules table) or could not carry over.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge import __version__
from nvperf_bridge.reports.common import BOTTLENECK_COLORS, format_time, python_value, shorten, time_unit
from nvperf_bridge.reports.markdown import escape, table
from nvperf_bridge.reports.study_tables import Sheet, number_cell, percent_cell, render_sheets, text_cell, time_cell
from nvperf_bridge.whatif import MEASURED, PARAMETERS, WhatIfStudy, rebuild_rules

FIGURE_KEY = "whatif"
SCHEMA = "nvperf-bridge/whatif/2"  # 2: fastest[].point is always a row label; answer, gpu, keep_measured added


def _kernel_title(study: WhatIfStudy) -> str:
    k = study.kernel
    return str(k.get("kernel") or k.get("kernel_name") or k.get("kernel_id"))


def points_table(study: WhatIfStudy) -> pd.DataFrame:
    """The flat table of points (CSV and the workbook's Points sheet): one row per point."""
    p = study.points
    columns = ["point", "gpu", *PARAMETERS, "theoretical_occupancy", "occupancy_limiter", "achieved_occupancy",
               "measured_ns", "at_measured_setting"]
    out = p[columns].copy()
    out.insert(0, "kernel", _kernel_title(study))
    out["at_measured_setting"] = out["at_measured_setting"].astype(bool)
    for mid in study.model_ids:
        for suffix in ("predicted_ns", "bottleneck", "error"):
            out[f"{mid}.{suffix}"] = p[f"{mid}.{suffix}"]
    return out


def _notes(study: WhatIfStudy) -> list[str]:
    k = study.kernel
    notes = [f"Measured on {study.source_gpu.name} ({study.gpu_choice}); {study.kernel_note}."]
    if study.varied:
        how = {"work": "the total number of threads is kept (grid_blocks = ceil(measured threads / block_threads))",
               "grid": "the grid is kept (the total work grows or shrinks with the block)"}[study.keep]
        if "block_threads" in study.varied and "grid_blocks" not in study.varied:
            notes.append(f"When block_threads changes, {how}.")
    notes.append("Per-thread work stays: warp-level counts scale with the number of warps, bytes and FLOPs with "
                 "the number of threads; registers per thread and shared memory per block stay as measured unless "
                 "varied.")
    notes.append("Achieved occupancy of a varied point is an estimate: the measured achieved/theoretical ratio "
                 f"({_ratio_text(study)}) times the new theoretical occupancy.")
    if study.not_carried:
        notes.append(f"{len(study.not_carried)} raw profiler counters are not carried over to the varied points "
                     f"(measured over the launch; listed in the JSON report's not_carried).")
    targets = [g for g in study.targets if g.id != study.source_gpu.id]
    if targets:
        notes.append("On another GPU the instruction and memory counts are those of the measured GPU (same code, "
                     "same compiler output assumed); the measured SM clock is replaced by the profile's clock.")
    measured = python_value(k.get("duration_ns"))
    if measured is None:
        notes.append("The input has no measured time for this kernel: the measured point has no time to compare.")
    return notes


def _ratio_text(study: WhatIfStudy) -> str:
    p = study.points.iloc[0]
    theory, achieved = python_value(p["theoretical_occupancy"]), python_value(study.kernel.get("achieved_occupancy"))
    if not isinstance(theory, float) or not isinstance(achieved, float) or theory <= 0:
        return "not available: the models fall back to the theoretical occupancy"
    return f"{achieved:.3f} / {theory:.3f}"


# ---- Markdown ---------------------------------------------------------------------------------------

def render_markdown(study: WhatIfStudy, figure_link: str | None = None) -> str:
    p = study.points
    parts = [f"# What if: {escape(_kernel_title(study))}", ""]
    parts.append(f"Kernel `{' '.join(str(study.kernel.get('kernel_name', '')).split())}`; varied: "
                 f"{', '.join(study.varied) or 'nothing'}"
                 + (f"; GPUs: {', '.join(g.id for g in study.targets)}" if study.targets else "") + ".")
    parts.append("")
    parts.extend(f"- {escape(n)}" for n in _notes(study))
    parts.append("")
    parts.append("## Predicted time per setting")
    parts.append("")
    header = ["point", "GPU", "grid", "block", "regs", "smem B", "theor. occ.", "limiter", "est. achieved",
              "measured"]
    align = ["l", "l", "r", "r", "r", "r", "r", "l", "r", "r"]
    for mid in study.model_ids:
        header += [escape(mid), "bottleneck"]
        align += ["r", "l"]
    rows = []
    for i, row in p.iterrows():
        label = "**measured**" if row["point"] == MEASURED else escape(row["point"])
        if row["point"] != MEASURED and row["at_measured_setting"]:
            label += " (measured setting)"
        cells = [label, escape(row["gpu"]), number_cell(row["grid_blocks"]), number_cell(row["block_threads"]),
                 number_cell(row["registers_per_thread"]), number_cell(row["shared_mem_per_block_bytes"]),
                 percent_cell(row["theoretical_occupancy"]), text_cell(row["occupancy_limiter"]),
                 percent_cell(row["achieved_occupancy"]), time_cell(row["measured_ns"])]
        for mid in study.model_ids:
            error = str(row[f"{mid}.error"] or "")
            predicted = time_cell(row[f"{mid}.predicted_ns"])
            cells += [predicted or ("—" if error else ""), text_cell(row[f"{mid}.bottleneck"]) if predicted else ""]
        rows.append(cells)
    parts.append(table(header, rows, align))
    parts.append("")
    reasons = _model_reasons(study)
    if reasons:
        parts.append("## Points a model did not predict")
        parts.append("")
        parts.extend(f"- {escape(mid)}: {escape(shorten(reason, 300))} ({count} point{'s' if count != 1 else ''})"
                     for mid, reason, count in reasons)
        parts.append("")
    best = best_points(study)
    if best:
        parts.append("## Fastest predicted setting per model")
        parts.append("")
        parts.append(f"A point is named only where it is predicted at least {NO_GAIN:.0%} faster than the "
                     f"measured setting; otherwise the answer is {KEEP_MEASURED}.")
        parts.append("")
        parts.append(table(["model", "fastest point", "predicted", "vs measured setting"],
                           [[escape(b.model), escape(b.answer), format_time(b.predicted_ns),
                             percent_cell(b.change, signed=True)] for b in best], ["l", "l", "r", "r"]))
        parts.append("")
    if figure_link:
        parts.append("## Figure")
        parts.append("")
        parts.append(f"![Predicted time per setting]({figure_link})")
        parts.append("")
    parts.append("## How the records were rebuilt")
    parts.append("")
    parts.append(table(["column", "rule", "why"], [[f"`{r.column}`", escape(r.rule), escape(r.why)]
                                                     for r in rebuild_rules().values()]))
    parts.append("")
    if study.warnings:
        parts.append("## Warnings")
        parts.append("")
        parts.extend(f"- {escape(w)}" for w in study.warnings)
        parts.append("")
    parts.append(f"_nvperf-bridge {__version__}_")
    return "\n".join(parts) + "\n"


def _model_reasons(study: WhatIfStudy) -> list[tuple[str, str, int]]:
    out = []
    for mid in study.model_ids:
        errors = study.points[f"{mid}.error"].fillna("").astype(str)
        for reason, count in errors[errors != ""].value_counts().items():
            out.append((mid, str(reason), int(count)))
    return out


# a varied point must be predicted at least this much faster than the measured setting to be named
# the fastest: a model's rounding-level difference (a memory-bound kernel at full occupancy for
# every block size) is no reason to change the launch
NO_GAIN = 0.01
KEEP_MEASURED = "the measured setting"


@dataclass(frozen=True)
class FastestPoint:
    """One model's answer to "which setting is fastest": the point (its label in the points table),
    the GPU, the predicted time, the change against the same model at the measured setting (a
    fraction; None when unavailable), whether the answer is to keep the measured setting, and the
    answer as the reports print it."""

    model: str
    point: str
    gpu: str
    predicted_ns: float
    change: float | None
    keep_measured: bool

    @property
    def answer(self) -> str:
        if self.keep_measured:
            return f"{KEEP_MEASURED} (no point {NO_GAIN:.0%} faster)"
        return self.point if self.gpu in self.point else f"{self.point} on {self.gpu}"


def best_points(study: WhatIfStudy) -> list[FastestPoint]:
    """Per model: the varied point with the smallest predicted time, and its change against the
    same model's prediction at the measured point. Where no varied point is at least ``NO_GAIN``
    faster, the answer is the measured setting itself (its prediction, change 0), so that a tie
    never reads as advice to change the launch."""
    p = study.points
    out = []
    for mid in study.model_ids:
        predicted = pd.to_numeric(p[f"{mid}.predicted_ns"], errors="coerce")
        varied = predicted.iloc[1:]
        if varied.notna().sum() == 0:
            continue
        best = varied.idxmin()
        reference = predicted.iloc[0]
        change = float(varied[best] / reference - 1.0) if pd.notna(reference) and reference > 0 else None
        if change is not None and change > -NO_GAIN:
            first = p.index[0]
            out.append(FastestPoint(mid, str(p.loc[first, "point"]), str(p.loc[first, "gpu"]), float(reference),
                                    0.0, keep_measured=True))
            continue
        out.append(FastestPoint(mid, str(p.loc[best, "point"]), str(p.loc[best, "gpu"]), float(varied[best]),
                                change, keep_measured=False))
    return out


# ---- JSON and CSV -------------------------------------------------------------------------------------

def build_document(study: WhatIfStudy) -> dict[str, Any]:
    p = study.points
    points = []
    for i, row in p.iterrows():
        entry: dict[str, Any] = {"point": row["point"], "gpu": row["gpu"],
                                 "measured": bool(row["point"] == MEASURED),
                                 "at_measured_setting": bool(row["at_measured_setting"])}
        for column in (*PARAMETERS, "theoretical_occupancy", "occupancy_limiter", "theoretical_warps_per_sm",
                       "occupancy_invalid_reason", "achieved_occupancy", "measured_ns"):
            entry[column] = python_value(row[column])
        entry["models"] = {mid: {"predicted_ns": python_value(row[f"{mid}.predicted_ns"]),
                                 "bottleneck": python_value(row[f"{mid}.bottleneck"]) or None,
                                 "state": python_value(row[f"{mid}.state"]) or None,
                                 "error": python_value(row[f"{mid}.error"]) or None} for mid in study.model_ids}
        points.append(entry)
    k = study.kernel
    return {
        "schema": SCHEMA,
        "tool_version": __version__,
        "kernel": {"kernel_id": python_value(k.get("kernel_id")), "kernel": python_value(k.get("kernel")),
                   "kernel_name": python_value(k.get("kernel_name")), "source": python_value(k.get("source")),
                   "source_row": python_value(k.get("source_row")), "chosen": study.kernel_note},
        "measured_gpu": study.source_gpu.id,
        "gpu_choice": study.gpu_choice,
        "target_gpus": [g.id for g in study.targets],
        "varied": study.varied,
        "keep": study.keep,
        "models": {mid: {"version": run.version, "paper": run.paper} for mid, run in study.models.items()},
        "points": points,
        # point: the label of a row of "points" (the measured one where keep_measured); answer: the sentence
        "fastest": [{"model": b.model, "point": b.point, "gpu": b.gpu, "keep_measured": b.keep_measured,
                     "answer": b.answer, "predicted_ns": b.predicted_ns, "change_vs_measured_setting": b.change}
                    for b in best_points(study)],
        "rules": [{"column": r.column, "rule": r.rule, "why": r.why} for r in rebuild_rules().values()],
        "not_carried": study.not_carried,
        "notes": _notes(study),
        "warnings": study.warnings,
    }


def render_json(study: WhatIfStudy) -> str:
    return json.dumps(build_document(study), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_csv(study: WhatIfStudy) -> str:
    return points_table(study).to_csv(index=False, lineterminator="\n", float_format="%.12g")


# ---- figure ---------------------------------------------------------------------------------------------

def _x_positions(study: WhatIfStudy, rows: pd.DataFrame) -> tuple[np.ndarray, list[str] | None, bool]:
    """x of each row: the varied parameter's value when one is varied, else a category position.

    Returns (x, category labels or None, log2 axis?)."""
    if len(study.varied) == 1:
        values = rows[study.varied[0]].to_numpy(dtype="float64")
        positive = values[values > 0]
        log = study.varied[0] in ("block_threads", "grid_blocks") and positive.size > 0 \
            and positive.max() / positive.min() >= 4
        return values, None, log
    if not study.varied:
        labels = list(dict.fromkeys(rows["gpu"]))
        return np.array([labels.index(g) for g in rows["gpu"]], dtype="float64"), labels, False
    settings = rows[study.varied].astype(float).apply(tuple, axis=1)
    labels = list(dict.fromkeys(settings))
    text = [", ".join(f"{v:g}" for v in s) for s in labels]
    return np.array([labels.index(s) for s in settings], dtype="float64"), text, False


def whatif_figure(study: WhatIfStudy) -> bytes:
    """Predicted time per setting, one line per model (markers coloured by the bottleneck), one panel per
    GPU when several; the measured time as a black star at the measured setting."""
    from matplotlib.lines import Line2D

    from nvperf_bridge.reports.figures import MODEL_STYLES, _new_figure, figure_bytes

    p = study.points
    panels = [None] if not study.varied else [g.id for g in study.targets]
    fig = _new_figure(min(5.6 * len(panels), 16.0), 4.6)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    values = [pd.to_numeric(p[f"{m}.predicted_ns"], errors="coerce") for m in study.model_ids]
    values.append(pd.to_numeric(p["measured_ns"], errors="coerce"))
    unit = time_unit(pd.concat(values)) if values else time_unit([])
    varied_rows = p.iloc[1:]
    measured_row = p.iloc[[0]]
    for ax, panel in zip(axes, panels):
        rows = varied_rows if panel is None else varied_rows[varied_rows["gpu"] == panel]
        frame_for_x = pd.concat([measured_row, rows]) if panel in (None, study.source_gpu.id) else rows
        x_all, labels, log = _x_positions(study, frame_for_x)
        x = x_all[len(frame_for_x) - len(rows):]
        for k, mid in enumerate(study.model_ids):
            color, marker = MODEL_STYLES[k % len(MODEL_STYLES)]
            y = pd.to_numeric(rows[f"{mid}.predicted_ns"], errors="coerce").to_numpy() / unit.ns
            ok = np.isfinite(y)
            if not ok.any():
                continue
            order = np.argsort(x[ok], kind="stable")
            ax.plot(x[ok][order], y[ok][order], color=color, linewidth=1.4, label=mid, zorder=2)
            faces = [f"#{BOTTLENECK_COLORS.get(str(b), BOTTLENECK_COLORS['unknown'])}"
                     for b in rows[f"{mid}.bottleneck"].to_numpy()[ok]]
            ax.scatter(x[ok], y[ok], c=faces, edgecolors=color, marker=marker, s=42, linewidths=1.2, zorder=3)
        measured_ns = python_value(measured_row["measured_ns"].iloc[0])
        if panel in (None, study.source_gpu.id) and isinstance(measured_ns, float):
            ax.scatter([x_all[0]], [measured_ns / unit.ns], marker="*", s=220, color="black", zorder=4,
                       label="measured")
            ax.annotate("measured", (x_all[0], measured_ns / unit.ns), textcoords="offset points", xytext=(6, 6),
                        fontsize=8)
        if log:
            ax.set_xscale("log", base=2)
            ticks = sorted(set(float(v) for v in x_all if v > 0))
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{v:g}" for v in ticks], fontsize=8)
        if labels is not None:
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_xlabel(study.varied[0] if len(study.varied) == 1 else
                      (", ".join(study.varied) if study.varied else "GPU"))
        ax.set_title(panel if panel is not None else "", fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
    axes[0].set_ylabel(f"predicted time ({unit.label})")
    handles, names = axes[0].get_legend_handles_labels()
    used = sorted({str(b) for m in study.model_ids
                   for b in p[f"{m}.bottleneck"][pd.to_numeric(p[f"{m}.predicted_ns"], errors="coerce").notna()]})
    handles += [Line2D([], [], marker="o", linestyle="", markerfacecolor=f"#{BOTTLENECK_COLORS.get(b, 'D9D9D9')}",
                       markeredgecolor="grey", label=b) for b in used]
    names += used
    fig.legend(handles, names, loc="outside right upper", fontsize=8, frameon=False)
    fig.suptitle(f"What if: {shorten(_kernel_title(study), 60)}", fontsize=11)
    return figure_bytes(fig, dpi=110)


# ---- workbook and outputs -----------------------------------------------------------------------------

def render_workbook(study: WhatIfStudy, png: bytes | None) -> bytes:
    table_ = points_table(study)
    header = list(table_.columns)
    time_format = "0.000"
    points = Sheet("Points", header, table_.astype(object).values.tolist(),
                   notes=[f"What if: {_kernel_title(study)}", *_notes(study)],
                   formats={i: "0.0%" for i, c in enumerate(header) if c.endswith("occupancy")}
                   | {i: time_format for i, c in enumerate(header) if c.endswith("_ns")},
                   widths={0: 30.0, 1: 22.0})
    records = study.records.copy()
    records.insert(0, "point", study.points["point"])
    rebuilt = Sheet("Rebuilt records", list(records.columns), records.astype(object).values.tolist(),
                    notes=["The kernel records the models were given (the measured one first)."])
    rules = Sheet("Rules", ["column", "rule", "why"], [[r.column, r.rule, r.why] for r in rebuild_rules().values()],
                  notes=["How each canonical column is carried to a new launch or GPU "
                         "(nvperf_bridge/data/whatif_rules.csv)."], widths={0: 28.0, 1: 12.0, 2: 90.0})
    dropped = Sheet("Not carried", ["raw counter"], [[c] for c in study.not_carried],
                    notes=["Raw profiler counters of the measured record that the varied points leave missing."],
                    widths={0: 50.0})
    images = [("Predicted time per setting", png)] if png else []
    return render_sheets([points, rebuilt, rules, dropped], images, title=f"what-if {_kernel_title(study)}",
                         creator=f"nvperf-bridge {__version__}")


def whatif_outputs(study: WhatIfStudy, fmt: str, output: Path | None) -> dict[Path | None, bytes]:
    """Every file of the report; the key None is stdout. Markdown to a file gets its figure beside it."""
    from nvperf_bridge.reports.render import figure_path

    if fmt == "json":
        return {output: render_json(study).encode("utf-8")}
    if fmt == "csv":
        return {output: render_csv(study).encode("utf-8")}
    if fmt == "xlsx":
        return {output: render_workbook(study, whatif_figure(study))}
    if output is None:
        return {None: render_markdown(study).encode("utf-8")}
    png_path = figure_path(output, FIGURE_KEY)
    return {output: render_markdown(study, png_path.name).encode("utf-8"), png_path: whatif_figure(study)}


__all__ = ["build_document", "points_table", "render_csv", "render_json", "render_markdown", "render_workbook",
           "whatif_figure", "whatif_outputs"]

"""The Markdown report (GitHub-flavoured), for a pull request or a terminal.

Sections: header facts, Summary (predicted time and error per model), Bottlenecks
(each model's label and the consensus), Accuracy, one section per model (paper,
machine constants, key intermediate quantities, kernels without a prediction),
Figures (only when links are given), Warnings, Inputs, Kernel names.

Kernel names are escaped for table cells (pipes, backticks, angle brackets,
asterisks, underscores, brackets, backslashes) so a C++ template name never
breaks a table, and shortened to ``NAME_WIDTH`` characters; every shortened
name is listed in full under "Kernel names", keyed by the ``#`` column.
Large inputs show the ``MAX_KERNELS`` longest kernels (the JSON and CSV reports
hold all of them).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.reports.common import (
    detail_columns,
    display_names,
    error_fraction,
    error_reasons,
    format_number,
    format_percent,
    full_names,
    neutralise_formula,
    shorten,
    time_unit,
    top_kernels,
    constant_status_summary,
)

MAX_KERNELS = 50  # kernels in the Summary and Bottlenecks tables
MAX_MODEL_KERNELS = 20  # kernels in each model's quantities table
MAX_DETAILS = 8  # intermediate quantities per model table
NAME_WIDTH = 40

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")


def escape(text: Any) -> str:
    """Text made safe for a GitHub Markdown table cell or list item."""
    value = " ".join(str(text).split())  # newlines and tabs would end the row
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", value)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: Sequence[str] | None = None) -> str:
    """A GFM table; ``align`` holds 'l' or 'r' per column. Cells must be escaped already."""
    align = align or ["l"] * len(header)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell) if str(cell) != "" else " " for cell in row) + " |")
    return "\n".join(lines)


def render_markdown(analysis: Analysis, figures: Mapping[str, str] | None = None) -> str:
    """The whole report; ``figures`` maps a caption to a relative PNG path to link."""
    order = list(top_kernels(analysis, MAX_KERNELS))
    number = {index: position + 1 for position, index in enumerate(order)}
    short = display_names(analysis.kernels)
    full = full_names(analysis.kernels)
    parts = [
        _header(analysis),
        _summary(analysis, order, number, short),
        _bottlenecks(analysis, order, number, short),
        _accuracy(analysis),
        _models(analysis, order, number, short),
    ]
    if figures:
        parts.append(_figures(figures))
    parts.append(_warnings(analysis))
    parts.append(_profiles(analysis))
    parts.append(_inputs(analysis))
    parts.append(_kernel_names(order, number, short, full))
    return "\n\n".join(part for part in parts if part) + "\n"


def _name_cell(name: str) -> str:
    # a name a spreadsheet would run as a formula (=HYPERLINK(...)) gets an apostrophe, as in the CSV;
    # the full name stays exact in its code span under "Kernel names"
    return escape(neutralise_formula(shorten(name, NAME_WIDTH)))


def _header(analysis: Analysis) -> str:
    runs = analysis.runs
    ok = [f"{escape(mid)} {escape(run.version)}".strip() for mid, run in runs.items() if run.result is not None]
    failed = [escape(mid) for mid, run in runs.items() if run.result is None]
    models = ", ".join(ok) or "none"
    if failed:
        models += f"; failed: {', '.join(failed)}"
    files = len(analysis.inputs)
    rows = [
        ("GPU", f"{escape(analysis.gpu.name)} (`{analysis.gpu.id}`), {escape(analysis.gpu_choice)}"),
        ("Kernels", f"{len(analysis.kernels):,} from {files} file{'s' if files != 1 else ''}"),
        ("Models", models),
        ("Created", f"{escape(analysis.created)} by nvperf-bridge {escape(analysis.tool_version)}"),
    ]
    return "# nvperf-bridge report\n\n" + table(["", ""], rows)


def _shown_note(analysis: Analysis, shown: int) -> str:
    total = len(analysis.kernels)
    if shown >= total:
        return ""
    return (f"\n\nShowing the {shown:,} longest of {total:,} kernels; "
            "`--format csv` or `--format json` lists every kernel.")


def _summary(analysis: Analysis, order: list[Any], number: dict[Any, int], short: pd.Series) -> str:
    header = ["#", "Kernel"]
    align = ["r", "l"]
    columns: list[pd.Series] = []
    measured = analysis.measured_ns
    has_measured = measured.notna().any()
    if has_measured:
        unit = time_unit(measured)
        header.append(f"Measured ({unit.label})")
        align.append("r")
        columns.append(measured.loc[order].map(lambda v, u=unit: format_number(v / u.ns)))
    for mid, run in analysis.ok_runs().items():
        predicted = run.result["predicted_ns"]
        unit = time_unit(predicted)
        header.append(f"{escape(mid)} ({unit.label})")
        align.append("r")
        columns.append(predicted.loc[order].map(lambda v, u=unit: format_number(v / u.ns)))
        if has_measured:
            header.append(f"{escape(mid)} error")
            align.append("r")
            columns.append(error_fraction(analysis, run).loc[order].map(lambda v: format_percent(v, signed=True)))
    rows = []
    for position, index in enumerate(order):
        rows.append([number[index], _name_cell(short.loc[index]), *(col.iloc[position] for col in columns)])
    intro = "Predicted time per kernel and model"
    intro += "; error = (predicted - measured) / measured." if has_measured else " (the input has no measured times)."
    return "## Summary\n\n" + intro + _shown_note(analysis, len(order)) + "\n\n" + table(header, rows, align)


def _bottlenecks(analysis: Analysis, order: list[Any], number: dict[Any, int], short: pd.Series) -> str:
    runs = analysis.ok_runs()
    if not runs:
        return "## Bottlenecks\n\nNo model produced results."
    summary = analysis.summary()
    header = ["#", "Kernel", *(escape(mid) for mid in runs), "Consensus", "Models agreeing"]
    align = ["r", "l", *("l" for _ in runs), "l", "r"]
    rows = []
    for index in order:
        row = summary.loc[index]
        labels = [escape(row[f"{mid}.bottleneck"]) for mid in runs]
        agree = f"{int(row['models_agreeing'])} of {int(row['models_voting'])}"
        rows.append([number[index], _name_cell(short.loc[index]), *labels, escape(row["consensus_bottleneck"]), agree])
    intro = ("Each model's bottleneck (shared vocabulary) and the most common label among the models "
             "that predicted the kernel ('unknown' does not vote).")
    return "## Bottlenecks\n\n" + intro + "\n\n" + table(header, rows, align)


def _accuracy(analysis: Analysis) -> str:
    accuracy = analysis.accuracy()
    if accuracy.empty or not (accuracy["n"] > 0).any():
        return "## Accuracy\n\nNo kernel has both a measured time and a prediction, so accuracy is not computed."
    rows = []
    for mid, row in accuracy.iterrows():
        rows.append([escape(mid), f"{int(row['n']):,}", format_percent(row["mape"]), format_percent(row["median_ape"]),
                     format_percent(row["gm_abs_error"]), format_percent(row["mean_accuracy"])])
    intro = ("APE = |predicted - measured| / measured over the kernels with both. GM = geometric mean "
             "(Hong & Kim's statistic); mean accuracy = mean of min/max of the two times (Luo & Suda).")
    return "## Accuracy\n\n" + intro + "\n\n" + table(
        ["Model", "n", "MAPE", "Median APE", "GM abs. error", "Mean accuracy"], rows, ["l", "r", "r", "r", "r", "r"])


def _models(analysis: Analysis, order: list[Any], number: dict[Any, int], short: pd.Series) -> str:
    sections = ["## Models"]
    shown = order[:MAX_MODEL_KERNELS]
    for mid, run in analysis.runs.items():
        lines = [f"### {escape(mid)} {escape(run.version)}".rstrip()]
        facts = []
        if run.paper:
            facts.append(f"Paper: {escape(run.paper)}.")
        if run.origin:
            facts.append(f"Loaded from {escape(run.origin)}.")
        if run.result is None:
            facts.append(f"**Failed as a whole:** {escape(run.failure)}")
            lines.append(" ".join(facts))
            sections.append("\n\n".join(lines))
            continue
        predicted = int(run.result["predicted_ns"].notna().sum())
        facts.append(f"Predicted {predicted:,} of {len(run.result):,} kernels.")
        lines.append(" ".join(facts))
        if run.constants:
            rows = [[escape(name), format_number(c.value, 4), escape(c.status), escape(c.source)]
                    for name, c in run.constants.items()]
            lines.append(f"Machine constants ({escape(constant_status_summary(run))}):\n\n"
                         + table(["Constant", "Value", "Status", "Source"], rows, ["l", "r", "l", "l"]))
        details = detail_columns(run)
        if details:
            used = details[:MAX_DETAILS]
            rows = []
            for index in shown:
                values = run.result.loc[index]
                rows.append([number[index], _name_cell(short.loc[index]), escape(values["state"]),
                             *(escape(format_number(values[name])) for name in used)])
            note = "Key intermediate quantities (the paper's symbols)"
            if len(details) > len(used):
                note += f"; {len(details) - len(used)} more per kernel in the JSON report"
            if len(shown) < len(analysis.kernels):
                note += f"; the {len(shown)} longest kernels"
            lines.append(note + ":\n\n" + table(["#", "Kernel", "State", *(escape(d) for d in used)], rows,
                                                ["r", "l", "l", *("r" for _ in used)]))
        reasons = error_reasons(run)
        if reasons:
            items = "\n".join(f"- {n:,} kernel{'s' if n != 1 else ''}: {escape(reason)}" for reason, n in reasons)
            lines.append("Kernels without a prediction:\n\n" + items)
        sections.append("\n\n".join(lines))
    return "\n\n".join(sections)


def _figures(figures: Mapping[str, str]) -> str:
    items = [f"![{escape(caption)}]({path.replace(' ', '%20')})" for caption, path in figures.items()]
    return "## Figures\n\n" + "\n\n".join(items)


def _warnings(analysis: Analysis) -> str:
    if not analysis.warnings:
        return "## Warnings\n\nNone."
    return "## Warnings\n\n" + "\n".join(f"- {escape(w)}" for w in analysis.warnings)


def _profiles(analysis: Analysis) -> str:
    """Every file given or found in a folder, with its status (only when there is more than one)."""
    from nvperf_bridge.discovery import profile_rows, show_profiles

    if not show_profiles(analysis.inputs):
        return ""
    rows = [[escape(r["path"]), escape(r["format"]), f"{r['kernels']:,}", escape(r["device"] or ""),
             escape(r["status"])] for r in profile_rows(analysis.inputs)]
    return "## Profiles\n\n" + table(["File", "Format", "Kernels", "Device", "Status"], rows,
                                     ["l", "l", "r", "l", "l"])


def _inputs(analysis: Analysis) -> str:
    if not analysis.inputs:
        return ""
    rows = []
    for item in analysis.inputs:
        skipped = "; ".join(item.skipped) if item.skipped else ""
        rows.append([escape(item.path), escape(item.format), f"{item.kernels:,}", escape(item.device or ""),
                     escape(skipped)])
    return "## Inputs\n\n" + table(["File", "Format", "Kernels", "Device", "Skipped rows"], rows,
                                   ["l", "l", "r", "l", "l"])


def _kernel_names(order: list[Any], number: dict[Any, int], short: pd.Series, full: pd.Series) -> str:
    items = []
    for index in order:
        name = full.loc[index]
        if shorten(short.loc[index], NAME_WIDTH) != " ".join(str(name).split()):
            shown = f"`{_code_span(name)}`" if "`" not in name else escape(name)
            items.append(f"- #{number[index]}: {shown}")
    if not items:
        return ""
    return ("## Kernel names\n\nFull names of the kernels shortened above, by `#`.\n\n"
            + "\n".join(items))


def _code_span(text: str) -> str:
    return " ".join(str(text).split())


__all__ = ["MAX_KERNELS", "escape", "render_markdown", "table"]

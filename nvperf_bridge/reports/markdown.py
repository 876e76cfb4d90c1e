r"""The Markdown report (GitHub-flavoured), for a pull request or a terminal.

It answers the review's three questions first, from the review layer
(``nvperf_bridge.review``; no verdict is computed here):

- Where the time goes: kernel groups (kernel + launch shape) with launches,
  total / mean time, share of GPU time and the verdict, longest first.
- Top kernels: per group holding the first 80% of the time, the verdict and
  what it rests on, Nsight's speed-of-light view beside it (flagged where they
  disagree), Nsight's own rule results and 1-3 actions with the kernel's numbers.
- Coverage: per model, kernels predicted / not predicted; for every group no
  model predicted, the missing counters and the command that collects them.

Then the per-launch detail: Summary (predicted time and error per model),
Bottlenecks, Accuracy, one section per model, Figures, Warnings, Inputs,
Kernel names.

Kernel names sit in code spans (no escapes or HTML entities inside them; a
pipe is written ``\|`` as GFM tables require) and are shortened to
``NAME_WIDTH`` characters; every shortened name is listed in full under
"Kernel names". Prose is escaped with backslashes only. Each time column
carries one unit, chosen from its values. Large inputs show the
``MAX_KERNELS`` longest kernels (the JSON and CSV reports hold all of them).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.run_options import describe_options
from nvperf_bridge.review.build import Review, build_review
from nvperf_bridge.review.coverage import throughput_command, uses_nvprof
from nvperf_bridge.review.roofline import roofline_points, roofs_by_gpu
from nvperf_bridge.reports.common import (
    NOT_JUDGED,
    NOT_JUDGED_NOTE,
    detail_columns,
    display_names,
    error_fraction,
    error_reasons,
    format_number,
    format_time,
    format_percent,
    full_names,
    neutralise_formula,
    not_judged,
    shorten,
    time_unit,
    top_kernels,
    constant_status_summary,
)

MAX_KERNELS = 50  # kernels in the Summary and Bottlenecks tables
MAX_GROUPS = 30  # kernel groups in "Where the time goes"
MAX_RULES = 4  # Nsight rule results per top group
MAX_MODEL_KERNELS = 20  # kernels in each model's quantities table
MAX_DETAILS = 8  # intermediate quantities per model table
NAME_WIDTH = 40

_MD_SPECIAL = re.compile(r"([\\`*\[\]|#~<>&])")
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9_])_+|_+(?![A-Za-z0-9_])")


def escape(text: Any) -> str:
    """Text made safe for a GitHub Markdown table cell or list item: backslash escapes only
    (CommonMark escapes every ASCII punctuation), never HTML entities. An underscore inside a
    word (``smsp__inst_executed``) cannot start emphasis in GFM and is left as it is."""
    return _escape_part(" ".join(str(text).split()))  # newlines and tabs would end the row


def _escape_part(value: str) -> str:
    value = _MD_SPECIAL.sub(r"\\\1", value)
    return _EDGE_UNDERSCORE.sub(lambda match: "\\_" * len(match.group()), value)


def prose(text: Any) -> str:
    """Like :func:`escape`, but `code spans` already in the text are kept as code spans."""
    parts = re.split(r"(`[^`]+`)", " ".join(str(text).split()))
    return "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1 else _escape_part(part)
                   for part in parts)


def code(text: Any, in_table: bool = True) -> str:
    """Text as a code span: shown verbatim (no escapes are processed inside one), with a fence
    longer than any backtick run in it; in a table a pipe is written ``\\|`` (GFM)."""
    value = " ".join(str(text).split())
    if in_table:
        value = value.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: Sequence[str] | None = None) -> str:
    """A GFM table; ``align`` holds 'l' or 'r' per column. Cells must be escaped already."""
    align = align or ["l"] * len(header)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell) if str(cell) != "" else " " for cell in row) + " |")
    return "\n".join(lines)


def render_markdown(analysis: Analysis, figures: Mapping[str, str] | None = None,
                    review: Review | None = None) -> str:
    """The whole report; ``figures`` maps a caption to a relative PNG path to link."""
    return join_markdown(markdown_parts(analysis, review), figures)


def markdown_parts(analysis: Analysis, review: Review | None = None) -> tuple[list[str], list[str]]:
    """The report's sections before and after its Figures section, which ``join_markdown`` puts between
    them: a report with figures is written first and its figures drawn after, so the text's temporaries
    (the review, the consensus of every kernel) and the drawing's never add up in memory."""
    review = review or build_review(analysis)
    order = list(top_kernels(analysis, MAX_KERNELS))
    number = {index: position + 1 for position, index in enumerate(order)}
    listed = analysis.kernels.loc[order]  # only the listed kernels' names are read (each from its own row)
    short = display_names(listed)
    full = full_names(listed)
    before = [
        _header(analysis),
        _groups(review),
        _top_groups(analysis, review),
        _coverage(analysis, review),
        _roofline(analysis, review),
        _summary(analysis, order, number, short),
        _bottlenecks(analysis, order, number, short),
        _accuracy(analysis),
        _models(analysis, order, number, short),
    ]
    after = [
        _warnings(analysis, review),
        _profiles(analysis),
        _inputs(analysis),
        _kernel_names(order, number, short, full, review),
    ]
    return before, after


def join_markdown(parts: tuple[list[str], list[str]], figures: Mapping[str, str] | None = None) -> str:
    """The report's text from ``markdown_parts``, with the Figures section linking ``figures`` (caption ->
    relative PNG path) between them when there are any."""
    before, after = parts
    middle = [_figures(figures)] if figures else []
    return "\n\n".join(part for part in [*before, *middle, *after] if part) + "\n"


def _name_cell(name: str) -> str:
    # a name a spreadsheet would run as a formula (=HYPERLINK(...)) gets an apostrophe, as in the CSV;
    # the full name stays exact in its code span under "Kernel names"
    return code(neutralise_formula(shorten(name, NAME_WIDTH)))


def _group_label(row: Mapping[str, Any]) -> str:
    """'G1' for the longest group: the key under which 'Kernel names' lists the full name."""
    return f"G{int(row['group']) + 1}"


def _shape(row: Mapping[str, Any]) -> str:
    grid, block = row.get("grid_blocks"), row.get("block_threads")
    if grid is None or block is None:
        return ""
    return f"{format_number(grid)} x {format_number(block)}"


def _groups(review: Review) -> str:
    """Where the time goes: one row per kernel group, longest first."""
    rows_data = review.group_rows()
    if not rows_data:
        return "## Where the time goes\n\nThe input holds no kernels."
    table_rows = rows_data[:MAX_GROUPS]
    total_unit = time_unit([r["total_ns"] for r in table_rows if r["total_ns"] is not None])
    mean_unit = time_unit([r["mean_ns"] for r in table_rows if r["mean_ns"] is not None])
    has_time = review.groups.time_source != "none"
    header = ["", "Kernel", "Grid x block", "Launches"]
    align = ["l", "l", "l", "r"]
    if has_time:
        header += [f"Total ({total_unit.label})", f"Mean ({mean_unit.label})", "Share", "Cumulative"]
        align += ["r", "r", "r", "r"]
    header += ["Verdict", "Nsight view"]
    align += ["l", "l"]
    rows = []
    for r in table_rows:
        label = _group_label(r) + (" ★" if r["top"] and has_time else "")
        cells = [label, _name_cell(r["kernel"]), _shape(r), f"{r['launches']:,}"]
        if has_time:
            cells += [_in_unit(r["total_ns"], total_unit), _in_unit(r["mean_ns"], mean_unit),
                      format_percent(r["share"]), format_percent(r["cumulative_share"])]
        view = r["nsight"]["view"] + (" (disagrees)" if r["nsight"]["disagrees_with_verdict"] else "")
        cells += [escape(r["verdict"]), escape(view)]
        rows.append(cells)
    launches = int(review.groups.table["launches"].sum())
    count = len(review.groups.table)
    intro = (f"{launches:,} launch{'es' if launches != 1 else ''} in {count:,} kernel group{'s' if count != 1 else ''} "
             "(kernel and launch shape), longest first.")
    if has_time:
        top = int(review.groups.table["top"].sum())
        intro += (f" ★ = the {top} group{'s' if top != 1 else ''} holding the first 80% of the GPU time"
                  + ("" if review.groups.time_source == "measured"
                     else f" (times from {escape(review.groups.time_source)}, not measured)") + ".")
    else:
        intro += " The input has no measured times, so there is no time share."
    if count > len(table_rows):
        intro += f" Showing the {len(table_rows):,} longest; the JSON report lists all."
    return "## Where the time goes\n\n" + intro + "\n\n" + table(header, rows, align)


def _in_unit(value: float | None, unit: Any) -> str:
    return "" if value is None else format_number(value / unit.ns)


def _recommended_time(row: dict, model_id: str) -> str:
    """'12.3 µs per launch (0.8x the measured time), ' for the recommended estimate, or ''."""
    ratios = {m["model"]: m["ratio"] for m in (*row["models_within"], *row["models_off"])}
    ratio, mean_ns = ratios.get(model_id), row["mean_ns"]
    if ratio is None or mean_ns is None:
        return ""
    return f"{format_time(ratio * mean_ns)} per launch ({format_number(ratio)}x the measured time), "


def _state_clause(state: str) -> str:
    """' (dominant term: dram)': what a model's own state says first (the recommended estimate names the
    bound that sets its time there), or '' when it says nothing."""
    first = state.split(";")[0].strip()
    return f" ({escape(first)})" if first else ""


def _top_groups(analysis: Analysis, review: Review) -> str:
    """Per top group: verdict and basis, Nsight's view, Nsight's rules, advice."""
    blocks = ["## Top kernels"]
    for r in review.group_rows():
        if not r["top"]:
            continue
        share = f", {format_percent(r['share'])} of the GPU time" if r["share"] is not None else ""
        lines = [f"### {_group_label(r)} {code(shorten(r['kernel'], 80), in_table=False)}{share}"]
        facts = [f"- **Verdict: {escape(r['verdict'])}** ({escape(r['basis'])})."]
        if review.recommended and r["model_labels"].get(review.recommended):
            facts.insert(0, f"- Recommended estimate ({escape(review.recommended)}): "
                            f"{_recommended_time(r, review.recommended)}"
                            f"{escape(r['model_labels'][review.recommended])}"
                            f"{_state_clause(r['model_states'].get(review.recommended, ''))}.")
        nsight = r["nsight"]
        if nsight["source"]:
            flag = " **Disagrees with the verdict.**" if nsight["disagrees_with_verdict"] else ""
            who = "Nsight's view" if nsight["source"].startswith("Nsight") else "Speed of light"
            facts.append(f"- {who}: compute {format_percent(nsight['compute']) or 'not measured'}, memory "
                         f"{format_percent(nsight['memory']) or 'not measured'} of peak: {escape(nsight['view'])} "
                         f"({escape(nsight['source'])}).{flag}")
        else:
            facts.append("- Speed of light: no throughput counters in the input (collect them with "
                         f"{code(throughput_command(uses_nvprof(analysis)), in_table=False)}).")
        for rule in r["nsight_rules"][:MAX_RULES]:
            speedup = (f", estimated speedup {format_percent(rule['estimated_speedup'] / 100.0)}"
                       if rule["estimated_speedup"] else "")
            facts.append(f"- Nsight rule {escape(rule['rule'])} ({escape(rule['type'])}{speedup}): "
                         f"{escape(shorten(rule['message'], 300))}")
        if r["advice"]:
            facts.append("- What to do:")
            facts.extend(f"  {i}. {prose(a['text'])}" for i, a in enumerate(r["advice"], 1))
        elif "unpredicted" not in r:
            facts.append("- What to do: no advice rule fired on the counters this input holds.")
        if "unpredicted" in r:
            facts.append(f"- No model predicted it. Collect the missing counters with "
                         f"{code(r['unpredicted']['command'], in_table=False)}")
        lines.append("\n".join(facts))
        blocks.append("\n\n".join(lines))
    return "\n\n".join(blocks) if len(blocks) > 1 else ""


def _roofline(analysis: Analysis, review: Review) -> str:
    """The reviewed groups under the GPU's roofs, as a table (the chart is a linked figure)."""
    points = roofline_points(analysis, review.groups, limit=MAX_GROUPS)
    placed = points[points["why_not"] == ""]
    if placed.empty:
        return ""
    by_gpu = roofs_by_gpu(analysis, points)
    several = len(by_gpu) > 1
    rows = [[f"G{int(r.group) + 1}", _name_cell(r.kernel), *([escape(r.gpu)] if several else []),
             format_number(r.intensity), format_number(r.achieved / 1e9),
             format_number(r.attainable / 1e9), format_percent(r.fraction_of_roof), escape(r.bound)]
            for r in placed.itertuples(index=False)]
    described = {name: f"{format_number(top['peak_flop_per_s'] / 1e9)} GFLOP/s FP32 and "
                       f"{format_number(top['bandwidth_bytes_per_s'] / 1e9)} GB/s (ridge at "
                       f"{format_number(top['ridge_flop_per_byte'])} FLOP/byte)" for name, top in by_gpu.items()}
    if several:
        under = "its GPU's roofs: " + "; ".join(f"{escape(name)}: {text}" for name, text in described.items())
    else:
        name, text = next(iter(described.items()))
        under = f"{escape(name)}'s roofs: {text}"
    intro = (f"Each kernel group at its arithmetic intensity (FLOPs per DRAM byte) and achieved rate, under "
             f"{under}. `nvperf-bridge plot roofline` draws it.")
    skipped = len(points) - len(placed)
    if skipped:
        intro += f" {skipped} group{'s' if skipped != 1 else ''} not placed: {escape(points['why_not'][points['why_not'] != ''].iloc[0])}."
    return "## Roofline\n\n" + intro + "\n\n" + table(
        ["", "Kernel", *(["GPU"] if several else []), "FLOP/byte", "Achieved GFLOP/s", "Roof GFLOP/s", "Of roof",
         "Side of ridge"], rows, ["l", "l", *(["l"] if several else []), "r", "r", "r", "r", "l"])


def _coverage(analysis: Analysis, review: Review) -> str:
    """Per model: kernels predicted / not; per unpredicted group: what is missing and the command."""
    lines = ["## Coverage"]
    if review.coverage:
        rows = [[escape(c["model"]), f"{c['predicted']:,}", f"{c['not_predicted']:,}",
                 escape(shorten(c["reason"], 160))] for c in review.coverage]
        lines.append(f"Kernel rows predicted per model, of {len(analysis.kernels):,}:\n\n"
                     + table(["Model", "Predicted", "Not predicted", "Commonest reason"], rows, ["l", "r", "r", "l"]))
    else:
        lines.append("No model ran.")
    if review.unpredicted:
        # groups that lack the same counters are listed together
        by_missing: dict[str, list[str]] = {}
        for u in review.unpredicted:
            missing = "; ".join(f"{escape(m)} lacks {', '.join(code(c, in_table=False) for c in cols)}"
                                for m, cols in u["missing"].items()) or "no model reported what it lacks"
            by_missing.setdefault(missing, []).append(f"G{u['group'] + 1}")
        items = [f"- {', '.join(labels)}: {missing}." for missing, labels in by_missing.items()]
        commands = list(dict.fromkeys(u["command"] for u in review.unpredicted if u["command"]))
        text = "Kernel groups no model predicted:\n\n" + "\n".join(items)
        if commands:
            text += "\n\nThe command that collects what is missing:\n\n" + "\n\n".join(
                f"```\n{c}\n```" for c in commands)
        lines.append(text)
    return "\n\n".join(lines)


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
    judged_all = True
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
            errors = error_fraction(analysis, run)
            hidden = not_judged(errors, analysis.time_derived_inputs(run))
            # only the listed kernels' texts: every kernel's took 700,000 strings at 100k kernels x 7 models
            shown = errors.loc[order].map(lambda v: format_percent(v, signed=True)).mask(hidden.loc[order],
                                                                                        NOT_JUDGED)
            judged_all = judged_all and not (shown == NOT_JUDGED).any()
            columns.append(shown)
    rows = []
    for position, index in enumerate(order):
        rows.append([number[index], _name_cell(short.loc[index]), *(col.iloc[position] for col in columns)])
    intro = "Predicted time per kernel and model"
    intro += "; error = (predicted - measured) / measured." if has_measured else " (the input has no measured times)."
    if not judged_all:
        intro += f" {NOT_JUDGED_NOTE[0].upper()}{NOT_JUDGED_NOTE[1:]}."
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
    intro = ("Each model's bottleneck (shared vocabulary) and the consensus, by the rules of the verdicts "
             "above: the most common label among the models within 2x of the kernel's measured time (without "
             "one, weighted by the GPU profile's validated accuracy; 'unknown' does not vote); a split vote goes "
             "to the label on the side the measured throughputs name, and a vote no model earned against the "
             "time yields to a measurement that contradicts it.")
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
        options = describe_options(run.options, run.extension_options, run.options_from)
        if options:
            facts.append(f"Options: {escape('; '.join(options))}.")
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


def _warnings(analysis: Analysis, review: Review) -> str:
    warnings = [*review.warnings, *analysis.warnings]
    if not warnings:
        return "## Warnings\n\nNone."
    return "## Warnings\n\n" + "\n".join(f"- {escape(w)}" for w in warnings)


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


def _kernel_names(order: list[Any], number: dict[Any, int], short: pd.Series, full: pd.Series,
                  review: Review) -> str:
    items = []
    for r in review.group_rows()[:MAX_GROUPS]:
        if shorten(r["kernel"], NAME_WIDTH) != " ".join(str(r["kernel_name"]).split()):
            items.append(f"- {_group_label(r)}: {code(r['kernel_name'], in_table=False)}")
    for index in order:
        name = full.loc[index]
        if shorten(short.loc[index], NAME_WIDTH) != " ".join(str(name).split()):
            items.append(f"- #{number[index]}: {code(name, in_table=False)}")
    if not items:
        return ""
    return ("## Kernel names\n\nFull names of the kernels shortened above, by group (G) and by `#`.\n\n"
            + "\n".join(items))


__all__ = ["MAX_KERNELS", "code", "escape", "join_markdown", "markdown_parts", "render_markdown", "table"]

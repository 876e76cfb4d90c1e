"""``nvperf-bridge validate``: the models' prediction error against measured durations,
as a CI guard (exit 1 when a required model is too far off or predicts nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def parse_fraction(text: str) -> float:
    """``--max-mape``: a fraction ("0.25") or a percentage ("25%"), returned as a fraction.

    A bare number above 1 is refused as ambiguous (was "25" meant as 25 %?);
    write thresholds above 100 % with the percent sign ("150%")."""
    import math

    from nvperf_bridge.errors import UsageError

    raw = text.strip()
    percent = raw.endswith("%")
    try:
        value = float(raw[:-1] if percent else raw)
    except ValueError:
        raise UsageError(f"--max-mape {text!r} is not a number", hint="write a fraction like 0.25 or a percentage like 25%") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"--max-mape {text!r} must be a finite number >= 0")
    if percent:
        return value / 100.0
    if value > 1:
        raise UsageError(f"--max-mape {text!r} is ambiguous",
                         hint=f"write {value:g}% for a percentage or {value / 100:g} as a fraction")
    return value


def validate_command(
    files: list[Path] = typer.Argument(..., help="Profiler files or folders (like analyze) with counters and measured durations."),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU profile id or YAML file (default: matched from the device name)."),
    model: list[str] | None = typer.Option(None, "--model", "-m", help="Report only this model (repeatable; default: all)."),
    max_mape: str | None = typer.Option(None, "--max-mape", help="Largest acceptable MAPE: a fraction (0.25) or a percentage (25%)."),
    require: list[str] | None = typer.Option(None, "--require", help="Fail (exit 1) when this model exceeds --max-mape or predicts no kernel (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    plugin: list[str] | None = typer.Option(None, "--plugin", help="Also load a model plugin from this .py file."),
    profile_dir: list[Path] | None = typer.Option(None, "--profile-dir", help="Also look for GPU profiles in this folder."),
) -> None:
    """Print each model's accuracy (per model and per kernel group) against the measured
    durations; exit 1 when a model named with --require exceeds --max-mape or predicts nothing."""
    import json

    from nvperf_bridge.analysis import analyze
    from nvperf_bridge.discovery import read_inputs

    threshold = parse_fraction(max_mape) if max_mape is not None else None
    required = list(dict.fromkeys(require or []))
    selected = list(dict.fromkeys([*(model or []), *required])) if model else None
    analysis = analyze(read_inputs(list(files)), gpu=gpu, model_ids=selected, plugin_files=plugin or [],
                       profile_dirs=tuple(profile_dir or ()))
    for warning in analysis.warnings:
        typer.echo(f"nvperf-bridge: warning: {warning}", err=True)
    accuracy = analysis.accuracy()
    rows = model_rows(analysis, accuracy, threshold, required)
    baseline = baseline_row(analysis)
    compare_with_baseline(rows, baseline)
    groups = group_table(analysis)
    if as_json:
        typer.echo(json.dumps({
            "gpu": analysis.gpu.id, "gpu_choice": analysis.gpu_choice, "calibrated": analysis.gpu.is_calibrated,
            "max_mape": threshold, "required": required, "models": rows, "baseline": baseline,
            "kernel_groups": json.loads(groups.to_json(orient="records")) if not groups.empty else [],
        }, indent=2))
    else:
        typer.echo(render_markdown(analysis, rows, groups, threshold, baseline), nl=False)
    failures = [row for row in rows if row["required"] and not row["pass"]]
    if not analysis.measured_ns.gt(0).any():
        typer.echo("nvperf-bridge: warning: no kernel has a measured duration (duration_ns); nothing to validate against",
                   err=True)
    for row in failures:
        typer.echo(f"nvperf-bridge: validate: {row['model']}: {row['status']}", err=True)
    if failures:
        raise typer.Exit(1)


def model_rows(analysis: Any, accuracy: pd.DataFrame, threshold: float | None, required: list[str]) -> list[dict[str, Any]]:
    """Per model: accuracy statistics and the verdict against the threshold."""
    from nvperf_bridge.accuracy import within_factor_share

    rows = []
    for mid, run in analysis.runs.items():
        stats = accuracy.loc[mid].to_dict() if mid in accuracy.index else {"n": 0}
        n = int(stats.get("n") or 0)
        mape = stats.get("mape")
        if run.result is None:
            status, ok = f"no predictions: {run.failure}", False
        elif n == 0:
            status, ok = "no predictions for kernels with a measured duration", False
        elif threshold is not None and not mape <= threshold:
            status, ok = f"MAPE {100 * mape:.1f}% > {100 * threshold:g}%", False
        else:
            status, ok = ("ok" if threshold is None else f"MAPE {100 * mape:.1f}% <= {100 * threshold:g}%"), True
        rows.append({
            "model": mid, "required": mid in required, "pass": ok, "status": status, "n": n,
            **{key: _finite(stats.get(key)) for key in ("mape", "median_ape", "gm_abs_error", "mean_accuracy")},
            "within_2x": _finite(within_factor_share(run.result["predicted_ns"], analysis.measured_ns))
            if run.result is not None else None,
        })
    return rows


BASELINE = "baseline: roofline x median measured/predicted"


def baseline_predictions(analysis: Any) -> tuple[pd.Series, str]:
    """The trivial baseline a model has to beat: the stock roofline's prediction times the median
    measured/roofline ratio of the *other* applications (leave-one-application-out, so a kernel's
    own time never scales its own baseline). With one application, of the other kernel groups."""
    import numpy as np
    import pandas as pd

    from nvperf_bridge.calibration import application_groups, predict_ns
    from nvperf_bridge.registry import load_registry

    kernels = analysis.kernels
    run = analysis.runs.get("roofline")
    if run is not None and run.result is not None:
        roof = pd.to_numeric(run.result["predicted_ns"], errors="coerce").where(run.result["error"] == "")
    else:
        registry = load_registry([])
        if "roofline" not in registry.models:
            return pd.Series(np.nan, index=kernels.index), "roofline is not installed"
        roof = predict_ns(registry.get("roofline"), kernels, analysis.gpu, {})
    measured = analysis.measured_ns.where(analysis.measured_ns > 0)
    groups = application_groups(kernels)
    ratio = (measured / roof).where(roof > 0)
    scaled = pd.Series(np.nan, index=kernels.index, dtype="float64")
    for group in groups.unique():
        own = (groups == group).to_numpy()
        others = ratio[~own].dropna()
        if not others.empty:
            scaled[own] = roof[own] * float(others.median())
    unit = "application" if groups.nunique() > 1 and "source" in kernels.columns and \
        groups.nunique() == kernels["source"].nunique() else "kernel group"
    return scaled, f"roofline scaled by the median measured/roofline ratio of the other {unit}s (leave-one-{unit}-out)"


def baseline_row(analysis: Any) -> dict[str, Any]:
    """The baseline's statistics, as one row of the model table."""
    from nvperf_bridge.accuracy import accuracy_stats, within_factor_share

    predicted, how = baseline_predictions(analysis)
    stats = accuracy_stats(predicted, analysis.measured_ns)
    return {"model": BASELINE, "how": how, "n": int(stats["n"]),
            **{key: _finite(stats.get(key)) for key in ("mape", "median_ape", "gm_abs_error", "mean_accuracy")},
            "within_2x": _finite(within_factor_share(predicted, analysis.measured_ns))}


def compare_with_baseline(rows: list[dict[str, Any]], baseline: dict[str, Any]) -> None:
    """Mark each model row with whether its median APE beats the baseline's (on its own kernels)."""
    for row in rows:
        mine, theirs = row.get("median_ape"), baseline.get("median_ape")
        row["beats_baseline"] = None if mine is None or theirs is None else bool(mine < theirs)


def group_table(analysis: Any) -> pd.DataFrame:
    """Per kernel group (``kernel`` name): rows, mean measured time, and each model's MAPE."""
    import pandas as pd

    from nvperf_bridge.analysis import ape_frame
    from nvperf_bridge.calibration import kernel_groups

    measured = analysis.measured_ns
    if analysis.kernels.empty:
        return pd.DataFrame()
    frame = pd.DataFrame({"kernel": kernel_groups(analysis.kernels), "measured_ns": measured})
    apes = ape_frame(analysis)
    for mid in apes.columns:
        frame[f"{mid}.mape"] = apes[mid]
    grouped = frame.groupby("kernel", sort=True)
    table = grouped.mean(numeric_only=True).rename(columns={"measured_ns": "measured_mean_ns"})
    table.insert(0, "rows", grouped.size())
    return table.reset_index()


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    import math

    return number if math.isfinite(number) else None


def _pct(value: Any) -> str:
    number = _finite(value)
    return "-" if number is None else f"{100 * number:.1f}%"


def render_markdown(analysis: Any, rows: list[dict[str, Any]], groups: pd.DataFrame, threshold: float | None,
                    baseline: dict[str, Any] | None = None) -> str:
    """The accuracy tables as Markdown."""
    calibrated = " (calibrated)" if analysis.gpu.is_calibrated else ""
    lines = [f"## Accuracy on `{analysis.gpu.id}`{calibrated} ({analysis.gpu_choice})", ""]
    if threshold is not None:
        lines += [f"Threshold: MAPE <= {100 * threshold:g}% (enforced for models named with --require).", ""]
    lines += ["| model | kernels | MAPE | median APE | within 2x | GM abs error | mean accuracy | beats baseline | "
              "required | status |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        beats = {True: "yes", False: "no", None: "-"}[row.get("beats_baseline")]
        lines.append(f"| {row['model']} | {row['n']} | {_pct(row['mape'])} | {_pct(row['median_ape'])} | "
                     f"{_pct(row.get('within_2x'))} | {_pct(row['gm_abs_error'])} | {_pct(row['mean_accuracy'])} | "
                     f"{beats} | {'yes' if row['required'] else ''} | {row['status']} |")
    if baseline is not None:
        lines.append(f"| {baseline['model']} | {baseline['n']} | {_pct(baseline['mape'])} | "
                     f"{_pct(baseline['median_ape'])} | {_pct(baseline.get('within_2x'))} | "
                     f"{_pct(baseline['gm_abs_error'])} | {_pct(baseline['mean_accuracy'])} | - | | {baseline['how']} |")
        lines += ["", ("A model earns its keep when its median APE beats the baseline's: the stock roofline scaled by "
                       "one factor learned from the other applications.")]
    if not groups.empty:
        models = [c.removesuffix(".mape") for c in groups.columns if c.endswith(".mape")]
        lines += ["", "### Per kernel group (MAPE)", "",
                  "| kernel | rows | measured mean (us) | " + " | ".join(models) + " |",
                  "|---|---|---|" + "---|" * len(models)]
        for _, g in groups.iterrows():
            measured = _finite(g["measured_mean_ns"])
            cells = [_pct(g[f"{m}.mape"]) for m in models]
            lines.append(f"| {g['kernel']} | {int(g['rows'])} | {'-' if measured is None else f'{measured / 1e3:.3f}'} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

"""``nvperf-bridge calibrate``: fit the models' machine constants to measured kernel times
and write a calibrated GPU profile (with its provenance and cross-validated errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer


def calibrate_command(
    files: List[Path] = typer.Argument(..., help="Profiler CSV files with counters and measured durations."),
    gpu: str = typer.Option(..., "--gpu", help="Base GPU profile: an id (see 'nvperf-bridge gpus') or a YAML file."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Calibrate only this model (repeatable; default: all)."),
    output: Path = typer.Option(..., "--output", "-o", help="Calibrated profile to write, e.g. profiles/my-gpu-calibrated.yaml (its id is the file stem)."),
    folds: int = typer.Option(5, "--folds", help="k of the k-fold cross-validation by kernel group (reduced when there are fewer groups)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the fold split and of the optimiser's random restarts."),
    force: bool = typer.Option(False, "--force", help="Overwrite the output file if it exists."),
    plugin: Optional[List[str]] = typer.Option(None, "--plugin", help="Also load a model plugin from this .py file."),
    profile_dir: Optional[List[Path]] = typer.Option(None, "--profile-dir", help="Also look for GPU profiles in this folder."),
) -> None:
    """Fit each model's machine constants (inside their physical bounds) to the measured
    durations, cross-validate by kernel group, and write a calibrated GPU profile.

    The report (Markdown) goes to stdout; use the profile with --gpu PATH."""
    from nvperf_bridge import __version__
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.calibration import CalibrationSettings, calibrate, calibrated_profile_mapping, write_profile
    from nvperf_bridge.errors import OutputError, UsageError
    from nvperf_bridge.gpu import profile_from_mapping
    from nvperf_bridge.importers import read_profiles
    from nvperf_bridge.registry import load_registry

    if output.suffix not in (".yaml", ".yml"):
        raise UsageError(f"the output {str(output)!r} must be a .yaml file (a GPU profile)")
    if output.exists() and not force:  # checked first: the fit can take a while
        raise OutputError("already exists", path=output, hint="pass --force to overwrite it")
    imported = read_profiles(list(files))
    for warning in imported.warnings:
        typer.echo(f"nvperf-bridge: warning: {warning}", err=True)
    base, choice = choose_gpu(imported.kernels, gpu, tuple(profile_dir or ()))
    registry = load_registry(plugin or [])
    for problem in registry.problems:
        typer.echo(f"nvperf-bridge: warning: {problem}", err=True)
    wanted = list(model) if model else sorted(registry.models)
    unknown = [mid for mid in wanted if mid not in registry.models]
    if unknown:
        raise UsageError(f"unknown model {unknown[0]!r}", hint="run 'nvperf-bridge models' to list the installed ones")
    typer.echo(f"calibrating {', '.join(wanted)} on {len(imported.kernels)} kernel row(s), base profile {base.id} "
               f"({choice})", err=True)
    settings = CalibrationSettings(folds=folds, seed=seed)
    result = calibrate(imported.kernels, base, {mid: registry.get(mid) for mid in wanted}, settings)
    command = _command_line(files, gpu, model, output, folds, seed)
    document = calibrated_profile_mapping(result, output.stem, files, tool_version=__version__, command=command)
    profile_from_mapping(document, str(output))  # never write a profile that would not load
    typer.echo(render_report(result, command), nl=False)
    write_profile(document, output, force=force)
    for mid, outcome in result.models.items():
        if outcome.cv and outcome.cv.held_out.get("mape", float("nan")) > outcome.before.get("mape", float("nan")):
            typer.echo(f"nvperf-bridge: warning: {mid}: the held-out error after calibration is larger than before; "
                       "the fit does not generalise on this data", err=True)
    typer.echo(f"wrote {output}: use it with --gpu {output}", err=True)


def _command_line(files: list[Path], gpu: str, models: list[str] | None, output: Path, folds: int, seed: int) -> str:
    import shlex

    parts = ["nvperf-bridge", "calibrate", *(str(f) for f in files), "--gpu", gpu]
    for mid in models or []:
        parts += ["--model", mid]
    parts += ["-o", str(output), "--folds", str(folds), "--seed", str(seed)]
    return shlex.join(parts)


def _pct(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if number != number else f"{100 * number:.1f}%"


def render_report(result: Any, command: str = "") -> str:
    """The calibration report as Markdown: the before/after held-out table, then per model
    what was fitted and what could not be, with the reasons."""
    lines = [f"## Calibration of `{result.base.id}` on {result.kernels} kernel row(s) in {result.groups} kernel group(s)", ""]
    if command:
        lines += ["Regenerate with:", "", "```sh", command, "```", ""]
    notes = sorted({o.cv.note for o in result.models.values() if o.cv is not None})
    lines += [f"Cross-validation: {note}." for note in notes]
    lines += [
        "",
        "| model | kernels (groups) | constants fitted | MAPE before | MAPE held-out | median APE before | "
        "median APE held-out | GM abs error before | GM abs error held-out | MAPE in-fold (train) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mid, o in result.models.items():
        if o.skipped:
            lines.append(f"| {mid} | - | skipped: {o.skipped} | - | - | - | - | - | - | - |")
            continue
        cv = o.cv
        held, train = (cv.held_out, cv.train) if cv and cv.folds else ({}, {})
        fitted = f"{len(o.fitted)} of {len(o.fitted) + len(o.unfitted)}"
        lines.append(
            f"| {mid} | {o.kernels} ({o.groups}) | {fitted} | {_pct(o.before.get('mape'))} | {_pct(held.get('mape'))} | "
            f"{_pct(o.before.get('median_ape'))} | {_pct(held.get('median_ape'))} | {_pct(o.before.get('gm_abs_error'))} | "
            f"{_pct(held.get('gm_abs_error'))} | {_pct(train.get('mape'))} |"
        )
    lines.append("")
    for mid, o in result.models.items():
        if o.skipped:
            continue
        lines += [f"### {mid}", "", f"In-sample MAPE after the fit on all kernels: {_pct(o.after.get('mape'))} "
                  f"(before: {_pct(o.before.get('mape'))}).", ""]
        if o.fitted:
            lines += ["| constant | before | after | unit | bounds |", "|---|---|---|---|---|"]
            lines += [f"| {c.name} | {c.before:.6g} | {c.after:.6g} | {c.unit} | [{c.bounds[0]:g}, {c.bounds[1]:g}] |"
                      for c in o.fitted]
            lines.append("")
        for c in o.unfitted:
            lines.append(f"- {c.name} could not be fitted: {c.reason}; it keeps {c.value:.6g}.")
        for note in o.notes:
            lines.append(f"- note: {note}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"

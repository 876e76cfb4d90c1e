"""``nvperf-bridge calibrate``: fit the models' machine constants to measured kernel times
and write a calibrated GPU profile (with its provenance and cross-validated errors)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:  # pragma: no cover
    from nvperf_bridge.calibration import CalibrationResult


def calibrate_command(
    files: list[Path] = typer.Argument(..., help="Profiler files or folders (like analyze) with counters and measured durations."),
    gpu: str | None = typer.Option(None, "--gpu", help="Base GPU profile: an id (see 'nvperf-bridge gpus') or a YAML file (default: matched from the device name in the data)."),
    model: list[str] | None = typer.Option(None, "--model", "-m", help="Calibrate only this model (repeatable; default: all)."),
    output: Path = typer.Option(..., "--output", "-o", help="Calibrated profile to write, e.g. profiles/my-gpu-calibrated.yaml (its id is the file stem)."),
    folds: int = typer.Option(5, "--folds", help="k of the k-fold cross-validation by application: each input file (a metrics+trace pair) is one application, all its kernels in one fold (reduced when there are fewer applications)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the fold split and of the optimiser's random restarts."),
    constant: list[str] | None = typer.Option(None, "--constant", help="Fit only this constant, as MODEL:NAME (repeatable; e.g. hong-kim:Mem_LD). Models not named keep fitting all their constants."),
    option: list[str] | None = typer.Option(None, "--option", metavar="MODEL.KEY=VALUE", help="A model option for the fit, as for analyze (repeatable; e.g. hong-kim.case_selection=published). Written under model_options in the profile. An option a model offers to calibrate (hong-kim's case_selection) is otherwise chosen by the fit."),
    loss: str = typer.Option("soft_l1", "--loss", help="least_squares loss on the log residuals: soft_l1 (default: damps kernels a model is far off on) or linear (plain least squares)."),
    per_kernel: bool = typer.Option(False, "--per-kernel", help="Instead of machine constants, fit one factor per kernel function (and per function and block size) for the recommended estimate, from these runs; analyze --gpu OUTPUT applies it to other runs (other input sizes) of the same functions."),
    force: bool = typer.Option(False, "--force", help="Overwrite the output file if it exists."),
    plugin: list[str] | None = typer.Option(None, "--plugin", help="Also load a model plugin from this .py file."),
    profile_dir: list[Path] | None = typer.Option(None, "--profile-dir", help="Also look for GPU profiles in this folder."),
) -> None:
    """Fit each model's machine constants (inside their physical bounds) to the measured
    durations, cross-validate by kernel group, and write a calibrated GPU profile.

    The report (Markdown) goes to stdout; use the profile with --gpu PATH."""
    from nvperf_bridge import __version__
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.calibration import (
        CalibrationSettings,
        calibrate,
        calibrated_profile_mapping,
        write_profile,
    )
    from nvperf_bridge.errors import OutputError, UsageError
    from nvperf_bridge.gpu import profile_from_mapping
    from nvperf_bridge.discovery import NOT_PROFILER, read_inputs
    from nvperf_bridge.registry import load_registry

    if loss not in ("linear", "soft_l1", "huber", "cauchy"):
        raise UsageError(f"--loss {loss!r} is not one of linear, soft_l1, huber, cauchy")
    if output.suffix not in (".yaml", ".yml"):
        raise UsageError(f"the output {str(output)!r} must be a .yaml file (a GPU profile)")
    import re

    if not re.match(r"^[a-z0-9]+(?:-[a-z0-9]+)*$", output.stem):  # the profile id is the file stem
        raise UsageError(f"the output file name {output.name!r} must be a lowercase-kebab profile id plus .yaml",
                         hint="for example -o profiles/gtx-1080-ti-calibrated.yaml")
    if output.exists() and not force:  # checked first: the fit can take a while
        raise OutputError("already exists", path=output, hint="pass --force to overwrite it")
    imported = read_inputs(list(files))
    # the files actually read (a folder expands to its profiler files): listed with their sha256 in the profile
    data_files = [Path(item.path) for item in imported.inputs if item.format != NOT_PROFILER] or list(files)
    for warning in imported.warnings:
        typer.echo(f"nvperf-bridge: warning: {warning}", err=True)
    base, choice = choose_gpu(imported.kernels, gpu, tuple(profile_dir or ()))
    if per_kernel:
        _per_kernel(imported.kernels, base, data_files, output, force, __version__,
                    _command_line(files, gpu, model, output, folds, seed, loss, constant or [], option or []) + " --per-kernel")
        return
    registry = load_registry(plugin or [])
    for problem in registry.problems:
        typer.echo(f"nvperf-bridge: warning: {problem}", err=True)
    wanted = list(model) if model else sorted(registry.models)
    unknown = [mid for mid in wanted if mid not in registry.models]
    if unknown:
        raise UsageError(f"unknown model {unknown[0]!r}", hint="run 'nvperf-bridge models' to list the installed ones")
    typer.echo(f"calibrating {', '.join(wanted)} on {len(imported.kernels)} kernel row(s), base profile {base.id} "
               f"({choice})", err=True)
    from nvperf_bridge.commands.analyze import parse_options

    options = parse_options(list(option or []))
    unknown = sorted(set(options) - set(wanted))
    if unknown:
        raise UsageError(f"--option for model {unknown[0]!r}, which is not calibrated here",
                         hint=f"the models calibrated: {', '.join(wanted)}")
    if options:  # an option no model reads is a usage error with a did-you-mean, as in analyze
        from nvperf_bridge.analysis import run_models
        from nvperf_bridge.run_options import check_options_read, watch_options

        watched, watches = watch_options(registry, options)
        runs, _ = run_models(imported.kernels, base, watched, sorted(options), options)
        check_options_read(watches, runs, options)
    settings = CalibrationSettings(folds=folds, seed=seed, loss=loss, only=_parse_constants(constant or [], wanted),
                                   options=options)
    result = calibrate(imported.kernels, base, {mid: registry.get(mid) for mid in wanted}, settings)
    if all(outcome.skipped for outcome in result.models.values()):
        from nvperf_bridge.errors import InputError

        typer.echo(render_report(result), nl=False)
        reasons = "; ".join(f"{mid}: {outcome.skipped}" for mid, outcome in result.models.items())
        raise InputError(f"no model could be calibrated on this data, so no profile was written ({reasons})",
                         hint="run 'nvperf-bridge inspect' on the files to see which counters are missing")
    command = _command_line(files, gpu, model, output, folds, seed, loss, constant or [], option or [])
    document = calibrated_profile_mapping(result, output.stem, data_files, tool_version=__version__, command=command)
    profile_from_mapping(document, str(output))  # never write a profile that would not load
    typer.echo(render_report(result, command), nl=False)
    write_profile(document, output, force=force)
    for mid, outcome in result.models.items():
        if outcome.cv and outcome.cv.held_out.get("mape", float("nan")) > outcome.before.get("mape", float("nan")):
            typer.echo(f"nvperf-bridge: warning: {mid}: the held-out error after calibration is larger than before; "
                       "the fit does not generalise on this data", err=True)
    typer.echo(f"wrote {output}: use it with --gpu {output}", err=True)


def _per_kernel(kernels: Any, base: Any, data_files: list[Path], output: Path, force: bool, version: str,
                command: str) -> None:
    """``--per-kernel``: the recommended estimate's factor per kernel function, written as a profile."""
    from nvperf_bridge.builtin_plugins.recommended import MODEL
    from nvperf_bridge.calibration import (
        calibration_date,
        file_sha256,
        kernel_factors,
        measured_ns,
        predict_ns,
        write_profile,
    )
    from nvperf_bridge.errors import InputError
    from nvperf_bridge.gpu import profile_from_mapping

    timed = kernels[measured_ns(kernels).notna()]
    if timed.empty:
        raise InputError("no kernel has a measured duration (duration_ns), so there is nothing to fit a factor to",
                         hint="profile with a trace (nvprof --print-gpu-trace, or ncu's gpu__time_duration.sum)")
    factors = kernel_factors(timed, predict_ns(MODEL, timed, base, {}))
    if not factors:
        raise InputError("the recommended estimate predicts none of the timed kernels, so no factor can be fitted",
                         hint="run 'nvperf-bridge inspect' on the files to see which counters are missing")
    date = calibration_date()
    document = {key: value for key, value in base.raw.items() if key != "calibration"}
    document["id"] = output.stem
    document["name"] = f"{base.name} (per-kernel factors from {len(data_files)} file(s), {date})"
    document["match"] = []  # chosen with --gpu only, never instead of the stock profile
    document["calibration"] = {
        "date": date, "tool": f"nvperf-bridge {version}", "command": command, "base_profile": base.id,
        "data": [{"file": Path(f).name, "sha256": file_sha256(f)} for f in data_files],
        "kernels_with_measured_time": int(len(timed)),
        "method": ("per kernel function (and per function and block size): the median of measured / predicted of the "
                   "recommended estimate over these runs; applied to other runs of the same function"),
        "per_kernel": {MODEL.id: factors},
    }
    profile_from_mapping(document, str(output))  # never write a profile that would not load
    lines = [f"## Per-kernel factors of the recommended estimate on `{base.id}` ({len(timed)} timed runs)", "",
             "Regenerate with:", "", "```sh", command, "```", "",
             "| kernel | runs | factor | by block size |", "|---|---|---|---|"]
    for name, entry in factors.items():
        blocks = ", ".join(f"{b}: {v:.3g}" for b, v in entry.get("by_block_threads", {}).items()) or "-"
        lines.append(f"| {name} | {entry['runs']} | {entry['factor']:.3g} | {blocks} |")
    typer.echo("\n".join(lines) + "\n", nl=False)
    write_profile(document, output, force=force)
    typer.echo(f"wrote {output}: use it with analyze --gpu {output} on other runs of these kernels", err=True)


def _parse_constants(items: list[str], models: list[str]) -> dict[str, list[str]]:
    """``--constant MODEL:NAME`` values as model id -> constant names."""
    from nvperf_bridge.errors import UsageError

    only: dict[str, list[str]] = {}
    for item in items:
        model_id, sep, name = item.partition(":")
        if not sep or not model_id or not name:
            raise UsageError(f"--constant {item!r} must be MODEL:NAME", hint="for example --constant hong-kim:Mem_LD")
        if model_id not in models:
            raise UsageError(f"--constant {item!r} names model {model_id!r}, which is not being calibrated")
        only.setdefault(model_id, []).append(name)
    return only


def _command_line(files: list[Path], gpu: str | None, models: list[str] | None, output: Path, folds: int, seed: int,
                  loss: str, constants: list[str], options: list[str] = ()) -> str:
    import shlex

    parts = ["nvperf-bridge", "calibrate", *(str(f) for f in files), *(["--gpu", gpu] if gpu else [])]
    for mid in models or []:
        parts += ["--model", mid]
    parts += ["-o", str(output), "--folds", str(folds), "--seed", str(seed)]
    for item in constants:
        parts += ["--constant", item]
    for item in options:
        parts += ["--option", item]
    if loss != "soft_l1":  # the default
        parts += ["--loss", loss]
    return shlex.join(parts)


def _bound_note(side: str) -> str:
    if not side:
        return ""
    return f"stopped at its {side} bound: the data asks for a value outside the physical range"


def _pct(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "-"
    import math

    return "-" if math.isnan(number) else f"{100 * number:.1f}%"


def render_report(result: CalibrationResult, command: str = "") -> str:
    """The calibration report as Markdown: the before/after held-out table, then per model
    what was fitted and what could not be, with the reasons."""
    from nvperf_bridge.run_options import describe_options

    lines = [f"## Calibration of `{result.base.id}` on {result.kernels} kernel row(s) in {result.groups} kernel group(s)", ""]
    if command:
        lines += ["Regenerate with:", "", "```sh", command, "```", ""]
    lines += [
        ("Errors are over the kernels with a measured time. *Before*: the base profile's constants. *Held-out*: each "
         "kernel predicted by constants fitted without its application (k-fold by application: every kernel of one "
         "input file, or one metrics+trace pair, in the same fold; with a single input file, by kernel function). "
         "*In-fold*: the same fits on their own training kernels. APE = |predicted - measured| / measured; "
         "accuracy = min/max of the two; within 2x = share of kernels predicted within a factor of 2."),
        "",
        ("| model | kernels (groups) | CV folds | constants fitted | median APE before | median APE held-out | "
         "within 2x held-out | worst held-out applications (median APE) | MAPE before | MAPE held-out | "
         "GM abs error before | GM abs error held-out | mean accuracy before | mean accuracy held-out | MAPE in-fold |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mid, o in result.models.items():
        if o.skipped:
            lines.append(f"| {mid} | - | - | skipped: {o.skipped} |" + " - |" * 11)
            continue
        cv = o.cv
        held, train = (cv.held_out, cv.train) if cv and cv.folds else ({}, {})
        cells = [f"{o.kernels} ({o.groups})", str(cv.folds) if cv and cv.folds else "none",
                 f"{len(o.fitted)} of {len(o.fitted) + len(o.unfitted)}"]
        cells += [_pct(o.before.get("median_ape")), _pct(held.get("median_ape")),
                  _pct(cv.within_2x if cv and cv.folds else None),
                  ", ".join(f"{name} {_pct(ape)}" for name, ape in (cv.worst(3) if cv and cv.folds else [])) or "-"]
        for key in ("mape", "gm_abs_error", "mean_accuracy"):
            cells += [_pct(o.before.get(key)), _pct(held.get(key))]
        cells.append(_pct(train.get("mape")))
        lines.append(f"| {mid} | " + " | ".join(cells) + " |")
    lines.append("")
    for mid, o in result.models.items():
        if o.skipped:
            continue
        lines += [f"### {mid}", ""]
        if o.cv is not None:
            lines += [f"Cross-validation: {o.cv.note}.", ""]
        if o.chosen_options:
            chosen = "; ".join(describe_options(o.chosen_options, o.extension_options))
            folds = "; ".join(", ".join(f"{name}={fold.get(name)}" for name in o.chosen_options)
                              for fold in (o.cv.fold_options if o.cv else []))
            lines += [(f"Options chosen by the fit (the lowest objective of the option sets the model offers; "
                       f"written under model_options, applied by analyze under --option): {chosen}"
                       + (f". Each cross-validation fold chose on its own training applications: {folds}." if folds
                          else ".")), ""]
        lines += [(f"In-sample after the fit on all kernels: MAPE {_pct(o.after.get('mape'))} (before "
                   f"{_pct(o.before.get('mape'))}), mean accuracy {_pct(o.after.get('mean_accuracy'))} (before "
                   f"{_pct(o.before.get('mean_accuracy'))})."), ""]
        if o.fitted:
            lines += ["| constant | before | after | unit | bounds | note |", "|---|---|---|---|---|---|"]
            lines += [f"| {c.name} | {c.before:.6g} | {c.after:.6g} | {c.unit} | [{c.bounds[0]:g}, {c.bounds[1]:g}] | "
                      f"{_bound_note(c.at_bound)} |" for c in o.fitted]
            lines.append("")
        for c in o.unfitted:
            lines.append(f"- {c.name} could not be fitted: {c.reason}; it keeps {c.value:.6g}.")
        for note in o.notes:
            lines.append(f"- note: {note}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"

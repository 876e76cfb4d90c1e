"""``nvperf-bridge fit MODEL TRAIN... -o model.json``: train a learned model (such as Kerr's)
on profiled kernels with measured durations and write what it learned as JSON.

Generic over the installed models: any model object with a ``fit(kernels, gpu, options)
-> dict`` method can be fitted; the dict must be JSON-serialisable. The file is later
given back to the model with ``analyze --model-data MODEL=model.json`` (the CLI reads it
and passes the dict in ``options["model_data"]``; models never touch files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer


def fit_command(
    model_id: str = typer.Argument(..., metavar="MODEL", help="Model to train, e.g. kerr (see 'nvperf-bridge models')."),
    train: List[Path] = typer.Argument(..., metavar="TRAIN...", help="Profiler files or folders (like analyze) with counters and measured durations."),
    output: Path = typer.Option(..., "--output", "-o", help="JSON file to write the fitted model to."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU profile id or YAML file (default: matched from the device name)."),
    force: bool = typer.Option(False, "--force", help="Overwrite the output file if it exists."),
    folds: int = typer.Option(5, "--folds", help="k of the cross-validation by application (each input file / metrics+trace pair one application); 0 skips it."),
    cross_gpu: bool = typer.Option(False, "--cross-gpu", help="kerr: one model over runs from several GPUs, with each GPU's datasheet parameters as a second PCA (Kerr et al. Sec. 6.5); it then predicts GPUs it never saw."),
    plugin: Optional[List[str]] = typer.Option(None, "--plugin", help="Also load a model plugin from this .py file."),
    profile_dir: Optional[List[Path]] = typer.Option(None, "--profile-dir", help="Also look for GPU profiles in this folder."),
) -> None:
    """Fit a learned model on the kernels in TRAIN... and write it as JSON (atomically).

    Use it afterwards with: nvperf-bridge analyze PROFILE --model-data MODEL=FILE.json
    """
    from nvperf_bridge.discovery import NOT_PROFILER
    from nvperf_bridge.registry import load_registry
    from nvperf_bridge.reports.write import check_writable

    registry = load_registry(plugin or [])
    for problem in registry.problems:
        typer.echo(f"nvperf-bridge: warning: {problem}", err=True)
    model = _fittable_model(registry, model_id)
    if cross_gpu and "cross_gpu" not in getattr(model, "fit_options", ()):
        from nvperf_bridge.errors import UsageError

        raise UsageError(f"model {model_id!r} has no cross-GPU form", hint="--cross-gpu is for kerr: leave it out")
    if cross_gpu and gpu:
        from nvperf_bridge.errors import UsageError

        raise UsageError("--cross-gpu reads each device's own profile, and --gpu gives every file the same one",
                         hint="leave out --gpu")
    check_writable(output, force=force)  # before the import and the fit, which can take a while
    imported = _read_training(list(train))
    for warning in imported.warnings:
        typer.echo(f"nvperf-bridge: warning: {warning}", err=True)
    read = [item.path for item in imported.inputs if item.format != NOT_PROFILER] or [str(p) for p in train]
    dirs = tuple(profile_dir or ())
    options = cross_gpu_options(imported.kernels, gpu, dirs) if cross_gpu else {}
    document = fit_model(model, imported.kernels, gpu, dirs, read, options)
    if folds >= 2:
        cv = grouped_cv(model, imported.kernels, gpu, dirs, folds, options)
        document["provenance"]["cross_validation"] = cv
        typer.echo(render_cv(model_id, cv), nl=False, err=True)
    write_model_json(document, output, force=force)
    summary = document.get("provenance", {})
    profiles = (f"GPU profiles {', '.join(dict.fromkeys(summary['gpus'].values()))} (cross-GPU: one per device)"
                if "gpus" in summary else f"GPU profile {summary.get('gpu', '?')} ({summary.get('gpu_choice', '')})")
    typer.echo(
        f"fitted {model_id} on {summary.get('kernels', '?')} kernel row(s) from {len(summary.get('training_files', train))} file(s), "
        f"{profiles}; wrote {output}: use it with analyze --model-data {model_id}={output}",
        err=True,
    )


def _fittable_model(registry: Any, model_id: str) -> Any:
    """The registered model with a callable ``fit``, else a usage error that says why."""
    from nvperf_bridge.errors import UsageError

    if model_id not in registry.models:
        raise UsageError(f"unknown model {model_id!r}", hint="run 'nvperf-bridge models' to list the installed ones")
    model = registry.get(model_id)
    if not callable(getattr(model, "fit", None)):
        fittable = sorted(mid for mid, lm in registry.models.items() if callable(getattr(lm.model, "fit", None)))
        raise UsageError(
            f"model {model_id!r} has nothing to fit (it is analytical: no fit() method)",
            hint=f"models that can be fitted: {', '.join(fittable) or 'none installed'}; "
                 "to tune an analytical model's machine constants use 'nvperf-bridge calibrate'",
        )
    return model


def _read_training(paths: list[Path]) -> Any:
    """The importer, folders included (kept behind one function so tests can hand over a KernelFrame directly)."""
    from nvperf_bridge.discovery import read_inputs

    return read_inputs(paths)


def cross_gpu_options(kernels: Any, gpu: str | None, profile_dirs: tuple[Path, ...]) -> dict[str, Any]:
    """The model options of a cross-GPU fit: ``cross_gpu`` and each device's own profile (as
    ``analyze`` picks them), from which the model reads the GPUs' datasheet parameters."""
    from nvperf_bridge.analysis import choose_gpus

    return {"cross_gpu": True, "gpus": {device: profile for device, profile, _ in choose_gpus(kernels, gpu, profile_dirs)}}


def grouped_cv(model: Any, kernels: Any, gpu: str | None, profile_dirs: tuple[Path, ...], folds: int,
               options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Held-out accuracy of the fit: k-fold by application (every kernel of one input file, or of
    one metrics+trace pair, in the same fold), the model refitted on the other folds each time
    (``options``: the model options of the fit, e.g. ``cross_gpu_options``)."""
    from nvperf_bridge.accuracy import accuracy_stats
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.calibration import CalibrationSettings, cross_validate_learned, measured_ns

    profile, _ = choose_gpu(kernels, gpu, profile_dirs)
    timed = kernels[measured_ns(kernels).notna()]
    cv = cross_validate_learned(model, timed, profile, CalibrationSettings(folds=folds), dict(options or {}))
    if cv.predicted is None:
        return {"folds": 0, "note": cv.note}
    stats = accuracy_stats(cv.predicted, measured_ns(timed))
    return {"folds": cv.folds, "note": cv.note, "n": int(stats["n"]), "median_ape": round(stats["median_ape"], 4),
            "mape": round(stats["mape"], 4), "within_2x": round(cv.within_2x, 4),
            "worst_applications": [[name, round(ape, 4)] for name, ape in cv.worst(3)]}


def render_cv(model_id: str, cv: dict[str, Any]) -> str:
    """One Markdown table row per statistic of the grouped cross-validation."""
    if not cv.get("folds"):
        return f"{model_id}: {cv.get('note', 'no cross-validation')}\n"
    worst = ", ".join(f"{name} {100 * ape:.0f}%" for name, ape in cv["worst_applications"]) or "-"
    return (f"{model_id}: {cv['note']}\n\n| model | kernels | held-out median APE | held-out within 2x | "
            f"held-out MAPE | worst applications |\n|---|---|---|---|---|---|\n| {model_id} | {cv['n']} | "
            f"{100 * cv['median_ape']:.1f}% | {100 * cv['within_2x']:.1f}% | {100 * cv['mape']:.1f}% | {worst} |\n")


def fit_model(model: Any, kernels: Any, gpu: str | None, profile_dirs: tuple[Path, ...] = (),
              sources: list[str] | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Pick the GPU profile, call ``model.fit`` (with ``options``) and add provenance; returns the JSON-ready dict."""
    import datetime as dt
    import json

    from nvperf_bridge import __version__
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.errors import ModelError, NvperfError

    profile, choice = choose_gpu(kernels, gpu, profile_dirs)
    try:
        fitted = model.fit(kernels, profile, dict(options or {}))
    except NvperfError:
        raise
    except Exception as exc:  # plugin code may raise anything: one line, with the model named
        raise ModelError(f"fit raised {type(exc).__name__}: {exc}", model_id=model.id) from exc
    if not isinstance(fitted, dict):
        raise ModelError(f"fit returned {type(fitted).__name__}, expected a dict", model_id=model.id)
    document = dict(fitted)
    document["provenance"] = {
        "model": model.id,
        "model_version": str(getattr(model, "version", "")),
        "tool_version": __version__,
        "gpu": profile.id,
        "gpu_choice": choice,
        **({"gpus": {device: p.id for device, p in options["gpus"].items()}} if options and "gpus" in options else {}),
        "kernels": int(len(kernels)),
        "training_files": list(sources or []),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        json.dumps(document, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"fit returned data that is not JSON-serialisable: {exc}", model_id=model.id) from None
    return document


def write_model_json(document: dict[str, Any], output: Path, *, force: bool = False) -> Path:
    """Write the fitted model as indented JSON through a temp file + os.replace in the same folder."""
    import json

    from nvperf_bridge.reports.write import write_text

    return write_text(output, json.dumps(document, indent=1, allow_nan=False) + "\n", force=force)

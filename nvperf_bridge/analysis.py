"""Run the models over a KernelFrame: pick the GPU profile, evaluate each model
in isolation, validate its output, and compute accuracy and consensus.

This module is the library entry point behind ``nvperf-bridge analyze``::

    from nvperf_bridge.analysis import analyze_files
    analysis = analyze_files(["profile.csv"])
    analysis.summary()          # one row per kernel
    analysis.runs["hong-kim"].result
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import pandas as pd

from nvperf_bridge import __version__
from nvperf_bridge.accuracy import (
    ACCURACY_COLUMNS,
    absolute_percentage_error,
    accuracy_stats,
)
from nvperf_bridge.datasheet import fallback_profile
from nvperf_bridge.errors import ModelError, NvperfError, UsageError
from nvperf_bridge.gpu import GpuProfile, load_profiles, match_device, resolve_profile
from nvperf_bridge.kernelframe import ImportResult, InputFile
from nvperf_bridge.model import (
    ResolvedConstant,
    resolve_constants,
    validate_result,
)
from nvperf_bridge.registry import Registry, load_registry


@dataclass
class ModelRun:
    """One model's outcome over all kernels."""

    model_id: str
    version: str
    paper: str
    origin: str
    result: pd.DataFrame | None  # None when the model failed as a whole
    constants: dict[str, ResolvedConstant] = field(default_factory=dict)
    failure: str = ""  # why the model as a whole produced nothing
    options: dict[str, Any] = field(default_factory=dict)
    description: str = ""  # the model's one-line description, for report headers
    constant_specs: dict[str, Any] = field(default_factory=dict)  # name -> ConstantSpec (unit, meaning), for reports
    requires: tuple[str, ...] = ()  # the model's required canonical columns, to say what is missing


@dataclass
class Analysis:
    kernels: pd.DataFrame
    gpu: GpuProfile
    gpu_choice: str  # how the profile was chosen, for the Notes
    runs: dict[str, ModelRun]
    inputs: list[InputFile]
    warnings: list[str]
    tool_version: str = __version__
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))

    @property
    def measured_ns(self) -> pd.Series:
        if "duration_ns" in self.kernels.columns:
            return pd.to_numeric(self.kernels["duration_ns"], errors="coerce").astype("float64")
        return pd.Series(float("nan"), index=self.kernels.index)

    def ok_runs(self) -> dict[str, ModelRun]:
        return {mid: run for mid, run in self.runs.items() if run.result is not None}

    def accuracy(self) -> pd.DataFrame:
        """Per model: n, mape, median_ape, gm_abs_error, mean_accuracy (fractions)."""
        rows = {mid: accuracy_stats(run.result["predicted_ns"], self.measured_ns) for mid, run in self.ok_runs().items()}
        return pd.DataFrame.from_dict(rows, orient="index", columns=list(ACCURACY_COLUMNS))

    def summary(self) -> pd.DataFrame:
        """One row per kernel: identity, measured time, each model's prediction,
        error and bottleneck, then the consensus bottleneck and how many agree.

        Only models accurate on the kernel vote (within 2x of its measured time;
        without one, weighted by the profile's validated accuracy): see
        ``nvperf_bridge.review.verdict``."""
        from nvperf_bridge.review.verdict import vote_weights, weighted_consensus

        ident = [c for c in ("kernel_id", "kernel", "kernel_name", "invocations") if c in self.kernels.columns]
        table = self.kernels[ident].copy()
        table["measured_ns"] = self.measured_ns
        labels = {}
        for mid, run in self.ok_runs().items():
            res = run.result
            table[f"{mid}.predicted_ns"] = res["predicted_ns"]
            table[f"{mid}.error_pct"] = 100.0 * (res["predicted_ns"] - table["measured_ns"]) / table["measured_ns"]
            table[f"{mid}.bottleneck"] = res["bottleneck"]
            labels[mid] = res["bottleneck"].astype(str)
        weights, _ = vote_weights(self)
        consensus, agree, voters = weighted_consensus(pd.DataFrame(labels, index=self.kernels.index), weights)
        table["consensus_bottleneck"] = consensus
        table["models_agreeing"] = agree
        table["models_voting"] = voters
        return table


def choose_gpu(kernels: pd.DataFrame, gpu: str | None, profile_dirs: Iterable[Path] = ()) -> tuple[GpuProfile, str]:
    """``--gpu`` when given, else the profile matching the device name in the data."""
    dirs = tuple(profile_dirs)
    if gpu:
        return resolve_profile(gpu, dirs), f"--gpu {gpu}"
    profiles = load_profiles(dirs)
    devices = []
    if "device" in kernels.columns:
        devices = [str(d) for d in kernels["device"].dropna().unique() if str(d).strip()]
    for device in devices:
        found = match_device(device, profiles)
        if found is not None:
            return found, f"matched device name {device!r}"
    # no profile names the device: its architecture's stand-in (from the data's compute capability or the name)
    ccs = [str(c) for c in kernels["cc"].dropna().unique()] if "cc" in kernels.columns else []
    fallback = fallback_profile([d for d in devices if not d.isdigit()], ccs, profiles)
    if fallback is not None:
        return fallback, f"architecture fallback ({fallback.id}) for {', '.join(repr(d) for d in devices[:3])}"
    named = ", ".join(repr(d) for d in devices[:3]) or "no device name"
    raise UsageError(
        f"cannot tell which GPU profile to use: the data has {named} and no compute capability",
        hint="pass --gpu ID (see 'nvperf-bridge gpus') or --gpu path/to/profile.yaml",
    )


def _evaluate(loaded: Any, kernels: pd.DataFrame, gpu: GpuProfile, options: dict[str, Any],
              timeout_s: float | None, isolate: bool, printed: list[str]) -> Any:
    """``evaluate`` of one loaded model: in a worker process when ``isolate`` and the model is
    not built in (``nvperf_bridge.isolation``), else in this process (within ``timeout_s``
    seconds when given). What the model printed is appended to ``printed``."""
    from nvperf_bridge import isolation

    if isolate and not loaded.builtin and isolation.isolation_available():
        return isolation.evaluate_in_worker(loaded.model, kernels, gpu, options, timeout_s, printed)
    return isolation.evaluate_in_process(loaded.model, kernels, gpu, options, timeout_s, printed)


def run_models(
    kernels: pd.DataFrame,
    gpu: GpuProfile,
    registry: Registry,
    model_ids: list[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    timeout_s: float | None = None,
    isolate: bool = True,
) -> tuple[dict[str, ModelRun], list[str]]:
    """Evaluate each selected model; one model's failure never stops the others.

    Any exception a model raises, ``SystemExit`` included, is that model's failure
    (``ModelRun.failure`` and a warning). ``timeout_s`` bounds each model's evaluate
    (None: no limit). ``isolate``: plugins that are not built in run in a worker process,
    so ``os._exit``, a crash or a hang costs only their results (False: in-process, for
    trusted plugins). What a model prints is captured into the warnings. The launch
    geometry (``launch.launch_geometry``) is computed once here and shared by every model.
    """
    with _shared_launch_geometry(kernels, gpu):
        return _run_models(kernels, gpu, registry, model_ids, options, timeout_s, isolate)


@contextlib.contextmanager
def _shared_launch_geometry(kernels: pd.DataFrame, gpu: GpuProfile) -> Iterator[None]:
    """The launch geometry computed once for the models of a run; should that fail, each model
    computes its own (and fails in isolation)."""
    from nvperf_bridge.launch import shared_geometry

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(shared_geometry(kernels, gpu))
        except Exception:  # noqa: BLE001 - the models that need it report it, one by one
            pass
        yield


def _run_models(
    kernels: pd.DataFrame,
    gpu: GpuProfile,
    registry: Registry,
    model_ids: list[str] | None,
    options: Mapping[str, Mapping[str, Any]] | None,
    timeout_s: float | None,
    isolate: bool,
) -> tuple[dict[str, ModelRun], list[str]]:
    options = options or {}
    warnings = list(registry.problems)
    wanted = list(registry.models) if not model_ids else list(model_ids)
    unknown = [mid for mid in wanted if mid not in registry.models]
    if unknown:
        raise UsageError(
            f"unknown model {unknown[0]!r}", hint="run 'nvperf-bridge models' to list the installed ones"
        )
    from nvperf_bridge.isolation import exception_name, isolation_available

    if isolate and not isolation_available() and any(not registry.models[mid].builtin for mid in wanted):
        warnings.append("plugins run in this process: worker processes need fork, which this platform lacks")
    runs: dict[str, ModelRun] = {}
    for mid in wanted:
        loaded = registry.models[mid]
        model = loaded.model
        model_options = dict(options.get(mid, {}))
        run = ModelRun(mid, str(getattr(model, "version", "")), str(getattr(model, "paper", "")), loaded.origin, None,
                       options=model_options, description=str(getattr(model, "description", "")),
                       constant_specs={spec.name: spec for spec in getattr(model, "constants", ())
                                       if hasattr(spec, "name")})
        printed: list[str] = []
        try:
            run.constants = resolve_constants(model, gpu)
            raw = _evaluate(loaded, kernels, gpu, model_options, timeout_s, isolate, printed)
            run.result, model_warnings = validate_result(mid, kernels, raw)
            warnings.extend(model_warnings)
        except NvperfError as exc:
            run.failure = str(exc)
            warnings.append(f"model {mid} produced no results: {exc}")
        except (Exception, SystemExit) as exc:  # plugin code may raise anything, exit included; report it, keep going
            name = exception_name(exc)
            run.failure = f"{name}: {exc}"
            warnings.append(f"model {mid} raised {name}: {exc}; its results are left out")
        warnings.extend(f"model {mid} printed: {text}" for text in printed)
        runs[mid] = run
    return runs, warnings


def analyze(
    imported: ImportResult,
    *,
    gpu: str | None = None,
    model_ids: list[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    plugin_files: list[str | Path] | tuple[str | Path, ...] = (),
    profile_dirs: Iterable[Path] = (),
    registry: Registry | None = None,
    timeout_s: float | None = None,
    isolate: bool = True,
) -> Analysis:
    """Run the models over already imported kernels (``timeout_s``: limit per model; ``isolate``:
    plugins that are not built in run in a worker process, see ``run_models``)."""
    profile, choice = choose_gpu(imported.kernels, gpu, profile_dirs)
    registry = registry or load_registry(plugin_files)
    runs, warnings = run_models(imported.kernels, profile, registry, model_ids, options, timeout_s, isolate)
    if profile.fallback_note:
        warnings.insert(0, profile.fallback_note)
    for mid, run in runs.items():
        requires = getattr(registry.models[mid].model, "requires", None) if mid in registry.models else None
        run.requires = tuple(getattr(requires, "required", ()) or ())
    return Analysis(imported.kernels, profile, choice, runs, imported.inputs, [*imported.warnings, *warnings])


def analyze_files(paths: list[str | Path], **kwargs: Any) -> Analysis:
    """Import the files (content-sniffed, merged) and analyze them."""
    from nvperf_bridge.importers import read_profiles

    return analyze(read_profiles([Path(p) for p in paths]), **kwargs)


def ape_frame(analysis: Analysis) -> pd.DataFrame:
    """APE per kernel per model (fractions), for reports."""
    measured = analysis.measured_ns
    return pd.DataFrame(
        {mid: absolute_percentage_error(run.result["predicted_ns"], measured) for mid, run in analysis.ok_runs().items()},
        index=analysis.kernels.index,
    )


__all__ = ["Analysis", "ModelRun", "ModelError", "analyze", "analyze_files", "choose_gpu", "run_models", "ape_frame"]

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
import dataclasses
import datetime as _dt
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge import __version__
from nvperf_bridge.accuracy import (
    ACCURACY_COLUMNS,
    absolute_percentage_error,
    accuracy_stats,
)
from nvperf_bridge.datasheet import fallback_profile
from nvperf_bridge.errors import ModelError, NvperfError, UsageError
from nvperf_bridge.gpu import GpuProfile, load_profiles, match_device, match_reason, resolve_profile
from nvperf_bridge.kernelframe import ImportResult, InputFile
from nvperf_bridge.labels import factorize_text
from nvperf_bridge.model import (
    ResolvedConstant,
    evaluate_shared,
    replace_shared_result,
    resolve_constants,
    shared_evaluations,
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
    # where each option came from: "--option" or "profile <id>" (a calibrated profile's model_options)
    options_from: dict[str, str] = field(default_factory=dict)
    # option values beyond the paper, as the model declares them ({option: (value, ...)})
    extension_options: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    description: str = ""  # the model's one-line description, for report headers
    constant_specs: dict[str, Any] = field(default_factory=dict)  # name -> ConstantSpec (unit, meaning), for reports
    requires: tuple[str, ...] = ()  # the model's required canonical columns, to say what is missing
    optional: tuple[str, ...] = ()  # the columns it reads when present (a time-derived one leaks the time too)
    wall_s: float = 0.0  # seconds its evaluate and result checks took in this run (benchmarks/run.py reads them)
    cpu_s: float = 0.0  # CPU seconds of this process meanwhile (of its own threads while a model runs beside)
    beside: bool = False  # evaluated in a thread of its own beside the other models (analysis.BESIDE_ROWS)


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
    gpus: dict[str, GpuProfile] = field(default_factory=dict)  # device -> its profile (several GPUs in one run)
    rules: Any = None  # Nsight Compute's rule results, when the importer recorded them

    @property
    def measured_ns(self) -> pd.Series:
        if "duration_ns" in self.kernels.columns:
            return pd.to_numeric(self.kernels["duration_ns"], errors="coerce").astype("float64")
        return pd.Series(float("nan"), index=self.kernels.index)

    def one_gpu(self) -> bool:
        """Every kernel row runs on ``gpu`` (one profile for the whole run)."""
        return len(set(id(p) for p in self.gpus.values())) <= 1

    def row_gpus(self) -> pd.Series:
        """Each kernel row's GPU profile: its device's own in a run of several GPUs, else ``gpu``."""
        if self.one_gpu():
            return pd.Series([self.gpu] * len(self.kernels), index=self.kernels.index, dtype="object")
        return device_labels(self.kernels).map(lambda d: self.gpus.get(d, self.gpu)).astype("object")

    def row_gpu_value(self, attribute: str) -> pd.Series:
        """A profile attribute (e.g. ``memory_bandwidth_bytes_per_s``) per kernel row, from ``row_gpus``."""
        if self.one_gpu():  # one value for every row: no profile looked up per row
            return pd.Series(float(getattr(self.gpu, attribute)), index=self.kernels.index, dtype="float64")
        profiles = self.row_gpus()
        values = {id(p): float(getattr(p, attribute)) for p in {id(p): p for p in profiles}.values()}
        return pd.Series([values[id(p)] for p in profiles], index=profiles.index, dtype="float64")

    def gpu_of(self, rows: pd.Index) -> GpuProfile:
        """The profile of a set of rows (a kernel group lives on one device): its first row's."""
        if not len(rows) or self.one_gpu():  # the review asks per kernel group: no column per group
            return self.gpu
        return self.row_gpus().loc[rows[:1]].iloc[0]

    def ok_runs(self) -> dict[str, ModelRun]:
        return {mid: run for mid, run in self.runs.items() if run.result is not None}

    def accuracy(self) -> pd.DataFrame:
        """Per model: n, mape, median_ape, gm_abs_error, mean_accuracy (fractions).

        A kernel where an input the model reads (required or optional) was derived from its own
        duration (DRAM bytes = throughput x duration: ``derived`` marks it "(time)") is left out of
        that model's figures (``time_derived_inputs``): the prediction has seen the measured time
        and says nothing about accuracy.
        """
        measured = self.measured_ns
        rows = {mid: accuracy_stats(run.result["predicted_ns"], measured.mask(self.time_derived_inputs(run)))
                for mid, run in self.ok_runs().items()}
        return pd.DataFrame.from_dict(rows, orient="index", columns=list(ACCURACY_COLUMNS))

    def time_derived_inputs(self, run: ModelRun) -> pd.Series:
        """Per kernel: does a column the model reads (required or optional) carry the measured time
        through a derivation? ``duration_ns`` itself is the target a model is judged on (Kerr trains
        on the other kernels' times), not an input, and is not counted."""
        from nvperf_bridge.importers.derivations import time_derived_any

        read = [c for c in (*run.requires, *run.optional) if c != "duration_ns" and c in self.kernels.columns]
        return time_derived_any(self.kernels, read)  # one pass over the derived text for all of them

    def summary(self) -> pd.DataFrame:
        """One row per kernel: identity, measured time, each model's prediction,
        error and bottleneck, then the consensus bottleneck and how many agree.

        Only models accurate on the kernel vote (within 2x of its measured time;
        without one, weighted by the profile's validated accuracy), and the measured
        throughputs settle a split or unchecked vote, by the review's verdict rules: see
        ``nvperf_bridge.review.verdict``."""
        from nvperf_bridge.review.verdict import kernel_consensus

        ident = [c for c in ("kernel_id", "kernel", "kernel_name", "invocations") if c in self.kernels.columns]
        table = self.kernels[ident].copy()
        table["measured_ns"] = self.measured_ns
        for mid, run in self.ok_runs().items():
            res = run.result
            table[f"{mid}.predicted_ns"] = res["predicted_ns"]
            table[f"{mid}.error_pct"] = 100.0 * (res["predicted_ns"] - table["measured_ns"]) / table["measured_ns"]
            table[f"{mid}.bottleneck"] = res["bottleneck"]
        consensus = kernel_consensus(self)
        table["consensus_bottleneck"] = consensus["consensus"]
        table["models_agreeing"] = consensus["agreeing"]
        table["models_voting"] = consensus["voting"]
        return table


def choose_gpu(kernels: pd.DataFrame, gpu: str | None, profile_dirs: Iterable[Path] = ()) -> tuple[GpuProfile, str]:
    """``--gpu`` when given, else the profile matching the device name in the data (for a run of
    several devices, the first device's: ``choose_gpus`` gives one per device)."""
    chosen = choose_gpus(kernels, gpu, profile_dirs)
    return chosen[0][1], chosen[0][2]


def device_labels(kernels: pd.DataFrame) -> pd.Series:
    """The device of each row as text ('' where the file names none)."""
    if "device" not in kernels.columns:
        return pd.Series("", index=kernels.index, dtype="object")
    # each distinct device text converted once (a run names a few devices over up to millions of rows),
    # the rows then take theirs by code (-1, missing: the last entry)
    codes, distinct = factorize_text(kernels["device"])
    table = pd.Series([*np.asarray(distinct, dtype=object).tolist(), None], dtype="object")
    table = table.where(table.notna(), "").astype(str).str.strip()
    return pd.Series(table.array.take(np.where(codes < 0, len(table) - 1, codes)), index=kernels.index,
                     name=kernels["device"].name)


def choose_gpus(kernels: pd.DataFrame, gpu: str | None,
                profile_dirs: Iterable[Path] = ()) -> list[tuple[str, GpuProfile, str]]:
    """(device, profile, how it was chosen) per device in the data, first device first.

    ``--gpu`` applies to every device. Otherwise each device name is matched on its
    own, so files from two GPUs in one run each get their own profile; a device
    no profile names gets its architecture's stand-in (datasheet.fallback_profile),
    from its rows' compute capability or its name.
    """
    dirs = tuple(profile_dirs)
    devices = [d for d in pd.unique(device_labels(kernels).to_numpy(dtype=object)) if d]  # in order of appearance
    if gpu:
        profile = resolve_profile(gpu, dirs)
        return [(device, profile, f"--gpu {gpu}") for device in devices] or [("", profile, f"--gpu {gpu}")]
    profiles = load_profiles(dirs)
    chosen: list[tuple[str, GpuProfile, str]] = []
    unmatched: list[str] = []
    for device in devices:
        found = match_device(device, profiles)
        if found is not None:
            chosen.append((device, found, match_reason(device, found)))
            continue
        # no profile names the device: its architecture's stand-in (from its rows' compute capability or the name)
        rows = kernels[device_labels(kernels) == device]
        ccs = [str(c) for c in rows["cc"].dropna().unique()] if "cc" in rows.columns else []
        fallback = fallback_profile([] if device.isdigit() else [device], ccs, profiles)
        if fallback is not None:
            chosen.append((device, fallback, f"architecture fallback ({fallback.id}): {fallback.fallback_note}"))
        else:
            unmatched.append(device)
    if not devices:  # no device column: the architecture of the file's compute capability, if it has one
        ccs = [str(c) for c in kernels["cc"].dropna().unique()] if "cc" in kernels.columns else []
        fallback = fallback_profile([], ccs, profiles)
        if fallback is not None:
            chosen.append(("", fallback, f"architecture fallback ({fallback.id})"))
    if unmatched or not chosen:
        named = ", ".join(repr(d) for d in (unmatched or devices)[:3]) or "no device name"
        raise UsageError(
            f"cannot tell which GPU profile to use: the data has {named} and no compute capability",
            hint="pass --gpu ID (see 'nvperf-bridge gpus') or --gpu path/to/profile.yaml",
        )
    return chosen


def compute_capability_warnings(kernels: pd.DataFrame, chosen: list[tuple[str, GpuProfile, str]]) -> list[str]:
    """A profile whose compute capability differs from the one the file reports for its device."""
    if "cc" not in kernels.columns:
        return []
    labels = device_labels(kernels)
    warnings = []
    for device, profile, _ in chosen:
        rows = kernels["cc"][labels == device] if device else kernels["cc"]
        found = sorted({str(c).strip() for c in rows.dropna().unique() if str(c).strip()})
        mismatched = [cc for cc in found if _cc_number(cc) != _cc_number(str(profile.compute_capability))]
        if mismatched:
            warnings.append(f"GPU profile {profile.id} has compute capability {profile.compute_capability}, but the "
                            f"file reports {', '.join(mismatched)} for device {device or '(unnamed)'!r}: its "
                            f"limits and constants may not fit; pass --gpu with the right profile")
    return warnings


def _cc_number(text: str) -> float | None:
    try:
        return round(float(text), 1)
    except ValueError:
        return None


def _evaluate(loaded: Any, kernels: pd.DataFrame, gpu: GpuProfile, options: dict[str, Any],
              timeout_s: float | None, isolate: bool, printed: list[str]) -> Any:
    """``evaluate`` of one loaded model: in a worker process when ``isolate`` and the model is
    not built in (``nvperf_bridge.isolation``), else in this process (within ``timeout_s``
    seconds when given). What the model printed is appended to ``printed``."""
    from nvperf_bridge import isolation

    if isolate and not loaded.builtin and isolation.isolation_available():
        return isolation.evaluate_in_worker(loaded.model, kernels, gpu, options, timeout_s, printed)
    # once per run: a model another one already evaluated on these rows (Transit in the recommended
    # estimate) is not computed again
    return evaluate_shared(loaded.model, kernels, gpu, options, lambda: isolation.evaluate_in_process(
        loaded.model, kernels, gpu, options, timeout_s, printed))


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
    geometry (``launch.launch_geometry``) is computed once here and shared by every model, and a
    model one model evaluates for another (``model.evaluate_shared``) is evaluated once. numpy's
    huge-page advice is off meanwhile where a page fault would wait for compaction
    (``hugepages.small_pages``), and the C heap keeps what the models free (``heap.keep_freed``).
    """
    from nvperf_bridge.heap import keep_freed
    from nvperf_bridge.hugepages import small_pages

    # small_pages: the models' new columns are first-touched memory, which a huge-page fault can make
    # wait for the kernel's compaction (nvperf_bridge.hugepages); keep_freed: one model's freed arrays
    # are the next one's, not fresh pages (nvperf_bridge.heap). Speed only, the same values.
    # the heavy modules a later model imports (kerr: scipy) load on the other core while the geometry is
    # computed and the models before it run
    wanted = [mid for mid in (model_ids or registry.models) if mid in registry.models]
    ahead = _import_ahead([registry.models[mid] for mid in wanted[1:]]) if len(kernels) >= IMPORT_AHEAD_ROWS else None
    try:
        with small_pages(), keep_freed(), _shared_launch_geometry(kernels, gpu) as geometry, shared_evaluations():
            return _run_models(kernels, gpu, registry, model_ids, options, timeout_s, isolate, geometry, ahead)
    finally:
        if ahead is not None:
            ahead.join()  # done long before (nothing is left running after the run)


@contextlib.contextmanager
def _shared_launch_geometry(kernels: pd.DataFrame, gpu: GpuProfile) -> Iterator[Any]:
    """The launch geometry computed once for the models of a run (yielded; None should that fail:
    then each model computes its own, and fails in isolation)."""
    from nvperf_bridge.launch import shared_geometry

    with contextlib.ExitStack() as stack:
        try:
            geometry = stack.enter_context(shared_geometry(kernels, gpu))
        except Exception:  # noqa: BLE001 - the models that need it report it, one by one
            geometry = None
        yield geometry


def _run_models(
    kernels: pd.DataFrame,
    gpu: GpuProfile,
    registry: Registry,
    model_ids: list[str] | None,
    options: Mapping[str, Mapping[str, Any]] | None,
    timeout_s: float | None,
    isolate: bool,
    geometry: Any = None,
    ahead: threading.Thread | None = None,
) -> tuple[dict[str, ModelRun], list[str]]:
    options = options or {}
    warnings = list(registry.problems)
    wanted = list(registry.models) if not model_ids else list(model_ids)
    unknown = [mid for mid in wanted if mid not in registry.models]
    if unknown:
        raise UsageError(
            f"unknown model {unknown[0]!r}", hint="run 'nvperf-bridge models' to list the installed ones"
        )
    from nvperf_bridge.isolation import isolation_available

    if isolate and not isolation_available() and any(not registry.models[mid].builtin for mid in wanted):
        warnings.append("plugins run in this process: worker processes need fork, which this platform lacks")
    from nvperf_bridge.column_pool import ColumnPool

    # a column equal to one an earlier result holds is stored once (memory only: the same values)
    pool = ColumnPool()
    if geometry is not None:  # a model's detail equal to a geometry column (N, #Rep, active SMs) is stored as it
        pool.offer(geometry.made_columns())  # not the calculator's details no model has read (deferred: launch.py)
    beside = _start_beside(kernels, gpu, registry, wanted, options, timeout_s, isolate)
    runs: dict[str, ModelRun | None] = {}
    position = len(warnings)
    try:
        for mid in wanted:
            if beside is not None and mid == beside.model_id:
                runs[mid] = None  # its turn comes last, when its thread has had the others' time; its place stays
                position = len(warnings)
                continue
            runs[mid] = _one_run(mid, kernels, gpu, registry, options, timeout_s, isolate, pool, warnings, ahead,
                                 concurrent=beside is not None)
        if beside is not None:
            own: list[str] = []  # its warnings go where its turn would have put them
            runs[beside.model_id] = _one_run(beside.model_id, kernels, gpu, registry, options, timeout_s, isolate, pool,
                                             own, ahead, beside=beside)
            runs[beside.model_id].beside = True
            warnings[position:position] = own
    finally:
        if beside is not None:
            beside.thread.join()  # nothing left running after the run, whatever stopped it
    return runs, warnings  # type: ignore[return-value]


def _one_run(mid: str, kernels: pd.DataFrame, gpu: GpuProfile, registry: Registry,
             options: Mapping[str, Mapping[str, Any]], timeout_s: float | None, isolate: bool, pool: Any,
             warnings: list[str], ahead: threading.Thread | None, concurrent: bool = False,
             beside: "_Beside | None" = None) -> ModelRun:
    """Evaluate one model (or take its result from ``beside``, its own thread), check its result, share
    its columns through ``pool`` and append its warnings to ``warnings``."""
    from nvperf_bridge.isolation import exception_name

    loaded = registry.models[mid]
    model = loaded.model
    # the profile's model_options (a calibrated profile's chosen options) under the user's --option
    model_options = gpu.options_for(mid, options.get(mid, {}))
    given = options.get(mid, {})
    run = ModelRun(mid, str(getattr(model, "version", "")), str(getattr(model, "paper", "")), loaded.origin, None,
                   options=model_options, description=str(getattr(model, "description", "")),
                   options_from={name: "--option" if name in given else f"profile {gpu.id}"
                                 for name in model_options},
                   extension_options={name: tuple(values) for name, values in
                                      dict(getattr(model, "extension_options", None) or {}).items()},
                   constant_specs={spec.name: spec for spec in getattr(model, "constants", ())
                                   if hasattr(spec, "name")})
    printed: list[str] = []
    if ahead is not None and isolate and not loaded.builtin:
        ahead.join()  # a worker process is forked: never while another thread may hold an import lock
    # CPU seconds of this thread while a model runs beside the others (the process's CPU counts both)
    cpu_clock = time.thread_time if concurrent or beside is not None else time.process_time
    started = (time.perf_counter(), cpu_clock())
    elsewhere = (0.0, 0.0)  # the beside model's evaluate: its own thread's wall and CPU seconds
    try:
        run.constants = resolve_constants(model, gpu)
        if beside is not None:
            raw, elsewhere = beside.outcome()  # evaluated in its thread meanwhile (raises what it raised)
        else:
            raw = _evaluate(loaded, kernels, gpu, model_options, timeout_s, isolate, printed)
        result, model_warnings = validate_result(mid, kernels, raw)
        # the run keeps the model's own frame (evaluate_shared): shared too
        run.result = pool.share(result, *([raw] if isinstance(raw, pd.DataFrame) else []))
        if pool.shared:
            replace_shared_result(raw, pool.shared.pop())
        del raw, result  # the columns the pool replaced are free for the next model now
        warnings.extend(model_warnings)
    except NvperfError as exc:
        run.failure = str(exc)
        warnings.append(f"model {mid} produced no results: {exc}")
    except (Exception, SystemExit) as exc:  # plugin code may raise anything, exit included; report it, keep going
        name = exception_name(exc)
        run.failure = f"{name}: {exc}"
        warnings.append(f"model {mid} raised {name}: {exc}; its results are left out")
    warnings.extend(f"model {mid} printed: {text}" for text in printed)
    run.wall_s = time.perf_counter() - started[0] + elsewhere[0]
    run.cpu_s = cpu_clock() - started[1] + elsewhere[1]
    return run


# From this many kernel rows on, a built-in model that declares ``runs_beside_others`` (Kerr: its fit is
# numpy, scipy and BLAS work that releases the interpreter lock) is evaluated in a thread of its own while
# the other models run in this one, where a core is free for it (``_core_free``): its time is then hidden
# behind theirs. Each model's values are its own computation either way (evaluate is pure; the run's
# shared caches take a lock); only when it is computed changes. The thread costs memory: Kerr's
# temporaries then live at the same time as another model's (on a 100k-launch ncu raw page, peak RSS
# 666 MB with the thread against 588 MB without, and no wall time measurably saved: Kerr takes about
# 0.1 s there), so it starts only where Kerr's time is worth hiding (1M kernels: 1.1 s of Kerr hidden,
# all models 1.86 s; benchmarks/RESULTS.md run L).
BESIDE_ROWS = 250_000


def _core_free() -> bool:
    """Is a core free for a thread beside this one: two or more cores this process may run on, and a
    1-minute load average at most half a core below their count. On a busy machine the thread gets no
    core of its own and only adds its switching: measured at load 5-7 on 2 cores, +40% CPU for the
    1M-kernel run (when Kerr's Gram still ran on two BLAS threads, which spun while they waited; every
    Kerr product is on one thread since, ``blas_threads``)."""
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores >= 2
    return cores >= 2 and load <= cores - 0.5


@dataclass
class _Beside:
    """A model evaluated in a thread of its own (``_start_beside``); ``outcome`` waits for it."""

    model_id: str
    thread: threading.Thread
    result: dict[str, Any]

    def outcome(self) -> tuple[Any, tuple[float, float]]:
        """The model's result frame and (wall, CPU) seconds of its evaluate; raises what it raised."""
        self.thread.join()
        if "error" in self.result:
            raise self.result["error"]
        return self.result["raw"], self.result["seconds"]


def _start_beside(kernels: pd.DataFrame, gpu: GpuProfile, registry: Registry, wanted: list[str],
                  options: Mapping[str, Mapping[str, Any]], timeout_s: float | None,
                  isolate: bool) -> _Beside | None:
    """Start the first wanted built-in model that ``runs_beside_others`` in its own thread (see
    ``BESIDE_ROWS``), or None: a small frame, no free core, a model timeout (enforced on the calling thread), a plugin
    to be run in a worker process (never forked while another thread runs), no such model, or options
    that do not resolve (left to the model's turn, which reports them as before). Only built-in models
    qualify: they never print (a thread of its own has no captured output)."""
    if len(kernels) < BESIDE_ROWS or timeout_s is not None or len(wanted) < 2 or not _core_free():
        return None
    if isolate and any(not registry.models[m].builtin for m in wanted):
        return None
    mid = next((m for m in wanted if registry.models[m].builtin
                and getattr(registry.models[m].model, "runs_beside_others", False)), None)
    if mid is None:
        return None
    model = registry.models[mid].model
    try:
        model_options = gpu.options_for(mid, options.get(mid, {}))
    except Exception:  # noqa: BLE001 - raised again at the model's turn, as without a thread
        return None
    frame = kernels.copy(deep=False)  # as evaluate_in_process gives it: a model that adds columns disturbs no other
    result: dict[str, Any] = {}

    def evaluate() -> None:
        started = (time.perf_counter(), time.thread_time())
        try:
            result["raw"] = evaluate_shared(model, frame, gpu, model_options,
                                            lambda: model.evaluate(frame, gpu, model_options))
        except BaseException as exc:  # noqa: BLE001 - re-raised at the model's turn in the calling thread
            result["error"] = exc
        result["seconds"] = (time.perf_counter() - started[0], time.thread_time() - started[1])

    thread = threading.Thread(target=evaluate, name=f"nvperf-bridge-model-{mid}", daemon=True)
    thread.start()
    return _Beside(mid, thread, result)


# Below this many kernel rows nothing is imported ahead: the models take a fraction of a second, and
# what kerr imports would be loaded for nothing where kerr does not reach for it (thin_svd from 4x its
# columns, clustering). kerr's scipy.linalg (0.2 CPU s, 26 MB, 182 modules) cost the small-file case 0.21
# CPU s; kerr now loads scipy's two compiled BLAS/LAPACK modules alone (scipy_lapack, about 0.01 CPU s)
IMPORT_AHEAD_ROWS = 10_000


def _import_ahead(models: list[Any]) -> threading.Thread | None:
    """Import the modules the built-in ``models`` name in ``import_ahead`` (heavy imports their evaluate
    makes: kerr's scipy, ~0.25 CPU s) in a background thread, started now, while the launch geometry is
    computed and the earlier models run: numpy's loops release the interpreter lock, so on a second
    core the import costs no wall time. A module that fails to import is left to the model's own
    import, which reports it. None when there is nothing to import."""
    import sys

    names = [name for loaded in models if loaded.builtin
             for name in getattr(loaded.model, "import_ahead", ()) if name not in sys.modules]
    if not names:
        return None

    def load() -> None:
        import importlib

        for name in dict.fromkeys(names):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the model's own import raises it again, in its own run
                pass

    thread = threading.Thread(target=load, name="nvperf-bridge-import-ahead", daemon=True)
    thread.start()
    return thread


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
    constants: Mapping[str, Mapping[str, float]] | None = None,
) -> Analysis:
    """Run the models over already imported kernels (``timeout_s``: limit per model; ``isolate``:
    plugins that are not built in run in a worker process, see ``run_models``).

    ``constants`` ({model: {name: value}}) override the profile's machine constants for
    this run (status 'overridden'); an option a model never reads is a usage error with a
    did-you-mean (``nvperf_bridge.run_options``)."""
    from nvperf_bridge.run_options import (check_options_read, check_profile_options_read, override_constants,
                                           watch_options)

    kernels = imported.kernels
    chosen = choose_gpus(kernels, gpu, profile_dirs)
    registry = registry or load_registry(plugin_files)
    profiles = {profile.id: override_constants(profile, registry, constants or {}) for _, profile, _ in chosen}
    # the user's options and every profile's model_options: a name no model reads is an error
    watched_names: dict[str, dict[str, Any]] = {mid: dict(given) for mid, given in (options or {}).items()}
    for each in profiles.values():
        for mid, given in (each.raw.get("model_options") or {}).items():
            watched_names.setdefault(mid, {}).update(given or {})
    watched, watches = watch_options(registry, watched_names)
    if len(profiles) == 1:
        profile = next(iter(profiles.values()))
        choice = "; ".join(dict.fromkeys(how for _, _, how in chosen))
        runs, warnings = run_models(kernels, profile, watched, model_ids, options, timeout_s, isolate)
    else:
        # one profile per device: each device's rows run on its own profile, results joined by row
        labels = device_labels(kernels)
        parts = []
        for profile_id, profile in profiles.items():
            devices = [d for d, p, _ in chosen if p.id == profile_id]
            parts.append((profile, kernels[labels.isin(devices)]))
        parts.sort(key=lambda part: -len(part[1]))  # the device with most rows is the run's main profile
        profile = parts[0][0]
        choice = "; ".join(f"{p.id} for {', '.join(repr(d) for d, q, _ in chosen if q.id == p.id)}"
                           for p, _ in parts)
        runs, warnings = _run_per_device(parts, kernels.index, watched, model_ids, options, timeout_s, isolate)
    check_options_read(watches, runs, options or {})
    for each in profiles.values():
        check_profile_options_read(watches, runs, each)
    notes = list(dict.fromkeys(p.fallback_note for p in profiles.values() if p.fallback_note))
    warnings = [*notes, *compute_capability_warnings(kernels, chosen), *warnings]
    for mid, run in runs.items():
        requires = getattr(registry.models[mid].model, "requires", None) if mid in registry.models else None
        run.requires = tuple(getattr(requires, "required", ()) or ())
        run.optional = tuple(getattr(requires, "optional", ()) or ())
    analysis = Analysis(kernels, profile, choice, runs, imported.inputs, [*imported.warnings, *warnings])
    analysis.gpus = {device: profiles[p.id] for device, p, _ in chosen}
    analysis.rules = getattr(imported, "rules", None)
    return analysis


def _run_per_device(parts: list[tuple[GpuProfile, pd.DataFrame]], index: pd.Index, registry: Registry,
                    model_ids: list[str] | None, options: Mapping[str, Mapping[str, Any]] | None,
                    timeout_s: float | None, isolate: bool = True) -> tuple[dict[str, ModelRun], list[str]]:
    """Each device's rows through the models on its own profile; one ModelRun per model over all rows.

    A model that failed as a whole on one device's rows gives those rows its failure as their reason;
    its constants are the main (first) profile's, and a warning names each device's profile."""
    from nvperf_bridge.model import empty_result

    per_part = []
    warnings: list[str] = []
    for profile, rows in parts:
        runs, part_warnings = run_models(rows, profile, registry, model_ids, options, timeout_s, isolate)
        per_part.append((profile, rows, runs))
        warnings.extend(f"{profile.id}: {w}" for w in part_warnings)
    merged: dict[str, ModelRun] = {}
    for mid, first in per_part[0][2].items():
        results = []
        for profile, rows, runs in per_part:
            run = runs[mid]
            if run.result is not None:
                results.append(run.result)
            else:
                empty = empty_result(rows)
                empty["error"] = f"failed on {profile.id}: {run.failure}"
                results.append(empty)
        ok = [runs[mid] for _, _, runs in per_part if runs[mid].result is not None]
        base = ok[0] if ok else first
        combined = pd.concat(results).reindex(index) if ok else None
        merged[mid] = dataclasses.replace(base, result=combined,
                                          failure="" if ok else "; ".join(r[mid].failure for _, _, r in per_part))
    warnings.append("several GPUs in one run: " + "; ".join(
        f"{len(rows):,} kernel rows on profile {profile.id}" for profile, rows, _ in per_part)
        + "; each model's constants are shown for the first")
    return merged, warnings


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


__all__ = ["Analysis", "ModelRun", "ModelError", "analyze", "analyze_files", "choose_gpu", "choose_gpus", "run_models",
           "ape_frame", "compute_capability_warnings"]

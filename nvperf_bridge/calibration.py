"""Fit a model's machine constants to measured kernel durations, and cross-validate the fit.

The papers fitted their machine constants with micro-benchmarks (Hong & Kim,
Section 5.1: Mem_LD and the departure delays "to find the best fitting
values"; Luo & Suda, Section 3.4; Transit, Section 3: delta and pi from
Stream-like benchmarks). This module does the same with whatever kernels the
user profiled: it moves the constants a model declares (``ConstantSpec``,
inside their physical ``bounds``) so that the model's predictions match the
measured ``duration_ns``.

Method (documented in docs/calibration.md):

- Residuals are ``w * log(predicted / measured)`` (a factor of 2 too slow
  costs the same as a factor of 2 too fast), minimised with
  ``scipy.optimize.least_squares`` (bounded, trust-region reflective) under
  the robust ``soft_l1`` loss (``loss="linear"`` for plain least squares).
  Constants with a positive lower bound are fitted in log space.
- Each kernel group (rows sharing the ``kernel`` name) weighs the same in the
  fit: ``w = 1 / sqrt(rows in the group)``, so a kernel launched 300 times
  does not drown one launched once.
- Before fitting, every constant is perturbed by +-10 % (inside its bounds).
  A constant that moves no prediction cannot be fitted from this data and
  keeps its value, with the reason. The remaining constants are ranked by a
  column-pivoted QR of the (log-log) sensitivity matrix: constants whose
  effect cannot be told apart from constants already chosen, and constants
  beyond one per ``groups_per_constant`` kernel groups, keep their value too.
- Besides the current values, ``restarts`` random starting points (from a
  fixed ``seed``) guard against a local minimum; the current values win ties.
- k-fold cross-validation by kernel group: all rows of one kernel name are in
  the same fold, so the held-out error measures how the calibrated constants
  do on kernels the fit has not seen. Constants are chosen and fitted again
  inside each training fold.

The module is a pure library: it neither reads input files nor prints;
``write_profile`` is the one function that writes (atomically).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.accuracy import accuracy_stats, within_factor_share, worst_groups
from nvperf_bridge.errors import InputError, ModelError, OutputError, UsageError
from nvperf_bridge.gpu import GpuProfile, ModelConstant
from nvperf_bridge.model import ConstantSpec, resolve_constants, validate_result
from nvperf_bridge.run_options import is_extension

# A change of log(prediction) smaller than this counts as "no change"
# (1e-9 relative: far below any profiler's timing resolution).
NO_EFFECT = 1e-9
# Residual given to a kernel the model stops predicting at a trial point
# (log scale: a miss by a factor e^10), so the optimiser steers away from it.
LOST_PREDICTION_PENALTY = 10.0
# Share of a constant's sensitivity left unexplained by the constants already chosen
# below which its effect counts as a combination of theirs.
COLLINEAR = 1e-3
# Root-mean-square elasticity (d log predicted / d log constant) below which a constant's
# own effect is too small to fit: a 1% change moves the predictions by < 1e-4 %.
WEAK = 1e-4

# An option set other than the defaults is chosen only when its fit lowers the training objective by
# more than this share: a tie (or a difference the restarts could make) keeps the published default.
OPTION_MARGIN = 1e-3

ACCURACY_KEYS = ("n", "mape", "median_ape", "gm_abs_error", "mean_accuracy")


@dataclass(frozen=True)
class CalibrationSettings:
    """How to fit and cross-validate (the CLI exposes ``folds`` and ``seed``)."""

    folds: int = 5
    seed: int = 0
    perturbation: float = 0.10
    restarts: int = 1
    groups_per_constant: int = 2
    max_nfev: int = 100
    # scipy least_squares loss on the log residuals. soft_l1 (the default) damps the kernels a model cannot describe
    # (an error beyond about f_scale counts linearly, not squared), so a few kernels off by 10-100x do not pull the
    # constants away from the many the model does describe; "linear" is plain least squares. Held out on
    # magus-corpus (5-fold by application, fold seeds 0-2; docs/calibration.md) soft_l1 is better for kothapalli,
    # luo-suda and transit
    loss: str = "soft_l1"
    f_scale: float = 0.7  # residual (log scale) where a robust loss starts to damp: about a factor of 2
    # How the fit weighs the kernels: "kernel" gives every kernel function the same total weight (1/sqrt of its
    # rows), "application" every application (1/sqrt of the application's rows, ``application_groups``), so an
    # application with twelve kernels does not pull the shared constants twelve times as hard as one with one
    weight_by: str = "kernel"
    only: Mapping[str, Sequence[str]] = field(default_factory=dict)  # model id -> the constants to consider
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # model id -> evaluate options


@dataclass(frozen=True)
class FittedConstant:
    """A constant the fit moved: its value before and after, unit and bounds."""

    name: str
    unit: str
    bounds: tuple[float, float]
    before: float
    after: float
    before_source: str
    before_status: str

    @property
    def at_bound(self) -> str:
        """"lower" or "upper" when the fit stopped on a physical bound (the data wants a value
        physics does not allow: the model misses something on these kernels), else ""."""
        lo, hi = self.bounds
        tolerance = 1e-6 * max(abs(lo), abs(hi), 1e-12)
        if self.after - lo <= tolerance:
            return "lower"
        if hi - self.after <= tolerance:
            return "upper"
        return ""


@dataclass(frozen=True)
class UnfittedConstant:
    """A constant the data cannot pin down; it keeps ``value``."""

    name: str
    value: float
    reason: str


@dataclass(frozen=True)
class FoldPlan:
    """Which fold each row is held out in (``-1`` everywhere when there is no CV)."""

    fold_of_row: np.ndarray
    folds: int
    requested: int
    note: str


@dataclass
class CrossValidation:
    """Pooled errors of the k fits: on their training rows and on their held-out rows."""

    folds: int
    requested: int
    seed: int
    note: str
    train: dict[str, float]
    held_out: dict[str, float]
    fold_of_group: dict[str, int]
    fold_fits: list[dict[str, float]] = field(default_factory=list)
    fold_options: list[dict[str, Any]] = field(default_factory=list)  # the options each fold's fit chose
    predicted: pd.Series | None = None  # each row's held-out prediction (NaN where none)
    measured: pd.Series | None = None
    groups: pd.Series | None = None  # each row's application (the CV group)

    @property
    def within_2x(self) -> float:
        """Share of held-out predictions within a factor of 2 of the measured time."""
        if self.predicted is None or self.measured is None:
            return math.nan
        return within_factor_share(self.predicted, self.measured)

    def worst(self, count: int = 3) -> list[tuple[str, float]]:
        """The applications with the largest held-out median APE, worst first."""
        if self.predicted is None or self.measured is None or self.groups is None:
            return []
        return worst_groups(self.predicted, self.measured, self.groups, count)


@dataclass
class ModelCalibration:
    """One model's calibration: what moved, what could not, and the errors."""

    model_id: str
    version: str = ""
    skipped: str = ""  # why the model was not calibrated at all ("" when it was)
    fitted: list[FittedConstant] = field(default_factory=list)
    unfitted: list[UnfittedConstant] = field(default_factory=list)
    before: dict[str, float] = field(default_factory=dict)  # base constants, all rows used
    after: dict[str, float] = field(default_factory=dict)  # fitted constants, same rows (in-sample)
    cv: CrossValidation | None = None
    kernels: int = 0
    groups: int = 0
    notes: list[str] = field(default_factory=list)
    # the options the fit ran with: the user's, and those chosen among the model's calibration_options
    options: dict[str, Any] = field(default_factory=dict)
    chosen_options: dict[str, Any] = field(default_factory=dict)  # only those the fit chose (not the user's)
    extension_options: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # the model's, to mark EXTENSIONs

    @property
    def values(self) -> dict[str, float]:
        return {c.name: c.after for c in self.fitted}


@dataclass
class CalibrationResult:
    base: GpuProfile
    settings: CalibrationSettings
    models: dict[str, ModelCalibration]
    kernels: int
    groups: int
    notes: list[str] = field(default_factory=list)


# ---- data preparation --------------------------------------------------------

def kernel_groups(kernels: pd.DataFrame) -> pd.Series:
    """The group label of each row: the short ``kernel`` name (else full name, else id)."""
    for column in ("kernel", "kernel_name", "kernel_id"):
        if column in kernels.columns:
            labels = kernels[column].astype("object")
            if labels.notna().any():
                return labels.where(labels.notna(), "<unnamed>").astype(str)
    return pd.Series([f"row {i}" for i in range(len(kernels))], index=kernels.index, dtype="object")


def application_name(source: str) -> str:
    """The application a profiler file belongs to: its file stem without the ``metrics_`` /
    ``traces_`` / ``trace_`` prefix nvprof workflows use, so a metrics+trace pair is one application."""
    stem = Path(str(source)).stem
    for prefix in ("metrics_", "traces_", "trace_", "metrics-", "traces-", "trace-"):
        if stem.startswith(prefix) and len(stem) > len(prefix):
            return stem[len(prefix):]
    return stem


def application_groups(kernels: pd.DataFrame) -> pd.Series:
    """The cross-validation group of each row: its application, i.e. the input file it came from
    (a joined nvprof metrics+trace pair is one application). When every row comes from one file
    (a kernel-yaml set, one ncu export) the file says nothing, and the kernel function is the
    application instead (``kernel_groups``)."""
    if "source" in kernels.columns:
        sources = kernels["source"].astype("object")
        if sources.notna().all():
            names = sources.map(application_name)
            if names.nunique() > 1:
                return names.astype(str)
    return kernel_groups(kernels)


def measured_ns(kernels: pd.DataFrame) -> pd.Series:
    """``duration_ns`` as float, NaN where missing or not positive."""
    if "duration_ns" not in kernels.columns:
        return pd.Series(np.nan, index=kernels.index, dtype="float64")
    values = pd.to_numeric(kernels["duration_ns"], errors="coerce").astype("float64")
    return values.where(values > 0)


def group_weights(groups: pd.Series) -> np.ndarray:
    """1/sqrt(rows in the group): every group contributes the same sum of squared weights."""
    sizes = groups.map(groups.value_counts())
    return 1.0 / np.sqrt(sizes.to_numpy(dtype="float64"))


def fit_weights(kernels: pd.DataFrame, weight_by: str = "kernel") -> np.ndarray:
    """Each row's weight in a fit: ``group_weights`` over the kernel functions ("kernel") or over
    the applications ("application", ``application_groups``)."""
    if weight_by == "kernel":
        return group_weights(kernel_groups(kernels))
    if weight_by == "application":
        return group_weights(application_groups(kernels))
    raise ValueError(f"weight_by must be 'kernel' or 'application', not {weight_by!r}")


def group_folds(groups: Sequence[str] | pd.Series, folds: int, seed: int, unit: str = "kernel group") -> FoldPlan:
    """GroupKFold-like split: every row of a group lands in the same fold.

    Groups are shuffled with ``seed`` and dealt round-robin, so folds differ by
    at most one group. With fewer groups than ``folds``, k drops to the number
    of groups (leave-one-group-out); with fewer than 2 groups there is no CV.
    """
    labels = [str(g) for g in groups]
    unique = sorted(set(labels))  # sorted first, so the split does not depend on row order
    none = np.full(len(labels), -1, dtype=int)
    if folds < 2:
        return FoldPlan(none, 0, folds, f"cross-validation off (--folds {folds}; it needs at least 2)")
    if len(unique) < 2:
        return FoldPlan(
            none, 0, folds,
            f"no cross-validation: the data has {len(unique)} {unit}(s); a held-out fold needs a {unit} "
            f"the fit has not seen, so at least 2 groups ({unit}s) are needed",
        )
    k = min(folds, len(unique))
    note = f"{k}-fold cross-validation by {unit} ({len(unique)} {unit}s, seed {seed})"
    if k < folds:
        note = (f"{k}-fold cross-validation by {unit}: only {len(unique)} {unit}s, so k was reduced from "
                f"{folds} to {k} (leave-one-{unit.replace(' ', '-')}-out, seed {seed})")
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of_group = {unique[g]: position % k for position, g in enumerate(order)}
    return FoldPlan(np.array([fold_of_group[label] for label in labels], dtype=int), k, folds, note)


# ---- evaluating a model with trial constants -----------------------------------

def with_constants(gpu: GpuProfile, model_id: str, values: Mapping[str, float], source: str, status: str) -> GpuProfile:
    """A copy of ``gpu`` whose profile gives ``values`` for ``model_id`` (others untouched)."""
    constants = {mid: dict(named) for mid, named in gpu.model_constants.items()}
    named = constants.setdefault(model_id, {})
    raw_models = {mid: dict(named_raw) for mid, named_raw in (gpu.raw.get("models") or {}).items()}
    raw_named = raw_models.setdefault(model_id, {})
    for name, value in values.items():
        named[name] = ModelConstant(float(value), source, status)
        raw_named[name] = {"value": float(value), "source": source, "status": status}
    raw = dict(gpu.raw)
    raw["models"] = raw_models
    return replace(gpu, model_constants=constants, raw=raw)


def predict_ns(model: Any, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.Series:
    """The model's predicted_ns per row: NaN where it gives a reason or an unusable value.

    The same rules as ``validate_result``, without its repairs and reports: this runs
    hundreds of times per fit, and a malformed result still goes through
    ``validate_result`` so that it raises the same ``ModelError``."""
    raw = model.evaluate(kernels, gpu, dict(options))
    if (not isinstance(raw, pd.DataFrame) or "predicted_ns" not in raw.columns or len(raw) != len(kernels)
            or not raw.index.equals(kernels.index)):
        raw, _ = validate_result(model.id, kernels, raw)
    predicted = pd.to_numeric(raw["predicted_ns"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan).copy()
    if "error" in raw.columns:
        predicted[raw["error"].fillna("").astype(str).to_numpy() != ""] = np.nan
    predicted[~np.isfinite(predicted) | (predicted <= 0)] = np.nan
    return pd.Series(predicted, index=kernels.index, dtype="float64")


class _Evaluator:
    """Predictions of one model on fixed rows as a function of some of its constants."""

    def __init__(self, model: Any, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> None:
        self.model, self.kernels, self.gpu, self.options = model, kernels, gpu, options
        # Models can take tens of ms per call; the start point and the perturbations recur.
        self._cache: dict[tuple[tuple[str, float], ...], np.ndarray] = {}
        # A model may offer fit_predictor(kernels, gpu, options): a function of trial constants giving the
        # same predicted_ns as evaluate (NaN where it gives a reason), with what does not depend on the
        # constants computed once (speed only; tests/test_calibration.py checks the two agree)
        make = getattr(model, "fit_predictor", None)
        self._predictor = make(kernels, gpu, options) if callable(make) else None

    def log_predictions(self, values: Mapping[str, float]) -> np.ndarray:
        key = tuple(sorted((name, float(value)) for name, value in values.items()))
        if key not in self._cache:
            if self._predictor is not None:
                predicted = np.asarray(self._predictor(values), dtype="float64").copy()
                predicted[~np.isfinite(predicted) | (predicted <= 0)] = np.nan
            else:
                trial = with_constants(self.gpu, self.model.id, values, "calibration trial", "calibrated")
                predicted = predict_ns(self.model, self.kernels, trial, self.options).to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                self._cache[key] = np.log(predicted)
        return self._cache[key].copy()


# ---- choosing which constants the data can pin down ------------------------------

def _perturbed(value: float, bounds: tuple[float, float], fraction: float) -> tuple[float, float]:
    lo, hi = bounds
    step = fraction * abs(value) if value != 0 else fraction * ((hi - lo) if math.isfinite(hi - lo) else 1.0)
    return max(value - step, lo), min(value + step, hi)


def select_constants(
    evaluator: _Evaluator,
    specs: Sequence[ConstantSpec],
    start: Mapping[str, float],
    weights: np.ndarray,
    n_groups: int,
    settings: CalibrationSettings,
) -> tuple[list[str], list[UnfittedConstant]]:
    """Which constants to fit; the others with the reason they cannot be fitted."""
    base = evaluator.log_predictions(start)
    unfitted: list[UnfittedConstant] = []
    columns: dict[str, np.ndarray] = {}
    n_rows = int(np.isfinite(base).sum())
    for spec in specs:
        value = start[spec.name]
        low, high = _perturbed(value, spec.bounds, settings.perturbation)
        if high <= low:
            unfitted.append(UnfittedConstant(spec.name, value, f"its bounds {list(spec.bounds)} leave no room to move"))
            continue
        down = evaluator.log_predictions({**start, spec.name: low})
        up = evaluator.log_predictions({**start, spec.name: high})
        change = np.nan_to_num(np.abs(np.vstack([down - base, up - base])), nan=np.inf)
        if not np.any(change > NO_EFFECT):
            unfitted.append(UnfittedConstant(
                spec.name, value,
                f"changing it by +-{settings.perturbation:.0%} moves no prediction of the {n_rows} kernel(s) with a "
                "measured time (none of them is limited by the term it enters, or the inputs it scales are absent)",
            ))
            continue
        # Scale-free sensitivity: d log(predicted) / d log(constant) where that is defined.
        # A constant at 0 (an added term that is off until fitted, e.g. launch_ns) has no log scale:
        # its column is the change over the perturbation span itself.
        scale = ((math.log(high) - math.log(low)) if low > 0 else
                 (high - low) / abs(value) if value != 0 else 1.0)
        columns[spec.name] = np.nan_to_num((up - down) / scale, nan=0.0, posinf=0.0, neginf=0.0)
    if not columns:
        return [], unfitted
    limit = n_groups // max(settings.groups_per_constant, 1)
    names = list(columns)
    matrix = weights[:, None] * np.column_stack([columns[n] for n in names])
    rms_scale = math.sqrt(max(float(np.sum(weights ** 2)), 1e-300))
    chosen: list[str] = []
    remaining = list(names)
    # Greedy column-pivoted Gram-Schmidt: take the constant with the largest effect not
    # already explained by the chosen ones (what a pivoted QR does, with reasons).
    while remaining:
        residual = {name: _unexplained(matrix[:, names.index(name)], matrix, names, chosen) for name in remaining}
        name = max(remaining, key=lambda n: (residual[n][0], -names.index(n)))
        remaining.remove(name)
        left, own = residual[name]
        reason = ""
        if left < COLLINEAR * own:
            reason = (f"on these kernels its effect on the predictions cannot be told apart from that of "
                      f"{_entangled_with(matrix[:, names.index(name)], matrix, names, chosen)} (the data moves them together)")
        elif left / rms_scale < WEAK:
            reason = (f"its effect on these kernels is too small to measure (a 1% change moves the predictions by "
                      f"{left / rms_scale:.1e}% rms)")
        elif len(chosen) >= limit:
            reason = (f"too few kernels: {n_groups} kernel group(s) support at most {limit} fitted constant(s) "
                      f"({settings.groups_per_constant} groups per constant), and it moves the predictions less than "
                      f"{', '.join(chosen)}" if chosen else
                      f"too few kernels: {n_groups} kernel group(s) support no fitted constant "
                      f"(at least {settings.groups_per_constant} groups per constant are needed)")
        if reason:
            unfitted.append(UnfittedConstant(name, start[name], reason))
        else:
            chosen.append(name)
    order = {spec.name: i for i, spec in enumerate(specs)}
    unfitted.sort(key=lambda c: order[c.name])
    return sorted(chosen, key=order.__getitem__), unfitted


def _unexplained(column: np.ndarray, matrix: np.ndarray, names: list[str], chosen: list[str]) -> tuple[float, float]:
    """(norm of the part of ``column`` the chosen constants' columns do not reproduce, norm of ``column``)."""
    own = float(np.linalg.norm(column))
    if not chosen:
        return own, own
    basis = matrix[:, [names.index(n) for n in chosen]]
    coef, *_ = np.linalg.lstsq(basis, column, rcond=None)
    return float(np.linalg.norm(column - basis @ coef)), own


def _entangled_with(column: np.ndarray, matrix: np.ndarray, names: list[str], chosen: list[str]) -> str:
    """The already chosen constants that together reproduce ``column`` (for the reason text)."""
    if not chosen:
        return "the other constants"
    basis = matrix[:, [names.index(n) for n in chosen]]
    coef, *_ = np.linalg.lstsq(basis, column, rcond=None)
    weight = np.abs(coef) * np.linalg.norm(basis, axis=0)
    partners = [n for n, w in zip(chosen, weight) if w > 0.1 * max(weight.max(), 1e-300)]
    return ", ".join(partners or chosen)


# ---- the fit -----------------------------------------------------------------

class _Transform:
    """Constants <-> optimiser variables: log space when the lower bound is positive."""

    def __init__(self, specs: Sequence[ConstantSpec]) -> None:
        self.specs = list(specs)
        self.log = np.array([spec.bounds[0] > 0 for spec in specs])
        lo = np.array([float(s.bounds[0]) for s in specs])
        hi = np.array([float(s.bounds[1]) for s in specs])
        self.lo_c, self.hi_c = lo, hi
        with np.errstate(divide="ignore"):
            self.lo = np.where(self.log, np.log(np.where(self.log, lo, 1.0)), lo)
            self.hi = np.where(self.log, np.log(np.where(self.log & (hi > 0), hi, 1.0)), hi)
        self.hi = np.where(self.log & ~np.isfinite(hi), np.inf, self.hi)

    def to_x(self, constants: np.ndarray) -> np.ndarray:
        x = np.array(constants, dtype="float64")
        x[self.log] = np.log(x[self.log])
        return x

    def to_constants(self, x: np.ndarray) -> np.ndarray:
        constants = np.array(x, dtype="float64")
        constants[self.log] = np.exp(constants[self.log])
        # Clip last: exp(log(hi)) can land one ulp outside the bound.
        return np.clip(constants, self.lo_c, self.hi_c)


def fit_constants(
    evaluator: _Evaluator,
    specs: Sequence[ConstantSpec],
    start: Mapping[str, float],
    measured: np.ndarray,
    weights: np.ndarray,
    settings: CalibrationSettings,
) -> dict[str, float]:
    """Least-squares values of ``specs`` (others fixed at ``start``), inside their bounds."""
    return _fit_with_cost(evaluator, specs, start, measured, weights, settings)[0]


def robust_cost(residuals: np.ndarray, settings: CalibrationSettings) -> float:
    """The objective ``least_squares`` minimises for these residuals under ``settings.loss``:
    0.5 x sum of rho((r / f_scale)^2) x f_scale^2 (scipy's loss functions)."""
    z = (np.asarray(residuals, dtype="float64") / settings.f_scale) ** 2
    rho = {"linear": lambda z: z, "soft_l1": lambda z: 2.0 * (np.sqrt(1.0 + z) - 1.0),
           "huber": lambda z: np.where(z <= 1.0, z, 2.0 * np.sqrt(z) - 1.0),
           "cauchy": np.log1p, "arctan": np.arctan}[settings.loss]
    return float(0.5 * settings.f_scale ** 2 * np.sum(rho(z)))


def _fit_with_cost(
    evaluator: _Evaluator,
    specs: Sequence[ConstantSpec],
    start: Mapping[str, float],
    measured: np.ndarray,
    weights: np.ndarray,
    settings: CalibrationSettings,
) -> tuple[dict[str, float], float]:
    """``fit_constants``'s values and the objective they reach (the robust cost of the weighted
    log residuals, the lost-prediction penalty included), so that fits can be compared."""
    from scipy.optimize import least_squares

    log_measured = np.log(measured)

    def at(values: Mapping[str, float]) -> np.ndarray:
        r = evaluator.log_predictions(values) - log_measured
        return weights * np.where(np.isfinite(r), r, LOST_PREDICTION_PENALTY)

    if not specs:
        return {}, robust_cost(at(start), settings)
    transform = _Transform(specs)

    def residuals(x: np.ndarray) -> np.ndarray:
        values = dict(start)
        values.update(zip((s.name for s in specs), transform.to_constants(x)))
        return at(values)

    x0 = transform.to_x(np.clip([start[s.name] for s in specs], transform.lo_c, transform.hi_c))
    starts = [x0, *_random_starts(transform, x0, settings)]
    best: tuple[float, np.ndarray] | None = None
    for x_start in starts:
        x_start = _inside(x_start, transform)
        # diff_step 1e-3: models with floors and min/max are flat at a 1e-8 step
        solution = least_squares(residuals, x_start, bounds=(transform.lo, transform.hi), method="trf",
                                 diff_step=1e-3, xtol=1e-6, ftol=1e-8, gtol=1e-8, max_nfev=settings.max_nfev,
                                 loss=settings.loss, f_scale=settings.f_scale)
        cost = float(solution.cost)
        # The current values' fit wins unless a restart is clearly better.
        if best is None or cost < best[0] * (1 - 1e-6) - 1e-15:
            best = (cost, solution.x)
    assert best is not None
    fitted = transform.to_constants(best[1])
    return {spec.name: float(value) for spec, value in zip(specs, fitted)}, best[0]


def _random_starts(transform: _Transform, x0: np.ndarray, settings: CalibrationSettings) -> list[np.ndarray]:
    rng = np.random.default_rng(settings.seed)
    finite = np.isfinite(transform.lo) & np.isfinite(transform.hi)
    starts = []
    for _ in range(settings.restarts):
        uniform = rng.uniform(np.where(finite, transform.lo, 0.0), np.where(finite, transform.hi, 1.0))
        jitter = x0 + rng.normal(0.0, 0.5, size=len(x0)) * np.maximum(np.abs(x0), 1.0)
        starts.append(np.where(finite, uniform, jitter))
    return starts


def _inside(x: np.ndarray, transform: _Transform) -> np.ndarray:
    """Move a start point 1 % of the span inside the bounds (trf needs a strictly feasible start,
    and one on a bound makes it crawl along the bound)."""
    span = np.where(np.isfinite(transform.hi - transform.lo), transform.hi - transform.lo, 1.0)
    margin = 1e-2 * np.maximum(span, 1e-12)  # trf crawls along a bound it starts on
    return np.clip(x, transform.lo + margin, transform.hi - margin)


# ---- calibrating one model, with cross-validation ---------------------------------

def _stats(predicted: np.ndarray, measured: np.ndarray) -> dict[str, float]:
    stats = accuracy_stats(pd.Series(predicted, dtype="float64"), pd.Series(measured, dtype="float64"))
    return {key: stats[key] for key in ACCURACY_KEYS}


def option_candidates(model: Any, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The option sets ``calibrate`` tries for ``model``: every combination of the values its
    ``calibration_options`` ({option: (default, alternative, ...)}) lists, for the options the
    user did not set (the user's own options are kept as given). The defaults come first."""
    offered = {name: tuple(values) for name, values in dict(getattr(model, "calibration_options", None) or {}).items()
               if name not in options and len(tuple(values)) > 1}
    combos: list[dict[str, Any]] = [{}]
    for name, values in offered.items():
        combos = [{**combo, name: value} for combo in combos for value in values]
    return [{**combo, **dict(options)} for combo in combos]


def _fit_on(
    model: Any, kernels: pd.DataFrame, gpu: GpuProfile, specs: Sequence[ConstantSpec], start: Mapping[str, float],
    settings: CalibrationSettings, options: Mapping[str, Any],
) -> tuple[dict[str, float], list[UnfittedConstant], dict[str, Any]]:
    """Choose and fit constants on ``kernels`` (all measured and predicted); with them the options.

    A model that offers ``calibration_options`` is fitted once per option set
    (``option_candidates``) and the set whose fit reaches the lowest objective on these same
    rows wins; the defaults win unless another set lowers it by more than ``OPTION_MARGIN``.
    Inside cross-validation these rows are the training applications only, so the choice never
    sees the held-out ones. Returns (fitted values, constants not fitted, the options used)."""
    groups = kernel_groups(kernels)
    weights = fit_weights(kernels, settings.weight_by)
    measured = measured_ns(kernels).to_numpy()
    best: tuple[float, dict[str, float], list[UnfittedConstant], dict[str, Any]] | None = None
    for candidate in option_candidates(model, options):
        evaluator = _Evaluator(model, kernels, gpu, candidate)
        names, unfitted = select_constants(evaluator, specs, start, weights, groups.nunique(), settings)
        chosen = [spec for spec in specs if spec.name in names]
        values, cost = _fit_with_cost(evaluator, chosen, start, measured, weights, settings)
        if best is None or cost < best[0] * (1.0 - OPTION_MARGIN):
            best = (cost, values, unfitted, candidate)
    assert best is not None
    return best[1], best[2], best[3]


def calibrate_model(
    model: Any, kernels: pd.DataFrame, gpu: GpuProfile, settings: CalibrationSettings = CalibrationSettings(),
) -> ModelCalibration:
    """Fit one model's constants to the measured durations and cross-validate the fit."""
    outcome = ModelCalibration(model.id, str(getattr(model, "version", "")))
    outcome.extension_options = {name: tuple(values)
                                 for name, values in dict(getattr(model, "extension_options", None) or {}).items()}
    specs: tuple[ConstantSpec, ...] = tuple(getattr(model, "constants", ()) or ())
    if not specs:
        outcome.skipped = "declares no machine constants (nothing to calibrate)"
        if callable(getattr(model, "fit", None)):
            outcome.skipped += "; it is a learned model: train it with 'nvperf-bridge fit'"
        return outcome
    # the options held through the fit: the user's --option over the base profile's model_options
    # that a person set; those an earlier fit chose (a calibrated profile's) are chosen again here
    options = gpu.pinned_options_for(model.id, settings.options.get(model.id, {}))
    if model.id in settings.only:
        unknown = sorted(set(settings.only[model.id]) - {spec.name for spec in specs})
        if unknown:
            raise UsageError(f"model {model.id} has no constant {unknown[0]!r}",
                             hint=f"its constants: {', '.join(spec.name for spec in specs)}")
        left_out = [spec for spec in specs if spec.name not in settings.only[model.id]]
        specs = tuple(spec for spec in specs if spec.name in settings.only[model.id])
    else:
        left_out = []
    resolved = resolve_constants(model, gpu)
    start = {spec.name: float(np.clip(resolved[spec.name].value, *spec.bounds)) for spec in specs}
    for spec in specs:
        if start[spec.name] != resolved[spec.name].value:
            outcome.notes.append(f"{spec.name}: the profile's value {resolved[spec.name].value:g} lies outside the "
                                 f"bounds {list(spec.bounds)}; the fit starts from {start[spec.name]:g}")
    measured = measured_ns(kernels)
    rows = kernels[measured.notna()]
    if rows.empty:
        outcome.skipped = "no kernel has a measured duration (duration_ns)"
        return outcome
    try:
        base = predict_ns(model, rows, with_constants(gpu, model.id, start, "start", "default"), options)
    except Exception as exc:  # plugin code may raise anything
        outcome.skipped = f"evaluate failed: {type(exc).__name__}: {exc}"
        return outcome
    used = rows[base.notna()]
    if len(used) < len(rows):
        outcome.notes.append(f"{len(rows) - len(used)} of {len(rows)} measured kernel(s) get no prediction from this "
                             "model (missing counters) and are left out")
    if used.empty:
        outcome.skipped = "the model predicts none of the kernels that have a measured duration"
        try:  # say why, in the model's own words (which counters are missing)
            reasons = validate_result(model.id, rows, model.evaluate(rows, gpu, dict(options)))[0]["error"]
            first = next((reason for reason in reasons if reason), "")
        except Exception:  # the model already failed once; the bare reason will do
            first = ""
        if first:
            outcome.skipped += f" (first kernel: {first})"
        return outcome
    outcome.kernels, outcome.groups = len(used), kernel_groups(used).nunique()
    measured_used = measured_ns(used).to_numpy()
    outcome.before = _stats(base[used.index].to_numpy(), measured_used)

    values, outcome.unfitted, outcome.options = _fit_on(model, used, gpu, specs, start, settings, options)
    outcome.chosen_options = {name: value for name, value in outcome.options.items() if name not in options}
    outcome.unfitted += [UnfittedConstant(spec.name, resolved[spec.name].value, "not selected for fitting")
                         for spec in left_out]
    outcome.fitted = [
        FittedConstant(spec.name, spec.unit, (float(spec.bounds[0]), float(spec.bounds[1])), start[spec.name],
                       values[spec.name], resolved[spec.name].source, resolved[spec.name].status)
        for spec in specs if spec.name in values
    ]
    final = with_constants(gpu, model.id, {**start, **values}, "calibrated", "calibrated")
    outcome.after = _stats(predict_ns(model, used, final, outcome.options).to_numpy(), measured_used)
    outcome.cv = cross_validate(model, used, gpu, specs, start, settings, options)
    return outcome


def cross_validate(
    model: Any, kernels: pd.DataFrame, gpu: GpuProfile, specs: Sequence[ConstantSpec], start: Mapping[str, float],
    settings: CalibrationSettings, options: Mapping[str, Any], groups: pd.Series | None = None,
) -> CrossValidation:
    """Fit on k-1 folds of applications (``application_groups``: every kernel of one input file
    in one fold, never split by launch), predict the held-out fold; pool the errors."""
    return _cross_validate(kernels, settings, groups,
                           lambda train: _constants_predictor(model, train, gpu, specs, start, settings, options))


def cross_validate_learned(
    model: Any, kernels: pd.DataFrame, gpu: GpuProfile, settings: CalibrationSettings, options: Mapping[str, Any],
    groups: pd.Series | None = None,
) -> CrossValidation:
    """The same grouped cross-validation for a learned model (one with ``fit``): trained with
    ``model.fit`` on the training applications, evaluated with ``model_data`` on the held-out ones."""

    def predictor(train: pd.DataFrame) -> tuple[dict[str, float], Any, dict[str, Any]]:
        data = model.fit(train, gpu, dict(options))
        return {}, lambda rows: predict_ns(model, rows, gpu, {**dict(options), "model_data": data}), dict(options)

    return _cross_validate(kernels, settings, groups, predictor)


def _constants_predictor(model: Any, train: pd.DataFrame, gpu: GpuProfile, specs: Sequence[ConstantSpec],
                         start: Mapping[str, float], settings: CalibrationSettings,
                         options: Mapping[str, Any]) -> tuple[dict[str, float], Any, dict[str, Any]]:
    values, _, chosen = _fit_on(model, train, gpu, specs, start, settings, options)
    fitted = with_constants(gpu, model.id, {**start, **values}, "calibrated", "calibrated")
    return values, lambda rows: predict_ns(model, rows, fitted, chosen), chosen


def _cross_validate(kernels: pd.DataFrame, settings: CalibrationSettings, groups: pd.Series | None,
                    train_on: Any) -> CrossValidation:
    """Grouped k-fold: ``train_on(rows)`` returns (fitted values, predict(rows) -> Series, options used)."""
    groups = application_groups(kernels) if groups is None else groups.loc[kernels.index].astype(str)
    plan = group_folds(groups, settings.folds, settings.seed, unit="application")
    fold_of_group = {str(g): int(f) for g, f in zip(groups, plan.fold_of_row)}
    nan = {key: (0 if key == "n" else math.nan) for key in ACCURACY_KEYS}
    measured = measured_ns(kernels)
    cv = CrossValidation(plan.folds, plan.requested, settings.seed, plan.note, dict(nan), dict(nan), fold_of_group,
                         measured=measured, groups=groups)
    if plan.folds < 2:
        return cv
    held_out = np.full(len(kernels), np.nan)
    train_predicted: list[np.ndarray] = []
    train_measured: list[np.ndarray] = []
    for fold in range(plan.folds):
        train_mask = plan.fold_of_row != fold
        values, predict, used_options = train_on(kernels[train_mask])
        cv.fold_fits.append(values)
        cv.fold_options.append(used_options)
        predicted = predict(kernels).to_numpy()
        held_out[~train_mask] = predicted[~train_mask]
        train_predicted.append(predicted[train_mask])
        train_measured.append(measured.to_numpy()[train_mask])
    cv.predicted = pd.Series(held_out, index=kernels.index, dtype="float64")
    cv.held_out = _stats(held_out, measured.to_numpy())
    cv.train = _stats(np.concatenate(train_predicted), np.concatenate(train_measured))
    return cv


def calibrate(
    kernels: pd.DataFrame, gpu: GpuProfile, models: Mapping[str, Any], settings: CalibrationSettings = CalibrationSettings(),
) -> CalibrationResult:
    """Calibrate each model in ``models`` (id -> model object) against the measured durations.

    Raises ``InputError`` when no kernel has a measured duration. A model
    that fails is reported in its ``skipped`` field; the others go on.
    """
    measured = measured_ns(kernels)
    if not measured.notna().any():
        raise InputError(
            "no kernel has a measured duration (duration_ns), so there is nothing to calibrate against",
            hint="profile with a trace (nvprof --print-gpu-trace, or ncu's gpu__time_duration.sum) alongside the metrics",
        )
    outcomes: dict[str, ModelCalibration] = {}
    for model_id, model in models.items():
        try:
            outcomes[model_id] = calibrate_model(model, kernels, gpu, settings)
        except UsageError:
            raise
        except ModelError as exc:
            outcomes[model_id] = ModelCalibration(model_id, skipped=f"evaluate failed: {exc}")
        except Exception as exc:  # a plugin may raise anything during the fit; the others go on
            outcomes[model_id] = ModelCalibration(model_id, skipped=f"evaluate failed: {type(exc).__name__}: {exc}")
    with_time = kernels[measured.notna()]
    return CalibrationResult(gpu, settings, outcomes, len(with_time), kernel_groups(with_time).nunique())


# ---- per-kernel factors (calibrate --per-kernel) ---------------------------------

def run_size(kernels: pd.DataFrame) -> tuple[pd.Series, str]:
    """The size of each run, to tell a kernel function's larger runs from its smaller ones: the
    ``input_size`` column where the data has one, else the warp instructions executed (the work
    the run did: a counter, never its time), else the launch's total threads."""
    for column, label in (("input_size", "input_size"), ("inst_executed", "inst_executed")):
        if column in kernels.columns:
            values = pd.to_numeric(kernels[column], errors="coerce")
            if values.notna().any():
                return values, label
    grid = pd.to_numeric(kernels.get("grid_blocks", pd.Series(np.nan, index=kernels.index)), errors="coerce")
    block = pd.to_numeric(kernels.get("block_threads", pd.Series(np.nan, index=kernels.index)), errors="coerce")
    return grid * block, "grid_blocks x block_threads"


def _largest_runs_factor(log_ratio: pd.Series, size: pd.Series) -> float:
    """exp(median log(measured/predicted)) over the runs of the largest size (all runs when no size is known)."""
    sized = size.loc[log_ratio.index]
    if sized.notna().any():
        log_ratio = log_ratio[(sized == sized.max()).to_numpy()]
    return math.exp(float(log_ratio.median()))


def kernel_factors(kernels: pd.DataFrame, predicted: pd.Series) -> dict[str, dict[str, Any]]:
    """One scale factor per kernel function, and one per (function, block size), for other runs of
    the same function (other input sizes, other grids): the question "will this kernel scale".

    The factor is measured / predicted at the function's *largest* calibration runs (the geometric
    median when several runs share that size), not the median over all runs: a model's error
    settles as the input grows (launch overhead, caches holding a small working set and partial
    waves matter less), so the largest runs say most about the larger runs it is applied to.
    Measured on amaris-kepler-maxwell (fitted on the smaller half of each function's input sizes,
    scored on the larger half, recommended estimate): 1.0-2.7 % median APE on the five GPUs, against
    1.0-11.6 % with the median over all runs (``benchmarks/accuracy.py --per-kernel-only``)."""
    measured = measured_ns(kernels)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(measured / predicted.where(predicted > 0))
    names = kernel_groups(kernels)
    size, size_from = run_size(kernels)
    blocks = pd.to_numeric(kernels["block_threads"], errors="coerce") if "block_threads" in kernels.columns else None
    factors: dict[str, dict[str, Any]] = {}
    for name in sorted(names.unique()):
        rows = log_ratio[(names == name).to_numpy()].dropna()
        if rows.empty:
            continue
        entry: dict[str, Any] = {"factor": _number(_largest_runs_factor(rows, size)), "runs": int(len(rows)),
                                 "from": f"runs of the largest {size_from}"}
        if blocks is not None:
            by_block = {}
            for block, group in rows.groupby(blocks.loc[rows.index]):
                if math.isfinite(float(block)):
                    by_block[str(int(block))] = _number(_largest_runs_factor(group, size))
            entry["by_block_threads"] = by_block
        factors[str(name)] = entry
    return factors


def apply_kernel_factors(kernels: pd.DataFrame, factors: Mapping[str, Any]) -> tuple[pd.Series, pd.Series]:
    """The factor for each row (its function and block size when fitted, else its function's,
    else 1) and how it was chosen ("kernel and block size", "kernel", "")."""
    names = kernel_groups(kernels)
    blocks = pd.to_numeric(kernels["block_threads"], errors="coerce") if "block_threads" in kernels.columns else None
    factor = pd.Series(1.0, index=kernels.index, dtype="float64")
    how = pd.Series("", index=kernels.index, dtype="object")
    for name, entry in factors.items():
        rows = (names == name).to_numpy()
        if not rows.any() or not isinstance(entry, Mapping):
            continue
        factor[rows] = float(entry.get("factor", 1.0))
        how[rows] = "kernel"
        by_block = entry.get("by_block_threads") or {}
        if blocks is not None and by_block:
            for block, value in by_block.items():
                hit = rows & (blocks == float(block)).to_numpy()
                factor[hit] = float(value)
                how[hit] = "kernel and block size"
    return factor, how


# ---- the calibrated profile ----------------------------------------------------

def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def calibration_date() -> str:
    """Today (UTC), or the date of ``SOURCE_DATE_EPOCH`` when set, so a rerun can be byte-identical."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (_dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch and epoch.isdigit()
              else _dt.datetime.now(_dt.timezone.utc))
    return moment.date().isoformat()


def _plain(stats: Mapping[str, float]) -> dict[str, Any]:
    """Stats for YAML: NaN as null, floats rounded to 6 significant digits."""
    out: dict[str, Any] = {}
    for key, value in stats.items():
        if key == "n":
            out[key] = int(value)
        elif value is None or not math.isfinite(float(value)):
            out[key] = None
        else:
            out[key] = float(f"{float(value):.6g}")
    return out


def _number(value: float) -> float | int:
    as_float = float(f"{value:.8g}")
    return int(as_float) if as_float.is_integer() and abs(as_float) < 1e15 else as_float


def calibrated_profile_mapping(
    result: CalibrationResult,
    new_id: str,
    data_files: Sequence[str | Path],
    *,
    tool_version: str,
    date: str | None = None,
    command: str = "",
) -> dict[str, Any]:
    """The YAML document of the calibrated profile: the base profile's fields, the fitted
    constants under ``models:`` (status ``calibrated``) and a ``calibration`` block."""
    date = date or calibration_date()
    names = [Path(f).name for f in data_files]
    listed = ", ".join(names) if len(names) <= 3 else (
        f"{names[0]}, {names[1]} and {len(names) - 2} more files (all listed with their sha256 under calibration.data)")
    source = f"calibrated on {listed} (nvperf-bridge calibrate, {date})"
    base = result.base
    document = {key: value for key, value in base.raw.items() if key != "calibration"}
    document["id"] = new_id
    base_name = base.name.split(" (calibrated")[0]
    document["name"] = f"{base_name} (calibrated on {len(data_files)} file(s), {date})"
    # Empty: a calibrated profile is chosen with --gpu and never steals auto-matching from the stock one.
    document["match"] = []
    models = {mid: {name: dict(spec) for name, spec in named.items()} for mid, named in (base.raw.get("models") or {}).items()}
    block_models: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    model_options = {mid: dict(named) for mid, named in (base.raw.get("model_options") or {}).items()}
    for model_id, outcome in result.models.items():
        if outcome.skipped:
            skipped[model_id] = outcome.skipped
            continue
        if outcome.options:  # analyze applies them under the user's --option
            model_options[model_id] = {**model_options.get(model_id, {}), **outcome.options}
        named = models.setdefault(model_id, {})
        for constant in outcome.fitted:
            named[constant.name] = {"value": _number(constant.after), "source": source, "status": "calibrated"}
        if not named:
            del models[model_id]
        cv = outcome.cv
        block_models[model_id] = {
            "version": outcome.version,
            "kernels": outcome.kernels,
            "kernel_groups": outcome.groups,
            "fitted": {
                c.name: {"before": _number(c.before), "after": _number(c.after), "unit": c.unit,
                         "bounds": [_number(b) for b in c.bounds], "before_source": c.before_source,
                         "before_status": c.before_status, **({"at_bound": c.at_bound} if c.at_bound else {})}
                for c in outcome.fitted
            },
            "not_fitted": {c.name: {"value": _number(c.value), "reason": c.reason} for c in outcome.unfitted},
            "error": {
                "before": _plain(outcome.before),
                "after_in_sample": _plain(outcome.after),
                "cv_train": _plain(cv.train) if cv else None,
                "cv_held_out": _plain(cv.held_out) if cv else None,
            },
            "cross_validation": {"folds": cv.folds, "note": cv.note} if cv else None,
            "notes": list(outcome.notes),
        }
        if outcome.chosen_options:
            block_models[model_id]["options"] = _options_provenance(outcome)
    block_models.update(_earlier_calibrations(base.raw.get("calibration"), base.id, exclude=block_models))
    document["models"] = models
    if not models:
        del document["models"]
    document.pop("model_options", None)
    if model_options:  # after models:, before the calibration block
        document["model_options"] = model_options
    document["calibration"] = {
        "date": date,
        "tool": f"nvperf-bridge {tool_version}",
        "command": command,
        "base_profile": base.id,
        "data": [{"file": Path(f).name, "sha256": file_sha256(f)} for f in data_files],
        "kernels_with_measured_time": result.kernels,
        "kernel_groups": result.groups,
        "method": (f"scipy.optimize.least_squares (trf, bounded, loss {result.settings.loss}) on "
                   "log(predicted/measured), each kernel group weighted equally; constants chosen by +-10% "
                   f"sensitivity and pivoted Gram-Schmidt, at most one per {result.settings.groups_per_constant} "
                   f"kernel groups; {result.settings.restarts} seeded random restart(s)"),
        # k can differ per model (models predict different kernels): see models.<id>.cross_validation
        "cross_validation": {"requested_folds": result.settings.folds, "seed": result.settings.seed,
                             "split": "by kernel group (the kernel column); every row of a group in one fold"},
        "models": block_models,
        "skipped": skipped,
    }
    return document


def _earlier_calibrations(earlier: Any, base_id: str, exclude: Mapping[str, Any]) -> dict[str, Any]:
    """The base profile's calibration records of the models this fit left alone (not asked for, or
    skipped): their fitted constants stay in ``models:``, so their record stays too, saying which
    calibration made it. Without it their validated accuracy (the verdicts' weights) and the list of
    options their fit chose (chosen again by the next fit, never pinned) would be lost."""
    if not isinstance(earlier, Mapping) or not isinstance(earlier.get("models"), Mapping):
        return {}
    made_by = {"profile": base_id, "date": earlier.get("date"), "command": earlier.get("command"),
               "data_files": len(earlier.get("data") or [])}
    return {model_id: entry if "carried_from" in entry else {**entry, "carried_from": made_by}
            for model_id, entry in earlier["models"].items()
            if model_id not in exclude and isinstance(entry, Mapping)}


def _options_provenance(outcome: ModelCalibration) -> dict[str, Any]:
    """How the options were chosen: by the fit's objective on all the calibration rows, and what
    each cross-validation fold chose on its own training applications."""
    cv = outcome.cv
    folds = [{name: fold.get(name) for name in outcome.chosen_options} for fold in (cv.fold_options if cv else [])]
    extensions = [name for name, value in outcome.chosen_options.items()
                  if is_extension(value, outcome.extension_options.get(name, ()))]
    return {
        "chosen": dict(outcome.chosen_options),
        **({"extensions": extensions} if extensions else {}),  # chosen values beyond the paper
        "how": ("fitted once per option set the model offers (calibration_options); the set whose fit reached the "
                f"lowest objective on the calibration rows, the defaults unless another was lower by more than "
                f"{OPTION_MARGIN:.1%}; each cross-validation fold chose again on its training applications only"),
        "cv_folds_chose": folds,
    }


def write_profile(document: Mapping[str, Any], path: str | Path, *, force: bool = False) -> Path:
    """Write the profile YAML atomically (temp file + os.replace); refuse to overwrite without ``force``."""
    import yaml

    path = Path(path)
    if path.exists() and not force:
        raise OutputError("already exists", path=path, hint="pass --force to overwrite it")
    text = "# Calibrated GPU profile written by nvperf-bridge calibrate; see the calibration block.\n"
    text += yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=110)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    return path


__all__ = [
    "CalibrationResult", "CalibrationSettings", "CrossValidation", "FittedConstant", "FoldPlan", "ModelCalibration",
    "UnfittedConstant", "apply_kernel_factors", "kernel_factors", "application_groups", "application_name", "calibrate", "calibrate_model",
    "calibrated_profile_mapping", "cross_validate", "cross_validate_learned",
    "fit_constants", "group_folds", "kernel_groups", "predict_ns", "select_constants", "with_constants",
    "write_profile",
]

"""The model plugin contract, the shared bottleneck vocabulary, and result checks.

A model object carries ``id`` (kebab-case), ``version``, ``description``,
``paper`` (citation), ``requires`` (canonical columns it needs and which are
optional), ``constants`` (its machine constants, with defaults and physical
bounds) and ``evaluate(kernels, gpu, options) -> DataFrame``.

``evaluate`` is pure and vectorised: it gets the whole KernelFrame and returns
a DataFrame with the same index and these columns

``predicted_ns``      float, NaN where the kernel has an ``error``
``predicted_cycles``  float (NaN when the paper does not work in cycles)
``bottleneck``        one of ``BOTTLENECKS``
``state``             the paper's own label ("MWP < CWP", "capacity bound", ...)
``error``             "" when the kernel was predicted, else why not (which
                      counters are missing and which ncu metric collects them)

and any number of further columns: the model's intermediate quantities under
the paper's symbol names (``MWP``, ``CWP``, ``Mem_L``, ...), the "details".
A model may also offer ``fit(kernels, gpu, options) -> dict`` (learned
models such as Kerr's): the CLI writes that dict as JSON and passes it back in
``options["model_data"]``; models never read or write files themselves.
A model may offer ``calibration_options`` ({option: (default, alternative, ...)}): forms
the paper leaves open (or named extensions) that ``calibrate`` chooses between on its
training data (``calibration.option_candidates``); a calibrated profile records the choice
under ``model_options`` and ``analyze`` applies it under the user's ``--option``.
A model may also declare ``extension_options`` ({option: (value, ...)}): the option values
beyond its paper, which reports and ``calibrate`` mark EXTENSION where a run uses them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np
import pandas as pd

# Model results share columns (empty_result, constant_column, column_pool) and column_or_nan hands
# out the input's own arrays: that is safe only under copy-on-write, pandas 3's only mode. pandas 2
# (the newest on Python 3.10) has it as an option, off by default: without it one model's in-place
# write would reach another model's result and the input frame.
if int(pd.__version__.split(".")[0]) < 3:
    pd.set_option("mode.copy_on_write", True)

from nvperf_bridge.columns import GEOMETRY_INPUT_COLUMNS, describe_missing
from nvperf_bridge.gpu import GpuProfile, ModelConstant

BOTTLENECKS: tuple[str, ...] = (
    "compute",
    "memory-bandwidth",
    "memory-latency",
    "parallelism",
    "synchronization",
    "balanced",
    "unknown",
)

RESULT_COLUMNS: tuple[str, ...] = ("predicted_ns", "predicted_cycles", "bottleneck", "state", "error")


@dataclass(frozen=True)
class Requirements:
    """Canonical columns a model needs (``required``) and uses when present (``optional``)."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConstantSpec:
    """One machine constant of a model: its default, unit, physical bounds and source."""

    name: str
    default: float
    unit: str
    bounds: tuple[float, float]
    description: str
    source: str


@runtime_checkable
class Model(Protocol):
    id: str
    version: str
    description: str
    paper: str
    requires: Requirements
    constants: tuple[ConstantSpec, ...]

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        ...


@dataclass(frozen=True)
class ResolvedConstant:
    value: float
    source: str
    status: str  # paper | measured | datasheet | calibrated | default


def resolve_constants(model: Model, gpu: GpuProfile) -> dict[str, ResolvedConstant]:
    """Each constant from the GPU profile if it gives one, else the model's default (status 'default')."""
    resolved: dict[str, ResolvedConstant] = {}
    for spec in getattr(model, "constants", ()):
        given: ModelConstant | None = gpu.constant(model.id, spec.name)
        if given is None:
            resolved[spec.name] = ResolvedConstant(spec.default, spec.source, "default")
        else:
            resolved[spec.name] = ResolvedConstant(given.value, given.source, given.status)
    return resolved


def constant_values(model: Model, gpu: GpuProfile) -> dict[str, float]:
    """Just the values of ``resolve_constants``."""
    return {name: c.value for name, c in resolve_constants(model, gpu).items()}


def column_or_nan(kernels: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column as float, all-NaN when the frame lacks it."""
    if name not in kernels.columns:
        return constant_column(np.nan, kernels.index)  # within a run, one all-NaN array for every absent counter
    column = kernels[name]
    if column.dtype == np.float64:  # already what to_numeric + astype give: no copy (copy-on-write guards it)
        return column
    return pd.to_numeric(column, errors="coerce").astype("float64")


def missing_inputs(kernels: pd.DataFrame, required: tuple[str, ...] | list[str]) -> pd.Series:
    """Per kernel, '' when every required column has a value, else the reason naming
    the missing counters and the ncu metric that collects each."""
    from nvperf_bridge.labels import full, render, take

    names = list(required)
    n = len(kernels)
    out = full(n, "")
    absent = [kernels[name].isna().to_numpy(dtype=bool) if name in kernels.columns else np.ones(n, dtype=bool)
              for name in names]
    if any(column.any() for column in absent):
        labels = [describe_missing([name]).removeprefix("missing ") for name in names]

        def message(row: Any) -> str:
            listed = ", ".join(label for label, hit in zip(labels, row) if hit)
            return "missing " + listed if listed else ""

        # one message per distinct pattern of absent columns, not one string built per kernel
        if len(names) <= 62:
            pattern = np.zeros(n, dtype=np.int64)
            for bit, column in enumerate(absent):
                pattern |= column.astype(np.int64) << bit
            bits = lambda code: [(code >> bit) & 1 for bit in range(len(names))]  # noqa: E731
            if len(names) <= 16:  # few patterns possible: count them directly
                out = render(pattern, lambda code: message(bits(code)))
            else:
                codes, distinct = pd.factorize(pattern)
                out = take([message(bits(int(code))) for code in distinct], codes)
        else:
            distinct_rows, codes = np.unique(np.column_stack(absent), axis=0, return_inverse=True)
            out = take([message(row) for row in distinct_rows], np.asarray(codes).reshape(-1))
    return pd.Series(out, index=kernels.index, dtype="object", copy=False)  # a new array: no copy needed


def without_reason(reasons: Any) -> np.ndarray:
    """Per kernel, is its reason empty: ``reasons == ""`` (a text column of '' or why a kernel is not
    predicted, as ``missing_inputs`` gives) as a new bool array. Read on the column's few distinct string
    objects where it holds few (``labels.distinct_objects``): a comparison per row costs 15 ms per million
    kernels on an object array and over 50 ms on an object Series (speed only: the same booleans)."""
    from nvperf_bridge.labels import distinct_objects, rows_holding

    values = reasons.to_numpy(dtype=object) if isinstance(reasons, pd.Series) else np.asarray(reasons, dtype=object)
    found = distinct_objects(values)
    if found is not None and all(isinstance(item, str) for item in found[2]):
        return rows_holding(found, lambda text: text == "")
    return np.asarray(values == "", dtype=bool)


def empty_result(kernels: pd.DataFrame) -> pd.DataFrame:
    """A result frame with the standard columns, nothing predicted yet.

    Within a run (``shared_evaluations``) the columns are made once per index and shared by every
    model's result (a shallow copy: pandas' copy-on-write copies a column before anything writes
    to it); most are replaced by the model, and a million-kernel column is 8 MB of new memory."""
    index = kernels.index
    return run_value(("empty_result", *index_key(index)), [index], lambda: _empty_result(index)).copy(deep=False)


def index_key(index: pd.Index) -> tuple:
    """What a run's shared column is keyed on for its index: a RangeIndex by its range (each model gets
    its own shallow copy of the frame, whose index may be a new object), any other by identity."""
    if isinstance(index, pd.RangeIndex):
        return ("range", index.start, index.stop, index.step)
    return ("index", id(index), len(index))


def _empty_result(index: pd.Index) -> pd.DataFrame:
    # each column one value repeated (constant_column: 8 bytes where the dtype allows, shared within a
    # run); given as Series on the index, the frame takes them as they are. A model replaces most of them.
    columns = {
        "predicted_ns": constant_column(np.nan, index),
        "predicted_cycles": constant_column(np.nan, index),
        "bottleneck": constant_column("unknown", index),
        "state": constant_column("", index),
        "error": constant_column("", index),
    }
    return pd.DataFrame(columns, copy=False)


# Scalar types a model gives for a detail that is one value for every kernel (a constant, an option).
_PLAIN_SCALARS = (bool, int, float, str, np.bool_, np.integer, np.floating)


def constant_column(value: Any, index: pd.Index, dtype: str | None = None) -> pd.Series:
    """The column ``frame[name] = value`` stores for a scalar ``value`` (same dtype, same bits), or with
    ``dtype`` the Series ``pd.Series(value, index=index, dtype=dtype)``.

    Within a run (``shared_evaluations``) it is made once per value, type and index and shared by
    every result that holds it: a constant detail (``launch_ns`` = 0, a GPU constant, an option's
    name) is then one array for all models instead of a new filled one each (a million kernels:
    8 MB of new memory per column, whose first touch costs more than the model's arithmetic).
    pandas' copy-on-write copies the shared array before any write, so no frame sees another's
    change."""
    from nvperf_bridge.column_pool import repeated

    def make() -> pd.Series:
        # the one value as the column stores it (one row: its dtype and bits), then repeated in 8 bytes
        # where the dtype allows (column_pool.repeated: float64 and text), else filled
        rows = index[:1] if len(index) else index
        if dtype is not None:
            column = pd.Series(value, index=rows, dtype=dtype)
        else:
            holder = pd.DataFrame(index=rows)
            holder["value"] = value  # exactly what assigning the scalar to a result frame stores
            column = holder["value"]
            column.name = None  # as pd.Series(value, index) is named
        if len(index) <= 1:
            return column
        one = repeated(column, index)
        return one if one is not None else pd.Series(value, index=index, dtype=column.dtype)

    # keyed on the dtype the column gets and the value's bits (as keys NaN == NaN fails and 0.0 == -0.0 holds)
    kind = "str" if isinstance(value, str) else np.asarray(value).dtype.str
    bits = value if isinstance(value, str) else np.asarray(value).tobytes()
    shared = run_value(("constant", kind, dtype, bits, *index_key(index)), [index], make)
    return shared.copy(deep=False)  # the caller's own Series object (a name set on it stays its own)


def either_column(condition: Any, yes: str, no: str, index: pd.Index) -> pd.Series:
    """``pd.Series(labels.where(condition, yes, no), index=index, dtype="object")``: a source note of two
    texts. Where every row takes the same one (a measured clock on every kernel, a counter every row
    has), that text as the run's shared ``constant_column`` (8 bytes, the same values and dtype) instead
    of a new array of a million references, which the run's column pool would hold as that anyway."""
    from nvperf_bridge.labels import where

    chosen = np.asarray(condition, dtype=bool)
    if chosen.ndim == 1 and len(chosen) == len(index) and len(chosen) > 1:
        if chosen.all():
            return constant_column(yes, index, dtype="object")
        if not chosen.any():
            return constant_column(no, index, dtype="object")
    return pd.Series(where(chosen, yes, no), index=index, dtype="object", copy=False)


def detail_column(values: Any, index: pd.Index) -> Any:
    """A model's detail as ``result[name] = values`` stores it: a plain scalar (``_PLAIN_SCALARS``)
    as the run's shared ``constant_column``, anything else as it is."""
    if isinstance(values, _PLAIN_SCALARS):
        return constant_column(values, index)
    return values


def validate_result(model_id: str, kernels: pd.DataFrame, result: Any) -> tuple[pd.DataFrame, list[str]]:
    """Check a model's output against the contract; repair what is safe and report it.

    Returns the (possibly repaired) frame and a list of warnings. Raises
    ``ModelError`` when the result cannot be used at all (wrong type or shape).
    """
    from nvperf_bridge.errors import ModelError

    warnings: list[str] = []
    if not isinstance(result, pd.DataFrame):
        raise ModelError(f"evaluate returned {type(result).__name__}, expected a pandas DataFrame", model_id=model_id)
    if len(result) != len(kernels) or not result.index.equals(kernels.index):
        raise ModelError(
            f"evaluate returned {len(result)} rows for {len(kernels)} kernels (the index must match the KernelFrame's)",
            model_id=model_id,
        )
    if "predicted_ns" not in result.columns:
        raise ModelError("evaluate returned no 'predicted_ns' column", model_id=model_id)
    from nvperf_bridge.labels import rows_holding

    result = result.copy(deep=False)  # copy-on-write: the model's own frame is never changed
    for name, default in (("predicted_cycles", np.nan), ("bottleneck", "unknown"), ("state", ""), ("error", "")):
        if name not in result.columns:
            result[name] = constant_column(default, result.index)  # what assigning the scalar stores, made once per run
    error, error_kept, error_objects = _text_values(result["error"], "")
    given = result["predicted_ns"]
    predicted = pd.to_numeric(given, errors="coerce").to_numpy(dtype="float64")  # maybe the column's memory: read only
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(predicted) | (predicted <= 0)
    no_reason = rows_holding(error_objects, lambda text: text == "") if error_objects else error == ""
    unexplained = bad & no_reason
    if unexplained.any():
        count = int(unexplained.sum())
        warnings.append(
            f"model {model_id}: {count} kernel(s) had a NaN, infinite, zero or negative prediction without a reason; marked as errors"
        )
        error, error_kept = error.copy(), False
        error[unexplained] = "model returned no valid prediction (NaN, infinite or <= 0) and gave no reason"
        no_reason = no_reason & ~unexplained
    if not error_kept:
        result["error"] = _text_series(error, result.index)
    has_error = ~no_reason
    dropped = bad | has_error
    if dropped.any() or given.dtype != np.float64:  # else the column is already what would be written
        predicted = predicted.copy()
        predicted[dropped] = np.nan
        result["predicted_ns"] = pd.Series(predicted, index=result.index, copy=False)
    labels, labels_kept, label_objects = _text_values(result["bottleneck"], "unknown")
    off_vocabulary = rows_holding(label_objects, lambda label: label not in BOTTLENECKS) if label_objects else \
        ~pd.Series(labels, copy=False).isin(BOTTLENECKS).to_numpy()
    if off_vocabulary.any():
        warnings.append(
            f"model {model_id}: bottleneck labels outside the shared vocabulary "
            f"({', '.join(sorted(set(labels[off_vocabulary])))}) were replaced by 'unknown'"
        )
    replace = off_vocabulary | has_error
    if replace.any():
        labels, labels_kept = labels.copy(), False
        labels[replace] = "unknown"
    if not labels_kept:
        result["bottleneck"] = _text_series(labels, result.index)
    state, state_kept, _ = _text_values(result["state"], "")
    if not state_kept:
        result["state"] = _text_series(state, result.index)
    return result, warnings


def _text_values(column: pd.Series, fill: str) -> tuple[np.ndarray, bool, Any]:
    """What ``column.fillna(fill).astype(str)`` holds, as an object array of str, whether the column
    is that already (string dtype, nothing missing), and the array's ``labels.distinct_objects`` when
    they tell it (else None).

    The array may be the column's own memory: read it, never write it. One pass checks that every
    value is a str (none missing), where fillna + astype would be a pass each; a column of a few
    string objects (as the models build them) is checked on those objects alone."""
    from nvperf_bridge.labels import distinct_objects, text_dtype

    values = column.to_numpy(dtype=object)
    found = distinct_objects(values)
    if found is not None and len(values):
        if all(isinstance(item, str) for item in found[2]):  # infer_dtype's "string", on the distinct objects
            return values, column.dtype == text_dtype(), found
    elif len(values) and pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values, column.dtype == text_dtype(), None
    values = np.asarray(column.fillna(fill).astype(str), dtype=object)
    return values, False, distinct_objects(values)


def _text_series(values: np.ndarray, index: pd.Index) -> pd.Series:
    """Object values (all str: ``_text_values`` saw to it) as a Series of pandas' string dtype (a copy)."""
    from nvperf_bridge.labels import text_array

    return pd.Series(text_array(values, checked=True), index=index, copy=False)


# ---- one evaluation per run --------------------------------------------------
# A model may build on another's results (the recommended estimate blends Transit's prediction).
# Within one run_models call (``shared_evaluations``) the same model on the same rows, profile and
# options is evaluated once: a second caller gets the first result, a frame both only read (pandas'
# copy-on-write copies on any write). Rows are "the same" when every column the model declares
# (and the launch geometry's inputs) is the same memory; each entry holds those arrays, so their
# memory cannot be reused by another frame while the entry lives.

_EVALUATIONS: dict[tuple, tuple[list[np.ndarray], pd.Index, Any, tuple[Any, Any]]] = {}
_EVALUATIONS_LOCK = threading.Lock()
_EVALUATIONS_DEPTH = 0


@contextmanager
def shared_evaluations() -> Iterator[None]:
    """Within the block (nested blocks share the outermost one), ``evaluate_shared`` evaluates each
    model once per frame, profile and options; the results are dropped when the outermost block ends."""
    global _EVALUATIONS_DEPTH
    with _EVALUATIONS_LOCK:
        _EVALUATIONS_DEPTH += 1
    try:
        yield
    finally:
        with _EVALUATIONS_LOCK:
            _EVALUATIONS_DEPTH -= 1
            if not _EVALUATIONS_DEPTH:
                _EVALUATIONS.clear()
                _RUN_VALUES.clear()


def _evaluation_key(model: Any, kernels: pd.DataFrame, gpu: GpuProfile,
                    options: Mapping[str, Any]) -> tuple[tuple, list[np.ndarray]] | None:
    """The identity of one evaluation, or None when it cannot be told (then nothing is shared)."""
    requires = getattr(model, "requires", None)
    names = dict.fromkeys((*getattr(requires, "required", ()), *getattr(requires, "optional", ()),
                           *GEOMETRY_INPUT_COLUMNS))
    try:
        parts: list[object] = [id(model), id(gpu), len(kernels), json.dumps(dict(options), sort_keys=True)]
    except (TypeError, ValueError):
        return None
    arrays: list[np.ndarray] = []
    for name in names:
        if name not in kernels.columns:
            parts.append((name, None))
            continue
        values = kernels[name].to_numpy(copy=False)
        if not isinstance(values, np.ndarray) or values.dtype == object:
            return None
        arrays.append(values)
        parts.append((name, values.__array_interface__["data"][0], values.dtype.str, values.strides))
    return tuple(parts), arrays


def evaluate_shared(model: Any, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any],
                    evaluate: Callable[[], Any] | None = None) -> Any:
    """``model.evaluate(kernels, gpu, options)`` (or ``evaluate()``, which computes the same), once per
    ``shared_evaluations`` block; outside one, always computed. Read the result, never change it."""
    compute = evaluate or (lambda: model.evaluate(kernels, gpu, options))
    if not _EVALUATIONS_DEPTH:
        return compute()
    keyed = _evaluation_key(model, kernels, gpu, options)
    if keyed is None:
        return compute()
    key, arrays = keyed
    with _EVALUATIONS_LOCK:
        found = _EVALUATIONS.get(key)
    if found is not None and found[1].equals(kernels.index):
        return found[2]
    result = compute()
    if isinstance(result, pd.DataFrame):
        with _EVALUATIONS_LOCK:
            if _EVALUATIONS_DEPTH:
                # the entry holds the model and the profile too: the key names them by id(), and a
                # profile freed inside the block (a temporary with_constants copy) could hand its id on
                _EVALUATIONS[key] = (arrays, kernels.index, result, (model, gpu))
    return result


def replace_shared_result(before: Any, after: Any) -> None:
    """The run's kept evaluations that are ``before`` (the same object) become ``after``: a frame of the
    same values whose columns share memory with other results (``column_pool``), so the memory of
    ``before``'s own columns is freed while a later caller can still get the evaluation."""
    with _EVALUATIONS_LOCK:
        for key, (arrays, index, result, owners) in list(_EVALUATIONS.items()):
            if result is before:
                _EVALUATIONS[key] = (arrays, index, after, owners)


# Any other value several models derive from the same frame during one run (the ``derived`` column's
# distinct texts, asked about by every model that reads a counter): ``run_value`` computes it once per
# ``shared_evaluations`` block. The key names the input memory (data pointer, shape, strides) and the
# entry holds those arrays, so their memory cannot be reused by another frame while it lives; within
# a run the frame is read only (evaluate is pure).
_RUN_VALUES: dict[tuple, tuple[list[Any], Any]] = {}


def run_value(key: tuple, arrays: list[Any], compute: Callable[[], Any]) -> Any:
    """``compute()`` once per ``shared_evaluations`` block and ``key`` (``arrays``: the inputs the key
    names, held while the entry lives); outside a block, always computed. Read the value, never change it."""
    if not _EVALUATIONS_DEPTH:
        return compute()
    with _EVALUATIONS_LOCK:
        found = _RUN_VALUES.get(key)
    if found is not None:
        return found[1]
    value = compute()
    with _EVALUATIONS_LOCK:
        if _EVALUATIONS_DEPTH:
            _RUN_VALUES[key] = (list(arrays), value)
    return value


def memory_key(values: np.ndarray) -> tuple:
    """What ``run_value`` keys an input array on: its memory (data pointer, dtype, shape, strides)."""
    return (values.__array_interface__["data"][0], values.dtype.str, values.shape, values.strides)


# ---- model options (``--option MODEL.KEY=VALUE``) ------------------------------
# One parser for every model, so a bad value names the model, the option and
# what is expected, instead of a bare Python conversion error.

def number_option(options: Mapping[str, Any], name: str, default: float, model_id: str,
                  *, positive: bool = False) -> float:
    """A numeric option (finite; > 0 when ``positive``), else ``default``."""
    from nvperf_bridge.errors import ModelError

    value = options.get(name, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not np.isfinite(number) or (positive and number <= 0):
        need = "a positive number" if positive else "a number"
        raise ModelError(f"option {name} must be {need}, got {value!r}", model_id=model_id)
    return number


def choice_option(options: Mapping[str, Any], name: str, allowed: tuple[str, ...], model_id: str) -> str:
    """One of ``allowed`` (case-insensitive), else ``allowed[0]``. A boolean stands for the switch
    word it is spelt as: YAML reads a profile's ``l2_reads: off`` as False (YAML 1.1's on/off,
    yes/no, true/false), so False is the choice ``off``/``no``/``false`` that ``allowed`` holds."""
    from nvperf_bridge.errors import ModelError

    given = options.get(name, allowed[0])
    if isinstance(given, bool):
        words = ("on", "yes", "true") if given else ("off", "no", "false")
        given = next((word for word in words if word in allowed), given)
    value = str(given).strip().lower()
    if value not in allowed:
        raise ModelError(f"option {name} must be one of {', '.join(allowed)}, got {options.get(name)!r}",
                         model_id=model_id)
    return value


def bool_option(options: Mapping[str, Any], name: str, default: bool, model_id: str) -> bool:
    """true/false (also 1/0, yes/no, on/off), else ``default``."""
    from nvperf_bridge.errors import ModelError

    value = options.get(name, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ModelError(f"option {name} must be true or false, got {value!r}", model_id=model_id)

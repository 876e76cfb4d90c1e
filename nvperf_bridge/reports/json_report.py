"""The JSON report: nvperf-bridge's versioned machine interface.

Schema (``schema_version`` 3). Times are nanoseconds, accuracy figures are
fractions (0.123 = 12.3 %), every NaN or infinity is ``null``::

    {
      "schema_version": 3,
      "tool": {"name": "nvperf-bridge", "version": "0.1.0"},
      "created": "2025-01-31T12:00:00+00:00",        # UTC, ISO 8601
      "inputs": [
        {"path": "profile.csv", "format": "ncu-raw", "kernels": 12,
         "device": "NVIDIA A100-SXM4-40GB", "skipped": ["line 12: memcpy row (not a kernel)"]}
      ],
      "profiles": [                                   # one per file given or found in a folder
        {"path": "profile.csv", "format": "ncu-raw", "kernels": 12, "device": "NVIDIA A100-SXM4-40GB",
         "status": "ok"}                              # or "ok, 2 non-kernel rows skipped", "skipped: <why>"
      ],
      "gpu": {"id": "a100", "name": "NVIDIA A100", "choice": "matched device name 'NVIDIA A100-SXM4-40GB'"},
      "review": {                                     # nvperf_bridge.review.build.review_dict: groups longest
        "time_source": "measured", "groups_total": 4,  # first (kernel + launch shape), each with launches,
        "groups": [{"kernel": "...", "launches": 6000, "total_ns": 2.9e8, "share": 0.74, "top": true,
                    "verdict": "memory-bandwidth", "basis": "2 of 3 voting models; within 2x ...",
                    "nsight": {"compute": 0.23, "memory": 0.35, "view": "latency", ...},
                    "nsight_rules": [...], "advice": [{"rule": "...", "text": "...", ...}]}],
        "coverage": [{"model": "hong-kim", "predicted": 3, "not_predicted": 0, "reason": ""}],
        "unpredicted": [{"group": 0, "kernel": "...", "missing": {...}, "command": "ncu ..."}],
        "warnings": [...]},
      "models": {                                     # every model that was asked for
        "hong-kim": {"version": "1.0", "paper": "Hong & Kim, ISCA'09", "origin": "entry point ...",
                     "failed": false, "failure": "",  # failure: why it produced nothing at all
                     "constants": {"Mem_LD": {"value": 420.0, "source": "Table 5", "status": "paper"}},
                     "details": ["MWP", "CWP"]}       # the names of its columns in "details" below
      },
      "kernel_count": 12,                             # every column below holds this many values
      "kernels": {                                    # columnar, in input order (see "Columns" below)
        "kernel_id": ["0", "1", ...],
        "kernel": {"values": ["vecAdd", "reduce"], "codes": [0, 0, 1, ...]},
        "kernel_name": {"values": ["vecAdd(float*, float*)", "reduce(int*)"], "codes": [0, 0, 1, ...]},
        "measured_ns": [12345.0, null, ...]           # null where the input has no duration
      },
      "predictions": {                                # models that ran; a failed model is absent
        "hong-kim": {"predicted_ns": [11000.0, ...], "predicted_cycles": [15000.0, ...],
                     "bottleneck": {"values": ["memory-bandwidth", "compute"], "codes": [0, 1, ...]},
                     "state": {"values": ["MWP < CWP", ...], "codes": [...]},   # the paper's own label
                     "error": {"constant": ""}}       # why a kernel has no prediction ("" = none)
      },
      "details": {                                    # the papers' intermediate quantities
        "hong-kim": {"MWP": [4.2, ...],
                     "Mem_LD": {"constant": 420.0},  # the same for every kernel: written once
                     "N_source": {"constant": "achieved_occupancy"}}
      },
      "accuracy": {                                   # models with a result; n = kernels compared
        "hong-kim": {"n": 12, "mape": 0.21, "median_ape": 0.15, "gm_abs_error": 0.12, "mean_accuracy": 0.83}
      },
      "warnings": ["..."]
    }

Columns. Every entry of ``kernels``, ``predictions.<model>`` and
``details.<model>`` is one column, ``kernel_count`` values in kernel order,
written in one of three forms:

- a list: one value per kernel;
- ``{"constant": v}``: every kernel has ``v`` (written once);
- ``{"values": [...], "codes": [...]}``: text with repeats; kernel ``i`` has
  ``values[codes[i]]`` (``values`` holds each distinct value once, ``null``
  included).

``nvperf_bridge.reports.json_read`` turns a column back into a list
(``column_values``), a section into a pandas DataFrame (``section_frame``) and
the kernels into the per-kernel records of schema 2 (``kernel_records``).

Changes from version 2: the per-kernel records became the columnar
``kernels`` and ``predictions`` sections, and a column whose values are all
equal or that repeats few texts is written once (``constant``) or by codes;
every value is kept (schema 2's ``kernels[i]["models"][m][f]`` is
``predictions[m][f]`` at position ``i``). At 100k ncu raw launches and seven
models the file went from 482 MB to about a third, most of it the
details' numbers. Version 2 had moved the details out of the kernel records
into the columnar ``details`` section.

The file is written in chunks as it is produced (``iter_json``), never held
whole in memory. Numbers are written by orjson (a runtime dependency:
several times faster for the float columns), imported on first use; where it
cannot be imported the standard library writes them, and both give the same
values (orjson may spell an exponent differently, ``1e-7`` for ``1e-07``).

Keys are only ever added within a schema version; a removal or a change of
meaning increments ``schema_version``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.discovery import profile_rows
from nvperf_bridge.model import RESULT_COLUMNS
from nvperf_bridge.review.build import build_review, review_dict
from nvperf_bridge.run_options import INTERNAL_OPTIONS, is_extension
from nvperf_bridge.reports.common import detail_columns, full_names, kernel_ids, python_value, display_names

SCHEMA_VERSION = 3

#: Result fields whose false values (None, NaN, "", 0) are written as "" (no label, no error).
_OR_EMPTY = ("state", "error")


@functools.cache
def _orjson() -> Any:
    """orjson (a runtime dependency: numpy number columns to JSON text in C), imported when a report first
    writes a number column; None where it cannot be imported, and the standard library writes the same
    values (``tests/test_reports_json_csv.py`` hides the module)."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson


@dataclass(frozen=True)
class Column:
    """One column of the report in the form it is written: ``constant`` (one plain value),
    ``coded`` (distinct plain values and one code per kernel) or ``list`` (``array``, one value per kernel:
    a numeric array, or an object array of plain values; ``values`` (the distinct texts) and ``codes`` when
    it is text)."""

    form: str
    value: Any = None
    values: list[Any] | None = None
    codes: np.ndarray | None = None
    array: np.ndarray | None = None


def encode_column(values: Any, or_empty: bool = False) -> Column:
    """The written form of a column: ``constant`` when every kernel (of two or more) has the same value,
    ``coded`` for text where each distinct value repeats on average (at most half as many distinct values
    as kernels), else ``list``. ``or_empty``: a false value (None, NaN, "", 0, False) becomes ``""``."""
    array = _column_array(values)
    n = len(array)
    several = n > 1  # one kernel's column is a one-value list
    kind = array.dtype.kind
    if not or_empty and kind == "f":
        finite = np.isfinite(array)
        if several and not finite.any():
            return Column("constant", value=None)
        if several and finite.all() and _all_equal_bits(array):
            return Column("constant", value=float(array[0]))
        return Column("list", array=array)
    if not or_empty and kind in "iub":
        if several and (array == array[0]).all():
            return Column("constant", value=array[0].item())
        return Column("list", array=array)
    coded = _factorised_text(array, or_empty)
    if coded is None and not or_empty and kind == "O" and _only_bools(array):
        return encode_column(array.astype(bool))
    if coded is None:  # anything but text: plain values one by one
        plain = plain_values(array)
        if or_empty:
            plain = [value or "" for value in plain]
            coded = _factorised_text(np.array(plain, dtype=object), False)
        if coded is None:
            array = np.empty(len(plain), dtype=object)
            array[:] = plain
            return Column("list", array=array)
    distinct, codes = coded
    if several and len(distinct) == 1:
        return Column("constant", value=distinct[0])
    if several and 2 * len(distinct) <= n:
        return Column("coded", values=distinct, codes=codes)
    return Column("list", values=distinct, codes=codes)  # text, mostly distinct: written value by value


def _only_bools(array: np.ndarray) -> bool:
    from pandas.api.types import infer_dtype

    return infer_dtype(array, skipna=False) == "boolean"


def _all_equal_bits(array: np.ndarray) -> bool:
    """Every value of a finite float array has the same bits (so 0.0 and -0.0 differ, as their texts do)."""
    wide = np.ascontiguousarray(array, dtype=np.float64).view(np.uint64)
    return bool((wide == wide[0]).all())


def _factorised_text(array: np.ndarray, or_empty: bool) -> tuple[list[Any], np.ndarray] | None:
    """A column of strings and missing values as (its distinct plain values, a code per row);
    None for any other column. Missing values are ``None`` (``""`` with ``or_empty``, as is ``""``)."""
    import pandas as pd
    from pandas.api.types import infer_dtype

    if array.dtype.kind not in "OUST":
        return None
    found = _by_identity(array)  # a long column of a few objects: known from their addresses, first
    if found == ():
        return None
    if found is None:
        if len(array) > 1 and isinstance(array[0], str) and bool((array == array[0]).all()):
            return [str(array[0])], np.zeros(len(array), dtype=np.int64)  # one text: compared in C, no hashing
        if infer_dtype(array, skipna=True) not in ("string", "empty"):
            return None
        found = pd.factorize(array, use_na_sentinel=True)
    codes, distinct = found
    values: list[Any] = [str(value) for value in distinct.tolist()]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(values), codes)
        values.append(None)
    if or_empty:  # the distinct texts stay distinct, but "" and a missing value become the same text
        values = [value or "" for value in values]
        unique: dict[Any, int] = {}
        remap = np.array([unique.setdefault(value, len(unique)) for value in values], dtype=np.int64)
        if len(unique) < len(values):
            return list(unique), remap[codes]
    return values, np.asarray(codes, dtype=np.int64)


def _by_identity(array: np.ndarray) -> tuple[np.ndarray, Any] | tuple[()] | None:
    """``pd.factorize`` of a long object column that refers to a few objects (a model's labels, the kernel
    names), found by their addresses (``labels.identity_codes``, read once): its types read on the distinct
    objects, its rows never hashed as text. ``()`` where those objects are not all text or missing (not a
    text column); None where the column is short, not an object array or holds many distinct objects (the
    caller looks at every row)."""
    import pandas as pd
    from pandas.api.types import infer_dtype

    from nvperf_bridge.labels import identity_codes

    if array.dtype != object or len(array) < _BY_IDENTITY_FROM:
        return None
    found = identity_codes(array, _BY_IDENTITY_MOST)
    if found is None:
        return None
    id_codes, objects = found
    if infer_dtype(objects, skipna=True) not in ("string", "empty"):
        return ()
    codes, distinct = pd.factorize(objects, use_na_sentinel=True)  # equal texts at different addresses: one code
    return codes[id_codes], distinct


_BY_IDENTITY_FROM = 10_000  # rows from which a text column's distinct objects are looked for first
_BY_IDENTITY_MOST = 1024  # distinct objects at most for that (a model's labels, a run's kernel names)


def column_value(column: Column) -> Any:
    """A column as plain Python data, as it appears in the document."""
    if column.form == "constant":
        return {"constant": column.value}
    if column.form == "coded":
        return {"values": list(column.values), "codes": column.codes.tolist()}
    if column.codes is not None:
        return [column.values[code] for code in column.codes.tolist()]
    return plain_values(column.array)


def plain_values(values: Any) -> list[Any]:
    """A column as a list of plain Python values (NaN, NA and infinities as None), vectorised per dtype."""
    array = _column_array(values)
    if array.dtype.kind == "f":
        out = array.astype(object)
        out[~np.isfinite(array)] = None
        return out.tolist()
    if array.dtype.kind in "iub":
        return array.tolist()
    return [value if type(value) is str else python_value(value) for value in array.tolist()]


def _sections(analysis: Analysis) -> dict[str, dict[str, dict[str, Any]]]:
    """The column sources of the three columnar sections: (values, or_empty) by section, owner, name."""
    kernels = analysis.kernels
    runs = analysis.ok_runs()
    return {
        "kernels": {"": {"kernel_id": (kernel_ids(kernels), False), "kernel": (display_names(kernels), False),
                         "kernel_name": (full_names(kernels), False), "measured_ns": (analysis.measured_ns, False)}},
        "predictions": {mid: {name: (_result_column(run.result, name), name in _OR_EMPTY) for name in RESULT_COLUMNS}
                        for mid, run in runs.items()},
        "details": {mid: {str(name): (_result_column(run.result, name), False) for name in detail_columns(run)}
                    for mid, run in runs.items()},
    }


def _result_column(result: Any, name: Any) -> Any:
    """One result column by name (the first, if a plugin gave two columns the same name)."""
    values = result[name]
    return values.iloc[:, 0] if values.ndim == 2 else values


def build_document(analysis: Analysis) -> dict[str, Any]:
    """The report as plain Python data (the schema in this module's docstring)."""
    sections = _sections(analysis)
    columns = {section: {owner: {name: column_value(encode_column(*source)) for name, source in named.items()}
                         for owner, named in owners.items()}
               for section, owners in sections.items()}
    document = _document(analysis)
    document["kernels"] = columns["kernels"][""]
    document["predictions"] = columns["predictions"]
    document["details"] = columns["details"]
    return document


def _document(analysis: Analysis, review: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything of the document, with empty ``kernels``, ``predictions`` and ``details`` (the columnar
    sections, filled by ``build_document`` or streamed by ``iter_json``); the review is built here unless
    given (``iter_json`` gives a placeholder and streams it)."""
    accuracy = analysis.accuracy()
    ok = analysis.ok_runs()
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "nvperf-bridge", "version": analysis.tool_version},
        "created": analysis.created,
        "inputs": [
            {"path": item.path, "format": item.format, "kernels": int(item.kernels),
             "device": item.device, "skipped": list(item.skipped)}
            for item in analysis.inputs
        ],
        # every file given or found in a folder, with its status (skipped non-profiler files too)
        "profiles": profile_rows(analysis.inputs),
        "gpu": {"id": analysis.gpu.id, "name": analysis.gpu.name, "choice": analysis.gpu_choice},
        # kernel groups, verdicts, Nsight's view, advice, coverage: the review layer's plain dicts
        "review": review_dict(build_review(analysis)) if review is None else review,
        "models": {
            mid: {
                "version": run.version, "paper": run.paper, "origin": run.origin,
                "failed": run.result is None, "failure": run.failure,
                # what the model ran with beyond its defaults: the user's --option, a profile's model_options
                "options": {
                    name: {"value": python_value(value), "from": run.options_from.get(name, ""),
                           "extension": is_extension(value, run.extension_options.get(name, ()))}
                    for name, value in run.options.items() if name not in INTERNAL_OPTIONS
                },
                "constants": {
                    name: {"value": python_value(c.value), "source": c.source, "status": c.status}
                    for name, c in run.constants.items()
                },
                "details": [str(name) for name in detail_columns(run)] if mid in ok else [],
            }
            for mid, run in analysis.runs.items()
        },
        "kernel_count": len(analysis.kernels),
        "kernels": {},
        "predictions": {},
        "details": {},
        "accuracy": {
            str(mid): {key: (int(value) if key == "n" and python_value(value) is not None else python_value(value))
                       for key, value in row.items()}
            for mid, row in accuracy.to_dict(orient="index").items()
        },
        "warnings": list(analysis.warnings),
    }


def render_json(analysis: Analysis) -> str:
    """The JSON report as one text (``iter_json`` joined; for tests and small reports)."""
    return b"".join(iter_json(analysis)).decode("utf-8")


def iter_json(analysis: Analysis, chunk: int = 50_000) -> Iterator[bytes]:
    """The JSON report as UTF-8 chunks, a column (or ``chunk`` values of one) at a time, never the whole
    text at once.

    The document around the columnar sections is indented; each column is
    one line. A column's values become JSON text at once: orjson over a
    numeric array when installed (else ``repr`` over ``tolist()``), and each
    distinct text encoded once.
    """
    text = json.dumps(_document(analysis, {}), indent=2, ensure_ascii=False, allow_nan=False)
    review_marker = '\n  "review": {},'
    at_review = text.index(review_marker)
    yield text[:at_review].encode("utf-8")
    yield from _review_chunks(review_dict(build_review(analysis)))
    rest = text[at_review + len(review_marker):]
    for section, owners in _sections(analysis).items():
        marker = f'\n  "{section}": {{}},'
        at = rest.index(marker)
        yield (rest[:at] + f'\n  "{section}": {{').encode("utf-8")
        rest = rest[at + len(marker):]
        if section == "kernels":
            yield from _columns_chunks(owners[""], "    ", chunk)
            yield b"\n  }," if owners[""] else b"},"
            continue
        for number, (mid, named) in enumerate(owners.items()):
            yield ((",\n    " if number else "\n    ") + _encode_str(str(mid)) + ": {").encode("utf-8")
            yield from _columns_chunks(named, "      ", chunk)
            yield b"\n    }" if named else b"}"
        yield b"\n  }," if owners else b"},"
    yield (rest + "\n").encode("utf-8")


def _columns_chunks(named: dict[str, tuple[Any, bool]], indent: str, chunk: int) -> Iterator[bytes]:
    """The columns of one owner, one line each: ``"name": <column>``."""
    for place, (name, (values, or_empty)) in enumerate(named.items()):
        yield (("," if place else "") + "\n" + indent + _encode_str(str(name)) + ": ").encode("utf-8")
        yield from _column_chunks(encode_column(values, or_empty), chunk)


def _column_chunks(column: Column, chunk: int) -> Iterator[bytes]:
    """One column's JSON text, ``chunk`` values at a time (the same values as ``column_value``)."""
    if column.form == "constant":
        yield b'{"constant": ' + _encode(column.value).encode("utf-8") + b"}"
        return
    if column.form == "coded":
        yield b'{"values": ' + _encode(column.values).encode("utf-8") + b', "codes": ['
        yield from _list_chunks(column.codes, chunk)
        yield b"]}"
        return
    yield b"["
    if column.codes is not None:  # text: each distinct value encoded once, rows pick theirs by code
        table = np.empty(len(column.values), dtype=object)
        table[:] = _value_texts(column.values)
        for start in range(0, len(column.codes), chunk):
            part = ", ".join(table[column.codes[start:start + chunk]].tolist()).encode("utf-8")
            yield (b", " + part) if start else part
    else:
        yield from _list_chunks(column.array, chunk)
    yield b"]"


def _value_texts(values: list[Any]) -> list[str]:
    """The JSON text of each plain value, as ``_encode`` gives it: a column of texts (the kernel ids, a
    hundred thousand distinct ones) by the C string encoder in one ``map``, not an encoder call each."""
    if all(type(value) is str for value in values):
        return list(map(_encode_str, values))
    return [_encode(value) for value in values]


def _list_chunks(array: np.ndarray, chunk: int) -> Iterator[bytes]:
    for start in range(0, len(array), chunk):
        part = _joined_texts(array[start:start + chunk])
        yield (b", " + part) if start else part


def _review_chunks(review: dict[str, Any]) -> Iterator[bytes]:
    """The review section: one compact line per key, and per kernel group (a chunk each)."""
    yield b'\n  "review": {'
    for number, (key, value) in enumerate(review.items()):
        head = ("," if number else "") + "\n    " + _encode_str(key) + ": "
        if key == "groups" and value:
            yield (head + "[").encode("utf-8")
            for place, group in enumerate(value):
                yield ((",\n      " if place else "\n      ") + _encode(group)).encode("utf-8")
            yield b"\n    ]"
        else:
            yield (head + _encode(value)).encode("utf-8")
    yield b"\n  },"


_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode
_encode_str = json.encoder.encode_basestring  # what the encoder above uses for str (ensure_ascii=False)


def _column_array(values: Any) -> np.ndarray:
    return np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)


def _joined_texts(array: np.ndarray) -> bytes:
    """The values of a column chunk as JSON, comma-separated (the inside of a list)."""
    fast = _orjson() if array.dtype.kind in "fiub" else None
    if fast is not None:
        return fast.dumps(np.ascontiguousarray(array, dtype=np.float64) if array.dtype.kind == "f" else array,
                          option=fast.OPT_SERIALIZE_NUMPY)[1:-1]
    return ", ".join(json_texts(array)).encode("utf-8")


def json_texts(array: np.ndarray) -> list[str]:
    """The JSON text of each value of a column, as ``plain_values`` and the C encoder would give it."""
    kind = array.dtype.kind
    if kind == "f":
        out = list(map(float.__repr__, array.tolist()))
        for position in np.flatnonzero(~np.isfinite(array)).tolist():
            out[position] = "null"
        return out
    if kind == "b":
        return ["true" if value else "false" for value in array.tolist()]
    if kind in "iu":
        return list(map(int.__repr__, array.tolist()))
    return [_encode(value) for value in plain_values(array)]


__all__ = ["SCHEMA_VERSION", "Column", "build_document", "column_value", "encode_column", "iter_json",
           "plain_values", "render_json"]

"""The JSON report: nvperf-bridge's versioned machine interface.

Schema (``schema_version`` 2). Times are nanoseconds, accuracy figures are
fractions (0.123 = 12.3 %), every NaN or infinity is ``null``::

    {
      "schema_version": 2,
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
      "kernels": [                                    # one line per kernel, in input order
        {"kernel_id": "0", "kernel": "vecAdd", "kernel_name": "vecAdd(float*, float*)",
         "measured_ns": 12345.0,                      # null when the input has no duration
         "models": {                                  # models that ran; a failed model is absent
           "hong-kim": {"predicted_ns": 11000.0, "predicted_cycles": 15000.0,
                        "bottleneck": "memory-bandwidth",   # shared vocabulary, see DESIGN.md
                        "state": "MWP < CWP",               # the paper's own label
                        "error": ""}                        # why this kernel has no prediction
         }}
      ],
      "details": {                                    # the papers' intermediate quantities, columnar:
        "hong-kim": {"MWP": [4.2, ...],               # one list per quantity, one value per kernel,
                     "CWP": [8.0, ...]}               # in the order of "kernels"
      },
      "accuracy": {                                   # models with a result; n = kernels compared
        "hong-kim": {"n": 12, "mape": 0.21, "median_ape": 0.15, "gm_abs_error": 0.12, "mean_accuracy": 0.83}
      },
      "warnings": ["..."]
    }

Changes from version 1: each model's per-kernel ``details`` dict moved out of
the kernel records into the columnar ``details`` section (every value kept;
``models.<id>.details`` names the columns). At 100k kernels and six models
the per-kernel keys were most of a 561 MB file; pandas reads a model's
details with ``pd.DataFrame(document["details"]["hong-kim"])`` and the
kernels with ``pd.json_normalize(document["kernels"])``.

The file is written in chunks as it is produced (``iter_json``), never held
whole in memory. Numbers are written by orjson when it is installed (the
``fast`` extra: several times faster for the float columns) and by the
standard library otherwise; both give the same values (orjson may spell an
exponent differently, ``1e-7`` for ``1e-07``).

Keys are only ever added within a schema version; a removal or a change of
meaning increments ``schema_version``.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import numpy as np

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.discovery import profile_rows
from nvperf_bridge.model import RESULT_COLUMNS
from nvperf_bridge.review.build import build_review, review_dict
from nvperf_bridge.reports.common import detail_columns, full_names, kernel_ids, python_value, display_names

SCHEMA_VERSION = 2

try:  # optional (the ``fast`` extra): numpy float columns to JSON text in C
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised where orjson is not installed
    _orjson = None


def build_document(analysis: Analysis) -> dict[str, Any]:
    """The report as plain Python data (the schema in this module's docstring)."""
    kernels = analysis.kernels
    ids = plain_values(kernel_ids(kernels))
    short = plain_values(display_names(kernels))
    full = plain_values(full_names(kernels))
    measured = plain_values(analysis.measured_ns)
    runs = analysis.ok_runs()
    per_model = {mid: _model_entries(run.result) for mid, run in runs.items()}
    records = []
    for position in range(len(kernels)):
        records.append({
            "kernel_id": ids[position],
            "kernel": short[position],
            "kernel_name": full[position],
            "measured_ns": measured[position],
            "models": {mid: entries[position] for mid, entries in per_model.items()},
        })
    details = {mid: {name: plain_values(run.result[name]) for name in detail_columns(run)}
               for mid, run in runs.items()}
    return _document(analysis, records, details)


def _document(analysis: Analysis, records: list[Any], details: dict[str, Any],
              review: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything of the document around the kernel records and the details (both given); the review
    is built here unless given (``iter_json`` gives a placeholder and streams it)."""
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
                "constants": {
                    name: {"value": python_value(c.value), "source": c.source, "status": c.status}
                    for name, c in run.constants.items()
                },
                "details": [str(name) for name in detail_columns(run)] if mid in ok else [],
            }
            for mid, run in analysis.runs.items()
        },
        "kernels": records,
        "details": details,
        "accuracy": {
            str(mid): {key: (int(value) if key == "n" and python_value(value) is not None else python_value(value))
                       for key, value in row.items()}
            for mid, row in accuracy.to_dict(orient="index").items()
        },
        "warnings": list(analysis.warnings),
    }


def _model_entries(result: Any) -> list[dict[str, Any]]:
    """One dict per kernel for one model, built column-wise (no per-kernel pandas access)."""
    columns = {name: plain_values(result[name]) for name in RESULT_COLUMNS}
    for name in ("state", "error"):
        columns[name] = [value or "" for value in columns[name]]
    return [dict(zip(RESULT_COLUMNS, values)) for values in zip(*(columns[name] for name in RESULT_COLUMNS))]


def plain_values(values: Any) -> list[Any]:
    """A column as a list of plain Python values (NaN, NA and infinities as None), vectorised per dtype."""
    array = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
    if array.dtype.kind == "f":
        out = array.astype(object)
        out[~np.isfinite(array)] = None
        return out.tolist()
    if array.dtype.kind in "iub":
        return array.tolist()
    return [value if type(value) is str else python_value(value) for value in array.tolist()]


def render_json(analysis: Analysis) -> str:
    """The JSON report as one text (``iter_json`` joined; for tests and small reports)."""
    return b"".join(iter_json(analysis)).decode("utf-8")


def iter_json(analysis: Analysis, chunk: int = 5_000) -> Iterator[bytes]:
    """The JSON report as UTF-8 chunks, produced ``chunk`` kernels at a time (never the whole text at once).

    The document around the kernels is indented; each kernel record is one
    compact line (grep and diff find a kernel by its line), and each details
    column is one list. Every value of a column is turned into JSON text at
    once (orjson over the float array when installed, else ``float.__repr__``
    over ``tolist()``; each distinct string encoded once) and one %-template
    per kernel joins a record. Anything unusual (a non-text column name)
    takes the general path through ``build_document``.
    """
    runs = analysis.ok_runs()
    details = {mid: detail_columns(run) for mid, run in runs.items()}
    if not _columnar_ok(runs, details):
        yield _render_records(analysis, build_document(analysis)).encode("utf-8")
        return
    text = json.dumps(_document(analysis, [], {}, {}), indent=2, ensure_ascii=False, allow_nan=False)
    kernels_marker, details_marker = '\n  "kernels": [],', '\n  "details": {},'
    review_marker = '\n  "review": {},'
    at_kernels, at_details = text.index(kernels_marker), text.index(details_marker)
    at_review = text.index(review_marker)
    n = len(analysis.kernels)
    yield text[:at_review].encode("utf-8")
    yield from _review_chunks(review_dict(build_review(analysis)))
    yield (text[at_review + len(review_marker):at_kernels] + '\n  "kernels": [').encode("utf-8")
    if n:
        template, columns = _record_template(analysis, runs)
        raw = _orjson is not None
        line_template = template.encode("utf-8") if raw else template
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            texts = [column(start, stop) for column in columns]
            lines = [line_template % values for values in zip(*texts)]
            joined = (b",\n" if raw else ",\n").join(lines)
            yield (b",\n" if start else b"\n") + (joined if raw else joined.encode("utf-8"))
        yield b"\n  "
    yield b"],\n  \"details\": {"
    for number, (mid, names) in enumerate(details.items()):
        yield ((",\n    " if number else "\n    ") + _encode_str(mid) + ": {").encode("utf-8")
        result = runs[mid].result
        for place, name in enumerate(names):
            yield (("," if place else "") + "\n      " + _encode_str(name) + ": [").encode("utf-8")
            array = _column_array(result[name])
            coded = _coded_texts(array, False, as_bytes=True)
            for start in range(0, n, chunk):
                part = (_joined_texts(array[start:start + chunk]) if coded is None
                        else b", ".join(coded[0][coded[1][start:start + chunk]].tolist()))
                yield (b", " + part) if start else part
            yield b"]"
        yield b"\n    }" if names else b"}"
    yield (("\n  }," if details else "},") + text[at_details + len(details_marker):] + "\n").encode("utf-8")


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


def _render_records(analysis: Analysis, document: dict[str, Any]) -> str:
    """The report from a ready document (the general path): the same layout as ``iter_json``."""
    kernels, details, review = document["kernels"], document["details"], document["review"]
    text = json.dumps({**document, "kernels": [], "details": {}, "review": {}}, indent=2, ensure_ascii=False,
                      allow_nan=False)
    text = text.replace('\n  "review": {},', b"".join(_review_chunks(review)).decode("utf-8"), 1)
    if kernels:
        body = ",\n".join("    " + _encode(record) for record in kernels)
        text = text.replace('\n  "kernels": [],', '\n  "kernels": [\n' + body + '\n  ],', 1)
    if details:
        body = ",\n".join(
            "    " + _encode_str(str(mid)) + ": {" + ",".join(
                "\n      " + _encode_str(str(name)) + ": " + _encode(values) for name, values in columns.items())
            + ("\n    }" if columns else "}")
            for mid, columns in details.items())
        text = text.replace('\n  "details": {},', '\n  "details": {\n' + body + '\n  },', 1)
    return text + "\n"


def _columnar_ok(runs: dict[str, Any], details: dict[str, list[str]]) -> bool:
    """Whether the column-wise writer gives the same text: text keys, unique result columns."""
    for mid, run in runs.items():
        if type(mid) is not str or not run.result.columns.is_unique:
            return False
        if any(type(name) is not str for name in details[mid]):
            return False
    return True


def _column_array(values: Any) -> np.ndarray:
    return np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)


def _record_template(analysis: Analysis, runs: dict[str, Any]) -> tuple[str, list[Callable[[int, int], list[Any]]]]:
    """The %-template of one kernel line and, per placeholder, a function (start, stop) -> JSON texts
    (bytes with orjson, str without: the template is encoded to match)."""
    kernels = analysis.kernels

    def key(name: str) -> str:
        return _encode_str(name).replace("%", "%%") + ": "

    def texts_of(values: Any, or_empty: bool = False) -> Callable[[int, int], list[Any]]:
        array = _column_array(values)
        coded = _coded_texts(array, or_empty, as_bytes=_orjson is not None)
        if coded is not None:  # strings: each distinct one encoded once, rows pick theirs by code
            table, codes = coded
            return lambda start, stop: table[codes[start:stop]].tolist()
        if _orjson is not None:
            return lambda start, stop: json_bytes(array[start:stop], or_empty)
        return lambda start, stop: json_texts(array[start:stop], or_empty)

    parts = ["    {" + key("kernel_id") + "%s, " + key("kernel") + "%s, " + key("kernel_name") + "%s, "
             + key("measured_ns") + "%s, " + key("models") + "{"]
    columns = [texts_of(kernel_ids(kernels)), texts_of(display_names(kernels)), texts_of(full_names(kernels)),
               texts_of(analysis.measured_ns)]
    model_parts = []
    for mid, run in runs.items():
        result = run.result
        fields = [key(name) + "%s" for name in RESULT_COLUMNS]
        columns += [texts_of(result[name], or_empty=name in ("state", "error")) for name in RESULT_COLUMNS]
        model_parts.append(key(mid) + "{" + ", ".join(fields) + "}")
    parts.append(", ".join(model_parts) + "}}")
    return "".join(parts), columns


def _joined_texts(array: np.ndarray) -> bytes:
    """The values of a column chunk as JSON, comma-separated (the inside of a list)."""
    if _orjson is not None and array.dtype.kind in "fiub":
        return _orjson.dumps(np.ascontiguousarray(array, dtype=np.float64) if array.dtype.kind == "f" else array,
                             option=_orjson.OPT_SERIALIZE_NUMPY)[1:-1]
    return ", ".join(json_texts(array)).encode("utf-8")


def json_bytes(array: np.ndarray, or_empty: bool = False) -> list[bytes]:
    """``json_texts`` as UTF-8 bytes, with orjson writing a float column at once (NaN and infinities: null)."""
    if not or_empty and array.dtype.kind == "f" and len(array):
        return _orjson.dumps(np.ascontiguousarray(array, dtype=np.float64),
                             option=_orjson.OPT_SERIALIZE_NUMPY)[1:-1].split(b",")
    cache: dict[str, bytes] = {}
    out = []
    for text in json_texts(array, or_empty):
        data = cache.get(text)
        if data is None:
            data = cache[text] = text.encode("utf-8")
        out.append(data)
    return out


def json_texts(array: np.ndarray, or_empty: bool = False) -> list[str]:
    """The JSON text of each value of a column, as ``plain_values`` and the C encoder would give it.

    ``or_empty``: a false plain value (None, "", 0, False) is written as ``""`` (the ``state`` and
    ``error`` fields).
    """
    kind = array.dtype.kind
    if not or_empty:
        if kind == "f":
            out = list(map(float.__repr__, array.tolist()))
            for position in np.flatnonzero(~np.isfinite(array)).tolist():
                out[position] = "null"
            return out
        if kind == "b":
            return ["true" if value else "false" for value in array.tolist()]
        if kind in "iu":
            return list(map(int.__repr__, array.tolist()))
    texts = _text_column(array, or_empty)
    if texts is not None:
        return texts
    values = plain_values(array)
    if or_empty:
        values = [value or "" for value in values]
    cache: dict[str, str] = {}
    out = []
    for value in values:
        if type(value) is str:
            text = cache.get(value)
            if text is None:
                text = cache[value] = _encode_str(value)
        else:
            text = _encode(value)
        out.append(text)
    return out


def _coded_texts(array: np.ndarray, or_empty: bool, as_bytes: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """A column of strings (and missing values) as (JSON text of each distinct value, then of a missing
    one; each row's position in it), so a chunk of rows is one ``take``; None for any other column
    (the texts are those ``json_texts`` gives, as UTF-8 bytes with ``as_bytes``)."""
    import pandas as pd
    from pandas.api.types import infer_dtype

    if array.dtype.kind not in "OUS" or infer_dtype(array, skipna=True) not in ("string", "empty"):
        return None
    codes, distinct = pd.factorize(array, use_na_sentinel=True)
    texts = [_encode_str(value) if value or not or_empty else '""' for value in distinct.tolist()]
    texts.append('""' if or_empty else "null")
    table = np.array([text.encode("utf-8") for text in texts] if as_bytes else texts, dtype=object)
    return table, codes  # code -1 (missing) takes the last entry


def _text_column(array: np.ndarray, or_empty: bool) -> list[str] | None:
    """The JSON texts of a column of strings and missing values, each distinct string encoded once
    (factorised in C); None when the column holds anything else (True, 1 and 1.0 would share a code)."""
    import pandas as pd
    from pandas.api.types import infer_dtype

    if array.dtype.kind not in "OUS" or infer_dtype(array, skipna=True) not in ("string", "empty"):
        return None
    codes, distinct = pd.factorize(array, use_na_sentinel=True)
    texts = np.array([_encode_str(value) if value or not or_empty else '""' for value in distinct.tolist()]
                     + ['""' if or_empty else "null"], dtype=object)
    return texts[codes].tolist()  # code -1 (missing) takes the last entry


__all__ = ["SCHEMA_VERSION", "build_document", "iter_json", "render_json"]

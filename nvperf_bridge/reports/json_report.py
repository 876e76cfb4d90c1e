"""The JSON report: nvperf-bridge's versioned machine interface.

Schema (``schema_version`` 1). Times are nanoseconds, accuracy figures are
fractions (0.123 = 12.3 %), every NaN or infinity is ``null``::

    {
      "schema_version": 1,
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
      "models": {                                     # every model that was asked for
        "hong-kim": {"version": "1.0", "paper": "Hong & Kim, ISCA'09", "origin": "entry point ...",
                     "failed": false, "failure": "",  # failure: why it produced nothing at all
                     "constants": {"Mem_LD": {"value": 420.0, "source": "Table 5", "status": "paper"}}}
      },
      "kernels": [
        {"kernel_id": "0", "kernel": "vecAdd", "kernel_name": "vecAdd(float*, float*)",
         "measured_ns": 12345.0,                      # null when the input has no duration
         "models": {                                  # models that ran; a failed model is absent
           "hong-kim": {"predicted_ns": 11000.0, "predicted_cycles": 15000.0,
                        "bottleneck": "memory-bandwidth",   # shared vocabulary, see DESIGN.md
                        "state": "MWP < CWP",               # the paper's own label
                        "error": "",                        # why this kernel has no prediction
                        "details": {"MWP": 4.2, "CWP": 8.0}}  # the paper's intermediate quantities
         }}
      ],
      "accuracy": {                                   # models with a result; n = kernels compared
        "hong-kim": {"n": 12, "mape": 0.21, "median_ape": 0.15, "gm_abs_error": 0.12, "mean_accuracy": 0.83}
      },
      "warnings": ["..."]
    }

Keys are only ever added within a schema version; a removal or a change of
meaning increments ``schema_version``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.discovery import profile_rows
from nvperf_bridge.model import RESULT_COLUMNS
from nvperf_bridge.reports.common import detail_columns, full_names, kernel_ids, python_value, display_names

SCHEMA_VERSION = 1


def build_document(analysis: Analysis) -> dict[str, Any]:
    """The report as plain Python data (the schema in this module's docstring)."""
    kernels = analysis.kernels
    ids = plain_values(kernel_ids(kernels))
    short = plain_values(display_names(kernels))
    full = plain_values(full_names(kernels))
    measured = plain_values(analysis.measured_ns)
    per_model: dict[str, list[dict[str, Any]]] = {}
    for mid, run in analysis.ok_runs().items():
        per_model[mid] = _model_entries(run.result, detail_columns(run))
    records = []
    for position in range(len(kernels)):
        records.append({
            "kernel_id": ids[position],
            "kernel": short[position],
            "kernel_name": full[position],
            "measured_ns": measured[position],
            "models": {mid: entries[position] for mid, entries in per_model.items()},
        })
    return _document(analysis, records)


def _document(analysis: Analysis, records: list[Any]) -> dict[str, Any]:
    """Everything of the document around the kernel records (given)."""
    accuracy = analysis.accuracy()
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
        "models": {
            mid: {
                "version": run.version, "paper": run.paper, "origin": run.origin,
                "failed": run.result is None, "failure": run.failure,
                "constants": {
                    name: {"value": python_value(c.value), "source": c.source, "status": c.status}
                    for name, c in run.constants.items()
                },
            }
            for mid, run in analysis.runs.items()
        },
        "kernels": records,
        "accuracy": {
            str(mid): {key: (int(value) if key == "n" and python_value(value) is not None else python_value(value))
                       for key, value in row.items()}
            for mid, row in accuracy.to_dict(orient="index").items()
        },
        "warnings": list(analysis.warnings),
    }


def _model_entries(result: Any, details: list[str]) -> list[dict[str, Any]]:
    """One dict per kernel for one model, built column-wise (no per-kernel pandas access).

    Values are made plain Python (NaN -> None) one column at a time, so the
    per-kernel loop only zips ready lists into dicts.
    """
    columns = {name: plain_values(result[name]) for name in (*RESULT_COLUMNS, *details)}
    for name in ("state", "error"):
        columns[name] = [value or "" for value in columns[name]]
    detail_rows = zip(*(columns[name] for name in details)) if details else itertools.repeat(())
    return [
        {**dict(zip(RESULT_COLUMNS, values)), "details": dict(zip(details, detail_values))}
        for values, detail_values in zip(zip(*(columns[name] for name in RESULT_COLUMNS)), detail_rows)
    ]


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
    """The JSON report as text (UTF-8, indented, strict: NaN is written as null).

    The document is indented; each kernel record is written compactly on a
    line of its own, which also keeps one kernel per line for grep and diff.
    The records are the text ``json.dumps`` (C encoder, ``", "`` and ``": "``
    separators) gives for ``build_document``'s records, but written column by
    column: every value of a column is turned into its JSON text at once
    (``float.__repr__`` over ``tolist()``, each distinct string encoded
    once), and one %-template per kernel joins them. No per-kernel dicts are
    built; anything unusual (a non-text column name) takes the dict path.
    """
    runs = analysis.ok_runs()
    details = {mid: detail_columns(run) for mid, run in runs.items()}
    if not _columnar_ok(runs, details):
        return _render_records(analysis, build_document(analysis)["kernels"])
    text = json.dumps(_document(analysis, []), indent=2, ensure_ascii=False, allow_nan=False)
    n = len(analysis.kernels)
    if not n:
        return text + "\n"
    marker = '\n  "kernels": [],'
    at = text.index(marker)
    head = text[:at] + '\n  "kernels": [\n'
    tail = "\n  ]," + text[at + len(marker):] + "\n"
    template, columns = _record_template(analysis, runs, details)
    lines: list[str] = []
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        texts = [column(start, stop) for column in columns]
        lines.extend(template % values for values in zip(*texts))
        del texts
    lines[0] = head + lines[0]
    lines[-1] = lines[-1] + tail
    return ",\n".join(lines)


_CHUNK = 20_000
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode
_encode_str = json.encoder.encode_basestring  # what the encoder above uses for str (ensure_ascii=False)


def _render_records(analysis: Analysis, kernels: list[dict[str, Any]]) -> str:
    """The report from ready kernel records (the general path)."""
    text = json.dumps(_document(analysis, []), indent=2, ensure_ascii=False, allow_nan=False)
    if kernels:
        body = ",\n".join("    " + _encode(record) for record in kernels)
        text = text.replace('\n  "kernels": [],', '\n  "kernels": [\n' + body + '\n  ],', 1)
    return text + "\n"


def _columnar_ok(runs: dict[str, Any], details: dict[str, list[str]]) -> bool:
    """Whether the column-wise writer gives the same text: text keys, unique result columns."""
    for mid, run in runs.items():
        if type(mid) is not str or not run.result.columns.is_unique:
            return False
        if any(type(name) is not str for name in details[mid]):
            return False
    return True


def _record_template(analysis: Analysis, runs: dict[str, Any], details: dict[str, list[str]]) -> tuple[str, list[Any]]:
    """The %-template of one kernel line and, per placeholder, a function (start, stop) -> JSON texts."""
    kernels = analysis.kernels

    def key(name: str) -> str:
        return _encode_str(name).replace("%", "%%") + ": "

    def texts_of(values: Any, or_empty: bool = False) -> Any:
        array = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
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
        detail = [key(name) + "%s" for name in details[mid]]
        columns += [texts_of(result[name]) for name in details[mid]]
        model_parts.append(key(mid) + "{" + ", ".join(fields) + ", " + key("details") + "{" + ", ".join(detail) + "}}")
    parts.append(", ".join(model_parts) + "}}")
    return "".join(parts), columns


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


__all__ = ["SCHEMA_VERSION", "build_document", "render_json"]

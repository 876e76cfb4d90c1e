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
    line of its own by the C encoder (the indenting encoder is pure Python
    and took most of the time of a large report), which also keeps one
    kernel per line for grep and diff.
    """
    document = build_document(analysis)
    kernels = document["kernels"]
    document["kernels"] = []
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    if kernels:
        encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode
        body = ",\n".join("    " + encode(record) for record in kernels)
        text = text.replace('\n  "kernels": [],', '\n  "kernels": [\n' + body + '\n  ],', 1)
    return text + "\n"


__all__ = ["SCHEMA_VERSION", "build_document", "render_json"]

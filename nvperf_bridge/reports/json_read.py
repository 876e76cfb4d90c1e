"""Reading a JSON report back (schema 3): columns to lists, sections to tables, kernels to records.

The report writes each column of its ``kernels``, ``predictions`` and
``details`` sections as a list, as ``{"constant": v}`` or as
``{"values": [...], "codes": [...]}`` (see ``json_report``); these helpers
undo that, so a script reads a model's details as a table::

    document = json.load(open("report.json"))
    details = section_frame(document, document["details"]["hong-kim"])   # one row per kernel
    records = kernel_records(document)   # schema 2's per-kernel records, details included
"""

from __future__ import annotations

from typing import Any

#: The schema versions these helpers read.
READS = (3,)


def column_values(column: Any, count: int) -> list[Any]:
    """One column of a report as a list of ``count`` values (one per kernel, in kernel order)."""
    if isinstance(column, list):
        if len(column) != count:
            raise ValueError(f"a column of {len(column)} values in a report of {count} kernels")
        return column
    if isinstance(column, dict) and "constant" in column:
        return [column["constant"]] * count
    if isinstance(column, dict) and "codes" in column:
        values = column["values"]
        if len(column["codes"]) != count:
            raise ValueError(f"a column of {len(column['codes'])} codes in a report of {count} kernels")
        return [values[code] for code in column["codes"]]
    raise ValueError(f"not a report column (a list, {{'constant': v}} or {{'values', 'codes'}}): {column!r:.80}")


def section_columns(document: dict[str, Any], columns: dict[str, Any]) -> dict[str, list[Any]]:
    """A section of columns (``document["kernels"]``, ``document["predictions"]["hong-kim"]``, ...) as
    plain lists, one value per kernel."""
    _check_version(document)
    count = document["kernel_count"]
    return {name: column_values(column, count) for name, column in columns.items()}


def section_frame(document: dict[str, Any], columns: dict[str, Any]) -> Any:
    """A section of columns as a pandas DataFrame, one row per kernel."""
    import pandas as pd

    return pd.DataFrame(section_columns(document, columns), index=pd.RangeIndex(document["kernel_count"]))


def kernel_records(document: dict[str, Any], details: bool = True) -> list[dict[str, Any]]:
    """One dict per kernel, as schema 2 wrote them: kernel_id, kernel, kernel_name, measured_ns and
    ``models: {model: {predicted_ns, predicted_cycles, bottleneck, state, error}}``; with ``details``
    each model's entry also has ``details: {name: value}``."""
    kernels = section_columns(document, document["kernels"])
    predictions = {mid: section_columns(document, columns) for mid, columns in document["predictions"].items()}
    extra = ({mid: section_columns(document, columns) for mid, columns in document["details"].items()}
             if details else {})
    records = []
    for position in range(document["kernel_count"]):
        models = {}
        for mid, fields in predictions.items():
            entry = {name: values[position] for name, values in fields.items()}
            if mid in extra:
                entry["details"] = {name: values[position] for name, values in extra[mid].items()}
            models[mid] = entry
        records.append({**{name: values[position] for name, values in kernels.items()}, "models": models})
    return records


def _check_version(document: dict[str, Any]) -> None:
    version = document.get("schema_version")
    if version not in READS:
        raise ValueError(f"a JSON report of schema_version {version!r}; this reader reads {READS}")


__all__ = ["READS", "column_values", "kernel_records", "section_columns", "section_frame"]

"""ncu-raw: ``ncu --csv --page raw`` (wide: one row per launch, hundreds of metric columns).

The row after the header holds each column's unit (empty for the identity
columns). Columns mix numbers, tuples such as ``"(16, 8, 1)"`` and words such
as ``NVIDIA B200`` or ``CachePreferNone``: numeric columns are converted to
base units with one multiplication per column; the others stay text. The
device name comes from ``device__attribute_display_name``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.importers.canonical import canonicalize, finish
from nvperf_bridge.importers.sniff import Sniffed
from nvperf_bridge.importers.text import parse_numbers, read_table, table_at, tuple_product, unparsed
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import lookup

FORMAT = "ncu-raw"

# identity columns -> canonical (or kept raw) name; they are always read as text
IDENTITY = {
    "ID": "kernel_id",
    "Kernel Name": "kernel_name",
    "Device": "device_index",
    "CC": "cc",
    "Process ID": "Process ID",
    "Process Name": "Process Name",
    "Host Name": "Host Name",
    "Context": "Context",
    "Stream": "Stream",
    "Kernel Time": "Kernel Time",
}
SHAPE = {"Block Size": "launch__block_size", "Grid Size": "launch__grid_size"}


def read(path: Path, text: str, found: Sniffed) -> Parsed:
    """Read an ncu raw-page CSV into one canonical row per launch."""
    table = table_at(text, found.start)
    header_end = text.find("\n", table.start)
    header = next(csv.reader(io.StringIO(text[table.start:header_end])), [])
    text_cols = [c for c in header if c.strip() in IDENTITY or c.strip() in SHAPE]
    raw, units = read_table(text, table, path, skip_units_row=_has_units_row(text, header_end), text_columns=text_cols)
    info = InputFile(path=str(path), format=FORMAT, kernels=0)
    if raw.empty:
        raise InputError("the ncu raw table has a header but no launches", path=path, line=table.header_line + 1)
    first_line = table.header_line + (3 if units is not None else 2)
    unit_of = dict(zip([h.strip() for h in header], units or [""] * len(header)))
    if units is None:
        info.notes.append("no units row after the header: values taken as printed (collect with --print-units base)")

    frame = pd.DataFrame(index=raw.index)
    metrics: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    unknown: set[str] = set()
    for column in raw.columns:
        series = raw[column]
        if column in IDENTITY:
            frame[IDENTITY[column]] = series.astype(object)
            continue
        if column in SHAPE:
            if SHAPE[column] not in raw.columns:
                metrics[SHAPE[column]] = tuple_product(series)
            continue
        unit = (unit_of.get(column) or "").strip()
        numbers = series.astype("float64") if series.dtype.kind in "fiub" else parse_numbers(series)
        if series.dtype.kind not in "fiub" and unparsed(series, numbers).any():
            metrics[column] = series  # words, tuples: kept as text
            continue
        found = lookup(unit)
        if found is None:
            unknown.add(unit)
            found = (1.0, "?")
        metrics[column] = numbers * found[0] if found[0] != 1.0 else numbers
        kinds[column] = found[1]
    if unknown:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown))}")
    frame = pd.concat([frame, pd.DataFrame(metrics, index=raw.index)], axis=1)
    frame["source"] = str(path)
    frame["source_row"] = np.arange(first_line, first_line + len(frame))
    for needed in ("kernel_id", "kernel_name"):
        blank = frame[needed].isna() if needed in frame.columns else pd.Series(True, index=frame.index)
        if blank.any():
            raise InputError(f"a launch row has no {'ID' if needed == 'kernel_id' else 'Kernel Name'}", path=path,
                             line=int(frame.loc[blank, "source_row"].iloc[0]),
                             hint="the table may be cut off or edited by hand")
    if "device__attribute_display_name" not in frame.columns and "device_index" in frame.columns:
        frame["device"] = frame["device_index"]
    frame = frame.drop(columns=["device_index"], errors="ignore")
    frame = finish(canonicalize(frame, kinds, info.notes))
    info.kernels = len(frame)
    values = frame["device"].dropna().unique() if "device" in frame.columns else []
    info.device = ", ".join(map(str, values)) if len(values) else None
    return Parsed(frame=frame, info=info, per_kernel=False, join="launch", kinds=kinds)


def _has_units_row(text: str, header_end: int) -> bool:
    """The line after the header is a units row when its first field (the ID column) is empty."""
    if header_end < 0:
        return False
    nxt = text[header_end + 1: header_end + 64]
    return nxt.startswith('"",') or nxt.startswith(",")

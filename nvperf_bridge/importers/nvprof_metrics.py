"""nvprof-metrics: ``nvprof --csv --metrics ...`` / ``--events ...`` summaries.

One row per (kernel, metric) with Min/Max/Avg over "Invocations" launches;
this importer keeps Avg (a per-launch average) and gives one row per kernel
with ``invocations`` set. Values carry their unit in the text
(``126.02GB/s``, ``100.000000%``); utilisation levels such as ``"Low (2)"``
keep their number (2) under the metric's own name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.importers.canonical import to_parsed
from nvperf_bridge.importers.sniff import Sniffed
from nvperf_bridge.importers.text import (
    parse_numbers,
    read_table,
    split_value_unit,
    strip_device_index,
    table_at,
    trailing_note,
    unparsed,
)
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import convert

FORMAT = "nvprof-metrics"


def read(path: Path, text: str, found: Sniffed) -> Parsed:
    """Read an nvprof --metrics/--events CSV into one canonical row per kernel."""
    table = table_at(text, found.start)
    raw, _ = read_table(text, table, path)
    name_col = "Metric Name" if "Metric Name" in raw.columns else "Event Name"
    info = InputFile(path=str(path), format=FORMAT, kernels=0)
    note = trailing_note(text, table)
    if note:
        info.notes.append(note)
    first_line = table.header_line + 2
    raw["_line"] = np.arange(first_line, first_line + len(raw))
    broken = raw["Kernel"].isna() | raw[name_col].isna()
    if broken.any():
        raise InputError("a metric row has no kernel or metric name", path=path, line=int(raw.loc[broken, "_line"].iloc[0]))

    device = strip_device_index(raw["Device"]) if "Device" in raw.columns else pd.Series(None, index=raw.index)
    key = raw["Kernel"].astype(str) if device.nunique() <= 1 else device.fillna("").astype(str) + "\x00" + raw["Kernel"].astype(str)
    kernel_codes, _ = pd.factorize(key, sort=False)
    metric_codes, metric_names = pd.factorize(raw[name_col].astype(str), sort=False)

    number_text, unit = split_value_unit(raw["Avg"])
    numbers = parse_numbers(number_text)
    values, bases, unknown = convert(numbers, unit)
    if unknown:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown))}")
    bad = unparsed(number_text, numbers)
    if bad.any():
        info.notes.append(f"{int(bad.sum())} values that are not numbers kept as missing "
                          f"(first at line {int(raw.loc[bad, '_line'].iloc[0])})")

    n_kernel = int(kernel_codes.max()) + 1 if len(kernel_codes) else 0
    grid = np.full((n_kernel, len(metric_names)), np.nan)
    grid[kernel_codes, metric_codes] = values.to_numpy()
    wide = pd.DataFrame(grid, columns=list(metric_names))
    kinds = {metric_names[c]: k for c, k in pd.Series(bases.to_numpy()).groupby(metric_codes).first().items()}

    first = raw.iloc[np.unique(kernel_codes, return_index=True)[1]]
    ident = pd.DataFrame({
        "kernel_name": first["Kernel"].astype(str).to_numpy(),
        "device": device.loc[first.index].to_numpy(),
        "invocations": parse_numbers(first["Invocations"]).to_numpy(),
        "source": str(path),
        "source_row": first["_line"].to_numpy(),
    })
    ident["kernel_id"] = ident["kernel_name"]
    frame = pd.concat([ident, wide.drop(columns=[c for c in wide.columns if c in ident.columns])], axis=1)
    return to_parsed(frame, kinds, info, per_kernel=True, join="name")

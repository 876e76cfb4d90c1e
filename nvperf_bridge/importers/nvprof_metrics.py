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
from nvperf_bridge.importers.canonical import to_parsed, unparsed_by_name
from nvperf_bridge.importers.sniff import Sniffed
from nvperf_bridge.importers.text import (
    parse_numbers,
    read_table,
    split_value_unit,
    strip_device_index,
    table_at,
    unparsed,
)
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import convert

FORMAT = "nvprof-metrics"


def read(path: Path, text: str, found: Sniffed) -> Parsed:
    """Read an nvprof --metrics/--events CSV into one canonical row per kernel.

    ``found.more`` lists further tables of the same run (``--events`` and
    ``--metrics`` together print an Event table, then a Metric table): their
    rows are read with the first table's, so one kernel row carries both.
    """
    info = InputFile(path=str(path), format=FORMAT, kernels=0)
    pieces = [_read_one_table(path, text, start) for start in (found.start, *found.more)]
    raw = pieces[0] if len(pieces) == 1 else pd.concat(pieces, ignore_index=True, sort=False)
    name_col = "Metric Name"
    if len(pieces) > 1:
        info.notes.append("read " + " and ".join(
            f"the {piece.attrs['kind']} table at line {piece.attrs['header_line']} ({piece[name_col].nunique()} "
            f"{piece.attrs['kind'].lower()}s)" for piece in pieces) + " as one run")
        repeated = raw.duplicated(["Device", "Kernel", name_col] if "Device" in raw.columns else ["Kernel", name_col])
        if repeated.any():
            info.notes.append(f"{int(repeated.sum())} kernel/counter values repeated in a later table "
                              f"(first at line {int(raw.loc[repeated, '_line'].iloc[0])}: a second run in the same "
                              "file?); the first table's values are kept")
            raw = raw.loc[~repeated].reset_index(drop=True)

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
        info.unparsed.update(unparsed_by_name(raw[name_col], bad, raw["_line"], raw["Avg"]))  # inspect's coverage line

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


def _read_one_table(path: Path, text: str, start: int) -> pd.DataFrame:
    """One Metric or Event table as text rows, the counter name under "Metric Name", its line in ``_line``."""
    table = table_at(text, start)
    raw, _ = read_table(text, table, path)
    kind = "Metric" if "Metric Name" in raw.columns else "Event"
    if kind == "Event":
        raw = raw.rename(columns={"Event Name": "Metric Name"})
    for column in ("Kernel", "Metric Name", "Avg"):
        if column not in raw.columns:
            raise InputError(f"the nvprof {kind.lower()} table has no {column!r} column", path=path,
                             line=table.header_line + 1, hint="pass the file nvprof --csv wrote, unchanged")
    first_line = table.header_line + 2
    raw["_line"] = np.arange(first_line, first_line + len(raw))
    broken = raw["Kernel"].isna() | raw["Metric Name"].isna()
    if broken.any():
        raise InputError(f"a{'n event' if kind == 'Event' else ' metric'} row has no kernel or counter name",
                         path=path, line=int(raw.loc[broken, "_line"].iloc[0]),
                         hint="the row was damaged or edited; restore it from nvprof's output or delete that line")
    raw.attrs.update(kind=kind, header_line=table.header_line + 1)
    return raw

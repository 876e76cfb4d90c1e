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
    has_units_row,
    parse_numbers,
    read_table,
    split_value_unit,
    strip_device_index,
    table_at,
    unparsed,
)
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import convert, parse_cells

FORMAT = "nvprof-metrics"
LAUNCH_FORMAT = "nvprof-launch-counters"
# the identity columns of nvprof's per-launch counter table (--print-gpu-trace with --metrics/--events)
_LAUNCH_IDENTITY = ("Device", "Context", "Stream", "Kernel", "Correlation_ID")


def read(path: Path, text: str, found: Sniffed) -> Parsed:
    """Read an nvprof --metrics/--events CSV into one canonical row per kernel
    (per launch for ``nvprof --print-gpu-trace --metrics/--events``: ``read_launches``).

    ``found.more`` lists further tables of the same run (``--events`` and
    ``--metrics`` together print an Event table, then a Metric table): their
    rows are read with the first table's, so one kernel row carries both.
    """
    if found.format == LAUNCH_FORMAT:
        return read_launches(path, text, found)
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



def read_launches(path: Path, text: str, found: Sniffed) -> Parsed:
    """nvprof's per-launch counters (``nvprof --print-gpu-trace --metrics ... --csv`` or ``--events``): one row per
    launch, "Device","Context","Stream","Kernel" and then one column per counter.

    Metric columns are headed by the metric's description ("Achieved Occupancy"), event columns by the event
    name; descriptions are turned back into metric names with ``data/nvprof_metric_descriptions.csv``. Values
    are converted by a units row when there is one, else by the unit in the cell, else by what nvprof prints
    for that metric: percentages as percent numbers and throughputs in GB/s (checked on a public GTX 980 file:
    requested global load throughput x duration = the bytes the kernel reads). A column headed by a name
    nvprof does not use is kept raw under that name (the coverage line lists it).
    """
    table = table_at(text, found.start)
    units_row = has_units_row(text, table.start)
    raw, units = read_table(text, table, path, skip_units_row=units_row)
    info = InputFile(path=str(path), format=LAUNCH_FORMAT, kernels=0)
    first_line = table.header_line + (3 if units_row else 2)
    raw["_line"] = np.arange(first_line, first_line + len(raw))
    if raw["Kernel"].isna().any():
        line = int(raw.loc[raw["Kernel"].isna(), "_line"].iloc[0])
        raise InputError("a launch row has no kernel name", path=path, line=line,
                         hint="the row was damaged or edited; restore it from nvprof's output or delete that line")
    unit_of = dict(zip(raw.columns, units)) if units else {}
    described = _metric_descriptions()
    frame = pd.DataFrame({
        "kernel_name": raw["Kernel"].astype(str),
        "device": strip_device_index(raw["Device"]) if "Device" in raw.columns else None,
        "source": str(path),
        "source_row": raw["_line"],
    })
    correlation = raw["Correlation_ID"].astype(object) if "Correlation_ID" in raw.columns else None
    frame["kernel_id"] = correlation.combine_first(raw["_line"].astype(str)) if correlation is not None \
        else raw["_line"].astype(str)
    for context in ("Context", "Stream"):
        if context in raw.columns:
            frame[context] = raw[context]
    kinds: dict[str, str] = {}
    renamed: list[str] = []
    assumed: set[str] = set()
    not_numbers: list[str] = []
    unknown_units: set[str] = set()
    for column in [c for c in raw.columns if c not in _LAUNCH_IDENTITY and c != "_line"]:
        name, printed = described.get(column, (column, None))
        if name != column:
            renamed.append(column)
        cells = raw[column]
        row_unit = (unit_of.get(column) or "").strip()
        if row_unit:
            values, bases, unknown = convert(parse_numbers(cells), pd.Series(row_unit, index=cells.index))
            bad = unparsed(cells, values)
        else:
            values, bases, unknown, bad = parse_cells(cells)
            plain = bases == "count"
            if printed in ("%", "B/s") and plain.any():
                # nvprof prints these per launch as bare numbers: percent, and GB/s for throughputs
                scale = "%" if printed == "%" else "GB/s"
                values[plain], bases[plain], _ = convert(values[plain], pd.Series(scale, index=values[plain].index))
                assumed.add(f"{column} ({scale})")
        unknown_units |= unknown
        if bad.any():
            not_numbers.append(f"{column} (first at line {int(raw.loc[bad, '_line'].iloc[0])}: "
                               f"{str(cells[bad].iloc[0])[:30]!r})")
        frame[name] = values
        kinds[name] = str(bases[values.notna()].iloc[0]) if values.notna().any() else "count"
    if renamed:
        info.notes.append(f"{len(renamed)} metric column(s) headed by nvprof's description, read under the metric "
                          f"name (e.g. {renamed[0]!r} -> {described[renamed[0]][0]!r})")
    if assumed:
        info.notes.append("no units row: values read in the unit nvprof prints per launch: " + ", ".join(sorted(assumed)[:6])
                          + (f" and {len(assumed) - 6} more" if len(assumed) > 6 else ""))
    if unknown_units:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown_units))}")
    if not_numbers:
        info.notes.append(f"values that are not numbers kept as missing in: {'; '.join(not_numbers)}")
    return to_parsed(frame, kinds, info, per_kernel=False, join="name")


def _metric_descriptions() -> dict[str, tuple[str, str]]:
    """nvprof metric description -> (metric name, the unit nvprof prints after its values), from the data table."""
    import csv as _csv
    from importlib import resources

    with resources.files("nvperf_bridge").joinpath("data/nvprof_metric_descriptions.csv").open(encoding="utf-8") as fh:
        rows = [row for row in _csv.reader(fh) if row and not row[0].startswith("#")]
    return {row[0]: (row[1], row[2]) for row in rows[1:]}

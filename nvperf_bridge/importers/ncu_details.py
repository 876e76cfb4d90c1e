"""ncu-details: ``ncu --csv`` (the default "details" page), one metric per row, pivoted to one row per launch.

Handles the four column layouts seen in real files: the old 12 columns with
"Kernel Time"; 15 columns with rule columns; 20 columns with Block Size,
Grid Size, Device and CC plus five rule columns; rows of uneven width
(metric rows end early with a trailing comma). Rule rows (empty metric name,
prose in "Rule Description") are not metrics: they become the ``rules`` table
(``Parsed.rules``, then ``ImportResult.rules``; columns in ``kernelframe``). Values are converted
to base units by the unit in their own row (ncu 2025 prints Mbyte in one
row and byte in the next). A metric name that repeats within a launch
(ncu 2025 "Memory Throughput" in % and in Gbyte/s) keeps its plain name for
the first occurrence and gets "name [section]" for the others.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.importers.canonical import to_parsed
from nvperf_bridge.importers.ncu_raw import column_filter
from nvperf_bridge.importers.sniff import Sniffed
from nvperf_bridge.importers.text import (
    Head,
    gpu_name_in,
    parse_numbers,
    read_streamed_table,
    read_table,
    table_at,
    tuple_product,
    unparsed,
)
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import convert

FORMAT = "ncu-details"

# identity columns of the layout -> canonical (or kept raw) name
IDENTITY = {
    "ID": "kernel_id",
    "Kernel Name": "kernel_name",
    "Device": "device",
    "CC": "cc",
    "Process ID": "Process ID",
    "Process Name": "Process Name",
    "Context": "Context",
    "Stream": "Stream",
    "Kernel Time": "Kernel Time",
}
# launch-shape columns of the 20-column layout: "(x, y, z)" -> the raw-page metric of the same meaning
SHAPE = {"Block Size": "launch__block_size", "Grid Size": "launch__grid_size"}
_CATEGORICAL = ("Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Process Name", "Device", "CC")


def read(path: Path, text: str, found: Sniffed, raw_columns: frozenset[str] | None = None) -> Parsed:
    """Read an ncu details CSV (any of its layouts) into one canonical row per launch.

    ``raw_columns``: None pivots every metric (``--keep-raw``); a set pivots only the metrics in use
    (``ncu_raw.column_filter``: mapped to canonical columns, the launch section, and the raw names in
    the set). Every launch is kept either way: identity comes from all of its rows."""
    table = table_at(text, found.start)
    raw, _ = read_table(text, table, path)
    return _from_table(path, raw, table.header_line, gpu_name_in(text[: table.start]), raw_columns)


# text after a streamed table read back to name it in a note (``==PROF== Disconnected ...``); more goes the
# whole-text way
_REST_LIMIT = 1 << 16


def read_stream(path: Path, head: Head, found: Sniffed, raw_columns: frozenset[str] | None = None) -> Parsed | None:
    """Read an ncu details table straight from the file (the C parser fed by ``TableStream``), never holding
    the file's text: for a 100k-launch file the text and its bytes were twice the file in memory at once.
    None where ``read`` must do it: ragged rows (ncu's trailing-comma layout), a header repeated under
    the rows, carriage returns, bytes that are not UTF-8, or text after the table that could be another
    table (a line with a comma) or is long. The result is the one ``read_parts`` gives from the whole
    text, value for value, with the same note for the lines after the table.
    """
    from nvperf_bridge.importers import _unread_text_notes

    if found.format != FORMAT or found.more:
        return None
    read = read_streamed_table(path, head, found.start, rest_limit=_REST_LIMIT, dtype=str, low_memory=True)
    if read is None:
        return None
    raw, header, rest = read
    if rest is None or "," in rest or raw.empty:
        return None
    if (raw.iloc[:, 0].astype(object) == header[0]).any():
        return None  # the header again under the rows (runs appended to one file): the whole-text path splits them
    header_line = head.text.count("\n", 0, found.start)
    parsed = _from_table(path, raw, header_line, gpu_name_in(head.text[: found.start]), raw_columns)
    # the lines after the table, named as the whole-text path names them (one line per row above them)
    parsed.info.notes.extend(_unread_text_notes(rest, 0, [(0, 0)], lines_before=header_line + 1 + len(raw)))
    return parsed


def _from_table(path: Path, raw: pd.DataFrame, header_line: int, device_name: str | None,
                raw_columns: frozenset[str] | None) -> Parsed:
    """One canonical row per launch from the details table read as text (``header_line``: the 0-based
    line of its header; ``device_name``: a GPU name the application printed before the table)."""
    for needed in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"):
        if needed not in raw.columns:
            raise InputError(f"the ncu table has no {needed!r} column", path=path, line=header_line + 1)
    first_data_line = header_line + 2
    raw["_line"] = np.arange(first_data_line, first_data_line + len(raw))
    info = InputFile(path=str(path), format=FORMAT, kernels=0)

    is_rule = raw["Metric Name"].isna()
    rules = None
    if is_rule.any():
        rules = _rules(raw.loc[is_rule], path)
        info.notes.append(f"{int(is_rule.sum())} rule rows (Nsight Compute guidance) kept as rules, not metrics")
        raw = raw.loc[~is_rule]
    if raw.empty:
        raise InputError("the ncu table holds no metric rows", path=path, line=header_line + 1)
    bad_id = raw["ID"].isna() | raw["Kernel Name"].isna()
    if bad_id.any():
        line = int(raw.loc[bad_id, "_line"].iloc[0])
        raise InputError("a metric row has no launch ID or kernel name", path=path, line=line,
                         hint="the table may be cut off or edited by hand")

    launch_key = _launch_key(raw)
    launch_codes, launch_ids = pd.factorize(launch_key, sort=False)
    n_launch = len(launch_ids)
    first = raw.iloc[np.unique(launch_codes, return_index=True)[1]]  # identity: every launch, from all rows

    keep = column_filter(raw_columns)
    if keep is not None:  # only the metrics in use are parsed and pivoted (decided once per distinct name)
        name_codes, distinct = pd.factorize(raw["Metric Name"], sort=False)
        used = np.array([keep(str(name).strip()) for name in distinct], dtype=bool)[name_codes]
        if used.any() and not used.all():
            raw, launch_codes = raw.loc[used], launch_codes[used]

    metric = raw["Metric Name"].astype(str)
    repeated = pd.Series(launch_codes, index=raw.index).to_frame("l").assign(m=metric.to_numpy()).duplicated()
    if repeated.any() and "Section Name" in raw.columns:
        metric = metric.where(~repeated, metric + " [" + raw["Section Name"].fillna("").astype(str) + "]")
    metric_codes, metric_names = pd.factorize(metric, sort=False)

    numbers = parse_numbers(raw["Metric Value"])
    values, bases, unknown_units = convert(numbers, raw["Metric Unit"])
    if unknown_units:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown_units))}")
    not_numeric = unparsed(raw["Metric Value"], numbers).to_numpy()
    # one metric, one kind of unit: the kind most of its values have; a value in a unit of another
    # kind (a duration in bytes, an unknown unit among known ones) cannot be converted, so it is missing
    base_of_row = bases.to_numpy()
    present = values.notna().to_numpy()
    counted = pd.DataFrame({"m": metric_codes[present], "b": base_of_row[present]}).value_counts(sort=True)
    main_kind = counted.reset_index().drop_duplicates("m").set_index("m")["b"]
    row_kind = main_kind.reindex(metric_codes).to_numpy()
    other_kind = present & pd.notna(row_kind) & (base_of_row != row_kind)
    if other_kind.any():
        first_bad = int(np.flatnonzero(other_kind)[0])
        info.notes.append(
            f"{int(other_kind.sum())} values in a unit of another kind than the rest of their metric kept as missing "
            f"(first at line {int(raw['_line'].iloc[first_bad])}: {metric.iloc[first_bad]} in "
            f"{raw['Metric Unit'].iloc[first_bad]!r})")
        values = values.mask(pd.Series(other_kind, index=values.index))

    n_metric = len(metric_names)
    grid = np.full((n_launch, n_metric), np.nan)
    grid[launch_codes, metric_codes] = values.to_numpy()
    wide = pd.DataFrame(grid, columns=list(metric_names))
    text_metrics = np.unique(metric_codes[not_numeric])
    for code in text_metrics:
        # words and tuples ("CachePreferNone", "(16, 8, 1)") stay text under the metric name
        rows = metric_codes == code
        column = np.full(n_launch, None, dtype=object)
        column[launch_codes[rows]] = raw["Metric Value"].to_numpy()[rows]
        wide[metric_names[code]] = column
    kinds_by_code = pd.Series(bases.to_numpy()).groupby(metric_codes).first()
    kinds_by_code.update(main_kind)
    kinds = {metric_names[c]: k for c, k in kinds_by_code.items()}

    ident = pd.DataFrame(index=range(n_launch))
    for column, target in IDENTITY.items():
        if column in first.columns:
            ident[target] = first[column].astype(object).to_numpy()
    ident["kernel_id"] = list(launch_ids)
    ident["source"] = str(path)
    ident["source_row"] = first["_line"].to_numpy()
    for column, target in SHAPE.items():
        if column in first.columns and target not in wide.columns:
            wide[target] = tuple_product(first[column]).to_numpy()
    frame = pd.concat([ident, wide.drop(columns=[c for c in wide.columns if c in ident.columns])], axis=1)

    if device_name is not None:
        index = frame["device"].dropna().unique() if "device" in frame.columns else []
        frame["device"] = device_name
        given = f"only device index {', '.join(map(str, index))}" if len(index) else "no device column"
        info.notes.append(
            f"device name {device_name!r} taken from the application's output before the table (the table has {given})"
        )
    parsed = to_parsed(frame, kinds, info, per_kernel=False, join="launch")
    parsed.rules = rules
    return parsed


def _launch_key(raw: pd.DataFrame) -> pd.Series:
    """One launch = one (process, ID); ncu numbers launches per process."""
    key = raw["ID"].astype(str)
    if "Process ID" in raw.columns and raw["Process ID"].nunique(dropna=True) > 1:
        # a blank Process ID must not make the key missing: factorize would code it -1 (the last launch)
        key = raw["Process ID"].fillna("").astype(str) + ":" + key
    return key


def _rules(rows: pd.DataFrame, path: Path) -> pd.DataFrame:
    """ncu's rule rows (empty Metric Name, prose in Rule Description) as a rules table (kernelframe.RULE_COLUMNS)."""
    from nvperf_bridge.kernelframe import RULE_COLUMNS

    def column(name: str) -> pd.Series:
        if name not in rows.columns:
            return pd.Series(None, index=rows.index, dtype=object)
        values = rows[name].astype(object)
        return values.where(values.notna() & (values.astype(str).str.strip() != ""), None)

    speedup = parse_numbers(column("Estimated Speedup")) if "Estimated Speedup" in rows.columns else None
    out = pd.DataFrame({
        "kernel_id": _launch_key(rows).to_numpy(),
        "kernel_name": column("Kernel Name").to_numpy(),
        "source": str(path),
        "source_row": rows["_line"].to_numpy(),
        "section": column("Section Name").to_numpy(),
        "rule": column("Rule Name").to_numpy(),
        "type": column("Rule Type").to_numpy(),
        "message": column("Rule Description").to_numpy(),
        "estimated_speedup_pct": speedup.to_numpy(dtype="float64") if speedup is not None else np.nan,
        "speedup_type": column("Estimated Speedup Type").to_numpy(),
    })
    out["source_row"] = out["source_row"].astype("Int64")
    return out[list(RULE_COLUMNS)].reset_index(drop=True)

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

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import coded
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
    same_text,
    table_at,
    tuple_product,
    unparsed,
)
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.units import unit_factors

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
    read = _read_arrow(path, head, found)
    if read is not None:
        table, n_rows, rest = read
    else:
        read = read_streamed_table(path, head, found.start, rest_limit=_REST_LIMIT, dtype=str, low_memory=True)
        if read is None:
            return None
        raw, header, rest = read
        if rest is None or "," in rest or raw.empty:
            return None
        if (raw.iloc[:, 0].astype(object) == header[0]).any():
            return None  # the header again under the rows (runs appended to one file): the whole-text path splits them
        table, n_rows = coded.from_frame(raw), len(raw)
        del raw
    header_line = head.text.count("\n", 0, found.start)
    parsed = _from_coded(path, table, n_rows, header_line, gpu_name_in(head.text[: found.start]), raw_columns)
    # the lines after the table, named as the whole-text path names them (one line per row above them)
    parsed.info.notes.extend(_unread_text_notes(rest, 0, [(0, 0)], lines_before=header_line + 1 + n_rows))
    return parsed


# the columns only the rule rows use, and those the importer reads: identity, launch shape, the metric, the rules'
_RULE_COLUMNS = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup", "Estimated Speedup Type")
_READ_COLUMNS = (*IDENTITY, *SHAPE, "Section Name", "Metric Name", "Metric Unit", "Metric Value", *_RULE_COLUMNS)
# the columns the pivot reads row by row once the launches' identity is taken
_METRIC_COLUMNS = ("Metric Name", "Section Name", "Metric Unit", "Metric Value")


def _read_arrow(path: Path, head: Head, found: Sniffed) -> tuple[dict[str, coded.Coded], int, str] | None:
    """The table by pyarrow's streaming reader (``coded.read_arrow_table``): its columns in use, coded, the
    row count and the text after the table; None where only pandas' parser gives what ``read`` gives
    (then ``read_stream`` reads it with that parser)."""
    import csv
    import io

    from nvperf_bridge.importers.text import streamed_header

    table = streamed_header(head, found.start, lambda *_: False)
    if table is None:
        return None
    text = head.text
    header_end = text.find("\n", found.start)
    data_start = table.start + len(text[found.start:header_end + 1].encode("utf-8"))
    sample = text[header_end + 1:].split("\n", 201)[:200]
    if len(sample) < 2:
        return None  # no complete row in the head
    try:
        width = coded.modal_width([row for row in csv.reader(io.StringIO("\n".join(sample[:-1]))) if len(row) > 1])
    except csv.Error:  # a field over the csv module's 128 KiB limit: pandas' parser says what it is
        return None
    if width is None or width > len(table.header):
        return None
    end = coded.table_end(path, data_start, 4 * _REST_LIMIT)
    if end is None or path.stat().st_size - end > _REST_LIMIT:
        return None
    with open(path, "rb") as fh:
        fh.seek(end)
        rest_bytes = fh.read()
    if b"," in rest_bytes or b"\r" in rest_bytes or b"\x00" in rest_bytes:
        return None  # text after the table that could be another table: the whole-text path reads it
    try:
        rest = rest_bytes.decode("utf-8")
    except UnicodeDecodeError:
        return None
    wanted = {name for name in _READ_COLUMNS} | {table.names[0]}
    include = [field for field, name in zip(table.header, table.names) if name in wanted]
    read = coded.read_arrow_table(path, data_start, end, table.header, include, width)
    if read is None:
        return None
    columns, n_rows = read
    by_name = dict(zip(table.header, table.names))
    return {by_name[field]: column for field, column in columns.items()}, n_rows, rest


def _from_table(path: Path, raw: pd.DataFrame, header_line: int, device_name: str | None,
                raw_columns: frozenset[str] | None) -> Parsed:
    """One canonical row per launch from the details table read as text (``header_line``: the 0-based
    line of its header; ``device_name``: a GPU name the application printed before the table)."""
    return _from_coded(path, coded.from_frame(raw), len(raw), header_line, device_name, raw_columns)


def _from_coded(path: Path, table: dict[str, coded.Coded], n_rows: int, header_line: int,
                device_name: str | None, raw_columns: frozenset[str] | None) -> Parsed:
    """``_from_table`` on coded columns (``coded.Coded``: each distinct text once, a code per row): every
    value is parsed, converted and named once per distinct text, and the rows are pivoted by their codes.
    ``table`` is consumed: as rows are left out (rule rows, unused metrics) its columns are replaced in place,
    one at a time, and those no longer read are dropped, so its rows are never held twice (memory only)."""
    for needed in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"):
        if needed not in table:
            raise InputError(f"the ncu table has no {needed!r} column", path=path, line=header_line + 1,
                             hint="pass the file `ncu --csv` (details page) wrote, unchanged, or export the raw "
                                  "page: `ncu -i FILE --csv --page raw --print-units base`")
    first_data_line = header_line + 2
    lines = np.arange(first_data_line, first_data_line + n_rows)
    info = InputFile(path=str(path), format=FORMAT, kernels=0)

    is_rule = table["Metric Name"].codes < 0
    rules = None
    if is_rule.any():
        rule_rows = np.flatnonzero(is_rule)
        rules = _rules(table, rule_rows, lines[rule_rows], path)
        info.notes.append(f"{int(is_rule.sum())} rule rows (Nsight Compute guidance) kept as rules, not metrics")
        _take_rows(table, np.flatnonzero(~is_rule), [name for name in table if name not in _RULE_COLUMNS])
        lines = lines[~is_rule]
    if len(lines) == 0:
        raise InputError("the ncu table holds no metric rows", path=path, line=header_line + 1)
    bad_id = (table["ID"].codes < 0) | (table["Kernel Name"].codes < 0)
    if bad_id.any():
        raise InputError("a metric row has no launch ID or kernel name", path=path,
                         line=int(lines[np.flatnonzero(bad_id)[0]]), hint="the table may be cut off or edited by hand")

    launch_codes, launch_ids = _launches(table)
    n_launch = len(launch_ids)
    first = _first_rows(launch_codes)  # identity: every launch, from all rows
    first_values = {name: table[name].values(first) for name in IDENTITY if name in table}
    # "(16, 8, 1)" -> 128, once per distinct text
    shapes = {name: np.append(tuple_product(pd.Series(table[name].distinct, dtype=object)).to_numpy(dtype="float64"),
                              np.nan)[table[name].codes[first]] for name in SHAPE if name in table}
    first_lines = lines[first]

    keep = column_filter(raw_columns)
    if keep is not None:  # only the metrics in use are parsed and pivoted (decided once per distinct name)
        names = table["Metric Name"]
        used_name = np.array([keep(str(name).strip()) for name in names.distinct], dtype=bool)
        used = used_name[names.codes]
        if used.any() and not used.all():
            rows = np.flatnonzero(used)
            _take_rows(table, rows, _METRIC_COLUMNS)
            launch_codes, lines = launch_codes[rows], lines[rows]

    metric_codes, metric_names = _metric_names(table, launch_codes)
    n_metric = len(metric_names)

    value = table["Metric Value"]
    distinct_text = pd.Series(value.distinct, dtype=object, copy=False)
    distinct_numbers = parse_numbers(distinct_text)
    numbers = np.append(distinct_numbers.to_numpy(dtype="float64"), np.nan)[value.codes]
    units = table["Metric Unit"]
    # each unit's factor to its base and the base (its kind), looked up once per unit (the last slot: no unit)
    factors, unit_bases, unknown_units = unit_factors([str(u) for u in units.distinct], units.codes)
    values = numbers * factors[units.codes]  # what ``units.convert_coded`` gives
    if unknown_units:
        info.notes.append(f"unknown units kept unconverted: {', '.join(sorted(unknown_units))}")
    not_numeric = np.append(unparsed(distinct_text, distinct_numbers).to_numpy(), False)[value.codes]
    # one metric, one kind of unit: the kind most of its values have; a value in a unit of another
    # kind (a duration in bytes, an unknown unit among known ones) cannot be converted, so it is missing.
    # Kinds are compared as codes (a code per distinct base text), never as a text per row.
    unit_kind, kind_names = pd.factorize(unit_bases, sort=False)
    kind_of_row = unit_kind[units.codes]
    present = ~np.isnan(values)
    main_kind = _main_kinds(metric_codes[present], kind_of_row[present], n_metric, len(kind_names))
    row_kind = main_kind[metric_codes]
    other_kind = present & (row_kind >= 0) & (kind_of_row != row_kind)
    if other_kind.any():
        first_bad = int(np.flatnonzero(other_kind)[0])
        unit = table["Metric Unit"].values(np.array([first_bad]))[0]
        info.notes.append(
            f"{int(other_kind.sum())} values in a unit of another kind than the rest of their metric kept as missing "
            f"(first at line {int(lines[first_bad])}: {metric_names[metric_codes[first_bad]]} in {unit!r})")
        values = np.where(other_kind, np.nan, values)

    grid = np.full((n_launch, n_metric), np.nan)
    grid[launch_codes, metric_codes] = values
    wide = pd.DataFrame(grid, columns=list(metric_names))
    text_metrics = np.unique(metric_codes[not_numeric])
    for code in text_metrics:
        # words and tuples ("CachePreferNone", "(16, 8, 1)") stay text under the metric name
        rows = np.flatnonzero(metric_codes == code)
        column = np.full(n_launch, None, dtype=object)
        column[launch_codes[rows]] = value.values(rows)
        wide[metric_names[code]] = column
    # a metric's kind: its values' main kind, or where it has no value the kind of its first row's unit
    # (metric codes are numbered in order of first appearance: ``_first_rows`` finds each one's first row)
    kind_of_metric = np.where(main_kind >= 0, main_kind, kind_of_row[_first_rows(metric_codes)])
    kinds = {metric_names[c]: kind_names[k] for c, k in enumerate(kind_of_metric.tolist())}

    ident = pd.DataFrame(index=range(n_launch))
    for column, target in IDENTITY.items():
        if column in first_values:
            ident[target] = first_values[column]
    ident["kernel_id"] = list(launch_ids)
    ident["source"] = same_text(n_launch, str(path))
    ident["source_row"] = first_lines
    for column, target in SHAPE.items():
        if column in shapes and target not in wide.columns:
            wide[target] = shapes[column]
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


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Where each code is first met, in code order, for codes numbered in order of first appearance (as
    ``pd.factorize(..., sort=False)`` numbers them): ``np.unique(codes, return_index=True)[1]`` without a sort
    (a row is a code's first exactly where its code exceeds every code before it)."""
    if not len(codes):
        return np.empty(0, dtype=np.intp)
    before = np.maximum.accumulate(codes)
    return np.flatnonzero(np.concatenate(([True], codes[1:] > before[:-1])))


def _main_kinds(metric_codes: np.ndarray, kind_codes: np.ndarray, n_metric: int, n_kinds: int) -> np.ndarray:
    """Each metric's kind of unit (a kind code, ``kind_codes`` being each value's, 0 to ``n_kinds`` - 1;
    -1 for a metric without a value): the kind most of its values have, a tie going to the kind met first
    (what ``DataFrame.value_counts`` of the (metric, kind) pairs, sorted stably by count, keeps first).
    Counted on codes (speed only: value_counts grouped 370,000 object rows on the 10k-launch page)."""
    pair = metric_codes.astype(np.int64) * max(n_kinds, 1) + kind_codes
    shape = (n_metric, max(n_kinds, 1))
    counts = np.bincount(pair, minlength=shape[0] * shape[1]).reshape(shape)
    first = np.full(shape[0] * shape[1], len(pair), dtype=np.int64)
    np.minimum.at(first, pair, np.arange(len(pair)))  # where each (metric, kind) pair is first met
    first = first.reshape(shape)
    most = counts == counts.max(axis=1, keepdims=True)
    chosen = np.where(most & (counts > 0), first, len(pair) + 1).argmin(axis=1)
    return np.where(counts.sum(axis=1) > 0, chosen, -1)


def _take_rows(table: dict[str, coded.Coded], rows: np.ndarray, columns: Iterable[str]) -> None:
    """Keep ``rows`` of the ``columns`` of ``table`` and drop its other columns, in place: each column is
    replaced as its rows are taken, so the table is never held twice."""
    wanted = set(columns)
    for name in list(table):
        if name in wanted:
            table[name] = table[name].take(rows)
        else:
            del table[name]


def _launches(table: dict[str, coded.Coded]) -> tuple[np.ndarray, list[str]]:
    """Each row's launch (codes in order of first appearance) and the launches' ids: ``_launch_key`` on codes."""
    ids = table["ID"]
    pid = table.get("Process ID")
    several = pid is not None and len(np.unique(pid.codes[pid.codes >= 0])) > 1
    key = (pid.codes.astype(np.int64) + 1) * (len(ids.distinct) + 1) + ids.codes if several else ids.codes
    launch_codes, keys = pd.factorize(key, sort=False)
    id_text = [str(ids.distinct[k % (len(ids.distinct) + 1)] if several else ids.distinct[k]) for k in keys]
    if several:
        pid_text = np.append(pid.distinct, "").astype(object)
        id_text = [f"{pid_text[k // (len(ids.distinct) + 1) - 1]}:{text}" for k, text in zip(keys, id_text)]
    return launch_codes, id_text


def _metric_names(table: dict[str, coded.Coded], launch_codes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each row's metric (codes in order of first appearance) and the metric names: a name that repeats
    within a launch is "name [section]" from its second occurrence on."""
    names = table["Metric Name"]
    n_names = len(names.distinct)
    repeated = pd.Series(launch_codes.astype(np.int64) * max(n_names, 1) + names.codes).duplicated().to_numpy()
    section = table.get("Section Name")
    if repeated.any() and section is not None:
        width = len(section.distinct) + 1
        key = np.where(repeated, n_names + names.codes.astype(np.int64) * width + (section.codes + 1), names.codes)
    else:
        key = names.codes
    key_codes, keys = pd.factorize(key, sort=False)
    text = []
    for k in keys:
        if k < n_names:
            text.append(str(names.distinct[k]))
        else:
            m, s = divmod(k - n_names, width)
            text.append(f"{names.distinct[m]} [{section.distinct[s - 1] if s else ''}]")
    # a renamed metric may meet a name of its own ("name [section]" printed as such): one column, as by name
    codes, distinct = pd.factorize(np.asarray(text, dtype=object), sort=False)
    return codes[key_codes], list(distinct)


def _launch_key(raw: pd.DataFrame) -> pd.Series:
    """One launch = one (process, ID); ncu numbers launches per process."""
    key = raw["ID"].astype(str)
    if "Process ID" in raw.columns and raw["Process ID"].nunique(dropna=True) > 1:
        # a blank Process ID must not make the key missing: factorize would code it -1 (the last launch)
        key = raw["Process ID"].fillna("").astype(str) + ":" + key
    return key


def _rules(table: dict[str, coded.Coded], rule_rows: np.ndarray, lines: np.ndarray, path: Path) -> pd.DataFrame:
    """ncu's rule rows (empty Metric Name, prose in Rule Description) as a rules table (kernelframe.RULE_COLUMNS):
    the rows ``rule_rows`` of the coded table, at file lines ``lines``. Each text is stripped, tested and parsed
    once per distinct value (a long file repeats the same rule texts on every launch), then taken by code."""
    from nvperf_bridge.kernelframe import RULE_COLUMNS

    def column(name: str) -> np.ndarray:
        """The rows' values, None where missing or blank (NaN in every row where the layout has no such column)."""
        if name not in table:
            return np.full(len(rule_rows), np.nan, dtype=object)  # as pd.Series(None, dtype=object) holds it
        return _kept_distinct(table[name])[table[name].codes[rule_rows]]

    speedup = None
    if "Estimated Speedup" in table:
        found = table["Estimated Speedup"]
        numbers = parse_numbers(pd.Series(_kept_distinct(found), dtype=object)).to_numpy(dtype="float64")
        speedup = numbers[found.codes[rule_rows]]
    out = pd.DataFrame({
        "kernel_id": _rule_launch_keys(table, rule_rows),
        "kernel_name": column("Kernel Name"),
        "source": str(path),
        "source_row": lines,
        "section": column("Section Name"),
        "rule": column("Rule Name"),
        "type": column("Rule Type"),
        "message": column("Rule Description"),
        "estimated_speedup_pct": speedup if speedup is not None else np.nan,
        "speedup_type": column("Estimated Speedup Type"),
    })
    out["source_row"] = out["source_row"].astype("Int64")
    return out[list(RULE_COLUMNS)].reset_index(drop=True)


def _kept_distinct(column: coded.Coded) -> np.ndarray:
    """The column's distinct values with None for a blank one, and a last None for a missing value (code -1)."""
    values = pd.Series(np.append(column.distinct, np.nan).astype(object), dtype=object)
    return values.where(values.notna() & (values.astype(str).str.strip() != ""), None).to_numpy(dtype=object)


def _rule_launch_keys(table: dict[str, coded.Coded], rule_rows: np.ndarray) -> np.ndarray:
    """``_launch_key`` of the rule rows, worked out once per distinct (process, ID) pair among them."""
    names = ["ID", "Process ID"] if "Process ID" in table else ["ID"]
    codes = np.stack([table[name].codes[rule_rows] for name in names], axis=1)
    pairs, inverse = np.unique(codes, axis=0, return_inverse=True)
    frame = pd.DataFrame({name: np.append(table[name].distinct, np.nan).astype(object)[pairs[:, i]]
                          for i, name in enumerate(names)})
    return _launch_key(frame).to_numpy()[inverse.reshape(-1)]

"""From profiler names to canonical columns: renamed through the alias tables (``importers.aliases``),
derived (``importers.derivations``), assembled with their final types.

Every importer hands over a wide frame whose identity columns are already
canonical (``kernel_name``, ``kernel_id``, ``source``, ...) and whose metric
columns carry the profiler's own names, in base units. ``canonicalize``
renames metrics through ``data/metric_aliases.csv`` (one table, no if-chains),
derives the columns that are sums, products or ratios of others, and fixes
the canonical dtypes. Metrics without a canonical name stay, under their
profiler name.
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd

from nvperf_bridge.columns import CANONICAL_COLUMNS, IDENTITY_COLUMNS
from nvperf_bridge.importers.aliases import Alias, map_counters, resolve_alias
from nvperf_bridge.importers.base import Deferred, Parsed
from nvperf_bridge.importers.derivations import DERIVATIONS, INPUT_SPEC, TIME_MARK
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.labels import factorize_text


def canonicalize(frame: pd.DataFrame, kinds: dict[str, str], notes: list[str]) -> pd.DataFrame:
    """Rename aliased metrics, sum subpartition events, derive combined columns; a new frame.

    ``kinds`` maps metric columns to their base unit (for aliases that only
    apply to one kind, e.g. "Memory Throughput" in % versus bytes/s); a level
    converted in place to a fraction is recorded there as "fraction", so a
    second call (after merging files) does not convert it again. Derivations
    only fill values that are still missing, so calling this again is safe.
    ``notes`` receives the formula of every derivation used; the ``derived``
    column names, per kernel, the columns that were derived (see ``derived_from``).
    """
    targets = map_counters(list(frame.columns), kinds)
    parts: dict[str, pd.Series] = {}
    by_target: dict[str, list[tuple[int, str, Alias]]] = {}
    scaled: dict[str, pd.Series] = {}
    for col, target in targets.items():
        if target is None or col in CANONICAL_COLUMNS:
            continue
        alias = resolve_alias(col, kinds.get(col))
        assert alias is not None
        if target == col:  # a level kept under its own name, rescaled (0-10 -> 0..1)
            scaled[col] = pd.to_numeric(frame[col], errors="coerce") * alias.scale
            kinds[col] = "fraction"
            continue
        by_target.setdefault(target, []).append((alias.order, col, alias))
    consumed: list[str] = []
    new: dict[str, pd.Series] = {}  # built apart and joined once: no fragmented frame
    for target, candidates in by_target.items():
        candidates.sort()
        values = None
        for _, group in _by_spelling(candidates):
            series = _summed(frame, [col for col, _ in group], target)
            if group[0][1].scale != 1:
                series = series * group[0][1].scale
            values = series if values is None else values.combine_first(series)
        if target.startswith("_"):
            parts[target] = values  # raw columns stay: they have no canonical name
        else:
            new[target] = frame[target].combine_first(values) if target in frame.columns else values
            consumed.extend(col for _, col, _ in candidates)
    keep = frame.drop(columns=[c for c in consumed if c not in CANONICAL_COLUMNS] + [c for c in new if c in frame.columns])
    if scaled:
        keep = keep.assign(**scaled)
    _derive(keep, new, parts, notes)
    # a derivation that filled gaps of a column the input already had replaces that column
    keep = keep.drop(columns=[c for c in new if c in keep.columns])
    # the new columns as they are (copy=False): not copied into one block, which only concat's result needs
    return pd.concat([keep, pd.DataFrame(new, index=frame.index, copy=False)], axis=1)


def _by_spelling(candidates: list[tuple[int, str, Alias]]) -> list[tuple[int, list[tuple[str, Alias]]]]:
    """Candidates grouped by table row, earliest row first: the columns of one ``*`` pattern
    (one per subpartition) form one group and are summed."""
    groups: dict[int, list[tuple[str, Alias]]] = {}
    for order, col, alias in candidates:
        groups.setdefault(order, []).append((col, alias))
    return sorted(groups.items())


def _summed(frame: pd.DataFrame, cols: list[str], target: str) -> pd.Series:
    """One column's values, or the sum of a subpartition group (a missing part makes the sum missing)."""
    total = None
    for col in cols:
        series = _numeric_or_text(frame[col], target)
        total = series if total is None else total + series
    assert total is not None
    return total


def _numeric_or_text(series: pd.Series, target: str) -> pd.Series:
    col = CANONICAL_COLUMNS.get(target)
    if col is not None and col.dtype == "str":
        return series.astype(object).where(series.notna(), None)
    if series.dtype.kind in "fiub":
        return series.astype("float64")
    from nvperf_bridge.importers.text import tuple_product

    return tuple_product(series)


def _get(frame: pd.DataFrame, new: dict[str, pd.Series], parts: dict[str, pd.Series], name: str) -> pd.Series | None:
    if name in parts:
        return parts[name]
    if name in new:
        return numbers(new[name])
    if name in frame.columns:
        return numbers(frame[name])
    return None


def _derive(frame: pd.DataFrame, new: dict[str, pd.Series], parts: dict[str, pd.Series], notes: list[str]) -> None:
    """Fill derived canonical columns into ``new`` (only where still missing) and mark them in ``derived``."""
    if "derived" in frame.columns:
        before = frame["derived"].astype(object).where(frame["derived"].notna(), "")
        # marks from an earlier call (before merging files): read only when there are any (large frames)
        earlier = bool(before.astype(str).str.contains(TIME_MARK, regex=False).any()) if (before != "").any() else False
    else:  # no marks yet: each row's is "" (a million rows are not compared one by one to find that out)
        from nvperf_bridge.importers.text import same_text

        before = pd.Series(same_text(len(frame), ""), index=frame.index, dtype=object, copy=False)
        earlier = False
    marks: list[tuple[str, pd.Series, pd.Series]] = []  # (target, rows filled, rows time-derived)
    timed: dict[str, pd.Series] = {}

    def is_timed(name: str) -> pd.Series:
        if name not in timed:
            timed[name] = (before.str.contains(f"(?:^|; ){re.escape(name)}{re.escape(TIME_MARK)}", regex=True)
                           if earlier else pd.Series(False, index=frame.index))
        return timed[name]

    for d in DERIVATIONS:
        terms = []
        for spec in d.inputs:
            m = INPUT_SPEC.match(spec)
            assert m is not None
            terms.append((m.group("name"), float(m.group("w") or 1)))
        series = [_get(frame, new, parts, name) for name, _ in terms]
        if any(s is None for s in series):
            continue
        if d.operation in ("sum", "weighted"):
            value = sum(s * w for s, (_, w) in zip(series, terms))
        elif d.operation == "product":
            value = series[0] * terms[0][1]
            for s in series[1:]:
                value = value * s
        elif d.operation == "warps":
            value = series[0] * series[1] * np.ceil(series[2] / 32.0)
        else:  # ratio / requests: a zero denominator gives missing, never inf
            denominator = series[1].where(series[1] != 0)
            value = series[0] * terms[0][1] / denominator
            if d.operation == "requests":
                value = value.where(series[0] != 0, 0.0)
        value = pd.Series(value, index=frame.index, dtype="float64")
        current = new.get(d.target, frame[d.target] if d.target in frame.columns else None)
        if current is not None:
            known = numbers(current)
            filled = known.isna() & value.notna()
            if not filled.any():
                continue
            new[d.target] = known.where(~filled, value)
        else:
            filled = value.notna()
            if not filled.any():
                continue
            new[d.target] = value
        if not d.formula:
            continue
        time = pd.Series(d.time, index=frame.index)
        for name, _ in terms:
            if name in CANONICAL_COLUMNS:
                time = time | is_timed(name)
        timed[d.target] = is_timed(d.target) | (filled & time)
        marks.append((d.target, filled, filled & time))
        if d.formula not in notes:
            notes.append(d.formula)
    if marks:
        new["derived"] = pd.Series(_derived_marks(before.to_numpy(dtype=object), marks), index=frame.index,
                                   dtype=object)


def _derived_marks(before: np.ndarray, marks: list[tuple[str, pd.Series, pd.Series]]) -> np.ndarray:
    """Each row's ``derived`` text: its earlier marks (``before``, "" for none) followed by ``target`` (or
    ``target (time)``) of every derivation in ``marks`` that filled the row, "; "-separated; None where there
    is none. The rows fall into a few patterns (earlier text; per derivation: not filled, filled, filled from
    the time): the text is written once per pattern and shared by its rows, one object per distinct text."""
    pattern = factorize_text(before)[0].astype(np.int64)
    for _, filled, time in marks:
        state = filled.to_numpy(dtype=bool).astype(np.int64) + (filled & time).to_numpy(dtype=bool)
        pattern, _ = pd.factorize(pattern * 3 + state)  # kept dense: a few patterns, whatever the marks' count
    first_rows = np.unique(pattern, return_index=True)[1]
    shared: dict[str, str] = {}
    texts = np.empty(len(first_rows), dtype=object)
    for code, row in enumerate(first_rows.tolist()):
        text = before[row]
        for target, filled, time in marks:
            if filled.iat[row]:
                label = target + TIME_MARK if time.iat[row] else target
                text = label if text == "" else text + "; " + label
        texts[code] = None if text == "" else shared.setdefault(text, text)
    return texts[pattern]


# ---- final shape ---------------------------------------------------------------

_PARAMS = re.compile(r"\(.*\)\s*(?:const)?\s*$", re.S)


def short_names(names: pd.Series, factorized: tuple[np.ndarray, np.ndarray] | None = None) -> pd.Series:
    """Display names: no ``void``, no parameter list, long template arguments shortened.

    ``void matrixMulCUDA<int=32>(float*, float*)`` -> ``matrixMulCUDA<int=32>``;
    names whose template arguments are longer than 40 characters keep
    ``<...>`` in their place so tables stay readable.
    """
    return map_text(names, _short_one, factorized)


def map_text(values: pd.Series, func: Callable[[str], object],
             factorized: tuple[np.ndarray, np.ndarray] | None = None) -> pd.Series:
    """``values.map({v: func(v) for each distinct present v})``, with ``func`` called once per distinct
    value and each row's value found by its code (``factorize_text``, or ``factorized`` where the caller
    has it) instead of hashed again."""
    codes, distinct = factorized if factorized is not None else factorize_text(values)
    if not len(distinct):
        return values.map({})
    # what ``Series.map`` does with a dict: the dict as a Series, taken at each row (missing: NaN)
    mapping = pd.Series(dict(zip(distinct, map(func, distinct))))
    taken = pd.api.extensions.take(mapping.array, codes, allow_fill=True)
    return pd.Series(taken, index=values.index, name=values.name)


def _short_one(name: str) -> str:
    text = str(name).strip()
    if text.startswith("void "):
        text = text[5:]
    # the parameter list is the bracket group that closes the name: match it from the end
    tail = text[:-6].rstrip() if text.endswith(" const") else text
    if tail.endswith(")"):
        depth = 0
        for i in range(len(tail) - 1, -1, -1):
            ch = tail[i]
            if ch == ")":
                depth += 1
            elif ch == "(":
                depth -= 1
                if depth == 0:
                    if i > 0:
                        text = tail[:i]
                    break
    lt = text.find("<")
    if lt >= 0 and len(text) - lt > _MAX_TEMPLATE:
        # keep enough of the template arguments to tell instantiations apart
        text = text[:lt + _MAX_TEMPLATE - 4].rstrip() + "...>"
    return text.strip() or str(name)


_MAX_TEMPLATE = 64


def finish(frame: pd.DataFrame, storage: np.ndarray | None = None,
           names: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    """Canonical dtypes and column order: identity columns, canonical metrics, raw counters.

    ``storage`` is the float64 block (one row per column) that a streamed
    importer read the raw counters into: the raw counters of the result are
    then that block, compacted in place, instead of a copy of it. ``names``:
    ``kernel_name`` factorized (``Parsed.names``), where the importer has it.
    """
    columns: dict[str, pd.Series] = {name: frame[name] for name in frame.columns}
    short = short_names(frame["kernel_name"], names)
    columns["kernel"] = frame["kernel"].combine_first(short) if "kernel" in frame.columns else short
    if "invocations" in frame.columns:
        # a count that is not a number in 1..2**53 (inf, 0, negative, text) is treated as missing: 1
        counts = pd.to_numeric(frame["invocations"], errors="coerce").astype("float64")
        counts = counts.where(np.isfinite(counts) & (counts >= 1) & (counts < 2.0**53))
        columns["invocations"] = np.floor(counts.fillna(1)).astype("int64")
    else:  # a launch per row (a trace's million rows: no float passes over a column of ones)
        columns["invocations"] = pd.Series(np.ones(len(frame), dtype=np.int64), index=frame.index)
    for name, col in CANONICAL_COLUMNS.items():
        if name not in columns or name in ("invocations", "kernel"):
            continue
        values = columns[name]
        if col.dtype == "str":
            columns[name] = as_text(values)
        elif name == "source_row":
            columns[name] = numbers(values).astype("Int64")
        else:
            columns[name] = numbers(values).astype("float64")
    # a raw column with nothing in it tells the user nothing
    names = [c for c in columns if c in CANONICAL_COLUMNS or _has_value(columns[c])]
    identity = [c for c in IDENTITY_COLUMNS if c in names]
    canonical = [c for c in CANONICAL_COLUMNS if c in names and c not in identity]
    raw = [c for c in names if c not in CANONICAL_COLUMNS]
    ordered = {c: columns[c] for c in identity + canonical + raw}
    if storage is not None:
        return _assemble(ordered, frame.index, storage, set(raw)).reset_index(drop=True)
    out = pd.DataFrame(ordered, index=frame.index, copy=False)  # the columns as they are, not copied into blocks
    return out.reset_index(drop=True)


def as_text(values: pd.Series) -> pd.Series:
    """A text column as ``finish`` types it: objects, ``None`` where missing, each present value a ``str``
    (texts kept as they are, anything else made one). A long object column of a few objects (a trace's
    kernel names and devices, made from their distinct values) is checked on those objects alone
    (``labels.distinct_objects``), where ``notna`` and ``infer_dtype`` look at every row's object."""
    from nvperf_bridge.labels import FACTORIZE_BY_IDENTITY_FROM, distinct_objects, rows_holding

    found = distinct_objects(values.to_numpy()) if values.dtype == object and \
        len(values) >= FACTORIZE_BY_IDENTITY_FROM else None
    if found is not None:
        present = pd.Series(~rows_holding(found, _is_missing), index=values.index)
        only_str = all(isinstance(item, str) for item in found[2] if not _is_missing(item))
    else:
        present = values.notna()
    every = bool(present.all())
    text = values.astype(object) if every else values.astype(object).where(present, None)
    if found is None:
        only_str = _only_str(text.to_numpy() if every else text.to_numpy()[present.to_numpy()])
    if not only_str:
        text[present] = values[present].astype(str)  # texts are kept as they are
    return text


def _is_missing(item: object) -> bool:
    """What ``Series.notna`` counts as missing, for one object."""
    return pd.api.types.is_scalar(item) and bool(pd.isna(item))


def numbers(values: pd.Series) -> pd.Series:
    """``pd.to_numeric(values, errors="coerce")``, without its copy of a column that is float64 or int64
    already (a trace's million-row columns: a copy each time a derivation or ``finish`` reads one; the
    column is shared, which copy-on-write keeps apart from any later write)."""
    if values.dtype == np.float64 or values.dtype == np.int64:
        return values
    return pd.to_numeric(values, errors="coerce")


def _has_value(column: pd.Series) -> bool:
    """Whether any value of ``column`` is present: its first rows are looked at first (a million-row column
    whose first row has a value needs no full pass)."""
    return bool(column.iloc[:64].notna().any()) or bool(column.notna().any())


def _only_str(values: np.ndarray) -> bool:
    """Every value is a ``str`` (a subclass too): ``astype(str)`` keeps each as it is."""
    from pandas.api.types import infer_dtype

    return infer_dtype(values, skipna=False) == "string"


def _assemble(columns: dict[str, pd.Series], index: pd.Index, storage: np.ndarray, raw: set[str]) -> pd.DataFrame:
    """The frame of ``columns`` (in that order) with the raw counters that are rows of ``storage`` as one
    block of their own.

    Raw float columns that are rows of ``storage``, in increasing row order, are
    taken into a new block (one copy of those rows), and ``storage`` itself is let go:
    it also holds the rows of the counters a canonical column replaced (a third of a
    raw page's parsed counters) and the spare rows of its size estimate, which a
    view would keep alive as long as the kernel table lives (at 100k launches 30 MB
    of the models' peak). Everything else that shares memory with ``storage`` (a few
    canonical columns) is copied first.
    """
    base = storage.__array_interface__["data"][0]
    stride, length = storage.strides[0], storage.shape[1]
    rows: list[int] = []
    kept: list[str] = []
    for name, series in columns.items():
        if name not in raw or series.dtype != np.float64:
            continue
        values = series.to_numpy()
        offset = values.__array_interface__["data"][0] - base
        if (values.strides == storage.strides[1:] and len(values) == length and 0 <= offset < storage.nbytes
                and offset % stride == 0 and (not rows or offset // stride > rows[-1])):
            rows.append(offset // stride)
            kept.append(name)
    taken = set(kept)
    others: dict[str, pd.Series] = {}
    for name, series in columns.items():
        if name in taken:
            continue
        values = series.to_numpy()
        # within the block's bounds (may_share_memory: a bounds test, where shares_memory solves for overlap)
        others[name] = series.copy() if np.may_share_memory(values, storage) else series
    block = pd.DataFrame(storage[rows].T, columns=kept, index=index, copy=False)  # the rows copied out
    rest = pd.DataFrame(others, index=index, copy=False)  # as they are, not copied into blocks of one dtype
    return pd.concat([rest, block], axis=1)[list(columns)]


# ---- values no profiler prints ---------------------------------------------------

# canonical columns where 0 is not a measurement (a launch takes time, has blocks and threads)
POSITIVE_COLUMNS: tuple[str, ...] = ("duration_ns", "sm_cycles", "sm_clock_hz", "grid_blocks", "block_threads")


def check_ranges(kernels: pd.DataFrame, warnings: list[str]) -> pd.DataFrame:
    """Values no profiler can print become missing, each kind reported once in ``warnings``.

    Infinite values, negative counts, bytes and times, fractions (occupancy,
    hit rates, SOL) outside 0..1, and zero durations, clocks, cycles or launch
    shapes would otherwise reach the models as wrong numbers. The warning names
    the column, how many kernels, the first value and the file and line it came from.
    """
    out = kernels
    for name, col in CANONICAL_COLUMNS.items():
        if name not in kernels.columns or col.dtype == "str" or name in ("source_row", "invocations"):
            continue
        values = numbers(kernels[name]).astype("float64")
        bad = np.isinf(values) | (values < 0)
        expected = "finite and >= 0"
        if col.unit == "fraction":
            bad |= values > 1
            expected = "a fraction in 0..1"
        elif name in POSITIVE_COLUMNS:
            bad |= values == 0
            expected = "finite and > 0"
        if not bad.any():
            continue
        if out is kernels:
            out = kernels.copy(deep=False)  # copy-on-write: the caller's frame is untouched, no data copied
        first = bad.idxmax()
        where = ""
        if "source" in kernels.columns:
            where = str(kernels.at[first, "source"])
            if "source_row" in kernels.columns and pd.notna(kernels.at[first, "source_row"]):
                where += f":{int(kernels.at[first, 'source_row'])}"
            where += ": "
        count = int(bad.sum())
        warnings.append(f"{where}{name} must be {expected}, got {values[first]:g}"
                        f"{f' (and {count - 1} more kernels)' if count > 1 else ''}; treated as missing")
        out[name] = values.mask(bad)
    return out


def to_parsed(frame: pd.DataFrame, kinds: dict[str, str], info: InputFile, *, per_kernel: bool, join: str,
              storage: np.ndarray | None = None, names: tuple[np.ndarray, np.ndarray] | None = None,
              deferred: Deferred | None = None) -> Parsed:
    """The last step of every CSV importer: canonical columns, final shape, and what the
    file contributed (kernel rows, device names) recorded in ``info`` (``names``: see ``Parsed.names``;
    ``deferred``: identity columns ``frame`` lacks, made when the frame is read, ``Parsed.deferred``)."""
    record_coverage(frame, kinds, info)
    frame = finish(canonicalize(frame, kinds, info.notes), storage=storage, names=names)
    info.kernels = len(frame)
    # the names present, in order of first appearance (``dropna().unique()``), the rows told apart by object
    devices = factorize_text(frame["device"])[1] if "device" in frame.columns else []
    info.device = ", ".join(map(str, devices)) if len(devices) else None
    return Parsed(frame=frame, info=info, per_kernel=per_kernel, join=join, kinds=kinds, names=names,
                  deferred=deferred)


def kernel_name_codes(parsed: Parsed) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` of the file's ``kernel_name`` column: the importer's (``Parsed.names``) where it
    kept them, else ``factorize_text``."""
    if parsed.names is not None and len(parsed.names[0]) == len(parsed.lean):
        return parsed.names
    return factorize_text(parsed.lean["kernel_name"])


def record_coverage(frame: pd.DataFrame, kinds: dict[str, str], info: InputFile) -> None:
    """Record in ``info`` what becomes of every counter column of one file (before ``canonicalize``):
    mapped (to which canonical column, or which derivation uses it), unmapped (kept raw by name),
    and the values of mapped columns that are text no number could be read from."""
    from nvperf_bridge.importers.text import unparsed

    users: dict[str, list[str]] = {}
    for d in DERIVATIONS:
        for spec in d.inputs:
            m = INPUT_SPEC.match(spec)
            assert m is not None
            users.setdefault(m.group("name"), []).append(d.target)
    lines = frame["source_row"] if "source_row" in frame.columns else None
    for col, target in map_counters([c for c in frame.columns if not str(c).startswith("_")], kinds).items():
        if target is None:
            info.unmapped.append(col)
            continue
        if target == col and col not in CANONICAL_COLUMNS:
            info.mapped[col] = "level 0-10 converted to a fraction (level / 10), kept under its own name"
        elif target.startswith("_"):
            info.mapped[col] = "used to derive " + ", ".join(dict.fromkeys(users.get(target, []))) if target in users else target
        else:
            info.mapped[col] = target
        values = frame[col]
        spec = CANONICAL_COLUMNS.get(target)
        if values.dtype.kind in "fiubmM" or (spec is not None and spec.dtype == "str"):
            continue
        bad = unparsed(values, _numeric_or_text(values, target))
        if bad.any():
            first = bad.idxmax()
            where = f", first at line {int(lines[first])}" if lines is not None and pd.notna(lines[first]) else ""
            info.unparsed[col] = f"{int(bad.sum())} value{'s' if bad.sum() != 1 else ''}{where}: {str(values[first])[:40]!r}"


def unparsed_by_name(names: pd.Series, bad: pd.Series, lines: pd.Series, values: pd.Series) -> dict[str, str]:
    """For long formats (one row per kernel and metric): per metric name, the values no number could be
    read from, as ``InputFile.unparsed`` holds them ("N values, first at line L: 'text'")."""
    if not bad.any():
        return {}
    rows = pd.DataFrame({"name": names[bad].astype(str), "line": lines[bad], "value": values[bad].astype(str)})
    out: dict[str, str] = {}
    for name, group in rows.groupby("name", sort=False):
        count = len(group)
        out[str(name)] = (f"{count} value{'s' if count != 1 else ''}, first at line {int(group['line'].iloc[0])}: "
                          f"{group['value'].iloc[0][:40]!r}")
    return out

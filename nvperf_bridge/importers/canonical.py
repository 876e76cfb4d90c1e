"""From profiler names to canonical columns: the alias table, derivations, final types.

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
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import pandas as pd

from nvperf_bridge.columns import CANONICAL_COLUMNS, IDENTITY_COLUMNS
from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.kernelframe import InputFile


@dataclass(frozen=True)
class Alias:
    metric: str
    target: str  # canonical column, or "_part" used by a derivation
    scale: float
    kind: str  # required base unit of the value ("" = any)
    order: int  # position in the table: earlier wins


@lru_cache(maxsize=1)
def aliases() -> dict[str, Alias]:
    """The alias table, keyed by profiler metric name."""
    with resources.files("nvperf_bridge").joinpath("data/metric_aliases.csv").open("r", encoding="utf-8") as fh:
        table = pd.read_csv(fh, comment="#", dtype=str, keep_default_na=False)
    out: dict[str, Alias] = {}
    for order, row in enumerate(table.itertuples(index=False)):
        out.setdefault(row.metric, Alias(row.metric, row.target, float(row.scale or 1), row.kind, order))
    return out


# Derived canonical columns, as data: (target, operation, inputs, note).
#   sum / product: every input must be present (a missing part is missing, not 0)
#   weighted: sum of input*weight, inputs given as "name*weight"
#   ratio: inputs[0] / inputs[1] * factor ("name*factor" on the first input)
#   requests: transactions / transactions-per-request, where no transactions means
#     no requests (nvprof reports 0 per request for a kernel that never touches
#     that memory, and 0 / 0 must read as 0 requests, not as a missing counter)
DERIVATIONS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("shared_mem_per_block_bytes", "sum", ("_smem_static_bytes", "_smem_dynamic_bytes"), ""),
    ("grid_blocks", "product", ("_grid_x", "_grid_y", "_grid_z"), ""),
    ("block_threads", "product", ("_block_x", "_block_y", "_block_z"), ""),
    ("dram_bytes", "sum", ("dram_read_bytes", "dram_write_bytes"), ""),
    ("flop_sp", "weighted", ("_ffma*2", "_fadd*1", "_fmul*1"), ""),
    ("flop_dp", "weighted", ("_dfma*2", "_dadd*1", "_dmul*1"), ""),
    ("flop_hp", "weighted", ("_hfma*2", "_hadd*1", "_hmul*1"), ""),
    ("inst_global_ld", "requests", ("global_ld_sectors", "_gld_per_request"), "inst_global_ld = gld_transactions / gld_transactions_per_request"),
    ("inst_global_st", "requests", ("global_st_sectors", "_gst_per_request"), "inst_global_st = gst_transactions / gst_transactions_per_request"),
    ("inst_shared_ld", "requests", ("shared_ld_wavefronts", "_shared_ld_per_request"), "inst_shared_ld = shared_load_transactions / shared_load_transactions_per_request"),
    ("inst_shared_st", "requests", ("shared_st_wavefronts", "_shared_st_per_request"), "inst_shared_st = shared_store_transactions / shared_store_transactions_per_request"),
    ("duration_ns", "ratio", ("sm_cycles*1e9", "sm_clock_hz"), "duration_ns = sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second (no duration counter in the input)"),
)

_WEIGHT = re.compile(r"^(?P<name>[^*]+)(?:\*(?P<w>[-+0-9.eE]+))?$")


def canonicalize(frame: pd.DataFrame, kinds: dict[str, str], notes: list[str]) -> pd.DataFrame:
    """Rename aliased metrics, derive combined columns, return a new frame.

    ``kinds`` maps metric columns to their base unit (for aliases that only
    apply to one kind, e.g. "Memory Throughput" in % versus bytes/s).
    Derivations only fill values that are still missing, so calling this again
    after merging files is safe. ``notes`` receives one line per derivation used.
    """
    table = aliases()
    parts: dict[str, pd.Series] = {}
    by_target: dict[str, list[tuple[int, str, Alias]]] = {}
    for col in frame.columns:
        alias = table.get(col)
        if alias is None or alias.target == col:
            continue
        if alias.kind and kinds.get(col, alias.kind) != alias.kind:
            continue
        by_target.setdefault(alias.target, []).append((alias.order, col, alias))
    consumed: list[str] = []
    new: dict[str, pd.Series] = {}  # built apart and joined once: no fragmented frame
    for target, candidates in by_target.items():
        candidates.sort()
        values = None
        for _, col, alias in candidates:
            series = _numeric_or_text(frame[col], target)
            if alias.scale != 1:
                series = series * alias.scale
            values = series if values is None else values.combine_first(series)
        if target.startswith("_"):
            parts[target] = values  # raw columns stay: they have no canonical name
        else:
            new[target] = frame[target].combine_first(values) if target in frame.columns else values
            consumed.extend(col for _, col, _ in candidates)
    for col in frame.columns:
        # parts may also come from an earlier canonicalize call (raw columns kept)
        alias = table.get(col)
        if alias is not None and alias.target.startswith("_") and alias.target not in parts:
            parts[alias.target] = pd.to_numeric(frame[col], errors="coerce")
    keep = frame.drop(columns=[c for c in consumed if c not in CANONICAL_COLUMNS] + [c for c in new if c in frame.columns])
    _derive(keep, new, parts, notes)
    # a derivation that filled gaps of a column the input already had replaces that column
    keep = keep.drop(columns=[c for c in new if c in keep.columns])
    return pd.concat([keep, pd.DataFrame(new, index=frame.index)], axis=1)


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
        return pd.to_numeric(new[name], errors="coerce")
    if name in frame.columns:
        return pd.to_numeric(frame[name], errors="coerce")
    return None


def _derive(frame: pd.DataFrame, new: dict[str, pd.Series], parts: dict[str, pd.Series], notes: list[str]) -> None:
    """Fill derived canonical columns into ``new`` (only where still missing)."""
    for target, operation, inputs, note in DERIVATIONS:
        terms = []
        for spec in inputs:
            m = _WEIGHT.match(spec)
            assert m is not None
            terms.append((m.group("name"), float(m.group("w") or 1)))
        series = [_get(frame, new, parts, name) for name, _ in terms]
        if any(s is None for s in series):
            continue
        if operation == "sum" or operation == "weighted":
            value = sum(s * w for s, (_, w) in zip(series, terms))
        elif operation == "product":
            value = series[0] * series[1] * series[2] if len(series) == 3 else np.prod(series, axis=0)
        else:  # ratio / requests: a zero denominator gives missing, never inf
            denominator = series[1].where(series[1] != 0)
            value = series[0] * terms[0][1] / denominator
            if operation == "requests":
                value = value.where(series[0] != 0, 0.0)
        value = pd.Series(value, index=frame.index, dtype="float64")
        current = new.get(target, frame[target] if target in frame.columns else None)
        if current is not None:
            before = pd.to_numeric(current, errors="coerce")
            filled = before.isna() & value.notna()
            if not filled.any():
                continue
            new[target] = before.where(~filled, value)
        else:
            if value.isna().all():
                continue
            new[target] = value
        if note and note not in notes:
            notes.append(note)


# ---- final shape ---------------------------------------------------------------

_PARAMS = re.compile(r"\(.*\)\s*(?:const)?\s*$", re.S)


def short_names(names: pd.Series) -> pd.Series:
    """Display names: no ``void``, no parameter list, long template arguments shortened.

    ``void matrixMulCUDA<int=32>(float*, float*)`` -> ``matrixMulCUDA<int=32>``;
    names whose template arguments are longer than 40 characters keep
    ``<...>`` in their place so tables stay readable.
    """
    unique = pd.Series(names.dropna().unique())
    mapping = dict(zip(unique, unique.map(_short_one)))
    return names.map(mapping)


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


def finish(frame: pd.DataFrame, storage: np.ndarray | None = None) -> pd.DataFrame:
    """Canonical dtypes and column order: identity columns, canonical metrics, raw counters.

    ``storage`` is the float64 block (one row per column) that a streamed
    importer read the raw counters into: the raw counters of the result are
    then that block, compacted in place, instead of a copy of it.
    """
    columns: dict[str, pd.Series] = {name: frame[name] for name in frame.columns}
    short = short_names(frame["kernel_name"])
    columns["kernel"] = frame["kernel"].combine_first(short) if "kernel" in frame.columns else short
    invocations = frame["invocations"] if "invocations" in frame.columns else pd.Series(1, index=frame.index)
    # a count that is not a number in 1..2**53 (inf, 0, negative, text) is treated as missing: 1
    counts = pd.to_numeric(invocations, errors="coerce").astype("float64")
    counts = counts.where(np.isfinite(counts) & (counts >= 1) & (counts < 2.0**53))
    columns["invocations"] = np.floor(counts.fillna(1)).astype("int64")
    for name, col in CANONICAL_COLUMNS.items():
        if name not in columns or name in ("invocations", "kernel"):
            continue
        values = columns[name]
        if col.dtype == "str":
            present = values.notna()
            text = values.astype(object).where(present, None)
            text[present] = values[present].astype(str)
            columns[name] = text
        elif name == "source_row":
            columns[name] = pd.to_numeric(values, errors="coerce").astype("Int64")
        else:
            columns[name] = pd.to_numeric(values, errors="coerce").astype("float64")
    # a raw column with nothing in it tells the user nothing
    names = [c for c in columns if c in CANONICAL_COLUMNS or columns[c].notna().any()]
    identity = [c for c in IDENTITY_COLUMNS if c in names]
    canonical = [c for c in CANONICAL_COLUMNS if c in names and c not in identity]
    raw = [c for c in names if c not in CANONICAL_COLUMNS]
    ordered = {c: columns[c] for c in identity + canonical + raw}
    if storage is not None:
        return _assemble(ordered, frame.index, storage, set(raw)).reset_index(drop=True)
    out = pd.DataFrame(ordered, index=frame.index)
    return out.reset_index(drop=True)


def _assemble(columns: dict[str, pd.Series], index: pd.Index, storage: np.ndarray, raw: set[str]) -> pd.DataFrame:
    """The frame of ``columns`` (in that order) with the raw counters kept in ``storage``, never copied.

    Raw float columns that are rows of ``storage``, in increasing row order, are
    moved down in place to the block's first rows and become one pandas block
    (a view). Everything else, including any column that shares memory with
    ``storage`` but is not such a row, is copied first (a few canonical columns).
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
        others[name] = series.copy() if np.shares_memory(values, storage) else series
    for k, r in enumerate(rows):
        if k != r:
            storage[k] = storage[r]
    block = pd.DataFrame(storage[:len(rows)].T, columns=kept, index=index, copy=False)
    rest = pd.DataFrame(others, index=index)
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
        values = pd.to_numeric(kernels[name], errors="coerce").astype("float64")
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
              storage: np.ndarray | None = None) -> Parsed:
    """The last step of every CSV importer: canonical columns, final shape, and what the
    file contributed (kernel rows, device names) recorded in ``info``."""
    frame = finish(canonicalize(frame, kinds, info.notes), storage=storage)
    info.kernels = len(frame)
    devices = frame["device"].dropna().unique() if "device" in frame.columns else []
    info.device = ", ".join(map(str, devices)) if len(devices) else None
    return Parsed(frame=frame, info=info, per_kernel=per_kernel, join=join, kinds=kinds)


def alias_metrics() -> frozenset[str]:
    """Every profiler column name the alias table maps (to a canonical column or a part of one)."""
    from importlib import resources
    import csv as _csv

    with resources.files("nvperf_bridge").joinpath("data/metric_aliases.csv").open(encoding="utf-8") as handle:
        return frozenset(row[0].strip() for row in _csv.reader(handle)
                         if row and row[0].strip() and not row[0].startswith("#") and row[0] != "metric")

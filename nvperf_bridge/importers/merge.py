"""Combining files into one KernelFrame.

* nvprof metrics + the trace of the same program: joined on the kernel name
  (correlation suffix already stripped; names compared with and without their
  parameter lists). Metrics are per-kernel summaries, so the trace is
  averaged per kernel and gives ``invocations`` (its launch count), the
  measured duration, launch shape and device.
* ncu files of one run that each hold other metrics (one metric per file,
  or a details file beside its metrics subset): joined on launch ID and
  kernel name.
* Everything else (different runs, different programs) is concatenated.
* Inputs that overlap (the same table twice; an nvprof GPU summary of the
  run a trace also covers) are counted once, with a note on the file left
  out (``drop_overlaps``).

A kernel found in only one of two joined files is kept and listed in the
warnings, never dropped silently.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from nvperf_bridge.columns import IDENTITY_COLUMNS
from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.importers.canonical import canonicalize, finish, kernel_name_codes, map_text, short_names
from nvperf_bridge.importers.derivations import TIME_MARK
from nvperf_bridge.kernelframe import ImportResult

_LAUNCH_KEY = ["kernel_id", "kernel_name"]
TRACE_FORMATS = frozenset({"nvprof-trace", "nvvp-trace"})  # one row per launch with its measured Duration
_MIN_OVERLAP = 0.5  # share of the smaller file's launches two ncu files must share to be one run


def combine(parsed: list[Parsed]) -> ImportResult:
    """Join files of one run, concatenate the rest, and make kernel ids unique.

    Inputs that repeat another input of the same run (``drop_overlaps``) are
    listed with a note but not counted twice."""
    warnings: list[str] = [w for p in parsed for w in p.info.warnings]
    inputs = [p.info for p in parsed]
    parsed = drop_overlaps(parsed, warnings)
    frames: list[pd.DataFrame] = []
    metrics = [p for p in parsed if p.info.format == "nvprof-metrics"]
    traces = [p for p in parsed if p.info.format in TRACE_FORMATS]
    summaries = [p for p in parsed if p.info.format == "nvprof-summary"]
    paired_traces: set[int] = set()
    launch_counters = [p for p in parsed if p.info.format == "nvprof-launch-counters"]
    # nvprof counters take their measured time from a trace of the same program: metrics (per kernel) from a
    # trace, else from a GPU summary; per-launch counters (a replayed run) launch by launch from a trace
    for counters, partners, join, what in ((metrics, (traces, summaries), _join_metrics_trace, "metrics"),
                                          (launch_counters, (traces,), _join_launch_counters, "per-launch counters")):
        for m in counters:
            trace = next((t for t in (_best_trace(m, group, paired_traces) for group in partners) if t), None)
            if trace is None:
                if traces:
                    warnings.append(f"{m.info.path}: no kernel of these {what} is in the trace(s) given "
                                    f"({', '.join(t.info.path for t in traces)}); kept without measured duration")
                frames.append(m.frame)
                continue
            paired_traces.add(id(trace))
            frames.append(join(m, trace, warnings))
    frames.extend(t.frame for t in traces if id(t) not in paired_traces)

    ncu = [p for p in parsed if p.info.format in ("ncu-details", "ncu-raw")]
    rules: list[pd.DataFrame] = []
    for group in _ncu_groups(ncu):
        frames.append(group[0].frame if len(group) == 1 else _join_launches(group, warnings))
        # a joined launch's row carries the group's first file as its source: its rules are found by that
        rules.extend(p.rules.assign(_row_source=group[0].info.path) for p in group
                     if p.rules is not None and not p.rules.empty)
    frames.extend(p.frame for p in summaries if id(p) not in paired_traces)
    frames.extend(p.frame for p in parsed if p.info.format == "kernel-yaml")

    kernels = pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame()
    original_ids = kernels["kernel_id"].copy() if rules else None
    kernels = _unique_ids(kernels)
    if len(parsed) > 1:  # a single file is already in final shape
        kernels = finish(kernels)
    from nvperf_bridge.importers.canonical import check_ranges

    kernels = check_ranges(kernels, warnings)
    result = ImportResult(kernels=kernels, inputs=inputs, warnings=warnings)
    if rules:
        result.rules = _rules_with_final_ids(pd.concat(rules, ignore_index=True), kernels, original_ids)
    return result


def _rules_with_final_ids(rules: pd.DataFrame, kernels: pd.DataFrame, original: pd.Series) -> pd.DataFrame:
    """Rule rows keyed by the ids their launches have after ``_unique_ids`` (matched on file and original id)."""
    from nvperf_bridge.kernelframe import RULE_COLUMNS

    final = pd.DataFrame({"_row_source": kernels["source"].astype(str).to_numpy(),
                          "_orig": original.astype(str).to_numpy(),
                          "_final": kernels["kernel_id"].to_numpy()}).drop_duplicates(["_row_source", "_orig"])
    keyed = rules.assign(_orig=rules["kernel_id"].astype(str)).merge(final, on=["_row_source", "_orig"], how="left")
    keyed["kernel_id"] = keyed["_final"].combine_first(keyed["kernel_id"])
    # two files of one run (a details page and its metrics subset) repeat the same rule results: keep one
    keyed = keyed.drop_duplicates(["kernel_id", "section", "rule", "message"])
    out = keyed[list(RULE_COLUMNS)].reset_index(drop=True)
    for column in ("kernel_name", "section", "rule", "type", "message", "speedup_type"):
        out[column] = out[column].astype(object).where(out[column].notna(), None)  # not given: None, not NaN
    return out


# ---- nvprof metrics + trace ----------------------------------------------------

def _signatures(names: pd.Series) -> pd.Series:
    """Each name's normalised signature (names.py), parsed once per distinct name."""
    from nvperf_bridge.names import parse

    return map_text(names.astype(str), lambda name: parse(name).full())


def _signature_codes(p: Parsed) -> tuple[np.ndarray, pd.Index]:
    """Each row's signature (``_signatures`` of its kernel name) as a code into the distinct signatures,
    both numbered by first appearance as ``pd.factorize`` numbers them (-1: no name); parsed once per
    distinct name and found by the file's name codes (``kernel_name_codes``), never hashed per row."""
    from nvperf_bridge.names import parse

    codes, names = kernel_name_codes(p)
    # the signatures as ``_signatures`` types them (a Series made of text)
    full = pd.Series([parse(str(name)).full() for name in names])
    signature_of_name, signatures = pd.factorize(full)
    rows = np.where(codes >= 0, signature_of_name[np.maximum(codes, 0)], -1) if len(names) else codes
    return rows, pd.Index(signatures, dtype=full.dtype)


_KEY_WORDS = {"full": "the full signature", "name_params": "name and parameters",
              "name_targs": "name and template arguments", "name": "the bare function name (the only candidate)"}


def _display(name: str) -> str:
    from nvperf_bridge.names import display_name, parse

    sig = parse(name)
    shown = display_name(name)
    return repr(shown + (f"({','.join(sig.params)})" if sig.params is not None and len(shown) < 60 else ""))


def _best_trace(metrics: Parsed, traces: list[Parsed], taken: set[int]) -> Parsed | None:
    """The trace that pairs with most of the metrics file's kernels (names.match_names)."""
    from nvperf_bridge.names import match_names

    left = metrics.frame["kernel_name"].astype(str).unique()
    best, best_score = None, 0
    for trace in traces:
        if id(trace) in taken:
            continue
        found = match_names(left, kernel_name_codes(trace)[1])
        # a kernel left ambiguous still says the files belong together (it is then named, not lost)
        score = sum(2 if m.right is not None else 1 if m.candidates else 0 for m in found.values())
        if score > best_score:
            best, best_score = trace, score
    return best


def _first_texts(frame: pd.DataFrame, codes: np.ndarray, columns: list[str]) -> dict[str, np.ndarray]:
    """``groupby(codes, sort=False)[column].first()`` (-1: no group) of text columns, each an array in the
    groups' order: the value of each group's first row, found by code (a million launches of a few
    kernels, where pandas' ``first`` walks every row's object). ``first`` skips missing values, so a
    column whose first row of some group is missing is left out (pandas' own ``first`` then)."""
    first_rows = np.flatnonzero(~pd.Series(codes).duplicated().to_numpy() & (codes >= 0))  # in order of appearance
    out = {}
    for column in columns:
        values = frame[column].to_numpy(dtype=object)[first_rows]
        if not pd.isna(values).any():
            out[column] = values
    return out


def _join_metrics_trace(metrics: Parsed, trace: Parsed, warnings: list[str]) -> pd.DataFrame:
    """Metrics (one row per kernel) joined to the trace averaged per kernel signature.

    Names pair on the most specific part both files print (names.match_names):
    a bare name in one file and a full signature in the other pair only when
    no other kernel of the trace could be meant; otherwise both are kept
    unjoined and the warning names each one.
    """
    from nvperf_bridge.names import match_names

    t = trace.lean  # only read: grouped by each row's signature code, never copied; no launch ids made
    codes, signatures = _signature_codes(trace)  # numbered by first appearance, as groupby(sort=False) orders
    numeric = [c for c in t.columns if c not in IDENTITY_COLUMNS and pd.api.types.is_numeric_dtype(t[c])]
    # a trace of launches: the spread of each kernel's launch times beside their mean (a GPU summary
    # brings its own Min and Max per kernel among ``numeric``)
    spread = {} if trace.per_kernel or "duration_ns" not in numeric else {
        "min_duration_ns": ("duration_ns", "min"), "max_duration_ns": ("duration_ns", "max")}
    named = {
        **{c: (c, "mean") for c in numeric}, **spread,
        # a trace has a row per launch; a GPU summary has a row per kernel with its Calls
        "_launches": ("invocations", "sum") if trace.per_kernel else ("kernel_name", "size"),
        "device": ("device", "first") if "device" in t.columns else ("kernel_name", lambda s: None),
        "kernel_name": ("kernel_name", "first"),
        "_first_row": ("source_row", "min"),
    }
    firsts = _first_texts(t, codes, [c for c in ("device", "kernel_name") if c in t.columns])
    agg = t.groupby(np.where(codes >= 0, codes, np.nan), sort=False).agg(  # NaN: no signature, no group
        **{name: how for name, how in named.items() if name not in firsts})
    agg = agg.assign(**firsts)[list(named)]
    agg.index = signatures[agg.index.to_numpy().astype(np.intp)].rename("_full")
    agg = agg.reset_index()
    m = metrics.frame.copy()
    found = match_names(m["kernel_name"].astype(str).unique(), agg["kernel_name"].astype(str))
    full_of = dict(zip(agg["kernel_name"].astype(str), agg["_full"]))
    m["_match"] = m["kernel_name"].astype(str).map(
        {name: full_of[f.right] for name, f in found.items() if f.right is not None}).astype(object)
    ambiguous = [f for f in found.values() if f.ambiguous or (f.right is None and f.candidates)]
    if ambiguous:
        for f in ambiguous[:10]:
            warnings.append(f"{metrics.info.path}: kernel {_display(f.left)} could be any of "
                            f"{', '.join(_display(c) for c in f.candidates)} in the trace {trace.info.path}; "
                            "kept unjoined (no measured duration), the trace kernels are kept without counters")
        if len(ambiguous) > 10:
            warnings.append(f"{metrics.info.path}: {len(ambiguous) - 10} more kernels kept unjoined for the same reason")
    trace_cols = [c for c in agg.columns if c not in ("kernel_name", "_first_row")]
    joined = m.merge(agg[trace_cols].rename(columns={"_full": "_match"}), on="_match", how="left", suffixes=("", "_trace"))
    joined = fold_suffixed(joined, "_trace")
    joined["metrics_invocations"] = joined["invocations"]
    joined["invocations"] = joined["_launches"].combine_first(joined["invocations"])
    differ = joined["_launches"].notna() & (joined["_launches"] != joined["metrics_invocations"])
    if differ.any():
        warnings.append(
            f"{metrics.info.path}: {int(differ.sum())} kernel(s) have a different launch count in the trace "
            f"{trace.info.path} than in the metrics Invocations column; invocations uses the trace count"
        )
    ambiguous_names = {f.left for f in ambiguous}
    unmatched_m = joined.loc[joined["_match"].isna() & ~joined["kernel_name"].astype(str).isin(ambiguous_names),
                             "kernel"].tolist()
    if unmatched_m:
        warnings.append(f"{metrics.info.path}: {len(unmatched_m)} kernel(s) not in the trace {trace.info.path} "
                        f"(no measured duration): {', '.join(unmatched_m[:5])}")
    only_trace = agg.loc[~agg["_full"].isin(set(joined["_match"].dropna()))]
    out = joined.drop(columns=["_match", "_launches"])
    levels = pd.Series([f.key for f in found.values() if f.right is not None]).value_counts()
    how = ", ".join(f"{n} on {_KEY_WORDS[k]}" for k, n in levels.items())
    if trace.per_kernel:
        metrics.info.notes.append(f"joined with the GPU summary {trace.info.path} on kernel name "
                                  f"({how or 'no kernel paired'}); duration is the summary's Avg per kernel")
        trace.info.notes.append(f"joined to the metrics {metrics.info.path} (its durations, not counted again)")
    else:
        metrics.info.notes.append(f"joined with the trace {trace.info.path} on kernel name ({how or 'no kernel paired'}); "
                                  f"duration and launch shape are the trace's per-kernel averages (the shortest and "
                                  "longest launch kept beside them)")
        trace.info.notes.append(f"averaged per kernel to join the metrics {metrics.info.path}")
    if not only_trace.empty:
        names = short_names(only_trace["kernel_name"]).tolist()
        warnings.append(f"{trace.info.path}: {len(names)} kernel(s) in the trace but not in the metrics "
                        f"{metrics.info.path}, kept without counters: {', '.join(names[:5])}")
        extra = only_trace.rename(columns={"_launches": "invocations", "_first_row": "source_row"})
        extra = extra.drop(columns=["_full"])
        extra["kernel_id"] = extra["kernel_name"]
        extra["source"] = trace.info.path
        out = pd.concat([out, extra], ignore_index=True, sort=False)
    notes: list[str] = []
    out = canonicalize(out, {**metrics.kinds, **trace.kinds}, notes)
    metrics.info.notes.extend(n for n in notes if n not in metrics.info.notes)
    return out


def _join_launch_counters(counters: Parsed, trace: Parsed, warnings: list[str]) -> pd.DataFrame:
    """Per-launch counters joined to the trace launch by launch: the n-th launch of a kernel in one file is
    the n-th launch of the same kernel (names.match_names) in the other, when both hold as many launches of
    it. Otherwise that kernel's counters are averaged over its launches and given to each of its trace
    launches, with a warning; a kernel in only one file is kept (listed in the warnings)."""
    from nvperf_bridge.names import match_names

    t = _with_derived(trace.frame.copy())
    c = _with_derived(counters.frame.copy())
    found = match_names(c["kernel_name"].astype(str).unique(), t["kernel_name"].astype(str).unique())
    c["_key"] = c["kernel_name"].astype(str).map({n: f.right for n, f in found.items() if f.right is not None})
    t["_key"] = t["kernel_name"].astype(str)
    c["_n"] = c.groupby("_key", dropna=False).cumcount()
    t["_n"] = t.groupby("_key").cumcount()
    per_key_c = c["_key"].value_counts()
    per_key_t = t["_key"].value_counts()
    same = per_key_c.index[per_key_c.eq(per_key_t.reindex(per_key_c.index))]
    counter_cols = [col for col in c.columns if col not in IDENTITY_COLUMNS and col not in ("_key", "_n")
                    and col not in ("Context", "Stream")]
    by_launch = c.loc[c["_key"].isin(same), ["_key", "_n", *counter_cols]]
    averaged_keys = [k for k in per_key_c.index if k not in set(same) and k in per_key_t.index]
    by_kernel = c.loc[c["_key"].isin(averaged_keys)].groupby("_key")[counter_cols].mean(numeric_only=True)
    out = t.merge(by_launch, on=["_key", "_n"], how="left", suffixes=("", "_counters"))
    if averaged_keys:
        fill = t[["_key"]].join(by_kernel, on="_key")
        for col in by_kernel.columns:
            out[col] = out[col].combine_first(fill[col]) if col in out.columns else fill[col]
        warnings.append(f"{counters.info.path}: {len(averaged_keys)} kernel(s) have another launch count than in the "
                        f"trace {trace.info.path} ({', '.join(short_names(pd.Series(averaged_keys)).tolist()[:5])}); "
                        "their counters are averaged over their launches, not matched launch by launch")
    out = fold_suffixed(out, "_counters")
    unmatched = c.loc[c["_key"].isna()]
    ambiguous = [f for f in found.values() if f.right is None and f.candidates]
    for f in ambiguous[:10]:
        warnings.append(f"{counters.info.path}: kernel {_display(f.left)} could be any of "
                        f"{', '.join(_display(x) for x in f.candidates)} in the trace {trace.info.path}; kept unjoined")
    if not unmatched.empty:
        names = short_names(unmatched["kernel_name"].drop_duplicates()).tolist()
        if len(names) > len(ambiguous):
            warnings.append(f"{counters.info.path}: {len(names)} kernel(s) not in the trace {trace.info.path} "
                            f"(no measured duration): {', '.join(names[:5])}")
        out = pd.concat([out, unmatched], ignore_index=True, sort=False)
    joined = int(c["_key"].isin(same).sum())
    counters.info.notes.append(f"joined with the trace {trace.info.path} launch by launch: {joined} of {len(c)} "
                               "launches matched by kernel name and launch order")
    trace.info.notes.append(f"per-launch counters of {counters.info.path} joined to its launches")
    notes: list[str] = []
    out = canonicalize(out.drop(columns=["_key", "_n"]), {**counters.kinds, **trace.kinds}, notes)
    counters.info.notes.extend(n for n in notes if n not in counters.info.notes)
    return out


# ---- one value per column when two files hold it --------------------------------

def fold_suffixed(frame: pd.DataFrame, suffix: str) -> pd.DataFrame:
    """Fold each ``<col><suffix>`` column (the second file's value after a merge) into ``<col>``.

    A counted value beats a derived one whichever file holds it: a DRAM byte count from one ncu file
    replaces the other file's Memory Throughput x duration, which carries the measured time. Between
    two counted (or two derived) values the first file's wins, and a missing value is filled from the
    other file. The ``derived`` marks (derivations.TIME_MARK included) follow the value kept, so a counted
    value is never blanked as time-derived and a derived one never passes as counted. Both frames
    merged must have carried a ``derived`` column (``_with_derived``), or the marks would be taken for
    the wrong file's.
    """
    pairs = [(c[: -len(suffix)], c) for c in frame.columns
             if c.endswith(suffix) and c != "derived" + suffix and c[: -len(suffix)] in frame.columns]
    left_marks = _derived_marks(frame["derived"] if "derived" in frame.columns else None)
    right_marks = _derived_marks(frame["derived" + suffix] if "derived" + suffix in frame.columns else None)
    if not left_marks and not right_marks:  # nothing derived on either side: the first file's value, else the other's
        for base, other in pairs:
            frame[base] = frame[base].combine_first(frame[other])
        return frame.drop(columns=[other for _, other in pairs] + (["derived" + suffix] if "derived" + suffix in frame.columns else []))
    none = pd.Series("", index=frame.index, dtype=object)
    kept: dict[str, pd.Series] = {**left_marks, **{c: m for c, m in right_marks.items() if c not in left_marks}}
    for base, other in pairs:
        left_mark, right_mark = left_marks.get(base, none), right_marks.get(base, none)
        right_there = frame[other].notna()
        take_right = right_there & (frame[base].isna() | ((left_mark != "") & (right_mark == "")))
        frame[base] = frame[base].mask(take_right, frame[other])
        kept[base] = left_mark.mask(take_right, right_mark)
    text = np.full(len(frame), "", dtype=object)
    for mark in kept.values():
        m = mark.to_numpy(dtype=object)
        text = np.where(m == "", text, np.where(text == "", m, text + "; " + m))
    frame["derived"] = pd.Series(text, index=frame.index, dtype=object).replace("", None)
    drop = [other for _, other in pairs] + (["derived" + suffix] if "derived" + suffix in frame.columns else [])
    return frame.drop(columns=drop)


def _with_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``derived`` column (all counted when it had none), so a merge suffixes both sides'."""
    if "derived" not in frame.columns:
        frame["derived"] = pd.Series(None, index=frame.index, dtype=object)
    return frame


def _derived_marks(derived: pd.Series | None) -> dict[str, pd.Series]:
    """Per derived column, each row's mark in a ``derived`` column: '' (counted), 'col' or 'col (time)'."""
    if derived is None or not derived.notna().any():
        return {}
    labels = derived.dropna().astype(str).str.split("; ").explode()
    labels = labels[labels != ""]
    columns = labels.str.removesuffix(TIME_MARK)
    return {column: group.groupby(level=0).first().reindex(derived.index, fill_value="").astype(object)
            for column, group in labels.groupby(columns.to_numpy(), sort=False)}


# ---- ncu files of one run ------------------------------------------------------

def _keys(p: Parsed) -> set[tuple[str, str]]:
    return set(zip(p.frame["kernel_id"].astype(str), p.frame["kernel_name"].astype(str)))


def _metric_columns(p: Parsed) -> frozenset[str]:
    return frozenset(c for c in p.frame.columns if c not in IDENTITY_COLUMNS)


def _ncu_groups(files: list[Parsed]) -> list[list[Parsed]]:
    """Files that share most launches but hold different metrics belong to one run.

    A file joins the first earlier group whose first file shares at least half
    of the smaller launch list and holds other metrics. Groups are found through
    an index from launch key to the groups whose first file has it (split by
    metric set), so only groups that share a launch and differ in metrics are
    looked at: near-linear in the number of files (1,000 one-kernel files of
    different runs are not compared pairwise).
    """
    if len(files) < 2:
        return [[p] for p in files]  # nothing to join (at 100k launches the index below took 0.2 s)
    groups: list[list[Parsed]] = []
    head_keys: list[set[tuple[str, str]]] = []
    index: dict[tuple[str, str], dict[frozenset[str], list[int]]] = {}
    for p in files:
        keys = _keys(p)
        metrics = _metric_columns(p)
        shared: dict[int, int] = {}
        for key in keys:
            for signature, members in index.get(key, {}).items():
                if signature == metrics:
                    continue
                for g in members:
                    shared[g] = shared.get(g, 0) + 1
        target = None
        for g in sorted(shared):
            if shared[g] >= _MIN_OVERLAP * min(len(keys), len(head_keys[g])):
                target = g
                break
        if target is not None:
            groups[target].append(p)
            continue
        groups.append([p])
        head_keys.append(keys)
        for key in keys:
            index.setdefault(key, {}).setdefault(metrics, []).append(len(groups) - 1)
    return groups


def _join_launches(group: list[Parsed], warnings: list[str]) -> pd.DataFrame:
    out = _with_derived(group[0].frame.copy())
    out["__left"] = True
    for other in group[1:]:
        right = _with_derived(other.frame.copy())
        right["__right"] = True
        merged = out.merge(right, on=_LAUNCH_KEY, how="outer", suffixes=("", "_other"), sort=False)
        merged = fold_suffixed(merged, "_other")
        only_left = int((merged["__right"].isna()).sum())
        only_right = int((merged["__left"].isna()).sum())
        if only_left or only_right:
            warnings.append(
                f"{other.info.path}: launch lists differ from {group[0].info.path}: {only_left} launch(es) only in "
                f"the first, {only_right} only in this file (joined on ID and kernel name; kept with missing values)"
            )
        merged["__left"] = True
        out = merged.drop(columns=["__right"])
        other.info.notes.append(f"joined with {group[0].info.path} on launch ID and kernel name")
    out = out.drop(columns=["__left"])
    kinds: dict[str, str] = {}
    for p in group:
        kinds.update(p.kinds)
    notes: list[str] = []
    out = canonicalize(out, kinds, notes)
    group[0].info.notes.extend(n for n in notes if n not in group[0].info.notes)
    return out


def _unique_ids(kernels: pd.DataFrame) -> pd.DataFrame:
    """Prefix clashing ids with their file name (ncu numbers every file's launches from 0)."""
    if kernels.empty or not kernels["kernel_id"].duplicated().any():
        return kernels
    kernels = kernels.copy()
    clash = kernels["kernel_id"].duplicated(keep=False)
    sources = kernels.loc[clash, "source"].astype(str)
    stems = sources.map({s: Path(s).name for s in sources.unique()})
    kernels.loc[clash, "kernel_id"] = stems + ":" + kernels.loc[clash, "kernel_id"].astype(str)
    if kernels["kernel_id"].duplicated().any():
        kernels["kernel_id"] = kernels["kernel_id"] + "#" + kernels.groupby("kernel_id").cumcount().astype(str)
    return kernels


# ---- overlapping inputs of one run ---------------------------------------------

def drop_overlaps(parsed: list[Parsed], warnings: list[str]) -> list[Parsed]:
    """The inputs without those that repeat another input of the same run, each drop noted on its file.

    * A file whose kernel table is the same as an earlier input's (the same
      file passed twice under two names, a copy in another folder) is not
      counted again.
    * An nvprof GPU summary of the run a GPU trace also covers (the same
      kernels, each with as many Calls as the trace has launches) is not
      counted: the trace holds the same launches one by one. A summary that
      shares kernels with a trace but not their launch counts is another run:
      both are kept, with a warning that those kernels appear in both.
    """
    kept: list[Parsed] = []
    shapes: dict[tuple, list[Parsed]] = {}
    hashes: dict[int, int] = {}
    for p in parsed:
        # only files of the same layout, size and columns are hashed: most runs have none such
        columns = p.columns  # a trace's launch ids are not made to be counted
        shape = (p.info.format, (len(p.lean), len(columns)), tuple(c for c in columns if c != "source"))
        twin = next((q for q in shapes.get(shape, []) if _content_hash(q, hashes) == _content_hash(p, hashes)), None)
        if twin is not None:
            _mark_dropped(p, f"not counted: the same {len(p.frame)} kernel rows as {twin.info.path} "
                             "(the same file given twice?)")
            continue
        shapes.setdefault(shape, []).append(p)
        kept.append(p)
    traces = [p for p in kept if p.info.format in TRACE_FORMATS]
    if not traces or not any(p.info.format == "nvprof-summary" for p in kept):
        return kept  # no GPU summary to hold against a trace: a trace's launches are not counted for nothing
    out: list[Parsed] = []
    launches = [(t, _launch_counts(t, per_kernel=False)) for t in traces]
    for p in kept:
        if p.info.format != "nvprof-summary":
            out.append(p)
            continue
        calls = _launch_counts(p, per_kernel=True)
        same = next((t for t, counts in launches if counts.equals(calls)), None)
        if same is not None:
            _mark_dropped(p, f"not counted: the same run as the trace {same.info.path} (the same {len(calls)} kernels "
                             f"and {int(calls.sum()):,} launches); the trace's launches are used")
            same.info.notes.append(f"the GPU summary {p.info.path} of the same run was not counted again")
            continue
        for t, counts in launches:
            shared = calls.index.intersection(counts.index)
            if len(shared):
                warnings.append(f"{p.info.path}: {len(shared)} kernel(s) of this GPU summary are also in the trace "
                                f"{t.info.path} with other launch counts (another run?): both are kept, so those "
                                "kernels are counted in both")
        out.append(p)
    return out


def _content_hash(p: Parsed, cache: dict[int, int]) -> int:
    """A hash of what a file contributed, without where it came from (equal: the same table read twice)."""
    if id(p) not in cache:
        frame = p.frame.drop(columns=[c for c in ("source",) if c in p.frame.columns])
        cache[id(p)] = int(pd.util.hash_pandas_object(frame.astype(str), index=False).sum())
    return cache[id(p)]


def _launch_counts(p: Parsed, *, per_kernel: bool) -> pd.Series:
    """Launches per kernel signature (names.py), sorted by signature: a trace counts its rows, a summary
    sums its Calls."""
    if per_kernel:
        signature = _signatures(p.frame["kernel_name"])
        counts = p.frame["invocations"].groupby(signature.to_numpy()).sum()
    else:  # the signatures' value_counts, counted by code (a trace repeats a few signatures a million times)
        codes, signatures = _signature_codes(p)
        counts = pd.Series(np.bincount(codes[codes >= 0], minlength=len(signatures)), index=signatures)
    return counts.astype("int64").sort_index().rename(None).rename_axis(None)


def _mark_dropped(p: Parsed, note: str) -> None:
    p.info.notes.append(note)
    p.info.kernels = 0

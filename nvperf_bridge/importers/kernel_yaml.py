"""kernel-yaml: hand-written kernel records (the papers' worked examples, what-if studies).

    device: "GeForce GTX 280"     # optional: device name, used to pick the GPU profile
    gpu: gtx280                   # optional: GPU profile id hint
    kernels:
      - kernel_name: "matrixMul"  # canonical column names (nvperf_bridge/columns.py)
        grid_blocks: 80
        block_threads: 128
        inst_executed: 1.2e6
        my_note: "tiled"          # other keys are kept as raw columns (numbers or strings)

Read with ``yaml.safe_load`` only. Wrong types give an InputError that names
the file, the item index and its line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from nvperf_bridge.columns import CANONICAL_COLUMNS
from nvperf_bridge.errors import InputError
from nvperf_bridge.importers.errors import brief
from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.importers.canonical import canonicalize, finish, record_coverage
from nvperf_bridge.kernelframe import InputFile

FORMAT = "kernel-yaml"
TOP_LEVEL_KEYS = ("kernels", "device", "gpu", "cc", "notes", "schema_version")
# `kernels:` then a block list (blank and comment lines may sit between) or a flow list
_KERNELS_LIST = re.compile(r"^kernels\s*:[ \t]*(?:#[^\n]*)?\n(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*- |^kernels\s*:[ \t]*\[",
                           re.M)
_EXAMPLE = "expected a YAML mapping with a `kernels:` list of mappings keyed by canonical column names"


def looks_like(text: str) -> bool:
    """True when the text is a YAML document with a top-level ``kernels:`` list.

    The key must open a list (block items on the following lines, or a flow
    ``[``), so prose that merely starts a line with "kernels:" (a README beside
    the data) is not taken for a kernel table.
    """
    return _KERNELS_LIST.search(text) is not None


def read(path: Path, text: str) -> Parsed:
    """Parse one kernel-yaml file into a canonical frame."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"not valid YAML: {problem}", path=path, line=line, hint=_EXAMPLE) from None
    if not isinstance(doc, dict) or "kernels" not in doc:
        raise InputError("no top-level `kernels:` list", path=path, hint=_EXAMPLE)
    unknown_top = [k for k in doc if k not in TOP_LEVEL_KEYS]
    if unknown_top:
        raise InputError(f"unknown top-level key {brief(unknown_top[0])}", path=path, line=_key_line(text, [str(unknown_top[0])]),
                         hint=f"allowed: {', '.join(TOP_LEVEL_KEYS)}")
    items = doc["kernels"]
    if not isinstance(items, list) or not items:
        raise InputError("`kernels:` must be a non-empty list of mappings", path=path,
                         line=_key_line(text, ["kernels"]), hint=_EXAMPLE)
    device = _optional_str(doc, "device", path, text)
    gpu = _optional_str(doc, "gpu", path, text)
    lines = _item_lines(text)
    records = []
    for index, item in enumerate(items):
        line = lines[index] if index < len(lines) else None
        records.append(_validate_item(item, index, path, line))
    frame = pd.DataFrame.from_records(records)
    if "kernel_name" not in frame.columns:
        frame["kernel_name"] = frame.get("kernel")
    frame["kernel_name"] = frame["kernel_name"].combine_first(frame.get("kernel", frame["kernel_name"]))
    positions = pd.Series([str(i) for i in range(len(frame))], index=frame.index)
    frame["kernel_id"] = frame["kernel_id"].astype(object).combine_first(positions) if "kernel_id" in frame.columns else positions
    if frame["kernel_id"].duplicated().any():
        dup = frame.loc[frame["kernel_id"].duplicated(), "kernel_id"].iloc[0]
        raise InputError(f"kernel_id {brief(dup)} is used by more than one item", path=path,
                         line=lines[int(frame.index[frame["kernel_id"].duplicated()][0])] if lines else None)
    frame["source"] = str(path)
    frame["source_row"] = [ln if ln is not None else 0 for ln in (lines + [None] * len(frame))[: len(frame)]]
    label = device if device is not None else gpu  # the gpu id is the device hint when no name is given
    if label is not None:
        frame["device"] = frame["device"].fillna(label) if "device" in frame.columns else label
    if doc.get("cc") is not None:
        frame["cc"] = frame["cc"].fillna(str(doc["cc"])) if "cc" in frame.columns else str(doc["cc"])
    notes: list[str] = []
    info = InputFile(path=str(path), format=FORMAT, kernels=0, device=device or gpu, notes=notes)
    record_coverage(frame, {}, info)  # inspect's coverage line: every key mapped or listed by name
    frame = finish(canonicalize(frame, {}, notes))
    if gpu is not None:
        notes.append(f"gpu profile hint: {gpu}")
    info.kernels = len(frame)
    return Parsed(frame=frame, info=info, per_kernel=bool((frame["invocations"] > 1).any()), join="none")


def _optional_str(doc: dict, key: str, path: Path, text: str) -> str | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, (dict, list, bool)):
        raise InputError(f"`{key}:` must be a string", path=path, line=_key_line(text, [key]))
    return str(value)


def _validate_item(item: Any, index: int, path: Path, line: int | None) -> dict[str, Any]:
    where = f"kernels[{index}]"
    if not isinstance(item, dict):
        raise InputError(f"{where} is a {type(item).__name__}, expected a mapping of column: value",
                         path=path, line=line, hint=_EXAMPLE)
    if "kernel_name" not in item and "kernel" not in item:
        raise InputError(f"{where} has no `kernel_name` (or `kernel`)", path=path, line=line)
    record: dict[str, Any] = {}
    for key, value in item.items():
        name = str(key)
        column = CANONICAL_COLUMNS.get(name)
        record[name] = _check_value(name, value, column.dtype if column else None, where, path, line)
    return record


def _check_value(name: str, value: Any, dtype: str | None, where: str, path: Path, line: int | None) -> Any:
    if value is None:
        return None  # written as `~` or left empty: missing, never 0
    bad = isinstance(value, (dict, list, tuple, set)) or isinstance(value, bool)
    if dtype == "str":
        if bad:
            raise InputError(f"{where}.{name} must be text, got {type(value).__name__}", path=path, line=line)
        return str(value)
    if dtype in ("int", "float"):
        if isinstance(value, str):
            # PyYAML reads 1.5e5 (no sign in the exponent) as text; accept plain numeric text
            value = _numeric_text(value)
        if bad or not isinstance(value, (int, float)):
            raise InputError(f"{where}.{name} must be a number, got {brief(value)}", path=path, line=line,
                             hint=f"{name} is a canonical column of type {dtype}")
        if dtype == "int" and float(value) != int(value):
            raise InputError(f"{where}.{name} must be a whole number, got {brief(value)}", path=path, line=line)
        if float(value) < 0:
            raise InputError(f"{where}.{name} must not be negative, got {brief(value)}", path=path, line=line)
        return float(value)
    # not a canonical column: kept as a raw column, numbers or strings only
    if bad or not isinstance(value, (int, float, str)):
        raise InputError(f"{where}.{name} must be a number or a string, got {type(value).__name__}",
                         path=path, line=line, hint="only canonical columns and plain raw values are allowed")
    return value


def _numeric_text(value: str) -> float | str:
    import math

    try:
        number = float(value.replace("_", ""))
    except ValueError:
        return value
    return number if math.isfinite(number) else value


def _item_lines(text: str) -> list[int]:
    """1-based line of each item of the `kernels:` list (via the safe composer)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if getattr(key, "value", None) == "kernels" and isinstance(value, yaml.SequenceNode):
            return [node.start_mark.line + 1 for node in value.value]
    return []


def _key_line(text: str, keys: list[str]) -> int | None:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if isinstance(root, yaml.MappingNode):
        for key, _ in root.value:
            if getattr(key, "value", None) in keys:
                return key.start_mark.line + 1
    return None

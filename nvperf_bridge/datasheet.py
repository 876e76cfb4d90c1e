"""GPU profiles generated from one sourced datasheet table, and the architecture fallback.

``data/gpu_datasheet.csv`` holds the datasheet facts of CUDA GPUs from Kepler on
(compute capability, SM count, base and boost clocks, memory bandwidth and bus
width, L2 size, memory size), one row per board with its source.
``data/architectures.yaml`` holds what a board inherits from its compute
capability and architecture: FP32 lanes and FP64 units per SM, the coalescing
threshold, and the architecture's model constants (``models:``). The per-SM
limits come from the occupancy table (``data/compute_capabilities.csv``).
``profile_mapping`` turns each row into a profile mapping, which ``gpu.datasheet_profiles``
validates as a :class:`GpuProfile`; a hand-written profile in ``profiles/`` with the same id
replaces it (``gpu.load_profiles``). This module never imports ``gpu``: profiles are built
on top of the data, not the other way round.

A device no profile names falls back to its architecture: the compute
capability from the data (ncu's ``CC`` column, kernel-yaml ``cc``) or from the
device name (``name_patterns``), then that compute capability's representative
board, with a note saying whose SM count, clocks and bandwidth are used.
Everything is read on first use, never at import.
"""

from __future__ import annotations

import csv
import functools
import re
from importlib import resources
from typing import Any, Iterable

from nvperf_bridge.errors import ProfileError
from nvperf_bridge.yaml_io import safe_load

DATASHEET_FILE = "gpu_datasheet.csv"
ARCHITECTURES_FILE = "architectures.yaml"

_GUIDE_LIMITS = ("NVIDIA CUDA C++ Programming Guide, 'Technical Specifications per Compute Capability' table "
                 "(nvperf_bridge/data/compute_capabilities.csv, row {cc})")
_GUIDE_ARITH = ("NVIDIA CUDA C++ Programming Guide, 'Arithmetic Instructions' throughput table, compute "
                "capability {cc} (nvperf_bridge/data/architectures.yaml)")


def _data_text(name: str) -> str:
    return (resources.files("nvperf_bridge") / "data" / name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def architectures() -> dict[str, Any]:
    """``data/architectures.yaml``, parsed once."""
    data = safe_load(_data_text(ARCHITECTURES_FILE))
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise ProfileError("expected schema_version: 1", path=f"nvperf_bridge/data/{ARCHITECTURES_FILE}")
    return data


@functools.lru_cache(maxsize=1)
def datasheet_rows() -> tuple[dict[str, str], ...]:
    """The rows of ``data/gpu_datasheet.csv`` (comment lines skipped), each with its line number."""
    rows = []
    lines = _data_text(DATASHEET_FILE).splitlines()
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip() and not line.startswith("#")]
    reader = csv.DictReader(line for _, line in numbered)
    for (lineno, _), row in zip(numbered[1:], reader):
        rows.append({**row, "_line": str(lineno)})
    return tuple(rows)


def _number(text: str) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def _int_or_float(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def inherited_constants(cc: str) -> dict[str, Any]:
    """The ``models:`` map a profile of compute capability ``cc`` inherits: its architecture's,
    under the compute capability's own ``models:`` where a chip of that architecture differs
    (GP100's 64 FP32 lanes per SM against GP10x's 128, for example)."""
    spec = architectures()["compute_capabilities"].get(cc)
    if spec is None:
        return {}
    arch = architectures()["architectures"].get(spec["architecture"], {})
    return merge_constants({model: dict(constants) for model, constants in (arch.get("models") or {}).items()},
                           spec.get("models"))


def merge_constants(inherited: dict[str, Any], own: dict[str, Any] | None) -> dict[str, Any]:
    """A profile's ``models:`` over its architecture's, constant by constant (the profile's win)."""
    merged = {model: dict(constants) for model, constants in inherited.items()}
    for model, constants in (own or {}).items():
        merged.setdefault(model, {}).update(constants or {})
    return merged


def profile_mapping(row: dict[str, str]) -> dict[str, Any]:
    """The profile document (as a YAML file would hold it) for one datasheet row."""
    from nvperf_bridge.occupancy import cc_limits

    cc = row["cc"].strip()
    per_cc = architectures()["compute_capabilities"].get(cc)
    where = f"nvperf_bridge/data/{DATASHEET_FILE}:{row['_line']}"
    if per_cc is None:
        raise ProfileError(f"compute capability {cc!r} has no entry in {ARCHITECTURES_FILE}", path=where, key="cc")
    arch = architectures()["architectures"][per_cc["architecture"]]
    limits = cc_limits(cc)
    base, boost = _number(row["base_clock_mhz"]), _number(row["boost_clock_mhz"])
    default_clock = row["default_clock"].strip()
    clock = boost if default_clock == "boost" and boost else base
    source = row["source"].strip()
    limits_source = _GUIDE_LIMITS.format(cc=limits.cc)
    arith_source = _GUIDE_ARITH.format(cc=cc)
    data: dict[str, Any] = {
        "schema_version": 1, "id": row["id"].strip(), "name": row["name"].strip(),
        "match": [row["name"].strip(), *[m.strip() for m in row["match"].split(";") if m.strip()]],
        "architecture": arch["name"], "compute_capability": cc,
        "sm_count": int(row["sm_count"]), "cores_per_sm": int(per_cc["cores_per_sm"]),
        "warp_size": limits.warp_size, "max_warps_per_sm": limits.max_warps_per_sm,
        "max_blocks_per_sm": limits.max_blocks_per_sm, "max_threads_per_block": limits.max_threads_per_block,
        "registers_per_sm": limits.registers_per_sm, "shared_mem_per_sm_bytes": limits.shared_mem_per_sm_bytes,
        "max_shared_mem_per_block_bytes": limits.max_shared_mem_per_block_optin_bytes,
        "sm_clock_mhz": _int_or_float(clock),
        "memory_bandwidth_gb_per_s": _int_or_float(float(row["memory_bandwidth_gb_per_s"])),
        "fp64_units_per_sm": int(_number(row.get("fp64_units_per_sm", "")) or per_cc["fp64_units_per_sm"]),
        "coalesced_sectors_per_request": arch["coalesced_sectors_per_request"],
    }
    if base:
        data["base_clock_mhz"] = _int_or_float(base)
    if boost:
        data["boost_clock_mhz"] = _int_or_float(boost)
    optional = {"memory_bus_width_bits": ("memory_bus_width_bits", 1), "l2_cache_bytes": ("l2_cache_kb", 1024),
                "memory_gb": ("memory_gb", 1)}
    for key, (column, scale) in optional.items():
        value = _number(row.get(column, ""))
        if value is not None:
            data[key] = int(value * scale) if key != "memory_gb" else _int_or_float(value)
    clock_note = (f"{'GPU Boost clock' if clock == boost else 'base clock'} {clock:g} MHz: the clock it runs "
                  f"kernels at by default ({default_clock}); a measured sm_clock_hz in the data wins. {source}")
    sources = {key: source for key in ("sm_count", "memory_bandwidth_gb_per_s", "base_clock_mhz", "boost_clock_mhz",
                                       *optional) if key in data}
    sources.update({key: limits_source for key in ("compute_capability", "warp_size", "max_warps_per_sm",
                                                   "max_blocks_per_sm", "max_threads_per_block", "registers_per_sm",
                                                   "shared_mem_per_sm_bytes", "max_shared_mem_per_block_bytes")})
    sources["compute_capability"] = f"{source}; NVIDIA CUDA GPUs list, https://developer.nvidia.com/cuda-gpus"
    sources["cores_per_sm"] = arith_source
    sources["fp64_units_per_sm"] = source if _number(row.get("fp64_units_per_sm", "")) else arith_source
    sources["sm_clock_mhz"] = clock_note
    sources["coalesced_sectors_per_request"] = arch["coalesced_source"]
    data["sources"] = sources
    data["notes"] = f"Generated from {where} (datasheet row) and the {arch['name']} defaults in {ARCHITECTURES_FILE}."
    constants = inherited_constants(cc)
    if constants:
        data["models"] = constants
    return data


def cc_from_name(device: str) -> str | None:
    """The compute capability a device name implies (``name_patterns``), or None."""
    for entry in architectures()["name_patterns"]:
        if re.search(entry["pattern"], device, flags=re.IGNORECASE):
            return str(entry["cc"])
    return None


def fallback_profile(devices: Iterable[str], ccs: Iterable[str], profiles: dict[str, Any]) -> Any | None:
    """A profile for devices no profile names: the representative board of their compute
    capability (from the data, else from the name), with ``fallback_note`` saying so; None
    when neither the data nor the name tells the compute capability."""
    import dataclasses

    devices = [d for d in devices if d]
    known = architectures()["compute_capabilities"]
    cc, how = None, ""
    for value in ccs:
        text = str(value).strip()
        if text in known:
            cc, how = text, f"compute capability {text} in the data"
            break
    if cc is None:
        for device in devices:
            found = cc_from_name(device)
            if found:
                cc, how = found, f"compute capability {found} from the name {device!r}"
                break
    if cc is None:
        return None
    representative = profiles.get(known[cc]["representative"])
    if representative is None:
        return None
    arch = architectures()["architectures"][known[cc]["architecture"]]["name"]
    named = repr(devices[0]) if devices else "the device"
    note = (f"no GPU profile names {named}: using the {arch} fallback ({how}), the {representative.name} profile "
            f"({representative.id}), whose SM count ({representative.sm_count}), clock "
            f"({representative.sm_clock_mhz:g} MHz) and bandwidth ({representative.memory_bandwidth_gb_per_s:g} GB/s) "
            "may not be your GPU's: pass --gpu ID or --gpu your.yaml for exact predictions")
    return dataclasses.replace(representative, fallback_note=note)

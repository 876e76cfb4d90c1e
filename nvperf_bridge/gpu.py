"""GPU profiles: one YAML file per GPU, validated on load, picked from the data.

A profile holds the hardware facts every model needs (SM count, warp and block
limits, clock, memory bandwidth; each with its source) and, under
``models:``, each model's machine constants keyed by model id. A constant is
written ``name: {value: X, source: "where it comes from"}`` with an optional
``status`` (``paper``, ``measured``, ``calibrated`` or ``default``).
Constants a profile does not give fall back to the model's own documented
default, and reports say so (status ``default``: calibrate before trusting).
Under ``model_options:`` a profile may give model options (``hong-kim: {case_selection:
section-3.2}``): a calibrated profile records there the options ``calibrate`` chose on its
training data; ``analyze`` applies them under the user's own ``--option``, which wins.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from nvperf_bridge.errors import ProfileError, UsageError
from nvperf_bridge.yaml_io import safe_load, yaml_error

SCHEMA_VERSION = 1

# field -> (python types accepted, required?)
_NUM = (int, float)
PROFILE_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "schema_version": ((int,), True),
    "id": ((str,), True),
    "name": ((str,), True),
    "match": ((list,), True),
    "match_exclude": ((list,), False),
    "compute_capability": ((str,), True),
    "sm_count": ((int,), True),
    "cores_per_sm": ((int,), True),
    "max_warps_per_sm": ((int,), True),
    "max_blocks_per_sm": ((int,), True),
    "registers_per_sm": ((int,), True),
    "shared_mem_per_sm_bytes": ((int,), True),
    "sm_clock_mhz": (_NUM, True),
    "memory_bandwidth_gb_per_s": (_NUM, True),
    "sources": ((dict,), True),
    # optional hardware facts
    "architecture": ((str,), False),
    "hypothetical": ((bool,), False),
    "warp_size": ((int,), False),
    "max_threads_per_block": ((int,), False),
    "max_shared_mem_per_block_bytes": ((int,), False),
    "register_allocation_unit": ((int,), False),
    "shared_mem_allocation_unit_bytes": ((int,), False),
    "shared_mem_banks": ((int,), False),
    "memory_clock_mhz": (_NUM, False),
    "base_clock_mhz": (_NUM, False),
    "boost_clock_mhz": (_NUM, False),
    "memory_bus_width_bits": ((int,), False),
    "memory_gb": (_NUM, False),
    "l2_cache_bytes": ((int,), False),
    "fp64_units_per_sm": ((int,), False),
    "peak_fp32_gflops": (_NUM, False),
    "peak_fp64_gflops": (_NUM, False),
    "peak_fp16_gflops": (_NUM, False),
    "coalesced_sectors_per_request": (_NUM, False),
    "notes": ((str,), False),
    "models": ((dict,), False),
    "model_options": ((dict,), False),
    "calibration": ((dict,), False),
}

# paper: the paper's own table; measured: a microbenchmark paper or vendor measurement; datasheet:
# a vendor document; derived: computed from sourced facts by a stated formula; assumed: carried over
# from a neighbouring architecture or an order of magnitude, said where; calibrated: fitted on data
CONSTANT_STATUSES = ("paper", "measured", "datasheet", "derived", "assumed", "calibrated", "default")

# Required hardware facts: each needs an entry in ``sources`` saying where it comes from.
SOURCED_FIELDS: tuple[str, ...] = (
    "compute_capability", "sm_count", "cores_per_sm", "max_warps_per_sm", "max_blocks_per_sm",
    "registers_per_sm", "shared_mem_per_sm_bytes", "sm_clock_mhz", "memory_bandwidth_gb_per_s",
)
# Fields that describe the file itself rather than the hardware: they need no source.
_UNSOURCED_FIELDS = frozenset({"schema_version", "id", "name", "match", "match_exclude", "sources", "notes",
                               "models", "model_options", "calibration"})

_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_CC_RE = re.compile(r"^[0-9]+\.[0-9]+$")


@dataclass(frozen=True)
class ModelConstant:
    value: float
    source: str
    status: str = "paper"


@dataclass
class GpuProfile:
    """A validated GPU profile. Hardware fields are attributes; ``raw`` keeps the YAML."""

    id: str
    name: str
    match: list[str]
    compute_capability: str
    sm_count: int
    cores_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    shared_mem_per_sm_bytes: int
    sm_clock_mhz: float
    memory_bandwidth_gb_per_s: float
    sources: dict[str, str]
    path: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    model_constants: dict[str, dict[str, ModelConstant]] = field(default_factory=dict)
    # set on an architecture fallback (a device no profile names): what stands in for what, for the warnings
    fallback_note: str = ""

    # ---- optional facts with the usual defaults -------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        """An optional profile field (``warp_size``, ``peak_fp32_gflops``, ...)."""
        return self.raw.get(key, default)

    @property
    def warp_size(self) -> int:
        return int(self.raw.get("warp_size", 32))

    @property
    def max_threads_per_block(self) -> int:
        return int(self.raw.get("max_threads_per_block", 1024))

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * self.warp_size

    @property
    def sm_clock_hz(self) -> float:
        return float(self.sm_clock_mhz) * 1e6

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return float(self.memory_bandwidth_gb_per_s) * 1e9

    @property
    def peak_fp32_flop_per_s(self) -> float:
        """Peak FP32 rate: the profile's figure, else cores x SMs x 2 (FMA) x clock."""
        given = self.raw.get("peak_fp32_gflops")
        if given is not None:
            return float(given) * 1e9
        return self.cores_per_sm * self.sm_count * 2.0 * self.sm_clock_hz

    @property
    def peak_fp64_flop_per_s(self) -> float | None:
        given = self.raw.get("peak_fp64_gflops")
        if given is not None:
            return float(given) * 1e9
        units = self.raw.get("fp64_units_per_sm")
        if units is None:
            return None
        return units * self.sm_count * 2.0 * self.sm_clock_hz

    @property
    def is_calibrated(self) -> bool:
        return "calibration" in self.raw

    def constant(self, model_id: str, name: str) -> ModelConstant | None:
        """The profile's value of one model constant, or None when it gives none."""
        return self.model_constants.get(model_id, {}).get(name)

    def options_for(self, model_id: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The options ``model_id`` runs with on this profile: the profile's ``model_options`` for it
        (a calibrated profile records there the options ``calibrate`` chose on its training data),
        under ``given`` (the user's own ``--option``), which wins key by key."""
        chosen = (self.raw.get("model_options") or {}).get(model_id) or {}
        return {**chosen, **(given or {})}

    def fitted_option_names(self, model_id: str) -> set[str]:
        """The options of ``model_id`` under ``model_options`` that an earlier ``calibrate`` chose by
        its fit (its calibration block's ``models.ID.options.chosen``), not ones a person set."""
        block = ((self.raw.get("calibration") or {}).get("models") or {}).get(model_id) or {}
        return set(((block.get("options") or {}).get("chosen") or {}))

    def pinned_options_for(self, model_id: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The options a new fit must keep: ``model_options`` set by a person (a fit's own earlier
        choices are chosen again, never pinned), under ``given`` (the user's ``--option``)."""
        fitted = self.fitted_option_names(model_id)
        kept = {name: value for name, value in self.options_for(model_id).items() if name not in fitted}
        return {**kept, **(given or {})}


# ---- loading and validation --------------------------------------------------

def _check_type(path: str, key: str, value: Any, types: tuple[type, ...]) -> None:
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        names = " or ".join(t.__name__ for t in types)
        raise ProfileError(f"expected {names}, got {type(value).__name__} {value!r}", path=path, key=key)
    if isinstance(value, float) and not math.isfinite(value):
        raise ProfileError(f"value must be finite, got {value!r}", path=path, key=key)


def _parse_constants(path: str, models: Mapping[str, Any]) -> dict[str, dict[str, ModelConstant]]:
    parsed: dict[str, dict[str, ModelConstant]] = {}
    for model_id, constants in models.items():
        key = f"models.{model_id}"
        if not isinstance(constants, dict):
            raise ProfileError("expected a mapping of constant name to {value, source}", path=path, key=key)
        parsed[model_id] = {}
        for name, spec in constants.items():
            ckey = f"{key}.{name}"
            if not isinstance(spec, dict):
                raise ProfileError("expected {value: ..., source: ...}", path=path, key=ckey)
            unknown = set(spec) - {"value", "source", "status"}
            if unknown:
                raise ProfileError(f"unknown key {sorted(unknown)[0]!r}", path=path, key=ckey)
            if "value" not in spec or "source" not in spec:
                raise ProfileError("needs both 'value' and 'source'", path=path, key=ckey)
            value = spec["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ProfileError(f"value must be a number, got {value!r}", path=path, key=f"{ckey}.value")
            if not math.isfinite(float(value)):
                raise ProfileError(f"value must be finite, got {value!r}", path=path, key=f"{ckey}.value")
            status = spec.get("status", "paper")
            if status not in CONSTANT_STATUSES:
                raise ProfileError(
                    f"status must be one of {', '.join(CONSTANT_STATUSES)}, got {status!r}", path=path, key=f"{ckey}.status"
                )
            parsed[model_id][name] = ModelConstant(float(value), str(spec["source"]), status)
    return parsed


def _check_model_options(path: str, options: Mapping[str, Any]) -> None:
    """``model_options``: model id -> {option: a string, number or boolean}, as ``--option`` gives them."""
    for model_id, named in options.items():
        if not isinstance(named, dict):
            raise ProfileError("expected a mapping of option name to value", path=path, key=f"model_options.{model_id}")
        for name, value in named.items():
            if not isinstance(value, (str, int, float, bool)):
                raise ProfileError(f"an option value must be a string, number or boolean, got {value!r}",
                                   path=path, key=f"model_options.{model_id}.{name}")


@functools.lru_cache(maxsize=1)
def physical_bounds() -> dict[str, tuple[float, float, str]]:
    """Field -> (min, max, why) from ``data/profile_bounds.csv``: ranges no real GPU leaves."""
    text = (resources.files("nvperf_bridge") / "data" / "profile_bounds.csv").read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {row["field"]: (float(row["min"]), float(row["max"]), row["why"]) for row in rows}


def profile_from_mapping(data: Any, path: str = "<profile>") -> GpuProfile:
    """Validate a parsed YAML document and build the profile (errors name file and key)."""
    if not isinstance(data, dict):
        raise ProfileError("a GPU profile must be a YAML mapping", path=path)
    for key in data:
        if key not in PROFILE_FIELDS:
            raise ProfileError(f"unknown key {key!r}", path=path, key=str(key),
                               hint="see the schema in nvperf_bridge/gpu.py PROFILE_FIELDS")
    for key, (types, required) in PROFILE_FIELDS.items():
        if key not in data:
            if required:
                raise ProfileError("required field is missing", path=path, key=key)
            continue
        _check_type(path, key, data[key], types)
    if data["schema_version"] != SCHEMA_VERSION:
        raise ProfileError(f"unsupported schema_version {data['schema_version']} (this tool reads {SCHEMA_VERSION})",
                           path=path, key="schema_version")
    if not _ID_RE.match(data["id"]):
        raise ProfileError(f"id must be lowercase-kebab (letters, digits, '-'), got {data['id']!r}", path=path, key="id")
    if not _CC_RE.match(data["compute_capability"]):
        raise ProfileError(f"compute_capability must look like \"8.6\", got {data['compute_capability']!r}",
                           path=path, key="compute_capability")
    for list_key in ("match", "match_exclude"):
        values = data.get(list_key, [])
        if not all(isinstance(m, str) and _normalise(m) for m in values):
            raise ProfileError("must be a list of non-empty strings", path=path, key=list_key)
    # A calibrated profile (one with a ``calibration`` block) may have an empty match list:
    # it is chosen with --gpu and must not take auto-matching away from the stock profile.
    if not data["match"] and "calibration" not in data:
        raise ProfileError("needs at least one device-name substring", path=path, key="match")
    for key in ("sm_count", "cores_per_sm", "max_warps_per_sm", "max_blocks_per_sm", "registers_per_sm",
                "sm_clock_mhz", "memory_bandwidth_gb_per_s"):
        if data[key] <= 0:
            raise ProfileError(f"must be positive, got {data[key]!r}", path=path, key=key)
    for key, (low, high, why) in physical_bounds().items():
        value = data.get(key)
        if value is not None and not low <= value <= high:
            raise ProfileError(f"{value!r} is outside the physical range {low:g} to {high:g} ({why})",
                               path=path, key=key, hint="check the number and its unit")
    sources = data["sources"]
    for name, text in sources.items():
        if not isinstance(text, str) or not text.strip():
            raise ProfileError("every source must be a non-empty string", path=path, key=f"sources.{name}")
        if name not in PROFILE_FIELDS or name in _UNSOURCED_FIELDS:
            raise ProfileError(f"source for {name!r}, which is not a hardware field of the profile",
                               path=path, key=f"sources.{name}")
    for name in SOURCED_FIELDS:
        if name not in sources:
            raise ProfileError(f"no source for {name!r}: say where the value comes from (datasheet, whitepaper, "
                               "programming guide, paper table)", path=path, key=f"sources.{name}")
    _check_model_options(path, data.get("model_options") or {})
    # the architecture's model constants (data/architectures.yaml), under the profile's own
    from nvperf_bridge.datasheet import inherited_constants, merge_constants

    constants = _parse_constants(path, merge_constants(inherited_constants(data["compute_capability"]),
                                                       data.get("models")))
    return GpuProfile(
        id=data["id"], name=data["name"], match=list(data["match"]),
        compute_capability=data["compute_capability"], sm_count=data["sm_count"],
        cores_per_sm=data["cores_per_sm"], max_warps_per_sm=data["max_warps_per_sm"],
        max_blocks_per_sm=data["max_blocks_per_sm"], registers_per_sm=data["registers_per_sm"],
        shared_mem_per_sm_bytes=data["shared_mem_per_sm_bytes"], sm_clock_mhz=float(data["sm_clock_mhz"]),
        memory_bandwidth_gb_per_s=float(data["memory_bandwidth_gb_per_s"]), sources=dict(sources),
        path=path, raw=dict(data), model_constants=constants,
    )


def load_profile_file(path: str | Path) -> GpuProfile:
    """Read and validate one profile file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot read profile: {exc.strerror or exc}", path=path) from None
    try:
        data = safe_load(text)
    except yaml_error() as exc:  # evaluated only when parsing failed: PyYAML is imported by then
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ProfileError(f"not valid YAML: {getattr(exc, 'problem', exc)}", path=where) from None
    profile = profile_from_mapping(data, str(path))
    if profile.id != path.stem:
        raise ProfileError(f"id {profile.id!r} must equal the file name {path.stem!r}", path=path, key="id")
    return profile


def builtin_profile_dir() -> Path:
    return Path(str(resources.files("nvperf_bridge.profiles")))


@functools.lru_cache(maxsize=1)
def datasheet_profiles() -> dict[str, GpuProfile]:
    """Every row of the datasheet table (``data/gpu_datasheet.csv``) as a validated GpuProfile, by id."""
    from nvperf_bridge.datasheet import datasheet_rows

    profiles = {}
    for row in datasheet_rows():
        profile = _datasheet_profile(row)
        profiles[profile.id] = profile
    return profiles


def _datasheet_profile(row: dict[str, str]) -> GpuProfile:
    """One row of the datasheet table as a validated GpuProfile."""
    from nvperf_bridge.datasheet import DATASHEET_FILE, profile_mapping

    return profile_from_mapping(profile_mapping(row), f"nvperf_bridge/data/{DATASHEET_FILE}:{row['_line']}")


def load_profiles(extra_dirs: list[Path] | tuple[Path, ...] = ()) -> dict[str, GpuProfile]:
    """Every GPU profile: one per row of the datasheet table (``data/gpu_datasheet.csv``),
    then the shipped YAML files, then those in ``extra_dirs``; later ones win on the same id
    (a hand-written profile replaces the datasheet row of the same id) and on a name tie."""
    profiles: dict[str, GpuProfile] = dict(datasheet_profiles())
    for folder in (builtin_profile_dir(), *extra_dirs):
        for file in sorted(Path(folder).glob("*.yaml")):
            profile = load_profile_file(file)
            profiles[profile.id] = profile
    return profiles


def resolve_profile(choice: str, extra_dirs: list[Path] | tuple[Path, ...] = ()) -> GpuProfile:
    """``--gpu`` value: a profile id, or a path to a YAML file."""
    as_path = Path(choice)
    if choice.endswith((".yaml", ".yml")) or as_path.is_file():
        return load_profile_file(as_path)
    if not extra_dirs:
        found = _shipped_profile(choice)
        if found is not None:
            return found
    profiles = load_profiles(extra_dirs)
    if choice in profiles:
        return profiles[choice]
    raise UsageError(f"unknown GPU profile {choice!r}", hint="run 'nvperf-bridge gpus' for the ids, or pass a YAML file")


def _shipped_profile(profile_id: str) -> GpuProfile | None:
    """The shipped profile ``profile_id`` as ``load_profiles()`` gives it, read alone (None when no shipped
    profile has that id): its YAML file, which replaces the datasheet row of the same id, else that row.
    A profile's id is its file's name (``load_profile_file`` checks), so no other file can hold it; an
    ``analyze --gpu ID`` then validates one YAML file (or one datasheet row) instead of every profile."""
    if not _ID_RE.match(profile_id):
        return None
    file = builtin_profile_dir() / f"{profile_id}.yaml"
    if file.is_file():
        return load_profile_file(file)
    from nvperf_bridge.datasheet import datasheet_rows

    for row in reversed(datasheet_rows()):  # the last row of an id wins, as in ``datasheet_profiles``
        if row["id"].strip() == profile_id:
            return _datasheet_profile(row)
    return None


# what profilers and applications print around a board name: an index "(0)" / "[1]", a clock after ","
# or "@", "GPU 0:" before it; these characters separate words, they are never part of a board name
_NAME_PUNCTUATION = str.maketrans({c: " " for c in "-_,;:@()[]{}\"'"})


def _normalise(text: str) -> str:
    """Lower case, 'NVIDIA' dropped, '-', '_' and punctuation (',', '(', '[', ':', '@') as spaces, whitespace
    collapsed: "NVIDIA GeForce GTX 1080 Ti, 1582 MHz" and "GeForce GTX 1080 Ti (1)" both hold "geforce gtx 1080 ti"."""
    return " ".join(text.lower().replace("nvidia", " ").translate(_NAME_PUNCTUATION).split())


def _contains_words(haystack: str, needle: str) -> bool:
    """True when the normalised ``needle`` occurs in ``haystack`` on whole-word boundaries."""
    return f" {needle} " in f" {haystack} "


def match_candidates(device: str, profiles: Mapping[str, GpuProfile]) -> list[tuple[int, GpuProfile]]:
    """Every profile whose ``match`` occurs in the device name, as (length of its longest hit, profile).

    Matching is case-insensitive on whole words after normalisation ("NVIDIA", "-" and
    "_" ignored), so "RTX 4090" matches "NVIDIA GeForce RTX 4090" but "L4" does not match
    "NVIDIA L40S". A profile whose ``match_exclude`` occurs in the name is left out.
    Sorted best first; ties keep the order of ``profiles``.
    """
    wanted = _normalise(device)
    if not wanted:
        return []
    found: list[tuple[int, GpuProfile]] = []
    for profile in profiles.values():
        excludes = profile.raw.get("match_exclude", [])
        if any(_contains_words(wanted, _normalise(x)) for x in excludes):
            continue
        hits = [len(pat) for pat in map(_normalise, profile.match) if pat and _contains_words(wanted, pat)]
        if hits:
            found.append((max(hits), profile))
    found.sort(key=lambda item: -item[0])
    return found


def match_reason(device: str, profile: GpuProfile) -> str:
    """Why ``profile`` was matched to ``device``, for ``inspect`` and the reports: the exact board name, or
    which of the profile's ``match`` entries (an alias) the name holds and what else the name carries."""
    wanted = _normalise(device)
    if wanted == _normalise(profile.name):
        return f"exact name: device {device!r} is the {profile.id} profile's name"
    hits = [pat for pat in profile.match if _normalise(pat) and _contains_words(wanted, _normalise(pat))]
    if not hits:
        return f"device {device!r} -> {profile.id}"
    best = max(hits, key=lambda pat: len(_normalise(pat)))
    if wanted == _normalise(best):
        return f"exact alias: device {device!r} is one of the names the {profile.id} profile matches"
    extra = f" " + " ".join(f"{w!r}" for w in _extra_words(wanted, _normalise(best))) if wanted != _normalise(best) else ""
    return (f"alias: device {device!r} holds {best!r}, a name the {profile.id} profile matches"
            + (f" (other words ignored:{extra})" if extra.strip() else ""))


def _extra_words(haystack: str, needle: str) -> list[str]:
    """The words of ``haystack`` around the whole-word occurrence of ``needle`` (an index, a clock)."""
    start = f" {haystack} ".find(f" {needle} ")
    return (haystack[:max(start - 1, 0)].split() if start > 0 else []) + haystack[start + len(needle):].split()


def match_device(device: str, profiles: Mapping[str, GpuProfile]) -> GpuProfile | None:
    """The profile whose longest ``match`` entry occurs (as whole words) in the device name, or None.

    On a tie the profile that comes last in ``profiles`` wins, so user profiles loaded
    after the shipped ones (``load_profiles(extra_dirs)``) take precedence.
    """
    found = match_candidates(device, profiles)
    if not found:
        return None
    best = found[0][0]
    return [profile for length, profile in found if length == best][-1]

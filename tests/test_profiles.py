"""Shipped GPU profiles: every file loads and validates, device names pick the right one,
bad profiles fail with an error naming the file and the key, and the package ships them."""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib.resources
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvperf_bridge.errors import ProfileError, UsageError
from nvperf_bridge.gpu import (
    PROFILE_FIELDS,
    SOURCED_FIELDS,
    GpuProfile,
    builtin_profile_dir,
    load_profile_file,
    load_profiles,
    match_candidates,
    match_device,
    profile_from_mapping,
    resolve_profile,
)

REPO = Path(__file__).resolve().parents[1]
PROFILE_FILES = sorted(builtin_profile_dir().glob("*.yaml"))

# The papers' GPUs and the modern ones the project promises (file name = id).
EXPECTED_IDS = {
    "fx5600", "8800gtx", "8800gt", "gtx280", "gtx260", "tesla-c1060", "tesla-c2075", "gtx690",
    "k20c", "k40", "gtx-980", "m40", "p100", "gtx-1080-ti", "titan-xp", "v100-sxm2", "v100-pcie", "t4",
    "rtx-2080-ti", "a100-40gb", "a100-80gb", "rtx-3090", "a10", "l4", "l40s", "rtx-4090", "h100-sxm",
    "h100-pcie", "h200", "b200", "rtx-5090",
}

# Device names as nvidia-smi / ncu / nvprof print them -> profile id (None: no profile fits).
DEVICE_NAMES: list[tuple[str, str | None]] = [
    ("GeForce GTX 1080 Ti", "gtx-1080-ti"),
    ("NVIDIA GeForce GTX 1080 Ti", "gtx-1080-ti"),
    ("TITAN Xp", "titan-xp"),
    ("Tesla V100-SXM2-16GB", "v100-sxm2"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2"),
    ("Tesla V100-PCIE-16GB", "v100-pcie"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("NVIDIA A100-PCIE-40GB", "a100-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-80gb"),
    ("A100", "a100-40gb"),
    ("Tesla K20c", "k20c"),
    ("Tesla K40m", "k40"),
    ("Tesla T4", "t4"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("GeForce RTX 2080 Ti", "rtx-2080-ti"),
    ("GeForce GTX 980", "gtx-980"),
    ("Tesla M40 24GB", "m40"),
    ("Tesla P100-SXM2-16GB", "p100"),
    ("Tesla P100-PCIE-16GB", "p100-pcie"),
    ("GeForce GTX 280", "gtx280"),
    ("GeForce GTX 260", "gtx260"),
    ("GeForce 8800 GTX", "8800gtx"),
    ("GeForce 8800 GT", "8800gt"),
    ("Quadro FX 5600", "fx5600"),
    ("Tesla C1060", "tesla-c1060"),
    ("Tesla C2075", "tesla-c2075"),
    ("GeForce GTX 690", "gtx690"),
    # near misses: a shorter name inside a longer one must not match (these four have datasheet rows of their own)
    ("NVIDIA L40", "l40"),
    ("GeForce GTX 1080", "gtx-1080"),
    ("NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"),
    ("Tesla V100S-PCIE-32GB", "v100s-pcie"),
    ("NVIDIA A10G", None),
    ("GeForce 8800 GTS 512", None),
    ("NVIDIA GeForce RTX 4090 D", None),
    ("NVIDIA H200 NVL", None),
    ("", None),
]


@pytest.fixture(scope="module")
def profiles() -> dict[str, GpuProfile]:
    return load_profiles()


def _good_mapping() -> dict[str, Any]:
    """A small valid profile (every required field, every source)."""
    return {
        "schema_version": 1, "id": "my-gpu", "name": "My GPU", "match": ["My GPU"],
        "compute_capability": "8.6", "sm_count": 10, "cores_per_sm": 128, "max_warps_per_sm": 48,
        "max_blocks_per_sm": 16, "registers_per_sm": 65536, "shared_mem_per_sm_bytes": 102400,
        "sm_clock_mhz": 1500, "memory_bandwidth_gb_per_s": 400.0,
        "sources": {name: "test table" for name in SOURCED_FIELDS},
    }


# ---- the shipped files -----------------------------------------------------------

def test_every_promised_profile_ships() -> None:
    assert EXPECTED_IDS <= {f.stem for f in PROFILE_FILES}


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_profile_loads_validates_and_id_is_file_stem(path: Path) -> None:
    profile = load_profile_file(path)
    assert profile.id == path.stem
    for name in SOURCED_FIELDS:
        assert profile.sources.get(name, "").strip(), f"{path.name}: no source for {name}"
    # every optional hardware figure that is given carries a source too
    for key in profile.raw:
        if key in SOURCED_FIELDS or key in ("schema_version", "id", "name", "match", "match_exclude", "sources",
                                            "notes", "models", "model_options", "calibration", "hypothetical",
                                            "architecture"):
            continue
        assert key in profile.sources, f"{path.name}: {key} has no source"
    assert profile.max_threads_per_sm <= 2048
    assert 0 < profile.peak_fp32_flop_per_s


WITH_PEAK = [p for p in PROFILE_FILES if "peak_fp32_gflops" in (yaml.safe_load(p.read_text(encoding="utf-8")) or {})]


@pytest.mark.parametrize("path", WITH_PEAK, ids=lambda p: p.stem)
def test_peak_fp32_is_consistent_with_cores_and_clock(path: Path) -> None:
    """A given peak_fp32_gflops must agree (within 3 %) with cores x SMs x 2 x clock, else a figure is wrong."""
    profile = load_profile_file(path)
    given = profile.get("peak_fp32_gflops")
    derived = profile.cores_per_sm * profile.sm_count * 2 * profile.sm_clock_mhz / 1000
    assert abs(given - derived) / derived < 0.03


def test_paper_gpus_carry_the_papers_numbers(profiles: dict[str, GpuProfile]) -> None:
    """Hong-Kim Table 3, Luo-Suda Table 2 and the Transit text, as published."""
    table = {
        "fx5600": (16, 8, 1350, 76.8, "1.0"),
        "8800gtx": (16, 8, 1350, 86.4, "1.0"),
        "8800gt": (14, 8, 1500, 57.6, "1.1"),
        "gtx280": (30, 8, 1300, 141.7, "1.3"),
        "gtx260": (24, 8, 1242, 111.9, "1.3"),
    }
    for pid, (sms, cores, clock, bw, cc) in table.items():
        p = profiles[pid]
        assert (p.sm_count, p.cores_per_sm, p.sm_clock_mhz, p.memory_bandwidth_gb_per_s, p.compute_capability) == (
            sms, cores, clock, bw, cc), pid
    assert profiles["gtx690"].cores_per_sm == 192  # Transit: "192 vs. 32"
    assert profiles["tesla-c2075"].max_threads_per_sm == 1536  # Transit: delta(SP) abscissa 1536


def test_paper_gpu_files_have_no_models_key_written_by_us() -> None:
    """The hardware part ends before any ``models:`` block, which model engineers append."""
    for pid in ("fx5600", "8800gtx", "8800gt", "gtx280", "gtx260", "tesla-c2075", "gtx690"):
        text = (builtin_profile_dir() / f"{pid}.yaml").read_text(encoding="utf-8")
        if "\nmodels:" in text:
            head = text.split("\nmodels:")[0]
            assert "sources:" in head, pid


def test_coalescing_threshold_follows_the_generation(profiles: dict[str, GpuProfile]) -> None:
    for profile in profiles.values():
        value = profile.get("coalesced_sectors_per_request")
        if value is None:
            continue
        major = int(profile.compute_capability.split(".")[0])
        assert value == (1 if major <= 2 else 4), profile.id


# ---- matching device names ---------------------------------------------------------

@pytest.mark.parametrize(("device", "expected"), DEVICE_NAMES)
def test_device_name_picks_the_right_profile(profiles: dict[str, GpuProfile], device: str,
                                             expected: str | None) -> None:
    found = match_device(device, profiles)
    assert (found.id if found else None) == expected


@pytest.mark.parametrize(("device", "expected"), [d for d in DEVICE_NAMES if d[1]])
def test_no_two_profiles_tie_on_a_device_name(profiles: dict[str, GpuProfile], device: str,
                                              expected: str) -> None:
    found = match_candidates(device, profiles)
    best = found[0][0]
    assert [p.id for length, p in found if length == best] == [expected]


def test_no_match_string_is_shared_by_two_profiles(profiles: dict[str, GpuProfile]) -> None:
    """Each profile's own match strings resolve to that profile (no hidden ties)."""
    for profile in profiles.values():
        for pattern in profile.match:
            found = match_candidates(pattern, profiles)
            best = found[0][0]
            winners = [p.id for length, p in found if length == best]
            assert winners == [profile.id], (pattern, winners)


def test_user_profile_wins_a_tie_over_a_shipped_one(tmp_path: Path, profiles: dict[str, GpuProfile]) -> None:
    data = _good_mapping()
    data.update(id="my-4090", match=["GeForce RTX 4090"])  # same length as the shipped entry
    (tmp_path / "my-4090.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    merged = load_profiles([tmp_path])
    assert match_device("NVIDIA GeForce RTX 4090", merged).id == "my-4090"
    assert match_device("NVIDIA GeForce RTX 4090", profiles).id == "rtx-4090"


def test_gpu_id_reads_the_profile_every_profile_load_gives(profiles: dict[str, GpuProfile]) -> None:
    # ``--gpu ID`` reads that one profile (its YAML file, else its datasheet row): the same profile, field for
    # field, as loading every profile gives under that id, for every id (YAML files and datasheet rows)
    assert any(profile.path.endswith(".yaml") for profile in profiles.values())
    assert any(".csv:" in profile.path for profile in profiles.values())
    for profile_id, profile in profiles.items():
        assert dataclasses.asdict(resolve_profile(profile_id)) == dataclasses.asdict(profile), profile_id


def test_gpu_id_from_a_profile_dir_still_wins_over_the_shipped_one(tmp_path: Path) -> None:
    data = _good_mapping()
    data.update(id="rtx-4090", name="My RTX 4090")
    (tmp_path / "rtx-4090.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    assert resolve_profile("rtx-4090", [tmp_path]).name == "My RTX 4090"
    assert resolve_profile("rtx-4090").name != "My RTX 4090"
    with pytest.raises(UsageError, match="unknown GPU profile 'no-such-gpu'"):
        resolve_profile("no-such-gpu")


# ---- validation errors name the file and the key -------------------------------------

def _write(tmp_path: Path, data: dict[str, Any], stem: str = "my-gpu") -> Path:
    path = tmp_path / f"{stem}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_good_mapping_is_valid(tmp_path: Path) -> None:
    assert load_profile_file(_write(tmp_path, _good_mapping())).sm_count == 10


BROKEN: list[tuple[str, Any, str]] = [
    # (what to change, how, the key the error must name)
    ("unknown key", lambda d: d.update(sm_cnt=10), "sm_cnt"),
    ("missing field", lambda d: d.pop("registers_per_sm"), "registers_per_sm"),
    ("wrong type", lambda d: d.update(sm_count="ten"), "sm_count"),
    ("bool is not a number", lambda d: d.update(sm_clock_mhz=True), "sm_clock_mhz"),
    ("float for an int", lambda d: d.update(max_warps_per_sm=48.5), "max_warps_per_sm"),
    ("not positive", lambda d: d.update(sm_count=0), "sm_count"),
    ("missing source", lambda d: d["sources"].pop("memory_bandwidth_gb_per_s"), "sources.memory_bandwidth_gb_per_s"),
    ("empty source", lambda d: d["sources"].update(sm_count="  "), "sources.sm_count"),
    ("source for no field", lambda d: d["sources"].update(smcount="x"), "sources.smcount"),
    ("bad compute capability", lambda d: d.update(compute_capability="86"), "compute_capability"),
    ("bad match entry", lambda d: d.update(match=["ok", ""]), "match"),
    ("bad id", lambda d: d.update(id="My_GPU"), "id"),
    ("wrong schema version", lambda d: d.update(schema_version=2), "schema_version"),
    ("constant without source", lambda d: d.update(models={"hong-kim": {"mem_ld": {"value": 420}}}),
     "models.hong-kim.mem_ld"),
    # physical bounds (data/profile_bounds.csv): typos and corrupt files, never a real GPU
    ("SM count 10^38", lambda d: d.update(sm_count=10 ** 38), "sm_count"),
    ("clock in Hz, not MHz", lambda d: d.update(sm_clock_mhz=1.5e9), "sm_clock_mhz"),
    ("bandwidth 1e38 GB/s", lambda d: d.update(memory_bandwidth_gb_per_s=1e38), "memory_bandwidth_gb_per_s"),
    ("2 million warps per SM", lambda d: d.update(max_warps_per_sm=2_000_000), "max_warps_per_sm"),
    ("L2 of 1 TB", lambda d: d.update(l2_cache_bytes=10 ** 12), "l2_cache_bytes"),
]


def test_every_shipped_profile_is_within_the_physical_bounds(profiles: dict[str, GpuProfile]) -> None:
    from nvperf_bridge.gpu import physical_bounds

    bounds = physical_bounds()
    assert {"sm_count", "sm_clock_mhz", "memory_bandwidth_gb_per_s", "registers_per_sm"} <= set(bounds)
    for profile in profiles.values():  # loading validated them; this says the bounds leave room for real GPUs
        assert bounds["sm_count"][0] <= profile.sm_count <= bounds["sm_count"][1] / 4, profile.id


def test_out_of_bounds_message_says_what_range(tmp_path: Path) -> None:
    data = copy.deepcopy(_good_mapping())
    data["sm_count"] = 10 ** 38
    with pytest.raises(ProfileError, match="outside the physical range 1 to 1024"):
        load_profile_file(_write(tmp_path, data))


@pytest.mark.parametrize(("label", "change", "key"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_profile_names_file_and_key(tmp_path: Path, label: str, change: Any, key: str) -> None:
    data = copy.deepcopy(_good_mapping())
    change(data)
    path = _write(tmp_path, data)
    with pytest.raises(ProfileError) as info:
        load_profile_file(path)
    assert info.value.key == key
    assert str(path) in str(info.value) and key in str(info.value)


def test_id_must_equal_file_stem(tmp_path: Path) -> None:
    path = _write(tmp_path, _good_mapping(), stem="other-name")
    with pytest.raises(ProfileError) as info:
        load_profile_file(path)
    assert info.value.key == "id"


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "my-gpu.yaml"
    path.write_text("schema_version: 1\nid: [unclosed\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"my-gpu.yaml:\d+"):
        load_profile_file(path)


def test_yaml_tags_are_refused_because_loading_is_safe(tmp_path: Path) -> None:
    """safe_load refuses python object tags: a profile cannot run code."""
    path = tmp_path / "my-gpu.yaml"
    path.write_text("!!python/object/apply:os.system ['echo pwned']\n", encoding="utf-8")
    with pytest.raises(ProfileError):
        load_profile_file(path)


def test_gpu_module_uses_safe_load_only_and_no_pandas() -> None:
    import nvperf_bridge.yaml_io

    unsafe = {"load", "unsafe_load", "full_load", "load_all", "full_load_all"}
    # the one module that parses YAML text calls the safe loader only
    reader = ast.parse(Path(nvperf_bridge.yaml_io.__file__).read_text(encoding="utf-8"))
    reader_attrs = {node.attr for node in ast.walk(reader) if isinstance(node, ast.Attribute)}
    assert "safe_load" in reader_attrs
    assert not reader_attrs & unsafe
    source = Path(sys.modules["nvperf_bridge.gpu"].__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    attrs = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not attrs & unsafe
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert not imported & {"pandas", "numpy", "matplotlib"}


def test_importing_gpu_module_does_not_import_pandas(tmp_path: Path) -> None:
    code = "import sys, nvperf_bridge.gpu; sys.exit('pandas' in sys.modules)"
    # cwd outside the checkout, so the installed package is what gets imported
    assert subprocess.run([sys.executable, "-c", code], check=False, cwd=tmp_path).returncode == 0


def test_shipped_yaml_table_is_current() -> None:
    """data/shipped_yaml.jsonl holds every shipped YAML document as it parses today: a changed profile
    is rewritten with `python -m nvperf_bridge.yaml_io --write` (a stale line is never used, only slower)."""
    from nvperf_bridge import yaml_io

    table = (REPO / "nvperf_bridge" / "data" / yaml_io.SHIPPED_TABLE).read_text(encoding="utf-8").splitlines()
    assert table == yaml_io.shipped_table_lines()
    assert len(table) == len(yaml_io.shipped_yaml_files())  # every shipped document round-trips through JSON


def test_shipped_yaml_answers_as_a_parse_does(tmp_path: Path) -> None:
    """A shipped text comes back from the table equal (types, key order) to its YAML parse, as a new copy
    on every call; any other text (an edited profile) is parsed."""
    from nvperf_bridge import yaml_io

    text = PROFILE_FILES[0].read_text(encoding="utf-8")
    first, second = yaml_io.safe_load(text), yaml_io.safe_load(text)
    assert yaml_io.same_document(first, yaml.safe_load(text)) and first is not second
    first["id"] = "changed"
    assert yaml_io.safe_load(text)["id"] == PROFILE_FILES[0].stem
    edited = text.replace("\nname:", "\nextra_note: 1.0\nname:", 1)
    assert edited != text and yaml_io.safe_load(edited)["extra_note"] == 1.0
    assert not yaml_io.same_document({"a": 1}, {"a": 1.0}) and not yaml_io.same_document({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert yaml_io.same_document([float("nan")], [float("nan")]) and not yaml_io.same_document(0.0, -0.0)


def test_profile_fields_schema_is_complete_for_sources() -> None:
    assert set(SOURCED_FIELDS) <= {k for k, (_, required) in PROFILE_FIELDS.items() if required}


# ---- packaging ------------------------------------------------------------------------

def test_importlib_resources_finds_every_profile() -> None:
    shipped = {p.name for p in importlib.resources.files("nvperf_bridge.profiles").iterdir()
               if p.name.endswith(".yaml")}
    assert {f"{pid}.yaml" for pid in EXPECTED_IDS} <= shipped
    assert shipped == {p.name for p in (REPO / "profiles").glob("*.yaml")}


def test_wheel_ships_every_profile(tmp_path: Path) -> None:
    """Build a wheel offline and look inside (a few seconds); skipped where a wheel cannot be built here."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to copy the source tree")
    try:
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError:
        pytest.skip("setuptools/wheel not installed: pip wheel would need the network")
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "build", "dist",
                                                             "__pycache__", ".pytest_cache", "benchmarks"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(tmp_path / "whl"), str(src)],
        capture_output=True, text=True, check=False, timeout=300,
    )
    if result.returncode != 0:
        pytest.skip(f"pip wheel unavailable here: {result.stderr.strip()[-300:]}")
    wheel_file = next((tmp_path / "whl").glob("*.whl"))
    names = set(zipfile.ZipFile(wheel_file).namelist())
    for path in PROFILE_FILES:
        assert f"nvperf_bridge/profiles/{path.name}" in names

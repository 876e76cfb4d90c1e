"""The benchmark generator's small outputs go through the real importers, so the benchmarks measure real parsing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nvperf_bridge.importers import read_profiles, sniff

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import generate  # noqa: E402

N = 30


@pytest.mark.parametrize("kind, layout", [("ncu-raw", "ncu-raw"), ("ncu-details", "ncu-details"),
                                          ("ncu-details-old", "ncu-details")])
def test_ncu_outputs_import_one_row_per_launch(tmp_path: Path, kind: str, layout: str) -> None:
    (path,) = generate.generate(kind, N, tmp_path, seed=5)
    assert sniff(path) == layout
    result = read_profiles([path])
    kernels = result.kernels
    assert len(kernels) == N
    assert kernels["duration_ns"].gt(0).all()
    assert kernels["kernel_name"].str.contains(", ").any()  # templated names with commas survive quoting
    assert not any("unknown units" in note for note in result.inputs[0].notes)
    for column in ("grid_blocks", "block_threads", "inst_executed", "achieved_occupancy"):
        assert kernels[column].notna().all(), column


def test_raw_layout_has_475_columns_and_a_units_row(tmp_path: Path) -> None:
    (path,) = generate.generate("ncu-raw", 3, tmp_path)
    lines = path.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    import csv

    head, units = list(csv.reader(lines[header:header + 2]))
    assert len(head) == generate.RAW_COLUMNS == len(units) and len(set(head)) == len(head)
    assert units[:11] == [""] * 11 and "%" in units and "ns" in units
    kernels = read_profiles([path]).kernels
    assert kernels["device"].eq("NVIDIA B200").all()


def test_details_values_are_converted_by_their_own_units(tmp_path: Path) -> None:
    (path,) = generate.generate("ncu-details", N, tmp_path, seed=2)
    text = path.read_text()
    assert '"n/a"' in text and '"SOLBottleneck"' in text and '"us"' in text and '"Ghz"' in text
    dram_units = {line.split('"dram__bytes_read.sum","')[1].split('"')[0] for line in text.splitlines()
                  if '"dram__bytes_read.sum"' in line}
    assert len(dram_units) > 1  # the unit is chosen per value (Kbyte in one row, Mbyte in the next)
    kernels = read_profiles([path]).kernels
    rng_launches = generate.make_launches(generate.make_kernels(_rng(2)), N, _rng_after_kernels(2))
    expected = rng_launches.duration_ns.astype(float)
    assert kernels["duration_ns"].to_numpy() == pytest.approx(expected, rel=1e-3, abs=10)
    assert kernels["dram_read_bytes"].to_numpy() == pytest.approx(rng_launches.dram_read, rel=1e-2)


def _rng(seed: int):
    import numpy as np

    return np.random.default_rng(seed + 1)


def _rng_after_kernels(seed: int):
    rng = _rng(seed)
    generate.make_kernels(rng)
    return rng


def test_nvprof_trace_and_metrics_join(tmp_path: Path) -> None:
    trace, metrics = generate.generate("nvprof", N, tmp_path, seed=1)
    assert sniff(trace) == "nvprof-trace" and sniff(metrics) == "nvprof-metrics"
    result = read_profiles([trace, metrics])
    kernels = result.kernels
    assert kernels["invocations"].sum() == N
    assert kernels["duration_ns"].notna().all() and kernels["inst_executed"].notna().all()
    assert not [w for w in result.warnings if "not in the trace" in w]


def test_output_is_seeded(tmp_path: Path) -> None:
    a = generate.generate("ncu-raw", 10, tmp_path / "a", seed=7)[0].read_bytes()
    b = generate.generate("ncu-raw", 10, tmp_path / "b", seed=7)[0].read_bytes()
    c = generate.generate("ncu-raw", 10, tmp_path / "c", seed=8)[0].read_bytes()
    assert a == b != c


def test_raw_page_feeds_every_model_its_full_equations(tmp_path: Path) -> None:
    """The models benchmark runs on the raw page: every built-in model must predict every launch there, with
    every ncu counter it reads present (Kothapalli's shared-memory instructions and wavefronts, Hong-Kim's
    barriers, the L2 sectors of the memory levels, the FP counts behind flops), or the benchmark times
    models that stop at their input checks."""
    from nvperf_bridge.analysis import run_models
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.registry import load_registry

    (path,) = generate.generate("ncu-raw", 60, tmp_path, seed=3)
    kernels = read_profiles([path]).kernels
    registry = load_registry([])
    nvprof_only = {"gld_transactions_per_request", "gst_transactions_per_request", "global_hit_rate",
                   "l2_l1_read_transactions", "l2_l1_write_transactions", "gld_efficiency", "gst_efficiency",
                   "atomic_transactions"}  # nvprof metrics the recommended estimate reads where ncu has none
    for mid, loaded in registry.models.items():
        reads = {*loaded.model.requires.required, *loaded.model.requires.optional} - nvprof_only
        assert sorted(reads - set(kernels.columns)) == [], mid
    for column in ("inst_shared_ld", "inst_shared_st", "shared_ld_wavefronts", "shared_st_wavefronts",
                   "inst_barrier", "l2_read_bytes", "flop_sp"):
        assert kernels[column].gt(0).any(), column
    # a request is at least one wavefront (k' >= 1 in Kothapalli), and DRAM reads are L2 misses
    assert (kernels["shared_ld_wavefronts"] >= kernels["inst_shared_ld"]).all()
    assert (kernels["shared_st_wavefronts"] >= kernels["inst_shared_st"]).all()
    assert (kernels["l2_read_bytes"] >= kernels["dram_read_bytes"]).all()
    runs, _ = run_models(kernels, resolve_profile("b200"), registry)
    for mid, run in runs.items():
        assert run.result is not None, (mid, run.failure)
        assert run.result["error"].eq("").all(), (mid, run.result["error"].unique()[:3])

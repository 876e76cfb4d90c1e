"""One evaluation per run: the recommended estimate's Transit evaluation is the Transit model's too,
and the results are the same as Transit's alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.analysis import run_models
from nvperf_bridge.builtin_plugins import transit
from nvperf_bridge.gpu import resolve_profile
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.model import evaluate_shared, shared_evaluations
from nvperf_bridge.registry import load_registry


@pytest.fixture
def kernels(realdata_dir: Path) -> pd.DataFrame:
    folder = realdata_dir / "roofline-analysis"
    return read_profiles([folder / "roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv"]).kernels


def test_transit_is_evaluated_once_per_run_and_reads_as_alone(kernels, monkeypatch) -> None:
    gpu = resolve_profile("b200")
    registry = load_registry()
    alone, _ = run_models(kernels, gpu, registry, ["transit"])
    calls: list[dict] = []  # the options of each Transit evaluation
    real = transit.MODEL.evaluate
    monkeypatch.setattr(transit.MODEL, "evaluate", lambda *a: calls.append(dict(a[2])) or real(*a))
    runs, _ = run_models(kernels, gpu, registry, ["recommended", "transit"])
    assert calls == [{}]
    pd.testing.assert_frame_equal(runs["transit"].result, alone["transit"].result, check_exact=True)
    assert runs["recommended"].result is not None
    assert all(run.wall_s > 0 and run.cpu_s >= 0 for run in runs.values())
    # other options for the Transit model: evaluated once more, on its own, with its options. The
    # recommended estimate's own evaluation (default options) may come from its term cache or not: the
    # cache keys on the columns' memory, which pandas' Arrow-backed strings (pyarrow installed) rebuild
    # on every read, so it is not asserted here.
    calls.clear()
    run_models(kernels, gpu, registry, ["recommended", "transit"], options={"transit": {"precision": "dp"}})
    assert calls.count({"precision": "dp"}) == 1
    assert all(c == {} for c in calls if c != {"precision": "dp"}) and len(calls) <= 2


def test_outside_a_block_nothing_is_kept(kernels) -> None:
    gpu = resolve_profile("b200")
    first = evaluate_shared(transit.MODEL, kernels, gpu, {})
    assert evaluate_shared(transit.MODEL, kernels, gpu, {}) is not first
    with shared_evaluations():
        inside = evaluate_shared(transit.MODEL, kernels, gpu, {})
        assert evaluate_shared(transit.MODEL, kernels.copy(deep=False), gpu, {}) is inside
        changed = kernels.assign(grid_blocks=kernels["grid_blocks"] * 2.0)
        assert evaluate_shared(transit.MODEL, changed, gpu, {}) is not inside
    assert evaluate_shared(transit.MODEL, kernels, gpu, {}) is not inside


def test_the_derived_texts_are_factorised_once_per_run_with_the_same_masks(realdata_dir: Path, monkeypatch) -> None:
    """time_derived_any asks about one frame once per model and counter group: within a run the
    derivation texts are factorised once (model.run_value), and every mask is the one computed alone."""
    from nvperf_bridge.importers import derivations

    # Nsight Compute's log where DRAM bytes are throughput x duration: time-derived on every kernel
    log = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    kernels = read_profiles([log]).kernels
    groups = [["dram_bytes", "dram_read_bytes"], ["l2_read_bytes", "l2_write_bytes"], ["inst_executed"]]
    alone = [derivations.time_derived_any(kernels, names) for names in groups]
    assert alone[0].all() and not alone[2].any()
    calls = []
    real = pd.factorize
    monkeypatch.setattr(derivations.pd, "factorize", lambda *a, **k: calls.append(1) or real(*a, **k))
    with shared_evaluations():
        shared = [derivations.time_derived_any(kernels, names) for names in groups]
    assert len(calls) == 1
    for mask, own in zip(shared, alone):
        pd.testing.assert_series_equal(mask, own)
    derivations.time_derived_any(kernels, groups[0])  # the run is over: computed again
    assert len(calls) == 2


def test_served_fractions_are_computed_once_per_run_for_the_same_sectors(kernels, monkeypatch) -> None:
    """Hong-Kim, Kothapalli, Luo-Suda and the recommended estimate each ask for the memory levels of the same
    rows: within a run the same sectors (bit for bit) are answered from the first computation, with its values;
    other sectors, or a call outside a run, are computed."""
    import numpy as np

    from nvperf_bridge import memory_levels

    calls: list[int] = []
    real = memory_levels._served_fractions
    monkeypatch.setattr(memory_levels, "_served_fractions", lambda k, s: calls.append(1) or real(k, s))
    sectors = pd.Series(np.linspace(1.0, 100.0, len(kernels)), index=kernels.index)
    alone = real(kernels, sectors)
    with shared_evaluations():
        first = memory_levels.served_fractions(kernels, sectors.copy())
        again = memory_levels.served_fractions(kernels.copy(deep=False), sectors * 1.0)
        assert len(calls) == 1
        memory_levels.served_fractions(kernels, sectors + 1.0)
        assert len(calls) == 2
    for name, values in alone.items():
        pd.testing.assert_series_equal(first[name], values, check_exact=True)
        pd.testing.assert_series_equal(again[name], values, check_exact=True)
    memory_levels.served_fractions(kernels, sectors)
    memory_levels.served_fractions(kernels, sectors)
    assert len(calls) == 4  # outside a run nothing is kept

"""The papers' sweeps under examples/sweeps/: each runs, writes its figure, and shows what docs/sweeps.md says."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SWEEPS = Path(__file__).resolve().parents[1] / "examples" / "sweeps"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"sweep_{name}", SWEEPS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name, stem", [("hong_kim_occupancy", "hong-kim-occupancy"),
                                        ("kothapalli_list_ranking", "kothapalli-list-ranking")])
def test_script_writes_figure_and_numbers(tmp_path: Path, capsys, name: str, stem: str) -> None:
    assert load(name).main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / f"{stem}.csv").read_text().count("\n") >= 5
    assert capsys.readouterr().out


def test_hong_kim_occupancy_does_not_help_an_mwp_bound_kernel() -> None:
    table = load("hong_kim_occupancy").sweep()
    assert (table["MWP"] <= table["N"] + 1e-9).all() and (table["CWP"] <= table["N"] + 1e-9).all()  # Eq. (5)
    published = table[table["variant"].str.startswith("uncoalesced")].sort_values("N")
    assert list(published["N"]) == [4, 8, 12, 16, 20, 24]  # 1..6 blocks of 4 warps from the calculator
    assert np.allclose(published["MWP"], 730 / 320)  # Table 2's MWP whatever the occupancy
    times = published["predicted_cycles"]
    assert times.max() / times.min() - 1 < 0.01
    coalesced = table[table["variant"] == "coalesced"].sort_values("N")
    few = coalesced[coalesced["N"] <= 16]
    assert np.allclose(few["MWP"], few["N"]) and np.allclose(few["CWP"], few["N"])  # not enough warps
    assert np.all(np.diff(coalesced["predicted_cycles"].to_numpy()) < 0)
    assert coalesced["predicted_cycles"].iloc[0] / coalesced["predicted_cycles"].iloc[-1] > 2.5
    assert coalesced["MWP"].iloc[-1] == pytest.approx(coalesced["MWP_peak_BW"].iloc[-1])  # bandwidth-limited


def test_luo_suda_time_falls_with_warps_and_levels_off() -> None:
    table = load("luo_suda_fig8").sweep()
    black = table[table["kernel"] == "blackscholes"].sort_values("warps_per_sm")
    assert list(black["warps_per_sm"]) == [1, 2, 4, 8, 16]  # 20 registers: 16 warps at most on the GTX 260
    assert np.all(np.diff(black["luo-suda.predicted_ms"].to_numpy()) < 0)
    linear = table[table["kernel"] == "linear"].sort_values("warps_per_sm")
    per_sm = linear["luo-suda (mpd_form per-sm).predicted_ms"].to_numpy()
    assert np.all(np.diff(per_sm) <= 1e-12)
    assert per_sm[-2] / per_sm[-1] - 1 < 0.02  # the plateau of Fig. 8
    assert (per_sm > linear["bandwidth_floor_ms"].to_numpy()).all()  # never faster than the DRAM traffic allows
    hong_kim = linear["hong-kim.predicted_ms"].to_numpy()
    assert np.all(np.diff(hong_kim) < 0)


def test_transit_memory_bound_time_scales_with_bandwidth_compute_bound_does_not() -> None:
    table = load("transit_bandwidth").sweep()
    dp = table[table["kernel"] == "dp-stream"].sort_values("bandwidth_gb_per_s")
    memory = dp[dp["state"] == "memory bound"]
    assert len(memory) >= 5
    product = memory["predicted_ms"] * memory["bandwidth_gb_per_s"]
    assert product.max() / product.min() - 1 < 1e-3  # time proportional to 1 / R
    compute = table[(table["kernel"] == "compute") & (table["bandwidth_gb_per_s"] >= 144)]
    assert set(compute["state"]) == {"computation bound"}
    assert compute["predicted_ms"].max() / compute["predicted_ms"].min() - 1 < 1e-9
    stream = table[table["kernel"] == "stream"].sort_values("bandwidth_gb_per_s")
    states = list(stream["state"])
    assert states[0] == "memory bound" and states[-1] == "thread bound"  # Fig. 14: until delta meets g(x)
    assert states.index("thread bound") > 0


def test_kothapalli_list_ranking_matches_the_papers_closed_form() -> None:
    table = load("kothapalli_list_ranking").sweep()
    ratio = table["kothapalli_ms"] / table["paper_formula_ms"]
    assert ((ratio > 1.0) & (ratio < 1.004)).all()  # (L + k) / k = 501 vs the paper's 500 cycles per access
    largest = table.iloc[-1]
    assert largest["list_elements"] == 2 ** 22 and largest["kothapalli_ms"] == pytest.approx(21.16, abs=0.01)
    assert largest["measured_ms"] == 24.0
    assert np.all(np.diff(table["kothapalli_ms"].to_numpy()) > 0)

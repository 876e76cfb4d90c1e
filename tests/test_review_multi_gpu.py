"""The review judges each kernel with its own device's profile and counters in one unit.

The amaris-kepler-maxwell folder holds the same nine kernels measured on five GPUs with
different SM counts, bandwidths and FP32 peaks, so a number taken from the wrong board shows.
"""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import REALDATA
from nvperf_bridge.analysis import analyze_files, device_labels
from nvperf_bridge.review.advice import row_quantities
from nvperf_bridge.review.groups import kernel_groups
from nvperf_bridge.review.roofline import roofline_points, roofs_by_gpu
from nvperf_bridge.review.verdict import speed_of_light


@pytest.fixture(scope="module")
def amaris():
    folder = REALDATA / "amaris-kepler-maxwell"
    if not folder.is_dir():
        pytest.skip("amaris-kepler-maxwell is not present")
    return analyze_files(sorted(folder.glob("*.yaml")), model_ids=["roofline"])


def test_each_row_gets_its_devices_profile(amaris) -> None:
    labels = device_labels(amaris.kernels)
    sm_count = amaris.row_gpu_value("sm_count")
    assert len(set(sm_count)) > 1, "the five boards differ in SM count"
    for device, profile in amaris.gpus.items():
        rows = labels == device
        assert (sm_count[rows] == profile.sm_count).all(), device


def test_advice_quantities_use_the_rows_own_gpu(amaris) -> None:
    compute, memory, _ = speed_of_light(amaris)
    quantities = row_quantities(amaris, compute, memory)
    labels = device_labels(amaris.kernels)
    for device, profile in amaris.gpus.items():
        rows = labels == device
        grid = pd.to_numeric(amaris.kernels.loc[rows, "grid_blocks"], errors="coerce")
        expected = grid / profile.sm_count
        pd.testing.assert_series_equal(quantities.loc[rows, "blocks_per_sm"], expected, check_names=False)


def test_roofline_places_each_group_under_its_own_gpus_roof(amaris) -> None:
    points = roofline_points(amaris, kernel_groups(amaris.kernels), limit=40)
    placed = points[points["why_not"] == ""]
    assert placed["gpu"].nunique() > 1
    by_gpu = roofs_by_gpu(amaris, points)
    assert set(by_gpu) == set(placed["gpu"])
    for row in placed.itertuples(index=False):
        roof = by_gpu[row.gpu]
        expected = min(roof["peak_flop_per_s"], row.intensity * roof["bandwidth_bytes_per_s"])
        assert row.attainable == pytest.approx(expected, rel=1e-12)


def test_nvprof_pascal_loads_are_counted_in_32_byte_sectors_for_the_advice() -> None:
    """vectorAdd's loads are perfectly coalesced 4-byte words: 4 sectors per request on the 1080 Ti.
    nvprof counts them as 8 gld_transactions (16-byte pieces on Pascal); read raw, the advice would
    call a textbook coalesced kernel 2x uncoalesced."""
    folder = REALDATA / "magus-corpus"
    if not folder.is_dir():
        pytest.skip("magus-corpus is not present")
    analysis = analyze_files([folder / "metrics_cudasdk_vectorAdd.csv", folder / "traces_cudasdk_vectorAdd.csv"],
                             model_ids=["roofline"])
    compute, memory, _ = speed_of_light(analysis)
    quantities = row_quantities(analysis, compute, memory)
    assert quantities["load_sectors_per_request"].iloc[0] == pytest.approx(4.0, rel=0.01)
    assert quantities["store_sectors_per_request"].iloc[0] == pytest.approx(4.0, rel=0.01)


def test_a_prediction_made_from_the_measured_time_is_not_judged_against_it() -> None:
    """Nsight 2019's V100 cfd page gives DRAM traffic only as Memory Throughput (byte/s), so its
    DRAM bytes are throughput x the measured duration: a model reading them has seen the time.
    Its ratio to the measured time is not shown and it votes as on a kernel without a time."""
    from nvperf_bridge.review.verdict import vote_weights

    path = REALDATA / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    if not path.is_file():
        pytest.skip("realdata #15 is not present")
    analysis = analyze_files([path], model_ids=["transit", "kerr", "luo-suda"])
    weights, ratios = vote_weights(analysis)
    leaked = analysis.time_derived_inputs(analysis.runs["transit"])
    assert leaked.all(), "every cfd launch's DRAM bytes come from throughput x duration"
    assert ratios["transit"].isna().all()
    assert analysis.accuracy().at["transit", "n"] == 0
    # Kerr's regression reads DRAM bytes as an optional feature: its leave-one-group-out figure
    # on this file would be scored against the time its features were computed from
    assert analysis.time_derived_inputs(analysis.runs["kerr"]).all()
    assert analysis.accuracy().at["kerr", "n"] == 0
    # luo-suda reads DRAM and L2 counters for its memory-levels extension (it declares them), so it is
    # left out here too; that its split never uses a time-derived value is tested in test_model_extensions
    assert analysis.time_derived_inputs(analysis.runs["luo-suda"]).all()


def test_the_verdict_says_which_models_read_time_derived_inputs() -> None:
    from nvperf_bridge.review.build import build_review

    path = REALDATA / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    if not path.is_file():
        pytest.skip("realdata #15 is not present")
    analysis = analyze_files([path], model_ids=["transit", "kerr"])
    for row in build_review(analysis).group_rows():
        clause = next((part for part in row["basis"].split("; ") if "read inputs derived from the measured time" in part),
                      "")
        assert "transit" in clause and "kerr" in clause, row["basis"]
        assert all(model["model"] != "transit" for model in (*row["models_within"], *row["models_off"]))

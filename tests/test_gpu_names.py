"""Device names as profilers and applications print them (an index "(0)", a clock after the name, "GPU 0:"
before it) choose the GPU profile, and ``inspect`` says which profile and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.gpu import load_profiles, match_device, match_reason

FIX = Path(__file__).parent / "fixtures" / "import"


@pytest.mark.parametrize(("device", "profile"), [
    ("Tesla K40c (0)", "k40"),  # nvprof: board name and device index
    ("GeForce GTX 1080 Ti (1)", "gtx-1080-ti"),
    ("NVIDIA GeForce GTX 1080 Ti, 1582 MHz", "gtx-1080-ti"),  # a clock after a comma: not the GTX 1080
    ("NVIDIA GeForce RTX 3090 @ 1695 MHz", "rtx-3090"),
    ("GPU 0: Tesla T4", "t4"),
    ("GeForce GTX 1080 (1)", "gtx-1080"),  # the index never turns a GTX 1080 into something else
    ("Tesla V100-SXM2-16GB", "v100-sxm2"),
])
def test_names_with_indices_clocks_and_prefixes_match(device: str, profile: str) -> None:
    found = match_device(device, load_profiles())
    assert found is not None and found.id == profile


def test_the_reason_says_exact_name_or_alias_and_what_was_ignored() -> None:
    profiles = load_profiles()
    titan = match_device("TITAN Xp", profiles)
    assert match_reason("TITAN Xp", titan).startswith("exact name")
    reason = match_reason("NVIDIA GeForce GTX 1080 Ti, 1582 MHz", profiles["gtx-1080-ti"])
    assert reason.startswith("alias") and "'1582' 'mhz'" in reason
    # a device printed exactly as one of the profile's match names (the paper example's yaml)
    exact = match_reason("hong-kim-example", profiles["hong-kim-example"])
    assert exact.startswith("exact alias") and "holds" not in exact


def _inspect_json(capsys, *args: str) -> dict:
    code = main(["inspect", "--json", *args])
    out, _ = capsys.readouterr()
    assert code == 0
    return json.loads(out)["gpu_profile"]


def test_inspect_shows_the_chosen_profile_and_why(capsys) -> None:
    # the file says "GeForce GTX 980 (0)"; the importer keeps the board name, which is the profile's own name
    profile = _inspect_json(capsys, str(FIX / "nvprof_launch_metrics.csv"))
    assert profile["id"] == "gtx-980" and profile["how"].startswith("exact name")
    code = main(["inspect", str(FIX / "nvprof_launch_metrics.csv")])
    out, _ = capsys.readouterr()
    assert code == 0 and "GPU profile: gtx-980 (exact name: device 'GeForce GTX 980'" in out


def test_inspect_says_which_alias_matched_a_longer_name(capsys, tmp_path: Path) -> None:
    path = tmp_path / "clock_in_name.csv"
    path.write_text((FIX / "nvprof_launch_metrics.csv").read_text().replace("GeForce GTX 980 (0)",
                                                                            "NVIDIA GeForce GTX 1080 Ti, 1582 MHz"))
    profile = _inspect_json(capsys, str(path))
    assert profile["id"] == "gtx-1080-ti"
    assert profile["how"].startswith("alias") and "'1582' 'mhz'" in profile["how"]


def test_inspect_with_gpu_says_so(capsys) -> None:
    profile = _inspect_json(capsys, "--gpu", "t4", str(FIX / "nvprof_launch_metrics.csv"))
    assert profile["id"] == "t4" and profile["how"] == "--gpu t4"


def test_inspect_names_the_architecture_fallback(capsys, tmp_path: Path) -> None:
    path = tmp_path / "unknown_board.csv"
    path.write_text((FIX / "nvprof_launch_metrics.csv").read_text().replace("GeForce GTX 980", "Tesla K10.G1.8GB"))
    profile = _inspect_json(capsys, str(path))  # no profile names this board; its name says Kepler (cc 3.0)
    assert profile["how"].startswith("architecture fallback") and "Tesla K10.G1.8GB" in profile["how"]
    assert "3.0" in profile["how"] and "--gpu" in profile["how"]

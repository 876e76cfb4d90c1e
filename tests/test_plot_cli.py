"""``nvperf-bridge plot transit|accuracy``."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.cli import main

DEMO = Path(__file__).resolve().parent / "fixtures" / "reports" / "demo_gtx280.yaml"


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main(["plot", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_transit_png(tmp_path: Path, capsys) -> None:
    target = tmp_path / "transit.png"
    code, out, err = run(capsys, "transit", DEMO, "--kernel", "matrixMul", "-o", target)
    assert code == 0, err
    assert out == "" and err == ""
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_transit_by_id_as_svg(tmp_path: Path, capsys) -> None:
    target = tmp_path / "t.svg"
    code, _, err = run(capsys, "transit", DEMO, "-k", "6", "-o", target, "--gpu", "gtx280")
    assert code == 0, err
    text = target.read_text()
    assert text.lstrip().startswith("<?xml") and "histogram256" in text


def test_accuracy_png(tmp_path: Path, capsys) -> None:
    target = tmp_path / "acc.png"
    code, _, err = run(capsys, "accuracy", DEMO, "-m", "transit", "-m", "roofline", "-o", target)
    assert code == 0, err
    assert target.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, message", [
    (["transit", DEMO, "--kernel", "trans"], "matches 2 different kernels"),
    (["transit", DEMO, "--kernel", "nothing_like_this"], "no kernel matches"),
    (["transit", DEMO], "needs --kernel"),
    (["histogram", DEMO], "unknown figure"),
])
def test_usage_errors(tmp_path: Path, capsys, args: list, message: str) -> None:
    code, out, err = run(capsys, *args, "-o", tmp_path / "f.png")
    assert code == 2
    assert message in err and out == ""
    assert not (tmp_path / "f.png").exists()


def test_wrong_suffix_and_existing_output(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "accuracy", DEMO, "-o", tmp_path / "f.jpeg")
    assert code == 2 and ".png, .svg or .pdf" in err
    target = tmp_path / "f.png"
    target.write_bytes(b"old")
    code, _, err = run(capsys, "accuracy", DEMO, "-m", "roofline", "-o", target)
    assert code == 1 and "already exists" in err
    assert target.read_bytes() == b"old"


def test_accuracy_without_a_judged_prediction_is_one_line_naming_why(realdata_dir: Path, tmp_path: Path,
                                                                       capsys) -> None:
    """The cfd page's DRAM bytes are throughput x duration: every prediction read the measured time, so the
    Accuracy table judges none, and the plot says so instead of writing an empty (or a flattering) figure."""
    cfd = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    if not cfd.exists():
        pytest.skip(f"{cfd} not found")
    target = tmp_path / "acc.png"
    code, out, err = run(capsys, "accuracy", cfd, "--gpu", "v100-sxm2", "-q", "-o", target)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "derived from that time" in err and "dram__bytes_read.sum" in err
    assert not target.exists()

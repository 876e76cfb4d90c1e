"""kernel-yaml: hand-written kernel records, validated, through the public read_profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import read_profiles, sniff

FIXTURE = Path(__file__).parent / "fixtures" / "import" / "worked_examples.yaml"


def _write(tmp_path: Path, text: str, name: str = "k.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_worked_examples_fill_canonical_columns() -> None:
    result = read_profiles([FIXTURE])
    k = result.kernels.set_index("kernel_id", drop=False)
    assert list(k["kernel"]) == ["matrixMul", "reduce"]
    assert k.loc["0", "grid_blocks"] == 80 and k.loc["0", "block_threads"] == 128
    assert k.loc["0", "duration_ns"] == pytest.approx(1.5e5)  # "1.5e5" is text to PyYAML, accepted as a number
    assert k.loc["r1", "invocations"] == 3
    assert k.loc["r1", "cc"] == "1.3"
    # written as ~ : missing, never 0
    assert k["inst_executed"].isna().tolist() == [False, True]
    # unknown key kept as a raw column
    assert k.loc["0", "tile"] == "16x16"
    assert set(k["device"]) == {"GeForce GTX 280"}
    assert result.inputs[0].format == "kernel-yaml"
    assert result.inputs[0].device == "GeForce GTX 280"
    assert any("gtx280" in n for n in result.inputs[0].notes)


def test_sniffed_by_content_not_extension(tmp_path: Path) -> None:
    path = _write(tmp_path, FIXTURE.read_text(), name="examples.csv")
    assert sniff(path) == "kernel-yaml"


def test_gpu_hint_is_the_device_when_no_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "gpu: hong-kim-3-6\nkernels:\n  - kernel_name: k\n    grid_blocks: 1\n")
    result = read_profiles([path])
    assert result.kernels.loc[0, "device"] == "hong-kim-3-6"


@pytest.mark.parametrize(
    ("body", "needle", "line"),
    [
        ("kernels:\n  - kernel_name: a\n  - kernel_name: b\n    grid_blocks: many\n", "kernels[1].grid_blocks", 3),
        ("kernels:\n  - kernel_name: a\n    block_threads: 12.5\n", "whole number", 2),
        ("kernels:\n  - kernel_name: a\n    extra: [1, 2]\n", "kernels[0].extra", 2),
        ("kernels:\n  - just a string\n", "kernels[0] is a str", 2),
        ("kernels:\n  - grid_blocks: 4\n", "no `kernel_name`", 2),
        ("kernels: []\n", "non-empty list", 1),
        ("kernels:\n  - kernel_name: a\n    grid_blocks: -3\n", "negative", 2),
        ("kernel:\n  - kernel_name: a\nkernels:\n  - kernel_name: b\n", "unknown top-level key 'kernel'", 1),
    ],
)
def test_wrong_types_name_file_item_and_line(tmp_path: Path, body: str, needle: str, line: int) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as info:
        read_profiles([path])
    assert needle in str(info.value)
    assert info.value.path == str(path)
    assert info.value.line == line


def test_invalid_yaml_reports_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "kernels:\n  - kernel_name: a\n    grid_blocks: [1\n")
    with pytest.raises(InputError) as info:
        read_profiles([path])
    assert "not valid YAML" in str(info.value)
    assert info.value.line is not None


def test_unsafe_tags_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "kernels:\n  - kernel_name: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(InputError):
        read_profiles([path])


def test_a_derived_column_fills_gaps_of_the_given_one(tmp_path: Path) -> None:
    """Fuzz case (seed 1, index 1235): one record has dram_bytes, the other only read + write bytes.
    The derivation fills the gap in the same column (it used to make a second dram_bytes column and
    a TypeError traceback)."""
    path = tmp_path / "k.yaml"
    path.write_text("device: NVIDIA GeForce GTX 680\nkernels:\n"
                    "- {kernel_name: a, dram_bytes: 96, dram_read_bytes: 64, dram_write_bytes: 32}\n"
                    "- {kernel_name: b, dram_read_bytes: 640, dram_write_bytes: 320}\n", encoding="utf-8")
    k = read_profiles([path]).kernels
    assert list(k.columns).count("dram_bytes") == 1
    assert k["dram_bytes"].tolist() == [96.0, 960.0]

"""Unreadable inputs: one clear InputError naming the file (and line), never a traceback or a silent zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import read_profiles

FIX = Path(__file__).parent / "fixtures" / "import"


def _error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        read_profiles([path])
    assert info.value.path == str(path)
    return info.value


def test_error_only_output_quotes_the_profiler() -> None:
    err = _error(FIX / "ncu_error_only.csv")
    assert "==ERROR== The application returned an error code (1)." in str(err)
    assert err.line == 3


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("\n\n")
    assert "empty" in str(_error(path))


def test_ncu_report_says_how_to_export(tmp_path: Path) -> None:
    path = tmp_path / "profile.ncu-rep"
    path.write_bytes(b"\x00\x01NVIDIA Nsight Compute\x00\x00" * 10)
    assert "ncu -i FILE --csv --page raw --print-units base" in str(_error(path))


def test_png(tmp_path: Path) -> None:
    path = tmp_path / "roofline.csv"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 30)
    assert "image" in str(_error(path))


def test_directory(tmp_path: Path) -> None:
    assert "directory" in str(_error(tmp_path))


def test_missing_file(tmp_path: Path) -> None:
    assert "no such file" in str(_error(tmp_path / "nope.csv"))


def test_text_without_a_table_says_what_was_expected() -> None:
    err = _error(FIX / "not_a_profile.txt")
    assert "no CSV table found" in str(err) and "ncu --csv --page raw" in str(err)


def test_table_without_rows(tmp_path: Path) -> None:
    path = tmp_path / "header_only.csv"
    path.write_text('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
                    '"Metric Name","Metric Unit","Metric Value"\n')
    err = _error(path)
    assert err.line == 1

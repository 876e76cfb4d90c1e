"""Atomic report writing: all or nothing, existing files only with force."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nvperf_bridge.errors import OutputError
from nvperf_bridge.reports import write
from nvperf_bridge.reports.write import write_bytes, write_outputs, write_text


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_writes_new_file_with_the_content(tmp_path: Path) -> None:
    target = tmp_path / "review.md"
    write_text(target, "# hello µs\n")
    assert target.read_text(encoding="utf-8") == "# hello µs\n"
    assert _leftovers(tmp_path) == []
    # normal permissions, not mkstemp's 0600
    assert target.stat().st_mode & 0o044


def test_refuses_to_replace_without_force(tmp_path: Path) -> None:
    target = tmp_path / "review.xlsx"
    target.write_bytes(b"old")
    with pytest.raises(OutputError) as err:
        write_bytes(target, b"new")
    assert "already exists" in str(err.value) and "--force" in str(err.value)
    assert str(target) in str(err.value)
    assert target.read_bytes() == b"old"
    write_bytes(target, b"new", force=True)
    assert target.read_bytes() == b"new"


def test_missing_folder_and_folder_target_are_errors(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="does not exist"):
        write_bytes(tmp_path / "nope" / "r.csv", b"x")
    with pytest.raises(OutputError, match="folder"):
        write_bytes(tmp_path, b"x", force=True)


def test_failure_during_rename_leaves_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "review.json"
    target.write_text("old")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write.os, "replace", broken_replace)
    with pytest.raises(OutputError, match="No space left"):
        write_text(target, "new", force=True)
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_interrupt_while_writing_removes_the_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(write.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text(tmp_path / "r.md", "text")
    assert list(tmp_path.iterdir()) == []


def test_write_outputs_checks_every_target_before_writing(tmp_path: Path) -> None:
    report, figure = tmp_path / "r.md", tmp_path / "r-transit.png"
    figure.write_bytes(b"old png")
    with pytest.raises(OutputError, match="already exists"):
        write_outputs({report: b"md", figure: b"png"})
    assert not report.exists(), "nothing is written when one target is refused"
    written = write_outputs({report: b"md", figure: b"png"}, force=True)
    assert written == [report, figure]
    assert figure.read_bytes() == b"png"


def test_relative_path_in_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_text("plain.csv", "a,b\n")
    assert Path(os.getcwd(), "plain.csv").read_text() == "a,b\n"

"""``analyze DIR``: discovery in nested folders, non-profiler files skipped and listed,
one combined report that lists every file, and the parallel path equal to the serial one.

Inputs are written by the benchmark generator (small, seeded) and by hand here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge import cli
from nvperf_bridge.discovery import NOT_PROFILER, expand, profile_rows, read_inputs
from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import read_profiles

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import generate  # noqa: E402

ERROR_ONLY = "==PROF== Connected to process 1 (/usr/bin/python3)\n==ERROR== Failed to profile kernel\n==PROF== Disconnected\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A run folder as users keep them: nested, with notes, scripts and a failed run beside the profiles."""
    root = tmp_path / "runs"
    generate.write_ncu_raw(_mk(root / "step1" / "ncu") / "train.ncu.csv", 24, seed=1)
    generate.write_ncu_details(_mk(root / "step2") / "details_no_extension", 12, seed=2)
    trace, metrics = generate.write_nvprof(_mk(root / "old" / "metrics"), 40, seed=3, stem="app")
    trace.rename(_mk(root / "old" / "traces") / trace.name)  # magus keeps metrics/ and traces/ side by side
    (root / "README.md").write_text("# profiles of the training step\n")
    (root / "step1" / "collect.sh").write_text("ncu --csv --page raw python train.py > train.ncu.csv\n")
    (root / "step1" / "failed.csv").write_text(ERROR_ONLY)
    (_mk(root / ".cache") / "hidden.csv").write_text("not read\n")
    return root


def _mk(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _readable(root: Path) -> list[Path]:
    skip = {"README.md", "collect.sh", "failed.csv"}
    return [c.path for c in expand([root]) if c.path.name not in skip]


def test_nested_files_are_found_in_a_stable_order_and_hidden_ones_ignored(tree: Path) -> None:
    names = [c.path.relative_to(tree).as_posix() for c in expand([tree])]
    assert names == ["README.md", "old/metrics/app_metrics.csv", "old/traces/app_trace.csv", "step1/collect.sh",
                     "step1/failed.csv", "step1/ncu/train.ncu.csv", "step2/details_no_extension"]
    assert all(not c.explicit for c in expand([tree]))


def test_non_profiler_files_are_skipped_and_reported(tree: Path) -> None:
    result = read_inputs([tree], jobs=1)
    rows = {Path(r["path"]).name: r for r in profile_rows(result.inputs)}
    assert set(rows) == {"README.md", "collect.sh", "failed.csv", "app_metrics.csv", "app_trace.csv",
                         "train.ncu.csv", "details_no_extension"}
    for name in ("README.md", "collect.sh", "failed.csv"):
        assert rows[name]["status"].startswith("skipped: ") and rows[name]["kernels"] == 0
        assert any(name in w and "skipped" in w for w in result.warnings)
    assert "no table" in rows["failed.csv"]["status"]
    assert rows["train.ncu.csv"] == {"path": str(tree / "step1/ncu/train.ncu.csv"), "format": "ncu-raw",
                                     "kernels": 24, "device": "NVIDIA B200", "status": "ok"}
    assert rows["details_no_extension"]["format"] == "ncu-details"
    assert rows["app_trace.csv"]["status"].startswith("ok, ")  # memcpy rows skipped and counted
    assert [i.format for i in result.inputs].count(NOT_PROFILER) == 3


def test_files_of_one_run_still_merge_across_folders(tree: Path) -> None:
    kernels = read_inputs([tree], jobs=1).kernels
    nvprof = kernels[kernels["source"].str.endswith("app_metrics.csv")]
    assert len(nvprof) > 0
    assert nvprof["duration_ns"].notna().all()  # the trace in traces/ joined the metrics in metrics/
    assert nvprof["invocations"].sum() == 40
    assert (kernels["source"].str.endswith("train.ncu.csv")).sum() == 24
    assert kernels["kernel_id"].is_unique


def test_parallel_path_gives_the_serial_result(tree: Path) -> None:
    serial = read_inputs([tree], jobs=1)
    parallel = read_inputs([tree], jobs=2)
    plain = read_profiles(_readable(tree))
    pd.testing.assert_frame_equal(parallel.kernels, serial.kernels)
    pd.testing.assert_frame_equal(serial.kernels, plain.kernels)
    assert profile_rows(parallel.inputs) == profile_rows(serial.inputs)
    assert parallel.warnings == serial.warnings


def test_progress_callback_sees_every_file(tree: Path) -> None:
    seen: list[tuple[int, int]] = []
    read_inputs([tree], jobs=2, on_file=lambda done, total, path: seen.append((done, total)))
    assert sorted(seen) == [(i, 4) for i in range(1, 5)]


def test_combined_json_report_lists_each_file(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", str(tree), "--gpu", "b200", "--format", "json", "-q", "-m", "roofline"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    document = json.loads(out)
    listed = {Path(p["path"]).name: p["status"] for p in document["profiles"]}
    assert len(listed) == 7 and listed["train.ncu.csv"] == "ok" and listed["README.md"].startswith("skipped")
    assert document["kernel_count"] == len(read_inputs([tree], jobs=1).kernels)


def test_combined_markdown_and_workbook_list_each_file(tree: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", str(tree), "--gpu", "b200", "-q", "-m", "roofline"]) == 0
    markdown = capsys.readouterr().out
    section = markdown.split("## Profiles", 1)[1].split("\n## ", 1)[0]
    assert section.count("\n| ") == 1 + 7  # the header and one row per file
    assert "skipped: no profiler table" in section
    from openpyxl import load_workbook

    out = tmp_path / "review.xlsx"
    assert cli.main(["analyze", str(tree), "--gpu", "b200", "-q", "-m", "roofline", "-o", str(out)]) == 0
    sheet = load_workbook(out, read_only=True)["Profiles"]
    rows = [r for r in sheet.iter_rows(values_only=True) if r and r[0]]
    header = rows.index(("File", "Format", "Kernels", "Device", "Status"))
    assert len(rows[header + 1:]) == 7


def test_a_file_named_explicitly_must_still_import(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", str(tree / "README.md"), "--gpu", "b200", "-q"]) == 1
    assert "README.md" in capsys.readouterr().err
    with pytest.raises(InputError):
        read_inputs([tree / "step1" / "failed.csv"])


def test_a_folder_without_profiles_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here\n")
    with pytest.raises(InputError, match="no profiler output found"):
        read_inputs([tmp_path])


def test_single_file_reports_have_no_profiles_section(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", str(tree / "step1/ncu/train.ncu.csv"), "--gpu", "b200", "-q", "-m", "roofline"]) == 0
    assert "## Profiles" not in capsys.readouterr().out


def test_a_readme_whose_line_starts_with_kernels_is_not_a_kernel_table(realdata_dir: Path, tmp_path: Path) -> None:
    """amaris-kepler-maxwell/README.md has a prose line 'kernels: many sizes ...': the folder still reads,
    the README is skipped as not profiler output, and the five GPUs' records are all there."""
    folder = realdata_dir / "amaris-kepler-maxwell"
    if not folder.is_dir():
        pytest.skip("amaris-kepler-maxwell is not present")
    result = read_inputs([folder])
    assert len(result.kernels) == 295 + 297 + 297 + 297 + 273
    assert result.kernels["device"].nunique() == 5
    readme = tmp_path / "kernels.yaml"
    readme.write_text("# notes\nkernels: many sizes x blocks 64/256/1024\n", encoding="utf-8")
    with pytest.raises(InputError):  # named explicitly, it must say it is not a kernel table
        read_profiles([readme])


def test_workers_only_where_the_parsing_is_shared_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool of workers for large inputs whose bytes are spread over files, this process for small inputs
    and for one file holding most of the bytes (an nvprof trace beside its small metrics file)."""
    from nvperf_bridge import discovery

    def sized(name: str, size: int) -> Path:
        path = tmp_path / name
        with open(path, "wb") as fh:
            fh.truncate(size)  # sparse: no disk space, only a size
        return path

    big, other, small = sized("a.csv", 18 << 20), sized("b.csv", 18 << 20), sized("c.csv", 1 << 20)
    assert discovery.parallel_pays([big, other, small])
    assert not discovery.parallel_pays([big, small])  # one file most of the bytes
    assert not discovery.parallel_pays([small, sized("d.csv", 1 << 20)])  # under IN_PROCESS_BYTES in all
    seen = []
    monkeypatch.setattr(discovery, "classify", lambda candidate: None)
    monkeypatch.setattr(discovery, "_parse_all", lambda paths, workers, *rest: seen.append(workers) or [])
    monkeypatch.setattr(discovery, "workers_for", lambda count, jobs=None: jobs or 2)
    monkeypatch.setattr("nvperf_bridge.importers.merge.combine", lambda parsed: type("R", (), {"inputs": [],
                                                                                            "warnings": []})())
    for paths, workers in (([big, other, small], 2), ([big, small], 1)):
        read_inputs(paths)
        assert seen.pop() == workers
    read_inputs([big, small], jobs=2)  # asked for: as asked
    assert seen.pop() == 2

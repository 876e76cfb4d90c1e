"""``nvperf-bridge gpus`` through the public CLI entry point: exit code, stdout, stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvperf_bridge.cli import main
from nvperf_bridge.datasheet import datasheet_rows
from nvperf_bridge.gpu import SOURCED_FIELDS, builtin_profile_dir, load_profiles

# the YAML profiles and one profile per datasheet row (a YAML file replaces the row of its id)
SHIPPED_IDS = sorted({p.stem for p in builtin_profile_dir().glob("*.yaml")} | {row["id"] for row in datasheet_rows()})


def _user_profile(tmp_path: Path, pid: str = "lab-gpu", **extra: Any) -> Path:
    data = {
        "schema_version": 1, "id": pid, "name": "Lab GPU", "match": ["Lab GPU"],
        "compute_capability": "8.9", "sm_count": 12, "cores_per_sm": 128, "max_warps_per_sm": 48,
        "max_blocks_per_sm": 24, "registers_per_sm": 65536, "shared_mem_per_sm_bytes": 102400,
        "sm_clock_mhz": 2000, "memory_bandwidth_gb_per_s": 250,
        "sources": {name: "measured in our lab" for name in SOURCED_FIELDS},
        **extra,
    }
    path = tmp_path / f"{pid}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_gpus_lists_one_line_per_profile(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["gpus"])
    out, err = capsys.readouterr()
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["ID", "CC", "SMs", "CLOCK", "BANDWIDTH"]
    body = lines[1:]
    assert [line.split()[0] for line in body] == SHIPPED_IDS
    h100 = next(line for line in body if line.startswith("h100-sxm "))
    assert h100.split()[1:4] == ["9.0", "132", "1980"]
    assert "3350 GB/s" in h100 and "H100" in h100
    gtx280 = next(line for line in body if line.startswith("gtx280 "))
    assert gtx280.split()[1:4] == ["1.3", "30", "1300"] and "141.7 GB/s" in gtx280


def test_gpus_json_is_machine_readable(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["gpus", "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    rows = {row["id"]: row for row in json.loads(out)["profiles"]}
    assert sorted(rows) == SHIPPED_IDS
    v100 = rows["v100-sxm2"]
    assert (v100["compute_capability"], v100["sm_count"], v100["sm_clock_mhz"], v100["memory_bandwidth_gb_per_s"]) == (
        "7.0", 80, 1530.0, 900.0)
    assert v100["calibrated"] is False


def test_profile_dir_adds_user_profiles_and_marks_calibrated(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _user_profile(tmp_path)
    _user_profile(tmp_path, "lab-gpu-tuned", calibration={"on": "bench.csv"})
    code = main(["gpus", "--profile-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert set(SHIPPED_IDS) < set(lines)
    assert lines["lab-gpu"].split()[1:3] == ["8.9", "12"] and "calibrated" not in lines["lab-gpu"]
    assert lines["lab-gpu-tuned"].endswith("[calibrated]")
    shipped_calibrated = {pid for pid in SHIPPED_IDS if "calibration" in load_profiles()[pid].raw}
    for pid in SHIPPED_IDS:
        assert lines[pid].endswith("[calibrated]") == (pid in shipped_calibrated), lines[pid]


def test_broken_user_profile_is_one_line_naming_file_and_key(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _user_profile(tmp_path, sm_cuont=12)
    code = main(["gpus", "--profile-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "lab-gpu.yaml" in err and "sm_cuont" in err


def test_missing_profile_dir_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["gpus", "--profile-dir", str(tmp_path / "nope")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "nope" in err


def test_gpus_command_module_does_not_import_pandas(tmp_path: Path) -> None:
    code = ("import sys\n"
            "from nvperf_bridge.commands.gpus import profile_rows\n"
            "profile_rows([])\n"
            "sys.exit('pandas' in sys.modules)")
    # cwd outside the checkout: `python -c` puts the cwd first on sys.path, and the source
    # tree is not the installed package (plugins/ and profiles/ are mapped into it on install)
    assert subprocess.run([sys.executable, "-c", code], check=False, cwd=tmp_path).returncode == 0

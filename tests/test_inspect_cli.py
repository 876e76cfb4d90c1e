"""``nvperf-bridge inspect``: exit codes, stdout and stderr."""

from __future__ import annotations

import json
from pathlib import Path

from nvperf_bridge.cli import main

FIX = Path(__file__).parent / "fixtures" / "import"


def test_inspect_text(capsys) -> None:
    code = main(["inspect", str(FIX / "nvprof_metrics.csv"), str(FIX / "nvprof_trace.csv")])
    out, err = capsys.readouterr()
    assert code == 0
    assert "nvprof-metrics" in out and "nvprof-trace" in out
    assert "skipped 2 rows: memcpy" in out
    assert "duration_ns (2)" in out  # mysgemmNT and the trace-only kernel
    assert "missing:" in out and "sm__cycles_elapsed.avg" in out
    assert "trace_only_kernel" in err  # the join warning goes to stderr


def test_inspect_json(capsys) -> None:
    code = main(["inspect", "--json", str(FIX / "ncu_details_old.log")])
    out, _ = capsys.readouterr()
    assert code == 0
    report = json.loads(out)
    assert report["files"][0]["format"] == "ncu-details"
    assert report["kernels"] == 2
    assert report["filled"]["duration_ns"] == 2
    assert report["filled"]["achieved_occupancy"] == 1
    assert "inst_issued" in {m["column"] for m in report["missing"]}
    assert report["devices"] == ["Tesla V100-SXM2-16GB"]
    assert "gpu_profile" in report


def test_inspect_error_is_one_line(capsys) -> None:
    code = main(["inspect", str(FIX / "ncu_error_only.csv")])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "==ERROR==" in err and "Traceback" not in err

"""``nvperf-bridge metrics``: the command line that collects what the installed models need."""

from __future__ import annotations

import json

from nvperf_bridge.cli import main
from nvperf_bridge.importers.aliases import aliases


def test_ncu_command_covers_model_inputs_and_is_readable_back(capsys) -> None:
    assert main(["metrics"]) == 0
    out, err = capsys.readouterr()
    line = out.strip().splitlines()[0]
    assert line.startswith("ncu --csv --page raw --print-units base --metrics ")
    metrics = line.split("--metrics ", 1)[1].split(" ")[0].split(",")
    for needed in ("gpu__time_duration.sum", "smsp__inst_executed.sum", "launch__grid_size",
                   "sm__warps_active.avg.pct_of_peak_sustained_active"):
        assert needed in metrics
    # every metric we ask for is one the importer knows how to map
    known = set(aliases())
    assert [m for m in metrics if m not in known] == []
    assert "covers:" in err


def test_nvprof_guidance(capsys) -> None:
    assert main(["metrics", "--profiler", "nvprof", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "achieved_occupancy" in data["metrics"]
    assert "gld_transactions_per_request" in data["metrics"]
    assert any("--print-gpu-trace" in c for c in data["commands"])
    assert "duration_ns" in data["from_trace"]


def test_bad_profiler_is_usage_error(capsys) -> None:
    assert main(["metrics", "--profiler", "perf"]) == 2
    assert "ncu" in capsys.readouterr().err


def test_nvprof_asks_only_for_what_the_importers_read(capsys) -> None:
    """Every name in the nvprof command is mapped by data/metric_aliases.csv or read raw by the models
    (counters.NVPROF_RAW_INPUTS); a name no importer reads is listed under not_mapped, not asked for;
    no event is asked (event names differ per compute capability and nvprof stops on an unknown one)."""
    from nvperf_bridge.counters import NVPROF_RAW_INPUTS
    from nvperf_bridge.importers.aliases import alias_metrics

    assert main(["metrics", "--profiler", "nvprof", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    readable = alias_metrics() | set(NVPROF_RAW_INPUTS)
    assert [m for m in data["metrics"] if m not in readable] == []
    assert data["events"] == []
    assert not set(data["not_mapped"]) & set(data["metrics"])  # a name no importer reads is named, not asked
    # what the sector conversion and the wide-word rule read (counters.global_sectors, requested_sectors)
    assert {"global_hit_rate", "gld_efficiency", "gst_efficiency"} <= set(data["metrics"])
    command = data["commands"][0]
    assert "--events" not in command and "l2_l1_read_transactions" not in command  # Kepler-only, named in a hint

"""Input side of issue 18: what the command line's reading path checks (range checks, encodings, cut files)."""

from __future__ import annotations

from pathlib import Path

from nvperf_bridge.discovery import read_inputs

TRACE_HEAD = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
              '"Static SMem","Dynamic SMem","Size","Throughput","Device","Context","Stream","Name"\n'
              "ms,us,,,,,,,,B,B,KB,MB/s,,,,\n")


def _trace_row(start: float, duration: str, name: str, corr: int) -> str:
    return (f'{start},{duration},64,1,1,256,1,1,32,0,0,,,"GeForce GTX 1080 Ti (0)","1","7","{name} [{corr}]"\n')


def test_command_line_path_runs_the_range_checks(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(TRACE_HEAD + _trace_row(1.0, "12.5", "k1(float*)", 10) + _trace_row(2.0, "-5.0", "k2(float*)", 11))
    result = read_inputs([path], jobs=1)
    k = result.kernels.set_index("kernel_name")
    assert k.loc["k1(float*)", "duration_ns"] == 12500.0
    assert k.loc["k2(float*)", "duration_ns"] != k.loc["k2(float*)", "duration_ns"]  # NaN: dropped, never used
    warning = next(w for w in result.warnings if "duration_ns" in w)
    assert f"{path}:4" in warning and "-5000" in warning

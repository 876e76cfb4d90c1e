"""Two ncu files of one run, one holding DRAM throughput (bytes = rate x duration, the time in disguise)
and one the counted DRAM bytes: the counted value is kept whichever file comes first, and the time mark
follows the value kept (issue 13's join, issue 15's leak guard). Shape of `ncu --csv --page raw`."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.importers import read_profiles
from nvperf_bridge.importers.derivations import time_derived, without_time_derived

HEAD = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",' \
       '"Device","CC",'
UNITS = '"","","","","","","","","","","",'
LAUNCH = '"{id}","4242","train","node1","{name}","1","7","(256, 1, 1)","(1024, 1, 1)","NVIDIA A100-SXM4-40GB","8.0",'


def _write(path: Path, metrics: list[tuple[str, str]], rows: list[tuple[str, str, list[str]]]) -> Path:
    lines = [HEAD + ",".join(f'"{m}"' for m, _ in metrics), UNITS + ",".join(f'"{u}"' for _, u in metrics)]
    lines += [LAUNCH.format(id=i, name=n) + ",".join(f'"{v}"' for v in values) for i, n, values in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def run_files(tmp_path: Path) -> tuple[Path, Path]:
    # 1 TB/s over 1 us and 2 us: 1 MB and 2 MB "read", computed from the measured time
    rates = _write(tmp_path / "speed_of_light.csv",
                   [("gpu__time_duration.sum", "nsecond"), ("dram__bytes_read.sum.per_second", "byte/second")],
                   [("0", "axpy(float*)", ["1000", "1000000000000"]),
                    ("1", "gemm(float*)", ["2000", "1000000000000"])])
    # the counted bytes of the same launches; the second launch's counter was not collected
    counted = _write(tmp_path / "dram_bytes.csv", [("dram__bytes_read.sum", "byte")],
                     [("0", "axpy(float*)", ["777216"]), ("1", "gemm(float*)", [""])])
    return rates, counted


@pytest.mark.parametrize("counted_first", [False, True])
def test_counted_dram_bytes_beat_the_rate_times_duration(run_files: tuple[Path, Path], counted_first: bool) -> None:
    rates, counted = run_files
    k = read_profiles([counted, rates] if counted_first else [rates, counted]).kernels.set_index("kernel_name")
    assert k.loc["axpy(float*)", "dram_read_bytes"] == 777216  # the counter, not 1e12 B/s x 1000 ns
    assert k.loc["gemm(float*)", "dram_read_bytes"] == pytest.approx(2e6)  # only the rate has it: derived, kept
    timed = time_derived(k, "dram_read_bytes")
    assert not timed["axpy(float*)"] and timed["gemm(float*)"]
    # what the accuracy figures read: the counted value survives, the time-derived one is blanked
    clean = without_time_derived(k)
    assert clean.loc["axpy(float*)", "dram_read_bytes"] == 777216
    assert clean["dram_read_bytes"].isna()["gemm(float*)"]

"""nvprof metrics <-> trace join (issue 13): matched on the most specific name part both files print,
never two different kernels, ambiguity kept unjoined and named per kernel. Shapes copied from magus."""

from __future__ import annotations

from pathlib import Path

from nvperf_bridge.importers import read_profiles

METRICS_HEAD = ('==22569== Profiling application: ./app\n==22569== Profiling result:\n==22569== Metric result:\n'
                '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n')
TRACE_HEAD = ('==23697== Profiling application: ./app\n==23697== Profiling result:\n'
              '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
              '"Static SMem","Dynamic SMem","Size","Throughput","Device","Context","Stream","Name"\n'
              'ms,us,,,,,,,,KB,B,KB,MB/s,,,,\n')
DEV = '"GeForce GTX 1080 Ti (0)"'


def _metrics(tmp_path: Path, kernels: dict[str, int]) -> Path:
    rows = [f'{DEV},"{name}",1,"inst_executed","Instructions Executed",{inst},{inst},{inst}'
            for name, inst in kernels.items()]
    path = tmp_path / "metrics.csv"
    path.write_text(METRICS_HEAD + "\n".join(rows) + "\n")
    return path


def _trace(tmp_path: Path, launches: list[tuple[str, float, int]]) -> Path:
    rows = [f'{573.0 + i},{duration},{grid},1,1,256,1,1,32,0,0,,,{DEV},"1","7","{name} [{1165 + i}]"'
            for i, (name, duration, grid) in enumerate(launches)]
    path = tmp_path / "trace.csv"
    path.write_text(TRACE_HEAD + "\n".join(rows) + "\n")
    return path


def test_overloads_pair_with_their_own_launches(tmp_path: Path) -> None:
    metrics = _metrics(tmp_path, {"scale(float*, int)": 1000, "scale(double*, int)": 2000})
    trace = _trace(tmp_path, [("scale(double*, int)", 20.0, 8), ("scale(float*, int)", 10.0, 4),
                              ("scale(float*,int)", 12.0, 4)])  # the same kernel spelled without the space
    k = read_profiles([metrics, trace]).kernels.set_index("kernel_name")
    assert k.loc["scale(float*, int)", "inst_executed"] == 1000
    assert k.loc["scale(float*, int)", "duration_ns"] == 11000.0  # mean of its two launches, in ns
    assert k.loc["scale(float*, int)", "invocations"] == 2
    assert k.loc["scale(double*, int)", "duration_ns"] == 20000.0
    assert k.loc["scale(double*, int)", "grid_blocks"] == 8


def test_a_missing_overload_never_takes_another_kernels_time(tmp_path: Path) -> None:
    # the metrics file holds scale(float*, int), the trace only scale(double*, int): different kernels
    metrics = _metrics(tmp_path, {"scale(float*, int)": 1000})
    trace = _trace(tmp_path, [("scale(double*, int)", 20.0, 8)])
    result = read_profiles([metrics, trace])
    k = result.kernels.set_index("kernel_name")
    assert k.loc["scale(float*, int)", "inst_executed"] == 1000
    assert k.loc["scale(float*, int)", "duration_ns"] != k.loc["scale(float*, int)", "duration_ns"]  # NaN
    assert k.loc["scale(double*, int)", "duration_ns"] == 20000.0  # kept, without counters
    assert any("no kernel of these metrics is in the trace" in w for w in result.warnings)


def test_a_bare_name_with_several_candidates_stays_unjoined_and_is_named(tmp_path: Path) -> None:
    metrics = _metrics(tmp_path, {"scale": 1000})
    trace = _trace(tmp_path, [("scale(double*, int)", 20.0, 8), ("scale(float*, int)", 10.0, 4)])
    result = read_profiles([metrics, trace])
    k = result.kernels
    assert len(k) == 3
    bare = k[k["kernel_name"] == "scale"].iloc[0]
    assert bare["duration_ns"] != bare["duration_ns"]
    warning = next(w for w in result.warnings if "could be any of" in w)
    assert "'scale'" in warning and "double*" in warning and "float*" in warning


def test_a_bare_name_with_one_candidate_pairs(tmp_path: Path) -> None:
    metrics = _metrics(tmp_path, {"cuda_compute_flux": 1000})
    trace = _trace(tmp_path, [("cuda_compute_flux(int, int*, float*, float*, float*)", 30.0, 8)])
    result = read_profiles([metrics, trace])
    assert len(result.kernels) == 1
    assert result.kernels["duration_ns"].iloc[0] == 30000.0
    assert any("bare function name" in n for n in result.inputs[0].notes)


def test_nvprof_and_ncu_template_spellings_pair(tmp_path: Path) -> None:
    metrics = _metrics(tmp_path, {"void matrixMulCUDA<int=32>(float*, float*, float*, int, int)": 1000,
                                  "void matrixMulCUDA<int=16>(float*, float*, float*, int, int)": 500})
    trace = _trace(tmp_path, [("void matrixMulCUDA<(int)32>(float *, float *, float *, int, int)", 40.0, 8),
                              ("void matrixMulCUDA<(int)16>(float *, float *, float *, int, int)", 10.0, 8)])
    k = read_profiles([metrics, trace]).kernels.set_index("kernel_name")
    assert k.loc["void matrixMulCUDA<int=32>(float*, float*, float*, int, int)", "duration_ns"] == 40000.0
    assert k.loc["void matrixMulCUDA<int=16>(float*, float*, float*, int, int)", "duration_ns"] == 10000.0

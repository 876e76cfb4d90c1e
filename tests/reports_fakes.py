"""Small hand-made Analysis objects for the report tests (no importers, no real models).

``make_analysis()`` builds seven kernels with awkward names (formula-looking,
Markdown-breaking, very long C++ templates), two models that ran (with
intermediate quantities, constants of every status and per-kernel errors) and
one that failed as a whole.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nvperf_bridge.analysis import Analysis, ModelRun
from nvperf_bridge.gpu import resolve_profile
from nvperf_bridge.kernelframe import InputFile
from nvperf_bridge.model import ResolvedConstant

LONG_NAME = (
    "void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::MmaMultistage<"
    "cutlass::gemm::GemmShape<128, 128, 32>, float, cutlass::layout::RowMajor>>>(Params)"
)

NAMES = [
    ("vecAdd", "vecAdd(float const*, float const*, float*, int)"),
    ("=HYPERLINK(\"http://x\",\"click\")", "=HYPERLINK(\"http://x\",\"click\")"),
    ("a|b`c<d>*e_f", "a|b`c<d>*e_f(int)"),
    ("cutlass::Kernel", LONG_NAME),
    ("+1-2", "+1-2"),
    ("@sum", "@sum"),
    ("#N/A", "#N/A"),
]
MEASURED_NS = [12_000.0, 800.0, 45_000.0, 2_500_000.0, np.nan, 3_100.0, 150.0]
TIMESTAMP = "2025-01-31T12:00:00+00:00"


def make_kernels(count: int | None = None) -> pd.DataFrame:
    names = NAMES if count is None else [(f"k{i}", f"kernel_{i}(float*)") for i in range(count)]
    measured = MEASURED_NS if count is None else list(np.linspace(1_000.0, 5_000_000.0, count))
    n = len(names)
    return pd.DataFrame({
        "kernel_id": [str(i) for i in range(n)],
        "kernel_name": [full for _, full in names],
        "kernel": [short for short, _ in names],
        "source": ["profile.csv"] * n,
        "source_row": list(range(2, n + 2)),
        "device": ["NVIDIA GeForce GTX 280"] * n,
        "invocations": [1] * n,
        "grid_blocks": [256 + i for i in range(n)],
        "block_threads": [128] * n,
        "duration_ns": measured,
        "achieved_occupancy": [0.5 + 0.01 * (i % 40) for i in range(n)],
        "inst_executed": [1e6 * (i + 1) for i in range(n)],
        "dram_read_bytes": [4e6 * (i + 1) for i in range(n)],
        "smsp__pcsamp_sample_count": [float(i) for i in range(n)],  # a raw, non-canonical counter
    })


def _run(model_id: str, kernels: pd.DataFrame, factor: float, labels: list[str], errors: dict[int, str]) -> ModelRun:
    measured = kernels["duration_ns"].fillna(10_000.0).to_numpy()
    n = len(kernels)
    error = pd.Series([errors.get(i, "") for i in range(n)], index=kernels.index, dtype="object")
    predicted = pd.Series(measured * factor, index=kernels.index).where(error == "")
    result = pd.DataFrame({
        "predicted_ns": predicted,
        "predicted_cycles": predicted * 1.3,
        "bottleneck": [labels[i % len(labels)] if not errors.get(i) else "unknown" for i in range(n)],
        "state": ["MWP < CWP" if i % 2 else "=cmd|' /C calc'!A0" for i in range(n)],
        "error": error,
        "MWP": np.linspace(1.0, 8.0, n),
        "CWP": np.linspace(2.0, 9.0, n),
        "Mem_L": np.full(n, 420.0),
    }, index=kernels.index)
    constants = {
        "Mem_LD": ResolvedConstant(420.0, "Hong & Kim Table 5", "paper"),
        "Departure_del_coal": ResolvedConstant(4.0, "model default", "default"),
        "a": ResolvedConstant(1.25, "calibrated on rodinia-2025", "calibrated"),
    }
    return ModelRun(model_id, "1.0", f"{model_id} et al., Conf'09, Eq. (1)-(20)", f"entry point {model_id}",
                    result, constants)


def make_analysis(count: int | None = None) -> Analysis:
    """The standard fake: models 'alpha' (1.2x measured), 'beta' (0.5x, two errors), 'gamma' failed."""
    kernels = make_kernels(count)
    gpu = resolve_profile("gtx280")
    runs = {
        "alpha": _run("alpha", kernels, 1.2, ["memory-bandwidth", "compute", "memory-latency"], {}),
        "beta": _run("beta", kernels, 0.5, ["memory-bandwidth", "parallelism"],
                     {1: "missing inst_executed (ncu --metrics smsp__inst_executed.sum)",
                      2: "missing inst_executed (ncu --metrics smsp__inst_executed.sum)"}),
        "gamma": ModelRun("gamma", "0.3", "Gamma, 2011", "file plugins/gamma.py", None,
                          failure="ModelError: needs sm_cycles in every row"),
    }
    inputs = [InputFile("profile.csv", "ncu-raw", len(kernels), "NVIDIA GeForce GTX 280",
                        skipped=["2 memcpy rows (not kernels)"])]
    warnings = ["profile.csv: 2 memcpy rows (not kernels) skipped",
                "model gamma produced no results: needs sm_cycles in every row"]
    return Analysis(kernels, gpu, "--gpu gtx280", runs, inputs, warnings, tool_version="9.9.9", created=TIMESTAMP)

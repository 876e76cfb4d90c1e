"""Transit (Li, Tay, Kumar, Corporaal, HPDC'15) bandwidth sensitivity: time against the memory bandwidth R.

    python examples/sweeps/transit_bandwidth.py [--out docs/sweeps]

The paper's optimisation advice for a memory-bound kernel (Fig. 14) is to lift the flat part of
f(k), i.e. raise R, which helps "until delta arrives at g(x), at which the machine becomes thread
bound"; for a computation-bound kernel (Figs. 15-16) only M helps, not R or Z. This sweep scales
the Tesla C2075's memory bandwidth (and so R = R_fraction x bandwidth / SMs) from 1/8 to 8 times
its 144 GB/s and runs the transit model on the four kernels of examples/papers/transit-tesla-c2075.yaml
(compute, stream, few-threads, dp-stream), recording the predicted time and Transit's bound.

Writes transit-bandwidth.png and transit-bandwidth.csv to --out.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _sweep.py, the scripts' shared helpers
from _sweep import ROOT, log2_x, panels, plain_log_y, run  # noqa: E402

EXAMPLE = ROOT / "examples" / "papers" / "transit-tesla-c2075.yaml"
GPU = "tesla-c2075"
SCALES = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0]


def scaled_profile(gpu, scale: float):
    """The profile with its memory bandwidth times ``scale`` (every other fact and constant unchanged)."""
    bandwidth = gpu.memory_bandwidth_gb_per_s * scale
    return dataclasses.replace(gpu, id=f"{gpu.id}-bw-x{scale:g}", memory_bandwidth_gb_per_s=bandwidth,
                               raw={**gpu.raw, "memory_bandwidth_gb_per_s": bandwidth})


def sweep() -> pd.DataFrame:
    from nvperf_bridge.analysis import run_models
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.registry import load_registry

    kernels = read_inputs([EXAMPLE]).kernels
    base = resolve_profile(GPU)
    registry = load_registry()
    rows = []
    for scale in SCALES:
        gpu = scaled_profile(base, scale)
        runs, _ = run_models(kernels, gpu, registry, ["transit"])
        result = runs["transit"].result
        for i in kernels.index:
            rows.append({"kernel": kernels.loc[i, "kernel"], "bandwidth_scale": scale,
                         "bandwidth_gb_per_s": gpu.memory_bandwidth_gb_per_s,
                         "predicted_ms": result.loc[i, "predicted_ns"] / 1e6,
                         "bottleneck": result.loc[i, "bottleneck"], "state": result.loc[i, "state"]})
    return pd.DataFrame(rows)


def figure(table: pd.DataFrame) -> bytes:
    from nvperf_bridge.reports.common import BOTTLENECK_COLORS
    from nvperf_bridge.reports.figures import MODEL_STYLES, figure_bytes

    fig, (ax,) = panels([GPU], 7.6, 4.8)
    for k, kernel in enumerate(dict.fromkeys(table["kernel"])):
        rows = table[table["kernel"] == kernel].sort_values("bandwidth_gb_per_s")
        color, marker = MODEL_STYLES[k]
        ax.plot(rows["bandwidth_gb_per_s"], rows["predicted_ms"], color=color, label=kernel)
        ax.scatter(rows["bandwidth_gb_per_s"], rows["predicted_ms"], marker=marker, s=48, edgecolors=color,
                   c=[f"#{BOTTLENECK_COLORS.get(b, 'D9D9D9')}" for b in rows["bottleneck"]], zorder=3)
    ax.axvline(144.0, color="grey", linestyle=":", label="Tesla C2075 (144 GB/s)")
    log2_x(ax, sorted(set(table["bandwidth_gb_per_s"])))
    plain_log_y(ax)
    ax.set_xlabel("memory bandwidth (GB/s)")
    ax.set_ylabel("transit predicted time (ms)")
    ax.set_title("Transit on the Tesla C2075, bandwidth scaled (marker fill = bound)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    used = sorted(set(table["bottleneck"]))
    handles += [Line2D([], [], marker="o", linestyle="", markerfacecolor=f"#{BOTTLENECK_COLORS.get(b, 'D9D9D9')}",
                       markeredgecolor="grey", label=b) for b in used]
    ax.legend(handles, labels + used, fontsize=8, loc="upper right")
    return figure_bytes(fig, dpi=110)


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, "transit-bandwidth", sweep, figure, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""Hong & Kim (ISCA'09) occupancy study: MWP, CWP and time against the active warps per SM.

    python examples/sweeps/hong_kim_occupancy.py [--out docs/sweeps]

The kernel is the tiled matrix multiplication of Section 3.6 / Table 2
(examples/papers/hong-kim-table2.yaml) on the paper's hypothetical machine
(profile hong-kim-example). Its grid is scaled to 1280 blocks (16 x the data)
so that #Rep > 1 at every occupancy, and the active warps per SM are varied
through the registers per thread (64, 32, 20, 16, 12, 10 registers: 1 to 6
blocks of 4 warps, N = 4 to 24; the occupancy calculator gives the blocks).
The same sweep runs on a coalesced variant of the kernel (#Coal_per_mw = 1
instead of 32 uncoalesced transactions per memory warp), the contrast of
Section 2.4 (Figures 4-5: the SVM Naive vs Constant cases).

Writes hong-kim-occupancy.png and hong-kim-occupancy.csv to --out.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _sweep.py, the scripts' shared helpers
from _sweep import ROOT, panels, run  # noqa: E402

EXAMPLE = ROOT / "examples" / "papers" / "hong-kim-table2.yaml"
REGISTERS = [64, 32, 20, 16, 12, 10]
GRID = 1280
GPU = "hong-kim-example"


def sweep() -> pd.DataFrame:
    """One row per (variant, registers): N, MWP, CWP, #Rep, predicted cycles and the model's state."""
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.whatif import run_study

    kernels = read_inputs([EXAMPLE]).kernels
    coalesced = kernels.copy()
    coalesced["kernel_name"] = coalesced["kernel"] = coalesced["kernel_id"] = "MatrixMulKernel_coalesced"
    coalesced["global_ld_sectors"] = coalesced["inst_global_ld"]  # 1 transaction per memory warp (Table 2 #Coal_per_mw)
    frames = []
    for variant, frame in (("uncoalesced (Table 2)", kernels), ("coalesced", coalesced)):
        study = run_study(frame, kernel=str(frame["kernel"].iloc[0]), gpu=GPU, model_ids=["hong-kim"],
                          vary={"grid_blocks": [GRID], "registers_per_thread": REGISTERS})
        result = study.results["hong-kim"]
        table = pd.concat([study.points[["point", "registers_per_thread", "grid_blocks", "theoretical_occupancy",
                                         "occupancy_limiter"]],
                           result[["N", "MWP", "CWP", "MWP_Without_BW", "MWP_peak_BW", "CWP_full", "Rep",
                                   "predicted_cycles", "state"]]], axis=1).iloc[1:]  # the varied points
        table.insert(0, "variant", variant)
        table["cycles_per_rep"] = table["predicted_cycles"] / table["Rep"]
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def figure(table: pd.DataFrame) -> bytes:
    from nvperf_bridge.reports.figures import figure_bytes

    variants = list(dict.fromkeys(table["variant"]))
    fig, axes = panels(variants, 11.0, 4.4)
    for ax, variant in zip(axes, variants):
        rows = table[table["variant"] == variant].sort_values("N")
        ax.plot(rows["N"], rows["N"], linestyle=":", color="grey", label="N (active warps)")
        ax.plot(rows["N"], rows["MWP"], marker="o", color="#1f77b4", label="MWP")
        ax.plot(rows["N"], rows["CWP"], marker="s", color="#d62728", label="CWP")
        ax.set_xlabel("active warps per SM (N)")
        ax.set_ylabel("warps")
        ax.set_title(f"MatrixMulKernel, {variant}", fontsize=10)
        ax.grid(True, alpha=0.3)
        twin = ax.twinx()
        twin.plot(rows["N"], rows["predicted_cycles"] / 1e3, marker="^", color="#2ca02c", label="predicted time")
        twin.set_ylabel("predicted time (k cycles)")
        twin.set_ylim(0, rows["predicted_cycles"].max() / 1e3 * 1.2)
        handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
        ax.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="center right")
    fig.suptitle(f"Hong-Kim on the Section 3.6 machine: {GRID} blocks of 128 threads, N varied by registers per thread",
                 fontsize=10)
    return figure_bytes(fig, dpi=110)


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, "hong-kim-occupancy", sweep, figure, argv)


if __name__ == "__main__":
    raise SystemExit(main())

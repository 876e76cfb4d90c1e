"""Kothapalli et al. (HiPC'09) list ranking at several sizes: Fig. 4(b), 256 K to 4 M elements, GTX 280.

    python examples/sweeps/kothapalli_list_ranking.py [--out docs/sweeps]

Section 5.2 (Case Study 2): the local-ranking kernel of recursive Hellman-JaJa list ranking on a
random list of N elements. The records follow examples/papers/kothapalli-list-ranking.yaml for each
N = 2^18 ... 2^22: N / log N threads in blocks of 512, 16 warps per block; per thread the most likely
sublist of 4 log N elements, each with 3 non-coalesced global accesses (2 reads, 1 write), computation
ignored. The kothapalli model (MAX, the paper shows only MAX: "MAX and SUM exhibit identical behavior")
predicts each size; beside it the paper's own closed form

    N_B x 16 x 32 / (8 x 4) x 4 log N x 3 x 500 / 1.3e9,   N_B = ceil(blocks / 30)

and the one measured time the text prints (24 ms at N = 2^22; the other measured points of Fig. 4(b)
are plotted, not printed).

Writes kothapalli-list-ranking.png and kothapalli-list-ranking.csv to --out.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _sweep.py, the scripts' shared helpers
from _sweep import log2_x, panels, run  # noqa: E402

GPU = "gtx280"
EXPONENTS = [18, 19, 20, 21, 22]
MEASURED_NS = {22: 24e6}  # Section 5.2: "the actual time for this kernel for N = 2^22 at 24 millisecond"
THREADS_PER_BLOCK = 512
SMS = 30


def records() -> pd.DataFrame:
    """One kernel record per list size, as a profiler would count the paper's kernel."""
    rows = []
    for e in EXPONENTS:
        n = 2 ** e
        log_n = math.log2(n)
        blocks = math.ceil(n / log_n / THREADS_PER_BLOCK)
        warps = blocks * THREADS_PER_BLOCK // 32
        elements = 4 * log_n  # the most likely sublist size
        ld, st = 2 * elements * warps, 1 * elements * warps
        rows.append({"kernel_id": f"N=2^{e}", "kernel_name": "list_rank_local", "kernel": "list_rank_local",
                     "device": "GeForce GTX 280", "grid_blocks": blocks, "block_threads": THREADS_PER_BLOCK,
                     "inst_executed": ld + st, "inst_global_ld": ld, "inst_global_st": st,
                     "global_ld_sectors": 32 * ld, "global_st_sectors": 32 * st, "inst_shared_ld": 0.0,
                     "inst_shared_st": 0.0, "inst_barrier": 0.0,
                     "duration_ns": MEASURED_NS.get(e, float("nan")), "list_elements": n,
                     # cycles / 1.3 GHz, in ns
                     "paper_formula_ns": math.ceil(blocks / SMS) * 16 * (32 / (8 * 4)) * elements * 3 * 500 / 1.3})
    return pd.DataFrame(rows)


def sweep() -> pd.DataFrame:
    from nvperf_bridge.analysis import run_models
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.registry import load_registry

    kernels = records()
    runs, _ = run_models(kernels, resolve_profile(GPU), load_registry(), ["kothapalli"])
    result = runs["kothapalli"].result
    return pd.DataFrame({"list_elements": kernels["list_elements"], "grid_blocks": kernels["grid_blocks"],
                         "kothapalli_ms": result["predicted_ns"] / 1e6,
                         "paper_formula_ms": kernels["paper_formula_ns"] / 1e6,
                         "measured_ms": kernels["duration_ns"] / 1e6, "bottleneck": result["bottleneck"],
                         "state": result["state"]})


def figure(table: pd.DataFrame) -> bytes:
    from nvperf_bridge.reports.figures import MODEL_STYLES, figure_bytes

    fig, (ax,) = panels([GPU], 7.0, 4.4)
    x = table["list_elements"] / 2 ** 20
    ax.plot(x, table["kothapalli_ms"], marker=MODEL_STYLES[0][1], color=MODEL_STYLES[0][0], label="kothapalli (MAX)")
    ax.plot(x, table["paper_formula_ms"], linestyle="--", marker="x", color="grey", label="paper's closed form")
    measured = table["measured_ms"].notna()
    ax.scatter(x[measured], table.loc[measured, "measured_ms"], marker="*", s=200, color="black", zorder=4,
               label="measured (printed in the text)")
    log2_x(ax, list(x), [f"{v:g} M" if v >= 1 else f"{v * 1024:g} K" for v in x])
    ax.set_xlabel("list size (elements)")
    ax.set_ylabel("time (ms)")
    ax.set_title("List ranking, local-ranking kernel on the GTX 280", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return figure_bytes(fig, dpi=110)


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, "kothapalli-list-ranking", sweep, figure, argv)


if __name__ == "__main__":
    raise SystemExit(main())

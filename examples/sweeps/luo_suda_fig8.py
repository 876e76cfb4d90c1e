"""Luo & Suda (2011) Fig. 8 trend: execution time against the warps per SM, same data size, GTX 260.

    python examples/sweeps/luo_suda_fig8.py [--out docs/sweeps]

The paper varies "the number of warps per SM from 1 to 32 ... with the same data size" (Section 4.2).
The kernels are the two worked examples of examples/papers/luo-suda-gtx260.yaml (linear, P = 45.8 %;
blackscholes, P = 87.0 %), rebuilt by nvperf_bridge.whatif with the total number of threads kept:
one block per SM of 1, 2, 4, 8 or 16 warps (9,000 bytes of shared memory per block leave room for
one block in the SM's 16 KB), then two blocks of 16 warps (no shared memory) for 32 warps. The
occupancy calculator gives the resident blocks; the luo-suda model (and hong-kim beside it) predicts
each point.

Writes luo-suda-fig8.png and luo-suda-fig8.csv to --out.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _sweep.py, the scripts' shared helpers
from _sweep import ROOT, log2_x, panels, plain_log_y, run  # noqa: E402

EXAMPLE = ROOT / "examples" / "papers" / "luo-suda-gtx260.yaml"
GPU = "gtx260"
ONE_BLOCK_SMEM = 9000  # bytes per block: one block fits in 16 KB, two do not
SETTINGS = [{"block_threads": 32.0 * w, "shared_mem_per_block_bytes": ONE_BLOCK_SMEM} for w in (1, 2, 4, 8, 16)] + [
    {"block_threads": 512.0, "shared_mem_per_block_bytes": 0.0}]
MODELS = ["luo-suda", "hong-kim"]
# the published form (Eq. 2 as printed, Section 3.4's P), and the same with only N_act dropped from
# Eq. (2)'s denominator (docs/models/luo-suda.md, note 6; the model's default also takes note 7)
PUBLISHED = {"mpd_form": "printed", "memory_cost": "per-instruction"}
PER_SM = "luo-suda (mpd_form per-sm)"
SERIES = [*MODELS, PER_SM]


def sweep() -> pd.DataFrame:
    from nvperf_bridge.analysis import run_models
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.occupancy import limits_for_profile, occupancy
    from nvperf_bridge.registry import load_registry

    kernels = read_inputs([EXAMPLE]).kernels
    gpu = resolve_profile(GPU)
    registry = load_registry()
    frames = []
    from nvperf_bridge.whatif import rebuild_records

    for _, base in kernels.iterrows():
        records, occ, _ = rebuild_records(base, SETTINGS, gpu, gpu, keep="work")
        runs, _ = run_models(records, gpu, registry, MODELS, {"luo-suda": PUBLISHED})
        table = pd.DataFrame({"kernel": base["kernel"], "block_threads": records["block_threads"],
                              "grid_blocks": records["grid_blocks"],
                              "shared_mem_per_block_bytes": records["shared_mem_per_block_bytes"],
                              "warps_per_sm": occ["theoretical_warps_per_sm"], "limiter": occ["occupancy_limiter"]})
        for mid in MODELS:
            table[f"{mid}.predicted_ms"] = runs[mid].result["predicted_ns"].to_numpy() / 1e6
        per_sm, _ = run_models(records, gpu, registry, ["luo-suda"], {"luo-suda": {**PUBLISHED, "mpd_form": "per-sm"}})
        table[f"{PER_SM}.predicted_ms"] = per_sm["luo-suda"].result["predicted_ns"].to_numpy() / 1e6
        table["luo-suda.N_act"] = runs["luo-suda"].result["N_act"].to_numpy()
        table["luo-suda.state"] = runs["luo-suda"].result["state"].to_numpy()
        # the limit the paper names: the kernel's DRAM traffic at the GPU's bandwidth
        dram = pd.to_numeric(records.get("global_ld_sectors"), errors="coerce") + pd.to_numeric(
            records.get("global_st_sectors"), errors="coerce")
        table["bandwidth_floor_ms"] = (dram * 32 / (gpu.memory_bandwidth_gb_per_s * 1e9) * 1e3).to_numpy()
        frames.append(table.drop_duplicates("warps_per_sm"))  # blackscholes' 20 registers cap it at 16 warps
    # the occupancy check the sweep relies on: each setting puts the intended warps on an SM
    limits = limits_for_profile(gpu)
    check = occupancy([s["block_threads"] for s in SETTINGS], [16] * len(SETTINGS),
                      [s["shared_mem_per_block_bytes"] for s in SETTINGS], limits)
    assert list(check["theoretical_warps_per_sm"]) == [1, 2, 4, 8, 16, 32], check
    return pd.concat(frames, ignore_index=True)


def figure(table: pd.DataFrame) -> bytes:
    from nvperf_bridge.reports.figures import MODEL_STYLES, figure_bytes

    kernels = list(dict.fromkeys(table["kernel"]))
    fig, axes = panels(kernels, 11.0, 4.2)
    for ax, kernel in zip(axes, kernels):
        rows = table[table["kernel"] == kernel].sort_values("warps_per_sm")
        for k, mid in enumerate(SERIES):
            color, marker = MODEL_STYLES[k]
            ax.plot(rows["warps_per_sm"], rows[f"{mid}.predicted_ms"], marker=marker, color=color, label=mid)
        ax.plot(rows["warps_per_sm"], rows["bandwidth_floor_ms"], linestyle="--", color="grey",
                label="DRAM traffic / bandwidth")
        log2_x(ax, [1, 2, 4, 8, 16, 32])
        plain_log_y(ax)
        ax.set_xlabel("warps per SM")
        ax.set_ylabel("predicted time (ms)")
        ax.set_title(f"{kernel} on the GTX 260 (same data size)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return figure_bytes(fig, dpi=110)


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, "luo-suda-fig8", sweep, figure, argv)


if __name__ == "__main__":
    raise SystemExit(main())

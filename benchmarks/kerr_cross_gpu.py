"""Kerr's cross-GPU form, measured leave-one-GPU-out on real kernels of several GPUs.

Usage (from the repository root)::

    python benchmarks/kerr_cross_gpu.py                 # ../shared/realdata/amaris-kepler-maxwell
    python benchmarks/kerr_cross_gpu.py FOLDER_OR_FILES  # any profiler files naming several devices

For each GPU G in the data (one device name), every kernel of G is predicted without any time
measured on G:

- *kerr cross-GPU*: ``fit kerr --cross-gpu`` on the other GPUs' kernels (their counters, times
  and datasheet parameters), evaluated on G's counters and G's datasheet parameters (Kerr et al.
  Sec. 6.5 "GPU Modeling");
- *scaled roofline*: the stock roofline on G times the median measured/roofline ratio of the
  other GPUs' kernels (the ``validate`` baseline, trained on the other GPUs);
- *other GPUs' mean*: the geometric mean of the same workload's times on the other GPUs (what
  the paper's POCS constraint centres on; no model at all).

Beside them, for reference, two fits that *do* use G's times (of other kernels):

- *kerr single-GPU, leave-one-out*: ``analyze``'s kerr on G alone (each workload left out);
- *kerr single-GPU, 5-fold by application*: ``fit kerr`` on G's other applications (``fit``'s
  grouped cross-validation; the application is the kernel function).

Per GPU and model: n, median APE and the share within 2x. A kernel's own time never enters its
prediction.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "realdata" / "amaris-kepler-maxwell"


def _stats(predicted: Any, measured: Any) -> tuple[int, float, float]:
    from nvperf_bridge.accuracy import accuracy_stats, within_factor_share

    stats = accuracy_stats(predicted, measured)
    return int(stats["n"]), stats["median_ape"], within_factor_share(predicted, measured)


def _cell(stats: tuple[int, float, float]) -> str:
    n, median, within = stats
    if not n or not math.isfinite(median):
        return "-"
    return f"{100 * median:.0f}% / {100 * within:.0f}% ({n})"


def read(paths: list[Path]) -> Any:
    from nvperf_bridge.discovery import read_inputs

    files: list[Path] = []
    for path in paths:
        files += sorted(f for f in path.iterdir() if f.suffix in (".csv", ".yaml", ".yml")) if path.is_dir() else [path]
    imported = read_inputs(files)
    return imported.kernels


def run(kernels: Any, folds: int = 5) -> list[dict[str, Any]]:
    """One dict per held-out GPU: label, n and the (n, median APE, within 2x) of each predictor."""
    import numpy as np
    import pandas as pd

    from nvperf_bridge.analysis import choose_gpus, device_labels
    from nvperf_bridge.builtin_plugins import kerr, kerr_machines, roofline
    from nvperf_bridge.calibration import CalibrationSettings, cross_validate_learned, measured_ns

    measured = measured_ns(kernels)
    kernels = kernels[measured.notna()]
    measured = measured[kernels.index]
    devices = device_labels(kernels)
    gpus = {device: profile for device, profile, _ in choose_gpus(kernels, None)}
    keys = pd.Series(kerr_machines.workload_keys(kernels), index=kernels.index)
    roof = pd.concat([roofline.MODEL.evaluate(kernels[devices == d], gpus[d], {})["predicted_ns"]
                      for d in gpus]).reindex(kernels.index)
    rows = []
    for held in gpus:
        test = devices == held
        train = kernels[~test]
        others = [d for d in gpus if d != held]
        data = kerr.fit(train, gpus[others[0]], {"cross_gpu": True, "gpus": gpus})
        cross = kerr.MODEL.evaluate(kernels[test], gpus[held], {"model_data": data, "gpus": gpus})["predicted_ns"]
        ratio = float((measured[~test] / roof[~test]).replace([np.inf, -np.inf], np.nan).median())
        mean_other = np.exp(np.log(measured[~test]).groupby(keys[~test]).mean())
        single_loo = kerr.MODEL.evaluate(kernels[test], gpus[held], {})["predicted_ns"]
        cv = cross_validate_learned(kerr.MODEL, kernels[test], gpus[held], CalibrationSettings(folds=folds), {},
                                    groups=kernels.loc[test, "kernel"].astype(str))
        rows.append({
            "gpu": held, "profile": gpus[held].id, "n": int(test.sum()),
            "form": data.get("form"), "machine_components": data["machine"]["n_components"],
            "cross": _stats(cross, measured[test]),
            "roofline": _stats(roof[test] * ratio, measured[test]),
            "mean_other": _stats(keys[test].map(mean_other), measured[test]),
            "single_loo": _stats(single_loo, measured[test]),
            "single_cv": _stats(cv.predicted, measured[test]) if cv.predicted is not None else (0, math.nan, math.nan),
        })
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    head = ("| held-out GPU | n | kerr cross-GPU (form, machine PCs) | scaled roofline | other GPUs' mean | "
            "kerr single-GPU LOO (uses G's times) | kerr single-GPU 5-fold by app (uses G's times) |\n"
            "|---|---|---|---|---|---|---|\n")
    lines = [f"| {r['gpu']} | {r['n']} | {_cell(r['cross'])} ({r['form']}, {r['machine_components']}) | "
             f"{_cell(r['roofline'])} | {_cell(r['mean_other'])} | {_cell(r['single_loo'])} | {_cell(r['single_cv'])} |"
             for r in rows]
    return ("median APE / within 2x (kernels predicted) on every kernel of the held-out GPU:\n\n" + head
            + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="*", type=Path, default=[DEFAULT])
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)
    missing = [p for p in args.inputs if not p.exists()]
    if missing:
        print(f"not found: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = run(read(args.inputs), args.folds)
    print(render(rows), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

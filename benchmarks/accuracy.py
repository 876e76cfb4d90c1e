"""Accuracy of every model on real kernels, measured on applications the fit never saw.

Usage (from the repository root)::

    python benchmarks/accuracy.py                       # magus-corpus + amaris-kepler-maxwell
    python benchmarks/accuracy.py DIR_OR_FILE ...       # any profiler folders / files
    python benchmarks/accuracy.py --models transit,hong-kim --folds 5

For each data set (one GPU: the rows of one device name) and each model it prints

- *stock*: the shipped profile's constants, no fitting: n, median APE, share within 2x,
  the 3 applications with the largest median APE;
- *fitted*: k-fold cross-validation grouped by application (all kernels of one
  metrics+trace pair or one input file in the same fold; for a single kernel-yaml file the
  kernel function is the application): constants fitted with ``calibrate``'s fitter on the
  training applications (learned models such as kerr: ``fit`` on them), every kernel
  predicted by a fit that never saw its application.

APE = |predicted - measured| / measured. The measured time is never an input to a prediction.
The default data lives in ``../shared/realdata`` (next to the repository); a missing folder is
skipped with a note. Output is Markdown, ready for README's Calibration section.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REALDATA = ROOT.parent / "shared" / "realdata"
DEFAULT_INPUTS = (REALDATA / "magus-corpus", REALDATA / "amaris-kepler-maxwell")


def _pct(value: float) -> str:
    import math

    return "-" if value is None or not math.isfinite(value) else f"{100 * value:.0f}%"


def _worst(items: list[tuple[str, float]]) -> str:
    return ", ".join(f"{name} {100 * ape:.0f}%" for name, ape in items) or "-"


def datasets(paths: list[Path]) -> list[tuple[str, Any]]:
    """(label, kernels with a measured time) per device found in the inputs."""
    from nvperf_bridge.discovery import read_inputs

    found = []
    for path in paths:
        if not path.exists():
            print(f"<!-- {path}: not found, skipped -->")
            continue
        # the profiler files only: a folder's README would be sniffed as a (broken) kernel-yaml file
        files = sorted(f for f in path.iterdir() if f.suffix in (".csv", ".yaml", ".yml")) if path.is_dir() else [path]
        imported = read_inputs(files)
        kernels = imported.kernels
        kernels = kernels[kernels["duration_ns"].notna()] if "duration_ns" in kernels.columns else kernels.iloc[0:0]
        if kernels.empty:
            print(f"<!-- {path}: no kernel with a measured time, skipped -->")
            continue
        devices = kernels["device"].fillna("?").astype(str) if "device" in kernels.columns else None
        for device in (sorted(devices.unique()) if devices is not None else ["?"]):
            rows = kernels if devices is None else kernels[devices == device]
            found.append((f"{path.name} / {device}", rows))
    return found


def evaluate(label: str, kernels: Any, model_ids: list[str], folds: int, seed: int,
             stock_only: bool = False) -> list[dict[str, Any]]:
    """Stock and grouped-CV rows for one data set."""
    from nvperf_bridge.accuracy import accuracy_stats, within_factor_share, worst_groups
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.calibration import (
        CalibrationSettings,
        application_groups,
        calibrate_model,
        cross_validate_learned,
        measured_ns,
        predict_ns,
        with_constants,
    )
    from nvperf_bridge.errors import NvperfError
    from nvperf_bridge.registry import load_registry

    try:
        gpu, choice = choose_gpu(kernels, None)
    except NvperfError as exc:
        print(f"<!-- {label}: {exc} -->")
        return [{"data": label, "model": "(all)", "note": f"no GPU profile matches ({exc.message})"}]
    registry = load_registry([])
    groups = application_groups(kernels)
    measured = measured_ns(kernels)
    settings = CalibrationSettings(folds=folds, seed=seed)
    rows = []
    for mid in model_ids:
        if mid not in registry.models:
            continue
        model = registry.get(mid)
        row: dict[str, Any] = {"data": label, "model": mid, "gpu": gpu.id, "apps": groups.nunique()}
        started = time.perf_counter()
        try:
            if stock_only:
                stock = predict_ns(model, kernels, gpu, {}) if not callable(getattr(model, "fit", None)) else None
                row["stock"] = None if stock is None else (accuracy_stats(stock, measured),
                                                          within_factor_share(stock, measured),
                                                          worst_groups(stock, measured, groups))
                cv = None
            elif callable(getattr(model, "fit", None)):
                row["stock"] = None  # a learned model has no stock form: it is only ever fitted
                cv = cross_validate_learned(model, kernels, gpu, settings, {}, groups)
            else:
                stock = predict_ns(model, kernels, gpu, {})
                row["stock"] = (accuracy_stats(stock, measured), within_factor_share(stock, measured),
                                worst_groups(stock, measured, groups))
                fit_gpu, fit_settings = gpu, settings
                if getattr(model, "fit_start", None):  # a fitted estimate: refit from its neutral start, never its shipped values
                    fit_gpu = with_constants(gpu, mid, model.fit_start, "neutral start", "default")
                    fit_settings = replace(settings, **getattr(model, "fit_settings", {}))
                outcome = calibrate_model(model, kernels, fit_gpu, fit_settings)
                cv = outcome.cv
                if outcome.skipped:
                    row["note"] = outcome.skipped
            if stock_only:
                row["note"] = "stock only (--stock-only)"
            elif cv is not None and cv.predicted is not None:
                row["cv"] = (accuracy_stats(cv.predicted, measured), cv.within_2x, cv.worst(3), cv.folds)
        except NvperfError as exc:
            row["note"] = exc.message
        row["seconds"] = time.perf_counter() - started
        rows.append(row)
        print(f"<!-- {label} {mid}: {row['seconds']:.1f} s -->", file=sys.stderr)
    return rows


def per_kernel(label: str, kernels: Any, model_ids: list[str]) -> list[dict[str, Any]]:
    """Fit one factor per kernel function (and block size) on the smaller half of each function's
    input sizes, predict the larger half (``calibrate --per-kernel``'s method)."""
    import numpy as np
    import pandas as pd

    from nvperf_bridge.accuracy import accuracy_stats, within_factor_share
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.calibration import apply_kernel_factors, kernel_factors, kernel_groups, predict_ns
    from nvperf_bridge.errors import NvperfError
    from nvperf_bridge.registry import load_registry

    if "input_size" not in kernels.columns:
        return []
    try:
        gpu, _ = choose_gpu(kernels, None)
    except NvperfError:
        return []
    size = pd.to_numeric(kernels["input_size"], errors="coerce")
    names = kernel_groups(kernels)
    larger = pd.Series(False, index=kernels.index)
    for name in names.unique():
        rows = names == name
        sizes = np.sort(size[rows].dropna().unique())
        if len(sizes) >= 2:
            larger[rows] = size[rows] > sizes[len(sizes) // 2 - 1]  # the larger half of the distinct sizes
    registry = load_registry([])
    out = []
    for mid in model_ids:
        if mid not in registry.models or callable(getattr(registry.get(mid), "fit", None)):
            continue
        predicted = predict_ns(registry.get(mid), kernels, gpu, {})
        factors = kernel_factors(kernels[~larger], predicted[~larger])
        factor, _ = apply_kernel_factors(kernels[larger], factors)
        scaled = predicted[larger] * factor
        measured = kernels.loc[larger, "duration_ns"].astype(float)
        stats = accuracy_stats(scaled, measured)
        out.append({"data": label, "model": mid, "n": stats["n"], "median_ape": stats["median_ape"],
                    "within_2x": within_factor_share(scaled, measured)})
    return out


def render_per_kernel(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    lines = ["", "Per-kernel factors (`calibrate --per-kernel`): fitted on the smaller half of each kernel's input "
             "sizes, scored on the larger half:", "",
             "| data / device | model | n | median APE | within 2x |", "|---|---|---|---|---|"]
    lines += [f"| {r['data']} | {r['model']} | {r['n']} | {_pct(r['median_ape'])} | {_pct(r['within_2x'])} |"
              for r in rows]
    return "\n".join(lines) + "\n"


def render(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "Regenerate with:", "", "```sh", command, "```", "",
        ("| data / device | model | stock n | stock median APE | stock within 2x | stock worst 3 apps | "
         "CV n (apps, folds) | CV median APE | CV within 2x | CV worst 3 apps |"),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "note" in row and "stock" not in row and "cv" not in row:
            lines.append(f"| {row['data']} | {row['model']} | {row['note']} |" + " |" * 7)
            continue
        stock = row.get("stock")
        cells = ["-"] * 4 if stock is None else [str(stock[0]["n"]), _pct(stock[0]["median_ape"]), _pct(stock[1]),
                                                 _worst(stock[2])]
        cv = row.get("cv")
        cells += (["-", "-", "-", row.get("note", "-")] if cv is None else
                  [f"{cv[0]['n']} ({row['apps']}, {cv[3]})", _pct(cv[0]["median_ape"]), _pct(cv[1]), _worst(cv[2])])
        lines.append(f"| {row['data']} | {row['model']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", type=Path, help="profiler folders or files (default: magus-corpus and "
                        "amaris-kepler-maxwell in ../shared/realdata)")
    parser.add_argument("--models", default="", help="comma-separated model ids (default: every installed model)")
    parser.add_argument("--folds", type=int, default=5, help="k of the grouped k-fold (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fold split (default 0)")
    parser.add_argument("--stock-only", action="store_true", help="stock constants only, no cross-validated fit")
    parser.add_argument("--per-kernel-only", action="store_true",
                        help="only the per-kernel table (data sets with an input_size column)")
    args = parser.parse_args(argv)
    from nvperf_bridge.registry import load_registry

    model_ids = [m for m in args.models.split(",") if m] or sorted(load_registry([]).models)
    inputs = list(args.inputs) or list(DEFAULT_INPUTS)
    rows: list[dict[str, Any]] = []
    scaling: list[dict[str, Any]] = []
    warnings.simplefilter("ignore")
    for label, kernels in datasets(inputs):
        if not args.per_kernel_only:
            rows += evaluate(label, kernels, model_ids, args.folds, args.seed, args.stock_only)
        scaling += per_kernel(label, kernels, model_ids)
    import os

    shown = [os.path.relpath(p.resolve(), ROOT) for p in args.inputs]
    command = " ".join(["python benchmarks/accuracy.py", *shown,
                        *([f"--models {args.models}"] if args.models else []),
                        *([f"--folds {args.folds}"] if args.folds != 5 else []),
                        *(["--stock-only"] if args.stock_only else []),
                        *(["--per-kernel-only"] if args.per_kernel_only else [])])
    print((render(rows, command) if rows or not scaling else f"Regenerate with:\n\n```sh\n{command}\n```\n")
          + render_per_kernel(scaling))
    return 0


if __name__ == "__main__":
    sys.exit(main())

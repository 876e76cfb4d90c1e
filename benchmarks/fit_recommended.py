"""Fit the recommended estimate on magus-corpus and write its shipped data file.

Usage (from the repository root)::

    python benchmarks/fit_recommended.py            # writes nvperf_bridge/data/recommended_estimate.json
    python benchmarks/fit_recommended.py --check    # fit and print, write nothing
    python benchmarks/fit_recommended.py --check --seeds 6 --loao   # more fold seeds, and leave-one-application-out

The constants of the ``recommended`` model (plugins/recommended.py) are fitted with
``calibrate``'s fitter (bounded least squares on log(predicted/measured), soft_l1 loss)
starting from the model's NEUTRAL values (``fit_start``), never from the shipped ones, on every
timed kernel of ``../shared/realdata/magus-corpus`` (all but ``HELD``: k_issue, k_dram and k_transit
stay 1, k_latency is the profile's architecture value), every application weighted equally (the
model's ``fit_settings``).
Its accuracy is the 5-fold cross-validation grouped by application (every kernel of one
metrics+trace pair in the same fold; the fit inside each fold starts from NEUTRAL too),
repeated over 3 fold seeds (``--seeds N`` for more); ``--loao`` adds leave-one-application-out
(one fold per application, the same fitter). The data file records
the values, the files and corpus commit, the CV figures, which terms the estimate leans on
(the share of kernels each bound term dominates, and Transit's weight in the blend) and the date.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "realdata" / "magus-corpus"
OUTPUT = ROOT / "nvperf_bridge" / "data" / "recommended_estimate.json"
CORPUS_COMMIT_PREFIX = "commit "


def corpus_commit(readme: Path) -> str:
    """The upstream commit the corpus README names (the provenance of the data)."""
    import re

    found = re.search(r"commit ([0-9a-f]{40})", readme.read_text(encoding="utf-8")) if readme.exists() else None
    return found.group(1) if found else "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--check", action="store_true", help="fit and print; do not write the data file")
    parser.add_argument("--seeds", type=int, default=3, help="fold seeds of the repeated grouped CV (default 3)")
    parser.add_argument("--loao", action="store_true",
                        help="also leave-one-application-out (one fold per application; about 8x one seed's time)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import numpy as np

    from nvperf_bridge.accuracy import accuracy_stats
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.builtin_plugins.recommended import BOUND_TERMS, HELD, HELD_REASON, MODEL
    from nvperf_bridge.calibration import (
        CalibrationSettings,
        application_groups,
        calibrate_model,
        calibration_date,
        measured_ns,
        with_constants,
    )
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.model import constant_values

    files = sorted(f for f in args.corpus.iterdir() if f.suffix == ".csv")
    kernels = read_inputs(files).kernels
    kernels = kernels[measured_ns(kernels).notna()]
    gpu, _ = choose_gpu(kernels, None)
    # NEUTRAL but for the constants the profile gives per architecture (k_latency), which keep its value
    start = with_constants(gpu, MODEL.id, MODEL.fit_start, "neutral start", "default")
    start_values = constant_values(MODEL, start)
    groups = application_groups(kernels)
    measured = measured_ns(kernels)
    runs: list[dict[str, Any]] = []
    outcome = None
    for seed in range(args.seeds):
        settings = CalibrationSettings(folds=5, seed=seed, **MODEL.fit_settings)
        outcome = calibrate_model(MODEL, kernels, start, settings) if seed == 0 or outcome is None else outcome
        if seed > 0:
            from nvperf_bridge.calibration import cross_validate

            specs = tuple(c for c in MODEL.constants if c.name in settings.only[MODEL.id])  # HELD stay 1
            cv = cross_validate(MODEL, kernels, start, specs, start_values, settings, {}, groups)
        else:
            cv = outcome.cv
        stats = accuracy_stats(cv.predicted, measured)
        runs.append({"seed": seed, "folds": cv.folds, "n": stats["n"], "median_ape": round(stats["median_ape"], 4),
                     "within_2x": round(cv.within_2x, 4), "mape": round(stats["mape"], 4),
                     "worst_applications": [[name, round(ape, 3)] for name, ape in cv.worst(3)]})
        print(f"seed {seed}: median APE {stats['median_ape']:.1%}, within 2x {cv.within_2x:.1%}", file=sys.stderr)
    assert outcome is not None
    loao = None
    if args.loao:
        from nvperf_bridge.calibration import cross_validate

        # folds = the number of applications: group_folds deals one application per fold
        settings = CalibrationSettings(folds=int(groups.nunique()), seed=0, **MODEL.fit_settings)
        specs = tuple(c for c in MODEL.constants if c.name in settings.only[MODEL.id])
        cv = cross_validate(MODEL, kernels, start, specs, start_values, settings, {}, groups)
        stats = accuracy_stats(cv.predicted, measured)
        loao = {"folds": cv.folds, "n": stats["n"], "median_ape": round(stats["median_ape"], 4),
                "within_2x": round(cv.within_2x, 4), "mape": round(stats["mape"], 4),
                "worst_applications": [[name, round(ape, 3)] for name, ape in cv.worst(3)]}
        print(f"leave-one-application-out ({cv.folds} folds): median APE {stats['median_ape']:.1%}, "
              f"within 2x {cv.within_2x:.1%}", file=sys.stderr)
    values = {**start_values, **outcome.values}
    fitted = with_constants(gpu, MODEL.id, values, "fitted", "calibrated")
    result = MODEL.evaluate(kernels, fitted, {})
    leans = result["dominant_term"].value_counts(normalize=True).round(3).to_dict()
    document = {
        "model": MODEL.id,
        "model_version": MODEL.version,
        "label": "recommended estimate (beyond the papers)",
        "constants": {name: float(f"{value:.6g}") for name, value in values.items()},
        "constants_fitted": [c.name for c in outcome.fitted],
        "constants_not_fitted": {c.name: HELD_REASON[c.name] if c.name in HELD else c.reason
                                 for c in outcome.unfitted},
        "fitted_for": {"gpus": "GeForce GTX 1080 Ti", "compute_capabilities": sorted({str(gpu.compute_capability)})},
        "leans_on": {"terms": list(BOUND_TERMS), "share_of_kernels_dominated_by": leans,
                     "paper_models": ["transit"], "transit_weight": float(f"{values['w_transit']:.4g}")},
        "cross_validation": {
            "split": "5-fold grouped by application (one metrics+trace pair = one application, all its kernels in "
                     "one fold); the fit inside each fold starts from the neutral values",
            "applications": int(groups.nunique()),
            "kernels": int(len(kernels)),
            "median_ape_mean_over_seeds": round(float(np.mean([r["median_ape"] for r in runs])), 4),
            "within_2x_mean_over_seeds": round(float(np.mean([r["within_2x"] for r in runs])), 4),
            "runs": runs,
            **({"leave_one_application_out": loao} if loao else {}),
        },
        "in_sample": {key: round(float(value), 4) for key, value in
                      accuracy_stats(result["predicted_ns"], measured).items()},
        "provenance": {
            "data": f"magus-corpus ({groups.nunique()} applications, {len(kernels)} timed kernels, GeForce GTX 1080 Ti)",
            "files": [f.name for f in files],
            "corpus": "leimingyu/magus 09_case_study/SimPerf/{metrics,traces}, commit " + corpus_commit(args.corpus / "README.md"),
            "fitter": "nvperf_bridge.calibration (scipy least_squares trf, soft_l1, f_scale 0.5, log residuals, "
                      "applications weighted equally), from plugins/recommended.py NEUTRAL",
            "command": "python benchmarks/fit_recommended.py",
            "date": calibration_date(),
        },
    }
    text = json.dumps(document, indent=1) + "\n"
    if args.check:
        print(text)
    else:
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

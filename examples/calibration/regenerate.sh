#!/usr/bin/env bash
# Regenerate the shipped fitted files (calibrated GTX 1080 Ti profile, Kerr model, recommended estimate).
#
#   examples/calibration/regenerate.sh            # from the repository root or anywhere
#
# Needs the public corpus in ../shared/realdata (beside the checkout), or REALDATA=/path.
# Writes profiles/gtx-1080-ti-calibrated.yaml, examples/calibration/gtx-1080-ti.md (the report;
# docs/calibration.md quotes its table), the fitted Kerr model nvperf_bridge/data/kerr-gtx-1080-ti.json
# and nvperf_bridge/data/recommended_estimate.json. SOURCE_DATE_EPOCH, when set,
# fixes the date written into the profile so that a rerun is byte-identical.
set -euo pipefail
cd "$(dirname "$0")/../.."
REALDATA="${REALDATA:-../shared/realdata}"
NVPERF="${NVPERF:-.venv/bin/nvperf-bridge}"
[ -x "$NVPERF" ] || NVPERF=nvperf-bridge

# GTX 1080 Ti (magus-corpus): 43 applications, nvprof --metrics all paired with --print-gpu-trace,
# 122 timed kernels; 5-fold cross-validation by application. The five paper models only (the
# recommended estimate is fitted by benchmarks/fit_recommended.py, kerr by 'fit').
"$NVPERF" calibrate "$REALDATA"/magus-corpus --gpu gtx-1080-ti --model hong-kim --model kothapalli \
  --model luo-suda --model roofline --model transit -o profiles/gtx-1080-ti-calibrated.yaml --folds 5 --seed 0 \
  --force > examples/calibration/gtx-1080-ti.md

# The accuracy table of the calibrated profile on its own calibration data, with the scaled-roofline
# baseline. In-sample: a regression guard, not a measure of accuracy on new kernels (that is the
# held-out column above).
"$NVPERF" validate "$REALDATA"/magus-corpus --gpu gtx-1080-ti-calibrated \
  > examples/calibration/gtx-1080-ti-validate.md

# The fitted Kerr model (5-fold CV by application recorded in its provenance) and the recommended
# estimate's constants (3 fold seeds of the grouped CV recorded in the data file).
"$NVPERF" fit kerr "$REALDATA"/magus-corpus --gpu gtx-1080-ti --folds 5 \
  -o nvperf_bridge/data/kerr-gtx-1080-ti.json --force
PYTHON="${PYTHON:-.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
"$PYTHON" benchmarks/fit_recommended.py --corpus "$REALDATA"/magus-corpus

"""Speed of ``whatif`` and ``compare`` on real files, against ``analyze`` of the same files.

    python benchmarks/whatif_compare.py [--repeat 3]

Issue 14's target is "a table and figure in seconds" on a real file. Each command runs as a
fresh process (as a user runs it), ``--repeat`` times, median taken; beside it, in the same
run, ``analyze -f json`` of the same input, so the ratio says what the study adds over reading
the file and running the models once. The machine is shared and noisy: quote the ratios.
Reads ../shared/realdata (skips a case whose files are absent); writes nothing in the repository.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "realdata"
CLI = [sys.executable, "-m", "nvperf_bridge"]

MAGUS = [REAL / "magus-corpus" / "metrics_cudasdk_matrixMul.csv", REAL / "magus-corpus" / "traces_cudasdk_matrixMul.csv"]
CFD_A = REAL / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
CFD_B = REAL / "optimal_unified_memory" / "optimal_unified_memory__cfd-ip-128-115-246-7__nsight_cfd_097K.log"
TRACE = REAL / "nvprof-result" / "nvprof-result__cfd-setpreferredlocation__print-gpu-trace.csv"

# name, the command's arguments, the analyze baseline's inputs
CASES: list[tuple[str, list[str], list[Path]]] = [
    ("whatif md+png, magus matrixMul pair, 5 block sizes x 2 GPUs",
     ["whatif", *map(str, MAGUS), "--kernel", "matrixMul", "--vary", "block_threads=64,128,256,512,1024",
      "--gpu-target", "gtx-1080-ti", "--gpu-target", "v100-sxm2", "-o", "{tmp}/w.md"], MAGUS),
    ("whatif xlsx, V100 cfd ncu (100 launches), 4 block sizes",
     ["whatif", str(CFD_A), "--kernel", "cuda_compute_flux", "--vary", "block_threads=64,128,192,256",
      "-o", "{tmp}/w.xlsx"], [CFD_A]),
    ("whatif json, nvprof trace (14,003 launches), 5 block sizes",
     ["whatif", str(TRACE), "--kernel", "compute_flux", "--vary", "block_threads=64,128,192,256,512", "-f", "json"],
     [TRACE]),
    ("compare md, V100 cfd #15 vs #16", ["compare", str(CFD_A), "--against", str(CFD_B), "--fail-if-slower", "5%"],
     [CFD_A, CFD_B]),
    ("compare json, nvprof trace (14,003 launches) vs itself",
     ["compare", str(TRACE), "--against", str(TRACE), "-f", "json"], [TRACE, TRACE]),
]


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(CLI + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print("| case | command (s) | analyze of the same input (s) | ratio |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, command, inputs in CASES:
            if not all(p.exists() for p in inputs):
                print(f"| {name} | skipped: input absent | | |")
                continue
            command = [a.replace("{tmp}", tmp) for a in command] + ["--force"] * any("{tmp}" in a for a in command)
            analyze = ["analyze", *map(str, dict.fromkeys(inputs)), "-f", "json"]
            study, base = [], []
            for _ in range(args.repeat):  # interleaved, so both see the same machine load
                study.append(timed(command))
                base.append(timed(analyze))
            s, b = statistics.median(study), statistics.median(base)
            print(f"| {name} | {s:.2f} | {b:.2f} | {s / b:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

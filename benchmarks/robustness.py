"""Reliability suite: damaged inputs, misbehaving plugins, racing and interrupted writers.

    python benchmarks/robustness.py --cases 10000 --seed 1 --workers 2      # the full run
    python benchmarks/robustness.py --cases 500 --cli-every 5                # a quick one

Four parts, each printed as counts; exits 1 when any failure count is not 0.

1. Mutated real files (``--cases``, seeded): the mutation engine of
   ``tests/fuzzing.py`` (the committed fixtures and ../shared/realdata as
   seeds; ``(seed, index)`` replays a case, as in ``benchmarks/fuzz.py``).
   Every case is imported (``read_profiles``); every ``--cli-every``-th case
   also goes through the whole command line in-process (``analyze -f json -o
   OUT --force``, OUT holding an earlier report). Failures: tracebacks
   (anything but a clean one-line ``NvperfError``; an ``internal error``
   line), errors not naming the file, value violations (a fraction above 1,
   a negative count), silent zeros (a duration, clock or prediction of 0 or
   below without a reason), outputs clobbered (a failed run changed OUT),
   outputs left half-written (OUT not complete JSON after exit 0, or a
   temporary file left behind), hangs (``--timeout``).
2. Plugin faults, each through the real CLI in a subprocess: ``sys.exit``,
   ``os._exit``, a segfault (ctypes), a hang, stdout/stderr spam, a CPU spin
   past ``--model-timeout``. Isolated means: exit 0, a complete report with
   the built-in models' predictions, the fault named in that model's failure,
   no traceback, a clean Markdown report on stdout, no process left running;
   for the spin and the hang, the run's time beyond the timeout against a
   paired run without the plugin.
3. Concurrent writers (``--pairs``): two runs write one output at the same
   moment (``--force``); the file must then be one complete report, of one of
   the two inputs, and no temporary file may be left.
4. Interrupted writers (``--interrupts``): SIGINT, SIGTERM or SIGKILL at a
   seeded moment of a run that replaces an earlier report; the output must be
   the earlier report or a complete new one, SIGINT/SIGTERM leave no
   temporary file, and the next run removes what a SIGKILL left.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))

import fuzz  # noqa: E402  (benchmarks/fuzz.py: the worker pool)
import fuzzing  # noqa: E402  (tests/fuzzing.py: the mutation engine)

FIXTURE = REPO / "tests" / "fixtures" / "reports" / "demo_gtx280.yaml"
SENTINEL = b'{"an earlier report": "must survive a failed run"}\n'
CLI_EVERY = 10  # set by main before the pool forks its workers
FAILURES = ("traceback", "unnamed-error", "violation", "silent-zero", "clobbered", "half-written", "bad-exit", "hang")


# ---- 1. mutated files ---------------------------------------------------------------

def _strays(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _zeros(report: dict[str, Any]) -> list[str]:
    """Durations or predictions of 0 or below that carry no reason."""
    from nvperf_bridge.reports.json_read import kernel_records

    found = []
    for kernel in kernel_records(report, details=False):
        measured = kernel.get("measured_ns")
        if measured is not None and measured <= 0:
            found.append(f"kernel {kernel.get('kernel_id')}: measured_ns {measured}")
        for mid, entry in (kernel.get("models") or {}).items():
            predicted = entry.get("predicted_ns")
            if predicted is not None and predicted <= 0 and not entry.get("error"):
                found.append(f"kernel {kernel.get('kernel_id')} {mid}: predicted_ns {predicted}")
    return found


def check_cli(paths: list[Path], folder: Path) -> tuple[str, str]:
    """``analyze`` in-process over ``paths``, replacing an earlier report: (outcome, detail)."""
    from nvperf_bridge.cli import main as cli

    out_dir = folder / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "report.json"
    out.write_bytes(SENTINEL)
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(std), contextlib.redirect_stderr(err):
        try:
            code = cli(["analyze", *map(str, paths), "-f", "json", "-o", str(out), "--force", "-q"])
        except BaseException as exc:  # noqa: BLE001 (classifying exactly this)
            return "traceback", f"escaped main: {type(exc).__name__}: {exc}"
    text = err.getvalue()
    if "Traceback" in text or "internal error" in text:
        return "traceback", text[-800:]
    if _strays(out_dir):
        return "half-written", f"temporary files left: {_strays(out_dir)}"
    data = out.read_bytes()
    if code == 0:
        try:
            report = json.loads(data)
        except ValueError as exc:
            return "half-written", f"exit 0 but the output is not complete JSON: {exc}"
        if zeros := _zeros(report):
            return "silent-zero", "; ".join(zeros[:3])
        return "cli-ok", ""
    if code not in (1, 2):  # 1: bad input, 2: usage (e.g. no GPU profile can be told from the data)
        return "bad-exit", f"exit code {code}: {text[-300:]}"
    if data != SENTINEL:
        return "clobbered", "a failed run changed the earlier report"
    if not all(line.startswith("nvperf-bridge: ") for line in text.splitlines()):
        return "traceback", f"stderr is not one-line messages: {text[-300:]}"
    return "cli-error", ""


def _worker(conn: Any, seed: int, realdata: bool) -> None:
    """Pool worker: import check of every case, the CLI check of every ``CLI_EVERY``-th."""
    groups = fuzzing.seed_groups(fuzzing.load_seeds(realdata))
    with tempfile.TemporaryDirectory(prefix="nvperf-robust-") as tmp:
        while True:
            index = conn.recv()
            if index is None:
                return
            case = fuzzing.make_case(groups, seed, index)
            folder = Path(tmp) / str(index)
            paths = fuzzing.write_case(case, folder)
            result = fuzzing.check_files(paths)
            outcome, detail = result.outcome, result.detail
            if outcome == "violation" and any("<= 0" in p for p in result.problems):
                outcome = "silent-zero"
            if outcome not in FAILURES and index % CLI_EVERY == 0:
                cli_outcome, cli_detail = check_cli(paths, folder)
                if cli_outcome in FAILURES:
                    outcome, detail = cli_outcome, cli_detail
                else:
                    outcome = f"{outcome}+{cli_outcome}"
            conn.send((index, outcome, detail, case.description))
            for path in sorted(folder.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()


def run_mutations(args: argparse.Namespace) -> tuple[Counter[str], list[tuple[int, str, str, str]], float]:
    global CLI_EVERY
    CLI_EVERY = args.cli_every
    counts: Counter[str] = Counter()
    failures: list[tuple[int, str, str, str]] = []
    started = time.monotonic()

    def report(index: int, outcome: str, detail: str, description: str) -> None:
        counts[outcome] += 1
        if outcome in FAILURES:
            failures.append((index, outcome, detail, description))
        done = sum(counts.values())
        if done % 500 == 0:
            print(f"  {done}/{args.cases} ({time.monotonic() - started:.0f} s)", file=sys.stderr)

    pool = fuzz.Pool(args.workers, args.seed, not args.no_realdata, args.timeout, worker=_worker)
    try:
        pool.run(list(range(args.cases)), report)
    finally:
        pool.close()
    return counts, failures, time.monotonic() - started


# ---- 2. plugin faults -------------------------------------------------------------------

PLUGIN = """
import ctypes, os, sys, time
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.model import Requirements, empty_result

class Fault:
    id = "fault"
    version = "1"
    description = "misbehaves on purpose"
    paper = "none"
    requires = Requirements(required=())
    constants = ()

    def evaluate(self, kernels, gpu, options):
{body}
        out = empty_result(kernels)
        out["predicted_ns"] = 1000.0
        return out

@hookimpl
def register_models(register):
    register(Fault())
"""
FAULTS = {
    "sys.exit": ("sys.exit(0)", "SystemExit"),
    "os._exit": ("os._exit(0)", "ended its worker process (exit code 0)"),
    "segfault": ("ctypes.string_at(0)", "killed by SIGSEGV"),
    "hang": ("time.sleep(3600)", "model timeout"),
    "cpu spin": ("while True:\n    pass", "model timeout"),
    "stdout spam": ("for _ in range(20000):\n    print('SPAM ' * 40)\nsys.stderr.write('ERR ' * 1000)\n"
                    "os.write(1, b'C-LEVEL SPAM\\n')", ""),
}
TIMEOUT_S = 2.0


def _cli(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "nvperf_bridge", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)
    return proc, time.monotonic() - started


def _processes_with(marker: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if marker in cmdline.read_bytes().decode("utf-8", "replace"):
                found.append(int(cmdline.parent.name))
    return found


def run_plugin_faults(folder: Path) -> list[dict[str, Any]]:
    rows = []
    for kind, (body, expected) in FAULTS.items():
        plugin = folder / f"fault_{len(rows)}.py"
        plugin.write_text(PLUGIN.format(body=textwrap.indent(body, " " * 8)))
        base, base_s = _cli("analyze", str(FIXTURE), "-f", "json", "-q", cwd=folder)  # paired baseline
        out = folder / f"fault_{len(rows)}.json"
        if kind == "stdout spam":
            proc, seconds = _cli("analyze", str(FIXTURE), "--plugin", str(plugin), cwd=folder)
            report_text = proc.stdout
            spam_lines = [line for line in report_text.splitlines() if "SPAM" in line]
            ok = (proc.returncode == 0 and report_text.startswith("# ") and len(spam_lines) == 1
                  and "model fault printed:" in spam_lines[0])
            why = f"{len(spam_lines)} report line(s) carry the spam (1 expected: the warning)"
        else:
            proc, seconds = _cli("analyze", str(FIXTURE), "--plugin", str(plugin), "-f", "json", "-o", str(out),
                                 "--force", "-q", "--model-timeout", f"{TIMEOUT_S:g}", cwd=folder)
            try:
                report = json.loads(out.read_text())
            except (OSError, ValueError):
                report = {}
            fault = report.get("models", {}).get("fault", {})
            builtin_ok = report.get("models", {}).get("hong-kim", {}).get("failed") is False
            ok = proc.returncode == 0 and bool(fault.get("failed")) and expected in str(fault.get("failure")) \
                and builtin_ok
            why = f"exit {proc.returncode}; failure: {fault.get('failure')!r}"
        left = _processes_with(str(plugin))
        ok = ok and "Traceback" not in proc.stderr and not left and base.returncode == 0
        extra = seconds - (TIMEOUT_S if kind in ("hang", "cpu spin") else 0.0)
        rows.append({"fault": kind, "isolated": ok, "detail": why if not ok else "",
                     "left_running": len(left), "time_vs_baseline": extra / base_s})
    return rows


# ---- 3. concurrent writers -----------------------------------------------------------------

def _second_input(folder: Path) -> Path:
    """A kernel-yaml input with another kernel count than FIXTURE, from the fixture's own kernels."""
    import yaml

    data = yaml.safe_load(FIXTURE.read_text())
    kernels = data["kernels"]
    data["kernels"] = [dict(k, kernel_id=f"{copy}-{k.get('kernel_id', i)}") for copy in range(3)
                       for i, k in enumerate(kernels)]
    path = folder / "tripled.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_concurrent(folder: Path, pairs: int) -> dict[str, int]:
    second = _second_input(folder)
    counts = {"pairs": 0, "complete": 0, "failed": 0}
    expected = {}
    for path in (FIXTURE, second):
        proc, _ = _cli("analyze", str(path), "-f", "json", "-q", cwd=folder)
        expected[json.loads(proc.stdout)["kernel_count"]] = path
    out_dir = folder / "shared"
    out_dir.mkdir()
    out = out_dir / "report.json"
    for _ in range(pairs):
        procs = [subprocess.Popen([sys.executable, "-m", "nvperf_bridge", "analyze", str(path), "-f", "json", "-o",
                                   str(out), "--force", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  cwd=folder) for path in (FIXTURE, second)]
        codes = [p.wait(600) for p in procs]
        counts["pairs"] += 1
        try:
            report = json.loads(out.read_text())
            whole = report["kernel_count"] in expected and report["inputs"][0]["path"].endswith(
                expected[report["kernel_count"]].name)
        except (OSError, ValueError, KeyError, IndexError):
            whole = False
        if whole and codes == [0, 0] and not _strays(out_dir):
            counts["complete"] += 1
        else:
            counts["failed"] += 1
    return counts


# ---- 4. interrupted writers ------------------------------------------------------------------

def run_interrupts(folder: Path, count: int, seed: int) -> dict[str, int]:
    sys.path.insert(0, str(HERE))
    import generate  # benchmarks/generate.py

    source = generate.write_ncu_raw(folder / "big.ncu.csv", 3000, seed=seed)
    out_dir = folder / "interrupted"
    out_dir.mkdir()
    out = out_dir / "report.xlsx"
    previous = b"an earlier complete report"
    command = [sys.executable, "-m", "nvperf_bridge", "analyze", str(source), "--gpu", "v100-sxm2", "-o", str(out),
               "--force", "-q"]
    out.write_bytes(previous)
    started = time.monotonic()
    subprocess.run(command, capture_output=True, timeout=600, cwd=folder)
    full_s = time.monotonic() - started
    rng = random.Random(seed)
    counts = Counter({"runs": 0, "kept earlier": 0, "complete new": 0, "damaged": 0, "temp files left": 0,
                      "temp files cleaned next run": 0, "tracebacks": 0})
    for _ in range(count):
        out.write_bytes(previous)
        signame = rng.choice(("SIGINT", "SIGTERM", "SIGKILL"))
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=folder,
                                preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT,
                                                                                               signal.SIGTERM)])
        time.sleep(rng.uniform(0.1, full_s))
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=600)
        counts["runs"] += 1
        counts["tracebacks"] += "Traceback" in err
        data = out.read_bytes()
        if data == previous:
            counts["kept earlier"] += 1
        elif data[:2] == b"PK" and proc.returncode == 0:
            counts["complete new"] += 1
        else:
            counts["damaged"] += 1
        strays = _strays(out_dir)
        if strays and signame != "SIGKILL":
            counts["temp files left"] += 1
        if strays and signame == "SIGKILL":
            subprocess.run(command, capture_output=True, timeout=600, cwd=folder)
            if _strays(out_dir):
                counts["temp files left"] += 1
            else:
                counts["temp files cleaned next run"] += 1
    return dict(counts)


# ---- main --------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="mutated inputs (default 10,000)")
    parser.add_argument("--seed", type=int, default=1, help="run seed: (seed, index) replays a case")
    parser.add_argument("--cli-every", type=int, default=10, help="every N-th case also runs the whole CLI")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case before it counts as a hang")
    parser.add_argument("--no-realdata", action="store_true", help="only the committed fixtures as seeds")
    parser.add_argument("--pairs", type=int, default=20, help="concurrent writer pairs (default 20)")
    parser.add_argument("--interrupts", type=int, default=20, help="interrupted runs (default 20)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["mutations", "plugins", "concurrent", "interrupts"])
    parser.add_argument("--show", type=int, default=10, help="failures to print")
    args = parser.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="nvperf-robustness-") as tmp:
        folder = Path(tmp)
        if "mutations" not in args.skip:
            counts, failures, seconds = run_mutations(args)
            cli_runs = sum(n for outcome, n in counts.items() if "+cli" in outcome)
            print(f"mutated files: {args.cases} cases (seed {args.seed}), {cli_runs} of them also through the CLI; "
                  f"{seconds:.0f} s on {args.workers} workers")
            imported = sum(n for o, n in counts.items() if o.startswith("imported"))
            clean = sum(n for o, n in counts.items() if o.startswith("clean-error"))
            print(f"  imported: {imported}   clean one-line errors: {clean}")
            for outcome in FAILURES:
                print(f"  {outcome}: {counts[outcome]}")
            for index, outcome, detail, description in sorted(failures)[: args.show]:
                print(f"  FAIL case {index} ({outcome}): {description}\n      {detail.strip()[-600:]}")
            failed += len(failures)
        if "plugins" not in args.skip:
            rows = run_plugin_faults(folder)
            print(f"plugin faults: {sum(r['isolated'] for r in rows)} of {len(rows)} isolated "
                  f"(--model-timeout {TIMEOUT_S:g} s)")
            for row in rows:
                print(f"  {row['fault']:12} isolated={row['isolated']}  left running={row['left_running']}  "
                      f"run time (less the timeout) / paired run without it = {row['time_vs_baseline']:.2f}"
                      + (f"  {row['detail']}" if row["detail"] else ""))
            failed += sum(not r["isolated"] for r in rows)
        if "concurrent" not in args.skip:
            counts_c = run_concurrent(folder, args.pairs)
            print(f"concurrent writers: {counts_c['pairs']} pairs, one complete report left {counts_c['complete']}, "
                  f"damaged or leftovers {counts_c['failed']}")
            failed += counts_c["failed"]
        if "interrupts" not in args.skip:
            counts_i = run_interrupts(folder, args.interrupts, args.seed)
            print("interrupted writers: " + ", ".join(f"{k} {v}" for k, v in counts_i.items()))
            failed += counts_i["damaged"] + counts_i["temp files left"] + counts_i["tracebacks"]
    print("FAILED" if failed else "OK: 0 failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Large mutation-fuzz run of the importers (the CI test runs a small fixed budget of the same cases).

    python benchmarks/fuzz.py --cases 10000 --seed 1

Mutates the committed fixtures (tests/fixtures/import) and the real files in
../shared/realdata (when present) with the engine in tests/fuzzing.py, imports
each case in a pool of worker processes, and prints how many cases imported,
failed with a clean NvperfError naming the file, raised anything else
(traceback), raised an error that does not name the file, broke a value
invariant (violation) or ran past --timeout (hang: the worker is killed and
replaced). Exits 1 when any case is a traceback, unnamed error, violation or
hang, listing the first few with the (seed, index) that replays them:

    python benchmarks/fuzz.py --seed 1 --replay 1234
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection, wait
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fuzzing  # noqa: E402  (tests/fuzzing.py: the mutation engine, not shipped in the package)


def _worker(conn: Connection, seed: int, realdata: bool) -> None:
    groups = fuzzing.seed_groups(fuzzing.load_seeds(realdata))
    with tempfile.TemporaryDirectory(prefix="nvperf-fuzz-") as folder:
        while True:
            index = conn.recv()
            if index is None:
                return
            case = fuzzing.make_case(groups, seed, index)
            result = fuzzing.run_case(case, Path(folder) / str(index))
            conn.send((index, result.outcome, result.detail, case.description))


class Pool:
    """Worker processes fed one case at a time; a worker past its deadline is killed (a hang).

    ``worker(conn, seed, realdata)`` answers each case index with (index, outcome, detail,
    description); ``_worker`` (import only) by default, ``benchmarks/robustness.py`` passes its own.
    """

    def __init__(self, workers: int, seed: int, realdata: bool, timeout: float, worker=_worker) -> None:  # noqa: ANN001
        self.seed, self.realdata, self.timeout, self.worker = seed, realdata, timeout, worker
        self.ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
        self.slots = [self._start() for _ in range(workers)]

    def _start(self) -> dict:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=self.worker, args=(child, self.seed, self.realdata), daemon=True)
        proc.start()
        child.close()
        return {"proc": proc, "conn": parent, "index": None, "since": 0.0}

    def run(self, indices: list[int], report) -> None:  # noqa: ANN001
        todo = list(reversed(indices))
        busy = 0
        while todo or busy:
            for slot in self.slots:
                if slot["index"] is None and todo:
                    slot["index"], slot["since"] = todo.pop(), time.monotonic()
                    slot["conn"].send(slot["index"])
                    busy += 1
            ready = wait([s["conn"] for s in self.slots if s["index"] is not None], timeout=0.5)
            now = time.monotonic()
            for position, slot in enumerate(self.slots):
                if slot["index"] is None:
                    continue
                if slot["conn"] in ready:
                    try:
                        index, outcome, detail, description = slot["conn"].recv()
                    except EOFError:  # the worker died (a crash in C code, out of memory)
                        index, outcome, detail, description = slot["index"], "traceback", "worker died", ""
                        self._replace(position)
                    report(index, outcome, detail, description)
                    self.slots[position]["index"] = None
                    busy -= 1
                elif now - slot["since"] > self.timeout:
                    report(slot["index"], "hang", f"no answer within {self.timeout:g} s", "")
                    self._replace(position)
                    busy -= 1

    def _replace(self, position: int) -> None:
        old = self.slots[position]
        old["proc"].kill()
        old["proc"].join()
        self.slots[position] = self._start()

    def close(self) -> None:
        for slot in self.slots:
            try:
                slot["conn"].send(None)
            except OSError:
                pass
            slot["proc"].join(timeout=5)
            if slot["proc"].is_alive():
                slot["proc"].kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="number of mutated inputs (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="run seed: (seed, index) replays a case")
    parser.add_argument("--first", type=int, default=0, help="index of the first case (to continue a run)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it counts as a hang")
    parser.add_argument("--no-realdata", action="store_true", help="only the committed fixtures as seeds")
    parser.add_argument("--show", type=int, default=10, help="failures to print")
    parser.add_argument("--replay", type=int, nargs="*", help="run these case indices in this process and print them")
    parser.add_argument("--save", type=Path, help="write every failing input under this folder, for a fixture")
    args = parser.parse_args(argv)

    if args.replay:
        groups = fuzzing.seed_groups(fuzzing.load_seeds(not args.no_realdata))
        with tempfile.TemporaryDirectory() as folder:
            for index in args.replay:
                case = fuzzing.make_case(groups, args.seed, index)
                result = fuzzing.run_case(case, Path(folder))
                print(f"case {index}: {case.description}\n  {result.outcome}: {result.detail}")
        return 0

    seeds = fuzzing.load_seeds(not args.no_realdata)
    print(f"seeds: {len(seeds)} files ({sum(1 for s in seeds if 'realdata' in s.origin)} real), "
          f"{len(fuzzing.seed_groups(seeds))} inputs incl. multi-file; cases {args.first}..{args.first + args.cases - 1}, "
          f"seed {args.seed}, {args.workers} workers, {args.timeout:g} s per case", file=sys.stderr)
    counts: Counter[str] = Counter()
    failures: list[tuple[int, str, str, str]] = []
    started = time.monotonic()
    done = 0

    def report(index: int, outcome: str, detail: str, description: str) -> None:
        nonlocal done
        done += 1
        counts[outcome] += 1
        if outcome in fuzzing.FAILURES:
            failures.append((index, outcome, detail, description))
        if done % 500 == 0:
            print(f"  {done}/{args.cases} ({time.monotonic() - started:.0f} s): {dict(counts)}", file=sys.stderr)

    pool = Pool(args.workers, args.seed, not args.no_realdata, args.timeout)
    try:
        pool.run(list(range(args.first, args.first + args.cases)), report)
    finally:
        pool.close()
    elapsed = time.monotonic() - started

    if args.save and failures:
        groups = fuzzing.seed_groups(seeds)
        for index, *_ in failures:
            fuzzing.write_case(fuzzing.make_case(groups, args.seed, index), args.save / f"case-{index}")
    for index, outcome, detail, description in sorted(failures)[: args.show]:
        print(f"FAIL case {index} ({outcome}): {description}\n    {detail.strip()[-800:]}")
    print(f"cases: {done}")
    print(f"imported OK: {counts['imported']}")
    print(f"clean errors: {counts['clean-error']}")
    print(f"tracebacks: {counts['traceback']}")
    print(f"errors not naming the file: {counts['unnamed-error']}")
    print(f"value violations: {counts['violation']}")
    print(f"hangs: {counts['hang']}")
    print(f"time: {elapsed:.0f} s ({args.workers} workers)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

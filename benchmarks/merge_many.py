"""How reading and combining many one-kernel ncu files scales (issue 18: near-linear, not pairwise).

Writes N small ncu raw-page files shaped like a real one (ID, kernel name,
launch shape, a few counters; every file a different kernel, launch ID 0 as
ncu numbers each run) into a temporary folder, reads them with
``discovery.read_inputs(jobs=1)`` and prints the seconds per file for each N.
Near-linear: the per-file time stays about flat as N grows 10x.

    python benchmarks/merge_many.py --counts 100 1000 10000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","gpu__time_duration.sum","smsp__inst_executed.sum","dram__bytes_read.sum",'
          '"launch__registers_per_thread"\n'
          ',,,,,,,,,,,"ns","inst","byte","register/thread"\n')


def write_files(folder: Path, count: int) -> None:
    for i in range(count):
        row = (f'"0","{1000 + i}","app","host","void kernel_{i}<{i % 7}>(float*, int)","1","7","(256, 1, 1)",'
               f'"({64 + i % 5}, 1, 1)","0","8.0","{1000 + i}","{50000 + i}","{4096 * (i + 1)}","32"\n')
        (folder / f"run_{i:05d}.csv").write_text(HEADER + row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", type=int, nargs="+", default=[100, 1000, 3000])
    args = parser.parse_args()
    from nvperf_bridge.discovery import read_inputs

    print(f"{'files':>7} {'seconds':>8} {'ms/file':>8} kernels")
    for count in args.counts:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_files(folder, count)
            start = time.perf_counter()
            result = read_inputs([folder], jobs=1)
            seconds = time.perf_counter() - start
        assert len(result.kernels) == count, (len(result.kernels), count)
        print(f"{count:>7} {seconds:>8.2f} {1000 * seconds / count:>8.2f} {len(result.kernels)}")


if __name__ == "__main__":
    main()

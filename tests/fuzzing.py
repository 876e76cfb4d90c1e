"""Mutation fuzzer for the importers, shared by the CI fuzz test and ``benchmarks/fuzz.py``.

Not part of the package: it lives with the tests. The seeds are the committed
fixtures in ``tests/fixtures/import`` and, when present, the real profiler
outputs in ``../shared/realdata`` (read in place, never copied). Each case
applies one to three mutations to a seed (or to a pair of seeds that the
importers join: nvprof metrics + trace, ncu one-metric files) and checks the
contract of ``read_profiles``:

* it imports, and then every numeric canonical value is finite or missing,
  fractions (occupancy, hit rates, SOL) lie in [0, 1], durations, clocks and
  counts are > 0 (durations, clocks) or >= 0 (counts), or missing; or
* it raises an ``NvperfError`` whose message names the input file.

Anything else (another exception, an error that does not say which file, a
broken invariant, a case that runs past its time limit) is a failure.
Everything is driven by ``random.Random(seed)``: a (seed, index) pair always
gives the same case, so a failure found in the large run can be replayed.
"""

from __future__ import annotations

import math
import random
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
FIXTURES = TESTS_DIR / "fixtures" / "import"
REALDATA = REPO_ROOT.parent / "shared" / "realdata"

# Seeds bigger than this are cut at a line boundary (a killed run's file looks just like that):
# the big real files would otherwise dominate the budget without exercising other code.
MAX_SEED_BYTES = 48_000

# Units the profilers print, to swap one for another (and a few they never print).
UNIT_TOKENS = (
    "nsecond", "usecond", "msecond", "second", "ns", "us", "ms", "s", "byte", "Kbyte", "Mbyte", "Gbyte",
    "KB", "MB", "B", "GB/s", "MB/s", "byte/second", "Gbyte/second", "cycle", "cycle/second", "Ghz", "Mhz",
    "%", "inst", "sector", "register/thread", "byte/block", "warp", "furlong", "", "%%", "1/s",
)
_UNIT_RE = re.compile(r'(?<=[",])(' + "|".join(re.escape(u) for u in sorted(UNIT_TOKENS, key=len, reverse=True) if u)
                      + r')(?=[",\n])')
_NUMBER_RE = re.compile(rb"-?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")
HOSTILE_NUMBERS = (
    b"0", b"-1", b"-0.5", b"1e18", b"1e308", b"1e999", b"-1e999", b"inf", b"-inf", b"nan", b"NaN",
    b"Infinity", b"0x10", b"1_000", b"1.2.3", b"1,2,3", b"12,34", b"\"1,234\"", b"99999999999999999999999",
    b"1e-320", b"+5", b"--3", b"150", b"101.5", b"1e", b"e5", b"(1, 2, 3)", b"(0, 0, 0)", b"(-1, 4, 1)",
)
INJECTIONS = (
    b'"', b",", b"\x00", b"\xff\xfe", b"\x80\x81", b"\xc3\x28", b"\r", b"\n", b"\t", b"\"\"", b",,,,",
    b"==PROF== Disconnected\n", b"==ERROR== The application returned an error code (1).\n",
    b"=cmd|' /C calc'!A0", b"\xef\xbb\xbf", b"\x1a", b"\\", b"'", b"\x0b\x0c",
)


@dataclass(frozen=True)
class Seed:
    name: str  # file name (kept: a few messages and sniffs look at it)
    data: bytes
    origin: str  # where it came from, for reports


def _cut(data: bytes) -> bytes:
    if len(data) <= MAX_SEED_BYTES:
        return data
    end = data.rfind(b"\n", 0, MAX_SEED_BYTES)
    return data[: end + 1 if end > 0 else MAX_SEED_BYTES]


def load_seeds(include_realdata: bool = True) -> list[Seed]:
    """The fixtures, then the real files (cut to ``MAX_SEED_BYTES``), in a stable order."""
    paths = sorted(p for p in FIXTURES.iterdir() if p.is_file())
    if include_realdata and REALDATA.is_dir():
        paths += sorted(p for p in REALDATA.rglob("*") if p.is_file() and p.name != "README.md")
    return [Seed(p.name, _cut(p.read_bytes()), str(p)) for p in paths]


def seed_groups(seeds: list[Seed]) -> list[tuple[Seed, ...]]:
    """Single seeds plus the multi-file inputs the importers join (so the merge code is fuzzed too)."""
    groups: list[tuple[Seed, ...]] = [(s,) for s in seeds]
    by_name = {s.name: s for s in seeds}
    pairs = (
        ("nvprof_metrics.csv", "nvprof_trace.csv"),
        ("ncu_one_metric_cycles", "ncu_one_metric_clock"),
        ("magus__metrics_rodinia_lud.csv", "magus__traces_rodinia_lud.csv"),
        ("magus__metrics_parboil_sgemm.csv", "magus__traces_parboil_sgemm.csv"),
    )
    for names in pairs:
        if all(n in by_name for n in names):
            groups.append(tuple(by_name[n] for n in names))
    dl = sorted(s.name for s in seeds if s.name.startswith("deeplearningprofiling__TF-fp16"))
    if len(dl) == 3:
        groups.append(tuple(by_name[n] for n in dl))
    return groups


# ---- mutations -------------------------------------------------------------------
# Each takes (data, rng) and returns (new data, short description).

def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def truncate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(0, len(data) + 1)
    return data[:at], f"truncate@{at}"


def drop_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    count = rng.choice((1, 1, 2, 5))
    for _ in range(min(count, len(lines))):
        del lines[rng.randrange(len(lines))]
    return b"\n".join(lines), f"drop{count}"


def duplicate_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    times = rng.choice((1, 1, 3))
    lines[i:i] = [lines[i]] * times
    return b"\n".join(lines), f"dup{times}@line{i + 1}"


def swap_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines), f"swap-lines{i + 1},{j + 1}"


def swap_columns(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Swap two comma-separated fields on every line (naively: quoted commas split too)."""
    i, j = rng.randrange(0, 12), rng.randrange(0, 12)
    out = []
    for line in _lines(data):
        fields = line.split(b",")
        if max(i, j) < len(fields):
            fields[i], fields[j] = fields[j], fields[i]
        out.append(b",".join(fields))
    return b"\n".join(out), f"swap-cols{i},{j}"


def change_unit(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    text = data.decode("latin-1")
    hits = list(_UNIT_RE.finditer(text))
    if not hits:
        return inject(data, rng)
    new = rng.choice(UNIT_TOKENS)
    if rng.random() < 0.5:  # one value's unit
        hit = rng.choice(hits)
        text = text[: hit.start()] + new + text[hit.end():]
        return text.encode("latin-1"), f"unit@{hit.start()}->{new!r}"
    old = rng.choice(hits).group(0)  # every occurrence of one unit
    text = re.sub(r'(?<=[",])' + re.escape(old) + r'(?=[",\n])', new.replace("\\", r"\\"), text)
    return text.encode("latin-1"), f"unit {old!r}->{new!r} everywhere"


def hostile_number(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    hits = list(_NUMBER_RE.finditer(data))
    if not hits:
        return inject(data, rng)
    new = rng.choice(HOSTILE_NUMBERS)
    if rng.random() < 0.7:
        hit = rng.choice(hits)
        return data[: hit.start()] + new + data[hit.end():], f"number@{hit.start()}->{new!r}"
    # one number string everywhere it occurs (a whole column in practice)
    old = rng.choice(hits).group(0)
    return re.sub(rb"(?<=[\",])" + re.escape(old) + rb"(?=[\",\n])", new.replace(b"\\", b"\\\\"), data), \
        f"number {old!r}->{new!r} everywhere"


def inject(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(0, len(data) + 1)
    what = rng.choice(INJECTIONS)
    return data[:at] + what + data[at:], f"inject{what!r}@{at}"


def bom(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return b"\xef\xbb\xbf" + data, "bom"


def crlf(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if rng.random() < 0.2:
        return data.replace(b"\n", b"\r"), "cr-only"
    return data.replace(b"\n", b"\r\n"), "crlf"


def non_utf8(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Re-encode as UTF-16 or Latin-1 text, or flip high bits of a few bytes."""
    choice = rng.random()
    if choice < 0.3:
        return data.decode("latin-1").encode("utf-16"), "utf-16"
    buf = bytearray(data)
    for _ in range(rng.choice((1, 3, 10))):
        if buf:
            i = rng.randrange(len(buf))
            buf[i] |= 0x80
    return bytes(buf), "high-bits"


def blank_units_row(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Empty the line after the header line (the units row of ncu-raw / nvprof-trace)."""
    lines = _lines(data)
    header = next((i for i, ln in enumerate(lines) if re.match(rb'^"?(ID|Start|Device|Time\(%\))"?,', ln)), None)
    if header is None or header + 1 >= len(lines):
        return drop_lines(data, rng)
    width = lines[header].count(b",")
    lines[header + 1] = rng.choice((b"", b"," * width, b'"",' * width + b'""'))
    return b"\n".join(lines), "blank-units"


def huge_field(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(0, len(data) + 1)
    size = rng.choice((1_000, 70_000, 300_000))
    filler = rng.choice((b"A", b"9", b",", b"(", b"<", b" "))
    return data[:at] + filler * size + data[at:], f"huge{filler!r}x{size}@{at}"


def empty_fields(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    fields = lines[i].split(b",")
    for _ in range(rng.choice((1, 2, len(fields)))):
        fields[rng.randrange(len(fields))] = rng.choice((b"", b'""', b"n/a"))
    lines[i] = b",".join(fields)
    return b"\n".join(lines), f"empty-fields@line{i + 1}"


def shuffle_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    rng.shuffle(lines)
    return b"\n".join(lines), "shuffle"


MUTATIONS: tuple[tuple[Callable[[bytes, random.Random], tuple[bytes, str]], int], ...] = (
    (truncate, 6), (drop_lines, 5), (duplicate_lines, 5), (swap_lines, 2), (swap_columns, 3), (change_unit, 6),
    (hostile_number, 8), (inject, 6), (bom, 1), (crlf, 1), (non_utf8, 2), (blank_units_row, 3), (huge_field, 1),
    (empty_fields, 4), (shuffle_lines, 1),
)
_FUNCS = [f for f, _ in MUTATIONS]
_WEIGHTS = [w for _, w in MUTATIONS]


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """One to three mutations in a row."""
    steps = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not data:
            break
        func = rng.choices(_FUNCS, _WEIGHTS)[0]
        data, what = func(data, rng)
        steps.append(what)
    return data, steps


@dataclass
class Case:
    index: int
    files: list[tuple[str, bytes]]  # (file name, content)
    description: str


def make_case(groups: list[tuple[Seed, ...]], seed: int, index: int) -> Case:
    """Case ``index`` of the run with ``seed`` (independent of every other case)."""
    rng = random.Random(f"{seed}:{index}")
    group = rng.choice(groups)
    files, parts = [], []
    for position, s in enumerate(group):
        # in a group, mutate one file (sometimes all): the others stay valid partners
        if len(group) == 1 or position == 0 or rng.random() < 0.3:
            data, steps = mutate(s.data, rng)
        else:
            data, steps = s.data, []
        files.append((s.name, data))
        parts.append(f"{s.name}[{'+'.join(steps) or 'as is'}]")
    return Case(index, files, " ".join(parts))


# ---- checking one case ------------------------------------------------------------

OUTCOMES = ("imported", "clean-error", "traceback", "unnamed-error", "violation", "hang")
FAILURES = ("traceback", "unnamed-error", "violation", "hang")


@dataclass
class Result:
    outcome: str
    detail: str = ""
    problems: list[str] = field(default_factory=list)


def frame_problems(kernels) -> list[str]:  # noqa: ANN001 (pandas is imported lazily)
    """Broken invariants of an imported KernelFrame (empty when it is sound)."""
    import numpy as np
    import pandas as pd

    from nvperf_bridge.columns import CANONICAL_COLUMNS

    problems = []
    for name, col in CANONICAL_COLUMNS.items():
        if name not in kernels.columns or col.dtype == "str" or name == "source_row":
            continue
        values = pd.to_numeric(kernels[name], errors="coerce").astype("float64").to_numpy()
        present = ~np.isnan(values)
        if np.isinf(values).any():
            problems.append(f"{name}: infinite value")
            continue
        if col.unit == "fraction" and ((values[present] < 0) | (values[present] > 1)).any():
            problems.append(f"{name}: fraction outside [0, 1]: {values[present][(values[present] < 0) | (values[present] > 1)][:3]}")
        elif name in ("duration_ns", "sm_clock_hz", "sm_cycles", "invocations") and (values[present] <= 0).any():
            problems.append(f"{name}: value <= 0: {values[present][values[present] <= 0][:3]}")
        elif (values[present] < 0).any():
            problems.append(f"{name}: negative value: {values[present][values[present] < 0][:3]}")
    for name in ("kernel_id", "kernel_name"):
        if name in kernels.columns and kernels[name].isna().any():
            problems.append(f"{name}: missing")
    return problems


def check_files(paths: list[Path]) -> Result:
    """Import ``paths`` with ``read_profiles`` and classify what happened."""
    from nvperf_bridge.errors import NvperfError
    from nvperf_bridge.importers import read_profiles

    try:
        imported = read_profiles(paths)
    except NvperfError as exc:
        message = str(exc)
        if not any(str(p) in message or p.name in message for p in paths):
            return Result("unnamed-error", f"{type(exc).__name__}: {message}")
        if "\n" in message:
            return Result("unnamed-error", f"multi-line message: {message!r}")
        return Result("clean-error", message)
    except RecursionError as exc:
        return Result("traceback", f"RecursionError: {exc}")
    except Exception as exc:  # noqa: BLE001 (classifying exactly this)
        tb = traceback.format_exc(limit=-4)
        return Result("traceback", f"{type(exc).__name__}: {exc}\n{tb}")
    problems = frame_problems(imported.kernels)
    if problems:
        return Result("violation", "; ".join(problems), problems)
    return Result("imported", f"{len(imported.kernels)} kernels")


def write_case(case: Case, folder: Path) -> list[Path]:
    """The case's files in ``folder`` (each under its seed's name, in its own sub-folder)."""
    paths = []
    for position, (name, data) in enumerate(case.files):
        sub = folder / str(position)
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / name
        path.write_bytes(data)
        paths.append(path)
    return paths


def run_case(case: Case, folder: Path) -> Result:
    paths = write_case(case, folder)
    try:
        return check_files(paths)
    finally:
        for p in paths:
            p.unlink(missing_ok=True)


def finite(value: float) -> bool:
    return isinstance(value, float) and math.isfinite(value)

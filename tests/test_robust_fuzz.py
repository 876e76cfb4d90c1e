"""Robustness: hostile and damaged input files never crash the importers or print a wrong number.

A fixed, seeded budget of the mutation fuzzer in ``tests/fuzzing.py`` (the
same cases ``benchmarks/fuzz.py`` runs at scale), a hypothesis property over
generated CSV text, and one regression test per bug the fuzzer found. The
contract: every input either imports (every numeric canonical value finite or
missing, fractions in 0..1, durations/clocks > 0, counts >= 0) or raises an
``NvperfError`` whose one-line message names the file.

Time limits here only protect against hangs (signal.alarm, generous); no
test asserts how fast anything is.
"""

from __future__ import annotations

import contextlib
import math
import random
import signal
import string
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing
from nvperf_bridge.errors import InputError, NvperfError
from nvperf_bridge.importers import read_profiles

FIX = Path(__file__).resolve().parent / "fixtures" / "import"
CI_SEED = 20240611
CI_CASES = 120  # about 15 s on a 2-core machine; benchmarks/fuzz.py runs 10,000+


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Hang protection only: raise Hang if the block runs past ``seconds``."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):  # noqa: ANN001
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check(paths: list[Path], limit: int = 60) -> fuzzing.Result:
    try:
        with time_limit(limit):
            return fuzzing.check_files(paths)
    except Hang as exc:
        return fuzzing.Result("hang", str(exc))


# ---- the seeded mutation budget --------------------------------------------------

def test_seeded_mutations_import_or_fail_cleanly(tmp_path: Path) -> None:
    groups = fuzzing.seed_groups(fuzzing.load_seeds(include_realdata=True))
    failures, outcomes = [], []
    for index in range(CI_CASES):
        case = fuzzing.make_case(groups, CI_SEED, index)
        result = check(fuzzing.write_case(case, tmp_path / str(index)))
        outcomes.append(result.outcome)
        if result.outcome in fuzzing.FAILURES:
            failures.append(f"case {index} ({result.outcome}): {case.description}\n  {result.detail[-600:]}")
    assert not failures, (f"{len(failures)} of {CI_CASES} cases failed; replay with "
                          f"`python benchmarks/fuzz.py --seed {CI_SEED} --replay N`:\n" + "\n".join(failures[:5]))
    # the budget exercises both sides of the contract
    assert outcomes.count("imported") > CI_CASES // 4 and outcomes.count("clean-error") > 5


def test_mutation_engine_is_deterministic() -> None:
    groups = fuzzing.seed_groups(fuzzing.load_seeds(include_realdata=False))
    first = [fuzzing.make_case(groups, 7, i) for i in range(20)]
    again = [fuzzing.make_case(groups, 7, i) for i in range(20)]
    assert [c.files for c in first] == [c.files for c in again]
    assert len({c.description for c in first}) > 10


@pytest.mark.parametrize("mutation", [f for f, _ in fuzzing.MUTATIONS], ids=lambda f: f.__name__)
def test_each_mutation_on_each_fixture(tmp_path: Path, mutation) -> None:  # noqa: ANN001
    """Every mutation kind applied (with a fixed seed) to every committed fixture."""
    failures = []
    for seed in fuzzing.load_seeds(include_realdata=False):
        data, what = mutation(seed.data, random.Random(f"{seed.name}:{mutation.__name__}"))
        folder = tmp_path / seed.name.replace(".", "_")
        folder.mkdir()
        path = folder / seed.name
        path.write_bytes(data)
        result = check([path])
        if result.outcome in fuzzing.FAILURES:
            failures.append(f"{seed.name} [{what}] -> {result.outcome}: {result.detail[-400:]}")
    assert not failures, "\n".join(failures)


# ---- hypothesis: generated CSV text ----------------------------------------------

HEADERS = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
    '"Section Name","Metric Name","Metric Unit","Metric Value"',
    '"ID","Kernel Name","Device","CC","gpu__time_duration.sum","sm__warps_active.avg.pct_of_peak_sustained_active",'
    '"launch__grid_size","launch__block_size","smsp__inst_executed.sum"',
    '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"',
    '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
    '"Static SMem","Dynamic SMem","Device","Context","Stream","Name"',
    '"Time(%)","Time","Calls","Avg","Min","Max","Name"',
)
field = st.one_of(
    st.sampled_from(["", "n/a", "0", "-1", "1e999", "inf", "nan", "100", "150", "1,234", "1.234.567", "(1, 2, 3)",
                     "12.5%", "3.2GB/s", "Low (2)", "nsecond", "usecond", "%", "byte", "Mbyte", "cycle/second",
                     "gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
                     "dram__bytes_read.sum", "achieved_occupancy", "inst_executed", "k(float*, int)",
                     "GeForce GTX 1080 Ti (0)", "[CUDA memcpy HtoD]", "1e308", "0.0000001", "-0"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(alphabet=string.printable + "\x00\u00e9\ufeff", max_size=30),
)


def _quote(value: str, quoted: bool) -> str:
    return '"' + value.replace('"', '""') + '"' if quoted else value


@st.composite
def csv_files(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from(HEADERS))
    width = header.count(",") + 1
    lines = [draw(st.sampled_from(["", "==PROF== Connected to process 1\n", "==1== NVPROF is profiling\n"])) + header]
    if draw(st.booleans()):  # a units row
        lines.append(",".join(draw(st.sampled_from(["", "ns", "us", "ms", "%", "byte", "KB", "furlong"]))
                              for _ in range(width)))
    for _ in range(draw(st.integers(0, 6))):
        row_width = draw(st.sampled_from([width, width, width - 1, width + 2, 1]))
        lines.append(",".join(_quote(draw(field), draw(st.booleans())) for _ in range(max(1, row_width))))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n", "\nTotal: 3\n"]))
    data = text.encode("utf-8", errors="surrogatepass")
    if draw(st.booleans()):
        data = data.replace(b"\n", b"\r\n")
    return data


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=csv_files())
def test_generated_csv_imports_or_fails_cleanly(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "generated.csv"
    path.write_bytes(data)
    result = check([path], limit=30)
    assert result.outcome not in fuzzing.FAILURES, f"{result.outcome}: {result.detail}\ninput: {data[:600]!r}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_import_or_fail_cleanly(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "random.bin"
    path.write_bytes(data)
    result = check([path], limit=30)
    assert result.outcome not in fuzzing.FAILURES, f"{result.outcome}: {result.detail}"


# ---- regression tests for what the fuzzer found -----------------------------------

def _details_rows(rows: list[tuple[str, ...]], header: str = HEADERS[0]) -> str:
    return header + "\n" + "\n".join(",".join(f'"{v}"' for v in row) for row in rows) + "\n"


def _metric(launch: str, name: str, unit: str, value: str, pid: str = "100", section: str = "S") -> tuple[str, ...]:
    return (launch, pid, "app", "host", "k(float*)", "2020-Apr-09 15:38:19", "1", "7", section, name, unit, value)


def test_long_run_of_blanks_in_a_device_name_does_not_hang(tmp_path: Path) -> None:
    text = (FIX / "nvprof_metrics.csv").read_text().replace("GeForce GTX 1080 Ti", "GeForce" + " " * 300_000 + "x", 1)
    path = tmp_path / "m.csv"
    path.write_text(text)
    assert check([path], limit=60).outcome in ("imported", "clean-error")


def test_blank_process_id_keeps_launches_apart(tmp_path: Path) -> None:
    rows = [_metric("0", "gpu__time_duration.sum", "nsecond", "1000", pid="100"),
            _metric("1", "gpu__time_duration.sum", "nsecond", "2000", pid="200"),
            _metric("2", "gpu__time_duration.sum", "nsecond", "3000", pid="")]
    path = tmp_path / "d.csv"
    path.write_text(_details_rows(rows))
    kernels = read_profiles([path]).kernels
    assert sorted(kernels["duration_ns"]) == [1000.0, 2000.0, 3000.0]


def test_field_over_the_csv_module_limit_is_a_clean_error(tmp_path: Path) -> None:
    text = (FIX / "nvprof_trace.csv").read_text()
    path = tmp_path / "t.csv"
    path.write_text(text[:40] + "(" * 300_000 + text[40:])
    assert check([path]).outcome in ("imported", "clean-error")


@pytest.mark.parametrize("value, unit, column", [
    ("1e999", "nsecond", "duration_ns"), ("-5", "nsecond", "duration_ns"), ("0", "nsecond", "duration_ns"),
    ("inf", "byte", "dram_read_bytes"), ("-1", "inst", "inst_executed"), ("150", "%", "achieved_occupancy"),
])
def test_impossible_values_become_missing_with_a_warning(tmp_path: Path, value: str, unit: str, column: str) -> None:
    metric = {"duration_ns": "gpu__time_duration.sum", "dram_read_bytes": "dram__bytes_read.sum",
              "inst_executed": "smsp__inst_executed.sum",
              "achieved_occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active"}[column]
    rows = [_metric("0", metric, unit, value), _metric("1", metric, unit, "1"),
            _metric("0", "launch__grid_size", "", "4"), _metric("1", "launch__grid_size", "", "4")]
    path = tmp_path / "d.csv"
    path.write_text(_details_rows(rows))
    imported = read_profiles([path])
    values = imported.kernels.set_index("kernel_id")[column]
    assert math.isnan(values["0"]) and values["1"] > 0
    warning = next(w for w in imported.warnings if column in w)
    assert f"{path}:2:" in warning and "treated as missing" in warning


def test_huge_invocations_do_not_overflow(tmp_path: Path) -> None:
    text = (FIX / "nvprof_metrics.csv").read_text()
    path = tmp_path / "m.csv"
    path.write_text(text.replace(',1,"', ',1e308,"'))
    kernels = read_profiles([path]).kernels
    assert (kernels["invocations"] >= 1).all()


def test_mixed_units_in_one_metric_are_converted_per_row(tmp_path: Path) -> None:
    """Changing a value's unit and scaling the value to match gives the same canonical number."""
    rows = [_metric("0", "gpu__time_duration.sum", "usecond", "1.5"),
            _metric("1", "gpu__time_duration.sum", "nsecond", "1500"),
            _metric("2", "gpu__time_duration.sum", "msecond", "0.0015")]
    path = tmp_path / "d.csv"
    path.write_text(_details_rows(rows))
    assert list(read_profiles([path]).kernels["duration_ns"]) == pytest.approx([1500.0] * 3)


def test_a_unit_of_another_kind_in_one_row_is_not_read_as_the_first_kind(tmp_path: Path) -> None:
    """One launch's duration printed in bytes must not become a duration of that many ns."""
    rows = [_metric("0", "gpu__time_duration.sum", "nsecond", "1500"),
            _metric("1", "gpu__time_duration.sum", "byte", "777")]
    path = tmp_path / "d.csv"
    path.write_text(_details_rows(rows))
    try:
        kernels = read_profiles([path]).kernels.set_index("kernel_id")
    except InputError as exc:
        assert str(path) in str(exc)
        return
    assert kernels.loc["0", "duration_ns"] == 1500.0
    assert kernels.loc["1", "duration_ns"] != 777.0 and not kernels.loc["1", "duration_ns"] > 0


def test_errors_name_the_file_for_every_fixture_truncated_to_its_header(tmp_path: Path) -> None:
    for seed in fuzzing.load_seeds(include_realdata=False):
        first_line = seed.data.split(b"\n", 1)[0]
        path = tmp_path / seed.name
        path.write_bytes(first_line)
        try:
            read_profiles([path])
        except NvperfError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc)

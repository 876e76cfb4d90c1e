"""Number, unit and name parsing shared by the importers (examples and hypothesis properties)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvperf_bridge.importers.canonical import short_names
from nvperf_bridge.importers.text import parse_numbers, split_value_unit, tuple_product
from nvperf_bridge.units import UNITS, convert, lookup


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12,532,580,352", 12532580352.0),
        ("795,373,665.48", 795373665.48),
        ("1.234.567", 1234567.0),  # locale dot grouping
        ("1.234,5", 1234.5),
        ("1.5", 1.5),  # a single dot is a decimal point
        ("1.234", 1.234),
        ("12,5", 12.5),  # lone decimal comma
        ("1 234 567", 1234567.0),
        ("-3e-2", -0.03),
        ("0", 0.0),
    ],
)
def test_number_formats(text: str, expected: float) -> None:
    assert parse_numbers(pd.Series([text], dtype=object))[0] == pytest.approx(expected)


@pytest.mark.parametrize("text", ["n/a", "N/A", "", None, "-", "nan", "CachePreferNone", "(16, 8, 1)"])
def test_missing_and_words_are_nan_never_zero(text: object) -> None:
    assert math.isnan(parse_numbers(pd.Series([text], dtype=object))[0])


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=10**15))
def test_comma_grouped_integers_round_trip(n: int) -> None:
    assert parse_numbers(pd.Series([f"{n:,}"], dtype=object))[0] == float(n)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1000, max_value=10**12), st.integers(min_value=0, max_value=99))
def test_dot_grouped_with_decimal_comma_round_trip(n: int, cents: int) -> None:
    text = f"{n:,}".replace(",", ".") + f",{cents:02d}"
    assert parse_numbers(pd.Series([text], dtype=object))[0] == pytest.approx(n + cents / 100)


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=0, max_value=1e12, allow_nan=False), st.sampled_from(sorted(k for k in UNITS if k)))
def test_value_with_unit_in_text_converts_like_separate_unit(value: float, unit: str) -> None:
    text = f"{value:.6f}{unit}"
    number, found_unit = split_value_unit(pd.Series([text]))
    converted, base, unknown = convert(parse_numbers(number), found_unit)
    factor, expected_base = lookup(unit)
    assert not unknown
    assert base[0] == expected_base
    assert converted[0] == pytest.approx(float(f"{value:.6f}") * factor, rel=1e-9)


def test_each_value_uses_its_own_unit() -> None:
    values, bases, unknown = convert(pd.Series([17.5, 4096.0, 2.0, 111.81, 40.0]),
                                     pd.Series(["Mbyte", "byte", "Ghz", "us", "%"]))
    assert values.tolist() == pytest.approx([17.5e6, 4096.0, 2e9, 111810.0, 0.4])
    assert bases.tolist() == ["bytes", "bytes", "Hz", "ns", "fraction"]
    assert not unknown


def test_nvprof_sizes_are_binary_and_unknown_units_reported() -> None:
    values, _, unknown = convert(pd.Series([8.0, 3.0]), pd.Series(["KB", "furlong"]))
    assert values.tolist() == [8192.0, 3.0]
    assert unknown == {"furlong"}


def test_levels_keep_their_number() -> None:
    number, unit = split_value_unit(pd.Series(["Low (2)", "Idle (0)", "126.024706GB/s", "100.000000%"]))
    assert number.tolist() == ["2", "0", "126.024706", "100.000000"]
    assert unit.tolist() == ["", "", "GB/s", "%"]


def test_tuples_become_products() -> None:
    assert tuple_product(pd.Series(["(16, 8, 1)", "(332, 1, 1)", "506", None], dtype=object)).tolist()[:3] == [128, 332, 506]


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("void matrixMulCUDA<int=32>(float*, float*, float*, int, int)", "matrixMulCUDA<int=32>"),
        ("cuda_compute_step_factor(int,float*,float*,float*)", "cuda_compute_step_factor"),
        ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<double, 4>(at::PhiloxCudaState)",
         "at::native::(anonymous namespace)::fused_dropout_kernel_vec<double, 4>"),
        ("volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn"),
    ],
)
def test_short_names(name: str, short: str) -> None:
    assert short_names(pd.Series([name]))[0] == short


def test_very_long_template_names_are_shortened() -> None:
    name = "void Eigen::EigenMetaKernel<" + "Eigen::TensorMap<float, 1>, " * 30 + "long>(long)"
    assert len(name) > 700
    short = short_names(pd.Series([name]))[0]
    assert short.startswith("Eigen::EigenMetaKernel<") and short.endswith("...>") and len(short) < 120


def test_located_table_reads_the_same_across_encoding_blocks(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The table is handed to the parser as UTF-8 encoded a block at a time: multi-byte names split across
    blocks, a units row and text after the table read exactly as the text itself does."""
    import io

    from nvperf_bridge.importers import text as text_module

    table_text = ('"ID","Kernel Name","Metric Unit","Metric Value"\n'
                  + "".join(f'"{i}","kérnel_µs_{i}<float, é>","µs","{i}.5"\n' for i in range(40)))
    whole = "app output, then the table\n" + table_text + "\n==PROF== Disconnected\n"
    table = text_module.table_at(whole, whole.index('"ID"'))
    expected = pd.read_csv(io.StringIO(table.region(whole)), dtype=str, keep_default_na=False, na_values=[""],
                           index_col=False)
    for block in (1, 3, 7, 1 << 20):
        monkeypatch.setattr(text_module.EncodedText, "BLOCK", block)
        frame, _ = text_module.read_table(whole, table, tmp_path / "p.csv")
        pd.testing.assert_frame_equal(frame, expected, check_exact=True)
    assert frame["Kernel Name"][39] == "kérnel_µs_39<float, é>"

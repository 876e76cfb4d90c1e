"""Kernel-name signatures: parsing, join keys that never pair two kernels, distinct display names."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.importers import read_file
from nvperf_bridge.names import (
    compatible,
    display_name,
    distinct_display_names,
    keys,
    match_names,
    parse,
)

# shapes copied from real names (nvprof traces, ncu 2019-2025 details, PyTorch/Eigen/cutlass builds)
LAMBDA = ("void at::native::legacy::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::"
          "add_kernel_cuda(at::TensorIterator&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#10}::"
          "operator()() const::{lambda(c10::Half, c10::Half)#1}>(at::TensorIterator&, at::native::add_kernel_cuda"
          "(at::TensorIterator&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#10}::operator()() const::"
          "{lambda(c10::Half, c10::Half)#1} const&)::{lambda(int)#4}>(int, at::native::gpu_kernel_impl<at::native::"
          "add_kernel_cuda(at::TensorIterator&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#10}::"
          "operator()() const::{lambda(c10::Half, c10::Half)#1}>(at::TensorIterator&, at::native::add_kernel_cuda"
          "(at::TensorIterator&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#10}::operator()() const::"
          "{lambda(c10::Half, c10::Half)#1} const&)::{lambda(int)#4})")


def test_nvprof_and_ncu_spellings_of_one_kernel_are_one_signature() -> None:
    nvprof = parse("void matrixMulCUDA<int=32>(float*, float*, float*, int, int)")
    ncu = parse("void matrixMulCUDA<(int)32>(float *, float *, float *, int, int)")
    assert nvprof.qualname == "matrixMulCUDA"
    assert nvprof.template_args == ("32",)
    assert nvprof.params == ("float*", "float*", "float*", "int", "int")
    assert nvprof.full() == ncu.full()
    assert keys("cuda_compute_flux(int,int*,float*,float*,float*)") == keys(
        "cuda_compute_flux(int, int*, float*, float*, float*)")


def test_parts_printed_and_not_printed() -> None:
    bare = parse("cuda_compute_step_factor")
    assert (bare.qualname, bare.template_args, bare.params) == ("cuda_compute_step_factor", None, None)
    plain = parse("Fan1(float*, float*, int, int)")
    assert plain.template_args == () and plain.params == ("float*", "float*", "int", "int")
    assert keys("cuda_compute_step_factor") == {"full": None, "name_params": None, "name_targs": None,
                                                "name": "cuda_compute_step_factor"}
    k = keys("void reduce6<float, 256, true>(float*, float*, unsigned int)")
    assert k["full"] == "reduce6<float,256,true>(float*,float*,unsigned int)"
    assert k["name_params"] == "reduce6(float*,float*,unsigned int)"
    assert k["name_targs"] == "reduce6<float,256,true>"
    assert k["name"] == "reduce6"


def test_scopes_anonymous_namespaces_and_lambdas() -> None:
    anon = parse("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<double, double, unsigned int, 1, 4>"
                 "(at::cuda::detail::TensorInfo<double, unsigned int>, unsigned int, double)")
    assert anon.qualname == "at::native::(anonymous namespace)::fused_dropout_kernel_vec"
    assert anon.function == "fused_dropout_kernel_vec"
    assert anon.template_args == ("double", "double", "unsigned int", "1", "4")
    assert anon.params == ("at::cuda::detail::TensorInfo<double,unsigned int>", "unsigned int", "double")
    unnamed = parse("void <unnamed>::elementwise_kernel_with_index<int, at::native::arange_cuda_out(const c10::Scalar &)"
                    "::[lambda() (instance 1)]::operator ()() const::[lambda(long) (instance 1)]>(T1, T2, "
                    "function_traits<T2>::result_type *)")
    assert unnamed.qualname == "<unnamed>::elementwise_kernel_with_index"
    assert unnamed.params == ("T1", "T2", "function_traits<T2>::result_type*")
    assert len(unnamed.template_args or ()) == 2
    lam = parse(LAMBDA)
    assert len(LAMBDA) > 700
    assert lam.qualname == "at::native::legacy::elementwise_kernel"
    assert lam.template_args is not None and lam.template_args[:2] == ("128", "4")
    assert lam.params is not None and lam.params[0] == "int" and len(lam.params) == 2
    assert display_name(LAMBDA) == "at::native::legacy::elementwise_kernel<…>"


def test_unparseable_and_mangled_names_are_kept_whole() -> None:
    for name in ("_ZN10tensorflow7functor15RowReduceKernelIfEEvPKT_", "foo<int(", "broken>)x("):
        sig = parse(name)
        assert sig.template_args is None and sig.params is None
        assert sig.qualname == name
        assert display_name(name) == name


def test_match_never_pairs_two_different_kernels() -> None:
    # same function, different parameter lists: different kernels
    assert not compatible("foo(int)", "foo(float)")
    assert match_names(["foo(int)"], ["foo(float)"])["foo(int)"].right is None
    # different template arguments: different kernels
    assert match_names(["reduce6<float, 256, true>(float*)"], ["reduce6<float, 32, true>(float*)"])[
        "reduce6<float, 256, true>(float*)"].right is None
    # a bare name with two printed overloads on the other side: ambiguous, kept unpaired
    m = match_names(["foo"], ["foo(int)", "foo(float)"])["foo"]
    assert m.right is None and m.ambiguous and set(m.candidates) == {"foo(int)", "foo(float)"}
    # two overloads on the left, one bare name on the right: neither takes it
    both = match_names(["foo(int)", "foo(float)"], ["foo"])
    assert both["foo(int)"].right is None and both["foo(float)"].right is None
    assert both["foo(int)"].ambiguous


def test_match_uses_the_most_specific_key_both_sides_print() -> None:
    # V100 cfd: the same kernel with and without its parameter list (ncu 2019 vs 2020 files)
    m = match_names(["cuda_compute_step_factor"], ["cuda_compute_step_factor(int,float*,float*,float*)"])
    assert m["cuda_compute_step_factor"].right == "cuda_compute_step_factor(int,float*,float*,float*)"
    assert m["cuda_compute_step_factor"].key == "name"
    # a full match beats a merely compatible bare name
    m = match_names(["foo(int)"], ["foo", "foo(int)"])
    assert m["foo(int)"].right == "foo(int)" and m["foo(int)"].key == "full"
    # nvprof vs ncu template spelling, spaces differ
    m = match_names(["void k<int=32>(float*, int)"], ["void k<(int)32>(float *,int)", "void k<(int)64>(float *,int)"])
    assert m["void k<int=32>(float*, int)"].right == "void k<(int)32>(float *,int)"


def test_distinct_display_names_for_distinct_full_names() -> None:
    names = ["void reduce6<float, 256, true>(float*)", "void reduce6<float, 32, true>(float*)",
             "foo(int)", "foo(float)", "bar", "bar(int)", "void reduce6<float, 256, true>(float *)"]
    shown = distinct_display_names(names)
    assert shown[0] == "reduce6<…,256,…>" and shown[1] == "reduce6<…,32,…>"
    assert shown[2] == "foo(int)" and shown[3] == "foo(float)"
    assert shown[4] == "bar" and shown[5] == "bar(int)"
    assert shown[6] == shown[0]  # the same kernel spelled with other spaces is one display name
    # names that differ only deep inside long template arguments get ordinals, never a collision
    long_a = "void k<" + "A" * 80 + "x>(int)"
    long_b = "void k<" + "A" * 80 + "y>(int)"
    a, b = distinct_display_names([long_a, long_b])
    assert a != b and len(a) < 80 and len(b) < 80


def _realdata_names(realdata_dir: Path, pattern: str) -> list[str]:
    names: list[str] = []
    for path in sorted(realdata_dir.rglob(pattern)):
        if path.name == "README.md" or "fp16_b64_ctx4k" in path.name:  # #28 holds only an error
            continue
        names.extend(read_file(path).frame["kernel_name"].dropna().astype(str).unique())
    return names


def test_realdata_display_names_distinct_exactly_where_signatures_differ(realdata_dir: Path) -> None:
    names = list(dict.fromkeys(_realdata_names(realdata_dir, "*.csv") + _realdata_names(realdata_dir, "*.log")
                               + _realdata_names(realdata_dir, "deeplearningprofiling__*")))
    assert len(names) > 150
    shown = distinct_display_names(names)
    by_label: dict[str, set[str]] = {}
    for name, label in zip(names, shown):
        by_label.setdefault(label, set()).add(parse(name).full())
    assert all(len(fulls) == 1 for fulls in by_label.values())
    assert max(len(s) for s in shown) <= 110


@pytest.mark.parametrize("pair", ["parboil_sgemm", "rodinia_hotspot", "rodinia_lud", "poly_gemm"])
def test_realdata_magus_metrics_names_pair_with_trace_names(realdata_dir: Path, pair: str) -> None:
    metrics = read_file(realdata_dir / "magus" / f"magus__metrics_{pair}.csv").frame["kernel_name"]
    trace = read_file(realdata_dir / "magus" / f"magus__traces_{pair}.csv").frame["kernel_name"]
    found = match_names(metrics, trace)
    assert all(m.right is not None for m in found.values())
    assert len({m.right for m in found.values()}) == len(found)


def test_realdata_cfd_names_with_and_without_parameters_pair(realdata_dir: Path) -> None:
    folder = realdata_dir / "optimal_unified_memory"
    bare = read_file(folder / "optimal_unified_memory__cfd__nsight_cfd_097K.log").frame["kernel_name"]
    full = read_file(folder / "optimal_unified_memory__cfd-ip-128-115-246-7__nsight_cfd_097K.log").frame["kernel_name"]
    assert set(bare.map(lambda n: parse(n).params)) == {None}
    found = match_names(bare, full)
    assert len(found) >= 3 and all(m.right is not None and m.key == "name" for m in found.values())
    assert all(parse(m.right).qualname == parse(m.left).qualname for m in found.values())

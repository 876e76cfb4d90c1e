"""``nvperf_bridge.scipy_lapack`` gives scipy.linalg's numbers bit for bit, without scipy.linalg's import.

Kerr's CholeskyQR2 and k-means call these three routines on every fit: a last bit that differed would change
a prediction printed in the reports (benchmarks/same_results.py compares them byte for byte).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from nvperf_bridge import scipy_lapack

scipy_linalg = pytest.importorskip("scipy.linalg")


def _tall(rows: int, columns: int, seed: int) -> np.ndarray:
    # a design matrix as Kerr's regression builds it: a constant column and scores of very different scales
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(rows, columns)) * np.logspace(0, 3, columns)
    a[:, 0] = 1.0
    return a


@pytest.mark.parametrize("shape", [(40, 3), (500, 11), (2000, 13)])
def test_cholesky_qr_steps_equal_scipys(shape) -> None:
    a = _tall(*shape, seed=shape[1])
    gram = a.T @ a
    ours, theirs = scipy_lapack.cholesky(gram), scipy_linalg.cholesky(gram, lower=False)
    assert ours.tobytes() == theirs.tobytes() and ours.flags.f_contiguous == theirs.flags.f_contiguous
    assert np.array_equal(np.tril(ours, -1), np.zeros_like(ours))  # the lower triangle zeroed, as scipy's clean=1
    # q R^-1 as kerr solves it: transposed, with R in Fortran order and again in C order (the other LAPACK call)
    for upper in (ours, np.ascontiguousarray(ours)):
        expected = scipy_linalg.solve_triangular(upper, a.T, trans="T", lower=False)
        found = scipy_lapack.solve_triangular(upper, a.T, trans="T", lower=False)
        assert found.tobytes() == expected.tobytes()
    lower_expected = scipy_linalg.solve_triangular(ours.T, a.T, lower=True)
    assert scipy_lapack.solve_triangular(ours.T, a.T, lower=True).tobytes() == lower_expected.tobytes()


def test_kmeans_product_is_scipys_dgemm() -> None:
    points, centers = _tall(1000, 6, 1), _tall(7, 6, 2)
    from scipy.linalg.blas import dgemm

    expected = dgemm(-2.0, centers.T, points.T, trans_a=1)
    assert scipy_lapack.dgemm(-2.0, centers.T, points.T, trans_a=1).tobytes() == expected.tobytes()


def test_errors_are_scipys() -> None:
    not_definite = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError):
        scipy_lapack.cholesky(not_definite)
    with pytest.raises(ValueError):
        scipy_lapack.cholesky(np.array([[1.0, np.nan], [np.nan, 1.0]]))  # kerr falls back to LAPACK's SVD on both
    with pytest.raises(np.linalg.LinAlgError):
        scipy_lapack.solve_triangular(np.array([[1.0, 1.0], [0.0, 0.0]]), np.ones(2))
    with pytest.raises(ValueError):
        scipy_lapack.solve_triangular(np.eye(2), np.ones(3))


def test_other_dtypes_go_to_scipy() -> None:
    gram = (_tall(50, 4, 3).T @ _tall(50, 4, 3)).astype(np.float32)
    assert scipy_lapack.cholesky(gram).tobytes() == scipy_linalg.cholesky(gram).tobytes()


def _fresh_process(code: str, folder) -> str:
    """What ``code`` prints in a fresh interpreter started in ``folder`` (outside the checkout, as CI's
    installed package runs: from the repository root its nvperf_bridge/ would shadow the install)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=folder).stdout.strip()


def test_kerr_fit_needs_no_scipy_linalg_import(tmp_path) -> None:
    # Kerr's regression on 2,000 rows through CholeskyQR2 loads the two compiled modules only, not
    # scipy.linalg's 85 (0.11-0.14 CPU s a run)
    code = ("import sys, numpy as np; from nvperf_bridge.builtin_plugins import kerr; "
            "a = np.random.default_rng(0).normal(size=(2000, 9)); u, s, vt = kerr.thin_svd(a); "
            "print(np.allclose((u * s) @ vt, a), sorted(m for m in sys.modules if m.startswith('scipy')))")
    assert _fresh_process(code, tmp_path) == "True ['scipy.linalg._fblas', 'scipy.linalg._flapack']"


def test_scipy_linalg_imported_later_uses_the_same_modules(tmp_path) -> None:
    code = ("import sys; from nvperf_bridge import scipy_lapack; import scipy.linalg, scipy.linalg.lapack; "
            "import numpy as np; c = scipy.linalg.cholesky(np.eye(3) * 4.0); "
            "print(scipy.linalg.lapack._flapack is scipy_lapack.FLAPACK, c[0, 0])")
    assert _fresh_process(code, tmp_path) == "True 2.0"

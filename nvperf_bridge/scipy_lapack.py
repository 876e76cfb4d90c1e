"""scipy's compiled BLAS and LAPACK wrappers without ``scipy.linalg``'s package import (speed only).

Kerr's regression (CholeskyQR2: ``scipy.linalg.cholesky`` and ``solve_triangular``) and its k-means
(``dgemm``) need three routines of the wrappers scipy compiles, ``scipy.linalg._flapack`` and
``scipy.linalg._fblas``. Imported the ordinary way, they come after ``scipy.linalg``'s ``__init__``, which
imports 85 modules (its array-API layer, every decomposition, the matrix functions): 0.11-0.14 CPU s of
every ``analyze`` with enough timed kernels for Kerr's fit (the small nvprof pair included), against
0.01 s for the two extension modules alone. Here the two are loaded from scipy's own files and
registered under their own names (a later ``import scipy.linalg`` takes them from ``sys.modules``), and
``cholesky`` / ``solve_triangular`` make the calls scipy's functions of those names make for float64
arrays, with the same checks and errors (scipy 1.10-1.17, ``_decomp_cholesky._cholesky`` and
``_basic._solve_triangular``), so the numbers are scipy's bit for bit (``tests/test_scipy_lapack.py``).
Anything else (another dtype, an empty array), or a scipy whose files are not where this looks, goes
to ``scipy.linalg`` itself.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

LinAlgError = np.linalg.LinAlgError  # scipy.linalg.LinAlgError is numpy's


def _extension(name: str) -> ModuleType:
    """``scipy.linalg.<name>``, an extension module, loaded from its file without its package's import
    (the ordinary import where that package is loaded already or the file is not found)."""
    full = f"scipy.linalg.{name}"
    if full in sys.modules:
        return sys.modules[full]
    if "scipy.linalg" not in sys.modules:
        spec = importlib.util.find_spec("scipy")  # finds the package, imports nothing
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(folder, "linalg", name + suffix)
                if not path.is_file():
                    continue
                loader = importlib.machinery.ExtensionFileLoader(full, str(path))
                try:
                    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(full, loader))
                    loader.exec_module(module)
                except ImportError:
                    break
                sys.modules[full] = module
                return module
    return importlib.import_module(full)


# loaded on import (once, under the import lock): analysis._import_ahead loads this module ahead of Kerr
FLAPACK = _extension("_flapack")
FBLAS = _extension("_fblas")


def _float64(*arrays: np.ndarray) -> bool:
    return all(a.dtype == np.float64 and a.size for a in arrays)


def cholesky(a: np.ndarray) -> np.ndarray:
    """``scipy.linalg.cholesky(a, lower=False)``: the upper factor U of a = U'U (Fortran order, its lower
    triangle zeroed); ValueError for a non-finite or non-square ``a``, LinAlgError where a is not positive
    definite."""
    a1 = np.asarray_chkfinite(a)
    if a1.ndim != 2 or a1.shape[0] != a1.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {a1.shape}")
    if not _float64(a1):
        from scipy.linalg import cholesky as scipy_cholesky

        return scipy_cholesky(a, lower=False)
    c, info = FLAPACK.dpotrf(a1, lower=0, overwrite_a=0, clean=1)  # the input kept (the same numbers either way)
    if info > 0:
        raise LinAlgError(f"{info}-th leading minor of the array is not positive definite")
    if info < 0:
        raise ValueError(f'LAPACK reported an illegal value in {-info}-th argument on entry to "POTRF".')
    return c


_TRANS = {"N": 0, "T": 1, "C": 2}


def solve_triangular(a: np.ndarray, b: np.ndarray, trans: int | str = 0, lower: bool = False) -> np.ndarray:
    """``scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower)``: x with op(a) x = b for a triangular
    ``a`` (op: ``trans`` 0/"N" none, 1/"T" transposed)."""
    a1, b1 = np.asarray_chkfinite(a), np.asarray_chkfinite(b)
    if a1.ndim != 2 or a1.shape[0] != a1.shape[1]:
        raise ValueError("expected square matrix")
    if a1.shape[0] != b1.shape[0]:
        raise ValueError(f"shapes of a {a1.shape} and b {b1.shape} are incompatible")
    trans = _TRANS.get(trans, trans) if isinstance(trans, str) else trans
    if not _float64(a1, b1) or trans == 2:
        from scipy.linalg import solve_triangular as scipy_solve_triangular

        return scipy_solve_triangular(a, b, trans=trans, lower=lower)
    if a1.flags.f_contiguous:
        x, info = FLAPACK.dtrtrs(a1, b1, overwrite_b=0, lower=lower, trans=trans, unitdiag=False)
    else:  # trtrs expects Fortran order: the transposed system is solved, as scipy solves it
        x, info = FLAPACK.dtrtrs(a1.T, b1, overwrite_b=0, lower=not lower, trans=not trans, unitdiag=False)
    if info > 0:
        raise LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}")
    if info < 0:
        raise ValueError(f"illegal value in {-info}-th argument of internal trtrs")
    return x


def dgemm(alpha: float, a: np.ndarray, b: np.ndarray, trans_a: int = 0) -> np.ndarray:
    """``scipy.linalg.blas.dgemm(alpha, a, b, trans_a=trans_a)`` (it is that function)."""
    return FBLAS.dgemm(alpha, a, b, trans_a=trans_a)


__all__ = ["FBLAS", "FLAPACK", "LinAlgError", "cholesky", "dgemm", "solve_triangular"]

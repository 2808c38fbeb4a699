"""The regularised linear inversion and its Bayesian evidence (Suyu et al. 2006).

Given the blurred mapping matrix ``B (n_mask, n_source)``, the data ``d`` and noise ``sigma``
at the masked-in pixels, and the regularisation matrix ``R = lambda H + EPSILON I``:

* data vector ``D = B^T C^-1 d`` and curvature matrix ``F = B^T C^-1 B``,
  ``C = diag(sigma^2)``;
* the source ``s`` solves ``(F + R) s = D``, by a Cholesky factorisation ``F + R = L L^T``;
* the log-evidence is

  ``log E = -1/2 [ chi^2 + s^T R s + ln det(F + R) - ln det(R) + sum ln(2 pi sigma^2) ]``

  with ``chi^2 = sum ((d - B s) / sigma)^2``, each log-determinant twice the sum of the logs
  of its Cholesky factor's diagonal.

**Jointly with linear light profiles.** Beside the source, ``n_linear`` linear light profiles
(lens light whose intensities are solved) add their blurred unit-intensity images as columns
after the source's, ``B = [B_s | L]``, unregularised: the system is ``(F + R') x = D`` with
``R' = diag(R, 0)`` and ``x = (s, a)``, ``a`` the intensities (unconstrained in sign). As in
autolens, the regularisation term and both log-determinants are taken over the regularised
(source) block only: ``s^T R s``, ``ln det R`` and ``ln det [(F + R')_ss]``, the leading
``n_source x n_source`` block of the system. With the source first, that block's Cholesky
factor is the leading block of the whole system's factor, so one factorisation serves both
the solve and the determinant. (The intensities are thus fitted, not marginalised: the
evidence carries no ``ln det`` of their block.)

**Positivity** (optional, ``Pixelization(..., positive=True)``): the unknowns are constrained
to ``x >= 0`` and found by non-negative least squares on the normal equations,
``min x^T (F + R') x - 2 x^T D``, which is ``chi^2 + s^T R s`` up to a constant; the
determinants are unchanged (autolens' positive-only solver does the same). The active-set
solver solves a dense ``n x n`` system per step, so it suits meshes of up to a few hundred
pixels.

A matrix that is not numerically positive definite (a factor with a non-positive or
non-finite diagonal) gives ``-inf``, with the reason logged on the host backends.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

__all__ = ["InversionTerms", "solve", "solve_normal"]

logger = logging.getLogger("twinlens.fit.pixelised")


@dataclass(frozen=True)
class InversionTerms:
    """The solution and every term of the log-evidence.

    Attributes
    ----------
    reconstruction : float array (n_source,)
        ``s``, the source pixels' values.
    chi_squared, regularization_term : float
        ``chi^2`` and ``s^T R s``.
    log_det_curvature_reg : float
        ``ln det(F + R)``.
    log_det_regularization : float
        ``ln det(R)``.
    noise_normalization : float
        ``sum ln(2 pi sigma^2)``.
    log_evidence : float
        ``-inf`` where a matrix is not positive definite.
    intensities : float array (n_linear,)
        The linear light profiles' intensities solved with the source (empty without them).
    """

    reconstruction: Any
    chi_squared: Any
    regularization_term: Any
    log_det_curvature_reg: Any
    log_det_regularization: Any
    noise_normalization: Any
    log_evidence: Any
    intensities: Any = ()


@cache
def _blas_controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context in which BLAS and LAPACK run on one thread.

    The factorisations of an inversion (``n_source`` up to a few thousand) are too small for
    threaded LAPACK to pay, and on a machine whose cores are busy a threaded ``potrf`` waits on
    descheduled threads: measured 0.05 s on one thread against a median 1.2 s on two, for
    1,600 x 1,600 on two loaded cores. The limit is process-wide while it lasts."""
    controller = _blas_controller()
    if controller is None:  # pragma: no cover
        return nullcontext()
    return controller.limit(limits=1, user_api="blas")


def _log_det_numpy(
    matrix: np.ndarray, what: str, n_block: int | None = None
) -> tuple[float, np.ndarray | None]:
    from scipy.linalg import lapack

    # LAPACK's potrf directly: the same factorisation as np.linalg.cholesky, without its
    # per-call overhead (measured 1 ms against 10-200 ms for 500 x 500 on a busy machine)
    factor, info = lapack.dpotrf(np.asarray(matrix, dtype=float), lower=1, clean=1)
    diag = np.diagonal(factor)
    if info != 0 or not np.all(np.isfinite(diag) & (diag > 0)):
        logger.warning("pixelised source: %s is not positive definite; log-evidence is -inf", what)
        return -math.inf, None
    return 2.0 * float(np.sum(np.log(diag[:n_block]))), factor


def solve(
    blurred: Any,
    data: Any,
    noise: Any,
    regularization: Any,
    xp: Any = np,
    positive: str | None = None,
) -> InversionTerms:
    """Solve for the source and compute the log-evidence terms, from the dense blurred
    mapping matrix.

    Parameters
    ----------
    blurred : float array (n_mask, n_source)
        ``B``.
    data, noise : float arrays (n_mask,)
        ``d`` and ``sigma`` (> 0).
    regularization : float array (n_source, n_source)
        ``R``, symmetric positive definite.
    xp : module
        ``numpy`` (numpy and numba backends) or ``jax.numpy``.
    positive : str, optional
        See :func:`solve_normal`.

    Returns
    -------
    InversionTerms
    """
    bw = blurred / noise[:, None]
    dw = data / noise
    return solve_normal(
        bw.T @ bw, bw.T @ dw, dw, noise, regularization, lambda s: bw @ s, xp, positive
    )


def solve_normal(
    curvature: Any,
    vector: Any,
    weighted_data: Any,
    noise: Any,
    regularization: Any,
    weighted_model: Callable[[Any], Any],
    xp: Any = np,
    positive: str | None = None,
) -> InversionTerms:
    """:func:`solve` from the normal equations, however ``F`` and ``D`` were formed.

    Parameters
    ----------
    curvature : float array (n, n)
        ``F = B^T C^-1 B``; ``n = n_source + n_linear``, the source's columns first, then
        those of the linear light profiles (see the module documentation).
    vector : float array (n,)
        ``D = B^T C^-1 d``.
    weighted_data : float array (n_mask,)
        ``d / sigma``.
    noise : float array (n_mask,)
        ``sigma``.
    regularization : float array (n_source, n_source)
        ``R``, for the first ``n_source`` unknowns.
    weighted_model : callable
        ``x -> B x / sigma`` for all ``n`` unknowns, for ``chi^2``.
    xp : module
    positive : str, optional
        None (default): the unconstrained solution. A backend name (``numpy``, ``numba`` or
        ``jax``): every unknown constrained to be >= 0, by the non-negative least-squares
        solver of :mod:`twinlens.fit.nnls` on ``(F + R', D)``, which minimises the same
        ``chi^2 + s^T R s`` (see the module documentation).
    """
    n_source = regularization.shape[0]
    n_linear = curvature.shape[0] - n_source
    # diag(R, 0): the linear light profiles' intensities are not regularised
    padded = xp.pad(regularization, ((0, n_linear), (0, n_linear))) if n_linear else regularization
    system = curvature + padded
    norm = xp.sum(xp.log(2.0 * math.pi * noise * noise))
    if xp is np:
        from scipy.linalg import cho_solve

        with one_blas_thread():
            log_det_a, factor = _log_det_numpy(
                system, "F + lambda H (curvature + regularisation)", n_source
            )
            log_det_r, _ = _log_det_numpy(regularization, "the regularisation matrix")
            if factor is None or not math.isfinite(log_det_r):
                x = np.full(vector.shape, np.nan)
                nan = math.nan
                return InversionTerms(
                    x[:n_source],
                    nan,
                    nan,
                    log_det_a,
                    log_det_r,
                    float(norm),
                    -math.inf,
                    x[n_source:],
                )
            if positive is None:
                x = cho_solve((factor, True), vector, check_finite=False)
            else:
                from twinlens.fit.nnls import nnls_gram

                x = nnls_gram(system, vector, positive)
        return _score(
            weighted_data, weighted_model(x), x, regularization, log_det_a, log_det_r, norm, np
        )
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    ok = xp.bool_(True)
    logs = []
    factors = []
    for matrix in (system, regularization):
        factor = xp.linalg.cholesky(matrix)
        diag = xp.diagonal(factor)
        good = xp.all(xp.isfinite(diag) & (diag > 0))
        ok = ok & good
        # the source block's determinant: the leading diagonal of the whole factor
        logs.append(2.0 * xp.sum(xp.log(xp.where(good, diag, 1.0))[:n_source]))
        factors.append(factor)
    safe = xp.where(ok, factors[0], xp.eye(system.shape[0]))
    if positive is None:
        x = jax.scipy.linalg.cho_solve((safe, True), vector)
    else:
        from twinlens.fit.nnls import nnls_gram

        # the solver's answer is held constant under differentiation: it minimises
        # chi^2 + s^T R s, whose derivative with respect to x vanishes or x sits on a bound
        safe_system = xp.where(ok, system, xp.eye(system.shape[0]))
        x = nnls_gram(safe_system, vector, "jax")
    terms = _score(weighted_data, weighted_model(x), x, regularization, logs[0], logs[1], norm, xp)
    return InversionTerms(
        terms.reconstruction,
        terms.chi_squared,
        terms.regularization_term,
        terms.log_det_curvature_reg,
        terms.log_det_regularization,
        terms.noise_normalization,
        xp.where(ok & xp.isfinite(terms.log_evidence), terms.log_evidence, -xp.inf),
        terms.intensities,
    )


def _score(
    dw: Any, model: Any, x: Any, reg: Any, log_det_a: Any, log_det_r: Any, norm: Any, xp: Any
) -> InversionTerms:
    n_source = reg.shape[0]
    s, intensities = x[:n_source], x[n_source:]
    residual = dw - model
    chi2 = xp.sum(residual * residual)
    reg_term = s @ (reg @ s)
    log_e = -0.5 * (chi2 + reg_term + log_det_a - log_det_r + norm)
    if xp is np:
        chi2, reg_term, log_e, norm = float(chi2), float(reg_term), float(log_e), float(norm)
    return InversionTerms(s, chi2, reg_term, log_det_a, log_det_r, norm, log_e, intensities)

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
after the source's, ``B = [B_s | L]``, unregularised: ``x = (s, a)`` minimises
``chi^2 + s^T R s`` with the intensities ``a >= 0``, as linear intensities are solved
everywhere in twinlens. With ``A = F + R'``, ``R' = diag(R, 0)``, the regularised source block
``A_ss = F_ss + R`` is Cholesky-factored once; eliminating the source leaves the Schur
complement ``S = A_aa - A_as A_ss^-1 A_sa`` and ``g = D_a - A_as A_ss^-1 D_s``, whose
non-negative least-squares solution (:func:`twinlens.inversion.nnls.nnls_gram`) is ``a``; then
``s = A_ss^-1 (D_s - A_sa a)``. The whole ``A`` is never factored, so near-collinear or empty
lens-light images (which make it singular) still give a finite evidence. As in autolens, the
regularisation term and both log-determinants are taken over the regularised (source) block
only: ``s^T R s``, ``ln det R`` and ``ln det A_ss``. (The intensities are thus fitted, not
marginalised: the evidence carries no ``ln det`` of their block.) Under JAX ``a`` is held
constant when differentiating: the minimised quantity's derivative with respect to ``a``
vanishes, or ``a`` sits on a bound, so the gradient is exact.

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

import itertools
import logging
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import numpy as np

__all__ = ["InversionTerms", "solve", "solve_normal"]

logger = logging.getLogger("twinlens.inversion")


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


#: the blocks :func:`gram` splits the rows into, and the fewest rows per block worth splitting
GRAM_BLOCKS = 8
GRAM_MIN_BLOCK = 128


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
    descheduled threads (for 1,600 x 1,600 on two loaded cores, many times longer than on one
    thread). The limit is process-wide while it lasts."""
    controller = _blas_controller()
    if controller is None:  # pragma: no cover
        return nullcontext()
    return controller.limit(limits=1, user_api="blas")


def _log_det_numpy(matrix: np.ndarray, what: str) -> tuple[float, np.ndarray | None]:
    from scipy.linalg import lapack

    # LAPACK's potrf directly: the same factorisation as np.linalg.cholesky, without its
    # per-call overhead (which dominated a 500 x 500 factorisation on a busy machine)
    factor, info = lapack.dpotrf(np.asarray(matrix, dtype=float), lower=1, clean=1)
    diag = np.diagonal(factor)
    if info != 0 or not np.all(np.isfinite(diag) & (diag > 0)):
        logger.warning("pixelised source: %s is not positive definite; log-evidence is -inf", what)
        return -math.inf, None
    return 2.0 * float(np.sum(np.log(diag))), factor


def solve(
    blurred: Any,
    data: Any,
    noise: Any,
    regularization: Any,
    xp: Any = np,
    positive: str | None = None,
    backend: str | None = None,
    log_det_regularization: Any = None,
) -> InversionTerms:
    """Solve for the source and compute the log-evidence terms, from the dense blurred
    mapping matrix.

    Parameters
    ----------
    blurred : float array (n_mask, n_source + n_linear)
        ``B``: the source's columns, then any linear light profiles'.
    data, noise : float arrays (n_mask,)
        ``d`` and ``sigma`` (> 0).
    regularization : float array (n_source, n_source)
        ``R``, symmetric positive definite.
    xp : module
        ``numpy`` (numpy and numba backends) or ``jax.numpy``.
    positive, backend, log_det_regularization : optional
        See :func:`solve_normal`.

    Returns
    -------
    InversionTerms
    """
    bw = blurred / noise[:, None]
    dw = data / noise
    return solve_normal(
        bw.T @ bw,
        bw.T @ dw,
        dw,
        noise,
        regularization,
        lambda s: bw @ s,
        xp,
        positive,
        backend,
        log_det_regularization,
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
    backend: str | None = None,
    log_det_regularization: Any = None,
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
        None (default): the source unconstrained, the linear light profiles' intensities
        non-negative (solved on the Schur complement, see the module documentation). A backend
        name (``numpy``, ``numba`` or ``jax``): every unknown constrained to be >= 0, by the
        non-negative least-squares solver of :mod:`twinlens.inversion.nnls` on ``(F + R', D)``,
        which minimises the same ``chi^2 + s^T R s``.
    backend : str, optional
        The backend of the non-negative solver for the intensities (``numpy`` or ``numba``
        with ``xp = numpy``; default ``numpy``, and ``jax`` with ``jax.numpy``).
    log_det_regularization : float, optional
        ``ln det R`` when it is known in closed form
        (:func:`~twinlens.inversion.regularization.lattice_log_det`): ``R`` is then not
        factorised.
    """
    if backend is None:
        backend = "numpy" if xp is np else "jax"
    # the regularised source block A_ss = F_ss + R, factored once: its determinant is the
    # evidence's, and it eliminates the source from the joint system
    n_source = regularization.shape[0]
    block = curvature[:n_source, :n_source] + regularization
    norm = xp.sum(xp.log(2.0 * math.pi * noise * noise))
    solver = _solve_host if xp is np else partial(_solve_traced, xp=xp)
    return solver(
        curvature,
        vector,
        weighted_data,
        regularization,
        weighted_model,
        positive,
        backend,
        block,
        norm,
        log_det_regularization,
    )


def _solve_host(
    curvature: np.ndarray,
    vector: np.ndarray,
    weighted_data: np.ndarray,
    regularization: np.ndarray,
    weighted_model: Callable[[Any], Any],
    positive: str | None,
    backend: str,
    block: np.ndarray,
    norm: Any,
    log_det_regularization: Any,
) -> InversionTerms:
    """:func:`solve_normal` on numpy: LAPACK's Cholesky on one BLAS thread; a matrix that is
    not positive definite gives NaN terms and ``-inf``, with the reason logged."""
    n_source = regularization.shape[0]
    with one_blas_thread():
        log_det_a, factor = _log_det_numpy(block, "F + lambda H (curvature + regularisation)")
        if log_det_regularization is None:
            log_det_r, _ = _log_det_numpy(regularization, "the regularisation matrix")
        else:
            log_det_r = float(log_det_regularization)
        if factor is None or not math.isfinite(log_det_r):
            x = np.full(vector.shape, np.nan)
            nan = math.nan
            return InversionTerms(
                x[:n_source], nan, nan, log_det_a, log_det_r, float(norm), -math.inf, x[n_source:]
            )
        rhs = _source_rhs(curvature, vector, n_source, positive, np)
        solved = _cho_solve(factor, rhs) if rhs.shape[-1] else rhs
        x = _assemble(curvature, vector, regularization, solved, positive, backend, np)
    return _score(
        weighted_data, weighted_model(x), x, regularization, log_det_a, log_det_r, norm, np
    )


def _solve_traced(
    curvature: Any,
    vector: Any,
    weighted_data: Any,
    regularization: Any,
    weighted_model: Callable[[Any], Any],
    positive: str | None,
    backend: str,
    block: Any,
    norm: Any,
    log_det_regularization: Any,
    xp: Any,
) -> InversionTerms:
    """:func:`solve_normal` under JAX: no branch on values; a matrix that is not positive
    definite gives ``-inf`` through ``where``, its factor replaced by a harmless one so that no
    NaN reaches the gradient through the branch that is not taken."""
    from twinlens.backend.jax_linalg import spd_log_det_solve

    n_source = regularization.shape[0]
    if log_det_regularization is None:
        log_det_r, _, ok = spd_log_det_solve(regularization, xp.zeros((n_source, 0)))
    else:
        log_det_r, ok = log_det_regularization, xp.bool_(True)
    rhs = _source_rhs(curvature, vector, n_source, positive, xp)
    log_det_a, solved, ok_a = spd_log_det_solve(block, rhs)
    ok = ok & ok_a
    safe_curvature = xp.where(ok, curvature, xp.eye(curvature.shape[0]))
    x = _assemble(safe_curvature, vector, regularization, solved, positive, backend, xp)
    terms = _score(
        weighted_data, weighted_model(x), x, regularization, log_det_a, log_det_r, norm, xp
    )
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


def gram(rows: Any, xp: Any, blocks: int = GRAM_BLOCKS) -> Any:
    """``rows @ rows.T`` from the blocks on and above the diagonal only, each below it the
    transpose of its mirror: ``(blocks + 1) / (2 blocks)`` of the products (a BLAS product does
    not know its result is symmetric). Used for ``F`` under JAX, where it is the largest cost
    of a rectangular source (W7's 1,600 x 7,860 columns: 8 blocks ran faster than 4, and 4
    faster than one product)."""
    n = rows.shape[0]
    if blocks < 2 or n < 2 * GRAM_MIN_BLOCK:
        return rows @ rows.T
    edges = [round(i * n / blocks) for i in range(blocks + 1)]
    parts = [rows[a:b] for a, b in itertools.pairwise(edges)]
    upper = {(i, j): parts[i] @ parts[j].T for i in range(blocks) for j in range(i, blocks)}
    return xp.block(
        [[upper[i, j] if i <= j else upper[j, i].T for j in range(blocks)] for i in range(blocks)]
    )


def _cho_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    from scipy.linalg import cho_solve

    return cho_solve((factor, True), rhs, check_finite=False)


def _source_rhs(curvature: Any, vector: Any, n_source: int, positive: str | None, xp: Any) -> Any:
    """What the source block ``A_ss`` is solved against: ``D_s``, and with linear light
    profiles also ``A_sa`` (their columns eliminated); nothing (``k = 0``) when every unknown
    is constrained to be non-negative, which the NNLS solver handles whole."""
    if positive is not None:
        return xp.zeros((n_source, 0))
    if curvature.shape[0] == n_source:
        return vector
    cross = curvature[:n_source, n_source:]  # A_sa (unregularised)
    return xp.concatenate([vector[:n_source, None], cross], axis=1)


def _assemble(
    curvature: Any,
    vector: Any,
    regularization: Any,
    solved: Any,
    positive: str | None,
    backend: str,
    xp: Any,
) -> Any:
    """``x = (s, a)``, given ``A_ss^-1`` applied to :func:`_source_rhs`."""
    from twinlens.inversion.nnls import nnls_gram

    n_source = regularization.shape[0]
    n_linear = curvature.shape[0] - n_source
    if positive is not None:
        # every unknown >= 0: NNLS on the whole system. The solver's answer is held constant
        # under JAX differentiation: it minimises chi^2 + s^T R s, whose derivative with
        # respect to x vanishes or x sits on a bound
        system = curvature + xp.pad(regularization, ((0, n_linear), (0, n_linear)))
        return nnls_gram(system, vector, positive)
    if not n_linear:
        return solved
    # the intensities on the Schur complement of the source block, non-negative:
    # S = A_aa - A_as A_ss^-1 A_sa, g = D_a - A_as A_ss^-1 D_s, a = NNLS(S, g), then
    # s = A_ss^-1 (D_s - A_sa a). Near-collinear or empty lens-light columns make S singular,
    # which the active-set solver tolerates (it never adds a column that cannot lower chi^2)
    cross = curvature[:n_source, n_source:]
    y, y_cross = solved[:, 0], solved[:, 1:]
    schur = curvature[n_source:, n_source:] - cross.T @ y_cross
    schur = 0.5 * (schur + schur.T)
    rhs = vector[n_source:] - cross.T @ y
    # as for positivity, a is held constant under JAX differentiation: s follows it exactly
    a = nnls_gram(schur, rhs, backend)
    return xp.concatenate([y - y_cross @ a, a])


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

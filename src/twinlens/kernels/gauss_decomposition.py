"""Multi-Gaussian decomposition of radial profiles (amplitudes and dispersions of concentric
Gaussians), for building mass profiles as sums of elliptical Gaussians.

Convention
----------
A 2D profile (a convergence) is approximated as

    kappa(R) ~ sum_j A_j exp(-R^2 / (2 sigma_j^2)),

``A_j`` being the **peak value** (the value at ``R = 0``) of Gaussian ``j``, dimensionless like
``kappa``; its mass is ``2 pi A_j sigma_j^2``. These are the ``(sigmas, kappas)`` of
:mod:`twinlens.kernels.mge`. A 3D density ``rho(r) ~ sum_j a_j exp(-r^2 / (2 sigma_j^2))`` is
decomposed in 3D, and its Gaussians are projected exactly: the 2D amplitude of a 3D Gaussian is
``A_j = sqrt(2 pi) sigma_j a_j`` with the same ``sigma_j``; the 3D functions return those 2D
amplitudes.

The dispersions are log-spaced, ``sigma_j = scale * exp(h k_j)`` with consecutive integers
``k_j`` chosen so that ``sigma_j`` runs over ``sigma_range`` (in units of ``scale``, shifted by
less than half a step so that ``scale`` itself is a node) with ``h = log(hi / lo) /
(n_sigma - 1)``.

Method: projection in log radius, through the Mellin transform
--------------------------------------------------------------
With ``v = log sigma`` and ``w = log R``, a continuous superposition of Gaussians is a
convolution, ``f(e^w) = int a(v) K(w - v) dv`` with ``K(u) = exp(-e^(2u) / 2)``. On the line
``z = lam - i omega`` the Mellin transforms factor, ``M[f](z) = a_hat(omega) M[K](z)``, with
``M[K](z) = 2^(z/2 - 1) Gamma(z/2)``; ``M[f]`` is known in closed form for the profiles of
:mod:`twinlens.kernels.radial`. Instead of sampling the density ``a`` (Shajib 2019 inverts
the transform numerically, by the Euler method of Abate & Whitt 2006, and samples it), the
amplitudes are the **least-squares projection** of the weighted profile ``R^lam f(R)`` onto the
shifted Gaussians, in ``L2(d log R)`` on the infinite lattice of nodes. In Fourier space that
projection is diagonal: with ``omega_m = omega + 2 pi m / h``::

    D(omega) = sum_m a_hat(omega_m) |M[K](lam - i omega_m)|^2 e^(2 pi i m v_0 / h)
               / sum_m |M[K](lam - i omega_m)|^2,

a weighted mean of ``a_hat`` over the aliases (bounded by ``max |a_hat|``: no cancellation, no
ill-conditioning), and ``A_j = e^(-lam v_j) (h / 2 pi) int_{-pi/h}^{pi/h} D(omega)
e^(i omega v_j) d omega``. The integrand is smooth and periodic, so the midpoint rule on
``n_quad`` points converges geometrically; ``|m| <= n_alias``.

Properties that follow:

* float64 suffices: the amplitudes agree with a 40-digit mpmath evaluation of the same
  definition to ``1e-13`` or better in each Gaussian's peak deflection ``|dA_j| sigma_j``
  relative to the largest ``|A_k| sigma_k`` (and to ``2e-12`` of the largest amplitude), on the
  concrete and the traced path alike. Shajib's Euler sum alternates in sign and loses ``~M/3``
  digits (see :func:`euler_density`).
* A Gaussian whose ``sigma`` is a node is reproduced exactly (one nonzero amplitude): the
  Sersic ``n = 1/2`` profile is a Gaussian with ``sigma = R_eff / sqrt(2 b_n)``, which is the
  Sersic grid's ``scale``; sampling a density cannot do this (it is a delta function).
* Gaussians beyond the grid are not lost: the lattice sums below the first node and above the
  last one are geometric series in Fourier space, summed in closed form and added to the end
  Gaussians, conserving the mass (below; those act as point masses at ``R >> sigma``) and the
  central value (above; those act as a constant sheet at ``R << sigma``).

Accuracy (measured by ``tests/test_gauss_decomposition.py``; see ``docs/decomposition.rst``):
with the defaults, the deflections of the spherical profiles are within ``1e-6`` relative of
direct quadrature over ``0.01 - 20`` scale radii.

Concrete and traced parameters
------------------------------
When every parameter is concrete (Python or numpy numbers, non-traced JAX arrays) the
computation runs in numpy and scipy; otherwise (a JAX tracer under ``jit``, ``grad``, ``vmap``)
it runs in ``jax.numpy``, with the complex log-gamma of
:func:`twinlens.kernels.radial.loggamma_stirling` and the Newton ``b_n`` of
:func:`twinlens.kernels.radial.sersic_b`. Nothing branches on a traced value; the grid size and
the quadrature sizes are static.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from twinlens.backend import jax_runtime
from twinlens.backend.concrete import any_jax, is_batched, is_concrete
from twinlens.kernels import radial
from twinlens.messages import shown

ArrayLike = Any

#: Defaults for the Sersic convergence; ``sigma_range`` in units of ``R_eff / sqrt(2 b_n)``.
SERSIC_DEFAULTS: dict[str, Any] = {"n_sigma": 48, "sigma_range": (3e-3, 1e3)}
#: Defaults for the gNFW and cored NFW densities; ``sigma_range`` in units of ``r_s``.
NFW_DEFAULTS: dict[str, Any] = {"n_sigma": 45, "sigma_range": (1e-3, 1e3)}
#: Midpoint-rule points in ``omega`` over one period, and aliases summed on each side.
N_QUAD = 1024
N_ALIAS = 3

_LOG2 = math.log(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


# --- the grid ------------------------------------------------------------------------------


def grid_indices(n_sigma: int, sigma_range: tuple[float, float]) -> tuple[float, int]:
    """Log step ``h`` and first index ``k_0`` of the grid ``sigma_j = scale exp(h (k_0 + j))``.

    Parameters
    ----------
    n_sigma : int
        Number of Gaussians, ``>= 2``.
    sigma_range : (float, float)
        ``(lo, hi)``, the smallest and largest ``sigma`` in units of ``scale``,
        ``0 < lo < 1 < hi``; the grid is shifted by less than ``h / 2`` so that ``scale`` is a
        node.

    Returns
    -------
    (float, int)
        ``h = log(hi / lo) / (n_sigma - 1)`` and ``k_0 = round(log(lo) / h)``.
    """
    lo, hi = (float(s) for s in sigma_range)
    if int(n_sigma) != n_sigma or n_sigma < 2:
        raise ValueError(f"n_sigma must be an integer >= 2, got {shown(n_sigma)}")
    if not 0.0 < lo < 1.0 < hi:
        raise ValueError(f"sigma_range must satisfy 0 < lo < 1 < hi, got {shown(sigma_range)}")
    h = math.log(hi / lo) / (int(n_sigma) - 1)
    return h, round(math.log(lo) / h)


def sigma_grid(scale: ArrayLike, n_sigma: int, sigma_range: tuple[float, float]) -> ArrayLike:
    """The dispersions ``sigma_j = scale exp(h (k_0 + j))``, ``j = 0 .. n_sigma - 1``, in the
    unit of ``scale`` (see :func:`grid_indices`)."""
    h, k0 = grid_indices(n_sigma, sigma_range)
    xp = radial.xp_for(scale)
    return scale * xp.exp(h * (k0 + np.arange(int(n_sigma))))


# --- the projection --------------------------------------------------------------------------


def gaussian_log_mellin(z: ArrayLike) -> ArrayLike:
    """``log M[K](z) = (z/2 - 1) log 2 + log Gamma(z/2)`` for ``K(r) = exp(-r^2/2)``,
    ``Re z > 0`` (up to ``2 pi i`` multiples)."""
    return (0.5 * z - 1.0) * _LOG2 + radial.loggamma(0.5 * z)


@functools.lru_cache(maxsize=64)
def _phase_table(k0: int, n_sigma: int, n_quad: int) -> np.ndarray:
    """``e^(i omega_q h k)`` for the grid's ``k = k0 .. k0 + n_sigma - 1`` and the ``n_quad``
    midpoints, as ``exp(i pi (k (2q + 1) mod 2Q) / Q) (-1)^k`` from exact integers. It depends
    on integers only, and took a third of a decomposition's time: computed once per grid."""
    q = np.arange(n_quad)
    k = k0 + np.arange(n_sigma)
    turns = np.mod(k[:, None] * (2 * q[None, :] + 1), 2 * n_quad)
    table = np.exp(1j * np.pi * turns / n_quad) * np.where(k % 2 == 0, 1.0, -1.0)[:, None]
    table.setflags(write=False)
    return table


def _projection(
    mellin: Callable[[ArrayLike], ArrayLike],
    lam: ArrayLike,
    log_scale: ArrayLike,
    h: float,
    k0: int,
    n_sigma: int,
    dim: int,
    n_quad: int,
    n_alias: int,
    xp: Any,
) -> ArrayLike:
    """Amplitudes of ``f(r) ~ sum_j A_j exp(-r^2 / (2 sigma_j^2))`` (``dim``-D Gaussians, not
    projected) on ``v_j = log_scale + h (k0 + j)``; see the module docstring."""
    q = np.arange(n_quad)
    omega = (np.pi / h) * (-1.0 + (2.0 * q + 1.0) / n_quad)  # midpoints of one period
    m = np.arange(-n_alias, n_alias + 1)[:, None]
    z = lam - 1j * (omega[None, :] + (2.0 * np.pi / h) * m)
    log_k = gaussian_log_mellin(z)
    a_hat = mellin(z) * xp.exp(-log_k)
    weight = xp.exp(2.0 * xp.real(log_k - log_k[n_alias]))  # |M[K]|^2 relative to m = 0
    phase = xp.exp((2j * np.pi / h) * m * log_scale)
    d = xp.sum(a_hat * weight * phase, axis=0) / xp.sum(weight, axis=0)
    d = d * xp.exp(1j * omega * log_scale)  # D(omega) e^(i omega log_scale)

    k = k0 + np.arange(n_sigma)
    table = _phase_table(k0, n_sigma, n_quad)
    # Lattice sums beyond the grid, moved onto the end nodes: mass (moment sigma^dim) below,
    # central value (moment sigma^(dim - 2), the 2D amplitude) above.
    lump_lo = 1.0 / xp.expm1((dim - lam + 1j * omega) * h)
    lump_hi = 1.0 / xp.expm1((lam - (dim - 2) - 1j * omega) * h)
    first = (np.arange(n_sigma) == 0)[:, None]
    last = (np.arange(n_sigma) == n_sigma - 1)[:, None]
    kernel = table * (1.0 + first * lump_lo[None, :] + last * lump_hi[None, :])
    b = xp.real(xp.sum(kernel * d[None, :], axis=1)) / n_quad
    v = log_scale + h * k
    return xp.exp(-lam * v) * b


def _all_concrete(values: Sequence[Any]) -> bool:
    return all(is_concrete(x) for x in values)


def _run(
    mellin: Callable[..., ArrayLike],
    params: Sequence[ArrayLike],
    scale_fn: Callable[..., ArrayLike],
    lam_fn: Callable[..., ArrayLike],
    dim: int,
    n_sigma: int,
    sigma_range: tuple[float, float],
    n_quad: int,
    n_alias: int,
) -> tuple[ArrayLike, ArrayLike]:
    h, k0 = grid_indices(n_sigma, sigma_range)
    if int(n_quad) < 2 * int(n_sigma) or int(n_alias) < 0:
        raise ValueError("need n_quad >= 2 n_sigma and n_alias >= 0")
    n_sigma, n_quad, n_alias = int(n_sigma), int(n_quad), int(n_alias)
    if is_batched(*params):
        # not concrete, yet numpy: it must not reach the jax.numpy path below
        raise TypeError(
            "a decomposition takes one value per parameter, not a Batched column: decompose "
            "each batch member (as twinlens.profiles.decomposed does)"
        )
    if _all_concrete(params):
        pars = [float(np.asarray(p)) for p in params]
        xp = np
    else:
        jnp = jax_runtime.load().numpy
        pars = list(params)
        xp = jnp
    scale = scale_fn(*pars)
    lam = lam_fn(*pars)
    log_scale = xp.log(scale)
    amps = _projection(
        lambda z: mellin(z, *pars), lam, log_scale, h, k0, n_sigma, dim, n_quad, n_alias, xp
    )
    sigmas = scale * xp.exp(h * (k0 + np.arange(n_sigma)))
    if dim == 3:
        amps = _SQRT_2PI * sigmas * amps
    if xp is np and any_jax(*params):
        jnp = jax_runtime.load().numpy
        return jnp.asarray(amps), jnp.asarray(sigmas)
    return amps, sigmas


def decompose(
    mellin: Callable[..., ArrayLike],
    params: Sequence[ArrayLike],
    scale: Callable[..., ArrayLike],
    abscissa: float | Callable[..., ArrayLike] = 1.0,
    *,
    n_sigma: int = SERSIC_DEFAULTS["n_sigma"],
    sigma_range: tuple[float, float] = SERSIC_DEFAULTS["sigma_range"],
    n_quad: int = N_QUAD,
    n_alias: int = N_ALIAS,
) -> tuple[ArrayLike, ArrayLike]:
    """Decompose a 2D radial profile (a convergence) into concentric round Gaussians.

    Parameters
    ----------
    mellin : callable
        ``mellin(z, *params)``, the profile's Mellin transform ``int_0^inf R^(z-1) f(R) dR``
        on complex arrays ``z`` (numpy or JAX, following its inputs), e.g.
        :func:`twinlens.kernels.radial.sersic_mellin`.
    params : sequence
        The profile's parameters, floats or JAX scalars (tracers allowed).
    scale : callable
        ``scale(*params)``: the grid's scale radius (a node of the grid), unit of length.
    abscissa : float or callable
        ``lam`` (or ``lam(*params)``): the Mellin line ``Re z = lam``, which is also the weight
        ``R^lam`` of the least-squares fit. Needs ``0 < lam < 2`` (the lattice sums beyond the
        grid converge) and ``lam`` in the strip where ``int a(v) e^(lam v) dv`` converges.
    n_sigma : int
        Number of Gaussians (static).
    sigma_range : (float, float)
        ``(lo, hi)``, smallest and largest ``sigma`` in units of ``scale`` (static).
    n_quad, n_alias : int
        Quadrature points in one period of ``omega``, and aliases on each side (static).

    Returns
    -------
    (amplitudes, sigmas) : arrays of shape ``(n_sigma,)``
        Peak values (unit of ``f``) and dispersions (unit of ``scale``), with
        ``f(R) ~ sum_j amplitudes[j] exp(-R^2 / (2 sigmas[j]^2))``.
    """
    lam_fn = abscissa if callable(abscissa) else (lambda *_: abscissa)
    scale_fn = scale if callable(scale) else (lambda *_: scale)
    return _run(mellin, params, scale_fn, lam_fn, 2, n_sigma, sigma_range, n_quad, n_alias)


def decompose_3d(
    mellin: Callable[..., ArrayLike],
    params: Sequence[ArrayLike],
    scale: Callable[..., ArrayLike],
    abscissa: float | Callable[..., ArrayLike] = 2.0,
    *,
    n_sigma: int = NFW_DEFAULTS["n_sigma"],
    sigma_range: tuple[float, float] = NFW_DEFAULTS["sigma_range"],
    n_quad: int = N_QUAD,
    n_alias: int = N_ALIAS,
) -> tuple[ArrayLike, ArrayLike]:
    """Decompose a 3D radial density into 3D Gaussians and return their exact projections.

    As :func:`decompose`, with ``mellin`` the transform ``int_0^inf r^(z-1) rho(r) dr`` of the
    density and ``1 < abscissa < 3``. The fit is made in 3D
    (``rho(r) ~ sum_j a_j exp(-r^2 / (2 sigma_j^2))``) and the returned amplitudes are the 2D
    peak values ``sqrt(2 pi) sigma_j a_j`` of the projected Gaussians, so that the projected
    density is ``sum_j amplitudes[j] exp(-R^2 / (2 sigmas[j]^2))`` (unit: ``rho`` times length;
    a convergence when ``rho`` is in units of ``Sigma_crit`` per length).
    """
    lam_fn = abscissa if callable(abscissa) else (lambda *_: abscissa)
    scale_fn = scale if callable(scale) else (lambda *_: scale)
    return _run(mellin, params, scale_fn, lam_fn, 3, n_sigma, sigma_range, n_quad, n_alias)


# --- the three profiles ---------------------------------------------------------------------


def sersic_scale(R_eff: ArrayLike, n: ArrayLike) -> ArrayLike:
    """The Sersic grid's scale ``R_eff / sqrt(2 b_n)``: the dispersion of the ``n = 1/2``
    Sersic profile, which is a single Gaussian."""
    xp = radial.xp_for(R_eff, n)
    return R_eff / xp.sqrt(2.0 * radial.sersic_b(n))


def decompose_sersic(
    k_eff: ArrayLike,
    R_eff: ArrayLike,
    n: ArrayLike,
    *,
    n_sigma: int = SERSIC_DEFAULTS["n_sigma"],
    sigma_range: tuple[float, float] = SERSIC_DEFAULTS["sigma_range"],
    n_quad: int = N_QUAD,
    n_alias: int = N_ALIAS,
) -> tuple[ArrayLike, ArrayLike]:
    """Gaussian decomposition of the Sersic convergence
    (:func:`twinlens.kernels.radial.sersic_convergence`).

    ``sigma_range`` is in units of ``R_eff / sqrt(2 b_n)`` (:func:`sersic_scale`), which is a
    node, so ``n = 1/2`` comes out as one Gaussian, exactly. Weight ``R^1`` (``lam = 1``).

    Parameters
    ----------
    k_eff : float
        Convergence at ``R_eff``, dimensionless.
    R_eff : float
        Half-mass radius, ``> 0`` (arcsec).
    n : float
        Sersic index, ``0.5 <= n`` (accuracy documented for ``n <= 8``).
    n_sigma, sigma_range, n_quad, n_alias
        As in :func:`decompose`. The defaults (48 Gaussians over ``(3e-3, 1e3)``) give
        deflections within ``1e-6`` over ``0.01 - 20 R_eff`` for ``n = 1/2`` and
        ``0.85 <= n <= 10``; ``0.5 < n < 0.85`` needs 60 (``n >= 0.6``) to 80 Gaussians (see
        ``docs/decomposition.rst``).

    Returns
    -------
    (amplitudes, sigmas) : arrays of shape ``(n_sigma,)``
        Peak convergences (dimensionless) and dispersions (unit of ``R_eff``).
    """
    if is_concrete(n) and float(np.asarray(n)) < 0.5:
        raise ValueError(f"Sersic index n must be >= 0.5 (a sum of positive Gaussians), got {n}")
    if is_concrete(R_eff) and not float(np.asarray(R_eff)) > 0.0:
        raise ValueError(f"R_eff must be > 0, got {R_eff}")
    return _run(
        radial.sersic_mellin,
        (k_eff, R_eff, n),
        lambda k, r, n_: sersic_scale(r, n_),
        lambda *_: 1.0,
        2,
        n_sigma,
        sigma_range,
        n_quad,
        n_alias,
    )


def _halo(
    mellin: Callable[..., ArrayLike],
    params: tuple[ArrayLike, ArrayLike, ArrayLike],
    lam_fn: Callable[..., ArrayLike],
    grid: tuple[int, tuple[float, float], int, int],
) -> tuple[ArrayLike, ArrayLike]:
    # A halo's 3D density of params (rho_s, r_s, shape), decomposed on a grid in units of r_s
    # (checked > 0 here, after the caller's check of the shape parameter) and projected; grid
    # is (n_sigma, sigma_range, n_quad, n_alias).
    r_s = params[1]
    if is_concrete(r_s) and not float(np.asarray(r_s)) > 0.0:
        raise ValueError(f"r_s must be > 0, got {r_s}")
    return _run(mellin, params, lambda rho, r, shape: r, lam_fn, 3, *grid)


def gnfw_abscissa(gamma: ArrayLike) -> ArrayLike:
    """Mellin line for the gNFW density: ``(max(gamma, 1) + 3) / 2``, the middle of the strip
    ``max(gamma, 1) < lam < 3`` where the density's transform and the lattice sums converge."""
    xp = radial.xp_for(gamma)
    return 0.5 * (xp.maximum(gamma, 1.0) + 3.0)


def decompose_gnfw(
    rho_s: ArrayLike,
    r_s: ArrayLike,
    gamma: ArrayLike,
    *,
    n_sigma: int = NFW_DEFAULTS["n_sigma"],
    sigma_range: tuple[float, float] = NFW_DEFAULTS["sigma_range"],
    n_quad: int = N_QUAD,
    n_alias: int = N_ALIAS,
) -> tuple[ArrayLike, ArrayLike]:
    """Gaussian decomposition of the generalised NFW density
    (:func:`twinlens.kernels.radial.gnfw_density`), returned as projected 2D Gaussians.

    Parameters
    ----------
    rho_s : float
        Density normalisation (``1 / length`` when in units of ``Sigma_crit``).
    r_s : float
        Scale radius, ``> 0``; ``sigma_range`` is in units of ``r_s``.
    gamma : float
        Inner slope, ``0 <= gamma < 3`` (accuracy measured up to ``gamma = 2.8``; closer to 3
        the lattice sums converge slowly and ``n_quad`` must grow like ``1 / (3 - gamma)``).
    n_sigma, sigma_range, n_quad, n_alias
        As in :func:`decompose`. The defaults (45 Gaussians over ``(1e-3, 1e3) r_s``) give
        deflections within ``1e-6`` over ``0.01 - 20 r_s``.

    Returns
    -------
    (amplitudes, sigmas) : arrays of shape ``(n_sigma,)``
        Peak values of the projected Gaussians (``rho_s`` times length; a convergence) and
        dispersions (unit of ``r_s``).
    """
    if is_concrete(gamma) and not 0.0 <= float(np.asarray(gamma)) < 3.0:
        raise ValueError(f"gNFW inner slope gamma must be in [0, 3), got {gamma}")
    grid = (n_sigma, sigma_range, n_quad, n_alias)
    return _halo(radial.gnfw_mellin, (rho_s, r_s, gamma), lambda rho, r, g: gnfw_abscissa(g), grid)


#: Mellin line for the cored NFW density (strip ``0 < lam < 3``, ``1 < lam`` for the lattice
#: sums and for ``r_c -> 0``; not an integer, where ``pi / sin(pi z)`` has removable poles).
CORED_NFW_ABSCISSA = 1.5


def decompose_cored_nfw(
    rho_s: ArrayLike,
    r_s: ArrayLike,
    r_c: ArrayLike,
    *,
    n_sigma: int = NFW_DEFAULTS["n_sigma"],
    sigma_range: tuple[float, float] = NFW_DEFAULTS["sigma_range"],
    n_quad: int = N_QUAD,
    n_alias: int = N_ALIAS,
) -> tuple[ArrayLike, ArrayLike]:
    """Gaussian decomposition of the cored NFW density
    (:func:`twinlens.kernels.radial.cored_nfw_density`), returned as projected 2D Gaussians.

    Parameters as in :func:`decompose_gnfw`, with ``r_c > 0`` the core radius in place of the
    slope. The defaults give deflections within ``1e-6`` over ``0.01 - 20 r_s`` for
    ``1e-3 <= r_c / r_s <= 10`` (measured).
    """
    if is_concrete(r_c) and not float(np.asarray(r_c)) > 0.0:
        raise ValueError(f"core radius r_c must be > 0, got {r_c}")
    grid = (n_sigma, sigma_range, n_quad, n_alias)
    return _halo(radial.cored_nfw_mellin, (rho_s, r_s, r_c), lambda *_: CORED_NFW_ABSCISSA, grid)


# --- the Euler inversion of Shajib (2019), for comparison ----------------------------------


def euler_weights(terms: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``beta_k`` and weights ``eta_k`` (``k = 0 .. 2 terms``) of the Euler algorithm of
    Abate & Whitt (2006): ``g(t) ~ (1/t) sum_k eta_k Re F(beta_k / t)`` for ``F = L[g]``.

    ``beta_k = terms log(10) / 3 + i pi k``, ``eta_k = 10^(terms/3) (-1)^k xi_k`` with
    ``xi_0 = 1/2``, ``xi_k = 1`` for ``1 <= k <= terms``, ``xi_2terms = 2^-terms`` and
    ``xi_(2 terms - k) = xi_(2 terms - k + 1) + 2^-terms C(terms, k)``. The ``xi_k`` are exact
    rationals (``fractions.Fraction``) rounded once to float64.
    """
    m = int(terms)
    xi = [Fraction(0)] * (2 * m + 1)
    xi[0] = Fraction(1, 2)
    for k in range(1, m + 1):
        xi[k] = Fraction(1)
    xi[2 * m] = Fraction(1, 2**m)
    for k in range(1, m):
        xi[2 * m - k] = xi[2 * m - k + 1] + Fraction(math.comb(m, k), 2**m)
    scale = 10.0 ** (m / 3.0)
    eta = np.array([scale * (-1) ** k * float(x) for k, x in enumerate(xi)])
    beta = m * math.log(10.0) / 3.0 + 1j * np.pi * np.arange(2 * m + 1)
    return beta, eta


def euler_density(
    profile: Callable[[ArrayLike], ArrayLike], sigmas: ArrayLike, terms: int = 15
) -> ArrayLike:
    """Amplitude density per ``log sigma`` by Shajib's (2019) Euler inversion, in float64.

    For ``f(r) = int a(v) exp(-r^2 e^(-2v) / 2) dv`` (``v = log sigma``),
    ``a(sigma) = 2 sum_k eta_k Re f(sigma sqrt(2 beta_k))`` with :func:`euler_weights`. The
    terms alternate in sign and reach ``~10^(terms/3) max |f|``, so float64 loses about
    ``terms/3`` digits to cancellation, while the discretisation error of the method falls like
    ``10^(-0.6 terms)`` or so (profile dependent). Kept as the reference against which the
    projection of :func:`decompose` is measured; a Gaussian (Sersic ``n = 1/2``) has no density
    and this sum does not converge for it.

    Parameters
    ----------
    profile : callable
        ``profile(r)`` on complex arrays (the analytic continuation, ``Re r > 0``), e.g.
        ``lambda r: radial.sersic_convergence(r, 1.0, 1.0, 4.0)``.
    sigmas : array_like
        Dispersions, real ``> 0``.
    terms : int
        The Euler parameter ``M`` (``2 M + 1`` evaluations per ``sigma``).

    Returns
    -------
    array
        ``a(sigma)``, the unit of ``profile``, shape of ``sigmas``.
    """
    beta, eta = euler_weights(terms)
    xp = radial.xp_for(sigmas)
    s = xp.asarray(sigmas)
    vals = profile(s[..., None] * np.sqrt(2.0 * beta))
    return 2.0 * xp.sum(eta * xp.real(vals), axis=-1)


def decompose_euler(
    profile: Callable[[ArrayLike], ArrayLike],
    scale: ArrayLike,
    *,
    dim: int = 2,
    n_sigma: int = 48,
    sigma_range: tuple[float, float] = (3e-3, 1e3),
    terms: int = 15,
) -> tuple[ArrayLike, ArrayLike]:
    """Shajib's (2019) decomposition: the Euler density sampled on the grid of
    :func:`sigma_grid`, with trapezoid weights in ``log sigma`` (half weight at both ends).

    ``dim = 3`` treats ``profile`` as a density and returns projected 2D amplitudes. For
    comparison with :func:`decompose`; see ``docs/decomposition.rst`` for the accuracies.
    """
    h, _ = grid_indices(n_sigma, sigma_range)
    sigmas = sigma_grid(scale, n_sigma, sigma_range)
    xp = radial.xp_for(sigmas)
    w = np.full(int(n_sigma), h)
    w[0] = w[-1] = 0.5 * h
    amps = w * euler_density(profile, sigmas, terms)
    if dim == 3:
        amps = _SQRT_2PI * sigmas * amps
    return xp.asarray(amps), sigmas

"""Elliptical power-law (EPL) convergence: the math, as plain functions of one point.

Convention (lenstronomy's ``EPL``): in the profile frame, whose x' axis is the major axis,

    kappa = (3 - gamma) / 2 * (theta_E / sqrt(q x'^2 + y'^2 / q))^(gamma - 1),

with ``gamma`` the 3D logarithmic slope (``slope``, 2 is isothermal) and ``theta_E`` (the
argument ``einstein_radius``) the intermediate-axis Einstein radius: the mass inside the
ellipse ``q x'^2 + y'^2 / q = theta_E^2`` is ``pi theta_E^2`` whatever ``q``. The math holds
for ``1 < gamma < 3``; the accuracy stated below, the kernels' domains and the tests cover
``1.2 <= gamma <= 2.8``.

Deflections (Tessore & Metcalf 2015, A&A 580, A79). With ``t = gamma - 1``, their elliptical
coordinates ``R e^{i phi} = q x' + i y'``, ``b = theta_E sqrt(q)`` and ``f = (1 - q) / (1 + q)``,

    alpha' = 2 b / (1 + q) (b / R)^(t - 1) e^{i phi} 2F1(1, t/2; 2 - t/2; -f e^{2 i phi}).

Written in the sky frame with the complex position ``w = dx + i dy`` and the complex
ellipticity ``e = e1 + i e2`` (``f = |e|``; ``phi_0`` the position angle), using
``q x' + i y' = e^{-i phi_0} (w - e w*) / (1 + |e|)`` and
``sqrt(q) / (1 + q) = sqrt(1 - |e|^2) / 2``, every ``|e|`` cancels:

    V = w - e w*,   A = (theta_E^2 (1 - |e|^2) / |V|^2)^(t/2),   Z = -e* V / V*,
    alpha = A V F(Z),   F(Z) = 2F1(1, t/2; 2 - t/2; Z) = sum_n c_n Z^n,
    c_0 = 1,  c_n = c_{n-1} (2n - 2 + t) / (2n + 2 - t).

(``|V|^2 / (1 - |e|^2) = q x'^2 + y'^2 / q``, so ``A = 2 kappa / (2 - t)``.) This form is a
polynomial in ``(e1, e2)`` inside a power and a convergent series, with no axis ratio, angle or
``|e|`` in it: it is smooth at ``e = (0, 0)``, where it reduces to the round closed form
``alpha = theta_E^t r^(1 - t) w / r``, so JAX gradients with respect to ``(e1, e2)`` are exact
there without a separate near-round branch. ``|Z| = |e|`` at every point, and
``0 < c_n <= 1`` for ``t < 2``, so the tail after ``N`` terms is below ``|e|^N / (1 - |e|)``;
``|F| >= 0.59`` on ``|Z| <= 0.9`` for ``t`` in ``[0.2, 1.8]`` (checked against mpmath), so
that bound is also a relative one.

The deflection is homogeneous of degree ``1 - t`` in ``w``. Euler's relation for it,
``w d alpha/dw + w* d alpha/dw* = (1 - t) alpha`` with ``kappa = d alpha/dw`` and the complex
shear ``gamma_1 + i gamma_2 = d alpha/dw*``, gives the shear in closed form (TM15):

    gamma_1 + i gamma_2 = ((1 - t) alpha - w kappa) / w*,

and, the potential being homogeneous of degree ``2 - t``, ``psi = (dx alpha_x + dy alpha_y) /
(2 - t)``, zero at the centre.

**Series length.** ``|Z| = |e|`` at every point, so the size of term ``n``, ``c_n |e|^n``, is
the same at every point and the adaptive stop ("the term is below ``SERIES_RTOL`` = 1e-17 of
the sum") is decided once per call by :func:`series_length` (18 terms at ``q = 0.8``, about 200
at ``q = 0.1``); the coefficients then enter the per-point functions (``*_series``, one source
for every backend) as an array, summed by Horner's rule in two interleaved chains. On JAX the
length must be static: a concrete ellipticity sets it before tracing (rounded up to a few
buckets, so that few programs are compiled; with a traced slope, the length that holds for
every slope, ``|e|^n`` bounding term ``n``); a traced one sums ``N_TRACED`` (256) terms, enough
for 1e-16 down to ``q = 0.075``; below that a traced ellipticity loses accuracy quickly (the
neglected tail is below ``c_256 |e|^256 / (1 - |e|)`` relative, ``c_256 <= 1``). Measured
against the adaptive series (the largest relative error over slopes 1.2 - 2.8 and seven
points): 2e-14 at ``q = 0.06``, 3e-12 at 0.05, 1e-7 at 0.03, 4e-3 at 0.01, 0.5 at 1e-3.
Hence ``TRACED_Q_MIN`` = 0.06, where the tail bound is below 7e-13 for every slope in (1, 3):
:class:`~twinlens.mass.PowerLaw` refuses flatter ellipticities (an error when they are
concrete, ``-inf`` in a search), so that a search gives the same answers on every backend.
More traced terms would lengthen the longest sum, a scan, that the flattest lenses run. The
JAX kernels' derivatives are series summed forward in closed form, not reverse mode through
the summing loop (:mod:`twinlens.kernels.power_law_series`).

**At the exact centre** (``dx = dy = 0``), where the convergence diverges for every slope and
the deflection for ``slope > 2`` (it tends to 0 for ``slope < 2`` and is direction-dependent at
``slope = 2``), every quantity is returned as 0: a finite value (the direction average of the
deflection). The deflection has no derivative there (it grows like ``r^-t`` for ``slope < 2``,
jumps for ``slope = 2`` and diverges for ``slope > 2``): the kernels compute from offsets held
constant at the exact centre (:func:`~twinlens.kernels.geometry.held_at_centre`), so the JAX
derivatives of every quantity with respect to the position, the centre and the other
parameters are 0 there (those of the value returned, held fixed), finite and documented.
"""

from __future__ import annotations

import math
from functools import cache, partial
from typing import Any

import numpy as np

from twinlens.backend import jax_runtime
from twinlens.backend.concrete import any_jax, is_concrete
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.geometry import held_at_centre
from twinlens.kernels.ops import make_op, pointwise, where
from twinlens.kernels.power_law_blocked import (
    blocked_deflections_loop,
    blocked_deflections_rows_loop,
    rows_impl,
    series_rows_loop,
)
from twinlens.kernels.power_law_series import SeriesOfSlope, horner
from twinlens.kernels.registry import Kernel, KernelFamily
from twinlens.kernels.tolerance import Tolerance

#: the series stops at the first term whose size (the same at every point) is below this
#: fraction of the smallest possible sum (|F| >= 0.59 > 1/2)
SERIES_RTOL = 1e-17
_STOP = 0.5 * SERIES_RTOL
#: terms the JAX kernels sum when the ellipticity is traced (1e-16 down to q = 0.075)
N_TRACED = 256
#: the smallest axis ratio :class:`~twinlens.mass.PowerLaw` accepts: a traced ellipticity's
#: ``N_TRACED`` terms hold 1e-12 down to it (tail bound 7e-13, measured 2e-14; module notes)
TRACED_Q_MIN = 0.06
#: safety cap on the series length (reached only for q below about 1e-4)
_N_CAP = 1_000_000


# ------------------------------------------------------------------------------------------
# the hypergeometric series F(Z) = 2F1(1, t/2; 2 - t/2; Z), |Z| < 1


def series_length(e1: Any, e2: Any, slope: Any, bucket: bool = False) -> int:
    """The number of terms of ``F(Z)`` to sum for ellipticity ``(e1, e2)`` and ``slope``.

    Term ``n`` has size ``c_n |e|^n`` at every point (``|Z| = |e|``), so the adaptive stop
    "the term is below ``SERIES_RTOL`` of the sum" is decided once per call, not per point:
    the series runs up to and including the first term below ``SERIES_RTOL / 2`` (``|F| >=
    0.59``). The neglected tail is below that term times ``|e| / (1 - |e|)``.

    Parameters
    ----------
    e1, e2, slope : float or JAX scalar
        Ellipticity components (``|e| < 1``) and slope (``1 < slope < 3``).
    bucket : bool
        Round up (to a multiple of 8 below 64, of 32 below 256, else to a power of two), so
        that the JAX backend compiles few distinct programs.

    Returns
    -------
    int
        Number of terms, at least 1; ``N_TRACED`` if the ellipticity is traced; for a traced
        slope, the length that holds for every slope.
    """
    if not (is_concrete(e1) and is_concrete(e2)):
        return N_TRACED
    f = math.hypot(float(e1), float(e2))
    if not f < 1.0:
        raise ValueError(f"ellipticity |e| must be < 1, got {f}")
    if f == 0.0:
        return 1
    # A traced slope (a search that fits it at a fixed ellipticity): the length must hold for
    # every slope. Each ratio c_n / c_{n-1} is below 1 for t < 2, so |e|^n bounds term n for
    # any slope in (1, 3): the bound's stop is a few terms past the slope's own (24 terms at
    # q = 0.8, where a traced ellipticity's program branches over lengths up to N_TRACED).
    # Capped at N_TRACED, whose accuracy is that of a traced ellipticity (module notes).
    traced_slope = not is_concrete(slope)
    t = 2.0 if traced_slope else float(slope) - 1.0
    size, n = 1.0, 0
    while size > _STOP and n < _N_CAP:
        n += 1
        size *= f * (2.0 * n - 2.0 + t) / (2.0 * n + 2.0 - t)
    n += 1  # terms 0..n
    if traced_slope:
        n = min(n, N_TRACED)
    if not bucket or n == 1:
        return n
    if n <= 64:
        return 8 * math.ceil(n / 8)
    if n <= 256:
        return 32 * math.ceil(n / 32)
    return 1 << (n - 1).bit_length()


def series_coefficients(e1: Any, e2: Any, slope: Any, n_terms: int | None = None) -> Any:
    """The coefficients ``c_0 .. c_{N-1}`` of ``F(Z) = sum c_n Z^n``, ``c_0 = 1``,
    ``c_n = c_{n-1} (2n - 2 + t) / (2n + 2 - t)``, ``t = slope - 1``.

    ``N`` is ``n_terms``, else :func:`series_length` (bucketed on JAX). A numpy array, or a
    JAX array when any argument is a JAX array or tracer (differentiable in ``slope``).
    """
    jax_args = any_jax(e1, e2, slope)
    n = n_terms if n_terms else series_length(e1, e2, slope, bucket=jax_args)
    xp = jax_runtime.load().numpy if jax_args else np
    k = xp.arange(1, n, dtype=xp.float64)
    t = slope - 1.0
    ratios = (2.0 * k - 2.0 + t) / (2.0 * k + 2.0 - t)
    coef = xp.concatenate([xp.ones(1), xp.cumprod(ratios)])
    if jax_args and not (is_concrete(e1) and is_concrete(e2)):
        coef = _zero_the_tail(coef, e1, e2)
    return coef


def series_coefficient_rows(e1: Any, e2: Any, slope: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`series_coefficients` of each member of a batch (numpy arrays ``(n_batch,)``):
    ``(coef (n_batch, N), n_terms (n_batch,))``, member ``b``'s coefficients in
    ``coef[b, :n_terms[b]]`` and zeros after. The same arithmetic, element by element, as
    :func:`series_length` and :func:`series_coefficients` member by member."""
    e1, e2, slope = np.broadcast_arrays(
        *(np.asarray(a, dtype=float).reshape(-1) for a in (e1, e2, slope))
    )
    f = np.array([math.hypot(a, b) for a, b in zip(e1.tolist(), e2.tolist(), strict=True)])
    if not np.all(f < 1.0):
        raise ValueError(f"ellipticity |e| must be < 1, got {f[~(f < 1.0)][0]}")
    t = slope - 1.0
    size, n = np.ones(f.shape), np.zeros(f.shape, dtype=np.int64)
    live = f != 0.0  # round: one term
    while live.any():
        n[live] += 1
        k = n[live].astype(float)
        size[live] *= f[live] * (2.0 * k - 2.0 + t[live]) / (2.0 * k + 2.0 - t[live])
        live &= (size > _STOP) & (n < _N_CAP)
    n_terms = np.where(f == 0.0, 1, n + 1)
    k = np.arange(1, int(n_terms.max()), dtype=np.float64)
    ratios = (2.0 * k - 2.0 + t[:, None]) / (2.0 * k + 2.0 - t[:, None])
    coef = np.concatenate([np.ones((f.size, 1)), np.cumprod(ratios, axis=1)], axis=1)
    coef[np.arange(coef.shape[1])[None, :] >= n_terms[:, None]] = 0.0
    return coef, n_terms


def _zero_the_tail(coef: Any, e1: Any, e2: Any) -> Any:
    # A traced ellipticity: the adaptive stop of series_length, applied to the values. Terms
    # after the first one below _STOP are set to 0, which the JAX Horner sum skips (no work for
    # them), so the traced program costs what the ellipticity needs, not N_TRACED terms. The
    # cut is not differentiated (it moves only where a term is below 1e-17 of the sum).
    jax = jax_runtime.load()
    jnp = jax.numpy
    f = jax.lax.stop_gradient(jnp.maximum(jnp.sqrt(e1 * e1 + e2 * e2), 1e-300))
    k = jnp.arange(coef.shape[0], dtype=jnp.float64)
    size = jax.lax.stop_gradient(coef) * jnp.exp(k * jnp.log(f))
    keep = jnp.concatenate([jnp.ones(1, dtype=bool), size[:-1] > _STOP])
    return jnp.where(jnp.cumprod(keep).astype(bool), coef, 0.0)


series = make_op(
    "series", horner, "twinlens.kernels.power_law_series.horner_jax", horner, inline=False
)
series.__doc__ = """``(Re F, Im F)`` of ``F(Z) = sum_k coef[k] Z^k`` at ``Z = zr + i zi`` (Horner).

``coef`` from :func:`series_coefficients`; its length (static on JAX) is the number of terms.
On JAX it may also be a :class:`~twinlens.kernels.power_law_series.SeriesOfSlope` (what the
registered kernels pass: derivatives in closed form, :mod:`twinlens.kernels.power_law_series`).
"""


# ------------------------------------------------------------------------------------------
# per-point math


@pointwise
def _setup(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
    # V = w - e w*, |V|^2, A = (theta_E^2 (1 - |e|^2) / |V|^2)^(t/2) and Z = -e* V^2 / |V|^2.
    # At the centre |V|^2 = 0: a stand-in of 1 keeps every expression finite, and the held
    # offsets make every derivative there 0 (not that of A V F with the stand-in's A).
    dx, dy = held_at_centre(x - centre_x, y - centre_y, 0.0)
    vr = (1.0 - e1) * dx - e2 * dy
    vi = (1.0 + e1) * dy - e2 * dx
    v2 = vr * vr + vi * vi
    inside = v2 > 0.0
    v2s = where(inside, v2, 1.0)
    t = slope - 1.0
    amp = (einstein_radius * einstein_radius * (1.0 - e1 * e1 - e2 * e2) / v2s) ** (0.5 * t)
    a = (vr * vr - vi * vi) / v2s
    b = 2.0 * vr * vi / v2s
    return dx, dy, vr, vi, inside, amp, -(e1 * a + e2 * b), e2 * a - e1 * b, t


@pointwise
def convergence(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
    """Convergence of the elliptical power law, dimensionless (0 at the exact centre).

    Parameters
    ----------
    x, y : array_like
        Positions, arcsec.
    centre_x, centre_y : float
        Centre, arcsec.
    e1, e2 : float
        Ellipticity components, ``|e| < 1``.
    einstein_radius : float
        Einstein radius (intermediate axis), arcsec, > 0.
    slope : float
        3D logarithmic slope ``gamma``, ``1 < gamma < 3`` (2: isothermal).
    """
    _, _, _, _, inside, amp, _, _, t = _setup(
        x, y, centre_x, centre_y, e1, e2, einstein_radius, slope
    )
    return where(inside, (1.0 - 0.5 * t) * amp, 0.0)


@pointwise
def deflections_series(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef):
    """Deflections ``(alpha_x, alpha_y)``, arcsec, summing the series with ``coef``
    (:func:`series_coefficients`); other arguments as for :func:`convergence`."""
    _, _, vr, vi, _, amp, zr, zi, _ = _setup(
        x, y, centre_x, centre_y, e1, e2, einstein_radius, slope
    )
    sr, si = series(zr, zi, coef)
    # alpha = A V F; V = 0 at the centre, so alpha = 0 there without a where
    return amp * (vr * sr - vi * si), amp * (vr * si + vi * sr)


@pointwise
def hessian_series(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef):
    """Hessian ``(psi_xx, psi_xy, psi_yy)``, dimensionless (0 at the exact centre), summing the
    series with ``coef``; other arguments as for :func:`convergence`."""
    dx, dy, vr, vi, inside, amp, zr, zi, t = _setup(
        x, y, centre_x, centre_y, e1, e2, einstein_radius, slope
    )
    sr, si = series(zr, zi, coef)
    # gamma = ((1 - t) alpha - w kappa) / w* = A P w / |w|^2 with
    # P = (1 - t) V F - (1 - t/2) w, and kappa = (1 - t/2) A
    h = 1.0 - 0.5 * t
    pr = (1.0 - t) * (vr * sr - vi * si) - h * dx
    pi_ = (1.0 - t) * (vr * si + vi * sr) - h * dy
    r2 = dx * dx + dy * dy
    scale = amp / where(inside, r2, 1.0)
    g1 = scale * (pr * dx - pi_ * dy)
    g2 = scale * (pr * dy + pi_ * dx)
    kappa = h * amp
    return (
        where(inside, kappa + g1, 0.0),
        where(inside, g2, 0.0),
        where(inside, kappa - g1, 0.0),
    )


@pointwise
def potential_series(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef):
    """Lensing potential, arcsec^2 (0 at the centre), summing the series with ``coef``."""
    dx, dy, vr, vi, _, amp, zr, zi, t = _setup(
        x, y, centre_x, centre_y, e1, e2, einstein_radius, slope
    )
    sr, si = series(zr, zi, coef)
    # psi = Re(w* alpha) / (2 - t), with alpha = A V F
    ax = vr * sr - vi * si
    ay = vr * si + vi * sr
    return amp * (dx * ax + dy * ay) / (2.0 - t)


def deflections(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
    """Deflections ``(alpha_x, alpha_y)`` of the elliptical power law, arcsec.

    Arguments as for :func:`convergence`; numpy or JAX arrays. The series length comes from
    :func:`series_length` (``N_TRACED`` terms for a traced ellipticity). Within 1e-15
    relative of mpmath for ``q >= 0.1`` and slopes in ``[1.2, 2.8]``.
    """
    coef = series_coefficients(e1, e2, slope)
    return deflections_series(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef)


def hessian(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` of the lensing potential, dimensionless (0 at the
    exact centre). Arguments as for :func:`convergence`."""
    coef = series_coefficients(e1, e2, slope)
    return hessian_series(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef)


def potential(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
    """Lensing potential, arcsec^2, zero at the centre. Arguments as for :func:`convergence`."""
    coef = series_coefficients(e1, e2, slope)
    return potential_series(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef)


# ------------------------------------------------------------------------------------------
# backends of the series kernels
#
# The registered kernels take the profile's parameters; the series length is decided from them
# once per call, outside the per-point loop (numba, numpy) or the traced program (JAX), and the
# coefficients enter the point functions above as an array. The per-point math stays one
# source; only this set-up differs by backend.

_SERIES_POINTS = {
    "deflections": (deflections_series, ("alpha_x", "alpha_y")),
    "hessian": (hessian_series, ("psi_xx", "psi_xy", "psi_yy")),
    "potential": (potential_series, ("psi",)),
}


def _series_kernel(quantity: str) -> Kernel:
    # The per-point function with the coefficient array as a parameter: the registry builds its
    # numba prange loop (not registered: its coef parameter is not free to draw).
    point, outputs = _SERIES_POINTS[quantity]
    return Kernel(
        name=f"power_law.{quantity}_series",
        point=point,
        inputs=(Arg("x", _XY), Arg("y", _XY)),
        params=(*_PARAMS, Arg("coef", Domain(0.0, 1.0), size=1)),
        outputs=outputs,
    )


def _loop_impl(series: Kernel, backend: str, loop=None):
    # loop: a compiled loop of the series kernel's arguments to run instead of its own
    def impl(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
        coef = series_coefficients(e1, e2, slope)
        run = loop() if loop is not None else series.implementation(backend)
        return run(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef)

    impl.__name__ = f"{series.name.replace('.', '_')}_{backend}"
    return impl


def _coefficients_of_slope(n_terms: int, slope: Any, e1: Any, e2: Any) -> Any:
    return series_coefficients(e1, e2, slope, n_terms)


@cache
def _jax_program(quantity: str, n_terms: int):
    jax = jax_runtime.load()
    jnp = jax.numpy
    point = _SERIES_POINTS[quantity][0]

    def run(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
        shape = jnp.broadcast_shapes(jnp.shape(x), jnp.shape(y))
        # the coefficients as a function of the slope: the series' derivatives in closed form
        coef = SeriesOfSlope(partial(_coefficients_of_slope, n_terms), slope, e1, e2)
        out = point(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope, coef)
        out = out if isinstance(out, tuple) else (out,)
        return tuple(jnp.broadcast_to(o, shape) for o in out)

    run.__name__ = f"power_law_{quantity}_{n_terms}_jax"
    return jax.jit(run)


def _jax_impl(quantity: str):
    # A concrete ellipticity sets the (bucketed) length before tracing: 24 terms at q = 0.8
    # where a jit of everything would trace the ellipticity and sum N_TRACED.
    def impl(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope):
        n = series_length(e1, e2, slope, bucket=True)
        return _jax_program(quantity, n)(x, y, centre_x, centre_y, e1, e2, einstein_radius, slope)

    impl.__name__ = f"power_law_{quantity}_jax"
    return impl


# ------------------------------------------------------------------------------------------
# registry

_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
# e1 reaches q = 0.1 (|e| = 0.818) on its own; with e2 the draws reach q ~ 0.04. Specials: round,
# within 1e-8 of round (|e| = 5e-9), and tiny negative components.
_E1 = Domain(-0.82, 0.82, specials=(0.0, 5e-9, -1e-12, 9 / 11, -0.5))
_E2 = Domain(-0.45, 0.45, specials=(0.0, -5e-9, 1e-12, 0.45))
_THETA_E = Domain(0.01, 10.0, specials=(1.0, 0.01, 10.0), log=True)
_SLOPE = Domain(1.2, 2.8, specials=(1.2, 2.0, 2.8, 2.2))
# Deflections are vectors: each point's error is measured against |alpha|. The absolute floor
# is scaled by theta_E (the deflection scale at the Einstein radius); for slope < 2 alpha -> 0
# at the centre, where only the floor applies.
_TOL = Tolerance(rtol=1e-12, atol=1e-14, norm=True, why="alpha -> 0 at the centre (slope < 2)")
_TOL_KAPPA = Tolerance(rtol=1e-12, atol=1e-14, norm=True)


def _deflection_scale(einstein_radius, **_):
    return einstein_radius


def _potential_scale(einstein_radius, **_):
    return einstein_radius**2


_PARAMS = (
    Arg("centre_x", _CENTRE),
    Arg("centre_y", _CENTRE),
    Arg("e1", _E1),
    Arg("e2", _E2),
    Arg("einstein_radius", _THETA_E),
    Arg("slope", _SLOPE),
)


_FAMILY = KernelFamily("power_law", _XY, params=_PARAMS)


def _series_impls(quantity: str) -> dict[str, Any]:
    # numba and JAX: the series length decided once per call, then the series kernel's loop
    series = _series_kernel(quantity)
    blocked = blocked_deflections_loop if quantity == "deflections" else None
    return {"numba": _loop_impl(series, "numba", blocked), "jax": _jax_impl(quantity)}


def _rows_impl(quantity: str) -> Any:
    # numba, a batch of parameter sets in one call: each member's own series (its length and
    # coefficients as it alone would have them), one loop over members and points together
    point, outputs = _SERIES_POINTS[quantity]
    if quantity == "deflections":
        return rows_impl(series_coefficient_rows, blocked_deflections_rows_loop)
    return rows_impl(series_coefficient_rows, partial(series_rows_loop, point, len(outputs)))


CONVERGENCE = _FAMILY.register("convergence", convergence, ("kappa",), tol=_TOL_KAPPA)
DEFLECTIONS = _FAMILY.register(
    "deflections",
    deflections,
    ("alpha_x", "alpha_y"),
    tol=_TOL,
    atol_scale=_deflection_scale,
    impls=_series_impls("deflections"),
    batched_numba=_rows_impl("deflections"),
)
HESSIAN = _FAMILY.register(
    "hessian",
    hessian,
    ("psi_xx", "psi_xy", "psi_yy"),
    tol=_TOL_KAPPA,
    impls=_series_impls("hessian"),
    batched_numba=_rows_impl("hessian"),
)
POTENTIAL = _FAMILY.register(
    "potential",
    potential,
    ("psi",),
    tol=_TOL,
    atol_scale=_potential_scale,
    impls=_series_impls("potential"),
    batched_numba=_rows_impl("potential"),
)

#: The power law's kernels by quantity (parameters ``centre_x, centre_y, e1, e2,
#: einstein_radius, slope``).
KERNELS = {
    "convergence": CONVERGENCE,
    "deflections": DEFLECTIONS,
    "hessian": HESSIAN,
    "potential": POTENTIAL,
}

"""Spherical NFW lens: closed forms for convergence, deflections, hessian and potential.

The projected NFW halo (Bartelmann 1996; Wright & Brainerd 2000; Golse & Kneib 2002) with
``x = r / r_s`` and ``kappa_s = rho_s r_s / Sigma_crit`` (autogalaxy's naming)::

    kappa(x)    = 2 kappa_s f(x),          f(x) = (1 - F(x)) / (x^2 - 1),
    kappa_bar   = 4 kappa_s G(x),          G(x) = (ln(x/2) + F(x)) / x^2   (mean inside x),
    alpha       = kappa_bar * theta        (theta the offset from the centre, arcsec),
    psi         = 2 kappa_s r_s^2 h(x),    h(x) = ln^2(x/2) - (1 - x^2) F(x)^2,

with ``F(x) = arctanh(sqrt(1 - x^2)) / sqrt(1 - x^2)`` for ``x < 1`` and
``arctan(sqrt(x^2 - 1)) / sqrt(x^2 - 1)`` for ``x > 1``. lenstronomy's ``NFW`` uses ``Rs`` and
``alpha_Rs``, the deflection at ``Rs``: ``alpha_Rs = 4 kappa_s Rs (1 + ln(1/2))``.

Numerics. ``F`` is analytic in ``u = 1 - x^2``, ``F = sum_k u^k / (2k + 1)`` (the two
branches are one function), so within ``|u| < U_SERIES`` ``f = (F - 1) / u`` is summed as its
series (no 0/0 at ``x = 1``, exact values and derivatives). For ``x < 1`` ``arctanh`` is written
``log((1 + s) / x)``, ``s = sqrt(1 - x^2)``, so small ``x`` keeps full precision; below
``X2_SMALL`` the mean convergence and the potential, which cancel to ``O(x^2 ln x)`` there, are
rearranged so that nothing cancels (see :func:`radial_functions`).

The centre. ``kappa`` and ``kappa_bar`` diverge like ``ln(1/x)`` at ``x -> 0``. Every formula
uses ``max(x^2, X2_MIN)``: at the centre (``r < 1e-150 r_s``) the convergence is its value at
``x = 1e-150``, ``2 kappa_s (ln(2e150) - 1) ~ 689 kappa_s``, finite, and so are the hessian and
all gradients; the deflection is 0 there and the potential ``~1e-298 kappa_s r_s^2`` (their
limits are 0). The hessian at the
exact centre takes the direction ``(1, 0)`` for its shear part, so that ``kappa`` is still half
its trace.

Derivatives at the centre. The deflection is continuous there but its derivative diverges like
``4 kappa_s ln(1 / x)``; the other quantities are even in the offset. At the exact centre the
kernels compute from offsets held constant
(:func:`~twinlens.kernels.geometry.held_at_centre`), so the JAX derivatives of every quantity
with respect to the position and the centre are 0 there: the symmetric limit for convergence,
hessian and potential, and a documented bounded value for the deflection (the derivative of
the value returned, 0, held fixed). The floor is a ``where`` (a select, whose derivative is 0
below it) rather than ``maximum`` (whose derivative is a multiplication by 0, which turns the
infinite derivatives of the formulas at ``x^2 = 1e-300`` into NaN), and the radial functions
have finite derivatives down to ``X2_MIN``: with respect to the other parameters the derivatives
at the centre are those of the floored value. (Off the centre but below ``x ~ 1e-77`` the
derivative of the hessian's direction ``n n^T`` still overflows.)
"""

from __future__ import annotations

import math

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.geometry import held_at_centre
from twinlens.kernels.ops import arctan, log, log1p, pointwise, sqrt, where
from twinlens.kernels.registry import KernelFamily
from twinlens.kernels.tolerance import Tolerance

#: Floor on ``x^2 = (r / r_s)^2``: the value taken at the centre (see the module docstring).
X2_MIN = 1e-300
#: ``|1 - x^2|`` below which ``f`` and ``F`` are summed as series in ``u = 1 - x^2``.
U_SERIES = 0.1
#: ``x^2`` below which the cancellation-free small-``x`` forms of ``G`` and ``h`` are used.
X2_SMALL = 0.64

_LN2 = math.log(2.0)
#: ``w`` below which ``log1p(-w) / w`` is ``-1 - w / 2`` (both -1 to the last bit): the quotient's
#: derivative ``log1p(-w) / w^2`` overflows once ``w^2`` underflows (``w < 1e-154``).
W_TINY = 1e-100
# f(u) = (F - 1) / u = sum_{k>=1} u^(k-1) / (2k + 1): 16 terms leave 0.1^16 / 35 ~ 3e-18.
_F_COEFFS = tuple(1.0 / (2 * k + 3) for k in range(16))


@pointwise
def _f_series(u):
    # Horner on the 16 coefficients 1/3, 1/5, ..., 1/33 (written out: numba-friendly).
    c = _F_COEFFS
    acc = c[15]
    acc = c[14] + u * acc
    acc = c[13] + u * acc
    acc = c[12] + u * acc
    acc = c[11] + u * acc
    acc = c[10] + u * acc
    acc = c[9] + u * acc
    acc = c[8] + u * acc
    acc = c[7] + u * acc
    acc = c[6] + u * acc
    acc = c[5] + u * acc
    acc = c[4] + u * acc
    acc = c[3] + u * acc
    acc = c[2] + u * acc
    acc = c[1] + u * acc
    return c[0] + u * acc


@pointwise
def radial_functions(x2):
    """``(f, G, h)`` of the module docstring at ``x^2 = x2`` (``x2 >= X2_MIN``), dimensionless.

    Regimes, each chosen with ``where`` and fed safe stand-ins where it is not selected:

    * ``|1 - x^2| < U_SERIES``: ``f`` by its series, ``F = 1 + u f``;
    * ``x < 1``: ``F = (log1p(s) - ln(x^2) / 2) / s``, ``s = sqrt(1 - x^2)``;
    * ``x > 1``: ``F = arctan(t) / t``, ``t = sqrt(x^2 - 1)``;
    * ``x^2 < X2_SMALL``: with ``w = x^2 / (2 (1 + s))`` (so ``log1p(-w) = ln((1 + s) / 2)``),
      ``G = (ln(2/x) + log1p(-w) / (2 w)) / ((1 + s) s)`` and
      ``h = (2 ln(x/2) - log1p(-w)) log1p(-w)``; elsewhere ``G = (ln(x/2) + F) / x^2`` and
      ``h = ln^2(x/2) - u F^2``.

    Parameters
    ----------
    x2 : array_like
        ``(r / r_s)^2``, ``>= X2_MIN``.

    Returns
    -------
    (f, G, h) : arrays
        ``kappa / (2 kappa_s)``, ``kappa_bar / (4 kappa_s)``, ``psi / (2 kappa_s r_s^2)``.
    """
    u = 1.0 - x2
    near = abs(u) < U_SERIES
    inner = x2 < 1.0
    fs = _f_series(where(near, u, 0.0))
    # x < 1, away from 1 (no boolean algebra: these comparisons say it directly)
    far_in = u >= U_SERIES
    ui = where(far_in, u, 0.75)
    xi2 = where(far_in, x2, 0.25)
    si = sqrt(ui)
    f_in = (log1p(si) - 0.5 * log(xi2)) / si
    # x > 1, away from 1
    t = sqrt(where(u <= -U_SERIES, -u, 0.75))
    f_out = arctan(t) / t
    big_f = where(near, 1.0 + u * fs, where(inner, f_in, f_out))
    f = where(near, fs, (big_f - 1.0) / where(near, 1.0, u))
    half_log = 0.5 * log(x2) - _LN2  # ln(x / 2)
    # small x: nothing cancels
    small = x2 < X2_SMALL
    # the direct forms divide by x2 only where they are selected (1 / x2^2 overflows below
    # x2 = 1e-154, and its product with a zero cotangent would be NaN)
    g_direct = (half_log + big_f) / where(small, 1.0, x2)
    h_direct = half_log * half_log - u * big_f * big_f
    xs2 = where(small, x2, 0.25)
    ss = sqrt(1.0 - xs2)
    w = xs2 / (2.0 * (1.0 + ss))
    lw = log1p(-w)
    ln_2_over_x = _LN2 - 0.5 * log(xs2)
    big_w = w > W_TINY
    lw_over_w = where(big_w, lw / where(big_w, w, 1.0), -1.0 - 0.5 * w)
    g_small = (ln_2_over_x + 0.5 * lw_over_w) / ((1.0 + ss) * ss)
    h_small = (-2.0 * ln_2_over_x - lw) * lw
    return f, where(small, g_small, g_direct), where(small, h_small, h_direct)


@pointwise
def _scaled_offsets(x, y, centre_x, centre_y, scale_radius):
    # (x - cx) / r_s, (y - cy) / r_s (held at the exact centre), their squared norm and its
    # floored value (a select: see "Derivatives at the centre")
    xr, yr = held_at_centre((x - centre_x) / scale_radius, (y - centre_y) / scale_radius, 0.0)
    x2 = xr * xr + yr * yr
    return xr, yr, x2, where(x2 > X2_MIN, x2, X2_MIN)


@pointwise
def convergence_spherical(x, y, centre_x, centre_y, kappa_s, scale_radius):
    """Convergence of a spherical NFW halo, dimensionless (``~689 kappa_s`` at the centre)."""
    _, _, _, x2 = _scaled_offsets(x, y, centre_x, centre_y, scale_radius)
    f, _, _ = radial_functions(x2)
    return 2.0 * kappa_s * f


@pointwise
def deflections_spherical(x, y, centre_x, centre_y, kappa_s, scale_radius):
    """Deflections ``(alpha_x, alpha_y)`` of a spherical NFW halo, arcsec (0 at the centre)."""
    xr, yr, _, x2 = _scaled_offsets(x, y, centre_x, centre_y, scale_radius)
    _, g, _ = radial_functions(x2)
    a = 4.0 * kappa_s * scale_radius * g
    return a * xr, a * yr


@pointwise
def hessian_spherical(x, y, centre_x, centre_y, kappa_s, scale_radius):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` of a spherical NFW halo's potential.

    ``H = kappa_bar I + 2 (kappa - kappa_bar) n n^T`` with ``n`` the unit vector from the centre
    (``(1, 0)`` at the centre itself, where the field is singular).
    """
    xr, yr, x2_raw, x2 = _scaled_offsets(x, y, centre_x, centre_y, scale_radius)
    f, g, _ = radial_functions(x2)
    kbar = 4.0 * kappa_s * g
    d = 2.0 * (2.0 * kappa_s * f - kbar)
    off = x2_raw > 0.0
    inv = 1.0 / where(off, x2_raw, 1.0)
    nxx = where(off, xr * xr * inv, 1.0)
    nyy = where(off, yr * yr * inv, 0.0)
    return kbar + d * nxx, d * xr * yr * inv, kbar + d * nyy


@pointwise
def potential_spherical(x, y, centre_x, centre_y, kappa_s, scale_radius):
    """Lensing potential of a spherical NFW halo, arcsec^2, zero at the centre."""
    _, _, _, x2 = _scaled_offsets(x, y, centre_x, centre_y, scale_radius)
    _, _, h = radial_functions(x2)
    return 2.0 * kappa_s * scale_radius * scale_radius * h


def alpha_rs_from_kappa_s(kappa_s, scale_radius):
    """lenstronomy's ``alpha_Rs`` (the deflection at ``r_s``, arcsec):
    ``4 kappa_s r_s (1 + ln(1/2))``."""
    return 4.0 * kappa_s * scale_radius * (1.0 - _LN2)


def kappa_s_from_alpha_rs(alpha_rs, scale_radius):
    """Inverse of :func:`alpha_rs_from_kappa_s`: ``kappa_s = alpha_Rs / (4 r_s (1 - ln 2))``."""
    return alpha_rs / (4.0 * scale_radius * (1.0 - _LN2))


# ------------------------------------------------------------------------------------------
# registry

# x = r / r_s spans 1e-13 (a point 1e-12 from the centre with r_s = 10) to 2e4; specials hit
# the centre (tie), the axes and, with r_s = 1 and a zero centre, x = 1 exactly.
_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 1.0, 1.0 + 1e-9, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_KAPPA_S = Domain(0.01, 10.0, specials=(1.0,))
_RS = Domain(1e-3, 1e3, specials=(1e-3, 1.0, 1e3), log=True)
_PARAMS = (
    Arg("centre_x", _CENTRE),
    Arg("centre_y", _CENTRE),
    Arg("kappa_s", _KAPPA_S),
    Arg("scale_radius", _RS),
)
# Vectors and tensors: each point's error against the norm of the outputs there. The absolute
# floors scale with the natural size of each output (kappa_s, kappa_s r_s, kappa_s r_s^2).
_TOL = Tolerance(rtol=1e-12, atol=1e-14, norm=True)


_FAMILY = KernelFamily("nfw", _XY, params=_PARAMS, tol=_TOL)

CONVERGENCE_SPHERICAL = _FAMILY.register(
    "convergence_spherical",
    convergence_spherical,
    ("kappa",),
    atol_scale=lambda kappa_s, **_: kappa_s,
)
DEFLECTIONS_SPHERICAL = _FAMILY.register(
    "deflections_spherical",
    deflections_spherical,
    ("alpha_x", "alpha_y"),
    atol_scale=lambda kappa_s, scale_radius, **_: kappa_s * scale_radius,
)
HESSIAN_SPHERICAL = _FAMILY.register(
    "hessian_spherical",
    hessian_spherical,
    ("psi_xx", "psi_xy", "psi_yy"),
    atol_scale=lambda kappa_s, **_: kappa_s,
)
POTENTIAL_SPHERICAL = _FAMILY.register(
    "potential_spherical",
    potential_spherical,
    ("psi",),
    atol_scale=lambda kappa_s, scale_radius, **_: kappa_s * scale_radius**2,
)

#: The round NFW's closed forms by quantity (parameters ``centre_x, centre_y, kappa_s,
#: scale_radius``); elliptical NFW profiles use the MGE kernels (:mod:`twinlens.profiles.nfw`).
KERNELS = {
    "convergence": CONVERGENCE_SPHERICAL,
    "deflections": DEFLECTIONS_SPHERICAL,
    "hessian": HESSIAN_SPHERICAL,
    "potential": POTENTIAL_SPHERICAL,
}

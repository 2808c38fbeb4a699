"""Aperture averages: quadrature nodes on the sky and their weights, aperture and seeing.

The luminosity-weighted dispersion inside an aperture ``A`` seen through a PSF ``P`` is::

    sigma_ap^2 = int W(x) sigma^2 I(|x|) d^2x / int W(x) I(|x|) d^2x,   W = 1_A * P,

``W(x)`` being the fraction of light emitted at ``x`` that lands in the aperture. Both
integrals are sums over the same nodes ``x_i`` with weights ``w_i W(x_i)``; only the radius
``|x_i|`` reaches the radial kernels. Every function here builds ``(radii, weights)`` from
numpy or ``jax.numpy`` arithmetic (``xp``) with fixed orders, so it traces, vmaps and
differentiates; no branch depends on a value.

Radial panels start at the centre with ``R = b s^2`` (``s`` Gauss-Legendre on ``[0, 1]``),
which smooths the ``R ln R`` cusp of ``R I(R)``. With Gaussian seeing of width ``sigma``, a
second panel covers ``[b, edge + EDGE_OUT sigma]``, with ``b`` at ``EDGE_IN sigma`` inside the
edge (at least ``INNER_MIN`` of the edge): the window is smooth, and it is below
``exp(-EDGE_OUT^2 / 2)`` past the outer end.

The circular window is an integral over rays from the point ``x`` (``l1 < l2`` the distances
along direction ``phi`` to where the ray enters and leaves the disc) of the PSF's enclosed
fraction ``F`` (any round PSF)::

    W = (1 / 2 pi) int [F(l2) - F(l1)] dphi,   F(l) = 1 - exp(-l^2 / 2 sigma^2) (Gaussian),

and the slit's, for Gaussian seeing, is a product of error functions.

**Moffat seeing**, ``P ~ (1 + r^2 / alpha^2)^-beta``, ``F(l) = 1 - (1 + l^2 / alpha^2)^(1 - beta)``.
Its tail falls as a power, so past the edge panel (``MOFFAT_EDGE`` FWHMs either side of the
edge) a third panel, in ``ln(R - edge)``, reaches to the distance ``d`` where the PSF's light
beyond is ``MOFFAT_TAIL`` (``(1 + d^2 / alpha^2)^(1 - beta) = MOFFAT_TAIL``: ``d / alpha``
is ``2e3`` at ``beta = 2.5``, ``1e10`` at ``1.5``); light emitted farther out reaches the
aperture with a weight below that. The circle's window takes ``F``; the slit's averages the
Gaussian slit windows over the Moffat PSF's Gaussian mixture (:func:`moffat_mixture`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from twinlens.kinematics.jeans import gauss_legendre_unit

EDGE_IN, EDGE_OUT, INNER_MIN = 6.0, 8.5, 0.3
#: Gauss-Legendre orders: radial panels, the circle's window (rays), the slit's angles, the
#: Moffat PSF as a mixture of Gaussians
N_RADIAL, N_RAYS, N_ANGLE, N_MIX = 64, 96, 24, 128
#: Moffat seeing: the fraction of the PSF's light left beyond the outer panel (and left out of
#: its Gaussian mixture); a cap on ``ln(1 + d^2 / alpha^2)`` of that reach ``d``, which binds
#: for ``beta < 1 - ln(MOFFAT_TAIL) / MOFFAT_LOG_REACH_MAX`` (about 1.42; there the tail left
#: is ``exp(-(beta - 1) MOFFAT_LOG_REACH_MAX)``); the edge panel's extent in FWHMs each side
MOFFAT_TAIL, MOFFAT_LOG_REACH_MAX, MOFFAT_EDGE = 1e-11, 60.0, 3.0
FWHM_TO_SIGMA = 1.0 / (2.0 * math.sqrt(2.0 * math.log(2.0)))


def _nodes(n: int, xp: Any) -> tuple[Any, Any]:
    z, w = gauss_legendre_unit(n)
    return xp.asarray(z), xp.asarray(w)


def _cusp_panel(b: Any, xp: Any) -> tuple[Any, Any]:
    """``R = b s^2`` on ``[0, b]``: nodes and weights of ``int f(R) R dR`` (``b`` broadcasts)."""
    s, v = _nodes(N_RADIAL, xp)
    b = xp.asarray(b)[..., None]
    r = b * s * s
    return r, v * 2.0 * b * s * r


def _plain_panel(lo: Any, hi: Any, xp: Any) -> tuple[Any, Any]:
    """Gauss-Legendre on ``[lo, hi]`` for ``int f(R) R dR``."""
    s, v = _nodes(N_RADIAL, xp)
    lo, hi = xp.asarray(lo)[..., None], xp.asarray(hi)[..., None]
    r = lo + (hi - lo) * s
    return r, v * (hi - lo) * r


def gaussian_beyond(dist: Any, sigma: Any, xp: Any) -> Any:
    """Fraction of a Gaussian PSF of width ``sigma`` beyond radius ``dist``."""
    return xp.exp(-dist * dist / (2.0 * sigma * sigma))


def moffat_alpha(fwhm: Any, beta: Any, xp: Any) -> Any:
    """The Moffat core radius ``alpha = fwhm / (2 sqrt(2^(1/beta) - 1))``."""
    return fwhm / (2.0 * xp.sqrt(xp.expm1(math.log(2.0) / beta)))


def moffat_beyond(dist: Any, alpha: Any, beta: Any, xp: Any) -> Any:
    """Fraction of a Moffat PSF beyond radius ``dist``: ``(1 + dist^2 / alpha^2)^(1 - beta)``."""
    return xp.exp((1.0 - beta) * xp.log1p((dist / alpha) ** 2))


def moffat_log_reach(beta: Any, xp: Any) -> Any:
    """``ln(1 + d^2 / alpha^2)`` at the distance ``d`` beyond which the Moffat PSF holds
    :data:`MOFFAT_TAIL` of its light, capped at :data:`MOFFAT_LOG_REACH_MAX`."""
    return xp.minimum(-math.log(MOFFAT_TAIL) / (beta - 1.0), MOFFAT_LOG_REACH_MAX)


def circle_window(radius: Any, r_ap: Any, beyond: Callable[[Any], Any], xp: Any) -> Any:
    """``W(R)`` of a disc of radius ``r_ap`` seen through a round PSF whose fraction of light
    beyond radius ``l`` is ``beyond(l) = 1 - F(l)``: ``F(l2) - F(l1)`` is taken as
    ``beyond(l1) - beyond(l2)``, which keeps its digits far outside the disc."""
    t, v = _nodes(N_RAYS, xp)
    radius = radius[..., None]
    # inside: every ray starts inside (l1 = 0); by symmetry phi in [0, pi]
    r_in = xp.minimum(radius, r_ap)
    phi = math.pi * t
    sin = xp.sin(phi)
    l2 = -r_in * xp.cos(phi) + xp.sqrt(xp.maximum(r_ap * r_ap - (r_in * sin) ** 2, 0.0))
    inside = xp.sum(v * (1.0 - beyond(l2)), axis=-1)
    # outside: rays in the cone sin(phi') <= r_ap / R towards the centre, with
    # sin(phi') = (r_ap / R) sin(theta), which removes the square root at the cone's edge
    r_out = xp.maximum(radius, r_ap)
    theta = 0.5 * math.pi * t
    k = r_ap / r_out
    cos_p = xp.sqrt(xp.maximum(1.0 - (k * xp.sin(theta)) ** 2, 0.0))
    half = r_ap * xp.cos(theta)
    l1, l2 = r_out * cos_p - half, r_out * cos_p + half
    jac = k * xp.cos(theta) / xp.maximum(cos_p, 1e-300)
    terms = (beyond(l1) - beyond(l2)) * jac
    outside = xp.sum(v * terms, axis=-1) * 0.5  # (1/pi) * (pi/2) from theta's range
    return xp.where(radius[..., 0] <= r_ap, inside, outside)


def circle(r_ap: Any, sigma: Any | None, xp: Any) -> tuple[Any, Any]:
    """``(radii, weights)`` for a circular aperture of radius ``r_ap`` (arcsec), with Gaussian
    seeing of width ``sigma`` (arcsec) or none (``None``)."""
    if sigma is None:
        r, w = _cusp_panel(r_ap, xp)
        return r, 2.0 * math.pi * w
    b = xp.maximum(r_ap - EDGE_IN * sigma, INNER_MIN * r_ap)
    r1, w1 = _cusp_panel(b, xp)
    r2, w2 = _plain_panel(b, r_ap + EDGE_OUT * sigma, xp)
    r = xp.concatenate([r1, r2], axis=-1)
    w = xp.concatenate([w1, w2], axis=-1)
    window = circle_window(r, r_ap, lambda d: gaussian_beyond(d, sigma, xp), xp)
    return r, 2.0 * math.pi * w * window


def _erf(x: Any, xp: Any) -> Any:
    if xp.__name__ == "numpy":
        from scipy.special import erf
    else:
        from jax.scipy.special import erf
    return erf(x)


def slit_window(x: Any, y: Any, length: Any, width: Any, sigma: Any, xp: Any) -> Any:
    """``W(x, y)`` of a centred ``length`` (along x) by ``width`` slit through a Gaussian."""
    s = math.sqrt(2.0) * sigma

    def band(u: Any, size: Any) -> Any:
        return 0.5 * (_erf((0.5 * size - u) / s, xp) + _erf((0.5 * size + u) / s, xp))

    return band(x, length) * band(y, width)


def _slit_rays(
    length: Any, width: Any, panels: Callable, window: Callable | None, xp: Any
) -> tuple[Any, Any]:
    """Polar nodes of a centred slit: the angles split at the corner, so each ray ends on one
    edge; ``panels(edge, trig)`` gives a ray's radial nodes (``trig``: the cosine of the angle
    between the ray and the edge's normal), ``window(x, y)`` the seeing's window."""
    t, v = _nodes(N_ANGLE, xp)
    corner = xp.arctan2(width, length)
    radii, weights = [], []
    for lo, hi, half, trig in (
        (0.0, corner, 0.5 * length, xp.cos),
        (corner, 0.5 * math.pi, 0.5 * width, xp.sin),
    ):
        phi = lo + (hi - lo) * t
        r, w = panels(half / trig(phi), trig(phi))
        w = w * (4.0 * (hi - lo) * v)[:, None]  # four quadrants
        if window is not None:
            w = w * window(r * xp.cos(phi)[:, None], r * xp.sin(phi)[:, None])
        radii.append(r.reshape(-1))
        weights.append(w.reshape(-1))
    return xp.concatenate(radii), xp.concatenate(weights)


def slit(length: Any, width: Any, sigma: Any | None, xp: Any) -> tuple[Any, Any]:
    """``(radii, weights)`` for a centred rectangular slit, ``length`` by ``width`` arcsec, in
    polar coordinates, with Gaussian seeing of width ``sigma`` (arcsec) or none (``None``)."""
    if sigma is None:
        return _slit_rays(length, width, lambda edge, trig: _cusp_panel(edge, xp), None, xp)

    def panels(edge: Any, trig: Any) -> tuple[Any, Any]:
        # distances from the edge measured across it, not along the ray
        stretch = sigma / trig
        b = xp.maximum(edge - EDGE_IN * stretch, INNER_MIN * edge)
        r1, w1 = _cusp_panel(b, xp)
        r2, w2 = _plain_panel(b, edge + EDGE_OUT * stretch, xp)
        return xp.concatenate([r1, r2], axis=-1), xp.concatenate([w1, w2], axis=-1)

    def window(x: Any, y: Any) -> Any:
        return slit_window(x, y, length, width, sigma, xp)

    return _slit_rays(length, width, panels, window, xp)


# ------------------------------------------------------------------------------------------
# Moffat seeing


def _log_panel(edge: Any, lo: Any, hi: Any, xp: Any) -> tuple[Any, Any]:
    """``R = edge + exp(u)``, ``u`` Gauss-Legendre on ``[ln lo, ln hi]``, for ``int f R dR``:
    the window falls as a power of the distance from the edge."""
    s, v = _nodes(N_RADIAL, xp)
    a, b = xp.log(xp.asarray(lo))[..., None], xp.log(xp.asarray(hi))[..., None]
    d = xp.exp(a + (b - a) * s)
    r = xp.asarray(edge)[..., None] + d
    return r, v * (b - a) * d * r


def moffat_panels(edge: Any, fwhm: Any, reach: Any, xp: Any) -> tuple[Any, Any]:
    """Radial nodes of ``int f(R) R dR`` on ``[0, edge + reach]`` with Moffat seeing (widths
    along the ray): the centre's cusp panel, a plain panel ``MOFFAT_EDGE`` FWHMs either side of
    the edge, then a panel in ``ln(R - edge)`` out to ``reach`` past it."""
    near = MOFFAT_EDGE * fwhm
    b = xp.maximum(edge - near, INNER_MIN * edge)
    r1, w1 = _cusp_panel(b, xp)
    r2, w2 = _plain_panel(b, edge + near, xp)
    r3, w3 = _log_panel(edge, near, xp.maximum(reach, 2.0 * near), xp)
    return xp.concatenate([r1, r2, r3], axis=-1), xp.concatenate([w1, w2, w3], axis=-1)


def moffat_reach(alpha: Any, beta: Any, xp: Any) -> Any:
    """The distance ``d`` beyond which the Moffat PSF holds :data:`MOFFAT_TAIL` of its light
    (see :func:`moffat_log_reach`)."""
    return alpha * xp.sqrt(xp.expm1(moffat_log_reach(beta, xp)))


def circle_moffat(r_ap: Any, fwhm: Any, beta: Any, xp: Any) -> tuple[Any, Any]:
    """``(radii, weights)`` for a circular aperture of radius ``r_ap`` with Moffat seeing."""
    alpha = moffat_alpha(fwhm, beta, xp)
    r, w = moffat_panels(r_ap, fwhm, moffat_reach(alpha, beta, xp), xp)
    window = circle_window(r, r_ap, lambda d: moffat_beyond(d, alpha, beta, xp), xp)
    return r, 2.0 * math.pi * w * window


def _gammaln(x: Any, xp: Any) -> Any:
    if xp.__name__ == "numpy":
        from scipy.special import gammaln
    else:
        from jax.scipy.special import gammaln
    return gammaln(x)


def _tail_roots(c: Any, xp: Any) -> tuple[Any, Any]:
    """Both roots of ``e^s - 1 - s = c`` (``c > 0``), by Newton's method from outside (``h`` is
    convex, so each iterate stays outside: the range never shrinks below the roots')."""
    lo = -xp.sqrt(2.0 * c) - c
    hi = xp.minimum(xp.sqrt(2.0 * c), xp.log1p(c + xp.sqrt(2.0 * c) + xp.log1p(c)) - xp.log1p(c))
    hi = hi + xp.log1p(c)
    for _ in range(5):  # quadratic convergence from within a factor ~1.1 of the roots
        lo = lo - (xp.expm1(lo) - lo - c) / xp.expm1(lo)
        hi = hi - (xp.expm1(hi) - hi - c) / xp.expm1(hi)
    return lo, hi


def moffat_mixture(alpha: Any, beta: Any, xp: Any) -> tuple[Any, Any]:
    """The Moffat PSF as a mixture of normalised Gaussians: ``(sigmas, weights)``.

    ``(1 + r^2 / alpha^2)^-beta`` is the Laplace transform of ``t^(beta - 1) e^-t / Gamma(beta)``
    in ``t r^2 / alpha^2``, so the normalised Moffat PSF is the Gaussian of width
    ``alpha / sqrt(2 t)`` averaged over ``t ~ Gamma(k = beta - 1)``. The average is a
    Gauss-Legendre sum in ``v = ln t`` over the range where the density ``exp(k v - e^v)``
    is above ``MOFFAT_TAIL`` of its peak at ``v = ln k``: ``k h(v - ln k) = -ln MOFFAT_TAIL``,
    ``h(s) = e^s - 1 - s`` (the wide Gaussians' side capped as the circle's reach is).
    """
    k = beta - 1.0
    lo, hi = _tail_roots(_tail_c(k, xp), xp)
    z, w = _nodes(N_MIX, xp)
    span = hi - lo
    v = xp.log(k) + lo + span * z
    dens = xp.exp(k * v - xp.exp(v) - _gammaln(k, xp))
    return alpha * xp.exp(-0.5 * v) / math.sqrt(2.0), w * span * dens


def _tail_c(k: Any, xp: Any) -> Any:
    return xp.minimum(-math.log(MOFFAT_TAIL) / k, MOFFAT_LOG_REACH_MAX)


def slit_window_moffat(
    x: Any, y: Any, length: Any, width: Any, alpha: Any, beta: Any, xp: Any
) -> Any:
    """``W(x, y)`` of a centred slit through a Moffat PSF: the Gaussian slit windows averaged
    over :func:`moffat_mixture`."""
    sigmas, weights = moffat_mixture(alpha, beta, xp)
    each = slit_window(x[..., None], y[..., None], length, width, sigmas, xp)
    return xp.sum(weights * each, axis=-1)


def slit_moffat(length: Any, width: Any, fwhm: Any, beta: Any, xp: Any) -> tuple[Any, Any]:
    """``(radii, weights)`` for a centred slit, ``length`` by ``width`` arcsec, with Moffat
    seeing."""
    alpha = moffat_alpha(fwhm, beta, xp)
    reach = moffat_reach(alpha, beta, xp)

    def panels(edge: Any, trig: Any) -> tuple[Any, Any]:
        return moffat_panels(edge, fwhm / trig, reach / trig, xp)

    def window(x: Any, y: Any) -> Any:
        return slit_window_moffat(x, y, length, width, alpha, beta, xp)

    return _slit_rays(length, width, panels, window, xp)

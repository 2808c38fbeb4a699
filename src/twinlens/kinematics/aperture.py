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

The circular window has a closed form in rays from the point ``x`` (``l1 < l2`` the distances
along direction ``phi`` to where the ray enters and leaves the disc)::

    W = (1 / 2 pi) int [exp(-l1^2 / 2 sigma^2) - exp(-l2^2 / 2 sigma^2)] dphi,

and the slit's is a product of error functions.
"""

from __future__ import annotations

import math
from typing import Any

from twinlens.kinematics.jeans import gauss_legendre_unit

EDGE_IN, EDGE_OUT, INNER_MIN = 6.0, 8.5, 0.3
#: Gauss-Legendre orders: radial panels, the circle's window (rays), the slit's angles
N_RADIAL, N_RAYS, N_ANGLE = 64, 96, 24
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


def circle_window(radius: Any, r_ap: Any, sigma: Any, xp: Any) -> Any:
    """``W(R)`` of a disc of radius ``r_ap`` seen through a Gaussian of width ``sigma``."""
    t, v = _nodes(N_RAYS, xp)
    radius = radius[..., None]
    two_s2 = 2.0 * sigma * sigma
    # inside: every ray starts inside (l1 = 0); by symmetry phi in [0, pi]
    r_in = xp.minimum(radius, r_ap)
    phi = math.pi * t
    sin = xp.sin(phi)
    l2 = -r_in * xp.cos(phi) + xp.sqrt(xp.maximum(r_ap * r_ap - (r_in * sin) ** 2, 0.0))
    inside = xp.sum(v * (1.0 - xp.exp(-l2 * l2 / two_s2)), axis=-1)
    # outside: rays in the cone sin(phi') <= r_ap / R towards the centre, with
    # sin(phi') = (r_ap / R) sin(theta), which removes the square root at the cone's edge
    r_out = xp.maximum(radius, r_ap)
    theta = 0.5 * math.pi * t
    k = r_ap / r_out
    cos_p = xp.sqrt(xp.maximum(1.0 - (k * xp.sin(theta)) ** 2, 0.0))
    half = r_ap * xp.cos(theta)
    l1, l2 = r_out * cos_p - half, r_out * cos_p + half
    jac = k * xp.cos(theta) / xp.maximum(cos_p, 1e-300)
    terms = (xp.exp(-l1 * l1 / two_s2) - xp.exp(-l2 * l2 / two_s2)) * jac
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
    return r, 2.0 * math.pi * w * circle_window(r, r_ap, sigma, xp)


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


def slit(length: Any, width: Any, sigma: Any | None, xp: Any) -> tuple[Any, Any]:
    """``(radii, weights)`` for a centred rectangular slit, ``length`` by ``width`` arcsec, in
    polar coordinates; the angles split at the corner, so each ray ends on one edge."""
    t, v = _nodes(N_ANGLE, xp)
    corner = xp.arctan2(width, length)
    radii, weights = [], []
    for lo, hi, half, trig in (
        (0.0, corner, 0.5 * length, xp.cos),
        (corner, 0.5 * math.pi, 0.5 * width, xp.sin),
    ):
        phi = lo + (hi - lo) * t
        edge = half / trig(phi)
        ang = 4.0 * (hi - lo) * v  # four quadrants
        if sigma is None:
            r, w = _cusp_panel(edge, xp)
            w = w * ang[:, None]
        else:
            # distances from the edge measured across it, not along the ray
            stretch = sigma / trig(phi)
            b = xp.maximum(edge - EDGE_IN * stretch, INNER_MIN * edge)
            r1, w1 = _cusp_panel(b, xp)
            r2, w2 = _plain_panel(b, edge + EDGE_OUT * stretch, xp)
            r = xp.concatenate([r1, r2], axis=-1)
            w = xp.concatenate([w1, w2], axis=-1) * ang[:, None]
            c, s = xp.cos(phi)[:, None], xp.sin(phi)[:, None]
            w = w * slit_window(r * c, r * s, length, width, sigma, xp)
        radii.append(r.reshape(-1))
        weights.append(w.reshape(-1))
    return xp.concatenate(radii), xp.concatenate(weights)

"""Radial quadrature rules of fixed apertures: the aperture and seeing averaged over angle.

A spherical model's ``sigma^2 I`` depends on the projected radius alone, so an aperture ``A``
seen through seeing ``P`` enters only through the azimuthal average of its window
``W = 1_A * P``::

    int W(x) f(|x|) d^2x = int_0^inf 2 pi R Wbar(R) f(R) dR,
    Wbar(R) = (1 / 2 pi) int W(R cos phi, R sin phi) dphi.

For a fixed aperture ``Wbar`` is fixed work: :func:`aperture_rule` computes radii and weights
once (numpy), and every later evaluation sums a few hundred radii instead of the
two-dimensional rule's thousands (a slit's :func:`~twinlens.kinematics.aperture.slit` has
6,144). The circle's rule is already radial (:func:`~twinlens.kinematics.aperture.circle`).

A slit without seeing has ``Wbar`` in closed form, the fraction of the circle of radius ``R``
inside the rectangle (half-sides ``a <= b``, half-diagonal ``d``)::

    1 (R <= a),   (2 / pi) arcsin(a / R) (a < R <= b),
    (2 / pi) (arcsin(a / R) - arccos(b / R)) (b < R <= d),   0 beyond,

whose square-root kinks at ``a``, ``b`` and ``d`` are panel ends: each panel maps
``R = lo + (hi - lo) (1 - cos(pi t)) / 2``, smooth at both ends. With seeing, ``Wbar`` is the
Gauss-Legendre average of :func:`~twinlens.kinematics.aperture.slit_window` over one quadrant,
on the same panels and one more to ``d + EDGE_OUT sigma``; with Moffat seeing (the window of
:func:`~twinlens.kinematics.aperture.slit_window_moffat`), a plain panel to ``d +
MOFFAT_EDGE fwhm`` and one in ``ln(R - d)`` out to the PSF's reach.
"""

from __future__ import annotations

import itertools
import math
from functools import cache
from typing import Any

import numpy as np

from twinlens.kinematics import aperture as ap
from twinlens.kinematics.dispersion import _aperture_nodes
from twinlens.kinematics.models import (
    Annulus,
    CircularAperture,
    GaussianSeeing,
    MoffatSeeing,
    Slit,
)

__all__ = ["aperture_rule"]

#: Gauss-Legendre orders: per radial panel, and over a quadrant's angles with seeing
N_PANEL, N_PHI = 48, 64


def _panel(lo: float, hi: float, cusp: bool) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``int f(R) dR`` on ``[lo, hi]``: ``R = hi s^2`` from the centre
    (``cusp``; smooths ``R ln R``), else the cosine map, smooth at both ends."""
    s, v = ap.gauss_legendre_unit(N_PANEL)
    if cusp:
        return hi * s * s, v * 2.0 * hi * s
    half = 0.5 * (hi - lo)
    r = lo + half * (1.0 - np.cos(np.pi * s))
    return r, v * half * np.pi * np.sin(np.pi * s)


def _slit_fraction(r: np.ndarray, a: float, b: float) -> np.ndarray:
    """The fraction of the circle of radius ``r`` inside the rectangle of half-sides
    ``a <= b`` (module docstring)."""
    d = math.hypot(a, b)
    inner = np.arcsin(np.minimum(a / np.maximum(r, 1e-300), 1.0))
    corner = np.arccos(np.minimum(b / np.maximum(r, 1e-300), 1.0))
    out = np.where(r <= a, 1.0, 2.0 / np.pi * inner)
    out = np.where(r > b, 2.0 / np.pi * (inner - corner), out)
    return np.where(r > d, 0.0, out)


def _slit_average(r: np.ndarray, window: Any) -> np.ndarray:
    """``Wbar(R)``: the slit's window through the seeing averaged over one quadrant."""
    t, v = ap.gauss_legendre_unit(N_PHI)
    phi = 0.5 * np.pi * t
    return np.sum(v * window(r[:, None] * np.cos(phi), r[:, None] * np.sin(phi)), axis=-1)


def _slit_rule(length: float, width: float, seeing: Any) -> tuple[np.ndarray, ...]:
    a, b = sorted((0.5 * length, 0.5 * width))
    d = math.hypot(a, b)
    ends = [0.0, 0.5 * a, a, b, d]
    tail: tuple[np.ndarray, np.ndarray] | None = None
    if isinstance(seeing, GaussianSeeing):
        sigma = float(seeing.fwhm) * ap.FWHM_TO_SIGMA
        ends.append(d + ap.EDGE_OUT * sigma)

        def window(x: Any, y: Any) -> Any:
            return ap.slit_window(x, y, length, width, sigma, np)

    elif isinstance(seeing, MoffatSeeing):  # a plain panel, then one in ln(R - d)
        fwhm, beta = float(seeing.fwhm), float(seeing.beta)
        alpha = ap.moffat_alpha(fwhm, beta, np)
        near = ap.MOFFAT_EDGE * fwhm
        ends.append(d + near)
        r3, w3 = ap._log_panel(d, near, max(ap.moffat_reach(alpha, beta, np), 2.0 * near), np)
        tail = (r3, w3 / r3)

        def window(x: Any, y: Any) -> Any:
            return ap.slit_window_moffat(x, y, length, width, alpha, beta, np)

    pairs = enumerate(itertools.pairwise(ends))
    pieces = [_panel(lo, hi, i == 0) for i, (lo, hi) in pairs if hi > lo]
    pieces += [] if tail is None else [tail]
    r = np.concatenate([p[0] for p in pieces])
    w = np.concatenate([p[1] for p in pieces])
    fraction = _slit_fraction(r, a, b) if seeing is None else _slit_average(r, window)
    return r, 2.0 * np.pi * r * w * fraction


@cache
def _rule(aperture: Any, seeing: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(aperture, Slit):
        r, w = _slit_rule(float(aperture.length), float(aperture.width), seeing)
    else:  # a circle's (and an annulus's) rule is radial already
        r, w = _aperture_nodes(aperture, seeing, np)
    r, w = np.ascontiguousarray(np.ravel(r)), np.ascontiguousarray(np.ravel(w))
    keep = w != 0.0  # no window there (a slit's outside without seeing)
    r, w = r[keep], w[keep]
    r.setflags(write=False)
    w.setflags(write=False)
    return r, w


def aperture_rule(
    aperture: CircularAperture | Annulus | Slit,
    seeing: GaussianSeeing | MoffatSeeing | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(radii, weights)`` (arcsec; read-only numpy) of a fixed aperture and seeing:
    ``sum w f(R)`` is the window-weighted integral of a radial ``f`` over the sky. Computed
    once per aperture and seeing (their values, concrete)."""
    if not isinstance(aperture, CircularAperture | Annulus | Slit):
        raise TypeError(
            f"aperture must be CircularAperture, Annulus or Slit, got {type(aperture).__name__}"
        )
    if seeing is not None and not isinstance(seeing, GaussianSeeing | MoffatSeeing):
        raise TypeError(f"seeing must be GaussianSeeing, MoffatSeeing or None, got {seeing!r}")
    return _rule(aperture, seeing)

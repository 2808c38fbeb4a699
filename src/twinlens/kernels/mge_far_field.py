"""numba: a multi-Gaussian expansion's elliptical deflections, the distant components summed
as one series.

Shajib's deflection of one Gaussian (:func:`twinlens.kernels.gaussian._shajib_terms`) costs two
evaluations of the Faddeeva function ``w`` per point, and an expansion of ``K`` Gaussians
``2K``: 9.6 million for W2 (30 Gaussians, 160,000 points), nearly all of its run time. Far
from a component, relative to its ``sigma``, both are wasted work:

* the second term carries the damping ``exp(-E)``, ``E = X^2 (1 - q^2) + Y^2 (1/q^2 - 1)``
  (``X, Y`` the scaled frame coordinates of ``_shajib_terms``), which is below ``e^-50``
  (2e-22) once ``E >= DAMP_CUT``, while ``|w(z2)| <= 1``;
* the first, ``w(z)`` with ``z = zeta / sigma``, ``zeta = p (x' + i |y'|)`` (``p`` the unit scale
  of ``_shajib_shape``), has for ``|z|^2 >= FAR_Z2`` the asymptotic series

      w(z) = i / (sqrt(pi) z) sum_n (2n - 1)!! / (2 z^2)^n,

  valid on the whole closed upper half plane (``erfc``'s expansion holds for
  ``|arg(-i z)| < 3 pi / 4``). ``N_SERIES`` = 16 terms at ``|z|^2 >= 64``: the first omitted term
  is 4e-17 of ``|w|``, and the worst error measured against mpmath on that region is 8e-16
  (``tests/test_mge_far_field.py``), below Weideman's 2e-15.

Each component's prefactor is ``kappa_k sigma_k`` (times constants of ``q``), so the far
components of a point sum, term by term, to one series in ``u = sigma_ref / zeta``:

    sum_k kappa_k sigma_k w(zeta / sigma_k) = (i / sqrt(pi)) sigma_ref u sum_n c_n M_n u^(2n),
    c_n = (2n - 1)!! / 2^n,   M_n = sum_k kappa_k (sigma_k / sigma_ref)^(2n + 2),

a table of ``M_n`` per set of far components: with the components sorted by ``sigma``, those far
from a point are the ``K_p`` smallest (both conditions fall as ``1 / sigma^2``), so
``table[K]`` holds the moments of the first ``K`` with ``sigma_ref = sigma_(K-1)`` (every ratio
at most 1, so nothing overflows for ``sigma`` up to the profile's 1e40). A point then costs
one series, plus both Faddeeva evaluations for its near components only.

What is computed for a point depends on that point alone (its own ``K_p``, its own damping
test), never on its neighbours in the block, so a field is bit for bit the same whichever
array it is evaluated in. The near components run in runs of ``RUN`` points from the run's
smallest ``K_p``, each point keeping only its own near components: numba vectorises a loop
only when every point runs the same code. A tracer's fused loop does not inline this kernel: it
runs it first and reads its field (:mod:`twinlens.lensing.fused`), so an MGE's deflections are
the same bits in a tracer, alone, and recalled from the memo.
"""

from __future__ import annotations

from functools import cache
from math import sqrt
from typing import Any

import numpy as np

from twinlens.kernels.faddeeva import _BIG, wofz_upper
from twinlens.kernels.gaussian import _shajib_shape
from twinlens.kernels.geometry import from_profile_frame, to_profile_frame
from twinlens.kernels.ops import exp_vectorised, pi, pointwise

#: A component is far from a point where ``|z|^2 = |zeta|^2 / sigma^2 >= FAR_Z2`` ...
FAR_Z2 = 64.0
#: ... and its second term's damping exponent is at least ``DAMP_CUT`` (``e^-50`` = 2e-22).
DAMP_CUT = 50.0
#: Terms of the asymptotic series (``(2N - 1)!! / (2 FAR_Z2)^N`` = 4e-17 of ``|w|`` omitted).
N_SERIES = 16
#: Points per parallel iteration, and per run that shares its near components' loop.
BLOCK = 256
RUN = 32


def series_coefficients(n_terms: int = N_SERIES) -> np.ndarray:
    """``c_n / sqrt(pi)`` for ``n < n_terms``, ``c_n = (2n - 1)!! / 2^n``."""
    c = np.ones(n_terms)
    for n in range(1, n_terms):
        c[n] = c[n - 1] * (2 * n - 1) / 2.0
    return c / sqrt(pi)


_COEF = series_coefficients()


def _moment_table(sigmas, kappas, coef):
    # numba: the components sorted by sigma, their squares, and table[K, n] =
    # coef[n] * sum_{k < K} kappa_k (sigma_k / sigma_(K-1))^(2n + 2), smallest terms first
    n_comp = sigmas.shape[0]
    n_terms = coef.shape[0]
    sig = sigmas.copy()
    kap = kappas.copy()
    for k in range(1, n_comp):  # insertion sort (tens of components; np.argsort costs compile)
        s, c, j = sig[k], kap[k], k
        while j > 0 and sig[j - 1] > s:
            sig[j] = sig[j - 1]
            kap[j] = kap[j - 1]
            j -= 1
        sig[j] = s
        kap[j] = c
    table = np.zeros((n_comp + 1, n_terms))
    for far in range(1, n_comp + 1):
        ref = sig[far - 1]
        for k in range(far):
            ratio2 = (sig[k] / ref) * (sig[k] / ref)
            term = kap[k] * ratio2
            for n in range(n_terms):
                table[far, n] += term
                term *= ratio2
        for n in range(n_terms):
            table[far, n] *= coef[n]
    return sig, kap, sig * sig, table


def _deflections_block(x, y, start, cx, cy, q, phi, sig, kap, sig2, table, out_x, out_y):
    # numba only: points start .. start + BLOCK of x, y into out_x, out_y (sky frame)
    m = min(BLOCK, x.shape[0] - start)
    one_m_q2, sqrt_q, p_unit, pref_unit, inv_q = _shajib_shape(q)
    damp_y = inv_q * inv_q - 1.0
    xp = np.empty(BLOCK)
    ya = np.empty(BLOCK)
    sign = np.empty(BLOCK)
    n_far = np.empty(BLOCK, np.int64)
    ax = np.empty(BLOCK)
    ay = np.empty(BLOCK)
    shape = (p_unit, one_m_q2, damp_y)
    _frame_and_far_counts(x, y, start, m, cx, cy, phi, shape, sig2, xp, ya, sign, n_far)
    _far_series(m, n_far, xp, ya, p_unit, sqrt_q * pref_unit, sig, table, ax, ay)
    shape = (p_unit, one_m_q2, damp_y, sqrt_q, pref_unit, q, inv_q)
    _near_components(m, n_far, xp, ya, shape, sig, kap, ax, ay)
    for j in range(m):
        out_x[start + j], out_y[start + j] = from_profile_frame(ax[j], ay[j] * sign[j], phi)


@pointwise
def _frame_and_far_counts(x, y, start, m, cx, cy, phi, shape, sig2, xp, ya, sign, n_far):
    # numba only: each point's frame coordinates (|y'| and its sign) and number of far
    # components, i.e. those with sigma^2 below both bounds
    p_unit, one_m_q2, damp_y = shape
    for j in range(m):
        a, b = to_profile_frame(x[start + j], y[start + j], cx, cy, phi)
        xp[j] = a
        ya[j] = abs(b)
        sign[j] = 1.0 if b >= 0.0 else -1.0  # +1 on the axis, as in _shajib_terms
        zeta2 = p_unit * p_unit * (a * a + b * b)
        damp2 = p_unit * p_unit * (one_m_q2 * a * a + damp_y * b * b)
        # sigma^2 <= bound: far (an overflow to inf means far from every component, as it is)
        bound = min(zeta2 / FAR_Z2, damp2 / DAMP_CUT)
        count = 0
        for k in range(sig2.shape[0]):
            count += sig2[k] <= bound
        n_far[j] = count


@pointwise
def _far_series(m, n_far, xp, ya, p_unit, c_far, sig, table, ax, ay):
    # numba only: the far components of each point as one series (a gather from the table;
    # not vectorised), written into ax, ay (frame deflections before the reflection)
    n_terms = table.shape[1]
    for j in range(m):
        far = n_far[j]
        if far == 0:
            ax[j] = 0.0
            ay[j] = 0.0
            continue
        ref = sig[far - 1]
        # u = sigma_ref / zeta, with zeta scaled by its largest part and clamped where the
        # Faddeeva function clamps its argument (_BIG, 1e300): nothing overflows
        zr = p_unit * xp[j]
        zr = _BIG if zr > _BIG else (-_BIG if zr < -_BIG else zr)
        zi = min(p_unit * ya[j], _BIG)
        scale = max(abs(zr), zi)
        zr = zr / scale
        zi = zi / scale
        d = (ref / scale) / (zr * zr + zi * zi)
        ur = zr * d
        ui = -zi * d
        vr = ur * ur - ui * ui
        vi = 2.0 * ur * ui
        hr = table[far, n_terms - 1]
        hi = 0.0
        for n in range(n_terms - 2, -1, -1):
            hr, hi = hr * vr - hi * vi + table[far, n], hr * vi + hi * vr
        # g = sum kappa sigma w = i sigma_ref u h; the frame deflections are (Im g, Re g)
        # (before the reflection), i.e. (Re, -Im) of sigma_ref u h
        ax[j] = c_far * ref * (ur * hr - ui * hi)
        ay[j] = -(c_far * ref * (ur * hi + ui * hr))


@pointwise
def _near_components(m, n_far, xp, ya, shape, sig, kap, ax, ay):
    # numba only: the near components, run by run; each point adds only its own (k >= n_far)
    p_unit, one_m_q2, damp_y, sqrt_q, pref_unit, q, inv_q = shape
    n_comp = sig.shape[0]
    v1r = np.empty(RUN)
    v1i = np.empty(RUN)
    for r0 in range(0, m, RUN):
        r1 = min(r0 + RUN, m)
        first = n_comp
        for j in range(r0, r1):
            first = min(first, n_far[j])
        xr = xp[r0:r1]
        yr = ya[r0:r1]
        fr = n_far[r0:r1]
        axr = ax[r0:r1]
        ayr = ay[r0:r1]
        for k in range(first, n_comp):
            p = p_unit / sig[k]
            pref = kap[k] * (sig[k] * sqrt_q) * pref_unit
            damped = 0
            for i in range(r1 - r0):
                bx = p * xr[i]
                by = p * yr[i]
                t1r, t1i = wofz_upper(bx, by)
                v1r[i] = t1r
                v1i[i] = t1i
                damped += bx * bx * one_m_q2 + by * by * damp_y < DAMP_CUT
            if damped:  # the second term, where some point's damping is above e^-50
                for i in range(r1 - r0):
                    bx = p * xr[i]
                    by = p * yr[i]
                    w2r, w2i = wofz_upper(q * bx, by * inv_q)
                    e = bx * bx * one_m_q2 + by * by * damp_y
                    damp = exp_vectorised(-e) if e < DAMP_CUT else 0.0
                    v1r[i] = v1r[i] - damp * w2r
                    v1i[i] = v1i[i] - damp * w2i
            for i in range(r1 - r0):
                near = k >= fr[i]
                axr[i] += pref * v1i[i] if near else 0.0
                ayr[i] += pref * v1r[i] if near else 0.0


@cache
def _loop() -> Any:
    from twinlens.kernels.compile import build, generate

    args = ["x", "y", "cx", "cy", "q", "phi", "sigmas", "kappas", "coef"]
    body = "\n".join(
        [
            "    n = x.shape[0]",
            "    out_x = np.empty(n)",
            "    out_y = np.empty(n)",
            "    sig, kap, sig2, table = _table(sigmas, kappas, coef)",
            f"    for block in prange((n + {BLOCK} - 1) // {BLOCK}):",
            f"        block_of_points(x, y, block * {BLOCK}, cx, cy, q, phi, sig, kap, sig2,",
            "                        table, out_x, out_y)",
            "    return (out_x, out_y)",
        ]
    )
    source = generate(
        "mge.deflections_elliptical, far components as one series",
        [("_table", _moment_table)],
        args,
        body,
        # the parallel body calls the block function compiled on its own: numba's parallel
        # passes then do not analyse its statements (see twinlens.lensing.fused)
        called=[("block_of_points", _deflections_block)],
    )
    dummy: list[Any] = [np.zeros(1), np.zeros(1), *([0.5] * 4), np.ones(2), np.ones(2), _COEF]
    for a in dummy[:2]:
        a.flags.writeable = False
    return build("mge_deflections_far_field", source, *dummy)


def deflections_elliptical(x, y, centre_x, centre_y, q, phi, sigmas, kappas):
    """numba implementation of ``mge.deflections_elliptical``: the registry's arguments (1-D
    read-only ``x``, ``y``; scalar parameters; ``(K,)`` components)."""
    sigmas = np.ascontiguousarray(sigmas, dtype=float)
    kappas = np.ascontiguousarray(kappas, dtype=float)
    return _loop()(x, y, centre_x, centre_y, q, phi, sigmas, kappas, _COEF)

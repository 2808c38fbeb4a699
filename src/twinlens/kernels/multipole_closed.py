"""The elliptical multipole's closed forms of ``P`` and ``P'`` (Paugnat & Gilman 2025, as in
lenstronomy's ``MULTIPOLE_ELL``, written here in Cartesian form), for orders 1, 3 and 4.

:mod:`twinlens.kernels.multipole` uses them for ``q <= 1 - Q_SWITCH``; closer to round they
subtract terms of order ``(1 - q^2)^-2`` and lose precision, and the multipole's near-round
quadrature serves instead. Arguments are the direction ``(c, s) = (cos phi', sin phi')`` in the
reference frame, the axis ratio and the order; the gauge is twinlens' (``P`` without a first
harmonic).
"""

from __future__ import annotations

import numpy as np

from twinlens.kernels.ops import arcsinh, arctan, log, pointwise, sqrt

_LN2 = float(np.log(2.0))


@pointwise(inline=False)
def _fhat_odd(c, s, big_q, m):
    # lenstronomy's F-hat of the m = 1 or m = 3 base potential and its derivative, axis ratio
    # big_q (q or 1/q), with its first harmonic A cos(phi) removed (the twinlens gauge).
    d = big_q * big_q * c * c + s * s
    lg = log(2.0 * d)
    dl = arctan((big_q - 1.0) * c * s / (big_q * c * c + s * s))  # phi - varphi
    lgp = 2.0 * (1.0 - big_q * big_q) * s * c / d
    dlp = 1.0 - big_q / d
    one_m_q2 = 1.0 - big_q * big_q
    rho = (1.0 - big_q) / (1.0 + big_q)
    # the first harmonic of ln(2 D) cos(phi), per pi: ln 2 + 2 ln((1 + q) / 2) - rho
    harm_l = _LN2 + 2.0 * log(0.5 * (1.0 + big_q)) - rho
    if m == 1:
        k1 = big_q
        k0 = _LN2 * (1.0 + big_q) / 2.0 - one_m_q2 * (1.0 + _LN2 / 4.0)
        k2 = 1.0
        den = -2.0 * one_m_q2
    else:
        k1 = big_q * (3.0 + big_q * big_q)
        k0 = (
            _LN2 * (1.0 + big_q) * (1.0 + big_q)
            - 2.0 * (1.0 - big_q) * (1.0 + big_q) * (1.0 + big_q) * (1.0 + _LN2 / 4.0)
            + one_m_q2 * one_m_q2 / 4.0
        )
        k2 = 1.0 + 3.0 * big_q * big_q
        den = 2.0 * one_m_q2 * one_m_q2
    gauge = (k1 * harm_l - k0 - k2 * rho) / den
    f = (c * (k1 * lg - k0) + 2.0 * k2 * s * dl) / den - gauge * c
    fp = (-s * (k1 * lg - k0) + k1 * c * lgp + 2.0 * k2 * (c * dl + s * dlp)) / den + gauge * s
    return f, fp, gauge


@pointwise(inline=False)
def _f4(c, s, q):
    # the m = 4 closed forms F_1 (cosine part), F_2 (sine part) and their derivatives
    s2 = 1.0 - q * q
    sq = sqrt(s2)
    d = q * q * c * c + s * s
    rd = sqrt(d)
    z = arctan(sq * c / rd)
    w = arcsinh(sq * s / q)
    sin2 = 2.0 * s * c
    cos2 = c * c - s * s
    n1 = 1.0 + 4.0 * q * q + q**4 - (1.0 - q**4) * cos2
    p1 = (1.0 + 6.0 * q * q + q**4) / (s2 * s2 * sq)
    p2 = 4.0 * q * (1.0 + q * q) / (s2 * s2 * sq)
    f1 = -4.0 * n1 / (3.0 * s2 * s2 * rd) + p1 * (c * z + s * w)
    f1p = -4.0 * sin2 / (3.0 * s2 * s2 * d * rd) * (2.0 * (1.0 - q**4) * d - 0.5 * n1 * s2)
    f1p = f1p + p1 * (c * w - s * z)
    f2 = -4.0 * q * sin2 / (3.0 * s2 * rd) + p2 * (c * w - s * z)
    f2p = -4.0 * q / (3.0 * s2) * (2.0 * cos2 / rd - 0.5 * s2 * sin2 * sin2 / (d * rd))
    f2p = f2p + p2 * (sq / rd - c * z - s * w)
    return f1, f1p, f2, f2p


@pointwise
def _closed_p(c, s, q, m, cm, sm):
    # P and P' of the whole multipole (cosine and sine parts combined), reference frame
    rq = sqrt(q)
    if m == 4:
        f1, f1p, f2, f2p = _f4(c, s, q)
        return rq * (cm * f1 + sm * f2), rq * (cm * f1p + sm * f2p)
    fc, fcp, _ = _fhat_odd(c, s, q, m)
    # the sine part is the cosine part of the ellipse turned by 90 degrees: axis ratio 1/q at
    # the point (-y, x); lenstronomy's sign is - for m = 1 and + for m = 3
    fs, fsp, _ = _fhat_odd(-s, c, 1.0 / q, m)
    sign = -1.0 if m == 1 else 1.0
    p = rq * (cm * fc + sm * sign * fs / q)
    dp = rq * (cm * fcp + sm * sign * fsp / q)
    return p, dp

"""Independent high-precision references (mpmath) for the tests."""

from __future__ import annotations

import mpmath as mp


def _ellipse_matrix(e1, e2):
    # M^-1 for the quadratic form q x'^2 + y'^2/q, from (e1, e2): c((1 + e^2) I + 2E)
    ee = e1 * e1 + e2 * e2
    c = 1 / (1 - ee)
    return mp.matrix([[c * (1 + ee + 2 * e1), 2 * c * e2], [2 * c * e2, c * (1 + ee - 2 * e1)]])


def gaussian_deflection(x, y, e1, e2, sigma, kappa0, dps=20):
    """Deflection of kappa0 exp(-(q x'^2 + y'^2/q) / (2 sigma^2)) centred on the origin, by
    mpmath quadrature of the homoeoid integral, written over u = 1 / (1 + tau) in [0, 1]:
    alpha = int_0^1 kappa(u theta^T P^-1 theta) P^-1 theta / sqrt(det P) du, P = I + u (N - I),
    with N^-1 the matrix of the quadratic form. Breakpoints follow exp(-u r^2 / (2 sigma^2))."""
    with mp.workdps(dps):
        x, y, e1, e2, sigma, kappa0 = (mp.mpf(v) for v in (x, y, e1, e2, sigma, kappa0))
        n = _ellipse_matrix(e1, e2)
        theta = mp.matrix([x, y])
        eye = mp.eye(2)

        def integrand(u, i):
            p = eye + u * (n - eye)
            v = mp.lu_solve(p, theta)
            xi = u * (x * v[0] + y * v[1])
            return kappa0 * mp.exp(-xi / (2 * sigma**2)) * v[i] / mp.sqrt(mp.det(p))

        a = (x * x + y * y) / (2 * sigma**2)
        points = sorted(
            {mp.mpf(0), mp.mpf(1)} | {b for b in (1 / a, 10 / a, 40 / a) if b < 1}
            if a > 0
            else {mp.mpf(0), mp.mpf(1)}
        )
        return tuple(float(mp.quad(lambda u, i=i: integrand(u, i), points)) for i in (0, 1))

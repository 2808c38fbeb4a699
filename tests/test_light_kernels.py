"""Light kernels (Sersic, core-Sersic) and the exact Sersic b_n, against mpmath, scipy quadrature
and closed forms."""

from __future__ import annotations

import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate

from twinlens.backend import BACKENDS, jax_runtime
from twinlens.kernels import registry, sersic_index
from twinlens.kernels.light import (
    R_FLOOR,
    core_sersic,
    elliptical_radius_squared,
    sersic,
    sersic_b,
)

jax = jax_runtime.load()
jnp = jax.numpy

SERSIC = registry.get("light.sersic")
CORE = registry.get("light.core_sersic")
N_VALUES = [0.2, 0.5, 1.0, 2.0, 4.0, 6.5, 10.0]


def mp_sersic_b(n, dps=30):
    """The root of P(2n, b) = 1/2 by mpmath at ``dps`` digits (started from scipy's value)."""
    with mp.workdps(dps):
        a = 2 * mp.mpf(n)
        return mp.findroot(
            lambda b: mp.gammainc(a, 0, b, regularized=True) - mp.mpf(1) / 2,
            mp.mpf(float(sersic_b(n))),
        )


def mp_radius(x, y, cx, cy, e1, e2):
    """R = sqrt(q x'^2 + y'^2 / q) by rotation into the major-axis frame, at 30 digits."""
    with mp.workdps(30):
        e1, e2 = mp.mpf(e1), mp.mpf(e2)
        e = mp.sqrt(e1 * e1 + e2 * e2)
        q = (1 - e) / (1 + e)
        phi = mp.atan2(e2, e1) / 2
        dx, dy = mp.mpf(x) - mp.mpf(cx), mp.mpf(y) - mp.mpf(cy)
        xp = mp.cos(phi) * dx + mp.sin(phi) * dy
        yp = -mp.sin(phi) * dx + mp.cos(phi) * dy
        return mp.sqrt(q * xp * xp + yp * yp / q)


def mp_core_sersic(r, re, n, b, rb, gamma, alpha, intensity):
    """lenstronomy's CORE_SERSIC formula, literally, at 30 digits (``r`` above the floor)."""
    with mp.workdps(30):
        r, re, n, b, rb, gamma, alpha = (mp.mpf(v) for v in (r, re, n, b, rb, gamma, alpha))
        outer = ((r**alpha + rb**alpha) / re**alpha) ** (1 / (alpha * n))
        return intensity * (1 + (rb / r) ** alpha) ** (gamma / alpha) * mp.exp(-b * (outer - 1))


# ------------------------------------------------------------------------------------------
# b_n


def test_module_does_not_import_jax():
    code = "import sys, twinlens.kernels.light; assert 'jax' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("n", N_VALUES)
def test_sersic_b_matches_mpmath(n):
    ref = mp_sersic_b(n)
    # scipy's gammaincinv: measured below 2e-15 relative on [0.2, 10]
    assert float(abs(sersic_b(n) - ref) / ref) < 1e-13
    # traced: the Chebyshev series, measured below 1e-15 relative
    got = jax.jit(sersic_b)(jnp.float64(n))
    assert isinstance(got, jax.Array)
    assert float(abs(float(got) - ref) / ref) < 1e-13


def test_traced_sersic_b_series_is_the_mpmath_chebyshev_series():
    # the series' coefficients recomputed from 40-digit roots at the Chebyshev nodes in log n
    # (a discrete cosine transform in mpmath): the stored ones must be these, to rounding
    n_coef = len(sersic_index.CHEBYSHEV)
    with mp.workdps(40):
        t_lo, t_hi = mp.log(mp.mpf(sersic_index.N_LO)), mp.log(mp.mpf(sersic_index.N_HI))
        nodes = [mp.cos(mp.pi * (i + mp.mpf(1) / 2) / n_coef) for i in range(n_coef)]
        g = []
        for x in nodes:
            n = mp.exp(t_lo + (x + 1) / 2 * (t_hi - t_lo))
            g.append(mp_sersic_b(n, dps=40) - 2 * n + mp.mpf(1) / 3)
        angle = [mp.pi * (i + mp.mpf(1) / 2) / n_coef for i in range(n_coef)]
        coef = [
            2 * mp.fsum(g[i] * mp.cos(j * angle[i]) for i in range(n_coef)) / n_coef
            for j in range(n_coef)
        ]
        coef[0] /= 2
    np.testing.assert_allclose(sersic_index.CHEBYSHEV, [float(c) for c in coef], rtol=0, atol=1e-17)
    assert abs(float(coef[-1])) < 1e-20  # the series has converged where it stops
    # and between the nodes, on the whole range, against mpmath roots
    for n in np.geomspace(sersic_index.N_LO, sersic_index.N_HI, 23):
        ref = mp_sersic_b(float(n))
        assert abs(float(jax.jit(sersic_b)(jnp.float64(n))) - float(ref)) / float(ref) < 1e-14


def test_sersic_b_arrays_keep_their_shape():
    n = np.array([[0.3], [1.0], [7.0]])  # (B, 1)
    out = sersic_b(n)
    assert isinstance(out, np.ndarray) and out.shape == (3, 1)
    scalars = np.array([[float(sersic_b(float(v)))] for v in n[:, 0]])
    np.testing.assert_array_equal(out, scalars)  # the same scipy call, elementwise
    out_jax = sersic_b(jnp.asarray(n))
    assert out_jax.shape == (3, 1)
    # both converged to float64 precision (test above): 1e-13 covers both errors
    np.testing.assert_allclose(np.asarray(out_jax), out, rtol=1e-13)


@pytest.mark.parametrize("n", [0.2, 0.5, 1.0, 4.0, 10.0])
def test_sersic_b_gradient_is_the_implicit_derivative(n):
    # db/dn = -dP/dn / dP/db at the root, P = P(2n, b), evaluated by mpmath (independent of JAX)
    b = mp_sersic_b(n)
    with mp.workdps(30):
        a = 2 * mp.mpf(n)
        dp_da = mp.diff(lambda s: mp.gammainc(s, 0, b, regularized=True), a)
        dp_db = b ** (a - 1) * mp.exp(-b) / mp.gamma(a)
        ref = -2 * dp_da / dp_db
    got = float(jax.grad(sersic_b)(jnp.float64(n)))
    # the derivative of the series, measured below 1e-13 relative
    assert abs(got - float(ref)) / abs(float(ref)) < 1e-12
    # and a central difference of the scipy path (step 1e-5: truncation ~1e-10, rounding ~1e-11)
    h = 1e-5
    fd = (float(sersic_b(n + h)) - float(sersic_b(n - h))) / (2 * h)
    assert abs(got - fd) / abs(fd) < 1e-8


# ------------------------------------------------------------------------------------------
# geometry and values


def test_elliptical_radius_is_the_rotated_quadratic_form():
    rng = np.random.default_rng(0)
    for _ in range(200):
        x, y, cx, cy = rng.uniform(-10, 10, 4)
        f, angle = rng.uniform(0, 0.7), rng.uniform(-np.pi, np.pi)
        e1, e2 = f * np.cos(2 * angle), f * np.sin(2 * angle)
        ref = mp_radius(x, y, cx, cy, e1, e2) ** 2
        got = elliptical_radius_squared(x, y, cx, cy, e1, e2)
        # the formula cancels (1 + |e|^2) r^2 against 2 |e| r^2: a few ulp at |e| = 0.7
        # (measured 1.2e-15), plus the rounding of x - centre_x
        assert float(abs(got - ref) / ref) < 1e-14


def test_elliptical_radius_at_zero_ellipticity_is_the_distance():
    assert elliptical_radius_squared(3.0, -4.0, 0.0, 0.0, 0.0, 0.0) == 25.0


@pytest.mark.parametrize("n", [0.2, 1.0, 4.0, 10.0])
def test_sersic_matches_mpmath(n):
    rng = np.random.default_rng(1)
    re, intensity, e1, e2 = 0.8, 2.5, 0.2, -0.1
    b = float(sersic_b(n))
    for x, y in rng.uniform(-3, 3, (20, 2)):
        r = mp_radius(x, y, 0.1, -0.2, e1, e2)
        with mp.workdps(30):
            exponent = -b * ((r / re) ** (1 / mp.mpf(n)) - 1)
            ref = intensity * mp.exp(exponent)
        got = sersic(x, y, 0.1, -0.2, e1, e2, re, n, b, intensity)
        # exp of an exponent E computed to a few ulp of |E| (up to ~300 here, for n = 0.2):
        # relative error ~|E| 2e-16, measured 1.3e-13 at |E| = 293
        assert float(abs(got - ref) / ref) < 2e-15 * (1.0 + abs(float(exponent)))


def test_sersic_at_the_centre_is_exact():
    b = float(sersic_b(4.0))
    # exactly intensity exp(b): (R/R_e)^(1/n) is 0, not a rounded power of a floor
    assert sersic(0.3, -0.1, 0.3, -0.1, 0.2, 0.1, 1.2, 4.0, b, 1.5) == 1.5 * np.exp(b)


@pytest.mark.parametrize("n", [0.2, 0.5, 1.0, 4.0, 10.0])
def test_effective_radius_is_the_half_light_radius(n):
    # int 2 pi R I(R) dR over [0, R_e] and [0, inf), with R = R_e t^n (dR = n R_e t^(n-1) dt)
    # so that quad sees the t-scale of the exponential; I is the kernel (round, centred)
    re, b = 1.3, float(sersic_b(n))

    def integrand(t):
        r = re * t**n
        return (
            2
            * np.pi
            * r
            * sersic(r, 0.0, 0.0, 0.0, 0.0, 0.0, re, n, b, 1.0)
            * n
            * re
            * t ** (n - 1)
        )

    kw = {"epsabs": 0.0, "epsrel": 1e-13, "limit": 500}
    inner, _ = integrate.quad(integrand, 0.0, 1.0, **kw)
    outer, _ = integrate.quad(integrand, 1.0, np.inf, **kw)
    # quad's relative accuracy ~1e-13 on each piece, b_n exact to 1e-15
    assert abs(inner / (inner + outer) - 0.5) < 1e-10


def test_core_sersic_matches_lenstronomys_formula():
    rng = np.random.default_rng(2)
    re, n, rb, gamma, alpha, intensity = 1.1, 3.0, 0.05, 0.4, 2.5, 0.7
    b = float(sersic_b(n))
    radii = np.concatenate([[R_FLOOR, 1e-4, 0.01, 0.05, 0.2], rng.uniform(0.0, 5.0, 15)])
    for r in radii:
        ref = mp_core_sersic(r, re, n, b, rb, gamma, alpha, intensity)
        got = core_sersic(r, 0.0, 0.0, 0.0, 0.0, 0.0, re, n, b, rb, gamma, alpha, intensity)
        # the exponent is a few ulp of its size (< 30 here): ~1e-14
        assert float(abs(got - ref) / ref) < 1e-13


def test_core_sersic_autogalaxy_normalisation():
    # autogalaxy's SersicCore takes I_b, the intensity at R = R_b; the module's mapping
    # intensity = I_b 2^(-gamma/alpha) exp(b (2^(1/(alpha n)) (R_b/R_e)^(1/n) - 1)) must give
    # I(R_b) = I_b (on the major axis of an elliptical profile R = sqrt(q) x')
    re, n, rb, gamma, alpha, i_b = 1.3, 3.0, 0.2, 0.4, 2.5, 0.8
    b = float(sersic_b(n))
    intensity = (
        i_b
        * 2 ** (-gamma / alpha)
        * np.exp(b * (2 ** (1 / (alpha * n)) * (rb / re) ** (1 / n) - 1))
    )
    e1 = 0.2  # q = 2/3, major axis along x
    x = rb / np.sqrt((1 - e1) / (1 + e1))
    got = core_sersic(x, 0.0, 0.0, 0.0, e1, 0.0, re, n, b, rb, gamma, alpha, intensity)
    assert abs(got - i_b) < 1e-14 * i_b  # a few ulp of exponents of size ~5


def test_core_sersic_floors_only_the_cusp():
    re, n, rb, gamma, alpha, intensity = 1.1, 3.0, 0.05, 0.4, 2.5, 0.7
    b = float(sersic_b(n))
    # at R = 0: the cusp at R_FLOOR, the exponential part exactly (R^alpha = 0)
    with mp.workdps(30):
        cusp = (1 + (mp.mpf(rb) / R_FLOOR) ** alpha) ** (mp.mpf(gamma) / alpha)
        ref = intensity * cusp * mp.exp(-b * ((mp.mpf(rb) / re) ** (1 / mp.mpf(n)) - 1))
    got = core_sersic(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, re, n, b, rb, gamma, alpha, intensity)
    assert float(abs(got - ref) / ref) < 1e-13  # as for the values above


def test_core_sersic_is_sersic_without_a_break_radius():
    pts = np.array([0.0, 1e-12, 1e-6, R_FLOOR, 0.03, 0.9, 4.0])
    for n in (0.5, 4.0):
        b = float(sersic_b(n))
        core = core_sersic(pts, 0.2 * pts, 0.0, 0.0, 0.1, 0.3, 1.1, n, b, 0.0, 0.6, 3.0, 2.0)
        ref = sersic(pts, 0.2 * pts, 0.0, 0.0, 0.1, 0.3, 1.1, n, b, 2.0)
        # R_b = 0 runs the same operations as the Sersic kernel: equal to rounding
        np.testing.assert_allclose(core, ref, rtol=1e-15, atol=0.0)


@pytest.mark.parametrize("alpha", [1.0, 3.0])
def test_core_sersic_tends_to_sersic_as_break_radius_vanishes(alpha):
    # The limit R_b -> 0 at fixed R >= R_FLOOR. With t = (R_b/R)^alpha and u = (R/R_e)^(1/n),
    # exactly: log(I_core / I_sersic) = (gamma/alpha) log1p(t) - b u ((1 + t)^(1/(alpha n)) - 1),
    # so |I_core / I_sersic - 1| <~ t (gamma/alpha + b u / (alpha n)) -> 0 (1/(alpha n) <= 1).
    re, n, gamma = 1.1, 2.0, 0.6
    b = float(sersic_b(n))
    radii = np.array([R_FLOOR, 0.05, 0.4, 2.0])
    ref = sersic(radii, 0.0, 0.0, 0.0, 0.0, 0.0, re, n, b, 1.0)
    u = (radii / re) ** (1 / n)
    for rb in (1e-2, 1e-4, 1e-6, 1e-9):
        core = core_sersic(radii, 0.0, 0.0, 0.0, 0.0, 0.0, re, n, b, rb, gamma, alpha, 1.0)
        t = (rb / radii) ** alpha
        log_ratio = gamma / alpha * np.log1p(t) - b * u * np.expm1(np.log1p(t) / (alpha * n))
        # the exact ratio: the values are good to ~1e-14 of the ratio (tests above)
        np.testing.assert_allclose(core / ref - 1.0, np.expm1(log_ratio), rtol=1e-14, atol=1e-14)
        # the first-order bound (10% for the expm1 of a bounded exponent; 1e-14 for rounding,
        # a few ulp of exponents below 10)
        small = t < 0.1
        bound = 1.1 * t * (gamma / alpha + b * u / (alpha * n)) + 1e-14
        assert np.all(np.abs(core / ref - 1.0)[small] <= bound[small])
    # at the centre too: I(0) -> intensity exp(b) (the exponential's R_b-dependence is
    # (R_b/R_e)^(1/n), the floored cusp's (R_b/R_FLOOR)^alpha)
    centre = [
        core_sersic(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, re, n, b, rb, gamma, alpha, 1.0)
        for rb in (1e-6, 1e-8, 1e-10, 1e-12)
    ]
    errors = np.abs(np.array(centre) / np.exp(b) - 1.0)
    assert np.all(np.diff(errors) < 0) and errors[-1] < 1e-5


@pytest.mark.parametrize(("gamma", "alpha"), [(0.3, 2.0), (1.2, 5.0), (0.0, 3.0)])
def test_core_sersic_is_a_power_law_well_inside_the_break(gamma, alpha):
    re, n, rb = 2.0, 4.0, 0.5
    b = float(sersic_b(n))
    r1, r2 = 1e-4 * rb, 1e-3 * rb  # both above R_FLOOR
    i1, i2 = core_sersic(
        np.array([r1, r2]), 0.0, 0.0, 0.0, 0.0, 0.0, re, n, b, rb, gamma, alpha, 1.0
    )
    # I ~ R^-gamma with corrections of relative size (gamma/alpha + b (R_b/R_e)^(1/n) / (alpha n))
    # times (R/R_b)^alpha (expand both factors to first order)
    bound = 2.0 * (gamma / alpha + b * (rb / re) ** (1 / n) / (alpha * n)) * (r2 / rb) ** alpha
    assert abs(i1 / i2 / (r1 / r2) ** -gamma - 1.0) < bound + 1e-14
    # and the exact ratio, from the formula at 30 digits (values to ~1e-14)
    ref = mp_core_sersic(r1, re, n, b, rb, gamma, alpha, 1) / mp_core_sersic(
        r2, re, n, b, rb, gamma, alpha, 1
    )
    assert float(abs(i1 / i2 - ref) / ref) < 1e-13


# ------------------------------------------------------------------------------------------
# JAX gradients and backends


def _params_sersic(n, e1=0.0, e2=0.0):
    return [0.1, -0.2, e1, e2, 0.9, n, float(sersic_b(n)), 1.7]


def _params_core(n, rb, e1=0.0, e2=0.0):
    return [0.1, -0.2, e1, e2, 0.9, n, float(sersic_b(n)), rb, 0.7, 2.0, 1.7]


def _jacobian(kernel, x, y, params):
    # d I / d (x, y, params) by forward mode through the JAX kernel
    def f(v):
        return kernel(v[0], v[1], *(v[k] for k in range(2, v.shape[0])), backend="jax")

    return np.asarray(jax.jacfwd(f)(jnp.asarray([x, y, *params], dtype=jnp.float64)))


@pytest.mark.parametrize("n", [0.3, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("ell", [(0.0, 0.0), (0.25, -0.1)])
def test_sersic_gradients_finite_at_the_centre(n, ell):
    params = _params_sersic(n, *ell)
    jac = _jacobian(SERSIC, 0.1, -0.2, params)  # exactly on the centre
    assert np.all(np.isfinite(jac)), jac
    # the cusp's one-sided slopes average to zero: no direction is preferred
    assert np.all(jac[[0, 1, 2, 3]] == 0.0)
    # the derivative in b_n at the centre is exact: d/db [I e^b] = I e^b
    np.testing.assert_allclose(jac[8], 1.7 * np.exp(params[6]), rtol=1e-15)


@pytest.mark.parametrize("n", [0.3, 1.0, 4.0])
def test_sersic_gradients_at_zero_ellipticity_match_differences(n):
    params = _params_sersic(n)
    x, y = 0.7, 0.4
    jac = _jacobian(SERSIC, x, y, params)
    assert np.all(np.isfinite(jac))
    # central differences of the numpy kernel, step 1e-6: truncation and rounding ~1e-9
    args = np.array([x, y, *params])
    for k in range(len(args)):
        up, down = args.copy(), args.copy()
        up[k] += 1e-6
        down[k] -= 1e-6
        fd = (SERSIC(*up, backend="numpy") - SERSIC(*down, backend="numpy")) / 2e-6
        assert abs(jac[k] - fd) <= 1e-7 * (1.0 + abs(fd)), (k, jac[k], fd)


def test_sersic_gradient_through_sersic_b_is_finite():
    def f(n):
        return SERSIC(0.1, -0.2, 0.1, -0.2, 0.0, 0.0, 0.9, n, sersic_b(n), 1.7, backend="jax")

    g = float(jax.grad(f)(jnp.float64(2.0)))
    # at the centre I = intensity exp(b_n(n)): dI/dn = I db/dn
    ref = float(f(jnp.float64(2.0))) * float(jax.grad(sersic_b)(jnp.float64(2.0)))
    assert np.isfinite(g) and abs(g - ref) <= 1e-14 * abs(ref)


@pytest.mark.parametrize("rb", [0.0, 1e-8, 0.05])
@pytest.mark.parametrize("ell", [(0.0, 0.0), (0.25, -0.1)])
@pytest.mark.parametrize("offset", [0.0, 1e-7, 0.3])  # on the centre, below the floor, outside
def test_core_sersic_gradients_finite(rb, ell, offset):
    params = _params_core(1.0 if offset else 4.0, rb, *ell)
    jac = _jacobian(CORE, 0.1 + offset, -0.2, params)
    assert np.all(np.isfinite(jac)), jac
    if offset == 0.0:
        assert np.all(jac[[0, 1, 2, 3]] == 0.0)  # the centre: no direction is preferred


def test_core_sersic_gradients_match_differences():
    params = _params_core(2.0, 0.05, 0.0, 0.0)
    x, y = 0.25, -0.05
    jac = _jacobian(CORE, x, y, params)
    args = np.array([x, y, *params])
    for k in range(len(args)):
        up, down = args.copy(), args.copy()
        up[k] += 1e-6
        down[k] -= 1e-6
        fd = (CORE(*up, backend="numpy") - CORE(*down, backend="numpy")) / 2e-6
        # central differences, step 1e-6: truncation and rounding ~1e-9 of the values (~5)
        assert abs(jac[k] - fd) <= 1e-7 * (1.0 + abs(fd)), (k, jac[k], fd)


@pytest.mark.parametrize("kernel", [SERSIC, CORE], ids=lambda k: k.name)
def test_backends_agree_at_and_near_the_centre(kernel):
    # centre (0, 0), so that tiny offsets survive: R^2 underflows to 0 at 1e-170, is subnormal
    # at 1e-160 (flushed to 0 by XLA on CPUs), and crosses the core-Sersic floor at R_FLOOR
    off = np.array([0.0, 1e-170, 1e-160, 1e-12, 1e-7, R_FLOOR, 1e-3, 0.5, 3.0])
    x, y = off, -0.5 * off
    for n in (0.5, 4.0):
        params = (
            _params_sersic(n, 0.2, 0.1) if kernel is SERSIC else _params_core(n, 0.05, 0.2, 0.1)
        )
        params[:2] = [0.0, 0.0]
        ref = kernel(x, y, *params, backend="numpy")
        assert np.all(np.isfinite(ref))
        for backend in BACKENDS:
            # the same operations on every backend: a few ulp of the exponent (< 30)
            np.testing.assert_allclose(
                kernel(x, y, *params, backend=backend), ref, rtol=1e-13, err_msg=backend
            )

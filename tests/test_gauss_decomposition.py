"""Multi-Gaussian decomposition: references independent of the code under test.

* the radial functions, ``b_n`` and the Mellin transforms against mpmath (roots, quadrature);
* the amplitudes against a 40-digit mpmath evaluation of the same projection (its own Mellin
  transforms, Gauss-Legendre instead of the midpoint rule, more aliases);
* deflections and convergences of the Gaussians against the exact profiles: the Sersic enclosed
  mass in closed form, the 3D profiles' projections and cylinder masses by scipy quadrature;
* the traced (JAX) path against the concrete one, and its gradients against finite differences.

The slow sweeps (``-m slow``, with ``-s`` to see the tables) print the measured numbers quoted in
``docs/decomposition.rst``.
"""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate
from scipy import special as sc

from twinlens.backend import jax_runtime
from twinlens.kernels import gauss_decomposition as gd
from twinlens.kernels import radial

R_TEST = np.geomspace(0.01, 20.0, 60)  # radii in units of the scale radius
SERSIC_N = (0.5, 1.0, 2.0, 4.0, 6.0)
GNFW_GAMMA = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)
CORE = (0.01, 0.1, 0.5, 1.0, 2.0)  # r_c / r_s


@pytest.fixture(scope="module")
def jax():
    return jax_runtime.load()


# --- independent references -------------------------------------------------------------------


def mp_sersic_b(n: float) -> mp.mpf:
    n = mp.mpf(n)
    return mp.findroot(
        lambda b: mp.gammainc(2 * n, 0, b, regularized=True) - mp.mpf(1) / 2, 2 * n - mp.mpf(1) / 3
    )


def sersic_exact(R: np.ndarray, n: float, k_eff: float = 1.0, R_eff: float = 1.0):
    """Convergence and deflection of the Sersic profile: the enclosed mass is
    ``2 pi n R_eff^2 k_eff e^b gamma(2n, b x^(1/n)) / b^(2n)``; b_n from mpmath."""
    b = float(mp_sersic_b(n))
    x = (R / R_eff) ** (1.0 / n)
    kappa = k_eff * np.exp(-b * (x - 1.0))
    mass = (
        2 * np.pi * n * R_eff**2 * k_eff * np.exp(b) * sc.gamma(2 * n) * sc.gammainc(2 * n, b * x)
    )
    return kappa, mass / b ** (2 * n) / (np.pi * R)


def rho_gnfw(gamma):
    return lambda r: r ** (-gamma) * (1.0 + r) ** (gamma - 3.0)


def rho_cored(c):
    return lambda r: 1.0 / ((r + c) * (1.0 + r) ** 2)


def projected_exact(rho, R: np.ndarray):
    """``kappa(R) = 2 int_0^inf rho(R cosh t) R cosh t dt`` and ``alpha = M_cyl / (pi R)``, with
    ``M_cyl = 4 pi [int_0^R r^2 rho + int_R^inf r^2 rho (1 - sqrt(1 - R^2/r^2))]``."""
    kap, alp = [], []
    opts = {"epsabs": 0.0, "epsrel": 1e-13, "limit": 400}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        for x in R:
            k = integrate.quad(lambda t, x=x: rho(x * np.cosh(t)) * x * np.cosh(t), 0, 40, **opts)[
                0
            ]

            def outer(r, x=x):
                u = x * x / (r * r)
                return r * r * rho(r) * u / (1.0 + np.sqrt(1.0 - u))

            m = integrate.quad(lambda r: r * r * rho(r), 0, x, **opts)[0]
            m += integrate.quad(outer, x, 10 * x + 10, **opts)[0]
            m += integrate.quad(outer, 10 * x + 10, np.inf, **opts)[0]
            kap.append(2.0 * k)
            alp.append(4.0 * m / x)  # 4 pi m / (pi x)
    return np.array(kap), np.array(alp)


def gaussians(amps, sigmas, R):
    """Convergence and deflection of round Gaussians with peak values ``amps``."""
    a, s = np.asarray(amps)[None, :], np.asarray(sigmas)[None, :]
    u = (np.asarray(R)[:, None] / s) ** 2 / 2
    kappa = np.sum(a * np.exp(-u), axis=1)
    alpha = np.sum(2 * a * s**2 * -np.expm1(-u), axis=1) / np.asarray(R)
    return kappa, alpha


# mpmath's own Mellin transforms (written from the definitions, not from radial.py)
def mp_sersic_mellin(n):
    n = mp.mpf(n)
    b = mp_sersic_b(n)
    return lambda z: mp.exp(b) * n * mp.power(b, -n * z) * mp.gamma(n * z)


def mp_gnfw_mellin(gamma):
    g = mp.mpf(gamma)
    return lambda z: mp.beta(z - g, 3 - z)


def mp_cored_mellin(c):
    c = mp.mpf(c)
    if c == 1:
        return lambda z: mp.gamma(z) * mp.gamma(3 - z) / 2
    return lambda z: (
        mp.pi / mp.sin(mp.pi * z) * ((mp.power(c, z - 1) - 1) / (1 - c) ** 2 + (1 - z) / (c - 1))
    )


def mp_amplitudes(mellin, lam, log_scale, n_sigma, sigma_range, dim, n_alias=6, dps=40):
    """The projection of the module docstring, evaluated in mpmath: ``D(omega)`` summed over
    ``|m| <= n_alias`` and integrated over one period by Gauss-Legendre on 8 panels."""
    h_f, k0 = gd.grid_indices(n_sigma, sigma_range)
    with mp.workdps(dps):
        lam, h, vs = mp.mpf(lam), mp.mpf(h_f), mp.mpf(log_scale)
        x, w = mp.gauss_quadrature(40, "legendre")
        half = mp.pi / h
        nodes = []
        for i in range(8):
            lo, hi = -half + 2 * half * i / 8, -half + 2 * half * (i + 1) / 8
            mid, rad = (lo + hi) / 2, (hi - lo) / 2
            nodes += [(mid + rad * xi, rad * wi) for xi, wi in zip(x, w, strict=True)]

        def log_k(z):
            return (z / 2 - 1) * mp.log(2) + mp.loggamma(z / 2)

        dvals = []
        for om, _ in nodes:
            lk0 = log_k(lam - 1j * om)
            num = den = 0
            for m in range(-n_alias, n_alias + 1):
                z = lam - 1j * (om + 2 * mp.pi * m / h)
                lk = log_k(z)
                r = mp.exp(2 * mp.re(lk - lk0))
                num += mellin(z) * mp.exp(-lk) * r * mp.expj(2 * mp.pi * m * vs / h)
                den += r
            dvals.append(num / den)
        out = []
        for j in range(n_sigma):
            v = vs + h * (k0 + j)
            tot = 0
            for (om, wq), d in zip(nodes, dvals, strict=True):
                f = 1
                if j == 0:
                    f += 1 / mp.expm1((dim - lam + 1j * om) * h)
                if j == n_sigma - 1:
                    f += 1 / mp.expm1((lam - (dim - 2) - 1j * om) * h)
                tot += wq * mp.re(d * mp.expj(om * v) * f)
            a = mp.exp(-lam * v) * h / (2 * mp.pi) * tot
            if dim == 3:
                a *= mp.sqrt(2 * mp.pi) * mp.exp(v)
            out.append(float(a))
    return np.array(out)


def amplitude_error(amps, ref, sigmas):
    """``max_j |A_j - A_ref_j| sigma_j / max_k |A_ref_k| sigma_k``: the error of each Gaussian's
    peak deflection (``~0.9 A sigma``) relative to the largest one."""
    s = np.asarray(sigmas)
    return float(np.max(np.abs(np.asarray(amps) - ref) * s) / np.max(np.abs(ref) * s))


def mp_case(kind: str, p: float):
    """(mpmath Mellin transform, lam, log scale, dim, n_sigma, sigma_range) for unit profiles."""
    if kind == "sersic":
        b = mp_sersic_b(p)
        return (mp_sersic_mellin(p), 1.0, -mp.log(2 * b) / 2, 2, 48, (3e-3, 1e3))
    if kind == "gnfw":
        return (mp_gnfw_mellin(p), (max(p, 1.0) + 3) / 2, 0, 3, 45, (1e-3, 1e3))
    return (mp_cored_mellin(p), 1.5, 0, 3, 45, (1e-3, 1e3))


DECOMPOSE = {
    "sersic": gd.decompose_sersic,
    "gnfw": gd.decompose_gnfw,
    "cored": gd.decompose_cored_nfw,
}


# --- special functions and profiles -------------------------------------------------------


def test_loggamma_stirling_matches_mpmath(jax):
    rng = np.random.default_rng(3)
    z = rng.uniform(0.02, 6, 40) + 1j * rng.uniform(-300, 300, 40)
    z = np.concatenate([z, [0.05 + 0j, 1.0 + 0j, 0.5 + 1e-9j, 2.5 - 0.1j]])
    ref = np.array([complex(mp.loggamma(mp.mpc(x))) for x in z])
    for out in (radial.loggamma_stirling(z, np), np.asarray(radial.loggamma(jax.numpy.asarray(z)))):
        # equal up to 2 pi i multiples: compare exp of the difference, and the real parts
        assert np.max(np.abs(np.expm1(out - ref))) < 3e-13
        assert np.max(np.abs(out.real - ref.real) / np.maximum(1.0, np.abs(ref))) < 4e-15


@pytest.mark.parametrize("n", [0.5, 0.75, 1.0, 2.5, 4.0, 8.0, 12.0])
def test_sersic_b_concrete_traced_and_derivative(jax, n):
    with mp.workdps(40):
        ref = mp_sersic_b(n)
        dref = mp.diff(mp_sersic_b, n)
    assert radial.sersic_b(n) == pytest.approx(float(ref), rel=3e-15)
    traced = jax.jit(radial.sersic_b)(jax.numpy.float64(n))
    assert float(traced) == pytest.approx(float(ref), rel=1e-14)
    grad = jax.grad(radial.sersic_b)(jax.numpy.float64(n))
    assert float(grad) == pytest.approx(float(dref), rel=1e-12)


def test_radial_profiles_continue_to_complex_radii():
    r = np.array([0.3 + 0.4j, 2.0 - 1.5j, 0.01 + 5j, 7.0 + 0j])
    b = mp_sersic_b(2.3)
    for x, got in zip(r, radial.sersic_convergence(r, 0.7, 1.3, 2.3), strict=True):
        want = 0.7 * mp.exp(-b * (mp.power(mp.mpc(x) / 1.3, 1 / mp.mpf(2.3)) - 1))
        assert abs(got - complex(want)) < 1e-13 * abs(want)
    for x, got in zip(r, radial.gnfw_density(r, 0.2, 1.7, 1.4), strict=True):
        y = mp.mpc(x) / 1.7
        want = 0.2 / (mp.power(y, 1.4) * mp.power(1 + y, 1.6))
        assert abs(got - complex(want)) < 1e-13 * abs(want)
    for x, got in zip(r, radial.cored_nfw_density(r, 0.2, 1.7, 0.3), strict=True):
        y = mp.mpc(x) / 1.7
        want = 0.2 / ((y + 0.3 / 1.7) * (1 + y) ** 2)
        assert abs(got - complex(want)) < 1e-13 * abs(want)


MELLIN_CASES = [
    ("sersic", radial.sersic_mellin, (0.8, 1.3, 0.7)),
    ("sersic", radial.sersic_mellin, (0.8, 1.3, 4.0)),
    ("gnfw", radial.gnfw_mellin, (0.3, 2.0, 1.6)),
    ("gnfw", radial.gnfw_mellin, (0.3, 2.0, 0.3)),
    ("cored", radial.cored_nfw_mellin, (0.3, 2.0, 0.2)),
    ("cored", radial.cored_nfw_mellin, (0.3, 2.0, 2.0)),  # r_c = r_s: the 0/0 form
    ("cored", radial.cored_nfw_mellin, (0.3, 2.0, 2.0 * (1 + 3e-9))),
    ("cored", radial.cored_nfw_mellin, (0.3, 2.0, 2.1)),
    ("cored", radial.cored_nfw_mellin, (0.3, 2.0, 1e-3)),
]


@pytest.mark.parametrize(("kind", "mellin", "params"), MELLIN_CASES)
def test_mellin_transforms_match_quadrature(jax, kind, mellin, params):
    """``int_0^inf r^(z-1) f(r) dr`` by mpmath tanh-sinh quadrature after ``r = s u / (1 - u)``,
    at complex z inside each strip, on numpy and on JAX."""
    zs = {
        "sersic": [1.0 + 0.5j, 2.0 - 1.5j, 0.7 + 2.0j],
        "gnfw": [params[2] + 0.7 + 0.5j, params[2] + 0.5 - 1.0j],
        "cored": [0.5 + 0.7j, 1.5 - 2.0j, 2.2 + 0.3j],
    }[kind]
    with mp.workdps(30):
        norm, s, p = (mp.mpf(x) for x in params)
        if kind == "sersic":
            b = mp_sersic_b(p)

            def f(r):
                return norm * mp.exp(-b * (mp.power(r / s, 1 / p) - 1))
        elif kind == "gnfw":

            def f(r):
                return norm / (mp.power(r / s, p) * mp.power(1 + r / s, 3 - p))
        else:

            def f(r):
                return norm / ((r / s + p / s) * (1 + r / s) ** 2)

        for z in zs:

            def integrand(u, z=z):
                r = s * u / (1 - u)
                return mp.power(r, z - 1) * f(r) * s / (1 - u) ** 2

            want = complex(mp.quad(integrand, [0, 0.25, 0.5, 0.75, 1]))
            got_np = complex(mellin(np.complex128(z), *params))
            jparams = [jax.numpy.float64(x) for x in params]
            got_jax = complex(mellin(jax.numpy.complex128(z), *jparams))
            assert abs(got_np - want) < 1e-13 * abs(want), (z, got_np, want)
            assert abs(got_jax - want) < 1e-13 * abs(want), (z, got_jax, want)


# --- amplitudes against the mpmath reference ----------------------------------------------------


@pytest.mark.parametrize(("kind", "p"), [("sersic", 4.0), ("gnfw", 1.5), ("cored", 1.0)])
def test_amplitudes_match_mpmath_on_concrete_and_traced_paths(jax, kind, p):
    mellin, lam, log_scale, dim, n_sigma, rng = mp_case(kind, p)
    ref = mp_amplitudes(mellin, lam, log_scale, n_sigma, rng, dim)
    amps, sigmas = DECOMPOSE[kind](1.0, 1.0, p)
    assert isinstance(amps, np.ndarray)
    assert amplitude_error(amps, ref, sigmas) < 1e-13
    # relative to the largest amplitude, the other reading of the requirement
    assert np.max(np.abs(amps - ref)) < 1e-12 * np.max(np.abs(ref))
    traced, tsig = jax.jit(DECOMPOSE[kind])(1.0, 1.0, jax.numpy.float64(p))
    assert amplitude_error(np.asarray(traced), ref, sigmas) < 1e-13
    np.testing.assert_allclose(np.asarray(tsig), sigmas, rtol=1e-14)


def test_sersic_half_is_one_gaussian_exactly():
    """n = 1/2 is ``2 k_eff exp(-R^2 ln2 / R_eff^2)`` (b = ln 2): one Gaussian at a node."""
    amps, sigmas = gd.decompose_sersic(0.3, 1.7, 0.5)
    j = int(np.argmax(amps))
    assert sigmas[j] == pytest.approx(1.7 / math.sqrt(2 * math.log(2)), rel=1e-15)
    assert amps[j] == pytest.approx(0.6, rel=1e-14)
    assert np.max(np.abs(np.delete(amps, j))) < 1e-13 * amps[j]


def mp_euler_density(profile, sigmas, terms: int, dps: int = 40) -> np.ndarray:
    """Shajib's Euler sum ``2 sum_k (-1)^k 10^(M/3) xi_k Re f(sigma sqrt(2 beta_k))`` with
    every number (weights included) in mpmath."""
    m = terms
    with mp.workdps(dps):
        xi = [mp.mpf(1) / 2] + [mp.mpf(1)] * m + [mp.mpf(0)] * m
        xi[2 * m] = mp.mpf(2) ** -m
        for k in range(1, m):
            xi[2 * m - k] = xi[2 * m - k + 1] + mp.binomial(m, k) / mp.mpf(2) ** m
        a = m * mp.log(10) / 3
        scale = mp.power(10, mp.mpf(m) / 3)
        out = []
        for s in sigmas:
            t = [
                (-1) ** k * scale * xi[k] * mp.re(profile(s * mp.sqrt(2 * (a + 1j * mp.pi * k))))
                for k in range(2 * m + 1)
            ]
            out.append(float(2 * mp.fsum(t)))
    return np.array(out)


def test_euler_float64_loses_digits_that_the_projection_keeps():
    """Shajib's Euler sum in float64 against the same sum at 40 digits; the loss grows like
    10^(M/3), far above the projection's 1e-15 on the same scale."""
    n = 4.0
    b = mp_sersic_b(n)
    sig = gd.sigma_grid(1.0, 24, (1e-2, 1e2))
    losses = {}
    for terms in (10, 20):
        got = gd.euler_density(lambda r: radial.sersic_convergence(r, 1.0, 1.0, n), sig, terms)
        ref = mp_euler_density(lambda r: mp.exp(-b * (mp.power(r, 1 / mp.mpf(n)) - 1)), sig, terms)
        losses[terms] = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
    assert 1e-13 < losses[10] < 1e-9
    assert 1e-10 < losses[20] < 1e-6
    assert losses[20] > 100 * losses[10]


# --- deflections, convergences and masses against the exact profiles ---------------------------


@pytest.mark.parametrize("n", SERSIC_N)
def test_sersic_deflection_and_convergence(n):
    amps, sigmas = gd.decompose_sersic(0.9, 1.4, n)
    R = 1.4 * np.geomspace(0.01, 20.0, 400)
    kappa, alpha = gaussians(amps, sigmas, R)
    k_ref, a_ref = sersic_exact(R, n, 0.9, 1.4)
    assert np.max(np.abs(alpha / a_ref - 1)) < 1e-6
    # relative where kappa >= k_eff (inside R_eff), in units of k_eff outside
    assert np.max(np.abs(kappa - k_ref) / np.maximum(k_ref, 0.9)) < 5e-7


@pytest.mark.parametrize("gamma", GNFW_GAMMA)
def test_gnfw_deflection_and_convergence(gamma):
    amps, sigmas = gd.decompose_gnfw(1.0, 1.0, gamma)
    kappa, alpha = gaussians(amps, sigmas, R_TEST)
    k_ref, a_ref = projected_exact(rho_gnfw(gamma), R_TEST)
    assert np.max(np.abs(alpha / a_ref - 1)) < 1e-6
    assert np.max(np.abs(kappa / k_ref - 1)) < 5e-6


@pytest.mark.parametrize("core", CORE)
def test_cored_nfw_deflection_and_convergence(core):
    amps, sigmas = gd.decompose_cored_nfw(1.0, 1.0, core)
    kappa, alpha = gaussians(amps, sigmas, R_TEST)
    k_ref, a_ref = projected_exact(rho_cored(core), R_TEST)
    assert np.max(np.abs(alpha / a_ref - 1)) < 1e-6
    assert np.max(np.abs(kappa / k_ref - 1)) < 5e-6


def test_units_scale_out():
    """Scaling the radius by s and the normalisation by f scales sigmas by s and amplitudes
    by f (times s for the projected 3D profiles)."""
    a1, s1 = gd.decompose_gnfw(1.0, 1.0, 1.3)
    a2, s2 = gd.decompose_gnfw(0.25, 7.0, 1.3)
    np.testing.assert_allclose(s2, 7.0 * s1, rtol=1e-14)
    np.testing.assert_allclose(a2, 0.25 * 7.0 * a1, rtol=1e-9, atol=1e-13 * np.max(a2))
    b1, t1 = gd.decompose_sersic(1.0, 1.0, 3.0)
    b2, t2 = gd.decompose_sersic(0.4, 2.5, 3.0)
    np.testing.assert_allclose(t2, 2.5 * t1, rtol=1e-14)
    np.testing.assert_allclose(b2, 0.4 * b1, rtol=1e-9, atol=1e-13 * np.max(b2))


@pytest.mark.parametrize("n", [2.0, 4.0])
def test_sersic_total_mass(n):
    """Total mass of the Gaussians ``2 pi sum A sigma^2`` against the closed form."""
    amps, sigmas = gd.decompose_sersic(0.8, 1.2, n)
    b = float(mp_sersic_b(n))
    total = 2 * np.pi * n * 1.2**2 * 0.8 * np.exp(b) * sc.gamma(2 * n) / b ** (2 * n)
    assert 2 * np.pi * np.sum(amps * sigmas**2) == pytest.approx(total, rel=1e-8)
    assert float(radial.sersic_total_mass(0.8, 1.2, n)) == pytest.approx(total, rel=1e-14)


def test_three_d_enclosed_mass_matches_quadrature():
    """Spherical (3D) mass inside r of the 3D Gaussians against ``4 pi int r^2 rho``."""
    for rho, decomposition in (
        (rho_gnfw(1.7), gd.decompose_gnfw(1.0, 1.0, 1.7)),
        (rho_cored(0.3), gd.decompose_cored_nfw(1.0, 1.0, 0.3)),
    ):
        amps2d, sigmas = decomposition
        a3 = amps2d / (np.sqrt(2 * np.pi) * sigmas)
        for r in (0.01, 0.3, 1.0, 5.0, 20.0):
            x = r / sigmas
            shape = sc.erf(x / np.sqrt(2)) - np.sqrt(2 / np.pi) * x * np.exp(-x * x / 2)
            inside = (2 * np.pi) ** 1.5 * sigmas**3 * a3 * shape
            want = 4 * np.pi * integrate.quad(lambda t, f=rho: t * t * f(t), 0, r, epsrel=1e-13)[0]
            assert np.sum(inside) == pytest.approx(want, rel=1e-6)


# --- the traced path ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "p", "rtol_exact"), [("sersic", 2.5, 1e-5), ("gnfw", 1.2, 1e-5), ("cored", 0.4, 1e-5)]
)
def test_jit_grad_match_finite_differences(jax, kind, p, rtol_exact):
    """d alpha(R = 1.3) / d(index | slope | core) through the traced path: finite, equal to
    central differences of the same jitted function, and to the derivative of the exact
    profile's deflection."""
    jnp = jax.numpy
    decompose = DECOMPOSE[kind]
    R = 1.3

    def alpha(x):
        amps, sigmas = decompose(1.0, 1.0, x)
        return jnp.sum(2 * amps * sigmas**2 * -jnp.expm1(-(R**2) / (2 * sigmas**2))) / R

    f = jax.jit(alpha)
    g = float(jax.jit(jax.grad(alpha))(jnp.float64(p)))
    assert math.isfinite(g)
    step = 1e-4 * p
    fd = (float(f(p + step)) - float(f(p - step))) / (2 * step)
    assert g == pytest.approx(fd, rel=1e-7)

    # the exact deflection's derivative, by central differences of the references
    if kind == "sersic":

        def exact(x):
            return sersic_exact(np.array([R]), x)[1][0]
    else:
        rho = rho_gnfw if kind == "gnfw" else rho_cored

        def exact(x):
            return projected_exact(rho(x), np.array([R]))[1][0]

    d = 1e-3 * p
    fd_exact = (exact(p + d) - exact(p - d)) / (2 * d)
    assert g == pytest.approx(fd_exact, rel=rtol_exact)


def test_vmap_over_the_sersic_index(jax):
    jnp = jax.numpy
    ns = jnp.array([0.7, 1.0, 3.0])
    amps, sigmas = jax.vmap(lambda n: gd.decompose_sersic(1.0, 1.0, n))(ns)
    assert amps.shape == sigmas.shape == (3, 48)
    for i, n in enumerate([0.7, 1.0, 3.0]):
        a, s = gd.decompose_sersic(1.0, 1.0, n)
        np.testing.assert_allclose(np.asarray(sigmas[i]), s, rtol=1e-14)
        assert amplitude_error(np.asarray(amps[i]), a, s) < 1e-13


def test_concrete_jax_arrays_take_the_concrete_path(jax):
    jnp = jax.numpy
    amps, sigmas = gd.decompose_gnfw(jnp.float64(1.0), jnp.float64(1.0), jnp.float64(1.0))
    assert isinstance(amps, jax.Array) and isinstance(sigmas, jax.Array)
    a, s = gd.decompose_gnfw(1.0, 1.0, 1.0)
    np.testing.assert_array_equal(np.asarray(amps), a)
    np.testing.assert_array_equal(np.asarray(sigmas), s)


# --- the generic entry points and argument checks ----------------------------------------------


def test_generic_decompose_matches_the_named_profiles():
    a1, s1 = gd.decompose(
        radial.sersic_mellin, (1.0, 2.0, 1.7), lambda k, r, n: gd.sersic_scale(r, n), 1.0
    )
    a2, s2 = gd.decompose_sersic(1.0, 2.0, 1.7)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(s1, s2)
    b1, t1 = gd.decompose_3d(radial.gnfw_mellin, (1.0, 1.0, 0.5), 1.0, 2.0)
    b2, t2 = gd.decompose_gnfw(1.0, 1.0, 0.5)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(t1, t2)


def test_grid_layout():
    h, k0 = gd.grid_indices(45, (1e-3, 1e3))
    assert h == pytest.approx(math.log(1e6) / 44, rel=1e-15) and k0 == -22
    s = gd.sigma_grid(2.0, 45, (1e-3, 1e3))
    np.testing.assert_allclose(np.diff(np.log(s)), h, rtol=1e-12)
    assert np.min(np.abs(s - 2.0)) < 1e-14  # the scale is a node
    assert s[0] == pytest.approx(2e-3, rel=h) and s[-1] == pytest.approx(2e3, rel=h)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: gd.decompose_sersic(1.0, 1.0, 0.4), "Sersic index"),
        (lambda: gd.decompose_sersic(1.0, 0.0, 1.0), "R_eff"),
        (lambda: gd.decompose_gnfw(1.0, 1.0, 3.0), "gamma"),
        (lambda: gd.decompose_gnfw(1.0, -1.0, 1.0), "r_s"),
        (lambda: gd.decompose_cored_nfw(1.0, 1.0, 0.0), "core radius"),
        (lambda: gd.decompose_sersic(1.0, 1.0, 1.0, n_sigma=1), "n_sigma"),
        (lambda: gd.decompose_sersic(1.0, 1.0, 1.0, sigma_range=(2.0, 10.0)), "sigma_range"),
    ],
)
def test_arguments_are_checked(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- slow sweeps: the numbers in docs/decomposition.rst ------------------------------------


def _needed(decompose, k_ref, a_ref, R, tol=1e-6):
    for n_sigma in range(12, 100):
        amps, sigmas = decompose(n_sigma)
        if np.max(np.abs(gaussians(amps, sigmas, R)[1] / a_ref - 1)) < tol:
            return n_sigma
    return None


@pytest.mark.slow
def test_sweep_settings_and_accuracy_table():
    """For each profile: deflection and convergence errors at the defaults over 0.01-20 scale
    radii, and the smallest n_sigma (default range) meeting 1e-6 in the deflection."""
    rows = []
    R = np.geomspace(0.01, 20.0, 120)
    for n in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0):
        k_ref, a_ref = sersic_exact(R, n)
        amps, sigmas = gd.decompose_sersic(1.0, 1.0, n)
        kap, alp = gaussians(amps, sigmas, R)
        need = _needed(lambda m, n=n: gd.decompose_sersic(1.0, 1.0, n, n_sigma=m), k_ref, a_ref, R)
        rows.append(
            (f"sersic n={n}", np.max(np.abs(alp / a_ref - 1)),
             np.max(np.abs(kap - k_ref) / np.maximum(k_ref, 1.0)), need)
        )  # fmt: skip
        if n == 0.5 or n >= 0.85:
            assert rows[-1][1] < 1e-6, rows[-1]
    for kind, params in (("gnfw", (*GNFW_GAMMA, 2.8)), ("cored", (1e-3, *CORE, 10.0))):
        for p in params:
            rho = rho_gnfw(p) if kind == "gnfw" else rho_cored(p)
            k_ref, a_ref = projected_exact(rho, R)
            amps, sigmas = DECOMPOSE[kind](1.0, 1.0, p)
            kap, alp = gaussians(amps, sigmas, R)
            need = _needed(
                lambda m, p=p, kind=kind: DECOMPOSE[kind](1.0, 1.0, p, n_sigma=m), k_ref, a_ref, R
            )
            rows.append(
                (f"{kind} {p}", np.max(np.abs(alp / a_ref - 1)), np.max(np.abs(kap / k_ref - 1)),
                 need)
            )  # fmt: skip
            assert rows[-1][1] < 1e-6, rows[-1]
    print("\nkappa: Sersic |dk| / max(k, k_eff); 3D profiles |dk| / k")
    print("profile            alpha rel   kappa   n_sigma for 1e-6")
    for name, ea, ek, need in rows:
        print(f"{name:18s} {ea:9.1e} {ek:9.1e} {need!s:>8}")


@pytest.mark.slow
def test_sweep_amplitudes_against_mpmath(jax):
    """Worst amplitude error (peak-deflection scale, see amplitude_error) of the concrete and
    traced paths against the mpmath reference, over the parameter ranges."""
    cases = [("sersic", n) for n in (0.5, 0.6, 1.0, 2.0, 4.0, 6.0, 8.0)]
    cases += [("gnfw", g) for g in (0.0, 0.7, 1.0, 1.9, 2.5)]
    cases += [("cored", c) for c in (0.01, 0.3, 0.95, 1.0, 1.02, 3.0)]
    worst = {"concrete": 0.0, "traced": 0.0, "largest": 0.0}
    for kind, p in cases:
        mellin, lam, log_scale, dim, n_sigma, rng = mp_case(kind, p)
        ref = mp_amplitudes(mellin, lam, log_scale, n_sigma, rng, dim)
        amps, sigmas = DECOMPOSE[kind](1.0, 1.0, p)
        traced = np.asarray(jax.jit(DECOMPOSE[kind])(1.0, 1.0, jax.numpy.float64(p))[0])
        errs = (amplitude_error(amps, ref, sigmas), amplitude_error(traced, ref, sigmas))
        largest = max(np.max(np.abs(a - ref)) / np.max(np.abs(ref)) for a in (amps, traced))
        print(f"{kind} {p}: concrete {errs[0]:.1e} traced {errs[1]:.1e}; of max|A| {largest:.1e}")
        worst["concrete"] = max(worst["concrete"], errs[0])
        worst["traced"] = max(worst["traced"], errs[1])
        worst["largest"] = max(worst["largest"], largest)
    print("worst:", worst)
    assert worst["concrete"] < 1e-12 and worst["traced"] < 1e-12 and worst["largest"] < 1e-10


@pytest.mark.slow
def test_sweep_euler_float64_loss():
    """Shajib's Euler sum: float64 against mpmath at the same M (the rounding loss), mpmath at
    M against M = 40 (the method's own error), and the deflection error of the Euler-sampled
    decomposition against the projection on the same 48-Gaussian grid."""
    b1, b4 = mp_sersic_b(1.0), mp_sersic_b(4.0)
    cases = [
        ("sersic n=1", lambda r: radial.sersic_convergence(r, 1.0, 1.0, 1.0),
         lambda r: mp.exp(-b1 * (r - 1)), 1.0),
        ("sersic n=4", lambda r: radial.sersic_convergence(r, 1.0, 1.0, 4.0),
         lambda r: mp.exp(-b4 * (mp.power(r, mp.mpf(1) / 4) - 1)), 1.0),
        ("gnfw g=1 (3D)", lambda r: radial.gnfw_density(r, 1.0, 1.0, 1.0),
         lambda r: 1 / (r * (1 + r) ** 2), 1.0),
    ]  # fmt: skip
    sig = gd.sigma_grid(1.0, 24, (1e-2, 1e2))
    print("\nprofile          M   float64 loss: of max|a|, per amplitude   Euler error (M vs 40)")
    for name, f64, fmp, _ in cases:
        exact = mp_euler_density(fmp, sig, 40, dps=60)
        last = 0.0
        for terms in (10, 15, 20, 25):
            ref = mp_euler_density(fmp, sig, terms, dps=60)
            got = gd.euler_density(f64, sig, terms)
            loss = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
            live = np.abs(ref) > 1e-12 * np.max(np.abs(ref))  # some underflow to 0 at large sigma
            per = np.max(np.abs(got - ref)[live] / np.abs(ref[live]))
            disc = np.max(np.abs(ref - exact)) / np.max(np.abs(exact))
            print(f"{name:15s} {terms:2d}   {loss:9.1e} {per:9.1e}   {disc:21.1e}")
            assert loss > last
            last = loss
        assert last > 1e-8  # M = 25: the cancellation dominates
    R = np.geomspace(0.01, 20.0, 200)
    for n in (1.0, 4.0):
        a_ref = sersic_exact(R, n)[1]
        scale = float(gd.sersic_scale(1.0, n))
        amps, sigmas = gd.decompose_euler(
            lambda r, n=n: radial.sersic_convergence(r, 1.0, 1.0, n), scale, terms=15
        )
        e_euler = np.max(np.abs(gaussians(amps, sigmas, R)[1] / a_ref - 1))
        amps, sigmas = gd.decompose_sersic(1.0, 1.0, n)
        e_proj = np.max(np.abs(gaussians(amps, sigmas, R)[1] / a_ref - 1))
        print(
            f"sersic n={n}: deflection error, Euler samples {e_euler:.1e}, projection {e_proj:.1e}"
        )
        assert e_proj < 1e-2 * e_euler

"""Spherical Jeans kinematics against independent references: the singular isothermal sphere's
closed form, mpmath solutions of the Jeans equation, and numba against JAX."""

from __future__ import annotations

import functools
import itertools
import math

import mpmath as mp
import numpy as np
import pytest

import twinlens.kinematics as K
from twinlens.backend import jax_runtime
from twinlens.cosmology import ARCSEC, LensDistances
from twinlens.kinematics import jeans

jax = jax_runtime.load()
jnp = jax.numpy

DIST = LensDistances(0.5, 2.0, 1200.0, 1700.0, 1100.0)
C_KM_S = 299_792.458


def sis_sigma(theta_e: float) -> float:
    """sigma^2 = theta_E c^2 D_s / (4 pi D_ds), theta_E in radians."""
    return math.sqrt(theta_e * ARCSEC * C_KM_S**2 * DIST.d_s / (4.0 * math.pi * DIST.d_ds))


def mp_anisotropy(kind, par):
    """``(f, beta)`` of an anisotropy for the Jeans equation's integrating factor:
    ``nu sigma_r^2 f = int_r^inf f nu G M / s^2 ds`` (``f = exp(2 int beta / r dr)``)."""
    if kind == "iso":
        return (lambda r: 1), (lambda r: 0)
    if kind == "om":
        return (lambda r: r**2 + par**2), (lambda r: r**2 / (r**2 + par**2))
    return (lambda r: r ** (2 * par)), (lambda r: par)


def mp_jeans(radius, gamma, a, kind, par=0.0):
    """(sigma^2 I, I) of a power law (G M = r^(3-gamma)) and Hernquist-shaped light
    (r/a)^-1 (1 + r/a)^-3, by mpmath: sigma_r^2 nu from the Jeans equation's radial integral,
    then projected along the line of sight (a double integral, no kernel)."""
    with mp.workdps(25):
        gamma, a, radius, par = (mp.mpf(v) for v in (gamma, a, radius, par))

        def nu(r):
            return (r / a) ** -1 * (1 + r / a) ** -3

        f, beta = mp_anisotropy(kind, par)

        def nu_sr2(r):
            inner = mp.quad(lambda s: f(s) * nu(s) * s ** (3 - gamma) / s**2, [r, 10 * r, mp.inf])
            return inner / f(r)

        def los(y):  # r = R cosh y: dr r / sqrt(r^2 - R^2) = r dy
            r = radius * mp.cosh(y)
            return (1 - beta(r) * radius**2 / r**2) * nu_sr2(r) * r

        cuts = [0, 1, 3, 8, mp.inf]
        num = 2 * mp.quad(los, cuts)
        den = 2 * mp.quad(lambda y: nu(radius * mp.cosh(y)) * radius * mp.cosh(y), cuts)
        return float(num), float(den)


def call_radial(radius, gamma, a, kind, par, backend="numpy"):
    if kind == "iso":
        z, w = jeans.gauss_legendre_unit(jeans.N_Y)
        return jeans.ISOTROPIC(radius, gamma, a, 1.0, 3.0, z, w, backend=backend)
    if kind == "om":
        z, w = jeans.gauss_legendre_unit(jeans.N_Y)
        return jeans.OSIPKOV_MERRITT(radius, gamma, a, 1.0, 3.0, par, z, w, backend=backend)
    z, t, w = jeans.constant_beta_nodes()
    return jeans.CONSTANT_BETA(radius, gamma, a, 1.0, 3.0, par, z, t, w, backend=backend)


CASES = [
    ("iso", 0.0),
    ("om", 0.8),
    ("om", 5.0),
    ("beta", -0.7),
    ("beta", 0.4),
    ("beta", 0.8),
]


#: mp_jeans(R, 2.1, 1.3, kind, par) at R = 0.05, 1, 4 arcsec, as (sigma^2 I, I); recomputed by
#: test_radial_table_is_mpmath (slow)
MP_TABLE = {
    ("iso", 0.0): [
        (4.918821372236382, 6.406421219722482),
        (0.18082568847639244, 0.5314791884266019),
        (0.00812205123225456, 0.03419291437603124),
    ],
    ("om", 0.8): [
        (5.909254325787719, 6.406421219722482),
        (0.21589530631718576, 0.5314791884266019),
        (0.005012041012792905, 0.03419291437603124),
    ],
    ("om", 5.0): [
        (4.961532389240508, 6.406421219722482),
        (0.19589422293308154, 0.5314791884266019),
        (0.008598510352848077, 0.03419291437603124),
    ],
    ("beta", -0.7): [
        (3.4193325294275385, 6.406421219722482),
        (0.18018034035257643, 0.5314791884266019),
        (0.008856076370953423, 0.03419291437603124),
    ],
    ("beta", 0.4): [
        (7.170326357952805, 6.406421219722482),
        (0.1783394640372928, 0.5314791884266019),
        (0.007343306415589825, 0.03419291437603124),
    ],
    ("beta", 0.8): [
        (13.349157759918667, 6.406421219722482),
        (0.16625853459939713, 0.5314791884266019),
        (0.005909648786936516, 0.03419291437603124),
    ],
}
MP_RADII = (0.05, 1.0, 4.0)


@pytest.mark.parametrize(("kind", "par"), CASES)
def test_radial_against_mpmath_jeans(kind, par):
    s2i, inten = call_radial(np.array(MP_RADII), 2.1, 1.3, kind, par)
    for k, (num, den) in enumerate(MP_TABLE[kind, par]):
        # measured: below 1e-13 relative; the target is 1e-8
        assert abs(s2i[k] / num - 1) < 1e-10
        assert abs(inten[k] / den - 1) < 1e-10


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "par"), CASES)
def test_radial_table_is_mpmath(kind, par):
    for radius, row in zip(MP_RADII, MP_TABLE[kind, par], strict=True):
        np.testing.assert_allclose(mp_jeans(radius, 2.1, 1.3, kind, par), row, rtol=1e-14)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "par"), CASES)
@pytest.mark.parametrize(("gamma", "a"), [(1.6, 0.2), (1.2, 3.0), (2.8, 0.5), (2.5, 40.0)])
def test_radial_against_mpmath_jeans_extremes(kind, par, gamma, a):
    radii = np.array([0.003, 0.5, 15.0])
    s2i, inten = call_radial(radii, gamma, a, kind, par)
    for k, radius in enumerate(radii):
        num, den = mp_jeans(radius, gamma, a, kind, par)
        assert abs(s2i[k] / num - 1) < 1e-8
        assert abs(inten[k] / den - 1) < 1e-8


def test_hernquist_projection_matches_closed_form():
    radii = np.array([0.01, 0.3, 2.5, 40.0])
    a = 0.7
    _, inten = K.projected_dispersion(radii, K.PowerLawMass(), K.Hernquist(a), K.Isotropic(), DIST)
    ref = jeans.hernquist_surface_brightness(radii, a)
    np.testing.assert_allclose(inten, ref, rtol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_sis_with_r2_tracer_is_flat(backend):
    theta_e = 1.3
    radii = np.geomspace(1e-3, 30.0, 7)
    s2i, inten = K.projected_dispersion(
        radii,
        K.PowerLawMass(theta_e, 2.0),
        K.PowerLawTracer(2.0),
        K.Isotropic(),
        DIST,
        backend=backend,
    )
    sigma = np.sqrt(np.asarray(s2i) / np.asarray(inten))
    # measured: below 1e-13 relative
    np.testing.assert_allclose(sigma, sis_sigma(theta_e), rtol=1e-10)


def test_point_mass_is_gamma_three_limit():
    radii = np.array([0.2, 1.0])
    light, ani = K.Hernquist(1.0), K.OsipkovMerritt(1.5)
    pm, _ = K.projected_dispersion(radii, K.PointMass(0.9), light, ani, DIST)
    near, _ = K.projected_dispersion(radii, K.PowerLawMass(0.9, 3.0 - 1e-7), light, ani, DIST)
    np.testing.assert_allclose(pm, near, rtol=1e-5)


APERTURES = [
    (K.CircularAperture(1.0), None),
    (K.CircularAperture(0.6), K.GaussianSeeing(0.8)),
    (K.Slit(1.5, 0.8), None),
    (K.Slit(1.5, 0.8), K.GaussianSeeing(0.5)),
]
# constant beta sums over 40 times more nodes: its slow-to-compile slit cases run in tox -e slow
ANISOTROPIES = [
    K.Isotropic(),
    pytest.param(K.ConstantBeta(0.3), marks=pytest.mark.slow),
    K.OsipkovMerritt(0.9),
]


def test_numba_and_jax_agree_constant_beta_circle():
    args = (K.PowerLawMass(1.2, 2.1), K.Hernquist(0.9), K.ConstantBeta(0.3))
    see = (K.CircularAperture(0.6), DIST, K.GaussianSeeing(0.8))
    a = K.velocity_dispersion(*args, *see, backend="numba")
    b = float(K.velocity_dispersion(*args, *see, backend="jax"))
    assert abs(a / b - 1) < 1e-10


@pytest.mark.parametrize(("aperture", "seeing"), APERTURES)
@pytest.mark.parametrize("anisotropy", ANISOTROPIES)
def test_numba_and_jax_agree(aperture, seeing, anisotropy):
    args = (K.PowerLawMass(1.2, 2.1), K.Hernquist(0.9), anisotropy, aperture, DIST, seeing)
    a = K.velocity_dispersion(*args, backend="numba")
    b = float(K.velocity_dispersion(*args, backend="jax"))
    assert abs(a / b - 1) < 1e-10  # measured: a few 1e-15


@pytest.mark.parametrize(("aperture", "seeing"), APERTURES)
def test_sis_with_r2_tracer_any_aperture(aperture, seeing):
    # the r^-2 tracer has infinite light, but the weights are finite in every aperture
    v = K.velocity_dispersion(
        K.PowerLawMass(1.1), K.PowerLawTracer(2.0), K.Isotropic(), aperture, DIST, seeing
    )
    assert abs(v / sis_sigma(1.1) - 1) < 1e-10


def test_aperture_converges_in_its_orders(monkeypatch):
    """The aperture sums at the default orders against twice the orders (measured against four
    times: below 3e-10 relative)."""
    from twinlens.kinematics import aperture as ap

    mass, light = K.PowerLawMass(1.2, 2.3), K.Hernquist(0.5)
    cases = [
        (K.CircularAperture(1.0), K.GaussianSeeing(0.3)),
        (K.Slit(2.0, 0.5), K.GaussianSeeing(0.3)),
    ]
    base = [
        K.velocity_dispersion(mass, light, K.Isotropic(), c, DIST, s, "numpy") for c, s in cases
    ]
    for name in ("N_RADIAL", "N_RAYS", "N_ANGLE"):
        monkeypatch.setattr(ap, name, 2 * getattr(ap, name))
    fine = [
        K.velocity_dispersion(mass, light, K.Isotropic(), c, DIST, s, "numpy") for c, s in cases
    ]
    np.testing.assert_allclose(base[0], fine[0], rtol=1e-9)
    np.testing.assert_allclose(base[1], fine[1], rtol=1e-9)


def test_jax_jit_vmap_grad():
    def sigma(theta_e, gamma, r_ani, fwhm, backend="jax"):
        return K.velocity_dispersion(
            K.PowerLawMass(theta_e, gamma),
            K.Hernquist(0.9),
            K.OsipkovMerritt(r_ani),
            K.CircularAperture(1.0),
            DIST,
            K.GaussianSeeing(fwhm),
            backend=backend,
        )

    x = (1.2, 2.1, 0.9, 0.7)
    direct = sigma(*x, backend="numba")
    jitted = jax.jit(sigma)(*map(jnp.float64, x))
    assert abs(float(jitted) / direct - 1) < 1e-10
    gammas = jnp.array([1.8, 2.0, 2.2])
    batch = jax.vmap(lambda g: sigma(1.2, g, 0.9, 0.7))(gammas)
    for g, v in zip([1.8, 2.0, 2.2], batch, strict=True):
        ref = sigma(1.2, g, 0.9, 0.7, backend="numba")
        assert abs(float(v) / ref - 1) < 1e-10
    grads = jax.grad(lambda *p: sigma(*p), argnums=(0, 1, 2, 3))(*map(jnp.float64, x))
    for k, g in enumerate(grads):
        h = 1e-5
        up, down = list(x), list(x)
        up[k] += h
        down[k] -= h
        fd = (float(sigma(*up)) - float(sigma(*down))) / (2 * h)
        assert np.isfinite(float(g))
        assert abs(float(g) - fd) <= 1e-6 * max(abs(fd), 1.0)


def test_constant_beta_grad_in_beta():
    def sigma(beta):
        return K.velocity_dispersion(
            K.PowerLawMass(1.0, 2.0),
            K.Hernquist(1.0),
            K.ConstantBeta(beta),
            K.CircularAperture(1.0),
            DIST,
            None,
            backend="jax",
        )

    g = float(jax.grad(sigma)(jnp.float64(0.2)))
    fd = (float(sigma(0.2 + 1e-5)) - float(sigma(0.2 - 1e-5))) / 2e-5
    assert abs(g - fd) <= 1e-6 * abs(fd)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: K.PowerLawMass(1.0, 3.0), "gamma"),
        (lambda: K.PowerLawMass(1.0, 1.0), "gamma"),
        (lambda: K.PowerLawMass(-1.0), "theta_e"),
        (lambda: K.ConstantBeta(1.0), "beta"),
        (lambda: K.OsipkovMerritt(0.0), "r_ani"),
        (lambda: K.Hernquist(-0.1), "a"),
        (lambda: K.CircularAperture(-1.0), "radius"),
        (lambda: K.Slit(1.0, 0.0), "width"),
        (lambda: K.GaussianSeeing(float("nan")), "fwhm"),
        (lambda: K.PowerLawTracer(0.5), "slope"),
    ],
)
def test_bad_parameters_name_themselves(build, name):
    with pytest.raises(ValueError, match=name):
        build()


def test_bad_radius_and_diverging_tracer():
    with pytest.raises(ValueError, match="radius"):
        K.projected_dispersion(
            np.array([0.0, 1.0]), K.PowerLawMass(), K.Hernquist(), K.Isotropic(), DIST
        )
    with pytest.raises(ValueError, match="diverges"):
        K.projected_dispersion(
            np.array([1.0]),
            K.PowerLawMass(1.0, 2.0),
            K.PowerLawTracer(2.0),
            K.OsipkovMerritt(1.0),
            DIST,
        )


def test_value_identity():
    assert K.PowerLawMass(1.0, 2.0) == K.PowerLawMass(1.0, 2.0)
    assert hash(K.OsipkovMerritt(1.0)) == hash(K.OsipkovMerritt(1.0))
    assert K.ConstantBeta(0.0) != K.Isotropic()


# --- Moffat seeing ------------------------------------------------------------------------


def moffat_psf(r, alpha, beta):
    return (beta - 1.0) / (math.pi * alpha**2) * (1.0 + (r / alpha) ** 2) ** -beta


def moffat_circle_window_hyp2f1(radius, r_ap, alpha, beta):
    """W(R) of a disc by scipy quad over the disc's radius rho, the PSF's mean over the
    angle in closed form: <(a - b cos t)^-beta> = a^-beta 2F1(beta/2, (beta+1)/2; 1; b^2/a^2)."""
    from scipy.integrate import quad
    from scipy.special import hyp2f1

    def ring(rho):
        a = 1.0 + (radius**2 + rho**2) / alpha**2
        b = 2.0 * radius * rho / alpha**2
        mean = a**-beta * hyp2f1(beta / 2, (beta + 1) / 2, 1.0, (b / a) ** 2)
        return 2.0 * math.pi * rho * (beta - 1.0) / (math.pi * alpha**2) * mean

    pts = [radius] if 0 < radius < r_ap else None
    return quad(ring, 0.0, r_ap, points=pts, epsabs=0.0, epsrel=1e-13, limit=200)[0]


@pytest.mark.parametrize("beta", [1.5, 2.5, 4.765])
def test_moffat_circle_window_against_scipy(beta):
    from twinlens.kinematics import aperture as ap

    alpha = ap.moffat_alpha(0.7, beta, np)
    radii = np.array([1e-4, 0.3, 0.59, 0.61, 1.2, 5.0, 60.0])
    ray = ap.circle_window(radii, 0.6, lambda d: ap.moffat_beyond(d, alpha, beta, np), np)
    ref = [moffat_circle_window_hyp2f1(r, 0.6, alpha, beta) for r in radii]
    np.testing.assert_allclose(ray, ref, rtol=1e-12)  # measured: a few 1e-15


@pytest.mark.parametrize("point", [(0.1, 0.2), (0.7, 0.35), (1.5, -0.9), (4.0, 3.0)])
def test_moffat_slit_window_against_dblquad(point):
    """The slit's window, a Gaussian mixture, against scipy's dblquad of the Moffat PSF over
    the slit (measured: below 4e-13 relative)."""
    from scipy.integrate import dblquad

    from twinlens.kinematics import aperture as ap

    beta = 2.5
    alpha = ap.moffat_alpha(0.7, beta, np)
    x, y = point

    def psf(yy, xx):
        return moffat_psf(math.hypot(xx - x, yy - y), alpha, beta)

    ref = dblquad(psf, -0.75, 0.75, -0.4, 0.4, epsabs=0.0, epsrel=1e-12)[0]
    got = ap.slit_window_moffat(np.array([x]), np.array([y]), 1.5, 0.8, alpha, beta, np)[0]
    assert abs(got / ref - 1) < 1e-10


def test_moffat_mixture_is_the_circle_window():
    """Second algorithm for the disc: Gaussian circle windows averaged over the Moffat
    mixture (the slit's method) against the ray form (measured: 3e-13 where W > 1e-6)."""
    from twinlens.kinematics import aperture as ap

    def beyond(d, alpha, beta):
        return ap.moffat_beyond(d, alpha, beta, np)

    for beta in (1.5, 2.5, 30.0):
        alpha = ap.moffat_alpha(0.7, beta, np)
        radii = np.array([1e-4, 0.3, 0.59, 0.61, 1.2, 3.0])
        ray = ap.circle_window(radii, 0.6, functools.partial(beyond, alpha=alpha, beta=beta), np)
        s, w = ap.moffat_mixture(alpha, beta, np)
        gauss = functools.partial(ap.gaussian_beyond, sigma=s[:, None], xp=np)
        each = ap.circle_window(radii[:, None], 0.6, gauss, np)
        np.testing.assert_allclose(np.sum(w * each, axis=-1), ray, rtol=1e-10, atol=1e-14)


@pytest.mark.slow
def test_moffat_dispersion_against_scipy():
    """A circle with Moffat seeing: the aperture sums against scipy quad over R of
    sigma^2 I(R) W(R) R, W by :func:`moffat_circle_window_hyp2f1` (the radial profile is ours,
    checked against mpmath above). Measured: 1e-14."""
    from scipy.integrate import quad

    mass, light, ani = K.PowerLawMass(1.2, 2.1), K.Hernquist(0.9), K.OsipkovMerritt(0.9)
    r_ap, fwhm, beta = 0.6, 0.7, 2.5
    got = K.velocity_dispersion(mass, light, ani, K.CircularAperture(r_ap), DIST,
                                K.MoffatSeeing(fwhm, beta), backend="numpy")  # fmt: skip
    from twinlens.kinematics import aperture as ap

    alpha = ap.moffat_alpha(fwhm, beta, np)

    def part(k):
        def f(radius):
            prof = K.projected_dispersion(np.array([radius]), mass, light, ani, DIST, "numpy")
            w = moffat_circle_window_hyp2f1(radius, r_ap, alpha, beta)
            return float(prof[k][0]) * w * radius

        edges = [1e-12, r_ap, 3.0, 30.0, np.inf]
        return sum(quad(f, a, b, epsabs=0.0, epsrel=1e-12, limit=200)[0]
                   for a, b in itertools.pairwise(edges))  # fmt: skip

    ref = math.sqrt(part(0) / part(1))
    assert abs(got / ref - 1) < 1e-9


@pytest.mark.parametrize("aperture", [K.CircularAperture(0.6), K.Slit(1.5, 0.8)])
def test_moffat_tends_to_gaussian(aperture):
    """Large beta: the Moffat PSF tends to the Gaussian of the same FWHM, the difference
    falling as 1 / beta (measured: 2.9e-4 at beta 100, 2.9e-5 at 1000)."""
    args = (K.PowerLawMass(1.2, 2.1), K.Hernquist(0.9), K.Isotropic(), aperture, DIST)
    gauss = K.velocity_dispersion(*args, K.GaussianSeeing(0.8), backend="numpy")
    d100 = K.velocity_dispersion(*args, K.MoffatSeeing(0.8, 100.0), backend="numpy") / gauss - 1
    d1000 = K.velocity_dispersion(*args, K.MoffatSeeing(0.8, 1e3), backend="numpy") / gauss - 1
    assert abs(d1000) < 5e-5
    assert 8.0 < d100 / d1000 < 12.0


@pytest.mark.parametrize(
    ("aperture", "beta"),
    [(K.CircularAperture(0.6), 1.3), (K.CircularAperture(1.0), 2.5), (K.Slit(1.5, 0.8), 2.5),
     (K.Slit(2.0, 0.5), 30.0)],
)  # fmt: skip
def test_moffat_converges_in_its_orders(monkeypatch, aperture, beta):
    """Default orders against twice the orders (measured: below 2e-13 relative)."""
    from twinlens.kinematics import aperture as ap

    args = (K.PowerLawMass(1.2, 2.1), K.Hernquist(0.9), K.Isotropic(), aperture, DIST)
    base = K.velocity_dispersion(*args, K.MoffatSeeing(0.7, beta), backend="numpy")
    for name in ("N_RADIAL", "N_RAYS", "N_ANGLE", "N_MIX"):
        monkeypatch.setattr(ap, name, 2 * getattr(ap, name))
    fine = K.velocity_dispersion(*args, K.MoffatSeeing(0.7, beta), backend="numpy")
    assert abs(base / fine - 1) < 1e-10


@pytest.mark.parametrize(
    "aperture",
    # the slit's program is the costlier compile; its window is checked against dblquad above
    [K.CircularAperture(0.6), pytest.param(K.Slit(1.5, 0.8), marks=pytest.mark.slow)],
)
def test_moffat_numba_jax_and_grad(aperture):
    def sigma(fwhm, beta, backend="jax"):
        args = (K.PowerLawMass(1.2, 2.1), K.Hernquist(0.9), K.OsipkovMerritt(0.9), aperture)
        return K.velocity_dispersion(*args, DIST, K.MoffatSeeing(fwhm, beta), backend=backend)

    ref = sigma(0.7, 2.5, "numba")
    assert abs(float(jax.jit(sigma)(jnp.float64(0.7), jnp.float64(2.5))) / ref - 1) < 1e-10
    batch = jax.vmap(lambda b: sigma(0.7, b))(jnp.array([2.0, 2.5]))
    assert abs(float(batch[1]) / ref - 1) < 1e-10
    grads = jax.grad(sigma, argnums=(0, 1))(jnp.float64(0.7), jnp.float64(2.5))
    for k, g in enumerate(grads):
        h = [1e-5, 1e-4][k]
        up, down = [0.7, 2.5], [0.7, 2.5]
        up[k] += h
        down[k] -= h
        fd = (sigma(*up, "numpy") - sigma(*down, "numpy")) / (2 * h)
        assert abs(float(g) - fd) <= 1e-6 * max(abs(fd), 1.0)


def test_moffat_r2_tracer_and_bad_beta():
    # the r^-2 tracer's light is infinite: the Moffat tail's weights must still be finite
    v = K.velocity_dispersion(K.PowerLawMass(1.1), K.PowerLawTracer(2.0), K.Isotropic(),
                              K.Slit(1.0, 0.5), DIST, K.MoffatSeeing(0.6, 1.6))  # fmt: skip
    assert abs(v / sis_sigma(1.1) - 1) < 1e-10
    with pytest.raises(ValueError, match="beta"):
        K.MoffatSeeing(0.7, 1.0)
    with pytest.raises(ValueError, match="fwhm"):
        K.MoffatSeeing(-0.7, 2.0)

"""Kinematics with Gaussian (MGE) and Sersic light, NFW, Gaussian and composite masses, against
independent references: mpmath solutions of the Jeans equation, closed forms of the projected
Gaussians and of the Sersic profile, mpmath integrals of the densities, and Gaussian
decompositions of the power law and the NFW profile against their exact masses."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from test_kinematics import mp_anisotropy

import twinlens.kinematics as K
from twinlens.backend import jax_runtime
from twinlens.cosmology import LensDistances
from twinlens.kernels import gauss_decomposition as gd
from twinlens.kernels import radial
from twinlens.kinematics import jeans

jax = jax_runtime.load()
jnp = jax.numpy

DIST = LensDistances(0.5, 2.0, 1200.0, 1700.0, 1100.0)
UNIT = jeans.mass_unit(DIST.d_s, DIST.d_ds)
LUM, SIG = (0.3, 0.5, 0.2), (0.2, 0.8, 2.5)
LIGHT = K.GaussianLight(np.array(LUM), np.array(SIG))


# --- mpmath references ------------------------------------------------------------------------


def mp_jeans_general(radius, nu, gm, kind, par, r_max, dps=18):
    """``(sigma^2 I / mass_unit, I)`` by mpmath: ``nu sigma_r^2`` from the Jeans equation's
    radial integral, then projected along the line of sight (a double integral, no kernel),
    both out to ``r_max`` (where the light's tail is below ``1e-16`` of the integrals)."""
    with mp.workdps(dps):
        radius, par, r_max = mp.mpf(radius), mp.mpf(par), mp.mpf(r_max)
        f, beta = mp_anisotropy(kind, par)
        marks = [mp.mpf(2) ** k for k in range(-1, 60) if 2**k < r_max]

        def nu_sr2(r):
            cuts = [r, *(c for c in marks if c > r), r_max]
            return mp.quad(lambda s: f(s) * nu(s) * gm(s) / s**2, cuts) / f(r)

        def los(y):  # r = R cosh y
            r = radius * mp.cosh(y)
            return (1 - beta(r) * radius**2 / r**2) * nu_sr2(r) * r

        cuts = [0, *(mp.acosh(c / radius) for c in marks if c > radius), mp.acosh(r_max / radius)]
        num = 2 * mp.quad(los, cuts)
        den = 2 * mp.quad(lambda y: nu(radius * mp.cosh(y)) * radius * mp.cosh(y), cuts)
        return float(num), float(den)


def mp_nu_gauss(r):
    return sum(
        mp.mpf(a) * mp.exp(-(r**2) / (2 * mp.mpf(s) ** 2)) / ((2 * mp.pi) ** 1.5 * mp.mpf(s) ** 3)
        for a, s in zip(LUM, SIG, strict=True)
    )


def mp_nu_hernquist(r, a="1.3"):
    a = mp.mpf(a)
    return a / (2 * mp.pi * r * (r + a) ** 3)


def mp_gm_power_law(r, theta="1.2", g="2.1"):
    theta, g = mp.mpf(theta), mp.mpf(g)
    f = 2 * mp.gamma(g / 2) / (mp.sqrt(mp.pi) * mp.gamma((g - 1) / 2))
    return f * theta ** (g - 1) * r ** (3 - g)


def mp_gm_nfw(r, k="0.2", rs=8):
    k, rs = mp.mpf(k), mp.mpf(rs)
    x = r / rs
    return 4 * k * rs**2 * (mp.log1p(x) - x / (1 + x))


def mp_gm_gauss(r, amp="0.6", s="0.4"):
    amp, s = mp.mpf(amp), mp.mpf(s)
    t = r / (mp.sqrt(2) * s)
    return 2 * amp * s**2 * (mp.erf(t) - 2 * t * mp.exp(-t * t) / mp.sqrt(mp.pi))


def mp_gm_sum(r):
    return (
        mp_gm_power_law(r, mp.mpf("0.8"), mp.mpf(2))
        + mp_gm_nfw(r, mp.mpf("0.15"), 6)
        + (mp_gm_gauss(r))
    )


MP_MASS = {"pl": mp_gm_power_law, "nfw": mp_gm_nfw, "sum": mp_gm_sum}
MP_LIGHT = {"gauss": mp_nu_gauss, "hern": mp_nu_hernquist}
MASS = {
    "pl": K.PowerLawMass(1.2, 2.1),
    "nfw": K.NFWMass(0.2, 8.0),
    "sum": K.MassSum(
        (K.PowerLawMass(0.8, 2.0), K.NFWMass(0.15, 6.0), K.GaussianMass([0.6], [0.4]))
    ),
}
LIGHTS = {"gauss": LIGHT, "hern": K.Hernquist(1.3)}
ANI = {"iso": lambda p: K.Isotropic(), "om": K.OsipkovMerritt, "beta": K.ConstantBeta}
MP_RADII = (0.05, 1.0, 4.0)
#: mp_jeans_general(R, light, mass, kind, par) at MP_RADII, (sigma^2 I / mass_unit, I);
#: recomputed by test_general_table_is_mpmath (slow)
MP_TABLE: dict = {
    ("pl", "gauss", "iso", 0.0): [
        (0.9538967799443054, 1.2861260768831533),
        (0.014852280895032655, 0.06163274962219225),
        (0.0002087131637651157, 0.001416495714701116),
    ],
    ("pl", "gauss", "om", 0.8): [
        (1.0520474451576576, 1.2861260768831533),
        (0.012512153418147699, 0.06163274962219225),
        (5.700040502620167e-05, 0.001416495714701116),
    ],
    ("pl", "gauss", "beta", 0.4): [
        (1.384706459741574, 1.2861260768831533),
        (0.013027847290286084, 0.06163274962219225),
        (0.00016024151408389122, 0.001416495714701116),
    ],
    ("nfw", "hern", "iso", 0.0): [
        (0.037230192158150474, 0.4640935842729367),
        (0.008147408412015979, 0.038501383699846264),
        (0.0008055253363696918, 0.0024770010658456978),
    ],
    ("nfw", "hern", "om", 1.5): [
        (0.05381449797922316, 0.4640935842729367),
        (0.013412202067300023, 0.038501383699846264),
        (0.000646021413355258, 0.0024770010658456978),
    ],
    ("nfw", "hern", "beta", -0.3): [
        (0.02617928654163211, 0.4640935842729367),
        (0.007660202866564033, 0.038501383699846264),
        (0.0008250523210789858, 0.0024770010658456978),
    ],
    ("sum", "gauss", "om", 1.0): [
        (0.6792230828808411, 1.2861260768831533),
        (0.017786613001935108, 0.06163274962219225),
        (0.00010828526758630665, 0.001416495714701116),
    ],
}


# --- the masses ---------------------------------------------------------------------------


def mp_enclosed(density, r):
    """``G M / mass_unit = 4 int_0^r rho s^2 ds`` (``rho`` in ``Sigma_crit`` per arcsec)."""
    with mp.workdps(30):
        return float(4 * mp.quad(lambda s: density(s) * s**2, [0, r / 2, r]))


@pytest.mark.parametrize("r", [1e-5, 3e-3, 0.5, 8.0, 200.0])
def test_nfw_enclosed_against_mpmath(r):
    k, rs = 0.2, 8.0
    ref = mp_enclosed(lambda s: (k / rs) / ((s / rs) * (1 + s / rs) ** 2), mp.mpf(r))
    got = K.NFWMass(k, rs).enclosed(np.array([r]), "numpy")[0]
    assert abs(got / ref - 1) < 1e-13  # the series below x = 1e-3, the closed form above


@pytest.mark.parametrize("r", [1e-4, 0.05, 0.1131, 0.12, 0.4, 3.0])
def test_gaussian_enclosed_against_mpmath(r):
    amp, s = 0.6, 0.4  # 3D peak amp / (sqrt(2 pi) s) in Sigma_crit per arcsec
    peak = mp.mpf(amp) / (mp.sqrt(2 * mp.pi) * s)
    ref = mp_enclosed(lambda x: peak * mp.exp(-(x**2) / (2 * mp.mpf(s) ** 2)), mp.mpf(r))
    for backend in ("numpy", "numba", "jax"):
        got = float(K.GaussianMass([amp], [s]).enclosed(np.array([r]), backend)[0])
        assert abs(got / ref - 1) < 1e-13  # r = 0.1131: t just below 0.2, the series' edge


# --- Jeans sums against mpmath ------------------------------------------------------------


@pytest.mark.parametrize("case", list(MP_TABLE))
def test_general_against_mpmath_jeans(case):
    mass, light, kind, par = case
    s2i, inten = K.projected_dispersion(
        np.array(MP_RADII), MASS[mass], LIGHTS[light], ANI[kind](par), DIST, "numpy"
    )
    for k, (num, den) in enumerate(MP_TABLE[case]):
        # measured: 2e-11 for NFW, Hernquist, Osipkov-Merritt; below 1e-13 otherwise
        assert abs(s2i[k] / UNIT / num - 1) < 1e-10
        assert abs(inten[k] / den - 1) < 1e-10


@pytest.mark.slow
@pytest.mark.parametrize("case", list(MP_TABLE))
def test_general_table_is_mpmath(case):
    mass, light, kind, par = case
    for radius, row in zip(MP_RADII, MP_TABLE[case], strict=True):
        r_max = {"gauss": 28.0, "hern": 1e5}[light]
        got = mp_jeans_general(radius, MP_LIGHT[light], MP_MASS[mass], kind, par, r_max)
        np.testing.assert_allclose(got, row, rtol=1e-12)


# --- light ----------------------------------------------------------------------------------


def test_gaussian_light_projects_to_closed_form():
    radii = np.array([1e-3, 0.1, 0.8, 3.0, 9.0])
    _, inten = K.projected_dispersion(radii, K.PowerLawMass(), LIGHT, K.Isotropic(), DIST)
    lum, sig = np.array(LUM), np.array(SIG)
    ref = np.sum(lum / (2 * np.pi * sig**2) * np.exp(-(radii[:, None] ** 2) / (2 * sig**2)), 1)
    np.testing.assert_allclose(inten, ref, rtol=1e-12)  # measured: a few 1e-15


@pytest.mark.parametrize("n", [1.0, 2.5, 4.0])
def test_sersic_light_is_the_sersic_profile(n):
    """I(R) of SersicLight against the Sersic profile of unit luminosity (closed form), to the
    decomposition's accuracy over 0.01 - 5 R_eff (measured: 4.1e-5 at n = 1, a constant
    offset of the decomposition's total light; 3e-6 at 2.5; 1.1e-7 at 4)."""
    r_eff = 0.9
    radii = r_eff * np.geomspace(0.01, 5.0, 9)
    _, inten = K.projected_dispersion(
        radii, K.PowerLawMass(), K.SersicLight(r_eff, n), K.Isotropic(), DIST
    )
    ref = radial.sersic_convergence(radii, 1.0, r_eff, n) / radial.sersic_total_mass(1.0, r_eff, n)
    np.testing.assert_allclose(inten, ref, rtol=1e-4)


# --- Gaussian masses against exact ones ---------------------------------------------------


def power_law_decomposition(theta_e, gamma, cut=1e4):
    """The power-law convergence times exp(-R^2 / 2 cut^2) (its Mellin transform is a Gamma
    function), decomposed by the package's Gaussian decomposition; the cut changes G M(r) by
    about r^2 / cut^2."""
    k0, s = 0.5 * (3.0 - gamma) * theta_e ** (gamma - 1.0), gamma - 1.0

    def mellin(z, k0, s, c):
        a = 0.5 * (z - s)
        return 0.5 * k0 * np.exp(a * np.log(2.0 * c * c) + radial.loggamma(a))

    return gd.decompose(
        mellin,
        (k0, s, cut),
        scale=lambda k0, s, c: c,
        abscissa=lambda k0, s, c: 0.5 * (s + 2.0),
        n_sigma=73,
        sigma_range=(1e-8, 3.0),
    )


@pytest.mark.parametrize("anisotropy", [K.Isotropic(), K.OsipkovMerritt(0.9)])
def test_gaussian_mass_of_power_law_is_the_power_law(anisotropy):
    amps, sigmas = power_law_decomposition(1.2, 2.1)
    args = (K.Hernquist(0.9), anisotropy, K.CircularAperture(1.0), DIST, K.GaussianSeeing(0.7))
    exact = K.velocity_dispersion(K.PowerLawMass(1.2, 2.1), *args, backend="numpy")
    mge = K.velocity_dispersion(K.GaussianMass(amps, sigmas), *args, backend="numpy")
    assert abs(mge / exact - 1) < 1e-6  # measured: 6e-8 isotropic, 6e-9 Osipkov-Merritt


def test_gaussian_mass_of_nfw_is_the_nfw():
    k, rs = 0.2, 8.0
    amps, sigmas = gd.decompose_gnfw(k / rs, rs, 1.0)
    args = (LIGHT, K.OsipkovMerritt(1.2), K.Slit(1.5, 0.8), DIST, K.GaussianSeeing(0.7))
    exact = K.velocity_dispersion(K.NFWMass(k, rs), *args, backend="numpy")
    mge = K.velocity_dispersion(K.GaussianMass(amps, sigmas), *args, backend="numpy")
    assert abs(mge / exact - 1) < 1e-6  # measured: 1.2e-7 (45 Gaussians)


# --- backends and transformations -----------------------------------------------------------

BACKEND_CASES = [
    (MASS["nfw"], LIGHT, K.OsipkovMerritt(1.0), K.CircularAperture(0.8), K.GaussianSeeing(0.6)),
    (MASS["sum"], K.SersicLight(1.1, 4.0), K.Isotropic(), K.Slit(1.5, 0.8), None),
    (MASS["nfw"], K.Hernquist(1.0), K.ConstantBeta(0.3), K.CircularAperture(1.0), None),
    (MASS["pl"], LIGHT, K.Isotropic(), K.CircularAperture(1.0), K.MoffatSeeing(0.7, 3.0)),
]


@pytest.mark.parametrize("case", BACKEND_CASES)
def test_numba_and_jax_agree(case):
    a = K.velocity_dispersion(*case[:3], case[3], DIST, case[4], backend="numba")
    b = float(K.velocity_dispersion(*case[:3], case[3], DIST, case[4], backend="jax"))
    assert abs(a / b - 1) < 1e-10


def test_jax_jit_vmap_grad():
    def sigma(kappa_s, r_s, n, lum0, backend="jax"):
        mass = K.MassSum((K.PowerLawMass(0.8, 2.0), K.NFWMass(kappa_s, r_s)))
        light = K.GaussianLight(jnp.stack([lum0, 0.5, 0.2]) if backend == "jax" else
                                np.array([lum0, 0.5, 0.2]), np.array(SIG))  # fmt: skip
        sersic = K.velocity_dispersion(
            mass, K.SersicLight(1.0, n), K.OsipkovMerritt(1.0), K.CircularAperture(1.0), DIST,
            K.GaussianSeeing(0.7), backend=backend,
        )  # fmt: skip
        mge = K.velocity_dispersion(
            mass, light, K.Isotropic(), K.CircularAperture(1.0), DIST, None, backend=backend
        )
        return sersic + mge

    x = (0.15, 6.0, 3.0, 0.3)
    direct = sigma(*x, backend="numba")
    jitted = jax.jit(sigma)(*map(jnp.float64, x))
    assert abs(float(jitted) / direct - 1) < 1e-10
    batch = jax.vmap(lambda k: sigma(k, 6.0, 3.0, jnp.float64(0.3)))(jnp.array([0.1, 0.15]))
    assert abs(float(batch[1]) / direct - 1) < 1e-10
    grads = jax.grad(sigma, argnums=(0, 1, 2, 3))(*map(jnp.float64, x))
    for k, g in enumerate(grads):
        h = 1e-5 * max(abs(x[k]), 1.0)
        up, down = list(x), list(x)
        up[k] += h
        down[k] -= h
        fd = (sigma(*up, backend="numpy") - sigma(*down, backend="numpy")) / (2 * h)
        assert np.isfinite(float(g))
        assert abs(float(g) - fd) <= 1e-6 * max(abs(fd), 1.0)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: K.GaussianLight([1.0, 2.0], [0.5, -0.1]), "sigmas"),
        (lambda: K.GaussianLight([1.0, -2.0], [0.5, 1.0]), "amplitudes"),
        (lambda: K.GaussianLight([1.0], [0.5, 1.0]), "amplitudes"),
        (lambda: K.GaussianMass([1.0, np.nan], [0.5, 1.0]), "amplitudes"),
        (lambda: K.SersicLight(1.0, 0.3), "sersic_index"),
        (lambda: K.SersicLight(0.0, 4.0), "effective_radius"),
        (lambda: K.NFWMass(0.0, 5.0), "kappa_s"),
        (lambda: K.NFWMass(0.1, -5.0), "scale_radius"),
        (lambda: K.MassSum(()), "masses"),
        (lambda: K.MassSum((K.Hernquist(1.0),)), "masses"),
    ],
)
def test_bad_parameters_name_themselves(build, name):
    with pytest.raises(ValueError, match=name):
        build()


def test_mge_light_alias_and_identity():
    assert K.MGELight is K.GaussianLight
    assert K.GaussianLight([1.0, 2.0], [0.5, 1.0]) == K.GaussianLight((1.0, 2.0), (0.5, 1.0))
    assert K.MassSum((K.NFWMass(0.1, 5.0),)) == K.MassSum((K.NFWMass(0.1, 5.0),))

"""Light profiles (twinlens.light): images against closed forms written here from the documented
formulas, fluxes by independent quadrature, the linear variants against their parametric twins,
parameter checks, value identity and JAX gradients.

Kernel-level tests live in test_light_kernels.py; these test the profile layer: which kernel is
called with which fields, the elliptical radius convention, and the linear machinery.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import special

import twinlens.mass
from twinlens.backend import BACKENDS, jax_runtime
from twinlens.light import (
    CoreSersic,
    Exponential,
    GaussianBasis,
    GaussianLight,
    LightProfile,
    LinearCoreSersic,
    LinearExponential,
    LinearGaussian,
    LinearSersic,
    MGELight,
    Sersic,
)

jax = jax_runtime.load()
jnp = jax.numpy

CENTRE = (0.13, -0.07)
ELL = (0.21, -0.14)  # |e| = 0.25, q = 0.6
RNG = np.random.default_rng(20240611)
# 40 scattered points plus the exact centre (every profile is finite there)
XY = np.concatenate([RNG.uniform(-2.5, 2.5, size=(40, 2)), [CENTRE]])


# ------------------------------------------------------------------------------------------
# references, written from the documented formulas with explicit trigonometry


def radius(xy, centre, ell):
    """R = sqrt(q x'^2 + y'^2 / q), (x', y') by explicit rotation into the major-axis frame."""
    e1, e2 = ell
    e = math.hypot(e1, e2)
    q = (1.0 - e) / (1.0 + e)
    phi = 0.5 * math.atan2(e2, e1)
    dx = np.asarray(xy)[..., 0] - centre[0]
    dy = np.asarray(xy)[..., 1] - centre[1]
    xp = math.cos(phi) * dx + math.sin(phi) * dy
    yp = -math.sin(phi) * dx + math.cos(phi) * dy
    return np.sqrt(q * xp * xp + yp * yp / q)


def b_n(n):
    return special.gammaincinv(2.0 * n, 0.5)


def sersic_ref(xy, centre, ell, re, n, intensity):
    r = radius(xy, centre, ell)
    return intensity * np.exp(-b_n(n) * ((r / re) ** (1.0 / n) - 1.0))


def core_sersic_ref(xy, centre, ell, re, n, rb, gamma, alpha, intensity):
    """lenstronomy's CORE_SERSIC formula, literally; R floored at 1e-5 in the cusp factor only
    (the documented R_FLOOR)."""
    r = radius(xy, centre, ell)
    rf = np.maximum(r, 1e-5)
    cusp = (1.0 + (rb / rf) ** alpha) ** (gamma / alpha)
    outer = ((r**alpha + rb**alpha) / re**alpha) ** (1.0 / (alpha * n))
    return intensity * cusp * np.exp(-b_n(n) * (outer - 1.0))


def gauss_ref(xy, centre, ell, sigma, intensity):
    r = radius(xy, centre, ell)
    return intensity * np.exp(-0.5 * r * r / sigma**2)


def image(profile, xy=XY, backend="numpy"):
    return np.asarray(profile.image(xy, backend=backend))


# (profile, reference on XY). Linear variants are referenced at intensity 1.
SIGMAS = (0.15, 0.4, 1.1)
WEIGHTS = (2.0, 0.5, 0.25)
CASES = {
    "Sersic": (
        Sersic(CENTRE, ELL, 0.8, 3.3, 1.7),
        sersic_ref(XY, CENTRE, ELL, 0.8, 3.3, 1.7),
    ),
    "Sersic n=0.2": (
        Sersic(CENTRE, ELL, 1.2, 0.2, 0.6),
        sersic_ref(XY, CENTRE, ELL, 1.2, 0.2, 0.6),
    ),
    "Sersic n=10": (
        Sersic(CENTRE, (0.0, 0.0), 0.5, 10.0, 0.01),
        sersic_ref(XY, CENTRE, (0.0, 0.0), 0.5, 10.0, 0.01),
    ),
    "LinearSersic": (
        LinearSersic(CENTRE, ELL, 0.8, 3.3),
        sersic_ref(XY, CENTRE, ELL, 0.8, 3.3, 1.0),
    ),
    "Exponential": (
        Exponential(CENTRE, ELL, 0.9, 2.2),
        sersic_ref(XY, CENTRE, ELL, 0.9, 1.0, 2.2),
    ),
    "LinearExponential": (
        LinearExponential(CENTRE, ELL, 0.9),
        sersic_ref(XY, CENTRE, ELL, 0.9, 1.0, 1.0),
    ),
    "CoreSersic": (
        CoreSersic(CENTRE, ELL, 1.1, 4.0, 0.12, 0.4, 2.5, 1.3),
        core_sersic_ref(XY, CENTRE, ELL, 1.1, 4.0, 0.12, 0.4, 2.5, 1.3),
    ),
    "LinearCoreSersic": (
        LinearCoreSersic(CENTRE, ELL, 1.1, 4.0, 0.12, 0.4, 2.5),
        core_sersic_ref(XY, CENTRE, ELL, 1.1, 4.0, 0.12, 0.4, 2.5, 1.0),
    ),
    "GaussianLight": (
        GaussianLight(CENTRE, ELL, 0.7, 3.1),
        gauss_ref(XY, CENTRE, ELL, 0.7, 3.1),
    ),
    "LinearGaussian": (
        LinearGaussian(CENTRE, ELL, 0.7),
        gauss_ref(XY, CENTRE, ELL, 0.7, 1.0),
    ),
    "MGELight": (
        MGELight(SIGMAS, WEIGHTS, CENTRE, ELL),
        sum(gauss_ref(XY, CENTRE, ELL, s, w) for s, w in zip(SIGMAS, WEIGHTS, strict=True)),
    ),
    "GaussianBasis": (  # its image is the sum of its unit-intensity columns
        GaussianBasis(SIGMAS, CENTRE, ELL),
        sum(gauss_ref(XY, CENTRE, ELL, s, 1.0) for s in SIGMAS),
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CASES))
def test_image_matches_closed_form(name, backend):
    profile, ref = CASES[name]
    out = image(profile, backend=backend)
    assert out.shape == (len(XY),)
    # The reference rotates with cos/sin, the kernels use the trig-free quadratic form: R^2
    # agrees to a few ulp, and I = exp(E) inherits |E| * 1e-16 relative error, |E| <= ~60 here
    # (b_n (R/R_e)^(1/n) at the far points for n = 0.2). 1e-11 leaves a factor > 10.
    np.testing.assert_allclose(out, ref, rtol=1e-11, atol=0.0)


@pytest.mark.parametrize("name", list(CASES))
def test_backends_agree(name):
    profile, _ = CASES[name]
    ref = image(profile, backend="numpy")
    for backend in ("numba", "jax"):
        # the kernels' registered tolerance (rtol 1e-12): one formula, a few ulp of exp/log
        np.testing.assert_allclose(image(profile, backend=backend), ref, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_image_keeps_the_leading_shape(backend):
    grid = XY[:40].reshape(5, 8, 2)
    for name in ("Sersic", "CoreSersic", "MGELight", "GaussianBasis"):
        profile, ref = CASES[name]
        out = image(profile, grid, backend)
        assert out.shape == (5, 8), name
        # same points as the flat case: same tolerance argument (exp of |E| <= 60)
        np.testing.assert_allclose(out, ref[:40].reshape(5, 8), rtol=1e-11, err_msg=name)


def test_sersic_centre_value_is_exact():
    # documented: exact at R = 0, intensity * exp(b_n); the one rounding is exp itself
    for n in (0.2, 1.0, 4.0, 10.0):
        profile = Sersic(CENTRE, ELL, 0.8, n, 1.3)
        for backend in BACKENDS:
            got = float(image(profile, np.array([CENTRE]), backend)[0])
            assert got == pytest.approx(1.3 * math.exp(b_n(n)), rel=1e-14), (n, backend)


def test_image_depends_on_xy_only_through_the_radius():
    # rotating the points and the ellipticity together leaves the image unchanged
    # (a rotation by t turns (e1, e2) by 2 t); an independent check of the phi convention
    t = 0.37
    rot = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    e = np.array([[math.cos(2 * t), -math.sin(2 * t)], [math.sin(2 * t), math.cos(2 * t)]])
    ell2 = tuple(float(v) for v in e @ np.array(ELL))
    a = Sersic((0.0, 0.0), ELL, 0.8, 2.0)
    b = Sersic((0.0, 0.0), ell2, 0.8, 2.0)
    pts = XY[:40]
    # rotation of points and of e: each rounds to ~1e-16, amplified by |E| <= ~15 (n = 2)
    np.testing.assert_allclose(image(b, pts @ rot.T), image(a, pts), rtol=1e-12)


# ------------------------------------------------------------------------------------------
# fluxes


@pytest.mark.parametrize(("q", "angle"), [(1.0, 0.0), (0.55, 20.0), (0.2, -70.0)])
def test_gaussian_total_flux_is_independent_of_q(q, angle):
    # total = 2 pi sigma^2 I for every q (intermediate-axis sigma). Riemann sum on a grid with
    # spacing h: for a smooth, rapidly decaying integrand the error is ~exp(-2 pi^2 s^2 / h^2)
    # (s = sigma sqrt(q) = 0.22, the narrowest dispersion): below 1e-30; the box spans 14 times
    # the widest dispersion (sigma / sqrt(q) = 1.1). Left: rounding of ~3e5 terms, ~1e-13.
    sigma, intensity = 0.5, 2.7
    f = (1 - q) / (1 + q)
    ell = (f * math.cos(math.radians(2 * angle)), f * math.sin(math.radians(2 * angle)))
    h = 0.025
    axis = np.arange(-8.0, 8.0 + h / 2, h)
    grid = np.stack(np.meshgrid(axis + 0.3, axis - 0.2), axis=-1)
    profile = GaussianLight((0.3, -0.2), ell, sigma, intensity)
    total = image(profile, grid).sum() * h * h
    assert total == pytest.approx(2 * math.pi * sigma**2 * intensity, rel=1e-10)


def _polar_flux(profile, centre, ell, re, n, w_max, n_w=256, n_psi=128):
    """Flux inside the ellipse R = w_max^n R_e by sky-plane polar quadrature about the centre.

    In the direction psi, R = rho * R_unit(psi) (R_unit from the explicit rotation), so the
    ellipse R = R_e is rho_e(psi) = R_e / R_unit(psi). Substituting rho = rho_e w^n makes the
    radial integrand w^(2n-1) times a smooth function of w (no cusp at the centre): Gauss-Legendre
    in w, the periodic trapezoid rule in psi (exponentially convergent for a smooth periodic
    integrand)."""
    psi = 2 * math.pi * np.arange(n_psi) / n_psi
    unit = radius(np.stack([np.cos(psi), np.sin(psi)], -1), (0.0, 0.0), ell)
    rho_e = re / unit
    t, wt = np.polynomial.legendre.leggauss(n_w)
    w = 0.5 * w_max * (t + 1.0)
    ww = 0.5 * w_max * wt
    rho = rho_e[:, None] * w[None, :] ** n
    drho_dw = rho_e[:, None] * n * w[None, :] ** (n - 1.0)
    pts = np.stack(
        [centre[0] + rho * np.cos(psi)[:, None], centre[1] + rho * np.sin(psi)[:, None]], -1
    )
    vals = image(profile, pts)
    return float(np.sum(vals * rho * drho_dw * ww[None, :]) * (2 * math.pi / n_psi))


@pytest.mark.parametrize("n", [0.5, 1.0, 2.5, 4.0, 7.0])
def test_sersic_effective_radius_is_the_half_light_radius(n):
    # closed-form total: 2 pi n R_e^2 I e^b b^(-2n) Gamma(2n) (independent of q)
    re, intensity = 0.8, 1.7
    profile = Sersic(CENTRE, ELL, re, n, intensity)
    b = b_n(n)
    total = 2 * math.pi * n * re**2 * intensity * math.exp(b) * b ** (-2 * n) * math.gamma(2 * n)
    inside = _polar_flux(profile, CENTRE, ELL, re, n, w_max=1.0)
    # truncate where b (w - 1) = 90: the neglected tail is ~e^-90 relative
    everything = _polar_flux(profile, CENTRE, ELL, re, n, w_max=1.0 + 90.0 / b, n_w=512)
    # 256/512 Gauss-Legendre nodes on an analytic radial integrand (2n - 1 an integer) and
    # 128 trapezoid nodes in psi for q = 0.6: quadrature error far below 1e-12; 1e-10 relative
    assert inside == pytest.approx(0.5 * total, rel=1e-10)
    assert everything == pytest.approx(total, rel=1e-10)


# ------------------------------------------------------------------------------------------
# identities between profiles


@pytest.mark.parametrize("backend", BACKENDS)
def test_exponential_is_sersic_with_n_1(backend):
    exp_ = Exponential(CENTRE, ELL, 0.9, 2.2)
    ser = Sersic(CENTRE, ELL, 0.9, 1.0, 2.2)
    # one formula with the same arguments: equal to rounding (1e-14 leaves room for a separate
    # exponential kernel, whose exponent b (R/R_e) differs by ulps)
    np.testing.assert_allclose(image(exp_, backend=backend), image(ser, backend=backend), 1e-14)
    assert Exponential.sersic_index == 1.0
    assert LinearExponential(CENTRE, ELL, 0.9).sersic_index == 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_core_sersic_without_a_core_is_sersic(backend):
    # documented: at break_radius = 0 the profile equals the Sersic profile at every R, the
    # centre included (XY holds the exact centre), for any gamma and alpha
    for gamma, alpha in ((0.0, 3.0), (1.5, 0.7)):
        core = CoreSersic(CENTRE, ELL, 1.1, 3.0, 0.0, gamma, alpha, 1.3)
        ser = Sersic(CENTRE, ELL, 1.1, 3.0, 1.3)
        # u = ((R^alpha)/R_e^alpha)^(1/(alpha n)) computed through logs: a few ulp of the exponent
        # (|E| < 20 for n = 3)
        np.testing.assert_allclose(
            image(core, backend=backend), image(ser, backend=backend), rtol=1e-13
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_core_sersic_tends_to_sersic_as_the_core_shrinks(backend):
    # outside the core, 1 + (R_b / R)^alpha -> 1 and R^alpha + R_b^alpha -> R^alpha: at R_b = 1e-6
    # and alpha = 2, R >= 0.05, the relative change is ~ (R_b / R)^2 (gamma / alpha + b/(alpha n))
    # < 1e-8 (fewer than 1e-9 of the XY points lie inside R = 0.05; they are dropped)
    far = radius(XY, CENTRE, ELL) > 0.05
    core = CoreSersic(CENTRE, ELL, 1.1, 3.0, 1e-6, 0.8, 2.0, 1.3)
    ser = Sersic(CENTRE, ELL, 1.1, 3.0, 1.3)
    np.testing.assert_allclose(
        image(core, XY[far], backend), image(ser, XY[far], backend), rtol=1e-8
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_mge_light_is_the_sum_of_its_gaussians(backend):
    mge = MGELight(SIGMAS, WEIGHTS, CENTRE, ELL)
    parts = [GaussianLight(CENTRE, ELL, s, w) for s, w in zip(SIGMAS, WEIGHTS, strict=True)]
    ref = sum(image(p, backend=backend) for p in parts)
    # a different kernel (mge.convergence, one pass) against three gaussian.convergence calls:
    # sums of positive terms, each a few ulp of exp
    np.testing.assert_allclose(image(mge, backend=backend), ref, rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mge_light_to_mass_follows_the_light(backend):
    light = MGELight(SIGMAS, WEIGHTS, CENTRE, ELL)
    mass = light.to_mass(2.5)
    assert isinstance(mass, twinlens.mass.MGE)
    assert mass.mass_to_light_ratio == 2.5
    kappa = np.asarray(mass.convergence(XY, backend=backend))
    # one kernel with the amplitudes scaled by M/L: rounding of the product only
    np.testing.assert_allclose(kappa, 2.5 * image(light, backend=backend), rtol=1e-14)
    # default M/L is 1
    np.testing.assert_allclose(
        np.asarray(light.to_mass().convergence(XY, backend=backend)),
        image(light, backend=backend),
        rtol=1e-14,
    )


def test_mge_light_copies_its_arrays():
    sig = np.array(SIGMAS)
    wts = np.array(WEIGHTS)
    mge = MGELight(sig, wts, CENTRE, ELL)
    before = image(mge)
    sig[:] = 9.0
    wts[:] = -1.0
    # the caller's arrays were copied: nothing changes (exact)
    np.testing.assert_array_equal(image(mge), before)
    assert mge == MGELight(SIGMAS, WEIGHTS, CENTRE, ELL)
    assert mge == MGELight(list(SIGMAS), list(WEIGHTS), CENTRE, ELL)


# ------------------------------------------------------------------------------------------
# linear variants

PAIRS = [
    (LinearSersic(CENTRE, ELL, 0.8, 3.3), lambda i: Sersic(CENTRE, ELL, 0.8, 3.3, i)),
    (LinearExponential(CENTRE, ELL, 0.9), lambda i: Exponential(CENTRE, ELL, 0.9, i)),
    (
        LinearCoreSersic(CENTRE, ELL, 1.1, 4.0, 0.12, 0.4, 2.5),
        lambda i: CoreSersic(CENTRE, ELL, 1.1, 4.0, 0.12, 0.4, 2.5, i),
    ),
    (LinearGaussian(CENTRE, ELL, 0.7), lambda i: GaussianLight(CENTRE, ELL, 0.7, i)),
]
PAIR_IDS = [type(linear).__name__ for linear, _ in PAIRS]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("linear", "parametric"), PAIRS, ids=PAIR_IDS)
def test_linear_variant_is_the_profile_at_unit_intensity(linear, parametric, backend):
    assert linear.n_linear == 1
    assert parametric(1.0).n_linear == 0
    assert "intensity" not in {f.name for f in dataclasses.fields(linear)}  # solved, not a field
    # the same kernel with intensity 1: equal up to the one multiplication by 1.0
    np.testing.assert_allclose(
        image(linear, backend=backend), image(parametric(1.0), backend=backend), rtol=1e-15
    )


@pytest.mark.parametrize(("linear", "parametric"), PAIRS, ids=PAIR_IDS)
def test_with_intensity_gives_the_parametric_profile(linear, parametric):
    solved = linear.with_intensity(2.75)
    assert type(solved) is type(parametric(1.0))
    assert solved == parametric(2.75)  # every field carried over (value identity)
    assert hash(solved) == hash(parametric(2.75))
    # intensity scales the image: one multiplication, a few ulp
    np.testing.assert_allclose(image(solved), 2.75 * image(linear), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gaussian_basis_columns_are_unit_gaussians(backend):
    basis = GaussianBasis(SIGMAS, CENTRE, ELL)
    assert basis.n_linear == 3
    assert GaussianBasis((0.5,)).n_linear == 1
    x, y = XY[:, 0], XY[:, 1]
    if backend == "jax":
        x, y = jnp.asarray(x), jnp.asarray(y)
    cols = basis._columns(x, y, backend)
    assert len(cols) == 3
    for col, s in zip(cols, SIGMAS, strict=True):
        # closed form, the same argument as test_image_matches_closed_form (|E| < 60)
        np.testing.assert_allclose(
            np.asarray(col), gauss_ref(XY, CENTRE, ELL, s, 1.0), rtol=1e-11, atol=0.0
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_gaussian_basis_with_intensities_is_the_weighted_sum(backend):
    basis = GaussianBasis(SIGMAS, CENTRE, ELL)
    mge = basis.with_intensities(np.array(WEIGHTS))
    assert type(mge) is MGELight
    assert mge == MGELight(SIGMAS, WEIGHTS, CENTRE, ELL)
    ref = sum(gauss_ref(XY, CENTRE, ELL, s, w) for s, w in zip(SIGMAS, WEIGHTS, strict=True))
    np.testing.assert_allclose(image(mge, backend=backend), ref, rtol=1e-11)
    with pytest.raises(ValueError, match=r"MGELight\.sigmas and MGELight\.intensities"):
        basis.with_intensities([1.0, 2.0])


# ------------------------------------------------------------------------------------------
# parameter checks

BAD = [
    (Sersic, {"sersic_index": 0.19}, r"Sersic\.sersic_index must be in \[0\.2, 10\]"),
    (Sersic, {"sersic_index": 10.01}, r"Sersic\.sersic_index must be in \[0\.2, 10\]"),
    (Sersic, {"sersic_index": float("nan")}, r"Sersic\.sersic_index must be finite"),
    (Sersic, {"effective_radius": 0.0}, r"Sersic\.effective_radius must be > 0"),
    (Sersic, {"effective_radius": -1.0}, r"Sersic\.effective_radius must be > 0"),
    (Sersic, {"ell_comps": (0.6, 0.8)}, r"Sersic\.ell_comps must satisfy e1\^2 \+ e2\^2 < 1"),
    (Sersic, {"ell_comps": (1.2, 0.0)}, r"Sersic\.ell_comps must satisfy"),
    (Sersic, {"ell_comps": (0.1,)}, r"Sersic\.ell_comps must be a pair"),
    (Sersic, {"centre": (0.0, 0.0, 0.0)}, r"Sersic\.centre must be a pair"),
    (Sersic, {"centre": (0.0, float("inf"))}, r"Sersic\.centre must be finite"),
    (Sersic, {"intensity": float("inf")}, r"Sersic\.intensity must be finite"),
    (LinearSersic, {"sersic_index": 0.1}, r"LinearSersic\.sersic_index must be in \[0\.2, 10"),
    (LinearSersic, {"effective_radius": 0.0}, r"LinearSersic\.effective_radius must be > 0"),
    (Exponential, {"effective_radius": -0.1}, r"Exponential\.effective_radius must be > 0"),
    (Exponential, {"ell_comps": (0.0, -1.0)}, r"Exponential\.ell_comps must satisfy"),
    (Exponential, {"intensity": float("nan")}, r"Exponential\.intensity must be finite"),
    (LinearExponential, {"effective_radius": 0.0}, r"LinearExponential\.effective_radius"),
    (CoreSersic, {"gamma": 2.0}, r"CoreSersic\.gamma must be in \[0, 2\)"),
    (CoreSersic, {"gamma": -0.01}, r"CoreSersic\.gamma must be in \[0, 2\)"),
    (CoreSersic, {"alpha": 0.0}, r"CoreSersic\.alpha must be > 0"),
    (CoreSersic, {"break_radius": -0.1}, r"CoreSersic\.break_radius must be >= 0"),
    (CoreSersic, {"sersic_index": 12.0}, r"CoreSersic\.sersic_index must be in \[0\.2, 10"),
    (CoreSersic, {"effective_radius": 0.0}, r"CoreSersic\.effective_radius must be > 0"),
    (CoreSersic, {"intensity": float("nan")}, r"CoreSersic\.intensity must be finite"),
    (LinearCoreSersic, {"gamma": 2.5}, r"LinearCoreSersic\.gamma must be in \[0, 2\)"),
    (LinearCoreSersic, {"alpha": -1.0}, r"LinearCoreSersic\.alpha must be > 0"),
    (GaussianLight, {"sigma": 0.0}, r"GaussianLight\.sigma must be > 0"),
    (GaussianLight, {"ell_comps": (0.8, 0.8)}, r"GaussianLight\.ell_comps must satisfy"),
    (GaussianLight, {"intensity": float("-inf")}, r"GaussianLight\.intensity must be finite"),
    (LinearGaussian, {"sigma": -2.0}, r"LinearGaussian\.sigma must be > 0"),
    (MGELight, {"sigmas": (1.0, -1.0), "intensities": (1.0, 1.0)}, r"MGELight\.sigmas must be >"),
    (MGELight, {"sigmas": (1.0,), "intensities": (np.nan,)}, r"MGELight\.intensities must be fin"),
    (MGELight, {"sigmas": (1.0, 2.0), "intensities": (1.0,)}, r"MGELight\.sigmas and MGELight"),
    (MGELight, {"sigmas": ((1.0,),), "intensities": ((1.0,),)}, r"MGELight\.sigmas and MGELig"),
    (MGELight, {"sigmas": (), "intensities": ()}, r"MGELight\.sigmas and MGELight"),
    (
        MGELight,
        {"sigmas": (1.0,), "intensities": (1.0,), "ell_comps": (0.0, 1.0)},
        r"MGELight\.ell_comps must satisfy",
    ),
    (GaussianBasis, {"sigmas": ()}, r"GaussianBasis\.sigmas must be 1-D"),
    (GaussianBasis, {"sigmas": ((0.5, 1.0),)}, r"GaussianBasis\.sigmas must be 1-D"),
    (GaussianBasis, {"sigmas": (0.5, 0.0)}, r"GaussianBasis\.sigmas must be > 0"),
    (GaussianBasis, {"sigmas": (0.5,), "centre": (np.nan, 0.0)}, r"GaussianBasis\.centre must"),
]


@pytest.mark.parametrize(("cls", "kwargs", "message"), BAD, ids=lambda v: str(v)[:40])
def test_bad_parameters_are_named(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


def test_range_ends_are_accepted():
    # the documented closed ends: n in [0.2, 10], gamma in [0, 2), break_radius >= 0
    Sersic(sersic_index=0.2)
    Sersic(sersic_index=10.0)
    LinearSersic(sersic_index=10.0)
    CoreSersic(gamma=0.0, break_radius=0.0)
    LinearCoreSersic(gamma=1.999, break_radius=0.0)
    Sersic(intensity=-1.0)  # intensity need only be finite
    MGELight((1.0, 2.0), (1.0, -0.5))


# ------------------------------------------------------------------------------------------
# value identity


def test_equal_fields_give_equal_profiles_and_hashes():
    a = Sersic(CENTRE, ELL, 0.8, 3.3, 1.7)
    b = Sersic(CENTRE, ELL, 0.8, 3.3, 1.7)
    assert a == b
    assert hash(a) == hash(b)
    assert a != Sersic(CENTRE, ELL, 0.8, 3.3, 1.7000000000000002)
    assert len({a, b, Sersic(CENTRE, ELL, 0.8, 3.3, 1.8)}) == 2
    g = GaussianBasis((0.1, 0.2))
    assert g == GaussianBasis([0.1, 0.2]) == GaussianBasis(np.array([0.1, 0.2]))
    assert hash(g) == hash(GaussianBasis(np.array([0.1, 0.2])))
    assert g != GaussianBasis((0.1, 0.3))


@pytest.mark.parametrize(("linear", "parametric"), PAIRS, ids=PAIR_IDS)
def test_linear_never_equals_parametric(linear, parametric):
    # same image at intensity 1, but a different class: never the same value (a shared key
    # would serve one the other's compiled program)
    assert linear != parametric(1.0)
    assert parametric(1.0) != linear


def test_different_classes_with_the_same_numbers_differ():
    assert Exponential(CENTRE, ELL, 0.9, 1.0) != Sersic(CENTRE, ELL, 0.9, 1.0, 1.0)
    basis = GaussianBasis(SIGMAS, CENTRE, ELL)
    assert basis.with_intensities(np.ones(3)) != basis
    assert isinstance(basis, LightProfile)


# ------------------------------------------------------------------------------------------
# JAX gradients with respect to the parameters

GRAD_XY = np.array([[0.4, -0.3], [-0.9, 0.25], [1.3, 0.8], [0.05, 0.6]])


def _sersic(p):
    return Sersic((p[0], p[1]), (p[2], p[3]), p[4], p[5], p[6])


def _core(p):
    return CoreSersic((p[0], p[1]), (p[2], p[3]), p[4], p[5], p[6], p[7], p[8], p[9])


def _gauss(p):
    return GaussianLight((p[0], p[1]), (p[2], p[3]), p[4], p[5])


def _linear_sersic(p):
    return LinearSersic((p[0], p[1]), (p[2], p[3]), p[4], p[5])


def _mge(p):
    return MGELight(p[4:7], p[7:10], (p[0], p[1]), (p[2], p[3]))


def _basis(p):
    return GaussianBasis(p[4:7], (p[0], p[1]), (p[2], p[3]))


BUILDERS = {
    "Sersic": (_sersic, [0.1, -0.05, 0.15, -0.1, 0.8, 2.7, 1.3]),
    "Sersic n<1": (_sersic, [0.1, -0.05, 0.15, -0.1, 0.8, 0.6, 1.3]),
    "CoreSersic": (_core, [0.1, -0.05, 0.15, -0.1, 1.1, 3.0, 0.2, 0.6, 2.0, 1.3]),
    "GaussianLight": (_gauss, [0.1, -0.05, 0.15, -0.1, 0.7, 2.0]),
    "LinearSersic": (_linear_sersic, [0.1, -0.05, 0.15, -0.1, 0.8, 2.7]),
    "MGELight": (_mge, [0.1, -0.05, 0.15, -0.1, 0.2, 0.5, 1.2, 2.0, 0.7, 0.3]),
    "GaussianBasis": (_basis, [0.1, -0.05, 0.15, -0.1, 0.2, 0.5, 1.2]),
}


def _total(build, params, xy, backend):
    return build(params).image(xy, backend=backend).sum()


@pytest.mark.parametrize("name", list(BUILDERS))
def test_gradient_matches_central_differences(name):
    build, params = BUILDERS[name]
    grad = np.asarray(
        jax.grad(lambda p: _total(build, p, jnp.asarray(GRAD_XY), "jax"))(jnp.asarray(params))
    )
    assert np.all(np.isfinite(grad))
    # central differences of the numpy backend (scipy's b_n, not JAX's Newton iteration)
    h = 1e-6
    fd = []
    for i in range(len(params)):
        up, down = list(params), list(params)
        up[i] += h
        down[i] -= h
        fd.append(
            (_total(build, up, GRAD_XY, "numpy") - _total(build, down, GRAD_XY, "numpy")) / (2 * h)
        )
    # truncation h^2 f''' ~ 1e-12 relative, rounding eps f / h ~ 1e-10 of the image sum (~5)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_gradient_is_finite_on_the_centre_and_at_zero_ellipticity(name):
    build, params = BUILDERS[name]
    params = list(params)
    params[2] = params[3] = 0.0  # e = (0, 0): q = 1, the angle undefined
    xy = jnp.asarray([[params[0], params[1]], [0.4, -0.3]])  # the first point is the centre
    grad = np.asarray(jax.grad(lambda p: _total(build, p, xy, "jax"))(jnp.asarray(params)))
    assert np.all(np.isfinite(grad)), grad


def test_kernel_call_names_the_one_quantity_a_light_profile_computes():
    from twinlens.kernels import light as light_kernels

    assert Sersic().kernel_call("image").kernel is light_kernels.SERSIC
    with pytest.raises(ValueError, match="computes 'image', not 'deflections'"):
        Sersic().kernel_call("deflections")

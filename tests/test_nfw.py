"""NFW halo: closed forms against mpmath, the elliptical form against direct integration, and
the invariants every mass profile satisfies."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from invariants import (
    assert_backends_agree,
    assert_continuous_as_q_to_1,
    assert_convergence_is_half_trace,
    assert_deflection_is_potential_gradient,
    assert_gradients_finite,
    assert_hessian_is_deflection_jacobian,
    assert_rotation_covariant,
    assert_translation_covariant,
    default_points,
    finite_difference_jacobian,
    mean_convergence_inside_circle,
    rotated_by_ellipticity,
)
from scipy.integrate import quad

from twinlens.backend import BACKENDS, jax_runtime
from twinlens.kernels.ellipticity import ellipticity_from_axis_ratio
from twinlens.profiles.nfw import NFW

jax = jax_runtime.load()
jnp = jax.numpy

KS, RS, CENTRE = 0.3, 1.7, (0.1, -0.05)
SPH = NFW(centre=CENTRE, kappa_s=KS, scale_radius=RS)
ELL = NFW.from_axis_ratio(q=0.6, angle=25.0, centre=CENTRE, kappa_s=KS, scale_radius=RS)
XY = default_points() + np.asarray(CENTRE)


# --- mpmath references (30 significant digits) ------------------------------------------------


def _mp_radial(x):
    """``(f, G, h)``: kappa / (2 kappa_s), kappa_bar / (4 kappa_s), psi / (2 kappa_s r_s^2) from
    the textbook forms (arctanh / arctan branches), in mpmath."""
    x = mp.mpf(x)
    if x < 1:
        s = mp.sqrt(1 - x * x)
        big_f = mp.atanh(s) / s
    elif x > 1:
        t = mp.sqrt(x * x - 1)
        big_f = mp.atan(t) / t
    else:
        big_f = mp.mpf(1)
    f = (1 - big_f) / (x * x - 1) if x != 1 else mp.mpf(1) / 3
    return f, (mp.log(x / 2) + big_f) / x**2, mp.log(x / 2) ** 2 - (1 - x * x) * big_f**2


def _mp_fields(dx, dy):
    """kappa, alpha, hessian, psi of SPH at offsets ``(dx, dy)`` from its centre (floats), to
    30 digits: the working precision grows with the cancellation at small x (~4 log10(1/x))."""
    x2 = (mp.mpf(dx) / RS) ** 2 + (mp.mpf(dy) / RS) ** 2
    extra = int(max(0.0, -2.0 * math.log10(float(x2))))
    with mp.workdps(30 + extra):
        f, g, h = _mp_radial(mp.sqrt(x2))
        kappa, kbar = 2 * KS * f, 4 * KS * g
        r2 = mp.mpf(dx) ** 2 + mp.mpf(dy) ** 2
        d = 2 * (kappa - kbar) / r2
        hess = [kbar + d * dx * dx, d * dx * dy, kbar + d * dy * dy]
        return (
            float(kappa),
            np.array([float(kbar * dx), float(kbar * dy)]),
            np.array([float(v) for v in hess]),
            float(2 * KS * RS**2 * h),
        )


# x = r / r_s from 1e-9 to 1e4, crowding the branch point x = 1 from both sides
_X = np.concatenate(
    [
        np.logspace(-9, 4, 27),
        1.0 + np.array([-0.3, -0.1001, -0.0999, -1e-3, -1e-9, -1e-15, 0.0, 1e-15, 1e-9, 1e-3]),
        1.0 + np.array([0.0488, 0.0489, 0.1, 0.3]),  # |1 - x^2| = 0.1 lies at x = 1.0488
        [0.79, 0.81, 0.8, 0.95],  # x^2 = 0.64 switches the small-x forms
    ]
)
_ANGLES = np.linspace(0.1, 6.0, len(_X))
_OFFSETS = np.stack([RS * _X * np.cos(_ANGLES), RS * _X * np.sin(_ANGLES)], axis=-1)
_OFFSETS[_X == 1.0] = (RS, 0.0)  # exactly on the branch point
_XY_MP = _OFFSETS + np.asarray(CENTRE)


@pytest.fixture(scope="module")
def mp_reference():
    # the offsets the kernels see: x - centre_x rounded to float64, as they compute it
    return [_mp_fields(dx, dy) for dx, dy in _XY_MP - np.asarray(CENTRE)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_spherical_closed_forms_against_mpmath(mp_reference, backend):
    xy = _XY_MP
    kappa = np.asarray(SPH.convergence(xy, backend=backend))
    alpha = np.asarray(SPH.deflections(xy, backend=backend))
    hess = np.asarray(SPH.hessian(xy, backend=backend))
    psi = np.asarray(SPH.potential(xy, backend=backend))
    for i, (k_ref, a_ref, h_ref, p_ref) in enumerate(mp_reference):
        # 1e-13 relative (the target); vectors and tensors against their norms, since a
        # component can vanish by orientation.
        assert abs(kappa[i] - k_ref) <= 1e-13 * abs(k_ref), (i, _X[i], kappa[i], k_ref)
        assert np.linalg.norm(alpha[i] - a_ref) <= 1e-13 * np.linalg.norm(a_ref), (i, _X[i])
        h = np.array([hess[i, 0, 0], hess[i, 0, 1], hess[i, 1, 1]])
        assert np.linalg.norm(h - h_ref) <= 1e-13 * np.linalg.norm(h_ref), (i, _X[i], h, h_ref)
        assert abs(psi[i] - p_ref) <= 1e-13 * abs(p_ref), (i, _X[i], psi[i], p_ref)


def test_branch_point_derivative_is_exact():
    # d kappa / dx at x = 1 and 1 +- 1e-12 by JAX autodiff, against mpmath's derivative of the
    # textbook form (its limit at x = 1 from either side)
    def kappa_of_x(x):
        return SPH.convergence(jnp.stack([CENTRE[0] + RS * x, CENTRE[1] + 0.0 * x])[None])[0]

    with mp.workdps(60):
        ref = float(mp.diff(lambda t: 2 * KS * _mp_radial(t)[0], mp.mpf(1) + mp.mpf("1e-20")))
    for x in (1.0, 1.0 - 1e-12, 1.0 + 1e-12):
        dk = float(jax.grad(kappa_of_x)(jnp.asarray(x)))  # d kappa / d x
        assert abs(dk - ref) <= 1e-10 * abs(ref), (x, dk, ref)  # 1e-12 in x moves it ~1e-12


def test_centre_values_are_finite_and_documented():
    # At r = 0 the convergence is its value at x = 1e-150: 2 kappa_s (ln(2e150) - 1 + O(x^2))
    xy = np.array([CENTRE])
    expected = 2 * KS * (math.log(2.0) + 150 * math.log(10.0) - 1.0)
    for backend in BACKENDS:
        kappa = float(np.asarray(SPH.convergence(xy, backend=backend))[0])
        assert kappa == pytest.approx(expected, rel=1e-13)
        assert np.all(np.asarray(SPH.deflections(xy, backend=backend)) == 0.0)
        # psi ~ kappa_s r_s^2 x^2 ln(1/x) at the floor x = 1e-150
        assert abs(float(np.asarray(SPH.potential(xy, backend=backend))[0])) < 1e-290
        h = np.asarray(SPH.hessian(xy, backend=backend))[0]
        assert np.all(np.isfinite(h)) and 0.5 * (h[0, 0] + h[1, 1]) == pytest.approx(kappa)


def test_alpha_rs_is_the_deflection_at_the_scale_radius():
    alpha = np.asarray(SPH.deflections(np.array([[CENTRE[0] + RS, CENTRE[1]]])))[0, 0]
    with mp.workdps(30):
        ref = float(4 * KS * RS * (1 + mp.log(mp.mpf(1) / 2)))
    assert SPH.alpha_rs == pytest.approx(ref, rel=1e-15)
    assert alpha == pytest.approx(ref, rel=1e-14)


# --- elliptical: Keeton's (2001) integrals -----------------------------------------------------


def _kappa_textbook(xi):
    # kappa(xi) of the round profile by the textbook branches (float64, scipy-free)
    x = xi / RS
    if abs(x - 1.0) < 1e-6:
        return 2 * KS * (1 / 3 - 0.4 * (x - 1.0))
    if x < 1:
        s = math.sqrt(1 - x * x)
        big_f = math.atanh(s) / s
    else:
        t = math.sqrt(x * x - 1)
        big_f = math.atan(t) / t
    return 2 * KS * (1 - big_f) / (x * x - 1)


def _keeton(xp, yp, q):
    # Keeton (2001): for kappa(xi_K), xi_K^2 = x^2 + y^2 / q^2, alpha_x = q x J0, alpha_y = q y
    # J1, J_n = int_0^1 kappa(xi_K(u)) / (1 - (1 - q^2) u)^(n + 1/2) du with
    # xi_K(u)^2 = u (x^2 + y^2 / (1 - (1 - q^2) u)); here kappa(xi_K) = kappa_nfw(sqrt(q) xi_K).
    def j(n):
        def integrand(u):
            d = 1 - (1 - q * q) * u
            xi = math.sqrt(q * u * (xp * xp + yp * yp / d))
            return _kappa_textbook(max(xi, 1e-300)) / d ** (n + 0.5)

        return quad(integrand, 0, 1, limit=400, epsabs=0, epsrel=1e-11)[0]

    return q * xp * j(0), q * yp * j(1)


@pytest.mark.parametrize("q", [0.5, 0.8, 0.99])
def test_elliptical_deflections_against_direct_integration(q):
    phi = 0.4
    p = NFW.from_axis_ratio(
        q=q, angle=math.degrees(phi), centre=CENTRE, kappa_s=KS, scale_radius=RS
    )
    c, s = math.cos(phi), math.sin(phi)
    worst = 0.0
    for i, r in enumerate(RS * np.logspace(-2, math.log10(20), 12)):
        t = 0.37 * i  # angles all round the profile
        xp, yp = r * math.cos(t), r * math.sin(t)
        ax, ay = _keeton(xp, yp, q)
        ref = np.array([c * ax - s * ay, s * ax + c * ay])
        xy = np.array([[CENTRE[0] + c * xp - s * yp, CENTRE[1] + s * xp + c * yp]])
        out = np.asarray(p.deflections(xy, backend="numba"))[0]
        worst = max(worst, np.linalg.norm(out - ref) / np.linalg.norm(ref))
    assert worst < 1e-6  # the target, relative to |alpha| there, 0.01 - 20 r_s


# --- invariants ---------------------------------------------------------------------------------


def test_backends_agree_spherical():
    assert_backends_agree(SPH, XY, rtol=1e-12, atol=1e-15)


def test_backends_agree_elliptical():
    # A sum of 41 Gaussians with amplitudes up to ~1e3 kappa_s (the cusp's small sigmas): each
    # component agrees to 1e-12 of its own size, so the floor is 1e-12 of the largest term.
    assert_backends_agree(ELL, XY, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("profile", [SPH, ELL], ids=["spherical", "elliptical"])
def test_differential_identities(profile):
    assert_deflection_is_potential_gradient(profile, XY)
    assert_hessian_is_deflection_jacobian(profile, XY)
    assert_convergence_is_half_trace(profile, XY)


@pytest.mark.parametrize("profile", [SPH, ELL], ids=["spherical", "elliptical"])
def test_rotation_and_translation_covariance(profile):
    assert_rotation_covariant(profile, rotated_by_ellipticity, XY)
    assert_translation_covariant(profile, XY)


def _with_q(q, **kw):
    e1, e2 = ellipticity_from_axis_ratio(q, 0.3)
    return NFW(centre=CENTRE, ell_comps=(float(e1), float(e2)), kappa_s=KS, scale_radius=RS, **kw)


def test_continuous_as_q_to_1_across_the_form_switch():
    # q = 1 is the closed form, q < 1 the 41-Gaussian expansion: they differ by the expansion's
    # error, ~1e-6 in deflections and ~5e-6 in the other fields on these points.
    assert_continuous_as_q_to_1(_with_q, XY, rtol=1e-5)


def test_continuous_as_q_to_1_within_the_elliptical_form():
    # The same expansion at e = (0, 0), traced so the closed form is not chosen, against q just
    # below 1: O(1 - q) apart.
    near = _with_q(1.0 - 1e-8)

    @jax.jit
    def round_fields(e1, e2):
        p = NFW(centre=CENTRE, ell_comps=(e1, e2), kappa_s=KS, scale_radius=RS)
        return p.convergence(XY), p.deflections(XY), p.hessian(XY), p.potential(XY)

    names = ("convergence", "deflections", "hessian", "potential")
    for a, name in zip(round_fields(0.0, 0.0), names, strict=True):
        b = np.asarray(getattr(near, name)(XY, backend="numba"))
        np.testing.assert_allclose(b, np.asarray(a), rtol=0, atol=1e-7 * np.max(np.abs(a)))


def _mp_mean_convergence(radius, q):
    # Mean convergence inside a circle of the elliptical profile: with c(t)^2 = q cos^2 t +
    # sin^2 t / q, the mass inside the circle along direction t is that of the round profile
    # within R c(t) over c(t)^2, so mean = (2 kappa_s r_s^2 / (pi R^2)) int_0^{2 pi}
    # g(R c(t) / r_s) / c(t)^2 dt, with g = x^2 G the enclosed-mass function; q = 1 is the
    # closed form 4 kappa_s g(R / r_s) / x^2.
    with mp.workdps(30):

        def g(x):
            return x * x * _mp_radial(x)[1]

        if q == 1.0:
            x = mp.mpf(radius) / RS
            return float(4 * KS * g(x) / x**2)

        def integrand(t):
            c2 = q * mp.cos(t) ** 2 + mp.sin(t) ** 2 / q
            return g(mp.mpf(radius) * mp.sqrt(c2) / RS) / c2

        total = 4 * mp.quad(integrand, [0, mp.pi / 4, mp.pi / 2])
        return float(2 * KS * RS**2 / (mp.pi * mp.mpf(radius) ** 2) * total)


@pytest.mark.parametrize("radius", [0.05, 1.7, 9.0])
def test_mean_convergence_inside_circle(radius):
    got = mean_convergence_inside_circle(SPH, radius, CENTRE)
    assert got == pytest.approx(_mp_mean_convergence(radius, 1.0), rel=1e-12)
    got = mean_convergence_inside_circle(ELL, radius, CENTRE)
    # the elliptical form is the 41-Gaussian expansion: its accuracy, 1e-6
    assert got == pytest.approx(_mp_mean_convergence(radius, 0.6), rel=1e-6)


# --- gradients --------------------------------------------------------------------------------


def _build(cx, cy, e1, e2, ks, rs):
    return NFW(centre=(cx, cy), ell_comps=(e1, e2), kappa_s=ks, scale_radius=rs)


_AT_CENTRE, _AT_RS, _NEAR = CENTRE, (CENTRE[0] + RS, CENTRE[1]), (CENTRE[0] + 1e-12, CENTRE[1])


@pytest.mark.parametrize(
    "point, e",
    [
        (_AT_CENTRE, (0.0, 0.0)),  # the cusp, with a traced round ellipticity
        (_AT_RS, (0.0, 0.0)),  # the branch point x = 1
        (_NEAR, (1e-9, 0.0)),  # 1e-12 from the centre, q within 4e-9 of 1
        (_AT_CENTRE, (0.2, -0.1)),  # the cusp of an elliptical profile
    ],
    ids=["centre-e0", "x=1-e0", "near-centre-e-tiny", "centre-e"],
)
def test_gradients_finite(point, e):
    assert_gradients_finite(_build, (*CENTRE, *e, KS, RS), point)


def _round_build(cx, cy, ks, rs):
    return NFW(centre=(cx, cy), kappa_s=ks, scale_radius=rs)


def test_gradients_correct_spherical():
    # the closed form: JAX forward mode against central differences (1e-6 steps: ~1e-9 error)
    for point in [(1.3, 0.4), (CENTRE[0] + RS, CENTRE[1]), (-4.0, 7.0)]:
        params = (*CENTRE, KS, RS)
        jac = assert_gradients_finite(_round_build, params, point)
        fd = finite_difference_jacobian(_round_build, params, point)
        np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-9)


def test_gradients_correct_at_round_traced_ellipticity():
    # e = (0, 0) traced: the expansion's near-round form, smooth in (e1, e2); the differences
    # use e = +-1e-6 (the expansion too) and the closed form for the other parameters, which
    # agrees with the expansion to ~1e-6.
    params = (*CENTRE, 0.0, 0.0, KS, RS)
    point = (1.3, 0.4)
    jac = assert_gradients_finite(_build, params, point)
    fd = finite_difference_jacobian(_build, params, point)
    np.testing.assert_allclose(jac, fd, rtol=1e-5, atol=1e-8)


# --- parameters ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"kappa_s": 0.0}, "kappa_s"),
        ({"kappa_s": -1.0}, "kappa_s"),
        ({"scale_radius": 0.0}, "scale_radius"),
    ],
)
def test_bad_parameters_raise(kwargs, name):
    with pytest.raises(ValueError, match=f"NFW.{name}"):
        NFW(**kwargs)


def test_spherical_form_is_chosen_only_for_concrete_round_profiles():
    assert SPH._round() and not ELL._round()

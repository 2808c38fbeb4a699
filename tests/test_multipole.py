"""Circular and elliptical multipoles against closed forms, a spectral solution of Poisson's
equation and invariants."""

from __future__ import annotations

import dataclasses
import math

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
    default_points,
    finite_difference_jacobian,
)

from twinlens.backend import BACKENDS
from twinlens.kernels.multipole import Q_SWITCH, lenstronomy_gauge
from twinlens.mass import EllipticalMultipole, Multipole

XY = default_points() + np.array([0.05, -0.03])
CENTRE = (0.05, -0.03)  # XY avoids it; the centre is tested on its own


def _polar(xy, centre):
    d = np.asarray(xy) - np.asarray(centre)
    return np.hypot(d[:, 0], d[:, 1]), np.arctan2(d[:, 1], d[:, 0])


# -- circular ---------------------------------------------------------------------------------

CIRCULAR = [
    Multipole(m=m, amplitude=0.05, angle=25.0, centre=(0.1, -0.2), einstein_radius=1.4)
    for m in (1, 2, 3, 4, 7)
]


@pytest.mark.parametrize("profile", CIRCULAR, ids=lambda p: f"m{p.m}")
def test_circular_closed_form(profile):
    r, phi = _polar(XY, profile.centre)
    d = phi - math.radians(25.0)
    m, a = profile.m, 0.05
    if m == 1:
        psi = 0.5 * a * r * np.log(r / 1.4) * np.cos(d)
    else:
        psi = a * r * np.cos(m * d) / (1 - m * m)
    for backend in BACKENDS:
        np.testing.assert_allclose(profile.potential(XY, backend=backend), psi, 1e-12, 1e-16)
        kappa = a * np.cos(m * d) / (2 * r)
        np.testing.assert_allclose(profile.convergence(XY, backend=backend), kappa, 1e-12, 1e-16)


@pytest.mark.parametrize("profile", CIRCULAR, ids=lambda p: f"m{p.m}")
def test_circular_invariants(profile):
    assert_backends_agree(profile, XY, rtol=1e-12, atol=1e-15)
    assert_deflection_is_potential_gradient(profile, XY, rtol=1e-12, atol=1e-15)
    assert_hessian_is_deflection_jacobian(profile, XY, rtol=1e-12, atol=1e-15)
    assert_convergence_is_half_trace(profile, XY, rtol=1e-12, atol=1e-15)


def _turn_circular(p, a):
    return dataclasses.replace(p, angle=p.angle + math.degrees(a))


@pytest.mark.parametrize("profile", CIRCULAR, ids=lambda p: f"m{p.m}")
def test_circular_rotation_shifts_the_angle(profile):
    assert_rotation_covariant(profile, _turn_circular, XY, rtol=1e-12, atol=1e-15)


# -- elliptical -------------------------------------------------------------------------------

Q_VALUES = [0.2, 0.6, 1 - Q_SWITCH, 1 - Q_SWITCH + 1e-9, 0.97, 1 - 1e-8, 1.0]


def _ell(m, q, ref=35.0, angle=10.0):
    return EllipticalMultipole(
        m=m,
        amplitude=0.04,
        angle=angle,
        axis_ratio=q,
        centre=CENTRE,
        einstein_radius=1.2,
        reference_angle=ref,
    )


def _spectral_potential(m, q, ref, angle, xy, n=4096):
    """Independent potential: Poisson's equation solved harmonic by harmonic by FFT, in the
    twinlens gauge (no first harmonic in the part proportional to r)."""
    t = 2 * np.pi * np.arange(n) / n
    xr, yr = np.cos(t), np.sin(t)
    varphi = np.arctan2(yr, q * xr)
    big_r = np.sqrt(q * xr**2 + yr**2 / q)
    g = np.cos(m * (varphi - math.radians(angle))) / big_r  # 2 r kappa / a_m at r = 1
    gh = np.fft.fft(g) / n
    k = np.fft.fftfreq(n, 1.0 / n)
    c1 = 2 * gh[1].real
    s1 = -2 * gh[1].imag
    ph = np.where(np.abs(k) == 1, 0.0, gh / np.where(np.abs(k) == 1, 1.0, 1.0 - k**2))
    r, phi = _polar(xy, CENTRE)
    phi = phi - math.radians(ref)
    p = np.real(np.exp(1j * np.outer(phi, k)) @ ph)
    log_term = 0.5 * np.log(r / 1.2) * (c1 * np.cos(phi) + s1 * np.sin(phi))
    return 0.04 * r * (p + log_term)


CASES = [(m, q) for m in (1, 3, 4) for q in Q_VALUES]


@pytest.mark.parametrize(("m", "q"), CASES)
def test_elliptical_potential_against_spectral_solution(m, q):
    ref = _spectral_potential(m, q, 35.0, 10.0, XY)
    prof = _ell(m, q)
    for backend in BACKENDS:
        # 1e-12 of the field's scale |a_m| r: the closed forms lose ~(1 - q^2)^-2 near q = 0.9
        np.testing.assert_allclose(
            prof.potential(XY, backend=backend), ref, rtol=0, atol=1e-12 * 0.04 * 3.7
        )


@pytest.mark.parametrize(("m", "q"), CASES)
def test_elliptical_invariants(m, q):
    prof = _ell(m, q)
    # atol 5e-14 (~1e-12 |a_m|): the closed forms at q = 0.9 cancel terms ~(1 - q^2)^-2
    assert_backends_agree(prof, XY, rtol=1e-11, atol=5e-14)
    assert_deflection_is_potential_gradient(prof, XY, rtol=1e-11, atol=5e-14)
    assert_hessian_is_deflection_jacobian(prof, XY, rtol=1e-11, atol=5e-14)
    assert_convergence_is_half_trace(prof, XY, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("m", [1, 3, 4])
def test_elliptical_convergence_definition(m):
    prof = _ell(m, 0.6)
    d = XY - np.array(CENTRE)
    c, s = math.cos(math.radians(35.0)), math.sin(math.radians(35.0))
    xp, yp = c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]
    kappa = 0.04 * np.cos(m * (np.arctan2(yp, 0.6 * xp) - math.radians(10.0)))
    kappa /= 2 * np.sqrt(0.6 * xp**2 + yp**2 / 0.6)
    np.testing.assert_allclose(prof.convergence(XY), kappa, rtol=1e-12, atol=1e-16)


def _turn_ellipse(p, a):
    return dataclasses.replace(p, reference_angle=p.reference_angle + math.degrees(a))


@pytest.mark.parametrize("m", [1, 3, 4])
@pytest.mark.parametrize("q", [0.5, 0.95])
def test_elliptical_rotation_covariant(m, q):
    assert_rotation_covariant(_ell(m, q), _turn_ellipse, XY, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("m", [1, 3, 4])
def test_elliptical_is_circular_at_q_1_and_continuous(m):
    circ = Multipole(m=m, amplitude=0.04, angle=45.0, centre=CENTRE, einstein_radius=1.2)
    ell = _ell(m, 1.0)
    for name in ("convergence", "deflections", "hessian", "potential"):
        np.testing.assert_allclose(
            getattr(ell, name)(XY), getattr(circ, name)(XY), rtol=1e-12, atol=1e-15
        )
    assert_continuous_as_q_to_1(lambda q: _ell(m, q), XY)
    # both sides of the switch between closed form and quadrature agree
    lo, hi = _ell(m, 1 - Q_SWITCH), _ell(m, 1 - Q_SWITCH + 1e-12)
    assert lo._form() == "_closed" and hi._form() == "_near_round"
    np.testing.assert_allclose(lo.deflections(XY), hi.deflections(XY), rtol=0, atol=1e-13)


@pytest.mark.parametrize("m", [1, 3, 4])
def test_traced_axis_ratio_matches_static_forms(m):
    import jax

    for q in (0.5, 0.95):
        static = _ell(m, q).deflections(XY, backend="numpy")
        traced = jax.jit(lambda qq: _ell(m, qq).deflections(XY))(q)
        np.testing.assert_allclose(traced, static, rtol=1e-12, atol=1e-15)


def test_lenstronomy_gauge_vanishes_for_m4_and_near_round():
    assert lenstronomy_gauge(4, 0.5) == (0.0, 0.0)
    for m in (1, 3):
        a, b = lenstronomy_gauge(m, 0.99)
        assert abs(a) < 2e-3 and abs(b) < 2e-3
        assert lenstronomy_gauge(m, 1.0) == (0.0, 0.0)


# -- the centre and gradients -----------------------------------------------------------------

CENTRE_PROFILES = [*CIRCULAR[:3], _ell(1, 0.5), _ell(3, 0.95), _ell(4, 1.0)]


@pytest.mark.parametrize("profile", CENTRE_PROFILES, ids=lambda p: f"{type(p).__name__}{p.m}")
def test_centre_is_finite_zero(profile):
    at = np.array([profile.centre])
    for backend in BACKENDS:
        for name in ("convergence", "deflections", "hessian", "potential"):
            np.testing.assert_array_equal(getattr(profile, name)(at, backend=backend), 0.0)


def _build_ell(m):
    def build(a, ang, q, cx, ref):
        return EllipticalMultipole(
            m=m, amplitude=a, angle=ang, axis_ratio=q, centre=(cx, 0.0), reference_angle=ref
        )

    return build


@pytest.mark.parametrize("m", [1, 3, 4])
@pytest.mark.parametrize("q", [0.5, 0.95, 1.0])
def test_gradients_finite_and_correct(m, q):
    build = _build_ell(m)
    params = (0.05, 20.0, q, 0.0, 30.0)
    assert_gradients_finite(build, params, (0.0, 0.0))  # on the centre: finite is enough
    jac = assert_gradients_finite(build, params, (0.4, -0.7))
    if q < 1.0:  # q = 1 is the domain's edge: no central difference there
        fd = finite_difference_jacobian(build, params, (0.4, -0.7))
        np.testing.assert_allclose(jac, fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Multipole(m=0), r"Multipole.m must be an integer >= 1"),
        (lambda: Multipole(m=2.0), r"Multipole.m must be an integer"),
        (lambda: Multipole(einstein_radius=-1.0), "Multipole.einstein_radius must be > 0"),
        (lambda: EllipticalMultipole(m=2), r"EllipticalMultipole.m must be one of \(1, 3, 4\)"),
        (lambda: EllipticalMultipole(axis_ratio=1.5), r"axis_ratio must be in \(0, 1\]"),
        (lambda: EllipticalMultipole(amplitude=math.nan), "amplitude must be finite"),
    ],
)
def test_bad_input_names_the_parameter(build, match):
    with pytest.raises(ValueError, match=match):
        build()

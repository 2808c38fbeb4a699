"""Point mass, external shear and mass sheet against closed forms and invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from invariants import (
    assert_backends_agree,
    assert_convergence_is_half_trace,
    assert_deflection_is_potential_gradient,
    assert_gradients_finite,
    assert_hessian_is_deflection_jacobian,
    assert_translation_covariant,
    default_points,
    finite_difference_jacobian,
    mean_convergence_inside_circle,
)

from twinlens.backend import BACKENDS
from twinlens.mass import ExternalShear, MassSheet, PointMass

XY = default_points()
PROFILES = [
    PointMass(centre=(0.1, -0.05), einstein_radius=1.3),
    ExternalShear(gamma_1=0.05, gamma_2=-0.03, origin=(0.2, 0.1)),
    MassSheet(kappa=0.3, centre=(-0.1, 0.2)),
]
IDS = [type(p).__name__ for p in PROFILES]


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_invariants(profile):
    assert_backends_agree(profile, XY, rtol=1e-13, atol=1e-15)
    assert_deflection_is_potential_gradient(profile, XY, rtol=1e-13, atol=1e-15)
    assert_hessian_is_deflection_jacobian(profile, XY, rtol=1e-13, atol=1e-15)
    assert_convergence_is_half_trace(profile, XY, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("profile", PROFILES[:1] + PROFILES[2:], ids=["PointMass", "MassSheet"])
def test_translation_covariant(profile):
    assert_translation_covariant(profile, XY)


@pytest.mark.parametrize("backend", BACKENDS)
def test_point_mass_closed_form(backend):
    pm = PointMass(centre=(0.1, -0.05), einstein_radius=1.3)
    d = XY - np.array([0.1, -0.05])
    r2 = np.sum(d**2, axis=-1)
    np.testing.assert_allclose(pm.deflections(XY, backend=backend), 1.69 * d / r2[:, None], 1e-14)
    np.testing.assert_allclose(pm.potential(XY, backend=backend), 0.845 * np.log(r2), 1e-14)
    np.testing.assert_array_equal(pm.convergence(XY, backend=backend), 0.0)


@pytest.mark.parametrize("radius", [0.01, 0.5, 3.0])
def test_point_mass_gauss_law(radius):
    # mean convergence inside any circle about the point = theta_E^2 / R^2 (the delta's mass)
    pm = PointMass(centre=(0.3, -0.2), einstein_radius=0.8)
    mean = mean_convergence_inside_circle(pm, radius, centre=(0.3, -0.2))
    assert mean == pytest.approx(0.64 / radius**2, rel=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_point_mass_centre_is_finite_and_documented(backend):
    pm = PointMass(centre=(0.25, 0.5), einstein_radius=2.0)
    at = np.array([[0.25, 0.5]])
    np.testing.assert_array_equal(pm.deflections(at, backend=backend), 0.0)
    np.testing.assert_array_equal(pm.hessian(at, backend=backend), 0.0)
    # 1e-14: ln(1e-25) computed as ln(r^2) / 2
    assert float(pm.potential(at, backend=backend)[0]) == pytest.approx(4 * math.log(1e-25), 1e-14)


@pytest.mark.parametrize("point", [(0.0, 0.0), (0.3, -0.2)])
def test_point_mass_gradients(point):
    def build(cx, cy, te):
        return PointMass(centre=(cx, cy), einstein_radius=te)

    jac = assert_gradients_finite(build, (0.0, 0.0, 1.2), point)
    if point != (0.0, 0.0):  # differentiable off the centre
        fd = finite_difference_jacobian(build, (0.0, 0.0, 1.2), point)
        np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_shear_closed_form_and_origin(backend):
    s = ExternalShear(gamma_1=0.05, gamma_2=-0.03, origin=(0.2, 0.1))
    dx, dy = XY[:, 0] - 0.2, XY[:, 1] - 0.1
    psi = 0.025 * (dx**2 - dy**2) - 0.03 * dx * dy
    np.testing.assert_allclose(s.potential(XY, backend=backend), psi, rtol=1e-13, atol=1e-16)
    alpha = np.stack([0.05 * dx - 0.03 * dy, -0.03 * dx - 0.05 * dy], -1)
    np.testing.assert_allclose(s.deflections(XY, backend=backend), alpha, rtol=1e-13, atol=1e-16)
    g = s.shear(XY, backend=backend)
    np.testing.assert_allclose(g, np.broadcast_to([0.05, -0.03], g.shape), rtol=1e-15)


def test_shear_from_magnitude_angle():
    # SHEAR_GAMMA_PSI: gamma_1 = gamma cos(2 psi), gamma_2 = gamma sin(2 psi)
    s = ExternalShear.from_magnitude_angle(0.1, 30.0)
    assert s.gamma_1 == pytest.approx(0.05, rel=1e-14)
    assert s.gamma_2 == pytest.approx(0.1 * math.sqrt(3) / 2, rel=1e-14)
    # the potential is gamma r^2 cos(2 (phi - psi)) / 2
    r, phi = np.hypot(XY[:, 0], XY[:, 1]), np.arctan2(XY[:, 1], XY[:, 0])
    expected = 0.05 * r**2 * np.cos(2 * (phi - math.pi / 6))
    np.testing.assert_allclose(s.potential(XY), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mass_sheet_closed_form(backend):
    sheet = MassSheet(kappa=0.3, centre=(-0.1, 0.2))
    d = XY - np.array([-0.1, 0.2])
    np.testing.assert_allclose(sheet.deflections(XY, backend=backend), 0.3 * d, rtol=1e-15)
    np.testing.assert_allclose(sheet.potential(XY, backend=backend), 0.15 * np.sum(d**2, -1), 1e-15)
    np.testing.assert_array_equal(sheet.convergence(XY, backend=backend), 0.3)
    assert mean_convergence_inside_circle(sheet, 1.7, (-0.1, 0.2)) == pytest.approx(0.3, 1e-13)


def test_gradients_of_shear_and_sheet():
    def shear(g1, g2, ox):
        return ExternalShear(gamma_1=g1, gamma_2=g2, origin=(ox, 0.0))

    def sheet(k, cx):
        return MassSheet(kappa=k, centre=(cx, 0.0))

    for build, p in ((shear, (0.0, 0.0, 0.0)), (sheet, (0.0, 0.0))):
        jac = assert_gradients_finite(build, p, (0.4, -0.3))
        np.testing.assert_allclose(jac, finite_difference_jacobian(build, p, (0.4, -0.3)), 1e-8)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: PointMass(einstein_radius=0.0), "PointMass.einstein_radius must be > 0"),
        (lambda: PointMass(centre=(0.0, math.nan)), "PointMass.centre"),
        (lambda: ExternalShear(gamma_1=math.inf), "ExternalShear.gamma_1 must be finite"),
        (lambda: ExternalShear.from_magnitude_angle(-0.1, 0.0), "gamma must be >= 0"),
        (lambda: MassSheet(kappa=math.nan), "MassSheet.kappa must be finite"),
    ],
)
def test_bad_input_names_the_parameter(build, match):
    with pytest.raises(ValueError, match=match):
        build()

"""SIS, SIE and NIE against independent references (mpmath, closed forms, Gauss's law) and the
invariants every mass profile satisfies."""

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
    jax,
    jnp,
    mean_convergence_inside_circle,
    rotated_by_ellipticity,
)
from references import _ellipse_matrix

from twinlens.backend import BACKENDS
from twinlens.kernels.ellipticity import ellipticity_from_axis_ratio
from twinlens.kernels.isothermal import E_TAYLOR
from twinlens.mass import NIE, SIE, SIS

POINTS = np.array([[0.31, -0.2], [2.0, 1.5], [0.01, 0.0], [-4.0, 3.0], [0.0, 0.7], [9.0, -0.5]])


def isothermal_deflection(x, y, e1, e2, theta_e, core, dps=25):
    """Deflection of theta_E / (2 sqrt(q x'^2 + y'^2/q + s^2)) at the origin, by mpmath
    quadrature of the homoeoid integral over u = v^2 (which removes the u^-1/2 singularity of
    the singular profile): alpha = int_0^1 kappa(u theta^T P^-1 theta) P^-1 theta / sqrt(det P)
    2 v dv, P = I + u (N - I), N^-1 the matrix of the quadratic form."""
    with mp.workdps(dps):
        x, y, e1, e2, te, s = (mp.mpf(v) for v in (x, y, e1, e2, theta_e, core))
        n = _ellipse_matrix(e1, e2)
        theta = mp.matrix([x, y])
        eye = mp.eye(2)

        def integrand(v, i):
            u = v * v
            p = eye + u * (n - eye)
            w = mp.lu_solve(p, theta)
            xi = x * w[0] + y * w[1]
            # kappa(u xi) * 2 v = theta_E v / sqrt(u xi + s^2)
            return te * v / mp.sqrt(u * xi + s * s) * w[i] / mp.sqrt(mp.det(p))

        return np.array([float(mp.quad(lambda v, i=i: integrand(v, i), [0, 1])) for i in (0, 1)])


CASES = [  # (q, phi, theta_E, core)
    (1.0, 0.0, 1.2, 0.0),
    (1.0 - 1e-8, 0.3, 1.2, 0.0),
    (0.75, 20 * math.pi / 180, 1.2, 0.0),
    (0.3, -1.0, 0.8, 0.0),
    (0.1, 2.0, 1.5, 0.0),
    (0.6, 0.4, 1.0, 0.2),
    (0.999, -0.2, 2.0, 1e-3),
]


@pytest.mark.parametrize(("q", "phi", "theta_e", "core"), CASES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_deflections_against_mpmath(q, phi, theta_e, core, backend):
    e1, e2 = (float(v) for v in ellipticity_from_axis_ratio(q, phi))
    ref = np.array([isothermal_deflection(x, y, e1, e2, theta_e, core) for x, y in POINTS])
    nie = NIE(ell_comps=(e1, e2), einstein_radius=theta_e, core_radius=core)
    out = np.asarray(nie.deflections(POINTS, backend=backend))
    # 1e-12 of the local deflection, per point (closed form against 25-digit quadrature)
    err = np.linalg.norm(out - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert np.max(err) < 1e-12
    if core == 0.0:
        sie = SIE(ell_comps=(e1, e2), einstein_radius=theta_e)
        np.testing.assert_array_equal(sie.deflections(POINTS, backend=backend), out)


@pytest.mark.parametrize("q", [1.0, 0.75, 0.1])
def test_traced_ellipticity_matches_mpmath(q):
    e1, e2 = (float(v) for v in ellipticity_from_axis_ratio(q, 0.7))
    ref = np.array([isothermal_deflection(x, y, e1, e2, 1.1, 0.05) for x, y in POINTS])

    @jax.jit
    def deflect(e1, e2):
        return NIE(ell_comps=(e1, e2), einstein_radius=1.1, core_radius=0.05).deflections(POINTS)

    out = np.asarray(deflect(e1, e2))
    assert np.max(np.linalg.norm(out - ref, axis=-1) / np.linalg.norm(ref, axis=-1)) < 1e-12


def test_sis_closed_form_and_mean_convergence():
    sis = SIS(centre=(0.1, -0.2), einstein_radius=1.3)
    d = POINTS - np.array([0.1, -0.2])
    r = np.linalg.norm(d, axis=-1)
    for backend in BACKENDS:
        np.testing.assert_allclose(sis.deflections(POINTS, backend=backend), 1.3 * d / r[:, None])
        np.testing.assert_allclose(sis.convergence(POINTS, backend=backend), 1.3 / (2 * r))
        np.testing.assert_allclose(sis.potential(POINTS, backend=backend), 1.3 * r)
    # Gauss's law: the mean convergence inside theta_E is exactly 1 (trapezoid rule, 1e-13)
    assert mean_convergence_inside_circle(sis, 1.3, centre=(0.1, -0.2)) == pytest.approx(1, 1e-13)


@pytest.mark.parametrize(("q", "core"), [(0.75, 0.0), (0.2, 0.0), (0.6, 0.3)])
def test_mass_inside_ellipses_by_gauss_law(q, core):
    # The flux of alpha through the ellipse q x'^2 + y'^2/q = a^2 is twice the mass inside:
    # 2 pi int_0^a kappa(a') a' da' = pi theta_E (sqrt(a^2 + s^2) - s) (closed form); at s = 0
    # and a = theta_E the mean convergence inside the ellipse (area pi a^2) is exactly 1.
    phi, te = 0.5, 1.2
    nie = NIE.from_axis_ratio(q=q, angle=math.degrees(phi), einstein_radius=te, core_radius=core)
    t = np.linspace(0, 2 * np.pi, 8001)[:-1]
    for a in (0.3, te, 4.0):
        xp, yp = a * np.cos(t) / np.sqrt(q), a * np.sqrt(q) * np.sin(t)
        nx, ny = a * np.sqrt(q) * np.cos(t), a * np.sin(t) / np.sqrt(q)  # n dl / dt, frame
        c, s = np.cos(phi), np.sin(phi)
        xy = np.stack([c * xp - s * yp, s * xp + c * yp], axis=-1)
        normal = np.stack([c * nx - s * ny, s * nx + c * ny], axis=-1)
        flux = np.mean(np.sum(nie.deflections(xy) * normal, axis=-1)) * 2 * np.pi
        expected = np.pi * te * (np.sqrt(a * a + core * core) - core)
        assert flux / 2 == pytest.approx(expected, rel=1e-12)


PROFILES = [
    SIS(centre=(0.1, -0.05), einstein_radius=1.2),
    SIE.from_axis_ratio(q=0.75, angle=20.0, centre=(0.05, 0.02), einstein_radius=1.2),
    SIE.from_axis_ratio(q=0.1, angle=-70.0, einstein_radius=0.9),
    NIE.from_axis_ratio(q=0.5, angle=33.0, centre=(0.2, 0.1), einstein_radius=1.1, core_radius=0.3),
    NIE(ell_comps=(1e-9, 0.0), einstein_radius=1.1, core_radius=1e-3),
]
XY = default_points()


@pytest.mark.parametrize("profile", PROFILES, ids=repr)
def test_invariants(profile):
    assert_backends_agree(profile, XY, rtol=1e-12, atol=1e-14)
    assert_convergence_is_half_trace(profile, XY)
    assert_deflection_is_potential_gradient(profile, XY, rtol=1e-11)
    assert_hessian_is_deflection_jacobian(profile, XY, rtol=1e-11)
    assert_translation_covariant(profile, XY)
    if not isinstance(profile, SIS):
        assert_rotation_covariant(profile, rotated_by_ellipticity, XY)


@pytest.mark.parametrize("core", [0.0, 0.2])
def test_continuous_as_q_to_1(core):
    def build(q):
        return NIE.from_axis_ratio(q=q, angle=25.0, einstein_radius=1.2, core_radius=core)

    # every quantity moves by O(1 - q) = 1e-8 at q = 1 - 1e-8
    assert_continuous_as_q_to_1(build, XY, rtol=1e-7)


def _build(cx, cy, e1, e2, theta_e, core=None):
    # five parameters: the SIE (its core is not a parameter); six: the NIE
    if core is None:
        return SIE(centre=(cx, cy), ell_comps=(e1, e2), einstein_radius=theta_e)
    return NIE(centre=(cx, cy), ell_comps=(e1, e2), einstein_radius=theta_e, core_radius=core)


DEGENERATE = [
    ("round, traced e = 0", (0.0, 0.0, 0.0, 0.0, 1.2, 0.1), (0.3, -0.2), True),
    ("round singular, e = 0", (0.0, 0.0, 0.0, 0.0, 1.2), (0.3, -0.2), True),
    ("|e| at the expansion switch", (0.0, 0.0, E_TAYLOR, 0.0, 1.2), (0.3, -0.2), True),
    ("just above the switch", (0.0, 0.0, 0.0, 2 * E_TAYLOR, 1.2, 0.1), (0.3, 0.4), True),
    ("near round", (0.0, 0.0, 1e-4, -2e-4, 1.2, 0.1), (0.3, 0.4), True),
    ("flat", (0.1, 0.0, 0.5, 0.3, 1.2, 0.1), (0.3, 0.4), True),
    ("cored, centre on the point", (0.05, -0.02, 0.1, 0.05, 1.0, 0.2), (0.05, -0.02), True),
    ("singular, centre on the point", (0.05, -0.02, 0.1, 0.05, 1.0), (0.05, -0.02), False),
    ("singular round, on the point", (0.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0), False),
]


@pytest.mark.parametrize(("label", "params", "point", "smooth"), DEGENERATE, ids=lambda v: v)
def test_gradients_finite_and_correct(label, params, point, smooth):
    jac = assert_gradients_finite(_build, params, point)
    if smooth:  # where the deflection is differentiable, autodiff equals central differences
        fd = finite_difference_jacobian(_build, params, point, eps=1e-7)
        np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-7)


def test_centre_of_singular_profile_is_finite():
    for profile in (SIS(), SIE.from_axis_ratio(q=0.5, angle=10.0)):
        for backend in BACKENDS:
            for name in ("convergence", "deflections", "hessian", "potential"):
                out = np.asarray(getattr(profile, name)(np.zeros((1, 2)), backend=backend))
                assert np.all(np.isfinite(out)), (name, backend)
            np.testing.assert_array_equal(profile.deflections(np.zeros((1, 2)), backend), 0.0)


def test_rebuilt_profile_reuses_the_compiled_program():
    count = 0

    @jax.jit
    def deflect(profile, xy):
        nonlocal count
        count += 1
        return profile.deflections(xy)

    xy = jnp.asarray(POINTS)
    for _ in range(3):
        deflect(SIE(ell_comps=(0.1, 0.2), einstein_radius=1.2), xy)
    deflect(SIE(ell_comps=(0.1, 0.3), einstein_radius=1.2), xy)  # a pytree leaf changes only
    assert count == 1


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (SIS, {"einstein_radius": -1.0}, "SIS.einstein_radius must be > 0"),
        (SIE, {"ell_comps": (0.8, 0.7)}, "SIE.ell_comps must satisfy"),
        (NIE, {"core_radius": -0.1}, "NIE.core_radius must be >= 0"),
        (NIE, {"einstein_radius": float("nan")}, "NIE.einstein_radius must be finite"),
        (SIE, {"centre": (0.0,)}, "SIE.centre must be a pair"),
    ],
)
def test_bad_parameters_are_named(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


@pytest.mark.parametrize("quantity", ["deflections", "hessian", "potential"])
def test_numba_picks_the_traced_kernels_form_at_its_thresholds(quantity):
    """numba runs the traced kernels as the round or the elliptical kernel (chosen once per
    call); at the centre of an SIE the hessian depends on the direction, so the choice must
    switch exactly where the point function's ``where`` does, on each side of E2_ROUND and
    E_TAYLOR."""
    from twinlens.kernels import isothermal as iso
    from twinlens.kernels.tolerance import compare_outputs

    kernel = iso.KERNELS[(quantity, "traced")]
    x = np.array([0.0, 1e-12, -1e-12, 0.3, 0.0, 5.0])
    y = np.array([0.0, 0.0, 1e-12, -0.2, 2.0, 0.0])
    tiny = math.sqrt(iso.E2_ROUND)
    ellipticities = [(0.0, 0.0), (0.0, 0.5 * tiny), (0.7 * tiny, 0.7 * tiny), (2 * tiny, 0.0)]
    ellipticities += [(0.0, 1e-12), (0.5 * E_TAYLOR, 0.0), (2 * E_TAYLOR, 0.0), (0.3, -0.1)]
    for e1, e2 in ellipticities:
        for core in (0.0, 1e-8, 0.05):
            args = [x, y, 0.0, 0.0, e1, e2, 1.3, core]
            got, ref = (kernel(*args, backend=b) for b in ("numba", "numpy"))
            got, ref = (
                tuple(map(np.asarray, o if isinstance(o, tuple) else (o,))) for o in (got, ref)
            )
            for agreement in compare_outputs(got, ref, kernel.tolerance_for(args)):
                assert agreement.passed, (quantity, e1, e2, core, agreement)

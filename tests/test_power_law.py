"""The elliptical power law (EPL) against mpmath, closed forms, conservation laws and invariants."""

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
from scipy import integrate

from twinlens.backend import BACKENDS, jax_runtime
from twinlens.kernels.power_law import N_TRACED, series_length
from twinlens.mass import PowerLaw

jax = jax_runtime.load()
jnp = jax.numpy

THETA_E, ANGLE = 1.3, 25.0  # Einstein radius (arcsec), major-axis angle (degrees)
Q_VALUES = [0.1, 0.3, 0.7, 0.95, 1.0 - 1e-8, 1.0]
SLOPES = [1.2, 1.6, 2.0, 2.4, 2.8]
# sky positions: near the centre, near the Einstein radius on and off the axes, far out
POINTS = np.array([[0.05, -0.02], [0.31, 1.2], [-1.1, 0.4], [0.0, -2.0], [4.0, 3.0]])


def mpmath_deflection(x, y, q, phi, theta_e, slope, dps=30):
    """Sky-frame deflection of the EPL centred on the origin, by mpmath quadrature of the
    homoeoid (Keeton 2001) integrals, independent of the hypergeometric series.

    In the frame of the major axis, with ``xi^2 = x'^2 + y'^2 / q^2`` and the convergence
    ``kappa = (2 - t)/2 theta_E^t (q xi^2)^(-t/2)`` (``t = slope - 1``),
    ``alpha_x' = q x' J_0``, ``alpha_y' = q y' J_1``,
    ``J_n = int_0^1 kappa(xi(u)^2) / D(u)^(n + 1/2) du``, ``D = 1 - (1 - q^2) u``,
    ``xi(u)^2 = u (x'^2 + y'^2 / D)``. The substitution ``u = s^(2 / (2 - t))`` absorbs the
    ``u^(-t/2)`` endpoint singularity, leaving a smooth integrand in ``s``.
    """
    with mp.workdps(dps):
        t = mp.mpf(slope) - 1
        q, phi, theta_e = mp.mpf(q), mp.mpf(phi), mp.mpf(theta_e)
        c, s_ = mp.cos(phi), mp.sin(phi)
        xp = c * x + s_ * y
        yp = -s_ * x + c * y

        def j(n):
            def integrand(s):
                u = s ** (2 / (2 - t))
                d = 1 - (1 - q * q) * u
                return (xp * xp + yp * yp / d) ** (-t / 2) * d ** (-(n + mp.mpf(1) / 2))

            return theta_e**t * q ** (-t / 2) * mp.quad(integrand, [0, 1])

        ax, ay = q * xp * j(0), q * yp * j(1)
        return float(c * ax - s_ * ay), float(s_ * ax + c * ay)


def _profile(q, slope, centre=(0.0, 0.0)):
    return PowerLaw.from_axis_ratio(
        q=q, angle=ANGLE, einstein_radius=THETA_E, slope=slope, centre=centre
    )


@pytest.fixture(scope="module")
def reference():
    phi = math.radians(ANGLE)
    return {
        (q, s): np.array([mpmath_deflection(x, y, q, phi, THETA_E, s) for x, y in POINTS])
        for q in Q_VALUES
        for s in SLOPES
    }


def _rel(out, ref):
    # per point, against |alpha| there (a vector)
    out = np.asarray(out)
    return float(np.max(np.linalg.norm(out - ref, axis=-1) / np.linalg.norm(ref, axis=-1)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_deflections_against_mpmath(reference, backend):
    worst = max(
        _rel(_profile(q, s).deflections(POINTS, backend=backend), reference[q, s])
        for q in Q_VALUES
        for s in SLOPES
    )
    assert worst < 1e-12  # the target, q in [0.1, 1], slope in [1.2, 2.8]


@pytest.mark.parametrize("threads", [1, 2])
def test_numba_blocks_equal_the_numpy_series_across_block_edges(threads):
    # numba sums the deflection series a block of points at a time (power_law_blocked.BLOCK):
    # many blocks, a partial last one and both thread counts, against the numpy per-point
    # series (a second algorithm: whole-array Horner on numpy), at lengths from 1 to ~260 terms
    from twinlens.backend import numba_runtime
    from twinlens.kernels import power_law_blocked

    numba = numba_runtime.load()
    rng = np.random.default_rng(7)
    n = 5 * power_law_blocked.BLOCK + 37
    x, y = rng.uniform(-3.0, 3.0, (2, n))
    x[:3], y[:3] = 0.05, -0.02  # the centre itself, where alpha = 0
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for q, angle, slope in [
            (0.8, 17.0, 2.2),
            (0.2, -63.0, 1.3),
            (1.0, 0.0, 2.7),
            (0.07, 115.0, 1.9),
        ]:
            profile = PowerLaw.from_axis_ratio(
                q=q, angle=angle, einstein_radius=THETA_E, slope=slope, centre=(0.05, -0.02)
            )
            xy = np.stack([x, y], axis=-1)
            got = np.asarray(profile.deflections(xy, backend="numba"))
            ref = np.asarray(profile.deflections(xy, backend="numpy"))
            scale = np.maximum(np.linalg.norm(ref, axis=-1), 1e-300)[:, None]
            assert np.max(np.abs(got - ref) / scale) < 1e-13, (q, slope)
            assert np.all(got[:3] == 0.0)
    finally:
        numba.set_num_threads(before)


def test_traced_parameters_are_accurate_down_to_q_01(reference):
    @jax.jit
    def deflect(e1, e2, slope):
        return PowerLaw(ell_comps=(e1, e2), einstein_radius=THETA_E, slope=slope).deflections(
            POINTS
        )

    worst = 0.0
    for q in Q_VALUES:
        for s in SLOPES:
            ell = _profile(q, s).ell_comps
            worst = max(worst, _rel(deflect(*ell, s), reference[q, s]))
    assert worst < 1e-12  # N_TRACED terms: the fixed length holds 1e-12 down to q = 0.1


def test_series_length_is_chosen_from_the_ellipticity():
    assert series_length(0.0, 0.0, 2.2) == 1
    # q = 0.8: |e| = 1/9, terms fall by ~1/9 each: 17-18 terms for 1e-17
    assert 16 <= series_length(1 / 9, 0.0, 2.2) <= 19
    assert series_length(jnp.float64(0.1), 0.0, 2.0) < N_TRACED  # a concrete JAX scalar

    @jax.jit
    def n_inside(e1):
        assert series_length(e1, 0.0, 2.0) == N_TRACED
        return e1

    n_inside(0.1)


def test_a_traced_slope_at_a_fixed_ellipticity_sums_a_length_that_holds_for_every_slope():
    # the length is static (the ellipticity is concrete) and short, not N_TRACED
    @jax.jit
    def deflect(slope):
        n = series_length(0.1, -0.05, slope, bucket=True)
        assert n <= 32
        return PowerLaw(ell_comps=(0.1, -0.05), einstein_radius=THETA_E, slope=slope).deflections(
            POINTS
        )

    for slope in (1.01, 1.2, 2.0, 2.8, 2.99):
        # the adaptive length of that slope, on numpy (a second route to the same sum)
        ref = PowerLaw(ell_comps=(0.1, -0.05), einstein_radius=THETA_E, slope=slope).deflections(
            POINTS, backend="numpy"
        )
        assert _rel(deflect(slope), ref) < 1e-15, slope
    # the bound stops no earlier than any slope's own stop
    traced = []
    jax.jit(lambda slope: traced.append(series_length(0.3, 0.2, slope)) or slope)(2.0)
    assert traced[0] < N_TRACED
    for slope in np.linspace(1.001, 2.999, 41):
        assert series_length(0.3, 0.2, float(slope)) <= traced[0]
    # never longer than a traced ellipticity's N_TRACED (q = 0.06 would need 512 by the bound)
    flat = PowerLaw.from_axis_ratio(q=0.06, angle=0.0).ell_comps
    jax.jit(lambda slope: traced.append(series_length(*flat, slope, bucket=True)) or slope)(2.0)
    assert traced[1] == N_TRACED


def test_round_profile_matches_closed_form():
    r = np.linalg.norm(POINTS, axis=-1)
    for slope in SLOPES:
        p = PowerLaw(einstein_radius=THETA_E, slope=slope)
        # alpha = theta_E^(g - 1) r^(2 - g) rhat, kappa = (3 - g)/2 (theta_E / r)^(g - 1)
        expected = (THETA_E ** (slope - 1) * r ** (1 - slope))[:, None] * POINTS
        kappa = (3 - slope) / 2 * (THETA_E / r) ** (slope - 1)
        for backend in BACKENDS:
            np.testing.assert_allclose(p.deflections(POINTS, backend=backend), expected, 1e-14)
            np.testing.assert_allclose(p.convergence(POINTS, backend=backend), kappa, 1e-14)


@pytest.mark.parametrize("q", [0.1, 0.45, 0.9, 1 - 1e-6])
def test_slope_2_is_the_sie_closed_form(q):
    p = _profile(q, 2.0)
    phi = math.radians(ANGLE)
    c, s = math.cos(phi), math.sin(phi)
    xp = c * POINTS[:, 0] + s * POINTS[:, 1]
    yp = -s * POINTS[:, 0] + c * POINTS[:, 1]
    psi = np.sqrt(q * q * xp * xp + yp * yp)
    k = math.sqrt(1 - q * q)
    pref = THETA_E * math.sqrt(q) / k
    ax, ay = pref * np.arctan(k * xp / psi), pref * np.arctanh(k * yp / psi)
    expected = np.stack([c * ax - s * ay, s * ax + c * ay], -1)
    for backend in BACKENDS:
        # near q = 1 the closed form itself loses ~eps / (1 - q^2) to cancellation
        assert _rel(p.deflections(POINTS, backend=backend), expected) < 1e-12 / k**2


# -- invariants ---------------------------------------------------------------------------------

PROFILES = [
    PowerLaw(centre=(0.05, -0.02), ell_comps=(0.1, 0.2), einstein_radius=1.2, slope=2.2),
    PowerLaw(ell_comps=(1e-3, -2e-3), einstein_radius=0.8, slope=1.4),
    PowerLaw(einstein_radius=1.0, slope=2.7),
    PowerLaw.from_axis_ratio(q=0.1, angle=-70.0, einstein_radius=1.5, slope=1.9),
]
GRID = default_points()


@pytest.mark.parametrize("profile", PROFILES, ids=range(len(PROFILES)))
def test_invariants(profile):
    assert_backends_agree(profile, GRID, rtol=1e-12, atol=1e-15)
    assert_deflection_is_potential_gradient(profile, GRID, rtol=1e-12, atol=1e-14)
    assert_hessian_is_deflection_jacobian(profile, GRID, rtol=1e-11, atol=1e-14)
    assert_convergence_is_half_trace(profile, GRID, rtol=1e-12, atol=1e-14)
    assert_rotation_covariant(profile, rotated_by_ellipticity, GRID)
    assert_translation_covariant(profile, GRID)


@pytest.mark.parametrize("slope", [1.2, 2.0, 2.8])
def test_continuous_as_q_to_1(slope):
    assert_continuous_as_q_to_1(lambda q: _profile(q, slope, centre=(0.1, 0.2)), GRID)


@pytest.mark.parametrize("slope", [1.2, 2.0, 2.8])
def test_mean_convergence_inside_the_einstein_radius_is_1(slope):
    p = PowerLaw(centre=(0.2, -0.1), einstein_radius=THETA_E, slope=slope)
    assert mean_convergence_inside_circle(p, THETA_E, p.centre) == pytest.approx(1.0, rel=1e-13)


@pytest.mark.parametrize("q", [0.1, 0.6])
@pytest.mark.parametrize("slope", [1.2, 2.0, 2.8])
def test_mass_inside_the_einstein_ellipse_is_pi_theta_e_squared(q, slope):
    p = _profile(q, slope)
    phi = math.radians(ANGLE)
    c, s = math.cos(phi), math.sin(phi)
    # Gauss's law: the flux of alpha out of the ellipse q x'^2 + y'^2/q = theta_E^2 is
    # 2 x its mass. The ellipse is x' = a cos u, y' = b sin u (a = theta_E/sqrt(q),
    # b = theta_E sqrt(q)), outward normal times arc length (b cos u, a sin u) du; the periodic
    # trapezoid rule is exponentially accurate.
    u = np.linspace(0, 2 * np.pi, 8001)[:-1]
    a, b = THETA_E / math.sqrt(q), THETA_E * math.sqrt(q)
    xp, yp = a * np.cos(u), b * np.sin(u)
    xy = np.stack([c * xp - s * yp, s * xp + c * yp], -1)
    nx, ny = b * np.cos(u), a * np.sin(u)
    alpha = np.asarray(p.deflections(xy))
    axp = c * alpha[:, 0] + s * alpha[:, 1]
    ayp = -s * alpha[:, 0] + c * alpha[:, 1]
    flux = np.mean(axp * nx + ayp * ny) * 2 * np.pi
    assert flux / 2 == pytest.approx(np.pi * THETA_E**2, rel=1e-10)  # cusp-free integrand
    # the convergence integrated in elliptical coordinates (rho, u): x' = rho cos u / sqrt(q),
    # y' = rho sqrt(q) sin u, area element rho; rho = theta_E w^(1/(2 - t)) removes the cusp.
    t = slope - 1

    def integrand(w, uu):
        rho = THETA_E * w ** (1 / (2 - t))
        drho = THETA_E / (2 - t) * w ** (1 / (2 - t) - 1)
        x1, y1 = rho * math.cos(uu) / math.sqrt(q), rho * math.sqrt(q) * math.sin(uu)
        pt = np.array([[c * x1 - s * y1, s * x1 + c * y1]])
        return float(p.convergence(pt, backend="numpy")[0]) * rho * drho

    mass, _ = integrate.dblquad(integrand, 0, 2 * np.pi, 0, 1, epsabs=0, epsrel=1e-11)
    assert mass == pytest.approx(np.pi * THETA_E**2, rel=1e-9)  # dblquad's own accuracy


# -- degenerate points and gradients -----------------------------------------------------------


def _build(cx, cy, e1, e2, theta_e, slope):
    return PowerLaw(centre=(cx, cy), ell_comps=(e1, e2), einstein_radius=theta_e, slope=slope)


DEGENERATE = [
    ("round, traced e = (0, 0)", (0.0, 0.0, 0.0, 0.0, 1.2, 2.2), (0.3, -0.2), True),
    ("near round", (0.0, 0.0, 1e-9, -1e-9, 1.2, 1.7), (0.3, -0.2), True),
    ("q = 0.1", (0.1, 0.0, 9 / 11, 0.0, 1.0, 2.0), (0.5, 0.4), True),
    ("steep", (0.0, 0.1, 0.2, -0.1, 0.7, 2.8), (1.5, -0.3), True),
    ("centre on the point, slope < 2", (0.05, -0.02, 0.1, 0.05, 1.0, 1.6), (0.05, -0.02), False),
    ("centre on the point, slope 2", (0.0, 0.0, 0.1, 0.05, 1.0, 2.0), (0.0, 0.0), False),
    ("centre on the point, slope > 2, round", (0.0, 0.0, 0.0, 0.0, 1.0, 2.6), (0.0, 0.0), False),
]


@pytest.mark.parametrize(
    ("label", "params", "point", "smooth"), DEGENERATE, ids=[d[0] for d in DEGENERATE]
)
def test_gradients_finite_and_match_finite_differences(label, params, point, smooth):
    jac = assert_gradients_finite(_build, params, point)
    if smooth:
        fd = finite_difference_jacobian(_build, params, point)
        np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)  # central differences, h=1e-6


def test_gradient_in_ellipticity_at_round_matches_the_first_order_response():
    # The derivative at e = 0, traced, against central differences of the SIE closed form
    # (independent of the series) across e1 = 0: e1 > 0 is q < 1 along x, e1 < 0 along y.
    point = np.array([0.7, -0.4])

    def alpha(e1):
        return PowerLaw(ell_comps=(e1, 0.0), einstein_radius=1.0, slope=2.0).deflections(
            point[None], backend="jax"
        )[0]

    jac = np.asarray(jax.jacfwd(alpha)(0.0))
    h = 1e-5
    sie = []
    for e in (h, -h):
        # SIE with e2 = 0: e1 > 0 is q < 1 along x, e1 < 0 is the same q along y
        q = (1 - abs(e)) / (1 + abs(e))
        x, y = point if e > 0 else (-point[1], point[0])
        psi = math.hypot(q * x, y)
        k = math.sqrt(1 - q * q)
        ax = math.sqrt(q) / k * math.atan(k * x / psi)
        ay = math.sqrt(q) / k * math.atanh(k * y / psi)
        sie.append(np.array([ax, ay]) if e > 0 else np.array([ay, -ax]))
    np.testing.assert_allclose(jac, (sie[0] - sie[1]) / (2 * h), rtol=1e-7)  # O(h^2) differences


@pytest.mark.parametrize("slope", [1.2, 2.0, 2.8])
def test_centre_values_are_finite_and_documented(slope):
    p = PowerLaw(centre=(0.1, 0.2), ell_comps=(0.2, 0.1), einstein_radius=1.0, slope=slope)
    xy = np.array([[0.1, 0.2]])
    for backend in BACKENDS:
        assert np.all(p.deflections(xy, backend=backend) == 0.0)
        assert np.all(p.convergence(xy, backend=backend) == 0.0)
        assert np.all(p.hessian(xy, backend=backend) == 0.0)
        assert np.all(p.potential(xy, backend=backend) == 0.0)
    # slope < 2: alpha -> 0 continuously; tiny radii stay finite for every slope
    tiny = np.array([[0.1 + 1e-12, 0.2], [0.1, 0.2 - 1e-12]])
    out = np.asarray(p.deflections(tiny, backend="numba"))
    assert np.all(np.isfinite(out))
    if slope < 2:
        assert np.max(np.abs(out)) < 1e-12 ** (2 - slope) * 10


def test_far_points_and_tiny_radii_agree_across_backends():
    p = PowerLaw.from_axis_ratio(q=0.3, angle=10.0, einstein_radius=0.5, slope=2.5)
    xy = np.array([[1e4, -3e3], [1e-10, 2e-10], [-1e-8, 0.0]])
    assert_backends_agree(p, xy, rtol=1e-12, atol=0.0)


# -- construction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"slope": 3.0}, r"PowerLaw.slope must be in \(1, 3\)"),
        ({"slope": 1.0}, r"PowerLaw.slope must be in \(1, 3\)"),
        ({"einstein_radius": 0.0}, r"PowerLaw.einstein_radius must be > 0"),
        ({"ell_comps": (0.9, 0.5)}, r"PowerLaw.ell_comps must satisfy"),
        ({"centre": (0.0,)}, r"PowerLaw.centre must be a pair"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PowerLaw(**kwargs)


def test_value_identity_reuses_the_compiled_program():
    traces = []

    @jax.jit
    def f(profile, xy):
        traces.append(1)
        return profile.deflections(xy)

    for _ in range(3):
        f(PowerLaw(ell_comps=(0.1, 0.2), slope=2.1), GRID)
    assert len(traces) == 1
    assert PowerLaw(slope=2.1) == PowerLaw(slope=2.1) != PowerLaw(slope=2.2)

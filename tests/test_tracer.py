"""Galaxy and Tracer (twinlens.lensing.tracer): ray tracing through one lens plane against closed
forms (SIS, SIE, external shear), the image as lens light at theta plus source light at beta,
magnification, and the bookkeeping of linear light profiles."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twinlens.backend import BACKENDS, jax_runtime
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import (
    CoreSersic,
    Exponential,
    GaussianBasis,
    GaussianLight,
    LinearCoreSersic,
    LinearExponential,
    LinearGaussian,
    LinearSersic,
    MGELight,
    Sersic,
)
from twinlens.mass import SIE, SIS, ExternalShear

jax = jax_runtime.load()
jnp = jax.numpy

RNG = np.random.default_rng(77)
THETA_E = 1.2
SIS_CENTRE = (0.1, -0.15)


def _points(centre):
    """Rings about ``centre`` inside and outside the critical circle r = THETA_E (none within
    0.15 of it, nor of the centre), at angles that avoid the axes."""
    radii = np.array([0.3, 0.75, 1.0, 1.4, 1.8, 2.5])
    angles = np.linspace(0.0, 2 * np.pi, 5, endpoint=False) + 0.3
    r, a = np.meshgrid(radii, angles)
    a = a + 0.17 * r  # a different angle on each ring
    pts = np.stack([r * np.cos(a), r * np.sin(a)], -1).reshape(-1, 2)
    return RNG.permutation(pts + np.asarray(centre))


XY = _points(SIS_CENTRE)


def sis_deflection(xy, centre, theta_e):
    d = np.asarray(xy) - np.asarray(centre)
    return theta_e * d / np.hypot(d[:, 0], d[:, 1])[:, None]


def sie_deflection(xy, centre, theta_e, q, angle_deg):
    """Kormann et al. (1994) closed form for kappa = theta_E / (2 sqrt(q x'^2 + y'^2 / q))
    = b / (2 sqrt(q^2 x'^2 + y'^2)) with b = theta_E sqrt(q), rotated explicitly."""
    phi = math.radians(angle_deg)
    c, s = math.cos(phi), math.sin(phi)
    dx = xy[:, 0] - centre[0]
    dy = xy[:, 1] - centre[1]
    xp, yp = c * dx + s * dy, -s * dx + c * dy
    qp = math.sqrt(1 - q * q)
    psi = np.sqrt(q * q * xp * xp + yp * yp)
    b = theta_e * math.sqrt(q)
    ax, ay = b / qp * np.arctan(qp * xp / psi), b / qp * np.arctanh(qp * yp / psi)
    return np.stack([c * ax - s * ay, s * ax + c * ay], -1)


def shear_deflection(xy, g1, g2):
    x, y = xy[:, 0], xy[:, 1]
    return np.stack([g1 * x + g2 * y, g2 * x - g1 * y], -1)


def arr(v):
    return np.asarray(v)


# ------------------------------------------------------------------------------------------
# ray tracing


@pytest.mark.parametrize("backend", BACKENDS)
def test_sis_source_plane_closed_form(backend):
    tracer = Tracer(Galaxy(mass=SIS(SIS_CENTRE, THETA_E)), Galaxy(light=Sersic()))
    beta = arr(tracer.source_plane(XY, backend=backend))
    ref = XY - sis_deflection(XY, SIS_CENTRE, THETA_E)
    assert beta.shape == XY.shape
    # the SIS deflection is theta_E d / |d|: a division and a hypot, ~1e-16 relative
    np.testing.assert_allclose(beta, ref, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(
        arr(tracer.deflections(XY, backend=backend)),
        sis_deflection(XY, SIS_CENTRE, THETA_E),
        rtol=1e-13,
        atol=1e-14,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_deflections_sum_over_galaxies_and_profiles(backend):
    g1, g2 = 0.04, -0.07
    q, angle = 0.65, 35.0
    main = Galaxy(
        mass=(
            SIE.from_axis_ratio((0.05, 0.02), einstein_radius=1.1, q=q, angle=angle),
            ExternalShear(g1, g2),
        ),
        light=Sersic(),
    )
    satellite = Galaxy(mass=SIS((1.9, 1.7), 0.2))  # a second lens galaxy, mass only
    tracer = Tracer((main, satellite), Galaxy(light=GaussianLight()))
    xy = XY[np.hypot(XY[:, 0] - 1.9, XY[:, 1] - 1.7) > 0.1]
    ref = (
        sie_deflection(xy, (0.05, 0.02), 1.1, q, angle)
        + shear_deflection(xy, g1, g2)
        + sis_deflection(xy, (1.9, 1.7), 0.2)
    )
    # closed forms: arctan/arctanh of ratios of O(1) numbers, a few ulp each; the SIE's
    # 1 / sqrt(1 - q^2) = 1.3 amplifies nothing
    np.testing.assert_allclose(arr(tracer.deflections(xy, backend=backend)), ref, 1e-12, 1e-13)
    np.testing.assert_allclose(
        arr(tracer.source_plane(xy, backend=backend)), xy - ref, rtol=1e-12, atol=1e-13
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_source_mass_is_ignored_and_no_lens_means_no_deflection(backend):
    src = Galaxy(mass=SIS((0.3, 0.3), 5.0), light=GaussianLight())
    with_mass = Tracer(Galaxy(mass=SIS(SIS_CENTRE, THETA_E)), src)
    without = Tracer(Galaxy(mass=SIS(SIS_CENTRE, THETA_E)), Galaxy(light=GaussianLight()))
    # one lens plane: the source's mass must not enter (the same computation: exact)
    np.testing.assert_array_equal(
        arr(with_mass.source_plane(XY, backend=backend)),
        arr(without.source_plane(XY, backend=backend)),
    )
    empty = Tracer((), Galaxy(light=GaussianLight()))
    np.testing.assert_array_equal(arr(empty.deflections(XY, backend=backend)), 0.0)
    np.testing.assert_array_equal(arr(empty.source_plane(XY, backend=backend)), XY)
    np.testing.assert_array_equal(arr(empty.magnification(XY, backend=backend)), 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_leading_shape_is_kept(backend):
    grid = XY[:24].reshape(4, 6, 2)
    tracer = Tracer(
        Galaxy(mass=SIS(SIS_CENTRE, THETA_E), light=GaussianBasis((0.3, 0.9))),
        Galaxy(light=Sersic()),
    )
    assert arr(tracer.deflections(grid, backend=backend)).shape == (4, 6, 2)
    assert arr(tracer.source_plane(grid, backend=backend)).shape == (4, 6, 2)
    assert arr(tracer.image(grid, backend=backend)).shape == (4, 6)
    assert arr(tracer.magnification(grid, backend=backend)).shape == (4, 6)
    # the flat evaluation of the same points, reshaped (per-point kernels: exact up to the
    # backend's vectorisation, 1e-14)
    np.testing.assert_allclose(
        arr(tracer.image(grid, backend=backend)),
        arr(tracer.image(XY[:24], backend=backend)).reshape(4, 6),
        rtol=1e-14,
    )


# ------------------------------------------------------------------------------------------
# image


@pytest.mark.parametrize("backend", BACKENDS)
def test_image_is_lens_light_at_theta_plus_source_light_at_beta(backend):
    lens_light = (Sersic((0.1, -0.15), (0.1, 0.05), 0.7, 3.0, 0.8), GaussianLight(sigma=0.3))
    source_light = (
        Exponential((0.05, 0.1), (-0.2, 0.1), 0.25, 3.0),
        CoreSersic((0.0, 0.05), (0.1, 0.0), 0.3, 2.0, 0.05, 0.5, 2.0, 1.5),
    )
    tracer = Tracer(
        Galaxy(mass=SIS(SIS_CENTRE, THETA_E), light=lens_light), Galaxy(light=source_light)
    )
    beta = XY - sis_deflection(XY, SIS_CENTRE, THETA_E)  # by hand
    ref = sum(np.asarray(p.image(XY, backend="numpy")) for p in lens_light) + sum(
        np.asarray(p.image(beta, backend="numpy")) for p in source_light
    )
    # beta by hand differs from the tracer's by ~1e-16; the source light's gradient is at most
    # ~30 per arcsec relative (the exponential's b / R_e near the centre), so 1e-12 relative
    np.testing.assert_allclose(arr(tracer.image(XY, backend=backend)), ref, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_image_counts_linear_profiles_at_unit_intensity(backend):
    basis = GaussianBasis((0.2, 0.6), (0.1, -0.15))
    tracer = Tracer(
        Galaxy(mass=SIS(SIS_CENTRE, THETA_E), light=(Sersic(intensity=0.5), basis)),
        Galaxy(light=(LinearSersic((0.05, 0.0), (0.1, 0.1), 0.3, 1.5), GaussianLight())),
    )
    beta = XY - sis_deflection(XY, SIS_CENTRE, THETA_E)
    ref = (
        Sersic(intensity=0.5).image(XY, backend="numpy")
        + GaussianLight((0.1, -0.15), sigma=0.2).image(XY, backend="numpy")
        + GaussianLight((0.1, -0.15), sigma=0.6).image(XY, backend="numpy")
        + Sersic((0.05, 0.0), (0.1, 0.1), 0.3, 1.5, 1.0).image(beta, backend="numpy")
        + GaussianLight().image(beta, backend="numpy")
    )
    # as above: hand-made beta, gradients of the light O(10) per arcsec
    np.testing.assert_allclose(arr(tracer.image(XY, backend=backend)), ref, rtol=1e-12)


# ------------------------------------------------------------------------------------------
# magnification


@pytest.mark.parametrize("backend", BACKENDS)
def test_sis_magnification_closed_form(backend):
    tracer = Tracer(Galaxy(mass=SIS(SIS_CENTRE, THETA_E)), Galaxy(light=Sersic()))
    r = np.hypot(XY[:, 0] - SIS_CENTRE[0], XY[:, 1] - SIS_CENTRE[1])
    assert np.any(r < THETA_E) and np.any(r > THETA_E)  # both signs of the magnification
    # |r - theta_E| >= 0.15 keeps 1 / det(I - H) well conditioned: error ~ eps r / 0.15
    np.testing.assert_allclose(
        arr(tracer.magnification(XY, backend=backend)), r / (r - THETA_E), rtol=1e-12
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_magnification_sums_the_hessians(backend):
    g1, g2 = 0.05, 0.03
    tracer = Tracer(
        (Galaxy(mass=SIS(SIS_CENTRE, THETA_E)), Galaxy(mass=ExternalShear(g1, g2))),
        Galaxy(light=Sersic()),
    )
    dx, dy = XY[:, 0] - SIS_CENTRE[0], XY[:, 1] - SIS_CENTRE[1]
    r3 = np.hypot(dx, dy) ** 3
    hxx = THETA_E * dy * dy / r3 + g1
    hyy = THETA_E * dx * dx / r3 - g1
    hxy = -THETA_E * dx * dy / r3 + g2
    ref = 1.0 / ((1 - hxx) * (1 - hyy) - hxy * hxy)
    # closed-form SIS + shear hessian; points near the (shifted) critical curve could amplify
    # rounding by |mu|: all |mu| here are below ~30, so 1e-11
    assert np.max(np.abs(ref)) < 30
    np.testing.assert_allclose(arr(tracer.magnification(XY, backend=backend)), ref, rtol=1e-11)


# ------------------------------------------------------------------------------------------
# linear profiles


def _linear_tracer():
    lens = Galaxy(
        mass=SIS(SIS_CENTRE, THETA_E),
        light=(
            Sersic(intensity=0.3),
            LinearSersic((0.1, -0.15), (0.05, 0.0), 0.6, 3.0),
            GaussianBasis((0.1, 0.4, 1.2), (0.1, -0.15), (0.05, 0.0)),
        ),
    )
    source = Galaxy(
        light=(
            LinearGaussian((0.0, 0.05), (0.1, -0.2), 0.15),
            GaussianLight(sigma=0.2, intensity=2.0),
            LinearExponential((0.02, 0.0), (0.0, 0.1), 0.2),
            LinearCoreSersic((0.0, 0.0), (0.0, 0.0), 0.3, 2.0, 0.05, 0.5, 2.0),
        )
    )
    return Tracer(lens, source)


def test_n_linear_and_linear_profiles_order():
    tracer = _linear_tracer()
    lin = tracer.linear_profiles
    assert [type(p) for p in lin] == [
        LinearSersic,
        GaussianBasis,
        LinearGaussian,
        LinearExponential,
        LinearCoreSersic,
    ]
    assert tracer.n_linear == 1 + 3 + 1 + 1 + 1
    assert Tracer(Galaxy(light=GaussianBasis(np.geomspace(0.05, 2.0, 11)))).n_linear == 11
    assert Tracer(Galaxy(light=Sersic())).n_linear == 0
    assert Tracer().n_linear == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_intensities_replaces_linear_profiles_in_order(backend):
    tracer = _linear_tracer()
    values = [1.5, 0.1, 0.2, 0.3, 2.5, 0.7, 4.0]
    solved = tracer.with_intensities(np.array(values))
    assert solved.n_linear == 0
    lens_light = solved.lenses[0].light
    src_light = solved.sources[0].light
    assert solved.lenses[0].mass == tracer.lenses[0].mass
    assert lens_light[0] == Sersic(intensity=0.3)  # parametric profiles untouched
    assert lens_light[1] == Sersic((0.1, -0.15), (0.05, 0.0), 0.6, 3.0, 1.5)
    assert lens_light[2] == MGELight((0.1, 0.4, 1.2), (0.1, 0.2, 0.3), (0.1, -0.15), (0.05, 0.0))
    assert src_light[0] == GaussianLight((0.0, 0.05), (0.1, -0.2), 0.15, 2.5)
    assert src_light[1] == GaussianLight(sigma=0.2, intensity=2.0)
    assert src_light[2] == Exponential((0.02, 0.0), (0.0, 0.1), 0.2, 0.7)
    assert src_light[3] == CoreSersic((0.0, 0.0), (0.0, 0.0), 0.3, 2.0, 0.05, 0.5, 2.0, 4.0)

    # the image: the parametric part plus each unit-intensity column times its value, with
    # every term built here from the profiles' images at theta and at beta (by hand)
    beta = XY - sis_deflection(XY, SIS_CENTRE, THETA_E)

    def im(p, at):
        return np.asarray(p.image(at, backend="numpy"))

    basis = tracer.lenses[0].light[2]
    ref = (
        im(Sersic(intensity=0.3), XY)
        + 1.5 * im(tracer.lenses[0].light[1], XY)
        + sum(
            v * im(GaussianLight(basis.centre, basis.ell_comps, s), XY)
            for v, s in zip(values[1:4], basis.sigmas, strict=True)
        )
        + 2.5 * im(tracer.sources[0].light[0], beta)
        + im(GaussianLight(sigma=0.2, intensity=2.0), beta)
        + 0.7 * im(tracer.sources[0].light[2], beta)
        + 4.0 * im(tracer.sources[0].light[3], beta)
    )
    # hand-made beta (~1e-16) and sums of positive terms: 1e-12 relative
    np.testing.assert_allclose(arr(solved.image(XY, backend=backend)), ref, rtol=1e-12)


def test_with_intensities_checks_the_count():
    tracer = _linear_tracer()
    with pytest.raises(ValueError, match="need 7 intensities, got 6"):
        tracer.with_intensities([1.0] * 6)
    with pytest.raises(ValueError, match="need 7 intensities, got 8"):
        tracer.with_intensities([1.0] * 8)
    plain = Tracer(Galaxy(light=Sersic()))
    assert plain.with_intensities([]) == plain
    with pytest.raises(ValueError, match="need 0 intensities, got 1"):
        plain.with_intensities([1.0])


# ------------------------------------------------------------------------------------------
# construction


def test_galaxy_accepts_one_profile_or_a_sequence():
    sis, ser = SIS(), Sersic()
    assert Galaxy(mass=sis, light=ser).mass == (sis,)
    assert Galaxy(mass=sis, light=ser).light == (ser,)
    assert Galaxy(mass=[sis], light=[ser, GaussianLight()]).light == (ser, GaussianLight())
    assert Galaxy(mass=sis, light=ser) == Galaxy(mass=(sis,), light=[ser])
    assert hash(Galaxy(mass=sis, light=ser)) == hash(Galaxy(mass=(sis,), light=(ser,)))
    assert Galaxy().mass == () and Galaxy().light == ()
    t = Tracer(Galaxy(mass=sis), Galaxy(light=ser))
    assert t.lenses == (Galaxy(mass=sis),) and t.sources == (Galaxy(light=ser),)
    assert t == Tracer([Galaxy(mass=sis)], (Galaxy(light=ser),))
    assert t != Tracer(Galaxy(mass=SIS(einstein_radius=1.1)), Galaxy(light=ser))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Galaxy(light=SIS()), r"Galaxy\.light\[0\] must be a LightProfile, got SIS"),
        (lambda: Galaxy(mass=Sersic()), r"Galaxy\.mass\[0\] must be a MassProfile, got Sersic"),
        (
            lambda: Galaxy(mass=(SIS(), Sersic())),
            r"Galaxy\.mass\[1\] must be a MassProfile, got Sersic",
        ),
        (lambda: Galaxy(light=[Sersic(), 3.0]), r"Galaxy\.light\[1\] must be a LightProfile"),
        (lambda: Galaxy(mass=5), r"Galaxy\.mass\[0\] must be a MassProfile, got int"),
        (lambda: Tracer(SIS()), r"Tracer\.lenses\[0\] must be a Galaxy, got SIS"),
        (lambda: Tracer((), Sersic()), r"Tracer\.sources\[0\] must be a Galaxy, got Sersic"),
        (lambda: Tracer([Galaxy(), "lens"]), r"Tracer\.lenses\[1\] must be a Galaxy, got str"),
    ],
)
def test_wrong_types_are_rejected_by_name(build, message):
    with pytest.raises(TypeError, match=message):
        build()


# ------------------------------------------------------------------------------------------
# JAX


def test_jax_inputs_select_jax_and_jit_reuses_the_program():
    tracer = Tracer(
        Galaxy(mass=SIS(SIS_CENTRE, THETA_E), light=GaussianBasis((0.2, 0.7))),
        Galaxy(light=Sersic((0.0, 0.05), (0.1, 0.0), 0.3, 2.0)),
    )
    xy = jnp.asarray(XY[:8])
    out = tracer.image(xy)  # no backend=: JAX, because the positions are JAX arrays
    assert isinstance(out, jax.Array)
    ref = arr(tracer.image(XY[:8], backend="numpy"))
    np.testing.assert_allclose(arr(out), ref, rtol=1e-12)  # kernel tolerance

    count = 0

    @jax.jit
    def run(t, p):
        nonlocal count
        count += 1
        return t.image(p)

    # every field is a pytree leaf (the basis' sigmas included), so new values reuse the program
    np.testing.assert_allclose(arr(run(tracer, xy)), ref, rtol=1e-12)
    other = Tracer(
        Galaxy(mass=SIS(SIS_CENTRE, 1.3), light=GaussianBasis((0.25, 0.7))),
        Galaxy(light=Sersic((0.0, 0.05), (0.1, 0.0), 0.3, 2.5)),
    )
    np.testing.assert_allclose(
        arr(run(other, xy)), arr(other.image(XY[:8], backend="numpy")), rtol=1e-12
    )
    assert count == 1


def test_image_gradient_in_the_lens_parameters_matches_finite_differences():
    xy = XY[:10]

    def total(p, backend):
        t = Tracer(
            Galaxy(mass=(SIS((p[0], p[1]), p[2]), ExternalShear(p[3], p[4]))),
            Galaxy(light=Sersic((0.0, 0.05), (0.1, 0.0), 0.4, 1.5)),
        )
        at = jnp.asarray(xy) if backend == "jax" else xy
        return t.image(at, backend=backend).sum()

    params = [0.1, -0.15, 1.2, 0.03, -0.02]
    grad = np.asarray(jax.grad(lambda p: total(p, "jax"))(jnp.asarray(params)))
    h = 1e-6
    fd = []
    for i in range(len(params)):
        up, down = list(params), list(params)
        up[i] += h
        down[i] -= h
        fd.append((total(up, "numpy") - total(down, "numpy")) / (2 * h))
    # central differences: h^2 truncation ~1e-12, rounding eps * sum / h ~1e-10
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_effective_einstein_radius_against_closed_forms():
    from scipy.optimize import brentq

    from twinlens.mass import SIS, Gaussian, PointMass

    # SIS: mean convergence theta_E / R, so exactly theta_E
    assert Tracer(Galaxy(mass=SIS((0.2, -0.1), 1.3)), ()).einstein_radius() == pytest.approx(
        1.3, rel=1e-9
    )
    # round Gaussian: mean convergence 2 k0 s^2 / R^2 (1 - exp(-R^2 / 2 s^2)) = 1
    k0, s = 3.0, 0.5
    want = brentq(lambda r: 2 * k0 * s**2 / r**2 * (1 - np.exp(-(r**2) / (2 * s**2))) - 1, 0.01, 5)
    gaussian = Tracer(Galaxy(mass=Gaussian((0.0, 0.0), (0.0, 0.0), s, k0, 1.0)), ())
    assert gaussian.einstein_radius() == pytest.approx(want, rel=1e-9)
    # a Gaussian plus a point mass (sum of components): mean convergence adds
    both = Tracer(
        Galaxy(mass=(Gaussian((0.0, 0.0), (0.0, 0.0), s, k0, 1.0), PointMass((0.0, 0.0), 0.4))), ()
    )
    want = brentq(
        lambda r: 2 * k0 * s**2 / r**2 * (1 - np.exp(-(r**2) / (2 * s**2))) + (0.4 / r) ** 2 - 1,
        0.01,
        5,
    )
    assert both.einstein_radius() == pytest.approx(want, rel=1e-9)
    assert np.isnan(Tracer(Galaxy(mass=SIS((0.0, 0.0), 0.1)), ()).einstein_radius(r_max=0.05))

"""Multi-plane lensing: the recursive lens equation against an independent ray tracer, the
single-plane limit, the chain-rule hessian against finite differences, the backends against
each other, imaging and the lens-equation solver with a two-plane lens, and bad input."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import scipy.optimize
from jax_loaded import jax_or_skip

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.lens_equation import ImageSolver
from twinlens.lensing.multiplane import MultiPlaneTracer, distance_ratios
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE, SIS, ExternalShear, MassSheet, PointMass, PowerLaw

BACKENDS = ("numpy", "numba", "jax")


def _backend(backend):
    if backend == "jax":
        pytest.importorskip("jax")
    return backend


def _cosmo(h0=70.0, om0=0.3):
    from astropy.cosmology import FlatLambdaCDM

    return FlatLambdaCDM(H0=h0, Om0=om0)


def _flat_distance(cosmo, z1, z2):
    """``D(z1, z2)``, Mpc, in a flat universe: the comoving distance between the redshifts
    over ``1 + z2`` (independent of astropy's own angular-diameter code path)."""
    dc = cosmo.comoving_distance([z1, z2]).to_value("Mpc")
    return (dc[1] - dc[0]) / (1.0 + z2)


def _points(n=60, seed=3, half=2.0):
    return np.random.default_rng(seed).uniform(-half, half, (n, 2))


def _three_planes():
    lens = Galaxy(
        mass=(
            SIE(centre=(0.02, -0.03), ell_comps=(0.12, -0.07), einstein_radius=1.1),
            ExternalShear(0.03, -0.02),
        ),
        redshift=0.5,
    )
    near = Galaxy(mass=SIS(centre=(-1.3, 0.4), einstein_radius=0.15), redshift=0.3)
    far = Galaxy(
        mass=PowerLaw(centre=(0.6, 0.7), ell_comps=(-0.05, 0.1), einstein_radius=0.3, slope=2.2),
        redshift=1.2,
    )
    return MultiPlaneTracer((lens, near, far), z_source=2.1)


# -- against an independent ray tracer --------------------------------------------------------


def _point_mass_deflection(theta, centre, theta_e):
    d = theta - np.asarray(centre)
    return theta_e**2 * d / np.sum(d * d, axis=-1, keepdims=True)


def test_two_point_masses_match_a_ray_tracer_in_physical_units():
    """Rays traced plane by plane in Mpc with physical deflection angles (the geometric form
    ``xi_j = D_j theta - sum_{i<j} D_ij alpha_hat_i``), distances straight from astropy."""
    cosmo = _cosmo()
    z1, z2, zs = 0.4, 1.1, 2.5
    c1, c2, te1, te2 = (0.1, -0.2), (0.5, 0.3), 0.9, 0.4

    def d(a, b):
        return _flat_distance(cosmo, a, b)

    theta = _points(200, seed=5)
    d2, ds = d(0, z2), d(0, zs)
    # reduced deflections are toward zs: alpha_hat_i = D_s / D_is * alpha_i
    hat1 = ds / d(z1, zs) * _point_mass_deflection(theta, c1, te1)
    xi2 = d2 * theta - d(z1, z2) * hat1
    hat2 = ds / d(z2, zs) * _point_mass_deflection(xi2 / d2, c2, te2)
    xis = ds * theta - d(z1, zs) * hat1 - d(z2, zs) * hat2
    expected = xis / ds

    tracer = MultiPlaneTracer(
        (
            Galaxy(mass=PointMass(centre=c2, einstein_radius=te2), redshift=z2),
            Galaxy(mass=PointMass(centre=c1, einstein_radius=te1), redshift=z1),
        ),
        z_source=zs,
        cosmology=cosmo,
    )
    got = tracer.source_plane(theta, "numpy")
    # rounding of D_ij D_s / (D_j D_is) against the Mpc products: a few ulps of ~1"
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    planes = tracer.plane_positions(theta, "numpy")
    np.testing.assert_allclose(planes[1], xi2 / d2, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(planes[0], theta)


def test_distance_ratios_closed_form_and_h0_independence():
    cosmo = _cosmo()
    zs = (0.3, 0.8)
    r = distance_ratios(zs, 2.0, cosmo)

    def d(a, b):
        return _flat_distance(cosmo, a, b)

    expected = d(0.3, 0.8) * d(0, 2.0) / (d(0, 0.8) * d(0.3, 2.0))
    assert r.shape == (3, 2)
    np.testing.assert_allclose(r[1, 0], expected, rtol=1e-14)
    np.testing.assert_array_equal(r[2], [1.0, 1.0])
    np.testing.assert_array_equal(np.triu(r[:2]), 0.0)
    # H0 rescales every distance alike: the ratios do not change
    np.testing.assert_allclose(distance_ratios(zs, 2.0, _cosmo(h0=50.0)), r, rtol=1e-12)
    # Omega_m does change them
    assert abs(distance_ratios(zs, 2.0, _cosmo(om0=0.5))[1, 0] - r[1, 0]) > 1e-4


# -- single-plane limits ----------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_mass_second_plane_is_single_plane_exactly(backend):
    b = _backend(backend)
    mass = (SIE(ell_comps=(0.1, 0.05), einstein_radius=1.2), ExternalShear(0.04, 0.01))
    source = Galaxy(light=Sersic(centre=(0.1, 0.0), effective_radius=0.3, sersic_index=1.5))
    single = Tracer(Galaxy(mass=mass), source)
    multi = MultiPlaneTracer(
        (Galaxy(mass=mass, redshift=0.5), Galaxy(mass=MassSheet(0.0), redshift=1.0)),
        source,
        z_source=2.0,
    )
    xy = _points()

    # to rounding: the two sum the same deflections in different orders (and on JAX the
    # single-plane tracer reads fixed fields the memo computed with the CPU kernel)
    def check(a, e):
        np.testing.assert_allclose(a, e, rtol=1e-14, atol=1e-15)

    for method in ("source_plane", "deflections", "image"):
        check(np.asarray(getattr(multi, method)(xy, b)), np.asarray(getattr(single, method)(xy, b)))
    # A_1 != I but plane 1 has no mass: the hessian is plane 0's
    check(np.asarray(multi.hessian(xy, b)), single.hessian(xy, "numpy"))


def test_one_plane_equals_tracer_and_ignores_the_cosmology():
    mass = (SIE(ell_comps=(-0.1, 0.05), einstein_radius=0.9), ExternalShear(-0.02, 0.03))
    single = Tracer(Galaxy(mass=mass))
    multi = MultiPlaneTracer(Galaxy(mass=mass, redshift=0.6), z_source=1.5, cosmology=_cosmo(60))
    xy = _points()
    np.testing.assert_array_equal(multi.source_plane(xy, "numpy"), single.source_plane(xy, "numpy"))
    np.testing.assert_array_equal(multi.hessian(xy, "numpy"), single.hessian(xy, "numpy"))
    np.testing.assert_array_equal(
        multi.magnification(xy, "numpy"), single.magnification(xy, "numpy")
    )


# -- hessian, backends, JAX -------------------------------------------------------------------


def test_hessian_matches_finite_differences_of_the_mapping():
    tracer = _three_planes()
    xy = _points(40, seed=11, half=1.8)
    h = 1e-5
    fd = np.empty((*xy.shape[:-1], 2, 2))
    for k in range(2):
        step = np.zeros(2)
        step[k] = h
        diff = tracer.deflections(xy + step, "numpy") - tracer.deflections(xy - step, "numpy")
        fd[..., :, k] = diff / (2 * h)
    hess = tracer.hessian(xy, "numpy")
    # central differences: error ~ h^2 * third derivatives (~ 1 / r^3 for r ~ 0.1")
    np.testing.assert_allclose(hess, fd, rtol=0, atol=1e-6)
    # a non-symmetric mapping: the off-diagonal entries differ somewhere
    assert np.max(np.abs(hess[..., 0, 1] - hess[..., 1, 0])) > 1e-4
    det = np.linalg.det(np.eye(2) - fd)
    np.testing.assert_allclose(1 / tracer.magnification(xy, "numpy"), det, rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        tracer.convergence(xy, "numpy"), 0.5 * (fd[..., 0, 0] + fd[..., 1, 1]), atol=1e-6
    )


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_backends_agree(backend):
    b = _backend(backend)
    tracer = _three_planes()
    xy = _points(300, seed=7, half=2.5)
    for method in ("source_plane", "hessian", "magnification", "plane_positions"):
        ref = np.asarray(getattr(tracer, method)(xy, "numpy"))
        got = np.asarray(getattr(tracer, method)(xy, b))
        # closed-form profiles: 1e-12 relative, with an absolute floor near zeros
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, err_msg=method)


def test_jax_jit_vmap_and_gradient_through_lens_parameters():
    jax = jax_or_skip()
    import jax.numpy as jnp

    from twinlens.model import set_paths

    tracer = _three_planes()
    xy = jnp.asarray(_points(50, seed=2))
    paths = (
        "lenses[0].mass[0].einstein_radius",
        "lenses[0].mass[0].ell_comps[0]",
        "lenses[1].mass[0].einstein_radius",
        "lenses[2].mass[0].slope",
    )

    def loss(values):
        t = set_paths(tracer, dict(zip(paths, values, strict=True)), False)
        return jnp.sum(t.source_plane(xy, "jax") ** 2) + jnp.sum(t.magnification(xy, "jax"))

    v0 = jnp.array([1.1, 0.12, 0.15, 2.2])
    grad = jax.jit(jax.grad(loss))(v0)
    assert np.all(np.isfinite(np.asarray(grad)))
    # against central differences of the compiled loss (eager, each operation compiles alone)
    eps = 1e-6
    value = jax.jit(loss)
    for k in range(len(paths)):
        dv = np.zeros(len(paths))
        dv[k] = eps
        fd = (value(v0 + dv) - value(v0 - dv)) / (2 * eps)
        np.testing.assert_allclose(float(grad[k]), float(fd), rtol=1e-5, atol=1e-6)

    one = jax.jit(lambda t, p: t.source_plane(p, "jax"))
    batch = jax.vmap(one, in_axes=(None, 0))(tracer, xy[:, None, :])
    np.testing.assert_allclose(
        np.asarray(batch)[:, 0], tracer.source_plane(np.asarray(xy), "numpy"), rtol=0, atol=1e-13
    )


def test_distance_ratios_may_be_traced():
    jax = jax_or_skip()
    import jax.numpy as jnp

    base = _three_planes()
    ratios = jnp.asarray(np.asarray(base.ratios))
    lenses, sources = base.lenses, base.sources
    xy = jnp.asarray(_points(20, seed=9))

    def loss(r):
        t = MultiPlaneTracer(lenses, sources, z_source=2.1, distance_ratios=r)
        return jnp.sum(t.source_plane(xy, "jax") ** 2)

    np.testing.assert_allclose(
        float(loss(ratios)), float(np.sum(base.source_plane(np.asarray(xy), "numpy") ** 2)), 1e-13
    )
    grad = jax.jit(jax.grad(loss))(ratios)
    assert np.all(np.isfinite(np.asarray(grad)))
    # beta_ij with i >= j never enter
    assert float(grad[0, 0]) == 0.0 and float(grad[1, 2]) == 0.0
    assert abs(float(grad[2, 1])) > 0.0


# -- imaging and the lens-equation solver -----------------------------------------------------


def _imaging_tracer():
    main = Galaxy(
        mass=(SIE(ell_comps=(0.1, -0.05), einstein_radius=0.8), ExternalShear(0.02, 0.01)),
        light=Sersic(ell_comps=(0.05, 0.0), effective_radius=0.5, intensity=0.5),
        redshift=0.4,
    )
    second = Galaxy(
        mass=SIS(centre=(0.6, -0.5), einstein_radius=0.15),
        light=Sersic(centre=(0.6, -0.5), effective_radius=0.1, intensity=1.0),
        redshift=0.9,
    )
    source = Galaxy(
        light=Sersic(centre=(0.05, 0.02), effective_radius=0.2, sersic_index=1.2, intensity=3.0)
    )
    return MultiPlaneTracer((main, second), source, z_source=2.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_light_is_seen_at_each_galaxy_plane(backend):
    b = _backend(backend)
    tracer = _imaging_tracer()
    xy = _points(80, seed=4, half=1.5)
    planes = tracer.plane_positions(xy, "numpy")
    main, second = tracer.lenses
    expected = (
        main.light[0]._image(xy[:, 0], xy[:, 1], "numpy")
        + second.light[0]._image(planes[1, :, 0], planes[1, :, 1], "numpy")
        + tracer.sources[0].light[0]._image(planes[2, :, 0], planes[2, :, 1], "numpy")
    )
    np.testing.assert_allclose(np.asarray(tracer.image(xy, b)), expected, rtol=1e-12, atol=1e-14)


def test_fit_imaging_and_likelihood_with_a_multi_plane_tracer():
    tracer = _imaging_tracer()
    grid = Grid2D((30, 30), 0.1, sub_size=2)
    psf = PSF.gaussian(0.15, 0.1, 7)
    data = simulate(tracer, grid, psf, noise_sigma=0.02, seed=1, backend="numpy")
    truth = FitImaging(data, tracer, "numba").log_likelihood
    # noise only: chi^2 near the number of pixels
    assert abs(FitImaging(data, tracer, "numba").chi_squared / 900 - 1) < 0.2
    moved = MultiPlaneTracer(
        (tracer.lenses[0], Galaxy(tracer.lenses[1].mass, tracer.lenses[1].light, redshift=1.2)),
        tracer.sources,
        z_source=2.0,
    )
    assert FitImaging(data, moved, "numba").log_likelihood < truth - 10
    if pytest.importorskip("jax"):
        np.testing.assert_allclose(
            float(FitImaging(data, tracer, "jax").log_likelihood), truth, rtol=1e-11
        )

    from twinlens.likelihood.batched import ImagingLikelihood

    like = ImagingLikelihood(data, tracer, ("lenses[0].mass[0].einstein_radius",))
    values = like.batch(np.array([[0.8], [0.75], [0.85]]), backend="numba")
    np.testing.assert_allclose(values[0], truth, rtol=1e-11)
    assert values[0] > values[1] and values[0] > values[2]
    np.testing.assert_allclose(like(np.array([0.8]), backend="jax"), truth, rtol=1e-11)


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_image_solver_with_a_two_plane_lens(backend):
    b = _backend(backend)
    tracer = MultiPlaneTracer(
        (
            Galaxy(
                mass=(SIE(ell_comps=(0.15, 0.05), einstein_radius=1.0), ExternalShear(0.03, 0.0)),
                redshift=0.5,
            ),
            Galaxy(mass=SIS(centre=(1.5, 0.8), einstein_radius=0.2), redshift=1.0),
        ),
        z_source=2.0,
    )
    source = np.array([0.1, 0.05])
    images = ImageSolver(window=2.5).solve(tracer, source, backend=b)
    positions, magnifications, parities = images.found()
    # independently: scipy's root finder from a grid of starts, on the numpy mapping
    roots: list = []
    for start in np.stack(np.meshgrid(*2 * [np.linspace(-2.4, 2.4, 17)]), -1).reshape(-1, 2):
        sol = scipy.optimize.root(lambda t: tracer.source_plane(t, "numpy") - source, start)
        residual = np.abs(tracer.source_plane(sol.x, "numpy") - source).max()
        if residual < 1e-12 and not any(np.abs(sol.x - r).max() < 1e-6 for r in roots):
            roots.append(sol.x)
    assert len(roots) == len(positions) == 4  # a quad (no central image: the SIE is singular)
    distance = np.linalg.norm(positions[:, None] - np.array(roots)[None], axis=-1)
    assert np.all(distance.min(axis=1) < 1e-9), distance
    np.testing.assert_allclose(tracer.source_plane(positions, "numpy") - source, 0.0, atol=1e-10)
    np.testing.assert_allclose(magnifications, tracer.magnification(positions, "numpy"), rtol=1e-8)
    assert sorted(parities.tolist()) == [-1, -1, 1, 1]


# -- identity and bad input -------------------------------------------------------------------


def test_value_identity_and_pickle():
    a, b = _three_planes(), _three_planes()
    assert a == b and hash(a) == hash(b)
    assert a != MultiPlaneTracer(a.lenses, a.sources, z_source=2.1, cosmology=_cosmo(om0=0.25))
    assert a != MultiPlaneTracer(a.lenses, a.sources, z_source=2.2)
    assert a != Tracer(a.lenses, a.sources)
    assert pickle.loads(pickle.dumps(a)) == a
    c = MultiPlaneTracer(a.lenses, z_source=2.1, cosmology=_cosmo())
    assert c == MultiPlaneTracer(a.lenses, z_source=2.1, cosmology=_cosmo())
    assert pickle.loads(pickle.dumps(c)) == c
    # redshifts are configuration, not fit parameters
    from twinlens.model import parameter_paths

    assert not any("redshift" in p or "z_source" in p for p in parameter_paths(a))


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Galaxy(mass=SIS(), redshift=-0.1), ValueError, r"Galaxy.redshift .*>= 0"),
        (lambda: Galaxy(mass=SIS(), redshift=float("nan")), ValueError, "Galaxy.redshift"),
        (lambda: Galaxy(mass=SIS(), redshift="0.5"), TypeError, "Galaxy.redshift"),
        (
            lambda: MultiPlaneTracer(Galaxy(mass=SIS(), redshift=1.0), z_source=1.0),
            ValueError,
            r"lenses\[0\].redshift must be in \[0, z_source\)",
        ),
        (
            lambda: MultiPlaneTracer(Galaxy(mass=SIS()), z_source=1.0),
            ValueError,
            r"lenses\[0\].redshift is None",
        ),
        (lambda: MultiPlaneTracer(Galaxy(mass=SIS(), redshift=0.5)), TypeError, "z_source"),
        (
            lambda: MultiPlaneTracer(Galaxy(mass=SIS(), redshift=0.5), z_source=-1.0),
            ValueError,
            "z_source must be a finite redshift > 0",
        ),
        (
            lambda: MultiPlaneTracer(
                Galaxy(mass=SIS(), redshift=0.5), Galaxy(redshift=1.5), z_source=2.0
            ),
            ValueError,
            r"sources\[0\].redshift must be None or z_source",
        ),
        (
            lambda: MultiPlaneTracer(
                Galaxy(mass=SIS(), redshift=0.5), z_source=2.0, distance_ratios=np.ones((3, 2))
            ),
            ValueError,
            r"distance_ratios must have shape",
        ),
        (
            lambda: MultiPlaneTracer(
                Galaxy(mass=SIS(), redshift=0.5),
                z_source=2.0,
                cosmology=_cosmo(),
                distance_ratios=np.ones((2, 1)),
            ),
            ValueError,
            "not both",
        ),
        (
            lambda: MultiPlaneTracer(Galaxy(mass=SIS(), redshift=0.5), z_source=2.0, cosmology=3),
            TypeError,
            "astropy.cosmology",
        ),
        (lambda: distance_ratios((0.5, 0.3), 2.0), ValueError, "strictly increasing"),
        (lambda: distance_ratios((0.5,), 0.5), ValueError, "z_source must be"),
    ],
)
def test_bad_input_is_named(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_potential_is_refused():
    with pytest.raises(NotImplementedError, match="no single lensing potential"):
        _three_planes().potential(_points(3), "numpy")


def test_single_plane_tracer_ignores_redshifts():
    mass = SIS(einstein_radius=1.0)
    xy = _points(10)
    np.testing.assert_array_equal(
        Tracer(Galaxy(mass=mass, redshift=0.5)).source_plane(xy, "numpy"),
        Tracer(Galaxy(mass=mass)).source_plane(xy, "numpy"),
    )


def test_public_name_is_lazy_and_the_docs_example_runs(capsys):
    import runpy
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, twinlens\n"
        "assert 'twinlens.lensing.multiplane' not in sys.modules\n"
        "assert twinlens.MultiPlaneTracer.__name__ in twinlens.__all__\n"
        "assert 'jax' not in sys.modules and 'astropy.cosmology' not in sys.modules\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    path = Path(__file__).parents[1] / "docs" / "examples" / "multiplane_quickstart.py"
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "4 images:" in out


# -- arrival times through several planes -----------------------------------------------------


def test_one_plane_arrival_times_are_the_single_plane_ones():
    from twinlens import cosmology
    from twinlens.lensing.point_sources import arrival_times, time_delays

    cosmo = _cosmo(h0=67.0, om0=0.32)
    mass = (SIE(ell_comps=(0.1, 0.05), einstein_radius=1.2), ExternalShear(0.04, 0.01))
    single = Tracer(Galaxy(mass=mass))
    multi = MultiPlaneTracer(Galaxy(mass=mass, redshift=0.55), z_source=1.9, cosmology=cosmo)
    d_dt = cosmology.time_delay_distance(0.55, 1.9, cosmo)
    xy = _points(80, seed=11)
    source = np.array([0.07, -0.03])
    for b in BACKENDS:
        _backend(b)
        ref = arrival_times(single, xy, source, d_dt, "numpy")
        got = np.asarray(multi.arrival_times(xy, source, b))
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0, err_msg=b)
        # routed through point_sources (no D_dt for a multi-plane tracer)
        np.testing.assert_allclose(arrival_times(multi, xy, source, backend=b), ref, rtol=1e-12)
        # without a source, each ray's own source-plane position ends the path
        own = arrival_times(single, xy[:, None], single.source_plane(xy, "numpy"), d_dt)[:, 0]
        np.testing.assert_allclose(np.asarray(multi.arrival_times(xy, None, b)), own, rtol=1e-12)
    # at the images of a source: the delays between them, relative
    images = ImageSolver(window=2.5).solve(single, source)
    pos = images.found()[0]
    assert len(pos) >= 2
    ref = time_delays(single, pos, source, d_dt)
    got = time_delays(multi, pos, source)
    assert np.max(np.abs(got - ref)) < 1e-12 * np.max(np.abs(ref))
    np.testing.assert_allclose(multi.time_delays(pos, None, "numba"), ref, rtol=0, atol=1e-11)


def test_arrival_times_match_physical_units_on_three_planes():
    """A point mass, an SIS and a point mass given by their masses and velocity dispersion;
    rays traced as straight lines in comoving coordinates (flat universe), bent by physical
    deflection angles; the delay of each path in seconds from the comoving geometry and the
    Shapiro delays of the masses, constants from astropy."""
    import astropy.constants as const
    import astropy.units as u

    cosmo = _cosmo()
    G = const.G.si.value
    c = const.c.si.value
    mpc = u.Mpc.to(u.m)
    arcsec = u.arcsec.to(u.rad)
    z = (0.3, 0.7, 1.2)
    zs = 2.4
    mass = (4e11 * const.M_sun.si.value, None, 1.5e11 * const.M_sun.si.value)
    sigma = 180e3  # m/s, the SIS on the middle plane
    centres = (np.array([0.1, -0.2]), np.array([-0.4, 0.3]), np.array([0.5, 0.6]))
    chi = [cosmo.comoving_distance(zi).to_value("Mpc") * mpc for zi in (*z, zs)]
    dist = [chi[i] / (1.0 + zz) for i, zz in enumerate((*z, zs))]  # D_i, D_s (flat)

    def hat(i, xi):
        """Physical deflection at physical position xi (m) on plane i, radians."""
        d = xi - dist[i] * centres[i] * arcsec
        r = np.linalg.norm(d, axis=-1, keepdims=True)
        if mass[i] is None:
            return 4 * np.pi * sigma**2 / c**2 * d / r
        return 4 * G * mass[i] / c**2 * d / r**2

    def shapiro(i, xi):
        """-(1 + z_i) / c times the physical potential (seconds), to a constant."""
        r = np.linalg.norm(xi - dist[i] * centres[i] * arcsec, axis=-1)
        if mass[i] is None:
            return -(1 + z[i]) * 4 * np.pi * sigma**2 / c**3 * r
        return -(1 + z[i]) * 4 * G * mass[i] / c**3 * np.log(r)

    theta = _points(150, seed=21, half=2.0) * arcsec
    x = chi[0] * theta  # comoving transverse position on plane 0
    slope = theta.copy()
    xs = [x]
    t = np.zeros(len(theta))
    for i in range(3):
        xi = xs[i] / (1.0 + z[i])
        t += shapiro(i, xi)
        slope = slope - hat(i, xi)
        xs.append(xs[i] + (chi[i + 1] - chi[i]) * slope)
    for i in range(3):  # the geometric delay of each segment, comoving
        d = xs[i] / chi[i] - xs[i + 1] / chi[i + 1]
        t += chi[i] * chi[i + 1] / (chi[i + 1] - chi[i]) * np.sum(d * d, -1) / (2 * c)
    t_days = t / 86400.0
    beta = xs[3] / chi[3] / arcsec

    def d_ang(a, b):
        return _flat_distance(cosmo, a, b) * mpc

    galaxies = []
    for i in range(3):  # Einstein radii of the convention: reduced toward zs
        ratio = d_ang(z[i], zs) / (d_ang(0, z[i]) * d_ang(0, zs))
        if mass[i] is None:
            te = 4 * np.pi * sigma**2 / c**2 * d_ang(z[i], zs) / d_ang(0, zs) / arcsec
            profile = SIS(centre=tuple(centres[i]), einstein_radius=te)
        else:
            te = np.sqrt(4 * G * mass[i] / c**2 * ratio) / arcsec
            profile = PointMass(centre=tuple(centres[i]), einstein_radius=te)
        galaxies.append(Galaxy(mass=profile, redshift=z[i]))
    tracer = MultiPlaneTracer(tuple(galaxies[::-1]), z_source=zs, cosmology=cosmo)
    xy = theta / arcsec
    np.testing.assert_allclose(tracer.source_plane(xy, "numpy"), beta, rtol=0, atol=1e-11)
    ref = t_days - t_days[0]
    scale = np.max(np.abs(ref))
    assert scale > 1.0  # days: a check with teeth
    for b in BACKENDS:
        _backend(b)
        got = np.asarray(tracer.time_delays(xy, None, b))
        print(f"{b}: max |dt - dt_physical| / max |dt| = {np.max(np.abs(got - ref)) / scale:.2e}")
        assert np.max(np.abs(got - ref)) < 1e-10 * scale, (b, np.max(np.abs(got - ref)))
        # the source given as each ray's traced position: the same
        got = np.asarray(tracer.time_delays(xy[:, None], beta[:, None], b))[:, 0]
        np.testing.assert_array_equal(got, 0.0)


def test_images_are_stationary_points_of_the_multi_plane_arrival_time():
    """Fermat's principle: with the source fixed, the arrival time's gradient vanishes at the
    images (wrong plane weights would leave a gradient of the order of the delays)."""
    tracer = _three_planes()
    source = np.array([0.05, 0.02])
    pos = ImageSolver(window=2.5).solve(tracer, source).found()[0]
    assert len(pos) >= 2
    eps = 1e-5

    def gradient(p):
        steps = np.array([[eps, 0.0], [-eps, 0.0], [0.0, eps], [0.0, -eps]])
        t = tracer.arrival_times(p[:, None, :] + steps, source, "numpy")
        return np.stack([t[:, 0] - t[:, 1], t[:, 2] - t[:, 3]], -1) / (2 * eps)

    off = np.abs(gradient(pos + 0.05)).max()
    at = np.abs(gradient(pos)).max()
    print(f"|grad t| at the images {at:.2e}, 0.05 arcsec off {off:.2e} days / arcsec")
    assert off > 1.0  # days per arcsec
    assert at < 1e-7 * off, (at, off)


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_arrival_times_backends_agree_and_jax_gradient(backend):
    b = _backend(backend)
    tracer = _three_planes()
    xy = _points(200, seed=9, half=2.5)
    source = np.array([0.1, -0.1])
    ref = tracer.arrival_times(xy, source, "numpy")
    np.testing.assert_allclose(np.asarray(tracer.arrival_times(xy, source, b)), ref, rtol=1e-12)
    if b != "jax":
        return
    import jax
    import jax.numpy as jnp

    from twinlens.model import set_paths

    # the Einstein radii of the first and last planes (a traced power-law slope is left out:
    # jit(grad) through the power law's potential in its slope compiles for ~100 s)
    paths = ("lenses[0].mass[0].einstein_radius", "lenses[2].mass[0].einstein_radius")

    def loss(values):
        t = set_paths(tracer, dict(zip(paths, values, strict=True)), False)
        return jnp.sum(t.time_delays(jnp.asarray(xy[:5]), jnp.asarray(source), "jax") ** 2)

    v0 = jnp.array([1.1, 0.3])
    grad = jax.jit(jax.grad(loss))(v0)
    jitted = jax.jit(loss)  # one compile for the four differences, not four eager runs
    for k in range(2):
        dv = np.zeros(2)
        dv[k] = 1e-6
        fd = (jitted(v0 + dv) - jitted(v0 - dv)) / 2e-6
        np.testing.assert_allclose(float(grad[k]), float(fd), rtol=1e-5)


def test_point_source_likelihood_delays_with_a_multi_plane_tracer():
    from twinlens.likelihood.point_source import PointSource, PointSourceData, model_delays

    tracer = _three_planes()
    source = np.array([0.05, 0.02])
    pos = ImageSolver(window=2.5).solve(tracer, source).found()[0]
    data = PointSourceData(positions=pos, position_sigma=0.005)
    for b in BACKENDS:
        _backend(b)
        got = np.asarray(model_delays(tracer, PointSource(centre=tuple(source)), data, b))
        ref = tracer.time_delays(pos, source, "numpy")[1:]
        np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=b)


def test_point_source_h0_rescales_the_multi_plane_delays_as_the_cosmology_does():
    # H0 = 60 given to the point source against the same tracer whose cosmology has H0 = 60:
    # astropy's distances at the other H0, an independent computation of the delays
    from astropy.cosmology import FlatLambdaCDM

    from twinlens.likelihood.point_source import PointSource, PointSourceData, model_delays

    tracer = _three_planes()
    assert tracer.h0 == 70.0
    source = np.array([0.05, 0.02])
    pos = ImageSolver(window=2.5).solve(tracer, source).found()[0]
    data = PointSourceData(positions=pos, position_sigma=0.005)
    other = dataclasses.replace(tracer, cosmology=FlatLambdaCDM(H0=60.0, Om0=0.3))
    ref = other.time_delays(pos, source, "numpy")[1:]
    point = PointSource(centre=tuple(source), h0=60.0)
    for b in BACKENDS:
        _backend(b)
        got = np.asarray(model_delays(tracer, point, data, b))
        np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=b)
    assert not np.allclose(ref, tracer.time_delays(pos, source, "numpy")[1:], rtol=0.1)
    jax = jax_or_skip()
    # traced H0: the delays go as 1 / H0, d(delay)/dH0 = -delay / H0
    grad = jax.grad(
        lambda h: model_delays(tracer, PointSource(centre=tuple(source), h0=h), data, "jax")[0]
    )(60.0)
    np.testing.assert_allclose(float(grad), -ref[0] / 60.0, rtol=1e-12)
    with pytest.raises(ValueError, match=r"PointSource\.h0 must be > 0"):
        PointSource(h0=-70.0)
    single = Tracer(tracer.lenses)  # a single-plane lens would ignore h0: refused
    with pytest.raises(TypeError, match=r"PointSource\.h0 scales a MultiPlaneTracer's delays"):
        model_delays(single, point, data, "numpy")


def test_arrival_times_bad_input():
    from twinlens.lensing.point_sources import arrival_times, fermat_potential, time_delays

    tracer = _three_planes()
    xy = _points(3)
    ratios = MultiPlaneTracer(
        tracer.lenses, z_source=2.1, distance_ratios=distance_ratios((0.3, 0.5, 1.2), 2.1)
    )
    with pytest.raises(ValueError, match="distance_ratios has no distances"):
        ratios.arrival_times(xy)
    with pytest.raises(TypeError, match="not used with a MultiPlaneTracer"):
        time_delays(tracer, xy, (0.0, 0.0), 3000.0)
    with pytest.raises(TypeError, match="needs time_delay_distance"):
        arrival_times(Tracer(tracer.lenses), xy, (0.0, 0.0))
    with pytest.raises(NotImplementedError, match="arrival_times"):
        fermat_potential(tracer, xy, (0.0, 0.0))
    with pytest.raises(ValueError, match="source must have shape"):
        tracer.arrival_times(xy, (0.0, 0.0, 1.0))

"""Cosmology, Fermat potential, time delays and the lens-equation solver, against closed forms
and independent algorithms."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax_loaded import jax_or_skip
from scipy.integrate import quad
from scipy.optimize import brentq

from twinlens import Galaxy, Tracer, cosmology
from twinlens.lensing.lens_equation import ImageSolver, solve_lens_equation
from twinlens.lensing.point_sources import arrival_times, fermat_potential, time_delays
from twinlens.mass import SIE, SIS, ExternalShear

# -- cosmology --------------------------------------------------------------------------------


def _flat_lcdm_distances(zl, zs, h0=70.0, om=0.3):
    # comoving distances by quadrature of 1 / E(z); flat: D_ds = (D_C(zs) - D_C(zl)) / (1 + zs)
    c_km_s = 299792.458

    def comoving(z):
        return (
            c_km_s
            / h0
            * quad(
                lambda t: 1 / math.sqrt(om * (1 + t) ** 3 + 1 - om), 0, z, epsabs=0, epsrel=1e-13
            )[0]
        )

    dl, ds = comoving(zl), comoving(zs)
    return dl / (1 + zl), ds / (1 + zs), (ds - dl) / (1 + zs)


def test_distances_against_quadrature():
    d = cosmology.lens_distances(0.5, 2.0)
    d_d, d_s, d_ds = _flat_lcdm_distances(0.5, 2.0)
    np.testing.assert_allclose([d.d_d, d.d_s, d.d_ds], [d_d, d_s, d_ds], rtol=1e-9)
    np.testing.assert_allclose(d.d_dt, 1.5 * d_d * d_s / d_ds, rtol=1e-9)
    assert cosmology.time_delay_distance(0.5, 2.0) == d.d_dt


def test_any_astropy_cosmology_is_accepted():
    from astropy.cosmology import FlatLambdaCDM, LambdaCDM

    # distances scale as 1 / H0
    half = cosmology.time_delay_distance(0.3, 1.5, FlatLambdaCDM(H0=35.0, Om0=0.3))
    np.testing.assert_allclose(half, 2 * cosmology.time_delay_distance(0.3, 1.5), rtol=1e-12)
    curved = cosmology.lens_distances(0.3, 1.5, LambdaCDM(H0=70.0, Om0=0.3, Ode0=0.6))
    assert curved.d_ds > 0 and curved.d_dt != cosmology.time_delay_distance(0.3, 1.5)
    with pytest.raises(TypeError, match=r"cosmology must be an astropy\.cosmology"):
        cosmology.lens_distances(0.3, 1.5, cosmology="Planck18")


@pytest.mark.parametrize(
    ("zl", "zs", "match"),
    [
        (-0.1, 1.0, "z_lens must be a finite redshift >= 0"),
        (0.5, -1.0, "z_source must be a finite redshift >= 0"),
        (0.5, 0.5, "z_source must be greater than z_lens"),
        (1.0, 0.5, "z_source must be greater than z_lens"),
        (float("nan"), 1.0, "z_lens must be a finite redshift"),
        (0.5, float("inf"), "z_source must be a finite redshift"),
    ],
)
def test_bad_redshifts_are_named(zl, zs, match):
    with pytest.raises(ValueError, match=match):
        cosmology.lens_distances(zl, zs)


def test_time_delay_units_against_astropy():
    import astropy.constants as const
    import astropy.units as u

    expected = (1000.0 * u.Mpc / const.c * (0.7 * u.arcsec**2).to(u.rad**2) / u.rad**2).to(u.day)
    np.testing.assert_allclose(cosmology.time_delay_days(0.7, 1000.0), expected.value, rtol=1e-12)


# -- SIS: closed forms --------------------------------------------------------------------------

SIS_LENS = Tracer(Galaxy(SIS(einstein_radius=1.2)))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_sis_two_images_closed_form(backend):
    theta_e, beta = 1.2, np.array([0.3, -0.4])  # |beta| = 0.5
    b = np.hypot(*beta)
    unit = beta / b
    images = ImageSolver().solve(SIS_LENS, beta, backend=backend)
    xy, mu, parity = images.found()
    assert images.complete and xy.shape == (2, 2)
    order = np.argsort(parity)  # saddle (-1) first
    # on the line through the source: beta + theta_E u (minimum), beta - theta_E u (saddle)
    np.testing.assert_allclose(
        xy[order], [beta - theta_e * unit, beta + theta_e * unit], atol=1e-12
    )
    np.testing.assert_allclose(mu[order], [-(theta_e - b) / b, (b + theta_e) / b], rtol=1e-10)
    np.testing.assert_array_equal(parity[order], [-1.0, 1.0])


def test_sis_time_delay_closed_form():
    # phi(saddle) - phi(minimum) = 2 theta_E |beta|: the saddle arrives later
    theta_e, beta = 1.2, np.array([0.3, -0.4])
    xy, _, parity = ImageSolver().solve(SIS_LENS, beta).found()
    d_dt = cosmology.time_delay_distance(0.5, 2.0)
    order = np.argsort(-parity)  # minimum first
    phi = fermat_potential(SIS_LENS, xy[order], beta)
    np.testing.assert_allclose(phi[1] - phi[0], 2 * theta_e * 0.5, rtol=1e-12)
    delay = time_delays(SIS_LENS, xy[order], beta, d_dt)
    expected = cosmology.time_delay_days(2 * theta_e * 0.5, d_dt)
    np.testing.assert_allclose(delay, [0.0, expected], rtol=1e-12)
    t = arrival_times(SIS_LENS, xy[order], beta, d_dt)
    np.testing.assert_allclose(t[1] - t[0], expected, rtol=1e-12)


def test_fermat_potential_is_stationary_at_images():
    lens = Tracer(
        Galaxy(
            (
                SIE.from_axis_ratio(einstein_radius=1.1, q=0.7, angle=25.0),
                ExternalShear(0.04, -0.03),
            )
        )
    )
    beta = np.array([0.05, 0.08])
    xy, _, _ = ImageSolver().solve(lens, beta).found()
    assert len(xy) == 4
    h = 1e-5
    for p in xy:  # central differences of phi: its gradient vanishes at an image
        grad = [
            (fermat_potential(lens, p + h * e, beta) - fermat_potential(lens, p - h * e, beta))
            / (2 * h)
            for e in np.eye(2)
        ]
        np.testing.assert_allclose(grad, 0.0, atol=1e-8)


# -- SIS + shear: the Einstein cross in closed form ---------------------------------------------


def _sis_shear_images(theta_e, gamma, b):
    """Images of a source at (b, 0) behind an SIS with shear (gamma_1, gamma_2) = (gamma, 0):
    x (1 - gamma) - theta_E cos(t) = b, y (1 + gamma) - theta_E sin(t) = 0."""
    out = [((b + theta_e) / (1 - gamma), 0.0)]
    if b < theta_e:
        out.append(((b - theta_e) / (1 - gamma), 0.0))
    cos_t = -b * (1 + gamma) / (2 * gamma * theta_e)
    if abs(cos_t) < 1:
        r = theta_e / (1 + gamma)
        sin_t = math.sqrt(1 - cos_t**2)
        out += [(r * cos_t, r * sin_t), (r * cos_t, -r * sin_t)]
    return np.array(out)


def _sis_shear_mu(xy, theta_e, gamma):
    x, y = xy[:, 0], xy[:, 1]
    r3 = np.hypot(x, y) ** 3
    a11 = 1 - gamma - theta_e * y * y / r3
    a22 = 1 + gamma - theta_e * x * x / r3
    a12 = theta_e * x * y / r3
    return 1 / (a11 * a22 - a12 * a12)


def _order(xy):
    key = np.round(xy, 8)  # images with equal x to rounding sort by y
    return np.lexsort((key[:, 1], key[:, 0]))


def _sorted(xy):
    return xy[_order(xy)]


@pytest.mark.parametrize("b", [0.05, 0.15, 0.3])
def test_sis_shear_closed_form(b):
    theta_e, gamma = 1.0, 0.1  # 4 images for b < 2 gamma theta_E / (1 + gamma) = 0.18
    lens = Tracer(Galaxy((SIS(einstein_radius=theta_e), ExternalShear(gamma, 0.0))))
    images = ImageSolver().solve(lens, np.array([b, 0.0]))
    xy, mu, parity = images.found()
    expected = _sis_shear_images(theta_e, gamma, b)
    assert len(xy) == len(expected) == (4 if b < 0.18 else 2)
    order = _order(xy)
    np.testing.assert_allclose(xy[order], _sorted(expected), atol=1e-11)
    mu_ref = _sis_shear_mu(xy[order], theta_e, gamma)
    np.testing.assert_allclose(mu[order], mu_ref, rtol=1e-9)
    np.testing.assert_array_equal(parity[order], np.sign(mu_ref))


def test_cross_off_axis_maps_back_to_the_source():
    lens = Tracer(Galaxy((SIS(einstein_radius=1.0), ExternalShear(0.06, 0.05))))
    beta = np.array([0.03, -0.04])
    xy, mu, parity = ImageSolver().solve(lens, beta).found()
    assert len(xy) == 4
    assert sorted(parity) == [-1, -1, 1, 1]  # two minima, two saddles
    np.testing.assert_allclose(lens.source_plane(xy), np.tile(beta, (4, 1)), atol=1e-10)
    np.testing.assert_allclose(mu, lens.magnification(xy), rtol=1e-12)


# -- SIE: an independent algorithm --------------------------------------------------------------


def _sie_images(profile, beta):
    """Images of an SIE by a 1D search: its deflection depends on the polar angle t only, so
    theta = r (cos t, sin t) with beta + alpha(t) parallel to (cos t, sin t), r > 0."""

    def parts(t):
        e = np.array([np.cos(t), np.sin(t)])
        alpha = np.asarray(
            profile.deflections(e.T.reshape(-1, 2) if e.ndim > 1 else e, backend="numpy")
        )
        v = alpha + beta
        return v[..., 0] * e[1] - v[..., 1] * e[0], v[..., 0] * e[0] + v[..., 1] * e[1]

    t = np.linspace(0, 2 * np.pi, 20001)
    f, _ = parts(t)
    roots = []
    for i in np.flatnonzero(np.sign(f[:-1]) != np.sign(f[1:])):
        root = brentq(lambda s: float(parts(np.array(s))[0]), t[i], t[i + 1], xtol=1e-15)
        r = float(parts(np.array(root))[1])
        if r > 0:
            roots.append((r * np.cos(root), r * np.sin(root)))
    return np.array(roots)


@pytest.mark.parametrize(("beta", "n"), [((0.08, 0.05), 4), ((0.3, 0.25), 2), ((0.0, 0.12), 4)])
def test_sie_against_angular_root_finding(beta, n):
    sie = SIE.from_axis_ratio(einstein_radius=1.0, q=0.6, angle=30.0)
    beta = np.array(beta)
    expected = _sie_images(sie, beta)
    xy, _, _ = ImageSolver().solve(Tracer(Galaxy(sie)), beta).found()
    assert len(xy) == len(expected) == n
    np.testing.assert_allclose(_sorted(xy), _sorted(expected), atol=1e-10)


# -- edge cases ----------------------------------------------------------------------------------


def test_source_outside_every_caustic_gives_one_image():
    lens = Tracer(Galaxy((SIS(einstein_radius=1.0), ExternalShear(0.05, 0.0))))
    images = ImageSolver(window=6.0).solve(lens, np.array([2.5, 1.0]))
    xy, mu, parity = images.found()
    assert images.complete and len(xy) == 1
    assert parity[0] == 1 and 1 < mu[0] < 2
    np.testing.assert_allclose(lens.source_plane(xy[0]), [2.5, 1.0], atol=1e-12)


def test_degenerate_ring_returns_points_on_the_ring():
    # round lens, source exactly behind its centre: a ring of solutions |theta| = theta_E
    images = ImageSolver(max_images=6).solve(SIS_LENS, np.array([0.0, 0.0]))
    assert not images.complete  # more solutions than slots
    xy, mu, _ = images.found()
    assert len(xy) == 6
    np.testing.assert_allclose(np.hypot(xy[:, 0], xy[:, 1]), 1.2, rtol=1e-10)
    assert np.all(np.abs(mu) > 1e6) and not np.any(np.isnan(mu))


def test_batched_sources_match_single_ones():
    lens = Tracer(Galaxy((SIS(einstein_radius=1.0), ExternalShear(0.06, 0.05))))
    sources = np.array([[[0.03, -0.04], [0.5, 0.1]], [[2.0, 0.0], [0.01, 0.02]]])
    solver = ImageSolver(window=3.5)
    batch = solver.solve(lens, sources)
    assert batch.positions.shape == (2, 2, 5, 2) and batch.complete.shape == (2, 2)
    for idx in np.ndindex(2, 2):
        one = solver.solve(lens, sources[idx])
        # the batch iterates until all its members converge: equal to rounding
        for a, b in zip(one, batch, strict=True):
            np.testing.assert_allclose(a, b[idx], rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(one.mask, batch.mask[idx])
    np.testing.assert_array_equal(batch.n_images, [[4, 2], [1, 4]])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="source must hold finite positions"):
        ImageSolver().solve(SIS_LENS, np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match=r"source must be real positions of shape \(\.\.\., 2\)"):
        ImageSolver().solve(SIS_LENS, np.array([0.1, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"ImageSolver\.window"):
        ImageSolver(window=-1.0)
    with pytest.raises(ValueError, match=r"ImageSolver\.cells must be an int >= 2"):
        ImageSolver(cells=1)
    with pytest.raises(ValueError, match=r"ImageSolver\.max_images"):
        ImageSolver(max_images=0)
    with pytest.raises(TypeError, match="tracer must be a Tracer"):
        ImageSolver().solve(SIS(), np.zeros(2))
    with pytest.raises(ValueError, match="found\\(\\) is for one source"):
        ImageSolver().solve(SIS_LENS, np.zeros((2, 2)) + 0.1).found()


def test_solve_lens_equation_shortcut():
    a = solve_lens_equation(SIS_LENS, np.array([0.1, 0.0]), cells=201)
    b = ImageSolver(cells=201).solve(SIS_LENS, np.array([0.1, 0.0]))
    np.testing.assert_array_equal(a.positions, b.positions)


# -- JAX ------------------------------------------------------------------------------------------

QUAD_LENS = Tracer(
    Galaxy(
        (SIE.from_axis_ratio(einstein_radius=1.1, q=0.75, angle=-20.0), ExternalShear(0.05, 0.02))
    )
)
QUAD_SOURCES = np.array([[0.04, 0.03], [-0.06, 0.01], [0.2, -0.15], [0.0, 0.09], [1.5, 1.5]])


def test_the_compiled_block_pass_equals_the_array_one():
    """The numba pass over the grid's blocks (parallel) against the numpy arrays' gather and
    reductions: the same slots and boxes, exactly."""
    from twinlens.lensing import lens_equation_loops as loops
    from twinlens.lensing.lens_equation_steps import _block_arrays

    solver = ImageSolver(cells=100)
    v = solver.vertices()
    rng = np.random.default_rng(5)
    mx, my = v[:, 0] - 0.3 * np.tanh(v[:, 0]), v[:, 1] + 0.01 * rng.normal(size=len(v))
    tri, image, boxes = _block_arrays(solver._layout, mx, my, np)
    pad, safe, _ = solver._layout
    out_tri, out_boxes = np.empty((*safe.shape[:2], 6)), np.empty((safe.shape[0], 4))
    loops.compiled().map_blocks(mx, my, safe, pad, out_tri, out_boxes)
    np.testing.assert_array_equal(out_tri.reshape(-1, 6), tri)
    np.testing.assert_array_equal(out_boxes, boxes)
    assert image.shape == tri.shape


def test_numba_and_jax_agree():
    pytest.importorskip("jax")
    solver = ImageSolver(cells=151)
    a = solver.solve(QUAD_LENS, QUAD_SOURCES, backend="numba")
    b = solver.solve(QUAD_LENS, QUAD_SOURCES, backend="jax")
    np.testing.assert_array_equal(a.mask, np.asarray(b.mask))
    np.testing.assert_array_equal(a.n_images, [4, 4, 2, 4, 1])
    np.testing.assert_allclose(np.asarray(b.positions), a.positions, atol=1e-10, rtol=0)
    np.testing.assert_allclose(np.asarray(b.magnifications), a.magnifications, rtol=1e-9)
    np.testing.assert_array_equal(np.asarray(b.parities), a.parities)


def test_jax_step_width_changes_nothing_but_the_schedule():
    jax = jax_or_skip()
    from twinlens.lensing.lens_equation import ACCELERATOR_BATCH, CPU_BATCH, jax_batch_size

    on_cpu = jax.default_backend() == "cpu"
    assert jax_batch_size(ImageSolver()) == (CPU_BATCH if on_cpu else ACCELERATOR_BATCH)
    wide = ImageSolver(cells=151).solve(QUAD_LENS, QUAD_SOURCES, backend="jax")
    # 5 sources in steps of 2: two full steps and a remainder
    narrow = ImageSolver(cells=151, batch_size=2).solve(QUAD_LENS, QUAD_SOURCES, backend="jax")
    for a, b in zip(wide, narrow, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind == "f":  # the vector width changes the rounding, nothing more
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        else:
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"ImageSolver\.batch_size must be an int >= 1"):
        ImageSolver(batch_size=0)


def test_jax_jit_and_vmap_over_sources_and_lens_parameters():
    jax = jax_or_skip()
    import jax.numpy as jnp

    solver = ImageSolver(cells=151)
    reference = solver.solve(QUAD_LENS, QUAD_SOURCES[:2], backend="numba")

    @jax.jit
    def positions(theta_e, source):
        lens = Tracer(
            Galaxy(
                (
                    SIE.from_axis_ratio(einstein_radius=theta_e, q=0.75, angle=-20.0),
                    ExternalShear(0.05, 0.02),
                )
            )
        )
        return solver.solve(lens, source).positions

    one = jax.vmap(positions, in_axes=(None, 0))(1.1, jnp.asarray(QUAD_SOURCES[:2]))
    np.testing.assert_allclose(np.asarray(one), reference.positions, atol=1e-10)
    # vmap over the Einstein radius: each member is its own lens
    radii = jnp.array([1.1, 1.3])
    both = jax.vmap(positions, in_axes=(0, None))(radii, jnp.asarray(QUAD_SOURCES[0]))
    np.testing.assert_allclose(np.asarray(both[0]), reference.positions[0], atol=1e-10)
    lens13 = Tracer(
        Galaxy(
            (
                SIE.from_axis_ratio(einstein_radius=1.3, q=0.75, angle=-20.0),
                ExternalShear(0.05, 0.02),
            )
        )
    )
    ref13 = solver.solve(lens13, QUAD_SOURCES[0], backend="numba")
    np.testing.assert_allclose(np.asarray(both[1]), ref13.positions, atol=1e-10)


def test_jax_time_delay_distance_is_traceable():
    jax = jax_or_skip()
    xy, _, _ = ImageSolver().solve(SIS_LENS, np.array([0.3, -0.4])).found()
    grad = jax.grad(
        lambda d: time_delays(SIS_LENS, jax.numpy.asarray(xy), np.array([0.3, -0.4]), d)[1]
    )(2000.0)
    np.testing.assert_allclose(
        float(grad), float(time_delays(SIS_LENS, xy, np.array([0.3, -0.4]), 1.0)[1]), rtol=1e-12
    )


def test_point_source_names_are_public_and_lazy():
    import subprocess
    import sys

    code = (
        "import sys, twinlens\n"
        "assert 'twinlens.lensing.lens_equation' not in sys.modules\n"
        "names = [twinlens.ImageSolver, twinlens.Images, twinlens.solve_lens_equation,\n"
        "         twinlens.fermat_potential, twinlens.arrival_times, twinlens.time_delays,\n"
        "         twinlens.lens_distances, twinlens.time_delay_distance,\n"
        "         twinlens.cosmology.time_delay_days]\n"
        "assert all(n.__name__ in twinlens.__all__ for n in names[:-1])\n"
        "assert 'jax' not in sys.modules and 'numba' not in sys.modules\n"
        "assert 'astropy.cosmology' not in sys.modules\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_docs_quickstart_runs(capsys):
    import runpy
    from pathlib import Path

    path = Path(__file__).parents[1] / "docs" / "examples" / "point_sources_quickstart.py"
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    # the printed D_dt against astropy's own distances (flat LCDM, H0 = 70, Om0 = 0.3)
    from astropy.cosmology import FlatLambdaCDM

    cosmo = FlatLambdaCDM(H0=70, Om0=0.3)
    d_d, d_s = (cosmo.angular_diameter_distance(z).value for z in (0.5, 2.0))
    d_ds = (cosmo.comoving_distance(2.0) - cosmo.comoving_distance(0.5)).value / 3.0
    assert out.startswith("4 images:") and f"D_dt = {1.5 * d_d * d_s / d_ds:.1f} Mpc" in out


@settings(max_examples=15)
@given(
    q=st.one_of(st.just(1.0), st.just(1.0 - 1e-8), st.floats(0.4, 1.0)),
    angle=st.floats(-90.0, 90.0),
    theta_e=st.floats(0.8, 1.5),
    g1=st.one_of(st.just(0.0), st.floats(-0.1, 0.1)),
    g2=st.one_of(st.just(0.0), st.floats(-0.1, 0.1)),
    bx=st.one_of(st.just(0.0), st.floats(-0.5, 0.5)),
    by=st.floats(-0.5, 0.5),
)
def test_numba_and_jax_agree_on_random_lenses(q, angle, theta_e, g1, g2, bx, by):
    pytest.importorskip("jax")
    lens = Tracer(
        Galaxy(
            (
                SIE.from_axis_ratio(einstein_radius=theta_e, q=q, angle=angle),
                ExternalShear(g1, g2),
            )
        )
    )
    solver = ImageSolver(cells=151, window=3.0)
    source = np.array([bx, by])
    a = solver.solve(lens, source, backend="numba")
    b = solver.solve(lens, source, backend="jax")
    np.testing.assert_array_equal(a.mask, np.asarray(b.mask))
    assert bool(a.complete) == bool(b.complete)
    if a.complete:  # else a ring (round lens, source behind it): any of its points will do
        np.testing.assert_allclose(np.asarray(b.positions), a.positions, atol=1e-10, rtol=0)
    # every image solves the lens equation, and the count is one an isothermal lens allows
    xy, _, _ = a.found()
    np.testing.assert_allclose(lens.source_plane(xy), np.tile(source, (len(xy), 1)), atol=1e-10)
    assert len(xy) in (1, 2, 3, 4) or not a.complete

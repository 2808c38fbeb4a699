"""Point-source log-likelihoods (positions, fluxes, time delays) against closed forms for a
singular isothermal sphere, across backends, with JAX gradients against finite differences,
and the [point_source] TOML table's errors."""

import math

import numpy as np
import pytest
from jax_loaded import jax_or_skip

from twinlens import Galaxy, Tracer
from twinlens.lensing.lens_equation import ImageSolver
from twinlens.likelihood.joint import JointLikelihood
from twinlens.likelihood.point_source import (
    PointSource,
    PointSourceData,
    PointSourceLikelihood,
    flux_chi_squared,
    image_plane_chi_squared,
    source_plane_chi_squared,
    time_delay_chi_squared,
)
from twinlens.mass import SIS, ExternalShear, PowerLaw

THETA_E, BETA, D_DT = 1.1, 0.3, 3000.0
SOLVER = ImageSolver(window=2.0, cells=81)


def _days_per_mpc_arcsec2():
    # independent of twinlens.cosmology: astropy's units
    import astropy.units as u
    from astropy.constants import c

    return float((u.Mpc * (u.arcsec.to(u.rad)) ** 2 / c).to_value(u.day))


def _sis():
    return Tracer(Galaxy(mass=SIS((0.0, 0.0), THETA_E)))


def _sis_images():
    """Images of a source at (BETA, 0): theta = BETA + THETA_E (minimum, first) and
    BETA - THETA_E (saddle)."""
    return np.array([[BETA + THETA_E, 0.0], [BETA - THETA_E, 0.0]])


def test_sis_time_delay_closed_form():
    # phi(+) - phi(-) = -2 theta_E beta: the saddle arrives 2 theta_E beta D_dt / c later
    expected = 2 * THETA_E * BETA * D_DT * _days_per_mpc_arcsec2()
    sigma = 0.7
    data = PointSourceData(_sis_images(), 0.01, [expected], sigma)
    truth = PointSource((BETA, 0.0), 1.0, D_DT)
    assert time_delay_chi_squared(_sis(), truth, data, "numpy") == pytest.approx(0, abs=1e-18)
    off = PointSource((BETA, 0.0), 1.0, 1.01 * D_DT)
    np.testing.assert_allclose(
        time_delay_chi_squared(_sis(), off, data, "numba"), (0.01 * expected / sigma) ** 2, 1e-10
    )
    # the likelihood is highest at the truth
    like = PointSourceLikelihood(data, "source")
    values = [like.log_likelihood(_sis(), PointSource((BETA, 0.0), 1.0, d)) for d in (2990, 3000)]
    assert values[1] > values[0]


def test_sis_source_plane_chi_squared_closed_form():
    # an SIS maps radial offsets one to one and stretches tangential ones by 1 / (1 - theta_E/r)
    rng = np.random.default_rng(3)
    observed = _sis_images() + rng.normal(0, 0.01, (2, 2))
    sigma = np.array([0.004, 0.006])
    source = np.array([BETA + 0.002, -0.001])
    expected = 0.0
    for theta, s in zip(observed, sigma, strict=True):
        r = math.hypot(*theta)
        n = theta / r
        t = np.array([-n[1], n[0]])
        d = theta * (1 - THETA_E / r) - source
        expected += ((d @ n) ** 2 + (d @ t) ** 2 / (1 - THETA_E / r) ** 2) / s**2
    data = PointSourceData(observed, sigma)
    point = PointSource(tuple(source))
    for backend in ("numpy", "numba", "jax"):
        value = source_plane_chi_squared(_sis(), point, data, backend)
        np.testing.assert_allclose(float(value), expected, rtol=1e-12)


def test_sis_image_plane_chi_squared():
    # the model images are exact; the chi^2 is that of the offsets, whatever the order
    offsets = np.array([[0.003, -0.002], [-0.001, 0.004]])
    observed = _sis_images() + offsets
    sigma = np.array([0.005, 0.002])
    expected = float(np.sum(np.sum(offsets**2, axis=1) / sigma**2))
    point = PointSource((BETA, 0.0))
    for order in ([0, 1], [1, 0]):
        data = PointSourceData(observed[order], sigma[order])
        for backend in ("numpy", "numba", "jax"):
            value = image_plane_chi_squared(_sis(), point, data, SOLVER, backend)
            np.testing.assert_allclose(float(value), expected, rtol=1e-8)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_wrong_number_of_images_is_minus_inf_not_nan(backend):
    data3 = PointSourceData(np.vstack([_sis_images(), [[0.0, 0.9]]]), 0.01)
    like = PointSourceLikelihood(data3, "image", SOLVER)
    assert float(like.log_likelihood(_sis(), PointSource((BETA, 0.0)), backend)) == -np.inf
    # a source outside the caustic has one image; two were observed
    data2 = PointSourceData(_sis_images(), 0.01)
    like = PointSourceLikelihood(data2, "image", SOLVER)
    far = PointSource((1.5, 0.2))
    assert float(like.log_likelihood(_sis(), far, backend)) == -np.inf


def test_sis_fluxes_closed_form():
    # |mu| = (beta + theta_E) / beta and (theta_E - beta) / beta
    mu = np.array([(BETA + THETA_E) / BETA, (THETA_E - BETA) / BETA])
    flux, sigma = 2.0, np.array([0.3, 0.2])
    data = PointSourceData(_sis_images(), 0.01, fluxes=flux * mu, flux_sigma=sigma)
    assert flux_chi_squared(_sis(), PointSource((BETA, 0.0), flux), data) < 1e-20
    value = flux_chi_squared(_sis(), PointSource((BETA, 0.0), 1.1 * flux), data, "jax")
    np.testing.assert_allclose(float(value), np.sum((0.1 * flux * mu / sigma) ** 2), rtol=1e-10)


def _quad():
    lens = Tracer(
        Galaxy(mass=(PowerLaw((0.01, -0.02), (0.1, 0.05), 1.2, 2.1), ExternalShear(0.03, -0.02)))
    )
    beta = np.array([0.05, 0.03])
    positions, mu, _ = ImageSolver(window=2.5, cells=201).solve(lens, beta, "numpy").found()
    assert len(positions) == 4
    rng = np.random.default_rng(7)
    data = PointSourceData(
        positions + rng.normal(0, 0.003, positions.shape),
        0.003,
        delays=[10.0, 3.0, -1.0],
        delay_sigma=[0.5, 0.4, 0.3],
        fluxes=np.abs(mu) * 1.5,
        flux_sigma=0.2,
    )
    return lens, PointSource(tuple(beta + 0.001), 1.4, 3100.0), data


def test_backends_agree_on_every_term():
    lens, point, data = _quad()
    for kind in ("image", "source"):
        like = PointSourceLikelihood(data, kind, ImageSolver(window=2.5, cells=101))
        ref = like.chi_squared(lens, point, "numpy")
        assert set(ref) == {"positions", "fluxes", "delays"}
        for backend in ("numba", "jax"):
            other = like.chi_squared(lens, point, backend)
            for name, value in ref.items():
                # image positions agree to 1e-10 arcsec; the chi^2 of 3 mas offsets to 1e-9
                np.testing.assert_allclose(float(other[name]), float(value), rtol=1e-9)


def test_jax_gradients_against_finite_differences():
    jax = jax_or_skip()
    jnp = jax.numpy

    lens, _point, data = _quad()
    pl = lens.lenses[0].mass[0]

    def chi2(p, term):
        tracer = Tracer(
            Galaxy(
                mass=(
                    PowerLaw(pl.centre, pl.ell_comps, p[0], pl.slope),
                    lens.lenses[0].mass[1],
                )
            )
        )
        ps = PointSource((p[1], p[2]), 1.4, p[3])
        return term(tracer, ps, data, "jax")

    p0 = jnp.array([1.2, 0.051, 0.031, 3100.0])
    steps = np.array([1e-6, 1e-6, 1e-6, 1e-2])
    for term in (time_delay_chi_squared, source_plane_chi_squared):
        grad = np.asarray(jax.jit(jax.grad(lambda p, t=term: chi2(p, t)))(p0))
        assert np.all(np.isfinite(grad))
        for i, h in enumerate(steps):
            e = np.zeros(4)
            e[i] = h
            fd = (float(chi2(p0 + e, term)) - float(chi2(p0 - e, term))) / (2 * h)
            # central differences: error ~ h^2 f''' and rounding ~ 1e-16 f / h
            np.testing.assert_allclose(grad[i], fd, rtol=1e-5, atol=1e-6 * abs(fd) + 1e-6)


def test_joint_likelihood_out_of_range_and_backends():
    lens, point, data = _quad()
    like = PointSourceLikelihood(data, "source")
    free = ("lenses[0].mass[0].einstein_radius", "point_source.time_delay_distance")
    joint = JointLikelihood(None, lens, point, like, free)
    vectors = np.array([[1.2, 3100.0], [1.2, 3300.0], [1.2, -5.0], [-1.0, 3000.0]])
    host = joint.batch(vectors, "numba")
    assert host[0] > host[1] and np.all(host[2:] == -np.inf)
    np.testing.assert_allclose(joint.batch(vectors, "jax"), host, rtol=1e-10)
    assert joint(vectors[0], "numpy") == pytest.approx(host[0], rel=1e-10)


def test_bad_input_raises_naming_the_parameter():
    pos = _sis_images()
    with pytest.raises(ValueError, match=r"positions must be real \(x, y\) pairs"):
        PointSourceData(pos[:, 0], 0.01)
    with pytest.raises(ValueError, match=r"position_sigma must be > 0"):
        PointSourceData(pos, 0.0)
    with pytest.raises(ValueError, match=r"delays must have shape \(1,\)"):
        PointSourceData(pos, 0.01, [1.0, 2.0], 0.1)
    with pytest.raises(ValueError, match=r"delay_sigma is needed with delays"):
        PointSourceData(pos, 0.01, [1.0])
    with pytest.raises(ValueError, match=r"fluxes must be finite"):
        PointSourceData(pos, 0.01, fluxes=[1.0, np.nan], flux_sigma=0.1)
    with pytest.raises(ValueError, match=r"PointSource.time_delay_distance must be > 0"):
        PointSource((0.0, 0.0), 1.0, -3000.0)
    with pytest.raises(ValueError, match=r"PointSource.flux must be > 0"):
        PointSource((0.0, 0.0), 0.0)
    with pytest.raises(ValueError, match=r"positions must be one of image, source, none"):
        PointSourceLikelihood(PointSourceData(pos, 0.01), "images")
    with pytest.raises(ValueError, match=r"max_images = 1"):
        PointSourceLikelihood(PointSourceData(pos, 0.01), "image", ImageSolver(max_images=1))


# -- the [point_source] table ---------------------------------------------------------------

_BASE = {
    "lens": [{"mass": [{"type": "SIS", "einstein_radius": {"uniform": [0.5, 2.0]}}]}],
    "source": [{"light": [{"type": "Sersic"}]}],
    "dataset": {"data": "d.fits", "noise_map": "n.fits", "psf": "p.fits"},
}


def _parse(point_source):
    from twinlens.job.config import parse_config

    return parse_config({**_BASE, "point_source": point_source}, read_data=False)


def _table(**changes):
    table = {
        "positions": [[1.4, 0.0], [-0.8, 0.0]],
        "position_sigma": 0.01,
        "delays": [30.0],
        "delay_sigma": 1.0,
        "centre": [{"uniform": [-0.5, 0.5]}, 0.0],
        "time_delay_distance": {"uniform": [1000.0, 6000.0]},
        "z_lens": 0.5,
        "z_source": 2.0,
    }
    table.update(changes)
    return {k: v for k, v in table.items() if v is not None}


def test_point_source_table_parses():
    config = _parse(_table())
    assert config.model.paths == (
        "lenses[0].mass[0].einstein_radius",
        "point_source.centre[0]",
        "point_source.time_delay_distance",
    )
    assert config.point_source.likelihood.positions == "image"
    assert config.point_source.likelihood.data.delays.tolist() == [30.0]
    # D_dt scales as 1 / H0
    d_dt = config.point_source.h0(np.array([1.0]))  # H0 of D_dt = 1 Mpc
    np.testing.assert_allclose(config.point_source.h0(2 * 1.0), d_dt / 2, rtol=1e-12)


def test_h0_is_the_cosmology_whose_time_delay_distance_was_given():
    """Independent of the reference cosmology inside ``h0``: a D_dt computed by astropy
    (quantities, not our code) for H0 = 63.1, Omega_m = 0.27 gives back 63.1."""
    from astropy import units as u
    from astropy.cosmology import FlatLambdaCDM

    from twinlens.job.config import PointSourceConfig

    cosmo = FlatLambdaCDM(H0=63.1, Om0=0.27)
    z_d, z_s = 0.6, 1.7
    d_d = cosmo.angular_diameter_distance(z_d)
    d_s = cosmo.angular_diameter_distance(z_s)
    # flat: D_ds from comoving distances
    d_ds = (cosmo.comoving_distance(z_s) - cosmo.comoving_distance(z_d)) / (1 + z_s)
    d_dt = ((1 + z_d) * d_d * d_s / d_ds).to_value(u.Mpc)
    config = PointSourceConfig(likelihood=None, z_lens=z_d, z_source=z_s, omega_m=0.27)
    np.testing.assert_allclose(config.h0(d_dt), 63.1, rtol=1e-10)
    # omega_m matters: the same D_dt read with 0.3 is another H0
    other = PointSourceConfig(likelihood=None, z_lens=z_d, z_source=z_s, omega_m=0.3)
    assert abs(float(other.h0(d_dt)) - 63.1) > 0.05  # 0.094 km/s/Mpc apart


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"positions": None}, r"\[point_source\].positions is missing"),
        ({"positions": [1.0, 2.0]}, r"\[point_source\].positions = \[1.0, 2.0\]: expected"),
        ({"delays": [1.0, 2.0]}, r"\[point_source\].delays = .*expected 1 numbers"),
        ({"delay_sigma": None}, r"\[point_source\].delay_sigma is missing"),
        ({"delay_sigma": -1.0}, r"\[point_source\].delay_sigma = -1.0: must be > 0"),
        ({"time_delay_distance": None}, r"\[point_source\].time_delay_distance is missing"),
        ({"position_likelihood": "sourse"}, r'position_likelihood = "sourse".*did you mean'),
        ({"centre": [0.0]}, r"\[point_source\].centre = \[0.0\]: expected a pair"),
        ({"fluxes": [1.0, 2.0], "flux_sigma": 0.1}, r"\[point_source\].flux is missing"),
        ({"z_source": None}, r"give both z_lens and z_source"),
        ({"z_source": 0.4}, r"z_source must be greater than z_lens"),
        ({"time_delay_distanse": 3.0}, r"time_delay_distanse: unknown entry.*did you mean"),
        ({"solver": {"cells": 1}}, r"\[point_source\].solver: cells must be an int >= 2"),
        ({"time_delay_distance": -3.0}, r"time_delay_distance must be > 0"),
    ],
)
def test_point_source_table_errors_name_the_key(changes, match):
    from twinlens.job.config import ConfigError

    with pytest.raises(ConfigError, match=match):
        _parse(_table(**changes))


def test_multi_plane_source_plane_and_flux_terms_use_the_full_jacobian():
    """A multi-plane lens's A = I - H is not symmetric: the source-plane chi^2 and the
    magnifications must use all four entries (reference: numpy's inverse of A, with A from
    central differences of the ray-shooting map, not from the tracer's hessian)."""
    from twinlens.lensing.multiplane import MultiPlaneTracer
    from twinlens.mass import SIE

    main = Galaxy(mass=SIE(centre=(0.0, 0.0), ell_comps=(0.1, -0.05), einstein_radius=1.0))
    lens = MultiPlaneTracer(
        (
            Galaxy(mass=main.mass, redshift=0.5),
            Galaxy(mass=SIS(centre=(0.9, 0.5), einstein_radius=0.4), redshift=1.1),
        ),
        z_source=2.0,
    )
    theta = np.array([[1.1, 0.3], [-0.8, -0.6], [0.2, 1.2]])
    beta = np.array([0.05, 0.02])
    sigma = np.array([0.01, 0.02, 0.015])
    h = 1e-6
    jac = np.empty((3, 2, 2))
    for k in range(2):
        step = np.zeros(2)
        step[k] = h
        plus = np.asarray(lens.source_plane(theta + step, "numpy"))
        minus = np.asarray(lens.source_plane(theta - step, "numpy"))
        jac[:, :, k] = (plus - minus) / (2 * h)
    assert np.abs(jac[:, 0, 1] - jac[:, 1, 0]).max() > 1e-3  # the case: not symmetric
    offsets = np.asarray(lens.source_plane(theta, "numpy")) - beta
    delta = np.linalg.solve(jac, offsets[..., None])[..., 0]
    expected = np.sum(np.sum(delta**2, axis=-1) / sigma**2)
    data = PointSourceData(theta, sigma, fluxes=[1.0, 2.0, 0.5], flux_sigma=[0.1, 0.1, 0.1])
    point = PointSource(tuple(beta), 1.3)
    for backend in ("numpy", "numba", "jax"):
        value = float(source_plane_chi_squared(lens, point, data, backend))
        assert value == pytest.approx(expected, rel=1e-6)  # central differences: ~1e-9
    mu = 1.0 / np.abs(np.linalg.det(jac))
    flux_expected = np.sum(((np.array([1.0, 2.0, 0.5]) - 1.3 * mu) / 0.1) ** 2)
    assert float(flux_chi_squared(lens, point, data, "numpy")) == pytest.approx(
        flux_expected, rel=1e-6
    )


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_a_faint_central_image_is_not_counted_below_the_magnification_limit(backend):
    # a cored lens makes a fifth, central image with |mu| ~ 0.008: observed are the bright four
    from twinlens.mass import NIE

    tracer = Tracer(
        Galaxy(mass=(NIE((0.0, 0.0), (0.1, 0.05), 1.2, 0.05), ExternalShear(0.03, -0.02)))
    )
    beta = np.array([0.04, 0.03])
    solver = ImageSolver(window=2.5, cells=201)
    positions, mu, _ = solver.solve(tracer, beta, "numpy").found()
    assert len(positions) == 5 and np.sort(np.abs(mu))[0] < 0.01 < np.sort(np.abs(mu))[1]
    bright = positions[np.abs(mu) > 0.01]
    observed = bright + np.array([[0.002, -0.001], [-0.001, 0.0], [0.0, 0.003], [0.001, 0.001]])
    data = PointSourceData(positions=observed, position_sigma=0.003)
    source = PointSource(centre=tuple(beta))
    if backend != "numpy":
        pytest.importorskip(backend)
    every = PointSourceLikelihood(data, "image", solver)
    assert every.log_likelihood(tracer, source, backend) == -np.inf  # five against four
    limited = PointSourceLikelihood(data, "image", solver, magnification_limit=0.01)
    # by hand: each observed image against the bright model image it was made from
    expected = -0.5 * np.sum((observed - bright) ** 2) / 0.003**2
    got = float(limited.log_likelihood(tracer, source, backend))
    assert got == pytest.approx(expected, rel=1e-8)
    too_high = PointSourceLikelihood(data, "image", solver, magnification_limit=6.0)
    assert too_high.log_likelihood(tracer, source, backend) == -np.inf  # a bright one dropped
    with pytest.raises(ValueError, match="magnification_limit must be a number >= 0"):
        PointSourceLikelihood(data, "image", solver, magnification_limit=-1.0)

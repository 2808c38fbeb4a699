"""Point images placed in the imaging at the model's positions (``imaging_positions =
"model"``): Newton's steps to the exact images, the PSF rendered at a traced position, and the
joint likelihood on every backend, where the imaging itself now constrains the source."""

from __future__ import annotations

import dataclasses
import tomllib

import numpy as np
import pytest
from jax_loaded import jax_or_skip

from twinlens.backend.concrete import batched
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.point_images import PointImages, point_image, render
from twinlens.imaging.psf import FWHM_PER_SIGMA, PSF
from twinlens.lensing.lens_equation import ImageSolver
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood.joint import JointLikelihood
from twinlens.likelihood.point_source import (
    PointSource,
    PointSourceData,
    PointSourceLikelihood,
    model_image_positions,
    model_images,
)
from twinlens.mass import SIE, ExternalShear

SCALE = 0.05
BETA = (0.02, 0.01)
FLUXES = (40.0, 25.0, 15.0, 10.0)
FREE = ("lenses[0].mass[0].einstein_radius", "point_source.centre[0]", "point_source.centre[1]")


def _lens() -> Galaxy:
    return Galaxy(mass=[SIE((0.0, 0.0), (0.15, -0.05), 1.0), ExternalShear(0.04, -0.02)])


@pytest.fixture(scope="module")
def quad():
    """A quad behind an SIE + shear, its exact images from the grid solver (a second
    algorithm), and imaging of the host with the four images in it (4 pixels FWHM PSF)."""
    host = Sersic(BETA, (0.1, 0.0), 0.2, 1.5, 2.0)
    truth = Tracer(_lens(), Galaxy(light=host))
    images = ImageSolver().solve(truth, np.array(BETA), "numpy")
    theta = np.asarray(images.positions)[np.asarray(images.mask)]
    assert theta.shape == (4, 2)
    grid = Grid2D.uniform(60, SCALE, sub_size=2)
    psf = PSF.gaussian(4 * SCALE, SCALE, 17)
    clean = simulate(truth, grid, psf, noise_sigma=0.05, seed=2)
    data = clean.data + np.tensordot(FLUXES, PointImages(theta).images(grid, psf), 1)
    dataset = Imaging(data, clean.noise_map, psf, grid)
    model = Tracer(_lens(), Galaxy(light=LinearSersic(BETA, (0.1, 0.0), 0.2, 1.5)))
    return theta, truth, dataset, model


def _joint(quad, observed, placed="model", positions="none"):
    _, _, dataset, model = quad
    psl = PointSourceLikelihood(
        PointSourceData(observed, 0.005),
        positions,
        in_imaging=True,
        imaging_positions=placed,
    )
    return JointLikelihood(dataset, model, PointSource(BETA), psl, FREE)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_newton_steps_from_the_observed_positions_reach_the_exact_images(quad, backend):
    theta, truth, _, _ = quad
    rng = np.random.default_rng(5)
    observed = theta + rng.uniform(-0.05, 0.05, theta.shape)  # a pixel off, any direction
    got = np.asarray(
        model_image_positions(truth, PointSource(BETA), PointSourceData(observed, 0.01), backend)
    )
    np.testing.assert_allclose(got, theta, rtol=0, atol=1e-10)
    # and they solve the lens equation itself to rounding
    beta = np.asarray(truth.source_plane(got, "numpy"))
    np.testing.assert_allclose(beta, np.broadcast_to(BETA, beta.shape), rtol=0, atol=1e-13)


@pytest.mark.parametrize("shift", ["fourier", "linear"])
def test_a_traced_position_renders_as_numpy_does_and_differentiates_as_the_gaussian(shift):
    jax = jax_or_skip()
    jnp = jax.numpy

    grid = Grid2D.uniform(40, SCALE)
    sigma_px = 2.0  # sampled finely enough that the Fourier shift is the Gaussian to 1e-9
    psf = PSF.gaussian(sigma_px * SCALE * FWHM_PER_SIGMA, SCALE, 25)
    pixels = np.arange(grid.n_pixels)
    xy = np.array([[0.1237, -0.0412], [-0.311, 0.2249]])
    expected = render(xy, grid, psf, pixels, shift)
    got = np.asarray(jax.jit(lambda p: render(p, grid, psf, pixels, shift))(jnp.asarray(xy)))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(expected[0], point_image(psf, grid, *xy[0], shift).reshape(-1))
    with pytest.raises(ValueError, match=r"shift must be one of 'fourier', 'linear', got 'cubic'"):
        render(xy, grid, psf, pixels, "cubic")
    if shift == "linear":
        return
    # d image / d x0 of a unit Gaussian of sigma s centred at x0: G (x - x0) / s^2
    jac = np.asarray(jax.jacfwd(lambda p: render(p, grid, psf, pixels, shift))(jnp.asarray(xy)))
    s = sigma_px * SCALE
    for k, (x0, y0) in enumerate(xy):
        dx, dy = grid.x.reshape(-1) - x0, grid.y.reshape(-1) - y0
        g = np.exp(-(dx**2 + dy**2) / (2 * s**2)) / (2 * np.pi * sigma_px**2)
        for axis, d in ((0, dx), (1, dy)):
            closed = g * d / s**2
            np.testing.assert_allclose(jac[k, :, k, axis], closed, atol=2e-8 * closed.max())


def test_at_exact_positions_the_model_placement_is_the_fixed_one_and_backends_agree(quad):
    theta = quad[0]
    moving, fixed = _joint(quad, theta, "model"), _joint(quad, theta, "observed")
    assert moving.imaging.point_images is None and fixed.imaging.point_images is not None
    ref = moving.reference
    vectors = ref + np.array([[0, 0, 0], [0, 0.004, 0], [0, 0, -0.003], [0.002, 0, 0]])
    # the images of the true lens and source are the observed ones: the same columns
    assert moving(ref, "numba") == pytest.approx(fixed(ref, "numba"), rel=1e-12)
    out = {b: moving.batch(vectors, b) for b in ("numpy", "numba", "jax")}
    assert np.all(np.isfinite(out["numpy"]))
    for b in ("numba", "jax"):
        np.testing.assert_allclose(out[b], out["numpy"], rtol=1e-10)
    # the source position moves the images, and with them the imaging term; with the images
    # fixed it leaves the imaging alone (the host's light has its own centre)
    still = fixed.batch(vectors, "numba")
    assert still[1] == still[0] and still[2] == still[0]
    assert out["numpy"][1] < out["numpy"][0] - 10 and out["numpy"][2] < out["numpy"][0] - 10


def test_the_imaging_alone_finds_the_source_position(quad):
    # positions unscored ("none") and the observed positions a pixel off: only where the model
    # puts the images in the imaging can tell the source position
    theta = quad[0]
    joint = _joint(quad, theta + 0.03, "model", "none")
    ref = joint.reference
    steps = np.linspace(-0.004, 0.004, 9)
    for column in (1, 2):
        vectors = np.repeat(ref[None], len(steps), 0)
        vectors[:, column] += steps
        log_l = joint.batch(vectors, "numba")
        assert np.argmax(log_l) == len(steps) // 2, log_l


def test_jax_gradient_through_the_moving_images_matches_finite_differences(quad):
    jax = jax_or_skip()

    joint = _joint(quad, quad[0] + 0.01, "model", "source")
    ref = joint.reference + np.array([0.001, 0.002, -0.001])
    grad = np.asarray(jax.jit(jax.grad(joint.jax_log_likelihood))(ref))
    assert np.all(np.isfinite(grad))
    for i in range(3):
        h = np.zeros(3)
        h[i] = 1e-6
        fd = (joint(ref + h, "numpy") - joint(ref - h, "numpy")) / 2e-6
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-3)


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_a_model_image_that_leaves_the_fitted_pixels_gives_minus_inf(quad, backend):
    joint = _joint(quad, quad[0], "model", "source")
    far = joint.reference.copy()
    far[0] = 4.0  # the images move to ~4 arcsec, off the 3-arcsec field
    out = joint.batch(np.stack([joint.reference, far]), backend)
    assert np.isfinite(out[0]) and out[1] == -np.inf


def test_a_source_that_makes_two_images_of_an_observed_quad_gives_minus_inf(quad):
    # outside the caustic the lens makes two images: the steps from the four observed ones
    # cannot find four, and positions left unscored ("none") must not hide it
    theta, truth, _, _ = quad
    outside = PointSource((0.1, 0.05))
    data = PointSourceData(theta, 0.005)
    for backend in ("numpy", "numba", "jax"):
        assert not bool(model_images(truth, outside, data, backend)[1])
        assert bool(model_images(truth, PointSource(BETA), data, backend)[1])
    joint = _joint(quad, theta, "model", "none")
    vectors = np.stack([joint.reference, [*joint.reference[:1], 0.1, 0.05]])
    for backend in ("numba", "jax"):
        out = joint.batch(vectors, backend)
        assert np.isfinite(out[0]) and out[1] == -np.inf


def test_a_batch_of_models_finds_each_members_images_as_alone(quad):
    # the joint's rows on numba and numpy take one batch of Newton steps for all the rows:
    # each member's positions and flag are those of its own model, stepped alone
    theta = quad[0]
    data = PointSourceData(theta, 0.005)
    radii = (0.98, 1.0, 1.02)
    betas = ((0.02, 0.01), (0.1, 0.05), (0.025, 0.005))  # the second makes two images

    def lens(radius):
        return Tracer(
            Galaxy(mass=[SIE((0.0, 0.0), (0.15, -0.05), radius), ExternalShear(0.04, -0.02)])
        )

    members = PointSource((batched([b[0] for b in betas]), batched([b[1] for b in betas])))
    for backend in ("numpy", "numba"):
        positions, found = model_images(lens(batched(radii)), members, data, backend)
        assert positions.shape == (3, 4, 2) and found.tolist() == [True, False, True]
        for k in range(3):
            alone, ok = model_images(lens(radii[k]), PointSource(betas[k]), data, backend)
            assert bool(ok) == bool(found[k])
            np.testing.assert_array_equal(positions[k], alone)


def test_rows_out_of_range_or_without_images_are_minus_inf_and_leave_the_others(quad):
    joint = _joint(quad, quad[0], "model", "source")
    ref = joint.reference
    rows = np.stack(
        [
            ref,
            [np.nan, *ref[1:]],
            [-1.0, *ref[1:]],  # a negative Einstein radius: outside its range
            [ref[0], 0.1, 0.05],  # a source outside the caustic: two images, not four
            ref + np.array([0.002, 0.003, -0.002]),
        ]
    )
    out = joint.batch(rows, "numba")
    assert out[1] == out[2] == out[3] == -np.inf
    # the valid rows as JAX evaluates them one at a time (its own program, row by row)
    jax_or_skip()
    for k in (0, 4):
        assert out[k] == pytest.approx(joint(rows[k], "jax"), rel=1e-10)


def test_model_placement_needs_the_images_in_the_imaging():
    data = PointSourceData([[1.0, 0.0], [-1.0, 0.0]], 0.01)
    with pytest.raises(ValueError, match=r'imaging_positions = "model" .* needs in_imaging'):
        PointSourceLikelihood(data, "source", imaging_positions="model")
    with pytest.raises(ValueError, match=r"imaging_positions must be one of observed, model"):
        PointSourceLikelihood(data, "source", in_imaging=True, imaging_positions="fitted")


def test_the_fit_file_places_the_images_at_the_model_positions(tmp_path):
    from twinlens.job import timedelay
    from twinlens.job.config import ConfigError, parse_config
    from twinlens.search.base import Objective

    text = timedelay.write_timedelay_example(tmp_path).read_text()
    seen = text.replace(
        'position_likelihood = "image"',
        'position_likelihood = "image"\nin_imaging = true\nimaging_positions = "model"',
    )
    config = parse_config(tomllib.loads(seen), tmp_path)
    likelihood = config.point_source.likelihood
    assert likelihood.images_move and likelihood.point_images is None
    with pytest.warns(RuntimeWarning, match="undersampled"):  # the example's 1.5-pixel FWHM
        objective = Objective.build(config.model, config.dataset, "numpy", likelihood)
    assert objective.likelihood.point_source_likelihood.images_move
    # at the truth (the example's start, but for D_dt; a round lens with an on-axis source
    # makes a ring, where the images are not points)
    truth = dict(timedelay.TIMEDELAY_TRUTH)
    truth["point_source.time_delay_distance"] = timedelay.true_time_delay_distance()
    truth = np.array([truth[p] for p in config.model.paths])
    start = config.model.instance(truth)
    source = config.model.point_source_instance(truth)
    placed = likelihood.point_images_at(start, source)
    observed = likelihood.data.positions
    expected = model_image_positions(start, source, likelihood.data, "numba")
    np.testing.assert_allclose(placed.positions, expected, rtol=0, atol=1e-12)
    # the simulated positions are the true images plus astrometric noise
    assert 0 < np.max(np.abs(placed.positions - observed)) < 5 * likelihood.data.position_sigma[0]
    assert dataclasses.replace(likelihood, imaging_positions="observed").point_images_at(
        start, source
    ) == PointImages(likelihood.data.positions)
    with pytest.raises(ConfigError, match=r'imaging_positions = "fited": choose one of'):
        parse_config(tomllib.loads(seen.replace('"model"', '"fited"')), tmp_path)
    alone = seen.replace("in_imaging = true\n", "")
    with pytest.raises(ConfigError, match=r"imaging_positions places the images .* in_imaging"):
        parse_config(tomllib.loads(alone), tmp_path)


def test_the_job_reports_the_best_fits_image_positions(tmp_path, monkeypatch):
    """``twinlens fit`` end to end on a short run: the images the imaging held at the best fit
    are the model's images of that fit."""
    import json

    from twinlens.job import run_fit, timedelay
    from twinlens.job.config import load_config

    # priors close about the truth: far from it the model makes no images where the data
    # show them (-inf), and a short run would find nothing else
    for path, value in timedelay.TIMEDELAY_TRUTH.items():
        if path in timedelay.TD_PRIORS and "effective_radius" not in path:
            monkeypatch.setitem(
                timedelay.TD_PRIORS, path, ("uniform", [value - 0.01, value + 0.01])
            )
    search = {"name": "nautilus", "n_live": 40, "n_like_max": 300, "seed": 4}
    path = timedelay.write_timedelay_example(tmp_path, search=search)
    text = path.read_text().replace(
        'position_likelihood = "image"',
        'position_likelihood = "source"\nin_imaging = true\nimaging_positions = "model"',
    )
    path.write_text(text)
    config = load_config(path)
    with pytest.warns(RuntimeWarning, match="undersampled"):  # the example's 1.5-pixel FWHM
        files = run_fit(config, output=tmp_path / "out", progress=False)
    record = json.loads(files["json"].read_text())
    placed = np.array(record["derived"]["point_image_positions"])
    best = np.array([record["parameters"][p]["max_likelihood"] for p in config.model.paths])
    expected = model_image_positions(
        config.model.instance(best),
        config.model.point_source_instance(best),
        config.point_source.likelihood.data,
        "numba",
    )
    np.testing.assert_allclose(placed, expected, rtol=0, atol=1e-9)
    assert len(record["derived"]["point_image_fluxes"]) == 4
    assert "point image positions, the model's (best fit)" in files["summary"].read_text()


def test_with_only_the_source_free_the_images_still_move(quad):
    theta, _, dataset, model = quad
    psl = PointSourceLikelihood(
        PointSourceData(theta, 0.005), "source", in_imaging=True, imaging_positions="model"
    )
    joint = JointLikelihood(dataset, model, PointSource(BETA), psl, FREE[1:])
    ref = joint.reference
    vectors = ref + np.array([[0.0, 0.0], [0.003, 0.0], [np.nan, 0.0], [5.0, 0.0]])
    out = {b: joint.batch(vectors, b) for b in ("numpy", "numba", "jax")}
    assert np.isfinite(out["numpy"][:2]).all() and out["numpy"][0] > out["numpy"][1]
    assert out["numpy"][2] == -np.inf and out["numpy"][3] == -np.inf  # NaN; images off the field
    for b in ("numba", "jax"):
        np.testing.assert_allclose(out[b], out["numpy"], rtol=1e-10)
    # rows rendered one at a time give the same numbers; a chunk of no rows is refused
    np.testing.assert_array_equal(joint.batch(vectors, "numba", chunk_size=1), out["numba"])
    with pytest.raises(ValueError, match=r"chunk_size must be an integer >= 1, got 0"):
        joint.batch(vectors, "numba", chunk_size=0)


def test_results_fall_back_to_the_observed_positions_when_the_best_fit_has_no_images(quad):
    from twinlens.job.results import best_fit_point_images

    theta, truth, _, _ = quad
    psl = PointSourceLikelihood(
        PointSourceData(theta, 0.005), "source", in_imaging=True, imaging_positions="model"
    )
    placed = best_fit_point_images(psl, truth, PointSource(BETA))
    np.testing.assert_allclose(placed.positions, theta, rtol=0, atol=1e-10)
    with pytest.warns(RuntimeWarning, match="draw the point images at the observed positions"):
        stand_in = best_fit_point_images(psl, truth, PointSource((0.1, 0.05)))  # two images
    assert stand_in == PointImages(theta)

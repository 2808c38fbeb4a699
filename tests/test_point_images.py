"""Point images in the imaging: the PSF placed at sub-pixel positions, and their fluxes solved
with the linear light on every backend."""

from __future__ import annotations

import numpy as np
import pytest

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.point_images import PointImages, point_image
from twinlens.imaging.psf import FWHM_PER_SIGMA, PSF, convolve
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE

SCALE = 0.05
SIGMA_PX = 2.0  # a PSF sampled finely enough to be band-limited to 1e-8


def _gaussian_psf(size=25):
    return PSF.gaussian(SIGMA_PX * SCALE * FWHM_PER_SIGMA, SCALE, size)


@pytest.mark.parametrize("x, y", [(0.237, -0.4121), (-0.311, 0.0249), (0.1, -0.05)])
def test_a_point_is_the_gaussian_psf_at_its_sub_pixel_position(x, y):
    grid = Grid2D.uniform(60, SCALE, origin=(0.1, -0.05))  # the kernel falls inside
    image = point_image(_gaussian_psf(), grid, x, y)
    # the closed form: a unit-flux Gaussian of sigma SIGMA_PX pixels centred on (x, y)
    gx, gy = grid.x, grid.y
    sigma = SIGMA_PX * SCALE
    expected = np.exp(-((gx - x) ** 2 + (gy - y) ** 2) / (2 * sigma**2)) / (2 * np.pi * SIGMA_PX**2)
    # the kernel is cut at 6 sigma (exp(-18) of the peak) and normalised over its samples
    assert np.max(np.abs(image - expected)) < 2e-9 * expected.max()
    assert image.sum() == pytest.approx(1.0, abs=1e-9)  # the shift keeps the flux
    centroid = (np.sum(image * gx), np.sum(image * gy))
    np.testing.assert_allclose(centroid, (x, y), atol=1e-9 * SCALE)


@pytest.mark.parametrize("row, col", [(7, 11), (0, 0), (19, 3)])
def test_a_point_on_a_pixel_centre_is_the_convolution_of_that_pixel(row, col):
    # a second route: a one-pixel image convolved with an asymmetric kernel (edges included)
    rng = np.random.default_rng(3)
    psf = PSF(rng.uniform(0.1, 1.0, size=(7, 5)))
    grid = Grid2D.uniform((20, 16), SCALE, origin=(0.3, -0.2))
    delta = np.zeros(grid.shape)
    delta[row, col] = 1.0
    expected = convolve(delta, psf)
    got = point_image(psf, grid, float(grid.x[row, col]), float(grid.y[row, col]))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("x, y", [(0.237, -0.4121), (-0.311, 0.0249)])
def test_the_linear_shift_keeps_flux_and_centroid_exactly(x, y):
    grid = Grid2D.uniform(60, SCALE, origin=(0.1, -0.05))
    psf = PSF.gaussian(0.1, SCALE, 15)  # undersampled: only flux and centroid are promised
    image = point_image(psf, grid, x, y, "linear")
    assert image.sum() == pytest.approx(1.0, abs=1e-14)
    centroid = (np.sum(image * grid.x), np.sum(image * grid.y))
    np.testing.assert_allclose(centroid, (x, y), atol=1e-13)
    # on a pixel centre both rules give the kernel itself
    cx, cy = float(grid.x[20, 30]), float(grid.y[20, 30])
    np.testing.assert_array_equal(
        point_image(psf, grid, cx, cy, "linear"), point_image(psf, grid, cx, cy, "fourier")
    )


def test_an_undersampled_psf_is_warned_about_and_a_bad_shift_refused():
    grid = Grid2D.uniform(20, 0.1)
    with pytest.warns(RuntimeWarning, match="the PSF is undersampled"):
        PointImages([(0.13, 0.02)]).images(grid, PSF.gaussian(0.15, 0.1, 7))
    with pytest.raises(ValueError, match=r"shift must be one of 'fourier', 'linear'"):
        PointImages([(0.13, 0.02)], shift="cubic")


def test_a_point_outside_the_grid_leaves_no_light():
    grid = Grid2D.uniform(20, SCALE)
    assert not np.any(point_image(_gaussian_psf(), grid, 5.0, 0.0))


@pytest.fixture(scope="module")
def quasar():
    """A lensed source with three point images whose fluxes are known."""
    grid = Grid2D.uniform(40, SCALE, sub_size=2)
    psf = PSF.gaussian(0.2, SCALE, 17)  # 4 pixels FWHM: sampled finely enough to be shifted
    lens = Galaxy(mass=SIE((0.0, 0.0), (0.1, -0.05), 0.6))
    host = Sersic((0.05, 0.02), (0.1, 0.0), 0.2, 1.5, 2.0)
    points = PointImages([(0.55, 0.1), (-0.5, -0.2), (0.05, 0.62)])
    fluxes = np.array([30.0, 20.0, 10.0])
    clean = simulate(Tracer(lens, Galaxy(light=host)), grid, psf, noise_sigma=0.05, seed=1)
    data = clean.data + np.tensordot(fluxes, points.images(grid, psf), 1)
    dataset = Imaging(data, clean.noise_map, psf, grid)
    model = Tracer(lens, Galaxy(light=LinearSersic((0.05, 0.02), (0.1, 0.0), 0.2, 1.5)))
    return dataset, model, points, fluxes


def test_fluxes_are_solved_with_the_linear_light_and_backends_agree(quasar):
    dataset, model, points, fluxes = quasar
    fits = {b: FitImaging(dataset, model, b, points) for b in ("numpy", "numba", "jax")}
    ref = fits["numpy"]
    # the noise (0.05 per pixel) allows about 0.3 of a flux unit per image here
    np.testing.assert_allclose(ref.point_image_fluxes, fluxes, atol=0.5)
    assert ref.solved_tracer.sources[0].light[0].intensity == pytest.approx(2.0, rel=0.01)
    # chi^2 per pixel consistent with the noise alone
    assert abs(float(ref.chi_squared) / dataset.mask_index.size - 1.0) < 0.1
    for b in ("numba", "jax"):
        assert float(fits[b].log_likelihood) == pytest.approx(float(ref.log_likelihood), rel=1e-12)
        np.testing.assert_allclose(
            np.asarray(fits[b].intensities), np.asarray(ref.intensities), rtol=1e-10
        )
    # the model image holds the point images: without them the residuals are far from noise
    assert np.nanmax(np.abs(ref.normalized_residual_map)) < 5.0
    without = FitImaging(dataset, model, "numba")
    assert float(without.chi_squared) > 5 * float(ref.chi_squared)


def test_the_imaging_likelihood_takes_point_images_on_every_backend(quasar):
    dataset, model, points, _ = quasar
    paths = ("lenses[0].mass[0].einstein_radius", "sources[0].light[0].effective_radius")
    like = ImagingLikelihood(dataset, model, paths, points)
    vectors = np.array([[0.6, 0.2], [0.62, 0.19], [0.58, 0.21]])
    single = FitImaging(dataset, model, "numpy", points).log_likelihood
    assert like(vectors[0], "numba") == pytest.approx(float(single), rel=1e-12)
    numba = like.batch(vectors, "numba")
    jax_values = like.batch(vectors, "jax")
    np.testing.assert_allclose(jax_values, numba, rtol=1e-11)
    assert numba[0] > numba[1] and numba[0] > numba[2]  # the truth fits best
    # a rebuilt-identical likelihood is the same object for JAX's program cache; other
    # positions are another likelihood
    assert like == ImagingLikelihood(dataset, model, paths, PointImages(points.positions))
    assert like != ImagingLikelihood(dataset, model, paths, PointImages([(0.55, 0.1)]))


def test_bad_point_images_are_refused_clearly(quasar):
    dataset, model, _, _ = quasar
    with pytest.raises(ValueError, match=r"positions must have shape \(n_images, 2\)"):
        PointImages([0.1, 0.2])
    with pytest.raises(ValueError, match="must be finite"):
        PointImages([(0.1, np.nan)])
    with pytest.raises(TypeError, match="point_images must be a PointImages"):
        FitImaging(dataset, model, "numpy", [(0.1, 0.2)])


def test_a_point_image_the_fit_cannot_see_is_refused_not_given_zero_flux(quasar):
    dataset, model, _, _ = quasar
    masked = dataset.with_grid(dataset.grid.circular_mask(0.6))
    # inside the grid but outside the mask, and beyond the grid: no pixel measures the flux
    for k, positions in ((1, [(0.3, 0.1), (0.9, 0.9)]), (0, [(5.0, 0.0), (0.3, 0.1)])):
        with pytest.raises(ValueError, match=rf"positions\[{k}\] = .* widen the mask"):
            FitImaging(masked, model, "numpy", PointImages(positions))
    # half an image at the mask's edge is still measured
    edge = PointImages([(0.6, 0.0)])
    assert FitImaging(masked, model, "numpy", edge).point_image_fluxes[0] >= 0.0


def test_point_images_beside_a_pixelised_source_are_refused():
    from pixelised_cases import lens_tracer, small_dataset

    from twinlens.inversion import Constant, Pixelization, Rectangular

    pixelised = Tracer(
        lens_tracer().lenses[0], Galaxy(light=Pixelization(Rectangular((6, 6)), Constant(1.0)))
    )
    points = PointImages([(0.3, 0.1)])
    with pytest.raises(ValueError, match="point_images beside a pixelised source"):
        FitImaging(small_dataset(), pixelised, "numpy", points)
    with pytest.raises(ValueError, match="point_images beside a pixelised source"):
        ImagingLikelihood(
            small_dataset(), pixelised, ("lenses[0].mass[0].einstein_radius",), points
        )

"""Adapt images (twinlens.inversion.adapt): a first fit's lensed source, read per source pixel
of a new mesh, made into adaptive-brightness regularisation whose hyper-parameters the
evidence sets.

The expectations come from constructions, not from our output: a lens that deflects nothing
puts each vertex of a pixel-aligned lattice on one pixel centre, so the signal there is that
pixel's value; a constant image has that constant for every source pixel that receives light;
the adapt image of a fit with lens light must not hold that light; and a tuning that starts
from constant regularisation cannot end below it."""

import numpy as np
import pytest
from pixelised_cases import LENS, irregular_source, lens_tracer, small_dataset

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import (
    AdaptiveBrightness,
    Constant,
    Delaunay,
    FitPixelised,
    Pixelization,
    Rectangular,
    RectangularAdaptDensity,
    adapt_image,
    adapt_signal,
    adaptive_pixelization,
    adaptive_weights,
)
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.mass import ExternalShear


def test_signal_on_a_pixel_aligned_lattice_is_the_image():
    """No deflection, one sub-pixel per pixel and a lattice of the grid's shape: every vertex
    sits on a pixel centre (vertex (i, j) on pixel row i, column j), so the mapping matrix is
    the identity and the signal of each source pixel is its pixel's value."""
    ny, nx = 6, 7
    grid = Grid2D.uniform((ny, nx), 0.1, 1)
    rng = np.random.default_rng(3)
    image = rng.uniform(0.5, 2.0, (ny, nx))
    dataset = Imaging(image, np.full((ny, nx), 0.1), PSF.gaussian(0.1, 0.1, 3), grid)
    nothing = Tracer(Galaxy(mass=ExternalShear(0.0, 0.0)))
    # the nearest-border rule keeps every border pixel where it is on an undeflected grid (the
    # smooth default pulls the corners in to the averaged border radius)
    pix = Pixelization(Rectangular((ny, nx)), Constant(1.0), relocation="nearest")
    fit = FitPixelised(dataset, nothing, pix)
    signal = adapt_signal(fit, image)
    np.testing.assert_allclose(signal, image.reshape(-1), rtol=1e-12)


@pytest.mark.parametrize("mesh", [RectangularAdaptDensity((9, 9)), Delaunay((10, 10))])
def test_signal_of_a_constant_image_is_that_constant(mesh):
    dataset = small_dataset()
    fit = FitPixelised(dataset, lens_tracer(), Pixelization(mesh, Constant(1.0)), "numba")
    signal = adapt_signal(fit, np.full(dataset.grid.shape, 2.5))
    lit = signal != 0.0
    assert lit.sum() > 0.8 * signal.size  # nearly every source pixel receives light
    np.testing.assert_allclose(signal[lit], 2.5, rtol=1e-12)
    # and it is linear in the image
    a, b = dataset.data, np.abs(dataset.data)
    np.testing.assert_allclose(
        adapt_signal(fit, a + 3 * b), adapt_signal(fit, a) + 3 * adapt_signal(fit, b), atol=1e-12
    )


def test_signal_refuses_an_image_of_another_shape_or_with_nan_inside_the_mask():
    dataset = small_dataset()
    fit = FitPixelised(dataset, lens_tracer(), Pixelization(Rectangular((6, 6)), Constant(1.0)))
    with pytest.raises(ValueError, match="shape"):
        adapt_signal(fit, np.ones((5, 5)))
    bad = np.ones(dataset.grid.shape)
    bad[dataset.grid.used.nonzero()[0][0], dataset.grid.used.nonzero()[1][0]] = np.nan
    with pytest.raises(ValueError, match="finite"):
        adapt_signal(fit, bad)


def test_adapt_image_is_the_source_model_zero_outside_the_mask():
    dataset = small_dataset()
    fit = FitPixelised(
        dataset, lens_tracer(), Pixelization(RectangularAdaptDensity((9, 9)), Constant(1.0))
    )
    image = adapt_image(fit)
    used = dataset.grid.used
    np.testing.assert_array_equal(image[~used], 0.0)
    np.testing.assert_array_equal(image[used], fit.model_image[used])


def test_adapt_image_leaves_out_the_lens_light():
    """Data of a bright lens light plus the lensed source, fitted with the light's intensity
    solved: the adapt image is the lensed source alone, so at the centre, where the lens
    light dominates and the source is faint, it stays far below the lens light."""
    grid = Grid2D.uniform(24, 0.12, sub_size=2).circular_mask(1.5)
    shape = dict(centre=(0.0, 0.0), ell_comps=(0.05, 0.03), effective_radius=0.6, sersic_index=2.5)
    psf = PSF.gaussian(0.15, 0.12, 5)
    truth = Tracer(Galaxy(mass=LENS, light=(Sersic(**shape, intensity=2.0),)), irregular_source())
    data = simulate(truth, grid, psf, noise_sigma=0.02, seed=4)
    source_only = Tracer(Galaxy(mass=LENS), irregular_source())
    lensed = simulate(source_only, grid, psf, noise_sigma=1e-9, seed=4).data
    light = Tracer(Galaxy(light=(LinearSersic(**shape),)))
    pix = Pixelization(RectangularAdaptDensity((12, 12)), Constant(0.5))
    fit = FitPixelised(data, Tracer(Galaxy(mass=LENS)), pix, "numba", lens_light=light)
    image = adapt_image(fit)
    centre = grid.used & (np.hypot(grid.x, grid.y) < 0.3)
    lens_peak = data.data[centre].max() - lensed[centre].max()
    assert lens_peak > 1.0  # the check can fail: the lens light is bright there
    assert np.abs(image - lensed)[centre].max() < 0.1 * lens_peak
    np.testing.assert_array_equal(image[~grid.used], 0.0)


def test_tuned_adaptive_regularisation_beats_constant_on_a_clumpy_source():
    """The tuning starts from constant regularisation (all weights 1) at its best lambda, so
    it cannot end lower; on the irregular source (bright clumps on an empty sky) the weights
    gain several units of evidence, as on the pixelised example (docs/pixelised.rst)."""
    from scipy.optimize import minimize_scalar

    dataset = small_dataset()
    tracer = lens_tracer()
    mesh = RectangularAdaptDensity((12, 12))
    first = FitPixelised(dataset, tracer, Pixelization(mesh, Constant(1.0)), "numba")

    def constant(t):
        pix = Pixelization(mesh, Constant(10.0**t))
        return -float(FitPixelised(dataset, tracer, pix, "numba").log_evidence)

    best_constant = -minimize_scalar(constant, bounds=(-4, 4), method="bounded").fun
    pix = adaptive_pixelization(first, mesh)
    assert isinstance(pix.regularization, AdaptiveBrightness)
    weights = pix.regularization.pixel_weights
    assert weights.shape == (mesh.n_pixels,) and weights.max() > 10 * weights.min()
    tuned = float(FitPixelised(dataset, tracer, pix, "numba").log_evidence)
    assert tuned > best_constant + 3.0
    # the weights are smallest (the source least smoothed) where the adapt image is bright
    signal = adapt_signal(first, adapt_image(first))
    assert weights[np.argmax(signal)] == pytest.approx(weights.min())


def test_untuned_adaptive_pixelization_uses_the_weights_given():
    dataset = small_dataset()
    mesh = RectangularAdaptDensity((8, 8))
    first = FitPixelised(dataset, lens_tracer(), Pixelization(mesh, Constant(1.0)), "numba")
    pix = adaptive_pixelization(first, mesh, tune=False, inner=2.0, outer=30.0, coefficient=0.3)
    expected = adaptive_weights(adapt_signal(first, adapt_image(first)), 2.0, 30.0, 1.0)
    np.testing.assert_allclose(pix.regularization.pixel_weights, expected)
    assert pix.regularization.coefficient == 0.3 and pix.mesh is mesh


def test_a_unit_coefficient_is_the_same_regularisation():
    """unit_coefficient moves the tuned coefficient into the weights: the same R, so the same
    evidence (to rounding), with lambda = 1."""
    mesh = RectangularAdaptDensity((10, 10))
    fit = FitPixelised(small_dataset(), lens_tracer(), Pixelization(mesh, Constant(1.0)), "numba")
    options = {"tune": False, "outer": 30.0, "coefficient": 0.3}
    tuned = adaptive_pixelization(fit, mesh, **options)
    unit = adaptive_pixelization(fit, mesh, **options, unit_coefficient=True)
    assert unit.regularization.coefficient == 1.0
    np.testing.assert_allclose(
        unit.regularization.pixel_weights,
        tuned.regularization.coefficient * tuned.regularization.pixel_weights,
        rtol=1e-15,
    )
    evidences = [
        float(FitPixelised(fit.dataset, fit.tracer, p, "numba").log_evidence) for p in (tuned, unit)
    ]
    # the same R to rounding; its log-determinant amplifies that to ~1e-9 relative
    np.testing.assert_allclose(evidences[0], evidences[1], rtol=1e-8)

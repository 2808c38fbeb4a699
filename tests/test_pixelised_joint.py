"""A pixelised source solved jointly with linear light profiles (lens light whose intensities
are linear parameters), against an independent dense numpy computation.

The reference stacks the source's blurred mapping matrix (rebuilt as in
test_pixelised_evidence: scipy interpolation of unit source pixels, averaging by reshaping,
``scipy.signal.convolve2d``) beside the lens light's blurred unit-intensity images (the light
profile evaluated on every sub-pixel of the mask and its blurring pixels, averaged and
convolved here; only the profile's pointwise formula is the library's), solves the normal
equations with ``np.linalg.solve`` and takes ``np.linalg.slogdet`` of the regularised block, as
autolens does."""

import numpy as np
import pytest
from pixelised_cases import LENS, irregular_source, lens_tracer
from scipy.signal import convolve2d
from test_pixelised_evidence import EPS, _reg_structure, reference_columns

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import (
    Constant,
    Delaunay,
    FitPixelised,
    Pixelization,
    RectangularAdaptDensity,
    log_evidence,
)
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import GaussianLight, LinearGaussian, LinearSersic, Sersic
from twinlens.likelihood.imaging import FitImaging

LENS_SERSIC = dict(
    centre=(0.0, 0.0), ell_comps=(0.05, 0.03), effective_radius=0.6, sersic_index=2.5
)


def _dataset():
    grid = Grid2D.uniform(24, 0.12, sub_size=2).circular_mask(1.5)
    truth = Tracer(
        Galaxy(mass=LENS, light=(Sersic(**LENS_SERSIC, intensity=0.4),)), irregular_source()
    )
    return simulate(truth, grid, PSF.gaussian(0.15, 0.12, 5), noise_sigma=0.05, seed=3)


def _light_column(dataset, profile):
    """The blurred image at the masked-in pixels of ``profile`` (a parametric light profile),
    from its values on every sub-pixel of the mask and of the pixels within the PSF's reach."""
    grid = dataset.grid
    f = grid.sub_size
    kernel = dataset.psf.kernel
    ky, kx = kernel.shape
    reach = convolve2d(grid.used.astype(float), np.ones((ky, kx)), mode="same") > 0.5
    offsets = ((np.arange(f) + 0.5) / f - 0.5) * grid.pixel_scale
    ox, oy = np.meshgrid(offsets, offsets)
    x = grid.x[..., None, None] + ox
    y = grid.y[..., None, None] + oy
    values = np.asarray(profile.image(np.stack([x, y], axis=-1), "numpy"))
    image = np.where(reach, values.mean(axis=(-1, -2)), 0.0)
    return convolve2d(image, kernel, mode="same")[grid.used]


def reference_joint(dataset, mesh, reg, points, vertices, fixed, linear):
    used = dataset.grid.used
    n_src = len(vertices)
    b_src = reference_columns(dataset, mesh, points, vertices)
    light = np.column_stack([_light_column(dataset, p) for p in linear])
    b = np.concatenate([b_src, light], axis=1)
    d = dataset.data[used] - sum(_light_column(dataset, p) for p in fixed)
    sigma = dataset.noise_map[used]
    bw = b / sigma[:, None]
    r = reg.coefficient * _reg_structure(reg, mesh, vertices) + EPS * np.eye(n_src)
    r_full = np.zeros((b.shape[1], b.shape[1]))
    r_full[:n_src, :n_src] = r
    a = bw.T @ bw + r_full
    x = np.linalg.solve(a, bw.T @ (d / sigma))
    # an unconstrained solve: the library's intensities are non-negative, so the cases here
    # must be ones where they come out positive (see reference_nonnegative for the others)
    assert np.all(x[n_src:] > 0)
    s = x[:n_src]
    chi2 = np.sum(((d - b @ x) / sigma) ** 2)
    sign_a, log_det_a = np.linalg.slogdet(a[:n_src, :n_src])
    sign_r, log_det_r = np.linalg.slogdet(r)
    assert sign_a > 0 and sign_r > 0
    norm = np.sum(np.log(2 * np.pi * sigma**2))
    return {
        "chi2": chi2,
        "reg": s @ r @ s,
        "ld_a": log_det_a,
        "ld_whole": np.linalg.slogdet(a)[1],
        "ld_r": log_det_r,
        "log_e": -0.5 * (chi2 + s @ r @ s + log_det_a - log_det_r + norm),
        "s": s,
        "a": x[n_src:],
        "model": b @ x + (dataset.data[used] - d),
    }


FIXED = GaussianLight(centre=(0.1, -0.2), sigma=0.3, intensity=0.05)
LINEAR = (LinearSersic(**LENS_SERSIC), LinearGaussian(centre=(0.0, 0.0), sigma=0.15))


@pytest.mark.parametrize(
    "mesh", [Delaunay((9, 9)), RectangularAdaptDensity((7, 8))], ids=["delaunay", "rect-adapt"]
)
def test_joint_solve_matches_dense_reference(mesh):
    dataset = _dataset()
    tracer = lens_tracer(shear=(0.03, -0.02))
    reg = Constant(0.8)
    lens_light = Tracer(Galaxy(light=(FIXED, *LINEAR)))
    fit = FitPixelised(dataset, tracer, Pixelization(mesh, reg), "numpy", lens_light=lens_light)
    points, vertices = np.asarray(fit.source_plane_points), np.asarray(fit.source_vertices)
    ref = reference_joint(
        dataset, mesh, reg, points, vertices, [FIXED], [p.with_intensity(1.0) for p in LINEAR]
    )
    terms = fit.terms
    # tolerances as in test_pixelised_evidence (ln det R carries ~1e-7 absolute of rounding)
    assert terms.chi_squared == pytest.approx(ref["chi2"], rel=1e-9)
    assert terms.regularization_term == pytest.approx(ref["reg"], rel=1e-8, abs=1e-9)
    assert terms.log_det_curvature_reg == pytest.approx(ref["ld_a"], rel=1e-10)
    assert terms.log_det_regularization == pytest.approx(ref["ld_r"], rel=1e-10, abs=1e-6)
    assert fit.log_evidence == pytest.approx(ref["log_e"], rel=1e-10, abs=1e-6)
    np.testing.assert_allclose(fit.intensities, ref["a"], rtol=1e-7)
    np.testing.assert_allclose(
        terms.reconstruction, ref["s"], rtol=1e-6, atol=1e-9 * np.abs(ref["s"]).max()
    )
    np.testing.assert_allclose(fit.model_image[dataset.grid.used], ref["model"], atol=1e-9)
    # the block convention matters: the whole system's determinant differs
    assert abs(ref["ld_whole"] - ref["ld_a"]) > 1.0
    assert terms.log_det_curvature_reg != pytest.approx(ref["ld_whole"], rel=1e-6)
    for backend in ("numba", "jax"):
        other = FitPixelised(
            dataset, tracer, Pixelization(mesh, reg), backend, lens_light=lens_light
        )
        # the backends factor the same matrices: 1e-10 (measured ~1e-15)
        assert float(other.log_evidence) == pytest.approx(fit.log_evidence, rel=1e-10)
        np.testing.assert_allclose(np.asarray(other.intensities), fit.intensities, rtol=1e-8)


def test_joint_solve_recovers_the_lens_light_and_beats_ignoring_it():
    dataset = _dataset()
    pix = Pixelization(Delaunay((10, 10)), Constant(1.0))
    lens_light = Tracer(Galaxy(light=(LINEAR[0],)))
    fit = FitPixelised(dataset, lens_tracer(), pix, "numpy", lens_light=lens_light)
    # the simulated intensity is 0.4 (noise 0.05 per pixel; measured 0.392)
    assert fit.intensities[0] == pytest.approx(0.4, rel=0.05)
    without = FitPixelised(dataset, lens_tracer(), pix, "numpy")
    assert fit.log_evidence > without.log_evidence + 100


def test_jax_gradient_with_linear_lens_light():
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    dataset = _dataset()
    mesh = Delaunay((9, 9))

    def f(theta, r_eff, backend="jax"):
        light = Tracer(Galaxy(light=(LinearSersic(**{**LENS_SERSIC, "effective_radius": r_eff}),)))
        return log_evidence(
            lens_tracer(theta), dataset, Pixelization(mesh, Constant(1.0)), backend, light
        )

    g = jax.grad(f, argnums=(0, 1))(1.01, 0.62)
    assert np.all(np.isfinite(g))
    h = 1e-6
    fd = (f(1.01, 0.62 + h, "numpy") - f(1.01, 0.62 - h, "numpy")) / (2 * h)
    assert float(g[1]) == pytest.approx(fd, rel=1e-5)
    values = jax.vmap(f)(jax.numpy.array([0.99, 1.01]), jax.numpy.array([0.6, 0.62]))
    assert float(values[1]) == pytest.approx(f(1.01, 0.62, "numpy"), rel=1e-10)


def test_linear_lens_light_in_fit_imaging():
    """FitImaging with a linear lens light beside a pixelised source: the joint solve, its
    intensities and a solved tracer with the parametric twin."""
    dataset = _dataset()
    pix = Pixelization(Delaunay((10, 10)), Constant(1.0))
    tracer = Tracer(
        Galaxy(mass=lens_tracer().lenses[0].mass, light=(LINEAR[0],)), Galaxy(pixelization=pix)
    )
    fit = FitImaging(dataset, tracer, "numpy")
    direct = FitPixelised(
        dataset, lens_tracer(), pix, "numpy", lens_light=Tracer(Galaxy(light=(LINEAR[0],)))
    )
    assert fit.log_likelihood == pytest.approx(direct.log_evidence, rel=1e-12)
    np.testing.assert_allclose(fit.intensities, direct.intensities, rtol=1e-12)
    solved = fit.solved_tracer.lenses[0].light[0]
    assert isinstance(solved, Sersic) and solved.intensity == pytest.approx(direct.intensities[0])
    np.testing.assert_allclose(
        fit.model_image[dataset.grid.used],
        direct.model_image[dataset.grid.used],
        rtol=1e-12,
    )
    assert float(FitImaging(dataset, tracer, "numba").log_likelihood) == pytest.approx(
        fit.log_likelihood, rel=1e-10
    )


def test_bad_lens_light_is_refused():
    dataset = _dataset()
    pix = Pixelization(Delaunay((9, 9)), Constant(1.0))
    with pytest.raises(ValueError, match="lens_light must be a Tracer of lens galaxies"):
        FitPixelised(dataset, lens_tracer(), pix, "numpy", lens_light=lens_tracer())
    # each message says which condition failed
    cases = [
        (lens_tracer(), r"; lenses\[0\] has mass profiles"),
        (Galaxy(light=(FIXED,)), r"; got a Galaxy"),
        (Tracer(Galaxy(light=(FIXED,)), Galaxy(light=(FIXED,))), r"; it has 1 source galaxies"),
    ]
    for bad, match in cases:
        with pytest.raises(ValueError, match=match):
            FitPixelised(dataset, lens_tracer(), pix, "numpy", lens_light=bad)


def reference_nonnegative(dataset, mesh, reg, points, vertices, linear):
    """The joint solve with non-negative intensities, independently: the stacked
    least-squares problem ``[B / sigma; (L_R^T, 0)] x ~ [d / sigma; 0]`` (``R = L_R L_R^T``)
    with the intensities bounded below by 0 and the source free, by scipy's bounded-variable
    least squares; the evidence from its minimum and ``slogdet`` of the regularised block."""
    from scipy.optimize import lsq_linear

    used = dataset.grid.used
    n_src = len(vertices)
    b_src = reference_columns(dataset, mesh, points, vertices)
    light = np.column_stack([_light_column(dataset, p) for p in linear])
    b = np.concatenate([b_src, light], axis=1)
    d = dataset.data[used]
    sigma = dataset.noise_map[used]
    r = reg.coefficient * _reg_structure(reg, mesh, vertices) + EPS * np.eye(n_src)
    root = np.linalg.cholesky(r).T
    stacked = np.concatenate(
        [b / sigma[:, None], np.concatenate([root, np.zeros((n_src, len(linear)))], axis=1)]
    )
    rhs = np.concatenate([d / sigma, np.zeros(n_src)])
    lower = np.concatenate([np.full(n_src, -np.inf), np.zeros(len(linear))])
    x = lsq_linear(stacked, rhs, bounds=(lower, np.inf), method="bvls", tol=1e-14).x
    s = x[:n_src]
    chi2 = np.sum(((d - b @ x) / sigma) ** 2)
    bw = b_src / sigma[:, None]
    sign_a, log_det_a = np.linalg.slogdet(bw.T @ bw + r)
    sign_r, log_det_r = np.linalg.slogdet(r)
    assert sign_a > 0 and sign_r > 0
    norm = np.sum(np.log(2 * np.pi * sigma**2))
    return {
        "misfit": chi2 + s @ r @ s,
        "log_e": -0.5 * (chi2 + s @ r @ s + log_det_a - log_det_r + norm),
        "a": x[n_src:],
        "model": b @ x,
    }


# a near-collinear basis: eight Gaussians whose widths differ by parts in 1e7 (they carry the
# lens light), a narrower one, one whose image is zero everywhere near the mask, and one off
# the lens whose intensity the data want negative
DEGENERATE = (
    *(LinearGaussian(centre=(0.0, 0.0), sigma=0.3 * (1.0 + 1e-7 * k)) for k in range(8)),
    LinearGaussian(centre=(0.0, 0.0), sigma=0.08),
    LinearGaussian(centre=(40.0, 40.0), sigma=0.05),
    LinearGaussian(centre=(-1.2, 0.3), sigma=0.08),
)


def test_joint_solve_with_a_degenerate_basis_is_finite_and_non_negative():
    dataset = _dataset()
    mesh = Delaunay((9, 9))
    reg = Constant(0.8)
    lens_light = Tracer(Galaxy(light=DEGENERATE))
    fit = FitPixelised(dataset, lens_tracer(), Pixelization(mesh, reg), "numpy", lens_light)
    assert np.isfinite(fit.log_evidence)
    assert np.all(fit.intensities >= 0.0)
    points, vertices = np.asarray(fit.source_plane_points), np.asarray(fit.source_vertices)
    ref = reference_nonnegative(
        dataset, mesh, reg, points, vertices, [p.with_intensity(1.0) for p in DEGENERATE]
    )
    assert ref["a"][-1] == 0.0  # the bound is active: without it that intensity is negative
    # invariants, not the intensities (the near-equal Gaussians share theirs arbitrarily):
    # the minimum of chi^2 + s^T R s, the evidence and the model; the minimum is flat along the
    # degenerate directions, so the solvers agree to the rounding of that flatness (measured
    # ~1e-11 relative)
    terms = fit.terms
    misfit = terms.chi_squared + terms.regularization_term
    assert misfit == pytest.approx(ref["misfit"], rel=1e-9)
    assert fit.log_evidence == pytest.approx(ref["log_e"], rel=1e-10, abs=1e-6)
    np.testing.assert_allclose(fit.model_image[dataset.grid.used], ref["model"], atol=1e-7)
    for backend in ("numba", "jax"):
        other = FitPixelised(dataset, lens_tracer(), Pixelization(mesh, reg), backend, lens_light)
        assert float(other.log_evidence) == pytest.approx(fit.log_evidence, rel=1e-10)


def test_reconstruction_errors_are_marginal_over_the_lens_light():
    """With linear lens light the source's errors are the source block of the inverse of the
    whole regularised system (marginal over the intensities), not the inverse of the source
    block (conditional on them): checked against the dense reference system."""
    from twinlens.inversion.source import reconstruction_errors

    dataset = _dataset()
    mesh = Delaunay((9, 9))
    reg = Constant(0.8)
    lens_light = Tracer(Galaxy(light=(FIXED, *LINEAR)))
    fit = FitPixelised(dataset, lens_tracer(), Pixelization(mesh, reg), "numpy", lens_light)
    points, vertices = np.asarray(fit.source_plane_points), np.asarray(fit.source_vertices)
    n_src = len(vertices)
    used = dataset.grid.used
    b = np.concatenate(
        [
            reference_columns(dataset, mesh, points, vertices),
            np.column_stack([_light_column(dataset, p.with_intensity(1.0)) for p in LINEAR]),
        ],
        axis=1,
    )
    bw = b / dataset.noise_map[used][:, None]
    a = bw.T @ bw
    a[:n_src, :n_src] += reg.coefficient * _reg_structure(reg, mesh, vertices) + EPS * np.eye(n_src)
    marginal = np.sqrt(np.diag(np.linalg.inv(a))[:n_src])
    conditional = np.sqrt(np.diag(np.linalg.inv(a[:n_src, :n_src])))
    errors = reconstruction_errors(fit)
    # the interpolation of the reference columns differs by rounding only (as in the evidence)
    np.testing.assert_allclose(errors, marginal, rtol=1e-6)
    # the check can fail: the lens light's freedom widens the central pixels' errors
    assert np.max(marginal / conditional) > 1.01
    # through FitImaging, the same
    tracer = Tracer(
        Galaxy(mass=lens_tracer().lenses[0].mass, light=(FIXED, *LINEAR)),
        Galaxy(pixelization=Pixelization(mesh, reg)),
    )
    whole = FitImaging(dataset, tracer, "numpy")
    np.testing.assert_allclose(reconstruction_errors(whole.pixelised.inversion), errors)

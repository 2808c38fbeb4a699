"""The imaging log-likelihood against an independent, hand-written pipeline.

The reference below shares no code with twinlens: sub-pixel centres by explicit offsets, the
SIS deflection and the Sersic profile from their closed forms (b_n from scipy), a mean over
sub-pixels, ``scipy.signal.convolve2d`` for the PSF, and chi-squared by hand.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.signal
import scipy.special

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import nnls
from twinlens.inversion.nnls import nnls_gram
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import GaussianBasis, LinearSersic, Sersic
from twinlens.likelihood import imaging as likelihood_module
from twinlens.likelihood.imaging import FitImaging, log_likelihood
from twinlens.mass import SIS

BACKENDS = ("numpy", "numba", "jax")
SHAPE, SCALE, SUB = (24, 26), 0.1, 3
THETA_E = 0.7
SOURCE = dict(centre=(0.05, -0.03), ell_comps=(0.15, -0.1), effective_radius=0.25)
N_SERSIC, I_EFF = 1.7, 2.0
LENS_LIGHT = dict(centre=(0.0, 0.0), ell_comps=(0.05, 0.02), effective_radius=0.6)


def _sersic_closed_form(x, y, centre, ell, r_eff, n, intensity):
    e1, e2 = ell
    e = math.hypot(e1, e2)
    q = (1 - e) / (1 + e)
    phi = 0.5 * math.atan2(e2, e1)
    dx, dy = x - centre[0], y - centre[1]
    xp = dx * math.cos(phi) + dy * math.sin(phi)
    yp = -dx * math.sin(phi) + dy * math.cos(phi)
    r = np.sqrt(q * xp**2 + yp**2 / q)
    b = scipy.special.gammaincinv(2 * n, 0.5)
    return intensity * np.exp(-b * ((r / r_eff) ** (1 / n) - 1))


def _reference_model(kernel, lens_light=True):
    """The blurred model image over the whole grid, computed independently."""
    ny, nx = SHAPE
    xc = (np.arange(nx) - (nx - 1) / 2) * SCALE
    yc = (np.arange(ny) - (ny - 1) / 2) * SCALE
    offsets = ((np.arange(SUB) + 0.5) / SUB - 0.5) * SCALE
    image = np.zeros(SHAPE)
    for oy in offsets:
        for ox in offsets:
            y, x = np.meshgrid(yc + oy, xc + ox, indexing="ij")
            r = np.hypot(x, y)
            bx, by = x - THETA_E * x / r, y - THETA_E * y / r  # SIS deflection
            light = _sersic_closed_form(
                bx,
                by,
                SOURCE["centre"],
                SOURCE["ell_comps"],
                SOURCE["effective_radius"],
                N_SERSIC,
                I_EFF,
            )
            if lens_light:
                light += _sersic_closed_form(
                    x,
                    y,
                    LENS_LIGHT["centre"],
                    LENS_LIGHT["ell_comps"],
                    LENS_LIGHT["effective_radius"],
                    4.0,
                    0.5,
                )
            image += light
    image /= SUB * SUB
    return scipy.signal.convolve2d(image, kernel, mode="same")


def _tracer(source_cls=Sersic, **extra):
    lens = Galaxy(
        mass=SIS((0.0, 0.0), THETA_E), light=Sersic(**LENS_LIGHT, sersic_index=4.0, intensity=0.5)
    )
    if source_cls is Sersic:
        light = Sersic(**SOURCE, sersic_index=N_SERSIC, intensity=I_EFF)
    else:
        light = source_cls(**SOURCE, sersic_index=N_SERSIC)
    return Tracer(lens, Galaxy(light=light))


def _dataset(psf, mask_radius=None):
    rng = np.random.default_rng(3)
    grid = Grid2D(SHAPE, SCALE, sub_size=SUB)
    if mask_radius is not None:
        grid = grid.circular_mask(mask_radius)
    model = _reference_model(psf.kernel)
    noise = np.full(SHAPE, 0.05) * (1 + 0.5 * rng.random(SHAPE))
    data = model + rng.normal(size=SHAPE) * noise
    return Imaging(data, noise, psf, grid), model


def _reference_log_l(dataset, model):
    used = dataset.grid.used
    chi = ((dataset.data - model) / dataset.noise_map)[used]
    return -0.5 * (np.sum(chi**2) + np.sum(np.log(2 * np.pi * dataset.noise_map[used] ** 2)))


# a 5 x 5 kernel runs the direct sum, an 11 x 11 one the FFT; both asymmetric, so a kernel
# applied flipped (correlation instead of convolution) would fail
_rng = np.random.default_rng(7)
PSFS = {
    "direct": PSF(np.exp(-_rng.random((5, 5)) * 3)),
    "fft": PSF(np.exp(-_rng.random((11, 11)) * 3)),
}


@pytest.mark.parametrize("method", sorted(PSFS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_log_likelihood_matches_independent_pipeline(method, backend):
    psf = PSFS[method]
    assert psf.resolved_method == method
    dataset, model = _dataset(psf)
    expected = _reference_log_l(dataset, model)
    got = float(log_likelihood(_tracer(), dataset, backend))
    # 1e-10 relative: the cross-backend target; the pipelines differ only in rounding
    assert got == pytest.approx(expected, rel=1e-10, abs=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mask_models_the_light_that_blurs_in(backend):
    psf = PSFS["fft"]
    dataset, model = _dataset(psf, mask_radius=0.9)
    expected = _reference_log_l(dataset, model)  # convolved over the whole image, then masked
    got = float(log_likelihood(_tracer(), dataset, backend))
    assert got == pytest.approx(expected, rel=1e-10, abs=0)
    # the check can fail: ignoring the light outside the mask changes log L by far more
    inside_only = np.where(dataset.grid.used, _unconvolved(), 0.0)
    unblurred = scipy.signal.convolve2d(inside_only, psf.kernel, mode="same")
    assert abs(_reference_log_l(dataset, unblurred) - expected) > 1e3 * abs(got - expected) + 1


def _unconvolved():
    delta = np.zeros((1, 1))
    delta[0, 0] = 1.0
    return _reference_model(delta)


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_intensity_is_recovered_from_noiseless_data(backend):
    psf = PSFS["direct"]
    model = _reference_model(psf.kernel)
    grid = Grid2D(SHAPE, SCALE, sub_size=SUB)
    noise = np.full(SHAPE, 0.1)
    dataset = Imaging(model, noise, psf, grid)
    fit = FitImaging(dataset, _tracer(LinearSersic), backend)
    # noise-free data: the solved intensity is the true one and chi^2 vanishes (to rounding)
    assert np.asarray(fit.intensities) == pytest.approx([I_EFF], rel=1e-10)
    assert float(fit.chi_squared) < 1e-16 * dataset.data.size / 0.1**2 * np.max(model) ** 2
    assert float(fit.log_likelihood) == pytest.approx(-0.5 * dataset.noise_normalization, rel=1e-12)
    assert fit.solved_tracer.sources[0].light[0] == Sersic(
        **SOURCE, sersic_index=N_SERSIC, intensity=float(np.asarray(fit.intensities)[0])
    )


def test_simulate_then_fit_round_trip_statistics():
    truth = _tracer()
    grid = Grid2D(SHAPE, SCALE, sub_size=SUB)
    dataset = simulate(truth, grid, PSFS["fft"], noise_sigma=0.05, seed=11)
    # at the truth, chi^2 is a sum of n squared standard normals: mean n, sd sqrt(2n)
    n = dataset.data.size
    chi2 = float(FitImaging(dataset, truth, "numpy").chi_squared)
    assert abs(chi2 - n) < 5 * math.sqrt(2 * n)
    again = simulate(truth, grid, PSFS["fft"], noise_sigma=0.05, seed=11)
    assert np.array_equal(again.data, dataset.data)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gaussian_basis_intensities_are_the_nnls_solution(backend):
    psf = PSFS["direct"]
    dataset, _ = _dataset(psf)
    basis = GaussianBasis(np.geomspace(0.05, 1.0, 6), (0.0, 0.0), (0.05, 0.02))
    tracer = Tracer(Galaxy(mass=SIS((0.0, 0.0), THETA_E), light=basis), Galaxy())
    fit = FitImaging(dataset, tracer, backend)
    # reference: scipy's NNLS on the design matrix built column by column from unit images
    reference_fit = FitImaging(dataset, tracer, "numpy")
    from twinlens.lensing.blurred import blurred_terms

    terms = blurred_terms(tracer, dataset, "numpy")
    w = 1 / dataset.noise_map.reshape(-1)[dataset.mask_index]
    d = dataset.data.reshape(-1)[dataset.mask_index]
    a, rnorm = scipy.optimize.nnls((terms[1:] * w).T, (d - terms[0]) * w)
    assert np.asarray(fit.intensities) == pytest.approx(a, rel=1e-8, abs=1e-10 * np.max(a))
    assert float(fit.chi_squared) == pytest.approx(rnorm**2, rel=1e-10)
    assert float(reference_fit.chi_squared) == pytest.approx(rnorm**2, rel=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nnls_matches_scipy(backend):
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(60):
        k = int(rng.integers(1, 7))
        c = rng.normal(size=(k, 40))
        r = rng.normal(size=40) + c.T @ rng.normal(size=k)
        expected, _ = scipy.optimize.nnls(c.T, r)
        got = np.asarray(nnls_gram(c @ c.T, c @ r, backend))
        worst = max(worst, np.max(np.abs(got - expected)) / max(1.0, np.max(np.abs(expected))))
    # normal equations square the condition number (here below 1e3), so 1e-10 not 1e-15
    assert worst < 1e-10


def test_nnls_passive_solve_in_loops_equals_lapack():
    """numba's masked solve (Gaussian elimination with partial pivoting in loops, run here as
    Python) against numpy's ``np.linalg.solve`` on the masked system, up to 30 unknowns with
    random passive sets, and the same error for a singular passive block."""
    rng = np.random.default_rng(8)
    for _ in range(40):
        k = int(rng.integers(1, 31))
        c = rng.normal(size=(k, k + 10))
        gram = c @ c.T
        rhs = rng.normal(size=k)
        passive = rng.random(k) < 0.6
        got = nnls._passive_solve_loops(gram, rhs, passive)
        expected = nnls._passive_solve(gram, rhs, passive)
        assert np.all(got[~passive] == 0.0)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())
    gram = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]])  # rows 0, 1 collinear
    for solve in (nnls._passive_solve_loops, nnls._passive_solve):
        with pytest.raises(np.linalg.LinAlgError, match=r"(?i)singular"):
            solve(gram, np.ones(3), np.array([True, True, False]))


def test_nnls_batched_equals_one_by_one():
    rng = np.random.default_rng(6)
    c = rng.normal(size=(9, 4, 30))
    r = rng.normal(size=(9, 30))
    gram = c @ np.swapaxes(c, -1, -2)
    rhs = (c @ r[..., None])[..., 0]
    batch = nnls_gram(gram, rhs, "numba")
    for i in range(9):
        expected, _ = scipy.optimize.nnls(c[i].T, r[i])
        assert batch[i] == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("n_problems", [1, 3])
def test_nnls_that_runs_out_of_steps_says_so(backend, n_problems, monkeypatch):
    # six unknowns, all positive at the optimum: the active set needs six outer steps
    rng = np.random.default_rng(7)
    c = rng.normal(size=(n_problems, 6, 40))
    r = np.einsum("bkn,bk->bn", c, 1.0 + rng.random((n_problems, 6)))
    gram, rhs = c @ np.swapaxes(c, -1, -2), np.einsum("bkn,bn->bk", c, r)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within the default limit: solved, and silent
        nnls_gram(gram, rhs, backend)
    monkeypatch.setattr(nnls, "MAX_ITER_PER_UNKNOWN", 0)  # one step allowed
    with pytest.warns(RuntimeWarning, match=f"{n_problems} of {n_problems} problems .6 unknowns"):
        stopped = nnls_gram(gram, rhs, backend)
    assert np.all(np.isfinite(stopped)) and np.all(stopped >= 0.0)
    expected, _ = scipy.optimize.nnls(c[0].T, r[0])
    assert not np.allclose(stopped[0], expected)  # the warning is not a false alarm


def test_jax_nnls_that_runs_out_of_steps_is_counted_and_the_likelihood_warns(monkeypatch):
    # a compiled program cannot warn: the JAX solver counts the problems that ran out of
    # steps, and the likelihood's programs return the count and warn after the call
    from twinlens.inversion.nnls import count_unconverged
    from twinlens.likelihood.batched import ImagingLikelihood, _jax_batch, _jax_single

    rng = np.random.default_rng(7)
    c = rng.normal(size=(3, 6, 40))
    r = np.einsum("bkn,bk->bn", c, 1.0 + rng.random((3, 6)))
    gram, rhs = c @ np.swapaxes(c, -1, -2), np.einsum("bkn,bn->bk", c, r)
    dataset, _ = _dataset(PSFS["direct"])
    basis = GaussianBasis(np.geomspace(0.05, 1.0, 6), (0.0, 0.0), (0.05, 0.02))
    tracer = Tracer(Galaxy(mass=SIS((0.0, 0.0), THETA_E), light=basis), Galaxy())
    like = ImagingLikelihood(dataset, tracer, ("lenses[0].mass[0].einstein_radius",))
    vectors = like.reference + np.array([[0.0], [0.01], [-0.01]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within the default limit: solved, and silent
        with count_unconverged() as counts:
            solved = np.asarray(nnls_gram(gram, rhs, "jax"))
        assert int(sum(counts)) == 0
        like.batch(vectors, "jax")
        like(vectors[0], "jax")
    monkeypatch.setattr(nnls, "MAX_ITER_PER_UNKNOWN", 0)  # one step allowed
    _jax_batch().clear_cache()  # the step limit is read when a program is traced
    _jax_single().clear_cache()
    with count_unconverged() as counts:
        stopped = np.asarray(nnls_gram(gram, rhs, "jax"))
    assert int(sum(counts)) == 3
    assert np.all(stopped >= 0.0) and not np.allclose(stopped, solved)  # no false alarm
    with pytest.warns(RuntimeWarning, match="3 of 3 likelihood evaluations did not converge"):
        approximate = like.batch(vectors, "jax")
    with pytest.warns(RuntimeWarning, match="1 of 1 likelihood evaluations"):
        like(vectors[0], "jax")
    with pytest.warns(RuntimeWarning, match="problems .6 unknowns. did not"):  # numba too
        assert approximate == pytest.approx(like.batch(vectors, "numba"), rel=1e-10)
    fit_program = likelihood_module._jitted()
    fit_program.clear_cache()
    with pytest.warns(
        RuntimeWarning, match="1 of the problems of one fit did not converge"
    ):  # FitImaging
        assert float(FitImaging(dataset, tracer, "jax").log_likelihood) == pytest.approx(
            approximate[0], rel=1e-10
        )
    for program in (_jax_batch(), _jax_single(), fit_program):
        program.clear_cache()  # no program traced with one step outlives the test


def test_poisson_simulation_has_the_noise_its_map_states():
    truth = _tracer()
    grid = Grid2D(SHAPE, SCALE, sub_size=SUB)
    dataset = simulate(
        truth,
        grid,
        PSFS["fft"],
        exposure_time=300.0,
        background_sky=0.5,
        background_rms=0.01,
        seed=4,
    )
    # at the truth, (data - model) / sigma are unit normals (Poisson counts are large here)
    n = dataset.data.size
    chi2 = float(FitImaging(dataset, truth, "numpy").chi_squared)
    assert abs(chi2 - n) < 5 * math.sqrt(2 * n)
    # the noise map follows the model: brighter pixels are noisier
    model = _reference_model(PSFS["fft"].kernel)
    expected = np.sqrt((model + 0.5) / 300.0 + 0.01**2)
    np.testing.assert_allclose(dataset.noise_map, expected, rtol=1e-10)


def test_fit_plot_writes_a_figure(tmp_path):
    dataset, _ = _dataset(PSFS["direct"], mask_radius=0.9)
    fit = FitImaging(dataset, _tracer(LinearSersic), "numpy")
    path = tmp_path / "fit.png"
    fig = fit.plot(str(path))
    assert path.stat().st_size > 10_000
    assert [ax.get_title() for ax in fig.axes[:3]] == ["data", "model", "normalised residuals"]
    # outside the mask the model is NaN (not fitted), inside it is finite
    assert np.isnan(fit.model_image[0, 0]) and np.all(
        np.isfinite(fit.model_image[dataset.grid.used])
    )

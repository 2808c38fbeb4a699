"""The multi-band likelihood against lenstronomy's "multi-linear" mode (``tox -e peers``).

Two bands of one lens: 0.05" pixels with a narrow PSF and 0.13" pixels with a broad,
asymmetric one, each with its own circular mask, sub-pixels and noise map. The lens (SIE +
shear) and the shapes of a Sersic lens light and a Sersic source are shared; each band solves
its own two intensities, as lenstronomy's ``MultiLinear`` does (one linear fit per band, the
log-likelihoods summed), and a band's own source radius is lenstronomy's second source profile
picked by ``index_source_light_model_list``.

Conventions, as in ``test_peers.py``: pixel ``[i, j]`` at ``x = (j - (nx - 1) / 2) s``,
``y = (i - (ny - 1) / 2) s``; the sub-pixels averaged, then a true convolution with the band's
kernel (``supersampling_convolution = False``). lenstronomy's SIE carries a 1e-10" core, so
its EPL at slope 2 stands for our SIE; its Sersic's approximate ``b_n`` is absorbed into
``R_sersic`` (:mod:`twinlens.convert`). lenstronomy's log-likelihood is ``-chi^2 / 2``; ours also
carries ``-sum log(2 pi sigma^2) / 2`` over each band's mask, added back before comparing. Our
intensities are non-negative least squares, lenstronomy's unconstrained: both positive here.
"""

from __future__ import annotations

import numpy as np
import pytest

from twinlens import convert
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic
from twinlens.likelihood.imaging import FitImaging
from twinlens.likelihood.multiband import MultiBandLikelihood
from twinlens.mass import SIE, ExternalShear

pytestmark = pytest.mark.peers

NAMES = ("blue", "red")
MASS = (SIE((0.02, -0.01), (0.08, -0.05), 0.9), ExternalShear(0.03, -0.02))
LENS_LIGHT = LinearSersic((0.02, -0.01), (0.05, 0.02), 0.5, 3.0)
SOURCE = LinearSersic((0.06, 0.04), (-0.1, 0.12), 0.18, 1.4)
MODEL = Tracer(Galaxy(mass=MASS, light=(LENS_LIGHT,)), Galaxy(light=(SOURCE,)))
SHARED = (
    "lenses[0].mass[0].centre[0]",
    "lenses[0].mass[0].ell_comps[1]",
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[1].gamma_1",
    "lenses[0].light[0].effective_radius",
    "sources[0].light[0].ell_comps[0]",
    "sources[0].light[0].effective_radius",
    "sources[0].light[0].sersic_index",
)
RED_RADIUS = "band.red.sources[0].light[0].effective_radius"
# near the truth but off it, so that the model's residuals weigh beside the noise
VECTOR = np.array([0.021, -0.048, 0.902, 0.029, 0.51, -0.098, 0.182, 1.42])
#: per band: pixel scale, pixels per side, sub-pixels per side, PSF FWHM, kernel side, kernel
#: lean, mask radius, simulated lens-light and source intensities, noise
BANDS = {
    "blue": (0.05, 64, 4, 0.08, 11, 0.0, 1.45, 0.6, 1.2, 0.03),
    "red": (0.13, 26, 2, 0.3, 9, 0.3, 1.5, 1.0, 0.7, 0.05),
}


def _kernel(fwhm, scale, side, lean):
    """A Gaussian kernel leaning towards +x by ``lean`` (asymmetric: a flipped convolution
    would show)."""
    kernel = np.asarray(PSF.gaussian(fwhm, scale, side).kernel, dtype=float)
    kernel = kernel * (1.0 + lean * np.linspace(-1.0, 1.0, side)[None, :])
    return kernel / kernel.sum()


def _datasets():
    out = []
    for seed, name in enumerate(NAMES):
        scale, n, sub, fwhm, side, lean, radius, lens_i, source_i, sigma = BANDS[name]
        grid = Grid2D.uniform(n, scale, sub).circular_mask(radius)
        psf = PSF(_kernel(fwhm, scale, side, lean))
        truth = Tracer(
            Galaxy(mass=MASS, light=(LENS_LIGHT.with_intensity(lens_i),)),
            Galaxy(light=(SOURCE.with_intensity(source_i),)),
        )
        clean = simulate(truth, grid, psf, noise_sigma=1e-12, seed=seed, backend="numpy")
        rng = np.random.default_rng(10 + seed)
        noise = sigma * (1.0 + 0.5 * rng.random((n, n)))  # a noise map that is not flat
        data = np.asarray(clean.data).reshape(n, n) + noise * rng.standard_normal((n, n))
        out.append(Imaging(data, noise, psf, grid))
    return tuple(out)


def _band(dataset):
    """lenstronomy's ``[kwargs_data, kwargs_psf, kwargs_numerics]`` of one band, and its
    likelihood mask."""
    grid = dataset.grid
    (ny, nx), s = grid.shape, grid.pixel_scale
    kwargs_data = {
        "image_data": np.asarray(dataset.data, dtype=float).reshape(ny, nx),
        "noise_map": np.asarray(dataset.noise_map, dtype=float).reshape(ny, nx),
        "transform_pix2angle": np.diag([s, s]),
        "ra_at_xy_0": grid.origin[0] - (nx - 1) / 2 * s,
        "dec_at_xy_0": grid.origin[1] - (ny - 1) / 2 * s,
    }
    kwargs_psf = {"psf_type": "PIXEL", "kernel_point_source": np.asarray(dataset.psf.kernel)}
    numerics = {
        "supersampling_factor": int(grid.sub_size),
        "supersampling_convolution": False,
        "compute_mode": "regular",
    }
    return [kwargs_data, kwargs_psf, numerics], np.asarray(grid.used, dtype=float)


def _lenstronomy_model(models):
    """``kwargs_model`` and the keyword lists of our models: one shared light profile of each
    kind for one model, or band ``b``'s profiles at index ``b`` for one model per band."""
    lens_names, kwargs_lens = [], []
    for mass in models[0].lenses[0].mass:
        name, kw = convert.to_lenstronomy(mass)
        if name == "SIE":  # its EPL at slope 2 is the singular SIE, as ours
            name, kw = "EPL", {**kw, "gamma": 2.0}
        lens_names.append(name)
        kwargs_lens.append(kw)

    def light(profile):
        return convert.light_to_lenstronomy(profile.with_intensity(1.0))[1]

    n = len(models)
    kwargs_model = {
        "lens_model_list": lens_names,
        "lens_light_model_list": ["SERSIC_ELLIPSE"] * n,
        "source_light_model_list": ["SERSIC_ELLIPSE"] * n,
    }
    if n > 1:
        index = [[b] for b in range(n)]
        kwargs_model |= {
            "index_lens_light_model_list": index,
            "index_source_light_model_list": index,
        }
    kwargs = {
        "kwargs_lens": kwargs_lens,
        "kwargs_source": [light(m.sources[0].light[0]) for m in models],
        "kwargs_lens_light": [light(m.lenses[0].light[0]) for m in models],
    }
    return kwargs_model, kwargs


def _ours(like, vector, backend):
    """Our log-likelihood on lenstronomy's scale (the noise normalisation added back)."""
    return like(vector, backend) + 0.5 * sum(d.noise_normalization for d in like.datasets)


def _band_models(like, vector):
    """Each band's model at ``vector`` (its own values in place of the shared ones)."""
    return [b.instance(v) for b, v in zip(like.bands, like.band_vectors(vector), strict=True)]


def _multi_linear(like, models, compute=None):
    from lenstronomy.ImSim.MultiBand.multi_linear import MultiLinear

    bands = [_band(d) for d in like.datasets]
    kwargs_model, kwargs = _lenstronomy_model(models)
    multi = MultiLinear(
        [b[0] for b in bands],
        kwargs_model,
        likelihood_mask_list=[b[1] for b in bands],
        compute_bool=compute,
    )
    return multi, kwargs


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_multi_band_log_likelihood_matches_lenstronomy_multi_linear(backend):
    pytest.importorskip("lenstronomy")
    if backend == "jax":
        pytest.importorskip("jax")
    like = MultiBandLikelihood(_datasets(), NAMES, MODEL, SHARED)
    models = _band_models(like, VECTOR)[:1]  # every band's model is the same
    multi, kwargs = _multi_linear(like, models)
    theirs, _ = multi.likelihood_data_given_model(**kwargs)
    assert _ours(like, VECTOR, backend) == pytest.approx(float(theirs), rel=1e-8)
    # each band alone: lenstronomy's compute_bool leaves the other out
    per_band = like.per_band(VECTOR, backend)
    for b, (name, dataset) in enumerate(zip(NAMES, like.datasets, strict=True)):
        alone, _ = _multi_linear(like, models, [i == b for i in range(len(NAMES))])
        theirs_b, _ = alone.likelihood_data_given_model(**kwargs)
        ours_b = per_band[name] + 0.5 * dataset.noise_normalization
        assert ours_b == pytest.approx(float(theirs_b), rel=1e-8), name


def test_each_bands_intensities_match_lenstronomys_amplitudes():
    """lenstronomy's amplitudes are flux per pixel with its ``b_n``: converted, times the
    pixel area, they are our surface-brightness intensities."""
    pytest.importorskip("lenstronomy")
    like = MultiBandLikelihood(_datasets(), NAMES, MODEL, SHARED)
    models = _band_models(like, VECTOR)[:1]
    multi, kwargs = _multi_linear(like, models)
    _, params = multi.likelihood_data_given_model(**kwargs)
    for b, dataset in enumerate(like.datasets):
        _, source, lens_light, _ = multi.update_linear_kwargs(params, b, **kwargs, kwargs_ps=None)
        area = dataset.grid.pixel_scale**2
        solved = FitImaging(dataset, models[0], "numba").solved_tracer
        for ours, kw in (
            (solved.sources[0].light[0], source[0]),
            (solved.lenses[0].light[0], lens_light[0]),
        ):
            theirs = convert.light_from_lenstronomy("SERSIC_ELLIPSE", kw).intensity * area
            assert float(ours.intensity) == pytest.approx(theirs, rel=1e-8)


def test_a_bands_own_source_radius_matches_lenstronomys_index_lists():
    pytest.importorskip("lenstronomy")
    like = MultiBandLikelihood(_datasets(), NAMES, MODEL, (*SHARED, RED_RADIUS))
    vector = np.append(VECTOR, 0.19)
    models = _band_models(like, vector)
    assert models[1].sources[0].light[0].effective_radius == 0.19
    multi, kwargs = _multi_linear(like, models)
    theirs, _ = multi.likelihood_data_given_model(**kwargs)
    assert _ours(like, vector, "numba") == pytest.approx(float(theirs), rel=1e-8)


def test_fitting_sequences_likelihood_module_gives_the_same_value():
    """What a lenstronomy fit calls: ``FittingSequence``'s likelihood module, multi-linear, at
    the same parameters (every one of its non-linear parameters free, bounds checked)."""
    pytest.importorskip("lenstronomy")
    from lenstronomy.Workflow.fitting_sequence import FittingSequence

    like = MultiBandLikelihood(_datasets(), NAMES, MODEL, SHARED)
    kwargs_model, kwargs = _lenstronomy_model(_band_models(like, VECTOR)[:1])
    bands = [_band(d) for d in like.datasets]
    fixed = {"lens_model": [{"gamma": 2.0}, {"ra_0": 0.0, "dec_0": 0.0}]}
    kwargs_params = {}
    for key, group in (
        ("lens_model", "kwargs_lens"),
        ("source_model", "kwargs_source"),
        ("lens_light_model", "kwargs_lens_light"),
    ):
        init = kwargs[group]
        sigma = [{k: 0.1 for k in kw} for kw in init]
        lower = [{k: v - 1.0 for k, v in kw.items()} for kw in init]
        upper = [{k: v + 1.0 for k, v in kw.items()} for kw in init]
        kwargs_params[key] = [init, sigma, fixed.get(key, [{} for _ in init]), lower, upper]
    fitting = FittingSequence(
        {"multi_band_list": [b[0] for b in bands], "multi_band_type": "multi-linear"},
        kwargs_model,
        {"linear_solver": True},
        {"check_bounds": True, "image_likelihood_mask_list": [b[1] for b in bands]},
        kwargs_params,
    )
    args = fitting.param_class.kwargs2args(**kwargs)
    theirs = fitting.likelihood_class.logL(args)
    assert _ours(like, VECTOR, "numba") == pytest.approx(float(theirs), rel=1e-8)

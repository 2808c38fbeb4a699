"""Are the posteriors calibrated? Truths drawn from the priors should fall inside the 68% and
95% central intervals of the posterior 68% and 95% of the time.

Many small lenses (40 x 40 pixels, an SIE and a Sersic source, six free parameters), each
with truths drawn from the priors and its own noise, are fitted with nautilus; the data are
simulated with the model being fitted (the same pixels, PSF and fixed values), so any
miscalibration is the likelihood's or the sampler's. Slow (``tox -e slow``): 5.3 minutes on
two idle cores (nautilus's ellipsoid and network fits are most of it)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from twinlens import memo
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.mass import SIE
from twinlens.model import GaussianPrior, LogUniformPrior, Model, UniformPrior
from twinlens.search import Nautilus, Objective

N_LENSES, N_PIX, PIXEL_SCALE, SUB_SIZE, NOISE = 24, 40, 0.1, 1, 0.5
LEVELS = (0.68, 0.95)

PRIORS = {
    "lenses[0].mass[0].ell_comps[0]": UniformPrior(-0.2, 0.2),
    "lenses[0].mass[0].ell_comps[1]": UniformPrior(-0.2, 0.2),
    "lenses[0].mass[0].einstein_radius": UniformPrior(0.8, 1.4),
    "sources[0].light[0].centre[0]": GaussianPrior(0.0, 0.15),
    "sources[0].light[0].centre[1]": GaussianPrior(0.0, 0.15),
    "sources[0].light[0].effective_radius": LogUniformPrior(0.1, 0.5),
}


def _model() -> Model:
    # the lens centre, the source's shape and its intensity are fixed (and true)
    lens = Galaxy(mass=SIE((0.0, 0.0), (0.0, 0.0), 1.1))
    source = Galaxy(light=Sersic((0.0, 0.0), (0.05, -0.05), 0.2, 1.0, 1.0))
    return Model(Tracer(lens, source), PRIORS)


def _coverage(points: np.ndarray, log_w: np.ndarray, truth: np.ndarray, level: float) -> np.ndarray:
    """Whether each truth lies inside the central ``level`` interval of the weighted posterior
    (all of nautilus's points with their weights: finer quantiles than its equal-weight
    draws)."""
    w = np.exp(log_w - log_w.max())
    tail = 0.5 * (1.0 - level)
    out = []
    for j, t in enumerate(truth):
        order = np.argsort(points[:, j])
        cdf = np.cumsum(w[order]) / w.sum()
        x = points[order, j]
        lo, hi = x[np.searchsorted(cdf, tail)], x[np.searchsorted(cdf, 1.0 - tail)]
        out.append(lo <= t <= hi)
    return np.array(out)


@pytest.mark.slow
def test_truths_from_the_priors_fall_in_the_intervals_at_their_rates():
    model = _model()
    grid = Grid2D.uniform(N_PIX, PIXEL_SCALE, SUB_SIZE)
    psf = PSF.gaussian(0.2, PIXEL_SCALE, 7)
    inside = {level: [] for level in LEVELS}
    start = time.perf_counter()
    for i in range(N_LENSES):
        rng = np.random.default_rng(1000 + i)
        truth = np.asarray(model.from_unit(rng.uniform(size=model.n_params)))
        with memo.disabled():
            tracer = model.instance(truth)
            data = simulate(tracer, grid, psf, noise_sigma=NOISE, seed=i, backend="numpy")
        objective = Objective.build(model, data, "numba")
        result = Nautilus(n_live=100, n_eff=1000, seed=i, n_networks=1).run(objective)
        points, log_w = result.info["weighted_samples"], result.info["log_weights"]
        for level in LEVELS:
            inside[level].append(_coverage(points, log_w, truth, level))
    minutes = (time.perf_counter() - start) / 60

    # pooled over lenses and parameters: N_LENSES x 6 draws. They are independent between
    # lenses (own truths, own noise), but the six of one lens share its data and are
    # correlated through their joint posterior, so the pooled count varies more than a
    # binomial's; the spread of the per-lens fractions measures that larger sigma, printed
    # beside the binomial one the test uses (the stricter of the two when draws correlate)
    print(f"\ncalibration over {N_LENSES} lenses x {model.n_params} parameters, {minutes:.1f} min")
    for level in LEVELS:
        hits = np.array(inside[level], dtype=float)  # (lenses, parameters)
        n = hits.size
        fraction = hits.mean()
        binomial = math.sqrt(level * (1 - level) / n)
        clustered = hits.mean(axis=1).std(ddof=1) / math.sqrt(len(hits))
        per_parameter = ", ".join(f"{f:.2f}" for f in hits.mean(axis=0))
        print(
            f"{level:.0%} interval: {fraction:.3f} of {n} truths inside (binomial sigma "
            f"{binomial:.3f}, from the per-lens spread {clustered:.3f}); per parameter "
            f"{per_parameter}"
        )
        assert abs(fraction - level) < 3 * binomial, (level, fraction)

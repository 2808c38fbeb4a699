"""Searches: each recovers a posterior known in closed form, runs again identically from the
same seed, resumes a killed run without losing samples, and fits a tiny imaging problem; bad
settings, backends and missing libraries give clear errors.

The toy objective has a Gaussian likelihood, a uniform prior on the first parameter and a
Gaussian prior on the second, so the posterior (and the evidence) are products of Gaussians
in closed form, and the Gaussian prior is carried by its unit-cube transform as in a real
model.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from twinlens.likelihood import ImagingLikelihood
from twinlens.model import GaussianPrior, Model, UniformPrior
from twinlens.search import (
    NUTS,
    SEARCHES,
    Emcee,
    MaximumPosterior,
    Nautilus,
    Objective,
    SearchResult,
    search_from_config,
)
from twinlens.search.base import log_posterior

# -- the toy objective -----------------------------------------------------------------------

MU = np.array([0.3, -1.0])  # likelihood centre
SIGMA = np.array([0.1, 0.5])  # likelihood widths
UNIFORM = (-2.0, 2.0)  # prior on x0
PRIOR_MEAN, PRIOR_SIGMA = 0.0, 1.0  # prior on x1
# posterior: x0 ~ N(0.3, 0.1) (its truncation at +-2 is 17 sigma away); x1 the product of
# two Gaussians
_W = 1.0 / SIGMA[1] ** 2 + 1.0 / PRIOR_SIGMA**2
POST_MEAN = np.array([MU[0], (MU[1] / SIGMA[1] ** 2 + PRIOR_MEAN / PRIOR_SIGMA**2) / _W])
POST_SIGMA = np.array([SIGMA[0], 1.0 / math.sqrt(_W)])
# below CUT the likelihood is -inf: exercises the searches' handling of excluded regions
# while taking no measurable mass (it is 13 sigma from the mode)
CUT = -1.0


def _log_evidence() -> float:
    lo, hi = UNIFORM
    a, b = (lo - MU[0]) / SIGMA[0], (hi - MU[0]) / SIGMA[0]
    z0 = (special.ndtr(b) - special.ndtr(a)) / (hi - lo)
    s = math.hypot(SIGMA[1], PRIOR_SIGMA)  # the convolution of the two Gaussians
    log_z1 = -0.5 * ((MU[1] - PRIOR_MEAN) / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)
    return float(math.log(z0) + log_z1)


class GaussianToy:
    """An objective with an analytic likelihood, duck-typed like :class:`Objective`.

    ``kill_after`` makes ``log_likelihood`` raise once that many evaluations would be
    exceeded, as a killed process would stop."""

    paths = ("toy.x0", "toy.x1")
    priors = (UniformPrior(*UNIFORM), GaussianPrior(PRIOR_MEAN, PRIOR_SIGMA))

    def __init__(self, backend: str = "numpy", start=(0.25, -0.7), kill_after=None):
        self.backend = backend
        self.start = np.asarray(start, dtype=float)
        self.kill_after = kill_after
        self.calls = 0

    @property
    def n_params(self) -> int:
        return 2

    def from_unit(self, u, xp=np):
        u = xp.asarray(u)
        return xp.stack([p.from_unit(u[..., i], xp) for i, p in enumerate(self.priors)], -1)

    def to_unit(self, vectors):
        v = np.asarray(vectors, dtype=float)
        return np.stack([p.to_unit(v[..., i]) for i, p in enumerate(self.priors)], -1)

    def log_prior(self, vectors):
        v = np.asarray(vectors, dtype=float)
        return sum(p.log_density(v[..., i]) for i, p in enumerate(self.priors))

    def log_likelihood(self, vectors):
        v = np.atleast_2d(np.asarray(vectors, dtype=float))
        if self.kill_after is not None and self.calls + len(v) > self.kill_after:
            raise KeyboardInterrupt("killed")
        self.calls += len(v)
        z = (v - MU) / SIGMA
        out = np.sum(-0.5 * z * z - np.log(SIGMA) - 0.5 * math.log(2 * math.pi), axis=-1)
        return np.where(v[:, 0] < CUT, -np.inf, out)

    def log_posterior(self, vectors):
        return log_posterior(self, vectors)

    def jax_log_likelihood(self, vector):
        import jax.numpy as jnp

        z = (vector - MU) / SIGMA
        out = jnp.sum(-0.5 * z * z - jnp.log(SIGMA) - 0.5 * math.log(2 * math.pi))
        return jnp.where(vector[0] < CUT, -jnp.inf, out)


def _weighted_moments(result: SearchResult) -> tuple[np.ndarray, np.ndarray]:
    w = np.exp(result.info["log_weights"])
    x = result.info["weighted_samples"]
    mean = w @ x / w.sum()
    return mean, np.sqrt(w @ (x - mean) ** 2 / w.sum())


# -- nautilus ------------------------------------------------------------------------------

NAUTILUS = Nautilus(n_live=300, n_eff=2000, seed=3)


@pytest.fixture(scope="module")
def nautilus_reference() -> SearchResult:
    return NAUTILUS.run(GaussianToy())


def test_nautilus_recovers_the_posterior_and_the_evidence(nautilus_reference):
    result = nautilus_reference
    assert result.info["converged"]
    # about n_eff / 2 equal-weight samples, resampled from the weighted ones: seeds 0-5 put
    # their means within 0.04 sigma and their widths within 8%
    assert result.n_samples > 500
    np.testing.assert_array_less(np.abs(result.samples.mean(0) - POST_MEAN) / POST_SIGMA, 0.1)
    np.testing.assert_array_less(np.abs(result.medians() - POST_MEAN) / POST_SIGMA, 0.1)
    np.testing.assert_allclose(result.samples.std(0), POST_SIGMA, rtol=0.1)
    lower, upper = result.intervals(0.68)
    np.testing.assert_allclose(upper - lower, 2 * POST_SIGMA, rtol=0.1)
    # the weighted posterior is more precise (seeds 0-5: 0.03 sigma, 4.2%)
    mean, sd = _weighted_moments(result)
    np.testing.assert_array_less(np.abs(mean - POST_MEAN) / POST_SIGMA, 0.06)
    np.testing.assert_allclose(sd, POST_SIGMA, rtol=0.06)
    # nautilus gives no error estimate of log Z; an importance-sampling estimate with
    # effective sample size n_eff scatters by about 1 / sqrt(n_eff) (0.02 here, and seeds
    # 0-5 gave 0.004-0.054), so allow 3 of those
    assert result.log_evidence_error is None
    assert abs(result.log_evidence - _log_evidence()) < 3 / math.sqrt(result.info["n_eff"])
    np.testing.assert_array_less(np.abs(result.max_likelihood - MU), 0.3 * SIGMA)
    assert result.max_log_likelihood == pytest.approx(result.info["weighted_log_likelihood"].max())
    assert result.n_evaluations > 1000 and result.seed == 3 and result.name == "nautilus"


class NowhereToy(GaussianToy):
    """A likelihood that is -inf at every vector."""

    def log_likelihood(self, vectors):
        return np.full(len(np.atleast_2d(vectors)), -np.inf)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # nautilus's sums
def test_nautilus_says_when_every_evaluation_was_minus_inf():
    search = Nautilus(n_live=50, n_like_max=200, seed=1)
    with pytest.raises(RuntimeError, match=r"all \d+ likelihood evaluations were -inf"):
        search.run(NowhereToy())


def test_nautilus_same_seed_same_samples(nautilus_reference, tmp_path):
    again = NAUTILUS.run(GaussianToy(), output_dir=tmp_path)  # checkpointing changes nothing
    np.testing.assert_array_equal(again.samples, nautilus_reference.samples)
    np.testing.assert_array_equal(again.log_likelihood, nautilus_reference.log_likelihood)
    assert again.log_evidence == nautilus_reference.log_evidence
    assert again.n_evaluations == nautilus_reference.n_evaluations
    assert (tmp_path / "nautilus.hdf5").exists() and not again.info["resumed"]


def test_nautilus_writes_its_state_only_when_a_checkpoint_is_committed(tmp_path, monkeypatch):
    # nautilus alone rewrites its whole file after every new bound (a fifth of the example
    # fit's time); the library writes it at each commit: with commits far apart, once, at the
    # end (the same as the uninterrupted run's samples: test_nautilus_same_seed_same_samples)
    import nautilus

    writes = []
    original = nautilus.Sampler.write
    monkeypatch.setattr(
        nautilus.Sampler,
        "write",
        lambda self, path, overwrite=False: writes.append(path) or original(self, path, overwrite),
    )
    monkeypatch.setattr(
        nautilus.Sampler, "write_shell_update", lambda *a: writes.append("shell update")
    )
    result = dataclasses.replace(NAUTILUS, checkpoint_every=1e9).run(GaussianToy(), tmp_path)
    assert result.info["n_shells"] > 3  # several bounds were built
    assert writes == [tmp_path / "nautilus.work.hdf5"]


def test_nautilus_resumes_a_killed_run_losing_nothing(nautilus_reference, tmp_path):
    # killed in the exploration, after several bounds were built: committing the checkpoint
    # after every batch (and its random state), the resumed run is the uninterrupted one, bit
    # for bit
    toy = GaussianToy(kill_after=1450)
    with pytest.raises(KeyboardInterrupt):
        dataclasses.replace(NAUTILUS, checkpoint_every=0.0).run(toy, output_dir=tmp_path)
    assert (tmp_path / "nautilus.hdf5").exists()
    resumed_toy = GaussianToy()
    resumed = NAUTILUS.run(resumed_toy, output_dir=tmp_path)
    assert resumed.info["resumed"] and resumed.info["converged"]
    # the batch in flight (100 points) was lost and evaluated again; nothing else
    assert toy.calls + resumed_toy.calls == resumed.n_evaluations
    assert toy.calls >= 1400
    assert resumed.n_evaluations == nautilus_reference.n_evaluations
    np.testing.assert_array_equal(resumed.samples, nautilus_reference.samples)
    assert resumed.log_evidence == nautilus_reference.log_evidence
    # a finished run, asked again, gives the same result without evaluating anything
    finished_toy = GaussianToy()
    finished = NAUTILUS.run(finished_toy, output_dir=tmp_path)
    assert finished_toy.calls == 0
    np.testing.assert_array_equal(finished.samples, nautilus_reference.samples)


def test_nautilus_stops_at_n_like_max_and_refuses_other_settings_on_resume(tmp_path):
    partial = Nautilus(n_live=300, seed=3, n_like_max=200).run(GaussianToy(), tmp_path)
    assert not partial.info["converged"] and partial.n_evaluations == 200
    with pytest.raises(ValueError, match=r"n_live: 300 then, 400 now"):
        Nautilus(n_live=400, seed=3, n_like_max=300).run(GaussianToy(), tmp_path)
    with pytest.raises(ValueError, match="seed"):
        Nautilus(n_live=300, seed=4, n_like_max=300).run(GaussianToy(), tmp_path)


def test_nautilus_falls_back_to_the_backup_of_an_unreadable_checkpoint(tmp_path):
    every_batch = Nautilus(n_live=300, seed=3, n_like_max=200, checkpoint_every=0.0)
    every_batch.run(GaussianToy(), tmp_path)  # commits at 100 and 200 evaluations
    assert (tmp_path / "nautilus.backup.hdf5").exists()  # the 100-evaluation state
    assert not (tmp_path / "nautilus.work.hdf5").exists()  # removed after the last commit
    longer = Nautilus(n_live=300, seed=3, n_like_max=300)
    # the checkpoint is only ever replaced by a rename, so only a damaged disk (or a hand)
    # breaks it; the backup is then used
    (tmp_path / "nautilus.hdf5").write_bytes(b"damaged")
    toy = GaussianToy()
    with pytest.warns(RuntimeWarning, match="backup"):
        result = longer.run(toy, tmp_path)
    assert result.n_evaluations == 300 and toy.calls == 200  # from 100, not from scratch
    (tmp_path / "nautilus.hdf5").write_bytes(b"damaged")
    (tmp_path / "nautilus.backup.hdf5").unlink()
    with pytest.raises(ValueError, match="unreadable and has no backup"):
        longer.run(GaussianToy(), tmp_path)
    # restart discards it and starts afresh
    fresh = longer.run(GaussianToy(), tmp_path, restart=True)
    assert fresh.n_evaluations == 300 and not fresh.info["resumed"]


# -- emcee ---------------------------------------------------------------------------------

EMCEE = Emcee(n_walkers=16, n_steps=1500, burn_in=0.3, seed=5)


@pytest.fixture(scope="module")
def emcee_reference() -> SearchResult:
    return EMCEE.run(GaussianToy())


def test_emcee_recovers_the_posterior(emcee_reference):
    result = emcee_reference
    assert result.samples.shape == (16 * (1500 - 450), 2)
    # about 1000 independent samples (autocorrelation time ~ 15 steps)
    np.testing.assert_array_less(np.abs(result.samples.mean(0) - POST_MEAN) / POST_SIGMA, 0.12)
    np.testing.assert_allclose(result.samples.std(0), POST_SIGMA, rtol=0.1)
    assert np.all(result.info["autocorrelation_time"] < 50)
    assert 0.4 < np.mean(result.info["acceptance_fraction"]) < 0.9
    assert result.log_evidence is None
    # the blobs carry log L of each sample
    np.testing.assert_allclose(
        result.log_likelihood, GaussianToy().log_likelihood(result.samples), rtol=1e-12
    )


def test_emcee_same_seed_same_chain(emcee_reference):
    short = Emcee(n_walkers=16, n_steps=300, seed=5)
    a, b = short.run(GaussianToy()), short.run(GaussianToy())
    np.testing.assert_array_equal(a.samples, b.samples)
    c = Emcee(n_walkers=16, n_steps=300, seed=6).run(GaussianToy())
    assert not np.array_equal(a.samples, c.samples)


def test_emcee_resumes_a_killed_run_to_the_same_chain(tmp_path):
    search = Emcee(n_walkers=8, n_steps=300, seed=2, checkpoint_every=0.0)
    uninterrupted = search.run(GaussianToy())
    with pytest.raises(KeyboardInterrupt):
        search.run(GaussianToy(kill_after=8 * 120), output_dir=tmp_path)
    emcee = pytest.importorskip("emcee")
    stored = emcee.backends.HDFBackend(str(tmp_path / "emcee.hdf5"), read_only=True).iteration
    assert stored == 119  # every finished step was kept (the first evaluates the start)
    resumed = search.run(GaussianToy(), output_dir=tmp_path)
    assert resumed.info["resumed_from_step"] == stored
    assert resumed.info["n_steps"] == 300
    # the random state is stored with every step: the chain continues exactly
    np.testing.assert_array_equal(resumed.samples, uninterrupted.samples)
    # a longer run extends the stored chain (committing only at its end)
    longer = Emcee(n_walkers=8, n_steps=400, seed=2, checkpoint_every=math.inf)
    extended = longer.run(GaussianToy(), output_dir=tmp_path)
    np.testing.assert_array_equal(extended.samples, longer.run(GaussianToy()).samples)
    # that run kept a backup of the 300-step chain; a checkpoint broken by a kill mid-write
    # falls back to it
    (tmp_path / "emcee.hdf5").write_bytes(b"killed mid-write")
    with pytest.warns(RuntimeWarning, match="backup"):
        restored = longer.run(GaussianToy(), output_dir=tmp_path)
    assert restored.info["resumed_from_step"] == 300
    np.testing.assert_array_equal(restored.samples, extended.samples)
    with pytest.raises(ValueError, match=r"n_walkers: 8 then, 10 now"):
        Emcee(n_walkers=10, n_steps=400, seed=2).run(GaussianToy(), output_dir=tmp_path)


def test_emcee_walkers_start_inside_the_priors(tmp_path):
    # a start on the prior's edge: half of a plain ball would fall outside
    toy = GaussianToy(start=(UNIFORM[1], -0.7))
    result = Emcee(n_walkers=8, n_steps=2, seed=1, init_scale=0.01).run(toy, tmp_path)
    emcee = pytest.importorskip("emcee")
    first = emcee.backends.HDFBackend(str(tmp_path / "emcee.hdf5"), read_only=True).get_chain()[0]
    assert np.all(first[:, 0] <= UNIFORM[1]) and np.all(np.isfinite(toy.log_prior(first)))
    assert result.n_evaluations == 16


# -- JAX: maximum posterior and NUTS -------------------------------------------------------


def test_the_first_map_start_and_nuts_chain_are_the_objectives_own_start():
    toy = GaussianToy("jax", start=(0.31, -0.52))
    best = MaximumPosterior(n_starts=3, n_steps=2, seed=0).run(toy)
    np.testing.assert_allclose(best.info["initial"][0], toy.start, rtol=1e-5)
    assert not np.allclose(best.info["initial"][1], toy.start, rtol=0.01)
    chains = NUTS(n_warmup=3, n_samples=2, n_chains=2, seed=0).run(toy)
    np.testing.assert_allclose(chains.info["initial"][0], toy.start, rtol=1e-5)


def test_map_finds_the_posterior_mode():
    result = MaximumPosterior(n_starts=4, n_steps=600, seed=1).run(GaussianToy("jax"))
    # the mode of the density of x itself (the Gaussian prior pulls x1 from -1.0 to -0.8)
    np.testing.assert_allclose(result.samples, POST_MEAN[None, :], atol=1e-6)
    np.testing.assert_allclose(result.max_likelihood, POST_MEAN, atol=1e-6)
    assert result.info["optima"].shape == (4, 2)
    assert np.sum(np.all(np.abs(result.info["optima"] - POST_MEAN) < 1e-4, axis=1)) >= 3
    expected = GaussianToy().log_likelihood(POST_MEAN[None, :])[0]
    assert result.max_log_likelihood == pytest.approx(expected, abs=1e-8)
    assert result.n_samples == 1 and result.log_evidence is None


def test_nuts_recovers_the_posterior():
    result = NUTS(n_warmup=300, n_samples=1000, n_chains=2, seed=4).run(GaussianToy("jax"))
    assert result.samples.shape == (2000, 2)
    np.testing.assert_array_less(np.abs(result.samples.mean(0) - POST_MEAN) / POST_SIGMA, 0.1)
    np.testing.assert_allclose(result.samples.std(0), POST_SIGMA, rtol=0.08)
    assert np.all(result.info["r_hat"] < 1.02) and np.all(result.info["ess"] > 500)
    assert result.info["n_divergent"] == 0
    np.testing.assert_allclose(
        result.log_likelihood, GaussianToy().log_likelihood(result.samples), rtol=1e-10
    )


# -- a tiny imaging problem ----------------------------------------------------------------

THETA_E, R_EFF = 0.6, 0.2


@pytest.fixture(scope="module")
def imaging():
    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import simulate
    from twinlens.imaging.psf import PSF
    from twinlens.lensing.tracer import Galaxy, Tracer
    from twinlens.light import LinearSersic, Sersic
    from twinlens.mass import SIE

    grid = Grid2D.uniform(20, 0.1, sub_size=1)
    psf = PSF.gaussian(0.15, 0.1, 5)
    lens = Galaxy(mass=SIE((0.0, 0.0), (0.1, -0.05), THETA_E))
    source = Sersic((0.05, 0.02), (0.1, 0.0), R_EFF, 1.5, 2.0)
    dataset = simulate(Tracer(lens, Galaxy(light=source)), grid, psf, noise_sigma=0.05, seed=1)
    start = Tracer(
        Galaxy(mass=SIE((0.0, 0.0), (0.1, -0.05), 0.7)),
        Galaxy(light=LinearSersic((0.05, 0.02), (0.1, 0.0), 0.3, 1.5)),
    )
    priors = {
        "lenses[0].mass[0].einstein_radius": UniformPrior(0.4, 0.9),
        "sources[0].light[0].effective_radius": UniformPrior(0.05, 0.4),
    }
    return Model(start, priors), dataset


def test_objective_binds_model_and_likelihood(imaging):
    model, dataset = imaging
    objective = Objective.build(model, dataset, "numba")
    assert objective.paths == model.paths and objective.likelihood.free == model.paths
    vectors = np.array([[THETA_E, R_EFF], [0.7, 0.3], [0.95, 0.2], [-0.1, 0.2]])
    log_l = objective.log_likelihood(vectors)
    assert log_l[0] > log_l[1] and np.isfinite(log_l[2]) and log_l[3] == -np.inf
    post = objective.log_posterior(vectors)
    np.testing.assert_allclose(post[:2], log_l[:2] + model.log_prior(vectors[:2]), rtol=1e-14)
    assert np.all(post[2:] == -np.inf)  # outside the priors
    swapped = ImagingLikelihood(dataset, model.tracer, model.paths[::-1])
    with pytest.raises(ValueError, match="free parameters"):
        Objective(model, swapped, "numba")


def test_nautilus_fits_the_einstein_radius_of_a_tiny_imaging_problem(imaging):
    model, dataset = imaging
    objective = Objective.build(model, dataset, "numba")
    result = Nautilus(n_live=200, n_eff=800, seed=0).run(objective)
    median, (lower, upper) = result.medians(), result.intervals(0.68)
    sigma = 0.5 * (upper - lower)
    assert abs(median[0] - THETA_E) < 3 * sigma[0] and abs(median[0] / THETA_E - 1) < 0.02
    assert abs(median[1] - R_EFF) < 3 * sigma[1] + 0.02 * R_EFF
    assert result.paths == model.paths


@pytest.mark.slow
def test_jax_searches_on_the_tiny_imaging_problem(imaging):
    model, dataset = imaging
    objective = Objective.build(model, dataset, "jax")
    best = MaximumPosterior(n_starts=4, n_steps=300, seed=0).run(objective)
    assert best.max_likelihood[0] == pytest.approx(THETA_E, rel=0.01)
    numba = Objective.build(model, dataset, "numba")
    assert best.max_log_likelihood == pytest.approx(
        numba.log_likelihood(best.max_likelihood[None, :])[0], rel=1e-9
    )
    chain = NUTS(n_warmup=200, n_samples=200, seed=0).run(objective)
    assert np.median(chain.samples[:, 0]) == pytest.approx(THETA_E, rel=0.02)


# -- results, registry and errors ------------------------------------------------------------


def test_search_result_medians_and_intervals():
    samples = np.column_stack([np.arange(101.0), -np.arange(101.0)])
    result = SearchResult(
        "x", ("a", "b"), samples, np.zeros(101), samples[0], 0.0, None, None, 101, 0
    )
    np.testing.assert_array_equal(result.medians(), [50.0, -50.0])
    lower, upper = result.intervals(0.68)
    np.testing.assert_allclose(lower, [16.0, -84.0])
    np.testing.assert_allclose(upper, [84.0, -16.0])
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        result.intervals(68)
    with pytest.raises(ValueError, match="one per sample"):
        SearchResult("x", ("a", "b"), samples, np.zeros(3), samples[0], 0.0, None, None, 1, 0)


def test_registry_and_config():
    assert set(SEARCHES) == {"nautilus", "emcee", "map", "nuts"}
    assert SEARCHES["nautilus"] is Nautilus and SEARCHES["nuts"] is NUTS
    search = search_from_config("emcee", n_walkers=10, n_steps=20)
    assert search == Emcee(n_walkers=10, n_steps=20)
    assert search.settings()["burn_in"] == 0.3
    with pytest.raises(ValueError, match=r"unknown search 'multinest'; choose one of .*nautilus"):
        search_from_config("multinest")
    with pytest.raises(ValueError, match=r"unknown setting\(s\) 'nlive' .* n_live, n_eff"):
        search_from_config("nautilus", nlive=100)


BAD_SETTINGS = [
    ("nautilus", {"n_live": 0}, r"Nautilus.n_live must be an integer >= 1, got 0"),
    ("nautilus", {"f_live": 1.5}, r"Nautilus.f_live must be in \(0.0, 1.0\), got 1.5"),
    ("nautilus", {"seed": -1}, r"Nautilus.seed must be an integer >= 0"),
    ("nautilus", {"discard_exploration": "yes"}, r"discard_exploration must be True or"),
    ("emcee", {"burn_in": 1.0}, r"Emcee.burn_in must be in \[0.0, 1.0\), got 1.0"),
    ("emcee", {"n_steps": 2.5}, r"Emcee.n_steps must be an integer >= 1"),
    ("map", {"learning_rate": 0.0}, r"MaximumPosterior.learning_rate must be in \(0.0, inf"),
    ("nuts", {"n_chains": 0}, r"NUTS.n_chains must be an integer >= 1"),
    ("nuts", {"target_acceptance_rate": 1}, r"NUTS.target_acceptance_rate must be in"),
]


@pytest.mark.parametrize(
    ("name", "settings", "message"),
    BAD_SETTINGS,
    ids=[f"{name}-{next(iter(settings))}" for name, settings, _ in BAD_SETTINGS],
)
def test_bad_settings_name_the_setting_and_its_range(name, settings, message):
    with pytest.raises(ValueError, match=message):
        search_from_config(name, **settings)


def test_emcee_needs_twice_as_many_walkers_as_parameters():
    with pytest.raises(ValueError, match=r"Emcee.n_walkers must be >= 2 \* n_params = 4"):
        Emcee(n_walkers=3).run(GaussianToy())


@pytest.mark.parametrize("search", [MaximumPosterior(), NUTS()])
def test_jax_searches_refuse_other_backends(search):
    with pytest.raises(ValueError, match=r"JAX backend only.*'numba'.*backend='jax'"):
        search.run(GaussianToy("numba"))


@pytest.mark.parametrize(
    ("search", "backend", "module"),
    [
        (Nautilus(), "numpy", "nautilus"),
        (Emcee(), "numpy", "emcee"),
        (MaximumPosterior(), "jax", "optax"),
        (NUTS(), "jax", "blackjax"),
    ],
)
def test_missing_library_names_the_fit_extra(search, backend, module, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # makes ``import module`` fail
    with pytest.raises(ImportError, match=r'needs the .* package.*pip install "twinlens\[fit\]"'):
        search.run(GaussianToy(backend))


def test_importing_the_searches_loads_no_library():
    code = (
        "import sys, twinlens, twinlens.search\n"
        "loaded = [m for m in ('jax', 'nautilus', 'emcee', 'optax', 'blackjax', 'h5py') "
        "if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent)


@pytest.mark.parametrize(
    "search",
    [MaximumPosterior(n_starts=2, n_steps=3, seed=0), NUTS(n_warmup=3, n_samples=4, seed=0)],
    ids=["map", "nuts"],
)
def test_gradient_searches_report_a_linear_solve_that_ran_out_of_steps(
    imaging, monkeypatch, search
):
    # the optimiser's and the sampler's own programs cannot warn; the optima's and the
    # samples' log L come from the objective's batch, whose programs count the solves that ran
    # out of steps and warn
    from twinlens.inversion import nnls
    from twinlens.likelihood.batched import _jax_batch, _jax_single

    model, dataset = imaging
    objective = Objective.build(model, dataset, "jax")
    monkeypatch.setattr(nnls, "MAX_ITER_PER_UNKNOWN", 0)  # one active-set step allowed
    programs = (_jax_batch(), _jax_single())
    for program in programs:
        program.clear_cache()  # the step limit is read when a program is traced
    try:
        with pytest.warns(RuntimeWarning, match="likelihood evaluations did not converge"):
            search.run(objective)
    finally:
        for program in programs:
            program.clear_cache()

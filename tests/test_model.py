"""Priors and the model: each prior's unit-cube transform and density against scipy.stats (an
independent implementation), and the model's vector mapping and its errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic
from twinlens.mass import SIE, ExternalShear
from twinlens.model import (
    GaussianPrior,
    LogUniformPrior,
    Model,
    TruncatedGaussianPrior,
    UniformPrior,
    latex_label,
)

U = np.concatenate([[1e-12, 1e-6, 0.01], np.linspace(0.05, 0.95, 19), [0.99, 1 - 1e-6]])

CASES = [
    (UniformPrior(-0.3, 0.7), stats.uniform(loc=-0.3, scale=1.0)),
    (LogUniformPrior(0.01, 30.0), stats.loguniform(0.01, 30.0)),
    (GaussianPrior(1.2, 0.05), stats.norm(1.2, 0.05)),
    (TruncatedGaussianPrior(0.0, 1.0, -0.5, 2.0), stats.truncnorm(-0.5, 2.0)),
    # deep in the upper tail, where a naive inverse loses every digit
    (TruncatedGaussianPrior(0.0, 1.0, 6.0, 7.0), stats.truncnorm(6.0, 7.0)),
    (TruncatedGaussianPrior(2.0, 0.5, -math.inf, 2.5), stats.truncnorm(-np.inf, 1.0, 2.0, 0.5)),
]


@pytest.mark.parametrize(("prior", "reference"), CASES, ids=lambda c: repr(c)[:40])
def test_unit_cube_transform_is_the_inverse_cdf(prior, reference):
    got = prior.from_unit(U)
    want = reference.ppf(U)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert prior.median == pytest.approx(reference.median(), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("prior", "reference"), CASES, ids=lambda c: repr(c)[:40])
def test_to_unit_is_the_cdf_clipped_outside_the_support(prior, reference):
    x = reference.ppf(U[1:-1])
    np.testing.assert_allclose(prior.to_unit(x), reference.cdf(x), rtol=1e-9, atol=1e-12)
    lo, hi = prior.support
    if math.isfinite(lo):
        assert prior.to_unit(lo - 1.0) == 0.0
    if math.isfinite(hi):
        assert prior.to_unit(hi + 1.0) == 1.0


@pytest.mark.parametrize(("prior", "reference"), CASES, ids=lambda c: repr(c)[:40])
def test_log_density_matches_scipy(prior, reference):
    x = reference.ppf(U[1:-1])
    np.testing.assert_allclose(prior.log_density(x), reference.logpdf(x), rtol=1e-10)
    lo, hi = prior.support
    outside = [v for v in (lo - 1.0, hi + 1.0) if math.isfinite(v)]
    assert np.all(prior.log_density(np.array(outside)) == -np.inf)


def test_unit_cube_transform_on_jax_matches_numpy():
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    for prior, _ in CASES:
        np.testing.assert_allclose(
            np.asarray(prior.from_unit(jnp.asarray(U[1:-1]), jnp)),
            prior.from_unit(U[1:-1]),
            rtol=1e-9,
            atol=1e-12,
        )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: UniformPrior(1.0, 1.0), "lower < upper"),
        (lambda: UniformPrior(0.0, math.inf), "finite"),
        (lambda: LogUniformPrior(0.0, 1.0), "0 < lower"),
        (lambda: GaussianPrior(0.0, -1.0), "sigma must be > 0"),
        (lambda: TruncatedGaussianPrior(0.0, 1.0, 40.0, 41.0), "no probability"),
    ],
)
def test_bad_priors_are_refused_with_the_reason(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def _tracer():
    lens = Galaxy(mass=(SIE((0.0, 0.0), (0.1, 0.0), 1.0), ExternalShear(0.01, 0.02)))
    return Tracer(lens, Galaxy(light=LinearSersic((0.0, 0.0), (0.0, 0.0), 0.3, 1.5)))


def test_model_maps_unit_cube_and_vectors():
    priors = {
        "lenses[0].mass[0].einstein_radius": UniformPrior(0.5, 2.0),
        "sources[0].light[0].effective_radius": LogUniformPrior(0.05, 2.0),
        "lenses[0].mass[1].gamma_1": GaussianPrior(0.0, 0.05),
    }
    model = Model(_tracer(), priors)
    assert model.paths == tuple(priors)
    assert model == Model(_tracer(), priors) and hash(model) == hash(Model(_tracer(), priors))
    u = np.random.default_rng(1).uniform(size=(5, 3))
    v = model.from_unit(u)
    for i, prior in enumerate(priors.values()):
        np.testing.assert_allclose(v[:, i], prior.from_unit(u[:, i]), rtol=1e-15)
    want = sum(p.log_density(v[:, i]) for i, p in enumerate(priors.values()))
    np.testing.assert_allclose(model.log_prior(v), want, rtol=1e-14)
    inst = model.instance(v[0])
    assert inst.lenses[0].mass[0].einstein_radius == v[0, 0]
    assert inst.lenses[0].mass[0].ell_comps == (0.1, 0.0)  # fixed values untouched
    assert isinstance(inst.lenses[0].mass[0].ell_comps[0], float)
    np.testing.assert_array_equal(model.start, [1.0, 0.3, 0.01])
    assert latex_label("lenses[0].mass[0].einstein_radius") == r"\theta_{\rm E}^{\rm L0m0}"


def test_model_errors_name_the_problem():
    with pytest.raises(KeyError, match="names no parameter"):
        Model(_tracer(), {"lenses[0].mass[0].radius": UniformPrior(0, 1)})
    with pytest.raises(ValueError, match="outside its prior"):
        Model(_tracer(), {"lenses[0].mass[0].einstein_radius": UniformPrior(2.0, 3.0)})
    with pytest.raises(ValueError, match="empty"):
        Model(_tracer(), {})
    with pytest.raises(ValueError, match="not a scalar parameter field"):  # a class constant
        Model(_tracer(), {"sources[0].light[0].intensity": UniformPrior(0.0, 2.0)})
    model = Model(_tracer(), {"lenses[0].mass[0].einstein_radius": UniformPrior(0.5, 2.0)})
    with pytest.raises(ValueError, match="needs 1"):
        model.instance([1.0, 2.0])
    with pytest.raises(ValueError, match="einstein_radius"):
        model.instance([-1.0])  # the profile's own range check

"""The likelihoods called with JAX arrays or tracers run on JAX and compose with ``jax.jit``,
``jax.grad`` and ``jax.vmap``: what a user's own sampler (blackjax, numpyro, optax) needs.

References are independent of the JAX path: values and batches from numba, gradients as
central finite differences of numba's values."""

from __future__ import annotations

import numpy as np
import pytest
from jax_loaded import jax_or_skip
from test_model_point_images import _joint, quad  # noqa: F401 (a fixture)

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import Constant, Pixelization, Rectangular
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.mass import SIE, ExternalShear

LENS = Galaxy(mass=(SIE((0.0, 0.0), (0.1, 0.0), 0.8), ExternalShear(0.02, -0.01)))
FREE = (
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[0].ell_comps[0]",
    "lenses[0].mass[1].gamma_1",
)


def _data():
    grid = Grid2D.uniform(24, 0.1, 2)
    psf = PSF.gaussian(0.15, 0.1, 5)
    truth = Tracer(LENS, Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), 0.2, 1.0, 1.0)))
    return simulate(truth, grid, psf, noise_sigma=0.05, seed=1, backend="numpy")


def _parametric() -> ImagingLikelihood:
    source = Galaxy(light=LinearSersic((0.05, 0.0), (0.0, 0.1), 0.2, 1.0))
    return ImagingLikelihood(
        _data(), Tracer(LENS, source), (*FREE, "sources[0].light[0].effective_radius")
    )


def _pixelised() -> ImagingLikelihood:
    source = Galaxy(pixelization=Pixelization(Rectangular((10, 10)), Constant(1.0)))
    return ImagingLikelihood(_data(), Tracer(LENS, source), FREE)


def _finite_difference(like, v, h=1e-6):
    steps = np.eye(v.size) * h
    return np.array([(like(v + e, "numba") - like(v - e, "numba")) / (2 * h) for e in steps])


@pytest.mark.parametrize("make", [_parametric, _pixelised], ids=["parametric", "pixelised"])
def test_jit_grad_and_vmap_of_an_imaging_likelihood(make):
    jax = jax_or_skip()
    like = make()
    v = like.reference * 1.01
    value = like(v, "numba")
    assert float(jax.jit(like)(jax.numpy.asarray(v))) == pytest.approx(value, rel=1e-11)
    grad = np.asarray(jax.jit(jax.grad(like))(jax.numpy.asarray(v)))
    np.testing.assert_allclose(grad, _finite_difference(like, v), rtol=1e-5, atol=1e-3)
    vectors = v * np.array([[1.0], [1.004], [0.997]])
    expected = like.batch(vectors, "numba")
    np.testing.assert_allclose(jax.vmap(like)(jax.numpy.asarray(vectors)), expected, rtol=1e-11)
    np.testing.assert_allclose(
        jax.jit(like.batch)(jax.numpy.asarray(vectors)), expected, rtol=1e-11
    )


def test_a_jax_input_out_of_range_is_minus_inf_with_a_zero_gradient():
    jax = jax_or_skip()
    like = _parametric()
    bad = like.reference.copy()
    bad[0] = -0.5  # a negative Einstein radius
    v = jax.numpy.asarray(bad)
    assert float(jax.jit(like)(v)) == -np.inf
    np.testing.assert_array_equal(np.asarray(jax.grad(like)(v)), 0.0)


def test_a_jax_input_refuses_another_backend_and_a_wrong_shape():
    jax = jax_or_skip()
    like = _parametric()
    v = jax.numpy.asarray(like.reference)
    with pytest.raises(TypeError, match="backend='jax'"):
        like(v, "numba")
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        like(v[:3])
    with pytest.raises(ValueError, match=r"shape \(n_batch, 4\)"):
        like.batch(v)


def test_grad_and_vmap_of_a_joint_likelihood(quad):  # noqa: F811 (the fixture)
    jax = jax_or_skip()
    joint = _joint(quad, quad[0] + 0.01, "model", "source")
    v = joint.reference + np.array([0.001, 0.002, -0.001])
    grad = np.asarray(jax.jit(jax.grad(joint))(jax.numpy.asarray(v)))
    np.testing.assert_allclose(grad, _finite_difference(joint, v), rtol=1e-5, atol=1e-3)
    vectors = np.stack([v, v + 0.001])
    np.testing.assert_allclose(
        jax.vmap(joint)(jax.numpy.asarray(vectors)), joint.batch(vectors, "numba"), rtol=1e-10
    )


def test_the_docs_own_sampler_example_recovers_its_truths():
    """docs/examples/own_sampler.py: blackjax's NUTS on the public likelihood; the simulated
    lens's Einstein radius (0.8) and source size (0.2) inside the chain's 4 sigma."""
    jax_or_skip()
    import importlib
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "docs" / "examples"))
    own_sampler = importlib.import_module("own_sampler")
    samples = own_sampler.main(n_warmup=100, n_samples=200, n_pix=30)
    assert np.all(np.isfinite(samples)) and np.ptp(samples, axis=0).min() > 0
    for column, truth in zip(samples.T, (0.8, 0.2), strict=True):
        assert abs(column.mean() - truth) < 4 * column.std(), (column.mean(), truth)

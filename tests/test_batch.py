"""Batched log-likelihoods: the same numbers as one-at-a-time evaluation, -inf outside the
valid ranges, chunking that changes nothing, and one JAX compile per shape signature."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from jax_loaded import jax_or_skip

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import GaussianBasis, LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE, ExternalShear

FREE = (
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[0].ell_comps[0]",
    "lenses[0].mass[0].ell_comps[1]",
    "lenses[0].mass[1].gamma_1",
    "sources[0].light[0].effective_radius",
    "sources[0].light[0].sersic_index",
    "sources[0].light[0].centre[0]",
)


def _setup(n=20, sub=2):
    grid = Grid2D((n, n), 0.1, sub_size=sub).circular_mask(0.9)
    psf = PSF.gaussian(0.15, 0.1, 5)
    lens = Galaxy(
        mass=(SIE((0.0, 0.0), (0.1, -0.05), 0.6), ExternalShear(0.02, -0.01)),
        light=GaussianBasis(np.geomspace(0.05, 0.5, 3), (0.0, 0.0), (0.0, 0.0)),
    )
    truth = Tracer(
        lens.__class__(lens.mass, ()),
        Galaxy(light=Sersic((0.03, 0.02), (0.1, 0.0), 0.2, 1.5, 2.0)),
    )
    dataset = simulate(truth, grid, psf, noise_sigma=0.05, seed=2)
    model = Tracer(lens, Galaxy(light=LinearSersic((0.03, 0.02), (0.1, 0.0), 0.2, 1.5)))
    return ImagingLikelihood(dataset, model, FREE)


@pytest.fixture(scope="module")
def likelihood() -> ImagingLikelihood:
    # built when a test first asks, not at import: simulating compiles a fused numba loop
    # (tens of seconds cold), which every test process paid while collecting
    return _setup()


def _vectors(like, n, scale=0.02, seed=0):
    rng = np.random.default_rng(seed)
    return like.reference + rng.normal(scale=scale, size=(n, like.n_params))


def _one_by_one(like, vectors):
    return np.array(
        [float(FitImaging(like.dataset, like.instance(v), "numpy").log_likelihood) for v in vectors]
    )


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_batch_equals_single_evaluations(backend, likelihood):
    vectors = _vectors(likelihood, 6)
    expected = _one_by_one(likelihood, vectors)
    got = likelihood.batch(vectors, backend)
    # 1e-10 relative: the cross-backend target of the issue
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=0)
    assert likelihood(vectors[2], backend) == pytest.approx(expected[2], rel=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_out_of_range_vectors_give_minus_inf_not_errors(backend, likelihood):
    vectors = _vectors(likelihood, 6, seed=1)
    vectors[0, 0] = -0.3  # negative Einstein radius
    vectors[1, 1:3] = (0.8, 0.7)  # |e| >= 1
    vectors[2, 5] = 25.0  # Sersic index above 10
    vectors[3, 4] = 0.0  # zero effective radius
    vectors[4, 6] = np.nan  # not a number at all
    got = likelihood.batch(vectors, backend)
    assert np.all(got[:5] == -np.inf)
    assert np.isfinite(got[5])
    assert got[5] == pytest.approx(_one_by_one(likelihood, vectors[5:])[0], rel=1e-10)


def test_constructing_an_out_of_range_instance_raises_clearly(likelihood):
    vector = likelihood.reference.copy()
    vector[5] = 25.0
    with pytest.raises(ValueError, match=r"sersic_index must be in \[0.2, 10\]"):
        likelihood.instance(vector)


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_chunking_changes_nothing(backend, likelihood):
    vectors = _vectors(likelihood, 7, seed=2)
    whole = likelihood.batch(vectors, backend, chunk_size=7)
    # XLA compiles a separate program per chunk shape, which may order a sum differently:
    # equal to rounding, not bit for bit
    np.testing.assert_allclose(likelihood.batch(vectors, backend, chunk_size=3), whole, rtol=1e-13)
    tiny = likelihood.batch(vectors, backend, memory_budget=1.0)  # forces one vector a chunk
    np.testing.assert_allclose(tiny, whole, rtol=1e-12)
    assert likelihood.chunk_size(backend, memory_budget=1.0) == 1
    budget = 5.5 * likelihood.bytes_per_evaluation()
    assert likelihood.chunk_size(backend, memory_budget=budget) == 5


def test_jax_chunks_are_a_power_of_two_under_the_budget(monkeypatch, likelihood):
    # a budget for 5.5 vectors: JAX chunks of 4, so a batch of 8 is two whole chunks and no
    # padded vectors are computed (chunks of 5 would compute 10)
    sizes = []
    original = ImagingLikelihood._jax_chunk

    def recording(self, values, size):
        sizes.append((values.shape[0], size))
        return original(self, values, size)

    monkeypatch.setattr(ImagingLikelihood, "_jax_chunk", recording)
    vectors = _vectors(likelihood, 8, seed=4)
    budget = 5.5 * likelihood.bytes_per_evaluation()
    out = likelihood.batch(vectors, "jax", memory_budget=budget)
    assert sizes == [(4, 4), (4, 4)]
    np.testing.assert_allclose(out, likelihood.batch(vectors, "numba"), rtol=1e-12)


def test_jax_compiles_once_per_shape_and_value():
    from twinlens.likelihood.batched import _jax_batch

    jitted = _jax_batch()
    like = _setup(n=16)
    vectors = _vectors(like, 4, seed=3)
    like.batch(vectors, "jax", chunk_size=4)
    after_first = jitted._cache_size()
    like.batch(vectors + 0.001, "jax", chunk_size=4)  # new values, same shapes
    rebuilt = _setup(n=16)  # an identical likelihood built again: equal by value
    assert rebuilt is not like and rebuilt == like and hash(rebuilt) == hash(like)
    rebuilt.batch(vectors, "jax", chunk_size=4)
    rebuilt.batch(vectors[:3], "jax", chunk_size=4)  # a short last chunk is padded
    assert jitted._cache_size() == after_first
    rebuilt.batch(vectors, "jax", chunk_size=2)  # a new chunk shape compiles once more
    assert jitted._cache_size() == after_first + 1
    other = dataclasses.replace(like, free=like.free[:-1])  # different parameters: its own
    other.batch(vectors[:, :-1], "jax", chunk_size=4)
    assert jitted._cache_size() == after_first + 2


def test_jax_gradient_is_finite_and_matches_finite_differences():
    jax = jax_or_skip()
    like = _setup(n=16)
    v0 = like.reference + 0.01
    grad = np.asarray(jax.grad(like.jax_log_likelihood)(jax.numpy.asarray(v0)))
    assert np.all(np.isfinite(grad))
    for j in (0, 4, 5):
        h = 1e-6
        up, down = v0.copy(), v0.copy()
        up[j] += h
        down[j] -= h
        fd = (like(up, "numpy") - like(down, "numpy")) / (2 * h)
        # central differences: error ~ h^2 f''' plus rounding ~ 1e-16 |log L| / h
        assert grad[j] == pytest.approx(fd, rel=1e-4, abs=1e-3)


def test_bad_vector_shapes_and_paths_are_named(likelihood):
    with pytest.raises(ValueError, match=r"shape \(n_batch, 7\)"):
        likelihood.batch(np.zeros((3, 6)))
    with pytest.raises(KeyError, match="names no parameter"):
        ImagingLikelihood(likelihood.dataset, likelihood.model, ("lenses[0].mass[0].nope",))


def test_default_free_parameters_are_every_scalar(likelihood):
    like = ImagingLikelihood(likelihood.dataset, likelihood.model)
    assert "lenses[0].mass[0].einstein_radius" in like.free
    assert "sources[0].light[0].sersic_index" in like.free
    assert like(like.reference, "numpy") == pytest.approx(
        likelihood(likelihood.reference, "numpy"), rel=1e-12
    )


def test_batch_with_a_hand_written_numba_kernel(likelihood):
    # the power law's numba kernel is written by hand (scalar parameters): batches run its
    # members one by one, and must equal the numpy reference
    from twinlens.mass import PowerLaw

    like = likelihood
    lens = like.model.lenses[0]
    model = Tracer(
        Galaxy((PowerLaw((0.0, 0.0), (0.1, -0.05), 0.6, 2.1), *lens.mass[1:]), lens.light),
        like.model.sources,
    )
    free = ("lenses[0].mass[0].einstein_radius", "lenses[0].mass[0].slope")
    power = ImagingLikelihood(like.dataset, model, free)
    vectors = np.array([[0.6, 2.1], [0.62, 1.9], [0.58, 2.3]])
    expected = _one_by_one(power, vectors)
    np.testing.assert_allclose(power.batch(vectors, "numba"), expected, rtol=1e-10)


def test_imaging_names_are_public_and_lazy():
    import subprocess
    import sys

    import twinlens

    assert twinlens.ImagingLikelihood is ImagingLikelihood
    assert twinlens.Grid2D is Grid2D and twinlens.Tracer is Tracer
    code = (
        "import sys, twinlens; assert 'twinlens.imaging' not in sys.modules; twinlens.Imaging; "
        "assert 'jax' not in sys.modules and 'numba' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_subpackages_are_attributes_of_the_package_without_jax():
    import subprocess
    import sys

    # the README's spelling: twinlens.mass.SIE after a bare "import twinlens"
    code = (
        "import sys, twinlens\n"
        "assert 'twinlens.mass' not in sys.modules\n"
        "assert twinlens.mass.SIE.__name__ == 'SIE'\n"
        "assert twinlens.light.Sersic.__name__ == 'Sersic'\n"
        "assert callable(twinlens.special.wofz)\n"
        "assert twinlens.convert.__name__ == 'twinlens.convert'\n"
        "assert 'jax' not in sys.modules, 'jax imported'\n"
        "try:\n"
        "    twinlens.no_such_module\n"
        "except AttributeError as err:\n"
        "    assert 'no_such_module' in str(err)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr

"""A MassSum in a tracer runs as its parts: the fused numba loop, the memo and parameter paths
treat a sum's parts as a galaxy's own profiles. References are the same model with the parts
as a tuple of profiles in the galaxy (the route a sum did not take before)."""

from __future__ import annotations

import numpy as np
import pytest
from jax_loaded import jax_or_skip

from twinlens import memo
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing import fused
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.mass import MGE, SIE, ExternalShear, MassSum, PowerLaw

SIGMAS = np.geomspace(0.05, 1.0, 4)
# inlined in the fused loop (SIE, shear), run by their own numba kernels before it (power law,
# MGE), and linear in a declared parameter (the MGE's mass-to-light ratio: the memo's level 2)
PARTS = (
    SIE((0.01, 0.0), (0.1, 0.05), 0.8),
    ExternalShear(0.02, 0.01),
    MGE(SIGMAS, np.linspace(1.0, 0.2, 4), (0.0, 0.0), (0.05, 0.0), 0.3),
    PowerLaw((0.3, -0.2), (0.0, 0.1), 0.2, 2.1),
)
SOURCE = Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), 0.2, 1.0, 1.0))
# the same parameters on both routes: (the tuple's path, the sum's path)
PATHS = (
    ("lenses[0].mass[0].einstein_radius", "lenses[0].mass[0].profiles[0].einstein_radius"),
    ("lenses[0].mass[0].ell_comps[1]", "lenses[0].mass[0].profiles[0].ell_comps[1]"),
    ("lenses[0].mass[1].gamma_1", "lenses[0].mass[0].profiles[1].profiles[0].gamma_1"),
    (
        "lenses[0].mass[2].mass_to_light_ratio",
        "lenses[0].mass[0].profiles[1].profiles[1].mass_to_light_ratio",
    ),
    ("lenses[0].mass[3].slope", "lenses[0].mass[1].slope"),
    ("sources[0].light[0].effective_radius", "sources[0].light[0].effective_radius"),
)
XY = np.random.default_rng(5).uniform(-2, 2, (400, 2))
RTOL = 1e-12  # the same math, perhaps summed in another order


def _tuple_tracer() -> Tracer:
    return Tracer(Galaxy(mass=PARTS), SOURCE)


def _sum_tracer() -> Tracer:
    # a nested sum beside a plain profile: the flattened parts are the tuple's, in order
    nested = MassSum((PARTS[0], MassSum(PARTS[1:3])))
    return Tracer(Galaxy(mass=(nested, PARTS[3])), SOURCE)


@pytest.fixture(scope="module")
def likelihoods() -> dict[str, ImagingLikelihood]:
    grid = Grid2D.uniform(20, 0.12, 2)
    psf = PSF.gaussian(0.15, 0.12, 5)
    dataset = simulate(_tuple_tracer(), grid, psf, noise_sigma=0.05, seed=3, backend="numpy")
    return {
        "tuple": ImagingLikelihood(dataset, _tuple_tracer(), tuple(t for t, _ in PATHS)),
        "sum": ImagingLikelihood(dataset, _sum_tracer(), tuple(s for _, s in PATHS)),
    }


def _vectors(like: ImagingLikelihood, n: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    return like.reference * (1.0 + 0.01 * rng.standard_normal((n, like.n_params)))


def test_a_sums_parts_run_in_the_fused_loop_as_a_tuples_do():
    with memo.disabled():
        assert MassSum(PARTS).kernel_call("deflections") is None  # not one kernel call
    loops = fused.fused_sources(_tuple_tracer())
    assert loops, "the tuple's profiles are fused"
    assert fused.fused_sources(_sum_tracer()) == loops


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_deflections_and_images_equal_the_tuples(backend):
    with memo.disabled():
        for quantity in ("deflections", "image"):
            ref = np.asarray(getattr(_tuple_tracer(), quantity)(XY, backend=backend))
            got = np.asarray(getattr(_sum_tracer(), quantity)(XY, backend=backend))
            np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-14, err_msg=quantity)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_batches_with_free_parameters_inside_the_sum(backend, likelihoods):
    if backend == "jax":
        jax_or_skip()
    vectors = _vectors(likelihoods["tuple"], 5)
    ref = likelihoods["tuple"].batch(vectors, backend)
    got = likelihoods["sum"].batch(vectors, backend)
    assert np.all(np.isfinite(ref))
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=0)
    single = likelihoods["sum"](vectors[2], backend)
    assert single == pytest.approx(likelihoods["tuple"](vectors[2], backend), rel=RTOL)


def test_jax_gradients_and_vmap_equal_the_tuples(likelihoods):
    jax = jax_or_skip()
    v = jax.numpy.asarray(_vectors(likelihoods["tuple"], 1)[0])
    grads = {k: np.asarray(jax.jit(jax.grad(like))(v)) for k, like in likelihoods.items()}
    assert np.all(grads["tuple"] != 0.0)
    np.testing.assert_allclose(grads["sum"], grads["tuple"], rtol=RTOL, atol=0)
    vectors = jax.numpy.asarray(_vectors(likelihoods["tuple"], 3))
    mapped = {k: np.asarray(jax.vmap(like)(vectors)) for k, like in likelihoods.items()}
    np.testing.assert_allclose(mapped["sum"], mapped["tuple"], rtol=RTOL, atol=0)


def test_the_jax_program_is_the_tuples(likelihoods):
    # the parts in the tuple's order: one program, operation for operation
    jax = jax_or_skip()
    v = jax.numpy.asarray(likelihoods["tuple"].reference)
    texts = {k: jax.jit(like).lower(v).as_text() for k, like in likelihoods.items()}
    assert texts["sum"] == texts["tuple"]


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_the_memo_serves_a_sums_fixed_parts_as_a_tuples(backend, likelihoods):
    # the MGE inside the sum is fixed but for its ratio (level 2): recalled on both routes
    # alike, though the sum as a whole has free parameters
    if backend == "jax":
        jax_or_skip()
    vectors = _vectors(likelihoods["tuple"], 4)
    counts = {}
    for name, like in likelihoods.items():
        memo.clear()
        like.batch(vectors, backend)
        like.batch(vectors, backend)
        counts[name] = memo.stats()
    assert counts["tuple"]["entries"] >= 1
    assert counts["sum"] == counts["tuple"]


def test_a_sum_of_fixed_parts_is_one_stored_field():
    tracer = Tracer(Galaxy(mass=(MassSum(PARTS[:3]), PARTS[3])), SOURCE)
    x, y = np.ascontiguousarray(XY[:, 0]), np.ascontiguousarray(XY[:, 1])
    memo.clear()
    recalled, direct = tracer._mass_split(x, y, "numba", None, True)
    # the sum whole, then the power law beside it
    assert [r.level for r in recalled] == [1, 1] and direct == []
    total = sum(np.asarray(r.value("numba")) for r in recalled)
    ref = np.stack(_tuple_tracer()._deflections(x, y, "numpy"))
    np.testing.assert_allclose(total, ref, rtol=RTOL, atol=1e-14)


def test_the_effective_einstein_radius_is_centred_as_the_tuples():
    # the default centre is the first centred profile's: a sum's first centred part
    parts = (ExternalShear(0.02, 0.01), SIE((0.4, -0.3), (0.1, 0.0), 1.0))
    as_tuple = Tracer(Galaxy(mass=parts), ())
    as_sum = Tracer(Galaxy(mass=MassSum(parts)), ())
    assert as_sum.einstein_radius() == pytest.approx(as_tuple.einstein_radius(), rel=1e-12)
    assert as_tuple.einstein_radius() != pytest.approx(as_tuple.einstein_radius((0.0, 0.0)))

"""The multi-band likelihood: one lens seen in two bands at different pixel scales and PSFs.

References: each band's imaging likelihood built on its own with that band's values written in
(the sum's parts), two copies of one dataset (twice one band's value), numba against numpy and
JAX, and JAX gradients against central finite differences of numba's values."""

from __future__ import annotations

import numpy as np
import pytest
from jax_loaded import jax_or_skip

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import Constant, Pixelization, Rectangular
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.likelihood.multiband import MultiBandLikelihood
from twinlens.mass import SIE, ExternalShear
from twinlens.model.paths import band_path, set_paths

LENS = Galaxy(mass=(SIE((0.0, 0.0), (0.1, 0.0), 0.8), ExternalShear(0.02, -0.01)))
SHARED = (
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[0].ell_comps[0]",
    "lenses[0].mass[1].gamma_1",
    "sources[0].light[0].effective_radius",
)
# the red band's source is larger (a colour gradient)
FREE = (*SHARED, "band.red.sources[0].light[0].effective_radius")


def _bands():
    """A blue band at 0.05" with a narrow PSF and a red one at 0.13" with a broad PSF; the
    source's red effective radius is 1.3 times its blue one, its colour differs."""
    truth = {}
    out = []
    for name, scale, n, fwhm, radius, intensity in (
        ("blue", 0.05, 40, 0.08, 0.2, 1.0),
        ("red", 0.13, 16, 0.18, 0.26, 0.6),
    ):
        source = Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), radius, 1.0, intensity))
        grid = Grid2D.uniform(n, scale, 2).circular_mask(0.95)
        psf = PSF.gaussian(fwhm, scale, 5)
        out.append(simulate(Tracer(LENS, source), grid, psf, noise_sigma=0.04, seed=len(out)))
        truth[name] = radius
    return tuple(out), truth


def _model():
    return Tracer(LENS, Galaxy(light=LinearSersic((0.05, 0.0), (0.0, 0.1), 0.2, 1.0)))


def _likelihood(free=FREE):
    datasets, _ = _bands()
    return MultiBandLikelihood(datasets, ("blue", "red"), _model(), free)


VECTOR = np.array([0.81, 0.09, 0.021, 0.21, 0.25])


def _single(dataset, values):
    """One band's imaging likelihood with its values written into the model."""
    model = set_paths(_model(), values, False)
    return ImagingLikelihood(dataset, model, tuple(values))(np.array(list(values.values())))


def test_the_sum_of_each_bands_own_likelihood_with_band_values_in_place_of_shared_ones():
    like = _likelihood()
    datasets, _ = _bands()
    shared = dict(zip(SHARED, VECTOR[:4], strict=True))
    blue = _single(datasets[0], shared)
    red = _single(datasets[1], {**shared, "sources[0].light[0].effective_radius": VECTOR[4]})
    for backend in ("numba", "numpy"):
        np.testing.assert_allclose(like(VECTOR, backend), blue + red, rtol=1e-12)
    assert like.per_band(VECTOR, "numba") == pytest.approx({"blue": blue, "red": red}, rel=1e-12)
    # the red band's own radius moves only the red band's term
    moved = VECTOR.copy()
    moved[4] = 0.3
    per = like.per_band(moved, "numba")
    assert per["blue"] == pytest.approx(blue, rel=1e-14) and per["red"] != pytest.approx(red)


def test_two_copies_of_one_dataset_give_twice_its_value():
    datasets, _ = _bands()
    like = MultiBandLikelihood((datasets[0], datasets[0]), ("a", "b"), _model(), SHARED)
    single = ImagingLikelihood(datasets[0], _model(), SHARED)
    np.testing.assert_allclose(like(VECTOR[:4]), 2 * single(VECTOR[:4]), rtol=1e-13)


def test_the_truth_is_preferred_over_a_shared_radius_for_both_bands():
    """The data were made with the red radius 1.3x the blue one: a band's own radius at
    its truth fits better than one radius for both bands."""
    like = _likelihood()
    _, truth = _bands()
    own = VECTOR.copy()
    own[3], own[4] = truth["blue"], truth["red"]
    common = own.copy()
    common[4] = truth["blue"]
    assert like(own, "numba") > like(common, "numba") + 10.0


def test_backends_batches_and_minus_inf_outside_the_ranges():
    jax_or_skip()
    like = _likelihood()
    rng = np.random.default_rng(3)
    batch = VECTOR * (1.0 + 0.03 * rng.normal(size=(5, VECTOR.size)))
    batch[2, 0] = -0.5  # a negative Einstein radius: out of range
    values = {b: like.batch(batch, b) for b in ("numba", "numpy", "jax")}
    assert values["numba"][2] == -np.inf
    for backend in ("numpy", "jax"):
        assert values[backend][2] == -np.inf
        np.testing.assert_allclose(values[backend], values["numba"], rtol=1e-10)
    singles = [like(v, "numba") for v in batch]
    np.testing.assert_allclose(values["numba"], singles, rtol=1e-12)
    assert like(batch[0], "jax") == pytest.approx(values["numba"][0], rel=1e-10)


def test_jax_grad_jit_and_vmap_against_finite_differences():
    jax = jax_or_skip()
    jnp = jax.numpy
    like = _likelihood()
    h = 1e-6
    expected = [
        (like(VECTOR + e, "numba") - like(VECTOR - e, "numba")) / (2 * h)
        for e in np.eye(VECTOR.size) * h
    ]
    grad = jax.jit(jax.grad(like))(jnp.asarray(VECTOR))
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-5, atol=1e-4)
    rows = jnp.asarray(VECTOR * np.array([[1.0], [1.01]]))
    np.testing.assert_allclose(
        np.asarray(jax.vmap(like)(rows)), like.batch(np.asarray(rows), "numba"), rtol=1e-10
    )


def test_a_pixelised_source_per_band_with_its_own_coefficient():
    datasets, _ = _bands()
    source = Galaxy(pixelization=Pixelization(Rectangular((10, 10)), Constant(1.0)))
    model = Tracer(LENS, source)
    coefficient = "sources[0].pixelization.regularization.coefficient"
    free = (SHARED[0], coefficient, f"band.red.{coefficient}")
    like = MultiBandLikelihood(datasets, ("blue", "red"), model, free)
    v = np.array([0.8, 2.0, 5.0])
    blue = ImagingLikelihood(datasets[0], model, (SHARED[0], coefficient))(v[:2], "numba")
    red = ImagingLikelihood(datasets[1], model, (SHARED[0], coefficient))(v[[0, 2]], "numba")
    np.testing.assert_allclose(like(v, "numba"), blue + red, rtol=1e-12)


def test_value_identity():
    a, b = _likelihood(), _likelihood()
    assert a == b and hash(a) == hash(b)
    assert a != _likelihood(SHARED)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"names": ("blue",)}, r"1 names for 2 datasets"),
        ({"names": ("blue", "blue")}, r"repeats a band"),
        ({"names": ("blue", "2red")}, r"names\[1\] = '2red': a band's name starts with"),
        ({"free": ("band.green.sources[0].light[0].effective_radius",)}, r"no band named 'green'"),
        ({"free": ("lenses[0].mass[0].nope",)}, r"nope"),
        ({"free": ()}, r"free is empty"),
    ],
)
def test_bad_set_ups_are_refused_with_their_names(change, message):
    datasets, _ = _bands()
    settings = {"datasets": datasets, "names": ("blue", "red"), "model": _model(), "free": FREE}
    with pytest.raises((ValueError, TypeError, KeyError), match=message):
        MultiBandLikelihood(**{**settings, **change})


def test_band_path():
    assert band_path("band.F160W.sources[0].light[0].sersic_index") == (
        "F160W",
        "sources[0].light[0].sersic_index",
    )
    assert band_path("lenses[0].mass[0].einstein_radius") == (
        None,
        "lenses[0].mass[0].einstein_radius",
    )


def test_a_bands_offset_moves_its_scene_as_moving_its_grid_does():
    """Pixels simulated on a grid whose origin is ``-d`` hold the scene as an observer with an
    origin-0 grid sees it moved by ``+d``: the band's offset ``d`` on the origin-0 grid must
    give the likelihood of no offset on the moved grid (a second route to the same images)."""
    import dataclasses

    d = (0.031, -0.017)
    truth = Tracer(LENS, Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), 0.25, 1.0, 0.8)))
    moved = Grid2D.uniform(16, 0.13, 2, origin=(-d[0], -d[1])).circular_mask(0.95)
    psf = PSF.gaussian(0.18, 0.13, 5)
    seen = simulate(truth, moved, psf, noise_sigma=0.03, seed=4)
    observed = seen.with_grid(dataclasses.replace(seen.grid, origin=(0.0, 0.0)))
    free = (SHARED[0], "band.red.offset[0]", "band.red.offset[1]")
    like = MultiBandLikelihood((observed,), ("red",), _model(), free)
    reference = ImagingLikelihood(seen, _model(), (SHARED[0],))
    jax = jax_or_skip()
    for backend in ("numba", "numpy", "jax"):
        np.testing.assert_allclose(
            like(np.array([0.81, *d]), backend), reference(np.array([0.81]), backend), rtol=1e-11
        )
    assert like(np.array([0.8, *d])) > like(np.array([0.8, 0.0, 0.0])) + 10.0
    grad = jax.grad(like)(jax.numpy.array([0.81, *d]))
    assert np.all(np.isfinite(np.asarray(grad)))


def test_batch_settings_apply_on_every_backend(capsys):
    jax_or_skip()
    like = _likelihood()
    rows = VECTOR * (1.0 + 0.01 * np.arange(5)[:, None])
    reference = like.batch(rows, "numba")
    for backend in ("numba", "jax"):
        got = like.batch(rows, backend, chunk_size=2, progress=True)
        np.testing.assert_allclose(got, reference, rtol=1e-10)
        assert "chunk 3/3: 5 vectors" in capsys.readouterr().out
    with pytest.raises(ValueError, match="chunk_size must be an integer >= 1"):
        like.batch(rows, "jax", chunk_size=0)
    with pytest.raises(TypeError):
        like.batch(rows, "jax", chunks=2)  # a misspelt setting is not swallowed

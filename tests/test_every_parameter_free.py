"""Every numeric parameter of every mass and light profile, freed one at a time in an
:class:`~twinlens.likelihood.ImagingLikelihood` and evaluated single and batched on numba, numpy and
JAX (issue 14), plus the issue's reproducers as regression tests.

The profiles come from ``twinlens.mass.__all__`` and ``twinlens.light.__all__`` and their
parameters from :func:`twinlens.model.parameter_paths`, so a new profile or parameter joins the
matrix by itself (a profile without test values below fails ``test_every_profile_has_values``).
Each case is a batch of three distinct values (the profile's value and 1e-3 relative either
side) and a single evaluation of the middle one.

Tolerances (float64, max relative error of log L, about 700 on the 21x21 grid):

* numba and numpy, single and batched, against log L of the concrete instance on numpy
  (:class:`~twinlens.likelihood.imaging.FitImaging`): ``1e-12``, the cross-backend target for closed
  forms (the same per-point math, summed in another order; measured <= 1e-14 everywhere);
* numba against JAX: ``1e-12`` for closed forms; ``1e-11`` for the profiles evaluated through a
  Gaussian decomposition, whose free shape parameter is decomposed by scipy (``loggamma``,
  ``gammaincinv`` for the Sersic ``b_n``) on numba and numpy, and by the traced Stirling series
  and Newton ``b_n`` on JAX; those agree to ~1e-13 of the largest amplitude
  (:mod:`twinlens.kernels.gauss_decomposition`), and the measured log L differences are up to
  1e-14 (SersicMass ``sersic_index``).

Cost: 153 cases; with JAX (two programs compiled per case) the whole matrix takes tens of
minutes, and first numba compiles of each profile's fused loop add more. The default run keeps
a representative subset (the issue's decomposed-profile parameters, shape and normalisation,
and a closed-form mass, light and linear light parameter); the rest is marked ``slow``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from profile_values import LIGHT, MASS, C, E, profile_classes

import twinlens.light as light
import twinlens.mass as mass
from twinlens.backend.concrete import batched
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.kernels import gauss_decomposition as gd
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.likelihood import ImagingLikelihood
from twinlens.likelihood.imaging import FitImaging
from twinlens.model.paths import parameter_paths

#: Profiles evaluated through a Gaussian decomposition (looser numba-JAX tolerance).
DECOMPOSED = {"GNFW", "NFW", "CoredNFW", "SersicMass"}

SOURCE = light.Sersic((0.03, 0.02), (0.1, 0.0), 0.2, 1.5, 2.0)
LENS = mass.SIE((0.0, 0.0), (0.1, -0.05), 0.6)


@cache
def _dataset():
    grid = Grid2D((21, 21), 0.1, sub_size=1)
    truth = Tracer(Galaxy(mass=(LENS,)), Galaxy(light=(SOURCE,)))
    return simulate(truth, grid, PSF.gaussian(0.15, 0.1, 5), noise_sigma=0.05, seed=2)


def _model(name: str) -> tuple[Tracer, str]:
    """The model holding profile ``name``, and the path prefix of that profile."""
    if name in MASS:
        return Tracer(Galaxy(mass=(MASS[name],)), Galaxy(light=(SOURCE,))), "lenses[0].mass[0]."
    return Tracer(Galaxy(mass=(LENS,)), Galaxy(light=(LIGHT[name],))), "sources[0].light[0]."


def _cases() -> list[tuple[str, str]]:
    out = []
    for name in (*MASS, *LIGHT):
        model, prefix = _model(name)
        out += [(name, p) for p in parameter_paths(model) if p.startswith(prefix)]
    return out


CASES = _cases()
DEFAULT = {
    ("GNFW", "lenses[0].mass[0].gamma"),
    ("GNFW", "lenses[0].mass[0].rho_s"),
    ("NFW", "lenses[0].mass[0].scale_radius"),
    ("CoredNFW", "lenses[0].mass[0].r_c"),
    ("SersicMass", "lenses[0].mass[0].sersic_index"),
    ("SIE", "lenses[0].mass[0].einstein_radius"),
    ("PowerLaw", "lenses[0].mass[0].slope"),
    ("Sersic", "sources[0].light[0].sersic_index"),
    ("LinearSersic", "sources[0].light[0].effective_radius"),
}


def _param(case: tuple[str, str]):
    marks = () if case in DEFAULT else (pytest.mark.slow,)
    return pytest.param(*case, id=f"{case[0]}-{case[1].split('.', 2)[-1]}", marks=marks)


def _vectors(like: ImagingLikelihood) -> np.ndarray:
    """The reference value and two perturbed by 1e-3 relative: a batch of three distinct."""
    ref = like.reference[0]
    return ref * np.array([[1.0], [1.0 + 1e-3], [1.0 - 1e-3]])


def _reference(like: ImagingLikelihood, vectors: np.ndarray) -> np.ndarray:
    """log L of each vector from a concrete instance (no batch columns, no JAX)."""
    return np.array(
        [float(FitImaging(like.dataset, like.instance(v), "numpy").log_likelihood) for v in vectors]
    )


def test_every_profile_has_values():
    assert profile_classes() == set(MASS) | set(LIGHT)
    assert len(CASES) > 50


@pytest.mark.parametrize(("name", "path"), [_param(c) for c in CASES])
def test_free_parameter_agrees_single_and_batched_on_every_backend(name, path):
    model, _ = _model(name)
    like = ImagingLikelihood(_dataset(), model, (path,))
    vectors = _vectors(like)
    expected = _reference(like, vectors)
    # the parameter is really free: its three values give three log-likelihoods
    assert len(set(expected.tolist())) == 3
    got = {}
    for backend in ("numba", "jax", "numpy"):
        single = like(vectors[1], backend)
        got[backend] = like.batch(vectors, backend)
        if backend != "jax":
            np.testing.assert_allclose(got[backend], expected, rtol=1e-12, atol=0)
            assert single == pytest.approx(expected[1], rel=1e-12, abs=0)
        else:
            rtol = 1e-11 if name in DECOMPOSED else 1e-12
            np.testing.assert_allclose(got["jax"], got["numba"], rtol=rtol, atol=0)
            assert single == pytest.approx(got["jax"][1], rel=1e-12, abs=0)


# -- the reproducers ------------------------------------------------------------------


def _gnfw_likelihood(free: str) -> ImagingLikelihood:
    """Issue 14's reproducer: a 21x21 grid, a GNFW lens, a Sersic source, one free path."""
    model = Tracer(
        Galaxy(mass=(mass.GNFW(rho_s=0.1, r_s=5.0, gamma=1.5),)), Galaxy(light=(SOURCE,))
    )
    return ImagingLikelihood(_dataset(), model, (free,))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("path", ["gamma", "r_s"])
def test_free_gnfw_shape_parameter_runs_on_numba_and_numpy(path, backend):
    # was: "mul got incompatible shapes for broadcasting: (1, 45), (1, 1024)" (the batch
    # column reached the jax.numpy decomposition)
    like = _gnfw_likelihood(f"lenses[0].mass[0].{path}")
    vectors = _vectors(like)
    expected = _reference(like, vectors)
    assert like(like.reference, backend) == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(like.batch(vectors, backend), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_free_gnfw_normalisation_runs_in_a_batch_and_on_numpy(backend):
    # was: a broadcasting error in any numba batch, "an input is a JAX array" on numpy
    like = _gnfw_likelihood("lenses[0].mass[0].rho_s")
    vectors = _vectors(like)
    expected = _reference(like, vectors)
    assert like(like.reference, backend) == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(like.batch(vectors, backend), expected, rtol=1e-12, atol=0)


def test_numpy_and_jax_values_that_compare_equal_do_not_share_jax_arrays():
    # Item 5: the JAX-built profile used to fill the cache with JAX arrays, which the equal
    # numpy-built profile then received on the numpy backend.
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    xy = np.array([[0.3, -0.2], [1.1, 0.4]])
    for field in ("gamma", "rho_s"):  # a shape parameter and the normalisation
        with_jax = mass.GNFW(C, E, r_s=3.0, **{field: jnp.asarray(0.8)})
        with_numpy = mass.GNFW(C, E, r_s=3.0, **{field: np.array(0.8)})
        on_jax = np.asarray(with_jax.deflections(xy, backend="jax"))
        on_numpy = with_numpy.deflections(xy, backend="numpy")
        assert type(on_numpy) is np.ndarray
        assert not any(
            type(a).__module__.startswith("jax")
            for a in with_numpy.mge().kernel_call("potential").params
        )
        np.testing.assert_allclose(on_numpy, on_jax, rtol=1e-12, atol=0)


def test_a_batch_column_never_reaches_the_traced_decomposition():
    # a Batched column is not concrete; it used to be sent down the jax.numpy path
    with pytest.raises(TypeError, match="Batched"):
        gd.decompose_gnfw(1.0, batched([5.0, 6.0]), 1.5)

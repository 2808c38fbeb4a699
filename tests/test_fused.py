"""The fused numba loop (a whole tracer in one pass) against the profile-by-profile path."""

from __future__ import annotations

import numpy as np
import pytest

from twinlens.backend.concrete import batched
from twinlens.fit import fused
from twinlens.fit.tracer import Galaxy, Tracer
from twinlens.light import GaussianBasis, LinearSersic, MGELight, Sersic
from twinlens.mass import MGE, SIE, ExternalShear, PowerLaw

RNG = np.random.default_rng(4)
X = np.ascontiguousarray(RNG.uniform(-2, 2, 500))
Y = np.ascontiguousarray(RNG.uniform(-2, 2, 500))
X[0] = Y[0] = 0.0  # a point exactly on the lens centre


def _tracer(extra_mass=()):
    sigmas = np.geomspace(0.05, 1.0, 5)
    lens = Galaxy(
        mass=(
            SIE((0.01, 0.0), (0.1, 0.05), 1.0),
            ExternalShear(0.02, 0.01),
            MGE(sigmas, np.linspace(1, 0.2, 5), (0.0, 0.0), (0.05, 0.0), 0.3),
            *extra_mass,
        ),
        light=(
            MGELight(sigmas, np.ones(5), (0.0, 0.0), (0.05, 0.0)),
            GaussianBasis(sigmas[:3], (0.0, 0.0), (0.0, 0.0)),
        ),
    )
    source = Galaxy(
        light=(
            Sersic((0.1, 0.0), (0.2, 0.1), 0.3, 2.0, 1.5),
            LinearSersic((0.0, 0.1), (0.0, 0.0), 0.5, 1.0),
        )
    )
    return Tracer(lens, source)


def _unfused(tracer, x, y, backend):
    # the profile-by-profile path, reached by giving positions a second axis
    fixed, columns = tracer._light_terms(x[None, :], y[None, :], backend)
    return np.asarray(fixed)[0], [np.asarray(c)[0] for c in columns]


def test_fused_equals_profile_by_profile():
    tracer = _tracer()
    got = fused.fused_light(tracer, X, Y)
    assert got is not None, "every profile here has a planned kernel call"
    fixed, columns = got
    ref_fixed, ref_columns = _unfused(tracer, X, Y, "numpy")
    assert len(columns) == len(ref_columns) == 4
    # same per-point math, summed in another order: rounding only
    np.testing.assert_allclose(fixed, ref_fixed, rtol=1e-12, atol=1e-13)
    for c, r in zip(columns, ref_columns, strict=True):
        np.testing.assert_allclose(c, r, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("n_batch", [3, 9])  # parallel over points, then over members
def test_fused_batch_equals_members(n_batch):
    tracer = _tracer()
    theta = np.linspace(0.9, 1.1, n_batch)
    lens = tracer.lenses[0]
    sie = lens.mass[0]
    batch_tracer = Tracer(
        Galaxy((type(sie)(sie.centre, sie.ell_comps, batched(theta)), *lens.mass[1:]), lens.light),
        tracer.sources,
    )
    fixed, columns = fused.fused_light(batch_tracer, X, Y)
    assert fixed.shape == (n_batch, X.size)
    for b, t in enumerate(theta):
        member = Tracer(
            Galaxy((type(sie)(sie.centre, sie.ell_comps, float(t)), *lens.mass[1:]), lens.light),
            tracer.sources,
        )
        ref_fixed, ref_columns = _unfused(member, X, Y, "numpy")
        np.testing.assert_allclose(fixed[b], ref_fixed, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(columns[3][b], ref_columns[3], rtol=1e-12, atol=1e-13)


def test_profiles_without_a_single_kernel_call_fall_back():
    # the power law's numba kernel is hand-written (its series length is decided per call):
    # there is no per-point function to inline, so the tracer is computed profile by profile
    tracer = _tracer(extra_mass=(PowerLaw((0.3, -0.2), (0.0, 0.1), 0.2, 2.1),))
    assert fused.fused_light(tracer, X, Y) is None
    fixed, columns = tracer._light_terms(X, Y, "numba")  # still computed, unfused
    ref_fixed, ref_columns = _unfused(tracer, X, Y, "numpy")
    np.testing.assert_allclose(fixed, ref_fixed, rtol=1e-10, atol=1e-12)
    for c, r in zip(columns, ref_columns, strict=True):
        np.testing.assert_allclose(c, r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["numba"])
def test_tracer_light_terms_use_the_fused_loop(backend, monkeypatch):
    calls = []
    original = fused.fused_light
    monkeypatch.setattr(fused, "fused_light", lambda *a: calls.append(1) or original(*a))
    _tracer()._light_terms(X, Y, backend)
    assert calls == [1]

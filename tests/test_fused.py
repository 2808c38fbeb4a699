"""The fused numba loop (a whole tracer in one pass) against the profile-by-profile path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twinlens import memo
from twinlens.backend.concrete import batched
from twinlens.lensing import fused
from twinlens.lensing.tracer import Galaxy, Tracer
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


def _fuse(tracer, x, y, stored_mass=(), stored_light=()):
    return fused.fused_light(
        [p for g in tracer.lenses for p in g.mass],
        [p for g in tracer.lenses for p in g.light],
        [p for g in tracer.sources for p in g.light],
        x,
        y,
        stored_mass,
        stored_light,
    )


def _unfused(tracer, x, y, backend):
    # the profile-by-profile path, reached by giving positions a second axis
    fixed, columns = tracer._light_terms(x[None, :], y[None, :], backend)
    return np.asarray(fixed)[0], [np.asarray(c)[0] for c in columns]


def test_fused_equals_profile_by_profile():
    tracer = _tracer()
    got = _fuse(tracer, X, Y)
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
    fixed, columns = _fuse(batch_tracer, X, Y)
    assert fixed.shape == (n_batch, X.size)
    for b, t in enumerate(theta):
        member = Tracer(
            Galaxy((type(sie)(sie.centre, sie.ell_comps, float(t)), *lens.mass[1:]), lens.light),
            tracer.sources,
        )
        ref_fixed, ref_columns = _unfused(member, X, Y, "numpy")
        np.testing.assert_allclose(fixed[b], ref_fixed, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(columns[3][b], ref_columns[3], rtol=1e-12, atol=1e-13)


def test_kernels_with_their_own_numba_loop_run_before_the_fused_loop(monkeypatch):
    # the power law's and the MGE's numba kernels are hand-written (a series length decided per
    # call, far components summed as one series): no per-point function to inline. They run
    # as their kernel first and enter the loop as a stored field, factor 1
    assert [call.kernel.name for call in fused._split_mass(_tracer().lenses[0].mass)[1]] == [
        "mge.deflections_elliptical"
    ]
    # the power law in the MGE's place: the same loop as the other tests' (one stored field)
    power_law = PowerLaw((0.3, -0.2), (0.0, 0.1), 0.2, 2.1)
    lens = _tracer().lenses[0]
    tracer = Tracer(Galaxy((*lens.mass[:2], power_law), lens.light), _tracer().sources)
    assert [c.kernel.name for c in fused._split_mass(tracer.lenses[0].mass)[1]] == [
        "power_law.deflections"
    ]
    fields = []
    original = fused._computed_field
    monkeypatch.setattr(
        fused, "_computed_field", lambda *a: fields.append(original(*a)) or fields[-1]
    )
    got = _fuse(tracer, X, Y)
    assert got is not None
    fixed, columns = got
    ref_fixed, ref_columns = _unfused(tracer, X, Y, "numpy")
    np.testing.assert_allclose(fixed, ref_fixed, rtol=1e-12, atol=1e-13)
    for c, r in zip(columns, ref_columns, strict=True):
        np.testing.assert_allclose(c, r, rtol=1e-12, atol=1e-13)
    # the stored field is the kernel's own result, bit for bit
    alone = np.stack(power_law._deflections(X, Y, "numba"))
    assert any(np.array_equal(f.stored, alone) for f in fields)


def test_a_batched_hand_written_kernel_falls_back():
    # batched parameters of a hand-written kernel: its members run one by one, so the tracer
    # is computed profile by profile
    slopes = np.array([1.9, 2.1, 2.3])
    tracer = _tracer(extra_mass=(PowerLaw((0.3, -0.2), (0.0, 0.1), 0.2, batched(slopes)),))
    assert _fuse(tracer, X, Y) is None
    fixed, _ = tracer._light_terms(X, Y, "numba")  # still computed, unfused
    for b, slope in enumerate(slopes):
        member = _tracer(extra_mass=(PowerLaw((0.3, -0.2), (0.0, 0.1), 0.2, slope),))
        ref_fixed, _ = _unfused(member, X, Y, "numpy")
        np.testing.assert_allclose(np.asarray(fixed)[b], ref_fixed, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["numba"])
def test_tracer_light_terms_use_the_fused_loop(backend, monkeypatch):
    calls = []
    original = fused.fused_light
    monkeypatch.setattr(fused, "fused_light", lambda *a: calls.append(1) or original(*a))
    _tracer()._light_terms(X, Y, backend)
    assert calls == [1]


@pytest.mark.parametrize("n_batch", [1, 3])
def test_stored_fields_enter_the_loop_times_their_factors(n_batch):
    # fields recalled from the memo (here made by hand: the MGE's unit deflections and the
    # lens light's image) are read by the loop, times one factor per member
    tracer = _tracer()
    lens = tracer.lenses[0]
    sie, shear, mge = lens.mass
    ratios = np.linspace(0.2, 0.4, n_batch)
    unit = np.stack(
        mge.__class__(mge.sigmas, mge.intensities, mge.centre, mge.ell_comps, 1.0)._deflections(
            X, Y, "numpy"
        )
    )
    unit.setflags(write=False)
    image = np.asarray(lens.light[0]._image(X, Y, "numpy"))
    image.setflags(write=False)
    stored_mass = [memo.Recalled(unit, "tuple", batched(ratios), 2)]
    stored_light = [memo.Recalled(image, "array")]
    got_fixed, got_columns = fused.fused_light(
        [sie, shear],
        [lens.light[1]],
        list(tracer.sources[0].light),
        X,
        Y,
        stored_mass,
        stored_light,
    )
    for b, r in enumerate(ratios):
        member = Tracer(
            Galaxy((sie, shear, dataclasses.replace(mge, mass_to_light_ratio=r)), lens.light),
            tracer.sources,
        )
        ref_fixed, ref_columns = _unfused(member, X, Y, "numpy")
        np.testing.assert_allclose(np.atleast_2d(got_fixed)[b], ref_fixed, rtol=1e-12, atol=1e-13)
        for c, ref in zip(got_columns, ref_columns, strict=True):  # basis of 3, source 1
            np.testing.assert_allclose(np.atleast_2d(c)[b], ref, rtol=1e-12, atol=1e-13)

"""The field memo (twinlens.memo): computed once under contention, evicted least recently used
first under its byte cap, keyed exactly, shared by every backend, linear in a declared
parameter, switched off on request, and folded into JAX programs as constants where (and only
where) the inputs are fixed.

Every reference value below comes from a direct call of the profile (or the likelihood with the
memo off), never from the memo itself."""

from __future__ import annotations

import functools
import threading
import time

import numpy as np
import pytest

from twinlens import memo
from twinlens.backend import jax_runtime
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, MGELight, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.mass import SIE, Gaussian

jax = jax_runtime.load()  # float64 on, as in every JAX test

MAX_MB = memo.ENV_MAX_MB
SWITCH = memo.ENV_SWITCH


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch):
    monkeypatch.delenv(SWITCH, raising=False)
    monkeypatch.delenv(MAX_MB, raising=False)
    memo.clear()
    yield
    memo.clear()


def _coordinates(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.2, 1.2, n), rng.uniform(-1.2, 1.2, n)


def _deflect(profile, x, y, backend):
    return profile._deflections(x, y, backend)


def _shine(profile, x, y, backend):
    return profile._image(x, y, backend)


class Counting:
    """An ``evaluate`` that counts its calls (thread-safe) and records the backends asked."""

    def __init__(self, inner=_deflect, delay=0.0):
        self.inner = inner
        self.delay = delay
        self.calls = 0
        self.backends = set()
        self.lock = threading.Lock()
        self.compute_lock = threading.Lock()

    def __call__(self, profile, x, y, backend):
        with self.lock:
            self.calls += 1
            self.backends.add(backend)
        if self.delay:
            time.sleep(self.delay)  # widen the window in which other threads ask for the key
        with self.compute_lock:  # numba's workqueue layer refuses concurrent parallel launches
            return self.inner(profile, x, y, backend)


def _bytes(value):
    if isinstance(value, (tuple, list)):
        return tuple(np.asarray(v).tobytes() for v in value)
    return np.asarray(value).tobytes()


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


# -- 1. threads ---------------------------------------------------------------------------------


def test_threads_hammering_the_same_keys_compute_each_field_once():
    x, y = _coordinates(2000)
    profiles = [SIE((0.01, -0.02), (0.1, -0.05), r) for r in (0.5, 0.7, 0.9)]
    expected = [_bytes(_deflect(p, x, y, "numba")) for p in profiles]
    evaluate = Counting(delay=0.02)
    n_threads, rounds = 8, 4
    barrier = threading.Barrier(n_threads)
    results = [[] for _ in profiles]
    errors = []
    lock = threading.Lock()

    def worker(t):
        try:
            rng = np.random.default_rng(t)
            barrier.wait(timeout=30)
            for r in range(rounds):
                order = range(len(profiles)) if r == 0 else rng.permutation(len(profiles))
                for k in order:
                    backend = ("numba", "numpy")[(t + r) % 2]
                    got = memo.recall(profiles[k], "deflections", x, y, backend, evaluate)
                    with lock:
                        results[k].append(_bytes(got.value(backend)))
        except Exception as err:  # reported below, not lost in the thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck in the memo"
    assert not errors, errors
    total = n_threads * rounds * len(profiles)
    stats = memo.stats()
    assert evaluate.calls == len(profiles)  # each field computed exactly once
    assert evaluate.backends == {memo.COMPUTE_BACKEND}  # whichever backend asked
    assert stats["misses"] == len(profiles)
    assert stats["hits"] + stats["misses"] == total
    assert stats["entries"] == len(profiles)
    for k, got in enumerate(results):
        assert len(got) == n_threads * rounds
        assert all(g == expected[k] for g in got)  # byte-identical to the direct numba call


# -- 2. eviction and the cap -------------------------------------------------------------------


def test_least_recently_used_field_is_evicted_under_the_cap(monkeypatch):
    x, y = _coordinates(4096)
    field_bytes = 2 * 4096 * 8  # (deflection x, y) in float64
    a, b, c = (Gaussian((0.0, 0.0), (0.1, 0.0), s, 1.0, 1.0) for s in (0.3, 0.4, 0.5))
    monkeypatch.setenv(MAX_MB, str(2.5 * field_bytes / 2**20))  # two fields fit, three do not
    cap = memo.max_bytes()
    evaluate = Counting()

    def ask(p):
        got = memo.recall(p, "deflections", x, y, "numba", evaluate, p.linear_parameter)
        np.testing.assert_array_equal(np.asarray(got.value("numba")), _deflect(p, x, y, "numba"))
        assert memo.stats()["bytes"] <= cap
        return got

    ask(a)
    ask(b)
    ask(a)  # touch A: B is now the least recently used
    assert (memo.stats()["misses"], memo.stats()["hits"]) == (2, 1)
    ask(c)  # one field too many: B goes
    stats = memo.stats()
    assert (stats["evictions"], stats["entries"], stats["bytes"]) == (1, 2, 2 * field_bytes)
    calls = evaluate.calls
    ask(a)  # A survived
    assert evaluate.calls == calls and memo.stats()["hits"] == 2
    ask(b)  # B was evicted: computed again (and C, now the oldest, goes)
    assert evaluate.calls == calls + 1
    stats = memo.stats()
    assert (stats["misses"], stats["evictions"], stats["entries"]) == (4, 2, 2)
    ask(a)
    assert memo.stats()["hits"] == 3


def test_a_field_bigger_than_the_cap_is_returned_but_not_stored(monkeypatch):
    x, y = _coordinates(4096)
    small_x, small_y = x[:512].copy(), y[:512].copy()  # a field of 8 KiB
    p = Gaussian((0.05, 0.0), (0.0, 0.2), 0.4, 1.0, 1.3)
    monkeypatch.setenv(MAX_MB, str(0.5 * 2 * 4096 * 8 / 2**20))  # half of the 64 KiB field
    evaluate = Counting()
    kept = memo.recall(p, "deflections", small_x, small_y, "numba", evaluate, "mass_to_light_ratio")
    assert kept is not None and memo.stats()["entries"] == 1
    small_bytes = memo.stats()["bytes"]
    expected = _deflect(p, x, y, "numba")
    for n in (1, 2):
        got = memo.recall(p, "deflections", x, y, "numba", evaluate, p.linear_parameter)
        assert _rel(got.value("numba"), expected) < 1e-12  # the unit field times 1.3
        stats = memo.stats()
        # not stored, and the fields that fit were not flushed to make room for it
        assert (stats["entries"], stats["bytes"], stats["evictions"]) == (1, small_bytes, 0)
        assert stats["misses"] == 1 + n
    assert evaluate.calls == 3
    memo.recall(p, "deflections", small_x, small_y, "numba", evaluate, "mass_to_light_ratio")
    assert memo.stats()["hits"] == 1 and evaluate.calls == 3


@pytest.mark.parametrize("bad", ["-1", "abc", "nan", "inf"])
def test_an_invalid_cap_raises_naming_the_variable(monkeypatch, bad):
    x, y = _coordinates(64)
    p = SIE((0.0, 0.0), (0.0, 0.0), 0.8)
    monkeypatch.setenv(MAX_MB, bad)
    with pytest.raises(ValueError, match=MAX_MB):
        memo.recall(p, "deflections", x, y, "numba", _deflect)
    # the failed store released the key: a later request computes it instead of waiting forever
    monkeypatch.delenv(MAX_MB)
    box = []
    thread = threading.Thread(
        target=lambda: box.append(memo.recall(p, "deflections", x, y, "numba", _deflect)),
        daemon=True,
    )
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "the key stayed pending after the failed store"
    np.testing.assert_array_equal(box[0].value("numba"), _deflect(p, x, y, "numba"))


# -- 3. keys -----------------------------------------------------------------------------------


def test_keys_are_exact_in_values_dtypes_and_coordinates():
    x, y = _coordinates(300)
    evaluate = Counting()

    def misses_after(profile, xs=x, ys=y):
        memo.recall(profile, "deflections", xs, ys, "numba", evaluate, profile.linear_parameter)
        return memo.stats()["misses"]

    one = SIE((0.0, 0.0), (0.1, 0.0), 1.0)
    up = SIE((0.0, 0.0), (0.1, 0.0), float(np.nextafter(1.0, 2.0)))
    assert misses_after(one) == 1
    assert misses_after(up) == 2  # the next float up is another key
    assert misses_after(SIE((0.0, 0.0), (0.1, 0.0), 1.0)) == 2  # a rebuilt profile: same key
    assert misses_after(SIE((-0.0, 0.0), (0.1, 0.0), 1.0)) == 3  # -0.0 is not 0.0

    # float32 and float64 of one number (0.5 is exact in both): two keys, equal fields
    g32 = Gaussian((0.0, 0.0), (0.1, 0.0), np.float32(0.5), 1.0, 1.0)
    g64 = Gaussian((0.0, 0.0), (0.1, 0.0), 0.5, 1.0, 1.0)
    assert isinstance(g32.sigma, np.float32)
    before = memo.stats()["misses"]
    r32 = memo.recall(g32, "deflections", x, y, "numba", evaluate, "mass_to_light_ratio")
    r64 = memo.recall(g64, "deflections", x, y, "numba", evaluate, "mass_to_light_ratio")
    assert memo.stats()["misses"] == before + 2
    np.testing.assert_allclose(r32.stored, r64.stored, rtol=1e-15, atol=0)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    assert memo.grid_fingerprint(x32, y32) != memo.grid_fingerprint(
        x32.astype(np.float64), y32.astype(np.float64)
    )

    # coordinates: an identical copy hits, a copy one ulp off at one point misses
    before = memo.stats()["misses"]
    assert misses_after(one, x.copy(), y.copy()) == before
    nudged = x.copy()
    nudged[123] = np.nextafter(nudged[123], np.inf)
    assert misses_after(one, nudged, y) == before + 1
    nudged_y = y.copy()
    nudged_y[7] = np.nextafter(nudged_y[7], -np.inf)
    assert misses_after(one, x, nudged_y) == before + 2

    # a writeable array edited in place is fingerprinted again: never a stale field
    xs = x.copy()
    memo.recall(one, "deflections", xs, y, "numba", evaluate)
    xs[0] += 0.25
    got = memo.recall(one, "deflections", xs, y, "numba", evaluate)
    assert memo.stats()["misses"] == before + 3
    np.testing.assert_array_equal(got.value("numba"), _deflect(one, xs, y, "numba"))

    # a read-only array made writeable, edited and frozen again: still never stale
    thawed = x.copy()
    thawed.setflags(write=False)
    memo.recall(one, "deflections", thawed, y, "numba", evaluate)
    thawed.setflags(write=True)
    thawed[5] += 0.5
    thawed.setflags(write=False)
    got = memo.recall(one, "deflections", thawed, y, "numba", evaluate)
    np.testing.assert_array_equal(got.value("numba"), _deflect(one, thawed, y, "numba"))
    before = memo.stats()["misses"]

    # read-only arrays: an equal read-only copy hits
    frozen_x, frozen_y = x.copy(), y.copy()
    frozen_x.setflags(write=False)
    frozen_y.setflags(write=False)
    other_x, other_y = frozen_x.copy(), frozen_y.copy()
    other_x.setflags(write=False)
    other_y.setflags(write=False)
    before = memo.stats()["misses"]
    assert misses_after(one, frozen_x, frozen_y) == before
    assert misses_after(one, other_x, other_y) == before

    # a value-identity grid: rebuilt equal grids share a fingerprint, a nudged one does not
    layout = Grid2D.uniform(6, 0.1, 2).layout()
    assert memo.grid_fingerprint(grid=layout) == memo.grid_fingerprint(
        grid=Grid2D.uniform(6, 0.1, 2).layout()
    )
    nudged_grid = Grid2D.uniform(6, float(np.nextafter(0.1, 1.0)), 2).layout()
    assert memo.grid_fingerprint(grid=layout) != memo.grid_fingerprint(grid=nudged_grid)
    assert memo.grid_fingerprint(grid=layout) != memo.grid_fingerprint(
        grid=Grid2D.uniform(6, 0.1, 3).layout()
    )


# -- 4. one entry for every backend ------------------------------------------------------------


def test_numpy_numba_and_jax_read_one_stored_field():
    x, y = _coordinates(500, seed=1)
    p = SIE((0.02, 0.01), (0.15, -0.1), 0.75)
    evaluate = Counting()
    values = {}
    for n, backend in enumerate(("numba", "numpy", "jax")):
        got = memo.recall(p, "deflections", x, y, backend, evaluate)
        assert got.level == 1 and not got.stored.flags.writeable
        values[backend] = _bytes(got.value(backend))
        stats = memo.stats()
        assert (stats["misses"], stats["hits"], stats["entries"]) == (1, n, 1)
    assert evaluate.calls == 1 and evaluate.backends == {"numba"}
    assert values["numba"] == values["numpy"] == values["jax"]
    assert values["numba"] == _bytes(_deflect(p, x, y, "numba"))
    # and the shared field is the profile's deflection on every backend, to rounding
    for got, ref in zip(values["jax"], _deflect(p, x, y, "numpy"), strict=True):
        assert _rel(np.frombuffer(got), ref) < 1e-12


# -- 5. linearity (level 2) --------------------------------------------------------------------


def test_one_unit_mge_field_serves_every_mass_to_light_ratio():
    x, y = _coordinates(400, seed=2)
    light = MGELight(
        np.geomspace(0.05, 0.8, 4), np.geomspace(2.0, 0.2, 4), (0.01, -0.02), (0.1, 0.05)
    )
    evaluate = Counting()
    for n, ratio in enumerate((2.7, 0.3)):
        mass = light.to_mass(ratio)
        assert type(mass).linear_parameter == "mass_to_light_ratio"
        got = memo.recall(mass, "deflections", x, y, "numba", evaluate, "mass_to_light_ratio")
        assert got.level == 2 and got.factor == ratio
        direct = mass._deflections(x, y, "numba")
        for part, ref in zip(got.value("numba"), direct, strict=True):
            assert _rel(part, ref) < 1e-12
        assert (memo.stats()["misses"], memo.stats()["hits"]) == (1, n)
    assert evaluate.calls == 1


def test_one_unit_sersic_image_serves_every_intensity():
    x, y = _coordinates(400, seed=3)
    evaluate = Counting(_shine)
    for n, intensity in enumerate((2.7, 0.3, -1.5)):
        p = Sersic((0.02, -0.01), (0.12, 0.04), 0.4, 2.5, intensity)
        got = memo.recall(p, "image", x, y, "numba", evaluate, p.linear_parameter)
        assert got.level == 2
        assert _rel(got.value("numba"), p._image(x, y, "numba")) < 1e-12
        assert (memo.stats()["misses"], memo.stats()["hits"]) == (1, n)
    assert evaluate.calls == 1


# -- 6. switches -------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["0", "off", " False "])
def test_the_kill_switch_turns_the_memo_off(monkeypatch, word):
    x, y = _coordinates(100)
    p = SIE((0.0, 0.0), (0.05, 0.0), 0.6)
    evaluate = Counting()
    assert memo.recall(p, "deflections", x, y, "numba", evaluate) is not None  # stored
    before = memo.stats()
    monkeypatch.setenv(SWITCH, word)
    assert not memo.enabled()
    for backend in ("numba", "numpy", "jax"):
        assert memo.recall(p, "deflections", x, y, backend, evaluate) is None
        assert memo.recall(p, "image", x, y, backend, evaluate, eager=False) is None
    assert memo.stats() == before and evaluate.calls == 1
    monkeypatch.setenv(SWITCH, "1")
    assert memo.enabled()
    assert memo.recall(p, "deflections", x, y, "numba", evaluate) is not None
    assert memo.stats()["hits"] == before["hits"] + 1


def test_disabled_blocks_nest_and_survive_exceptions():
    x, y = _coordinates(100)
    p = SIE((0.0, 0.0), (0.05, 0.0), 0.6)
    evaluate = Counting()
    assert memo.enabled()
    with memo.disabled():
        assert not memo.enabled()
        with memo.disabled():
            assert not memo.enabled()
            assert memo.recall(p, "deflections", x, y, "numba", evaluate) is None
        assert not memo.enabled()  # the outer block is still open
        assert memo.recall(p, "deflections", x, y, "numba", evaluate) is None
        seen = []
        other = threading.Thread(target=lambda: seen.append(memo.enabled()))
        other.start()
        other.join()
        assert seen == [True]  # per thread
    assert memo.enabled()
    with pytest.raises(RuntimeError, match="boom"):
        with memo.disabled():
            with memo.disabled():
                raise RuntimeError("boom")
    assert memo.enabled()
    with pytest.raises(KeyError):
        with memo.disabled():
            try:
                with memo.disabled():
                    raise KeyError("inner")
            finally:
                assert not memo.enabled()
    assert memo.enabled()
    assert evaluate.calls == 0 and memo.stats()["misses"] == 0
    assert memo.recall(p, "deflections", x, y, "numba", evaluate) is not None


# -- 7. deferral -------------------------------------------------------------------------------


def test_a_deferred_key_is_stored_at_its_second_request():
    x, y = _coordinates(200)
    p = SIE((0.0, 0.0), (0.05, 0.02), 0.65)
    evaluate = Counting()
    assert memo.recall(p, "deflections", x, y, "numba", evaluate, eager=False) is None
    assert memo.stats()["deferred"] == 1 and evaluate.calls == 0
    assert memo.stats()["misses"] == 0 and memo.stats()["entries"] == 0
    second = memo.recall(p, "deflections", x, y, "numba", evaluate, eager=False)
    assert evaluate.calls == 1
    assert (memo.stats()["misses"], memo.stats()["hits"], memo.stats()["deferred"]) == (1, 0, 1)
    third = memo.recall(p, "deflections", x, y, "numba", evaluate, eager=False)
    assert evaluate.calls == 1
    assert (memo.stats()["misses"], memo.stats()["hits"], memo.stats()["deferred"]) == (1, 1, 1)
    expected = _bytes(_deflect(p, x, y, "numba"))
    assert _bytes(second.value("numba")) == _bytes(third.value("numba")) == expected
    # under JAX nothing can be computed later: the first request is served
    q = SIE((0.0, 0.0), (0.05, 0.02), 0.66)
    assert memo.recall(q, "deflections", x, y, "jax", evaluate, eager=False) is not None
    assert memo.stats()["deferred"] == 1 and evaluate.calls == 2


# -- 8 and 9. the likelihood -------------------------------------------------------------------

FREE = (
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[1].mass_to_light_ratio",
    "sources[0].light[0].effective_radius",
)
CENTRES = (
    "lenses[0].mass[1].centre[0]",
    "lenses[0].mass[1].centre[1]",
    "lenses[0].light[0].centre[0]",
    "lenses[0].light[0].centre[1]",
)


@functools.cache
def _likelihoods():
    grid = Grid2D.uniform(20, 0.1, 2)
    psf = PSF.gaussian(0.15, 0.1, 5)
    light = MGELight(
        np.geomspace(0.04, 0.9, 6), np.geomspace(3.0, 0.05, 6), (0.01, -0.02), (0.06, 0.03)
    )
    lens = Galaxy((SIE((0.0, 0.0), (0.1, -0.05), 0.6), light.to_mass(0.4)), light)
    source = Sersic((0.03, 0.02), (0.1, 0.0), 0.2, 1.5, 2.0)
    dataset = simulate(Tracer(lens, Galaxy(light=source)), grid, psf, noise_sigma=0.05, seed=4)
    model = Tracer(lens, Galaxy(light=LinearSersic((0.03, 0.02), (0.1, 0.0), 0.2, 1.5)))
    return ImagingLikelihood(dataset, model, FREE), ImagingLikelihood(
        dataset, model, FREE + CENTRES
    )


def _vectors(like, n, seed):
    rng = np.random.default_rng(seed)
    scale = np.array([0.01, 0.03, 0.01])
    return like.reference + rng.normal(size=(n, 3)) * scale


def _n_eqns(jaxpr):
    """Equations of ``jaxpr``, those of its sub-programs (loops, branches, calls) included."""
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    n += _n_eqns(inner)
    return n


def test_fixed_fields_fold_into_the_jax_program():
    from twinlens.likelihood.batched import _jax_batch

    like, control = _likelihoods()
    _jax_batch().clear_cache()  # trace afresh whatever ran before
    vectors = _vectors(like, 4, seed=5)

    # (a) the fixed MGE deflections (times the traced ratio) and the lens light fold
    memo.clear()
    folded = like.batch(vectors, "jax")
    stats = memo.stats()
    assert stats["jax_folds"] >= 2
    assert stats["misses"] == 2  # computed once each, at trace time

    # (b) the same numbers as without the memo, and as numba
    with memo.disabled():
        plain = like.batch(vectors, "jax")
        numba = like.batch(vectors, "numba")
    assert np.all(np.isfinite(plain)) and np.ptp(plain) > 0
    np.testing.assert_allclose(folded, plain, rtol=1e-10, atol=0)
    np.testing.assert_allclose(folded, numba, rtol=1e-9, atol=0)
    # new ratios through the compiled program: its constant is the unit field, not a value
    again = _vectors(like, 4, seed=6)
    folds = memo.stats()["jax_folds"]
    with memo.disabled():
        reference = like.batch(again, "numba")
    np.testing.assert_allclose(like.batch(again, "jax"), reference, rtol=1e-9, atol=0)
    assert memo.stats()["jax_folds"] == folds  # no new trace

    # (c) the folded math has left the program
    on = _n_eqns(jax.make_jaxpr(like.jax_log_likelihood)(like.reference).jaxpr)
    with memo.disabled():
        off = _n_eqns(jax.make_jaxpr(like.jax_log_likelihood)(like.reference).jaxpr)
    assert on < 0.8 * off, (on, off)

    # (d) control: free centres are traced, so nothing folds, and the numbers do not move
    memo.clear()
    centres = [float(np.asarray(control.reference)[len(FREE) + j]) for j in range(len(CENTRES))]
    full = np.concatenate([vectors, np.tile(centres, (len(vectors), 1))], axis=1)
    got = control.batch(full, "jax")
    stats = memo.stats()
    assert stats["jax_folds"] == 0 and stats["misses"] == 0
    np.testing.assert_allclose(got, plain, rtol=1e-10, atol=0)
    # and where the centres move, the direct call follows them
    full[:2, len(FREE) :] += 0.01
    moved = control.batch(full, "jax")
    with memo.disabled():
        reference = control.batch(full, "numba")
    np.testing.assert_allclose(moved, reference, rtol=1e-9, atol=0)
    assert np.all(moved[:2] != got[:2])
    assert memo.stats()["jax_folds"] == 0


def test_numba_likelihood_reads_the_stored_fields_across_batches():
    like, _ = _likelihoods()
    first, second = _vectors(like, 4, seed=7), _vectors(like, 4, seed=8)
    with memo.disabled():
        plain_first = like.batch(first, "numba")
        plain_second = like.batch(second, "numba")
        plain_one = like(second[1], "numba")
    assert memo.stats()["misses"] == 0

    got_first = like.batch(first, "numba")
    stats = memo.stats()
    assert stats["misses"] == 2  # the unit MGE deflections and the lens light
    np.testing.assert_allclose(got_first, plain_first, rtol=1e-12, atol=0)

    got_second = like.batch(second, "numba")  # new Batched ratios, the same stored fields
    after = memo.stats()
    assert after["misses"] == stats["misses"]
    assert after["hits"] >= stats["hits"] + 2
    np.testing.assert_allclose(got_second, plain_second, rtol=1e-12, atol=0)
    assert np.ptp(got_second) > 0

    got_one = like(second[1], "numba")  # one vector: a batch of one, the same fields again
    assert memo.stats()["misses"] == stats["misses"]
    assert memo.stats()["hits"] > after["hits"]
    assert got_one == pytest.approx(plain_one, rel=1e-12, abs=0)


def test_a_concrete_tracer_stores_only_the_fields_asked_for_twice():
    # every value concrete: the tracer cannot tell fixed from free, so a field is stored at its
    # second request, and one whose parameter changes at every evaluation is never stored
    from twinlens.likelihood.imaging import FitImaging

    like, _ = _likelihoods()
    vectors = _vectors(like, 3, seed=9)
    with memo.disabled():
        plain = [
            FitImaging(like.dataset, like.instance(v), "numba").log_likelihood for v in vectors
        ]
    memo.clear()  # building the likelihoods (cached, so only when this test runs first) asks too
    counts = []
    for v, expected in zip(vectors, plain, strict=True):
        got = FitImaging(like.dataset, like.instance(v), "numba").log_likelihood
        assert got == pytest.approx(expected, rel=1e-12, abs=0)
        stats = memo.stats()
        counts.append((stats["deferred"], stats["misses"], stats["hits"], stats["entries"]))
    # SIE, MGE mass and lens light deferred; then the MGE (new ratio, same unit field) and the
    # lens light stored while the new SIE is deferred; then both read back
    assert counts == [(3, 0, 0, 0), (4, 2, 0, 2), (5, 2, 2, 2)]

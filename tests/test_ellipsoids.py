"""The compiled minimum-volume ellipsoid against nautilus's own, and its place in a run."""

from __future__ import annotations

import numpy as np
import pytest

nautilus = pytest.importorskip("nautilus")

from nautilus.bounds import basic  # noqa: E402

from twinlens.search import ellipsoids  # noqa: E402
from twinlens.search.ellipsoids import compiled_ellipsoids, enclosing_ellipsoid  # noqa: E402


def _cloud(seed: int, n: int, d: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d)


@pytest.mark.parametrize(("n", "d"), [(150, 13), (40, 3), (600, 5), (12, 2), (8, 6)])
def test_the_same_ellipsoid_as_nautilus_own(n, d):
    x = _cloud(n + d, n, d)
    c0, a0, ai0 = basic.minimum_volume_enclosing_ellipsoid(x)
    c, a, ai = enclosing_ellipsoid(x)
    scale = np.max(np.abs(x))
    assert np.max(np.abs(c - c0)) <= 1e-11 * scale
    assert np.max(np.abs(a - a0)) <= 1e-10 * np.max(np.abs(a0))
    assert np.max(np.abs(ai - ai0)) <= 1e-10 * np.max(np.abs(ai0))
    # every point inside, the farthest on the surface (an independent property of the result)
    r2 = np.einsum("...i,ij,...j", x - c, a, x - c)
    assert np.max(r2) == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(a @ ai, np.eye(d), atol=1e-9)


def test_a_flat_cloud_falls_back_to_nautilus_own(monkeypatch):
    # points on a plane: the moment matrix is singular from the start, and nautilus's own
    # function (which then runs) says so as it always has
    x = _cloud(3, 50, 3)
    x[:, 2] = 0.5
    _, ok = ellipsoids._compiled()(np.ascontiguousarray(x), 100, 20)
    assert not ok
    with np.errstate(all="ignore"):
        with pytest.raises(np.linalg.LinAlgError):
            basic.minimum_volume_enclosing_ellipsoid(x)
        with pytest.raises(np.linalg.LinAlgError):
            enclosing_ellipsoid(x)
    seen = []
    monkeypatch.setattr(ellipsoids, "_nautilus_own", lambda: lambda p, **kw: seen.append(kw))
    enclosing_ellipsoid(x)
    assert seen == [{"n_max": 100, "n_batch": 20}]


def test_installed_only_inside_the_block_and_only_for_checked_versions(monkeypatch):
    own = basic.minimum_volume_enclosing_ellipsoid
    with compiled_ellipsoids(nautilus) as on:
        assert on and basic.minimum_volume_enclosing_ellipsoid is enclosing_ellipsoid
        with compiled_ellipsoids(nautilus) as inner:  # nested: the outer block restores
            assert not inner
        assert basic.minimum_volume_enclosing_ellipsoid is enclosing_ellipsoid
    assert basic.minimum_volume_enclosing_ellipsoid is own
    with pytest.raises(RuntimeError), compiled_ellipsoids(nautilus):
        raise RuntimeError("a failed run")
    assert basic.minimum_volume_enclosing_ellipsoid is own
    monkeypatch.setattr(nautilus, "__version__", "9.1.0")
    with compiled_ellipsoids(nautilus) as on:
        assert not on and basic.minimum_volume_enclosing_ellipsoid is own
    monkeypatch.undo()
    monkeypatch.setenv("TWINLENS_NAUTILUS_ELLIPSOIDS", "nautilus")
    with compiled_ellipsoids(nautilus) as on:
        assert not on and basic.minimum_volume_enclosing_ellipsoid is own
    monkeypatch.setenv("TWINLENS_NAUTILUS_ELLIPSOIDS", "fast")
    with pytest.raises(ValueError, match="TWINLENS_NAUTILUS_ELLIPSOIDS"):
        with compiled_ellipsoids(nautilus):
            pass


def test_a_nautilus_search_uses_it(monkeypatch):
    from twinlens.search import Nautilus

    calls = []
    real = ellipsoids.enclosing_ellipsoid

    def counted(points, *args, **kwargs):
        calls.append(points.shape)
        return real(points, *args, **kwargs)

    monkeypatch.setattr(ellipsoids, "enclosing_ellipsoid", counted)

    class Gaussian:  # a 3-parameter objective: a unit Gaussian in a box of width 20
        paths = ("a", "b", "c")
        n_params = 3
        backend = "numpy"
        start = np.zeros(3)

        def from_unit(self, u):
            return 20.0 * np.asarray(u) - 10.0

        def log_likelihood(self, x):
            return -0.5 * np.sum(np.atleast_2d(x) ** 2, axis=-1)

    result = Nautilus(n_live=200, n_eff=300, seed=2, n_networks=1).run(Gaussian())
    assert calls, "the search never fitted an ellipsoid with the compiled function"
    assert basic.minimum_volume_enclosing_ellipsoid is not counted
    # the evidence of a unit Gaussian in a box of 20^3: log Z = log((2 pi)^1.5 / 8000)
    assert result.log_evidence == pytest.approx(1.5 * np.log(2 * np.pi) - np.log(8000), abs=0.15)
    assert np.allclose(np.std(result.samples, axis=0), 1.0, atol=0.15)

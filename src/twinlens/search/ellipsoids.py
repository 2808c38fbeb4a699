"""nautilus's minimum-volume enclosing ellipsoid, compiled.

Each new nautilus bound fits ellipsoids to the live points (its union of ellipsoids, and the
neural bound's outer ellipsoid) with a modified Khachiyan algorithm:
``nautilus.bounds.basic.minimum_volume_enclosing_ellipsoid``. Its iteration runs in Python,
a Cholesky inverse of a small matrix per step, up to ``n_max x n_batch`` steps per ellipsoid,
and on a fast likelihood that is a large share of a whole fit (``docs/benchmarks.rst``, "Time to a
posterior").

:func:`enclosing_ellipsoid` takes the same steps compiled by numba: from the same start, the
same points chosen in the same order, the same updates of the weights; the sums are taken in
another order, so the weights agree to rounding, not bit for bit (``tests/test_ellipsoids.py``
holds them to nautilus's own). :func:`compiled_ellipsoids` puts it in nautilus's place for the
length of a twinlens nautilus run, for the nautilus versions it was checked against, and puts
nautilus's own back after. ``TWINLENS_NAUTILUS_ELLIPSOIDS=nautilus`` keeps nautilus's own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np

from twinlens.environment import env_choice

__all__ = ["SUPPORTED_NAUTILUS", "compiled_ellipsoids", "enclosing_ellipsoid"]

#: nautilus's major.minor versions whose ellipsoid function this module was checked against
SUPPORTED_NAUTILUS = ("1.0",)

prange = range  # numba's in the compiled copies (see kernels.compile.numba_copy_source)


def _spd_inverse(m: np.ndarray, out: np.ndarray) -> bool:
    """``out = m^-1`` for a symmetric positive-definite ``m`` (by its Cholesky factor, as
    nautilus does); False, ``out`` undefined, when ``m`` is not positive definite."""
    n = m.shape[0]
    low = np.zeros((n, n))
    for j in range(n):
        s = m[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        if not s > 0.0:
            return False
        low[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = m[i, j]
            for k in range(j):
                t -= low[i, k] * low[j, k]
            low[i, j] = t / low[j, j]
    inv = np.zeros((n, n))  # inverse of the factor, lower triangular
    for i in range(n):
        inv[i, i] = 1.0 / low[i, i]
        for j in range(i):
            t = 0.0
            for k in range(j, i):
                t -= low[i, k] * inv[k, j]
            inv[i, j] = t / low[i, i]
    for i in range(n):
        for j in range(i + 1):
            t = 0.0
            for k in range(i, n):
                t += inv[k, i] * inv[k, j]
            out[i, j] = t
            out[j, i] = t
    return True


def _quadratic(q: np.ndarray, j: int, v_inv: np.ndarray) -> float:
    """``q[j]^T v_inv q[j]``."""
    n = q.shape[1]
    t = 0.0
    for a in range(n):
        row = 0.0
        for b in range(n):
            row += v_inv[a, b] * q[j, b]
        t += q[j, a] * row
    return t


def _khachiyan_weights(points: np.ndarray, n_max: int, n_batch: int) -> tuple[np.ndarray, bool]:
    """nautilus's iteration (see the module): the points' weights ``u``, and False when a
    matrix stopped being positive definite (the caller then runs nautilus's own)."""
    n_points, n_dim = points.shape
    d = n_dim + 1
    q = np.ones((n_points, d))
    q[:, :n_dim] = points
    u = np.full(n_points, 1.0 / n_points)
    v = np.zeros((d, d))
    for i in range(n_points):
        for a in range(d):
            for b in range(d):
                v[a, b] += q[i, a] * u[i] * q[i, b]
    v_inv = np.zeros((d, d))
    if not _spd_inverse(v, v_inv):
        return u, False
    g = np.zeros(n_points)
    for _ in range(n_max):
        for i in range(n_points):
            g[i] = _quadratic(q, i, v_inv)
        order = np.argsort(g)[-n_batch:][::-1]
        for rank in range(order.size):
            j = order[rank]
            # the first candidate's value is current; later ones see the updated matrix
            gj = g[j] if rank == 0 else _quadratic(q, j, v_inv)
            if gj < d:
                continue
            a = (gj - d) / (d * (gj - 1.0))
            for r in range(d):
                for c in range(d):
                    v[r, c] = v[r, c] * (1.0 - a) + a * (q[j, r] * q[j, c])
            if not _spd_inverse(v, v_inv):
                return u, False
            for i in range(n_points):
                u[i] = u[i] * (1.0 - a)
            u[j] += a
    return u, True


@cache
def _compiled() -> Any:
    from twinlens.kernels.compile import numba_copy

    module = numba_copy(
        sys.modules[__name__],
        ("_spd_inverse", "_quadratic", "_khachiyan_weights"),
        "search_ellipsoids",
    )
    return module._khachiyan_weights


def enclosing_ellipsoid(
    points: np.ndarray, n_max: int = 100, n_batch: int = 20
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(c, A, A_inv)`` of nautilus's ``minimum_volume_enclosing_ellipsoid(points, n_max,
    n_batch)``: every point ``x`` satisfies ``(x - c)^T A (x - c) <= 1``, the largest with
    equality."""
    points = np.ascontiguousarray(points, dtype=float)
    u, ok = _compiled()(points, int(n_max), int(n_batch))
    if not ok:
        return _nautilus_own()(points, n_max=n_max, n_batch=n_batch)
    # nautilus's own closing steps, unchanged
    c = np.atleast_1d(np.average(points, weights=u, axis=0))
    a_inv = np.atleast_2d(np.cov(points, aweights=u, rowvar=False, bias=True))
    a = np.linalg.inv(a_inv)
    scale = np.amax(np.einsum("...i,ij,...j", points - c, a, points - c))
    return c, a / scale, a_inv * scale


@cache
def _nautilus_own() -> Any:
    from nautilus.bounds import basic

    return basic.minimum_volume_enclosing_ellipsoid


def _supported(nautilus: Any) -> bool:
    version = str(getattr(nautilus, "__version__", ""))
    return ".".join(version.split(".")[:2]) in SUPPORTED_NAUTILUS


@contextmanager
def compiled_ellipsoids(nautilus: Any) -> Iterator[bool]:
    """Within the block, nautilus fits its ellipsoids with :func:`enclosing_ellipsoid`
    (yields True), unless its version is not one of :data:`SUPPORTED_NAUTILUS` or
    ``TWINLENS_NAUTILUS_ELLIPSOIDS=nautilus`` (yields False); nautilus's own function is back
    after the block."""
    choice = env_choice("TWINLENS_NAUTILUS_ELLIPSOIDS", ("compiled", "nautilus"), "compiled")
    from nautilus.bounds import basic

    own = _nautilus_own()
    if (
        choice == "nautilus"
        or not _supported(nautilus)
        or basic.__dict__.get("minimum_volume_enclosing_ellipsoid") is not own
    ):
        yield False
        return
    basic.minimum_volume_enclosing_ellipsoid = enclosing_ellipsoid
    try:
        yield True
    finally:
        basic.minimum_volume_enclosing_ellipsoid = own

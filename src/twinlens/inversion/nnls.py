"""Non-negative least squares on the normal equations, batched, on every backend.

The likelihood solves ``min ||C^T a - r||^2`` subject to ``a >= 0`` for the intensities ``a``
of the linear light profiles, given their (noise-weighted, blurred) images ``C (k, n)``. With
``G = C C^T`` and ``g = C r`` this is the Lawson-Hanson active-set method on ``(G, g)``: ``k``
is small (one per linear profile, or a Gaussian basis' size), so each step is a ``k x k``
solve, independent of the number of pixels.

Each step solves the full ``k x k`` system with the inactive rows and columns replaced by the
identity (so inactive intensities come out exactly 0): the same arithmetic on both backends,
and a fixed shape for JAX. numba runs a plain loop per problem and parallelises over the
batch; JAX runs the same steps in ``lax.while_loop`` (which vmap batches). The two are written
separately because one needs data-dependent Python loops and the other traced control flow.

Each loop allows ``3 k + 1`` steps (:data:`MAX_ITER_PER_UNKNOWN`); a problem that runs out is
reported by a ``RuntimeWarning``, since its answer is approximate. A compiled JAX program cannot
warn, so the JAX solver counts such problems into :func:`count_unconverged`'s list while it is
traced; the likelihoods' programs return that count beside ``log L`` and warn after the call
(:func:`warn_unconverged`). A program of one's own around
:meth:`~twinlens.search.Objective.jax_log_likelihood` returns the last iterate silently unless
it does the same.

The minimum chi-squared does not depend on how ``a`` was found (its derivative with respect to
``a`` vanishes at the optimum, or ``a`` sits on a bound), so JAX treats ``a`` as a constant when
differentiating the likelihood: the gradient with respect to non-linear parameters is exact.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np

from twinlens.user_warnings import warn_user

__all__ = ["count_unconverged", "counting", "nnls_gram", "note_unconverged", "warn_unconverged"]

#: Active-set steps allowed per unknown (outer and inner loops each): Lawson-Hanson needs at most
#: a few passes per unknown in practice. A problem that runs out is reported (numpy, numba).
MAX_ITER_PER_UNKNOWN = 3
TOLERANCE = 1e-12  # relative to the largest diagonal entry of G times the largest |a|

prange = range  # numba's prange in the compiled copy, whose template imports it


def nnls_gram(gram: Any, rhs: Any, backend: str) -> Any:
    """Non-negative ``a`` minimising ``a^T G a - 2 a^T g``, for ``G (..., k, k)`` symmetric
    positive semi-definite and ``g (..., k)``; leading axes are a batch."""
    if backend == "jax":
        from twinlens.backend import jax_runtime

        jax = jax_runtime.load()
        solve = jax.numpy.vectorize(_jax_solver(), signature="(k,k),(k)->(k),()")
        # the answer is a constant under differentiation: stopping the inputs keeps the
        # iteration out of the derivative's trace altogether
        stop = jax.lax.stop_gradient
        x, converged = solve(stop(gram), stop(rhs))
        if _counters.stack:
            _counters.stack[-1].append(jax.numpy.sum(~converged))
        return stop(x)
    gram = np.ascontiguousarray(gram, dtype=float)
    rhs = np.ascontiguousarray(rhs, dtype=float)
    lead = rhs.shape[:-1]
    k = rhs.shape[-1]
    g2 = gram.reshape(-1, k, k)
    r2 = rhs.reshape(-1, k)
    limit = _step_limit(k)
    if backend == "numba":
        # one problem is microseconds of work: a parallel launch would cost more than it
        one, batch = _numba_solvers()
        if r2.shape[0] == 1:
            x, ok = one(g2[0], r2[0], limit)
            out, converged = x[None, :], np.array([ok])
        else:
            out, converged = batch(g2, r2, limit)
    else:
        solved = [_solve_one(g2[i], r2[i], limit) for i in range(r2.shape[0])]
        out = np.stack([x for x, _ in solved])
        converged = np.array([ok for _, ok in solved])
    if not converged.all():
        warn_unconverged(int((~converged).sum()), f"{converged.size} problems ({k} unknowns)")
    return out.reshape(*lead, k)


class _Counters(threading.local):
    """The collectors open in this thread (each thread traces its own programs)."""

    def __init__(self) -> None:
        self.stack: list[list] = []


_counters = _Counters()


@contextmanager
def count_unconverged() -> Iterator[list]:
    """Within the block, each JAX solve appends its traced count of problems that ran out of
    steps to the yielded list (sum them into the program's output to warn after the call)."""
    counts: list = []
    _counters.stack.append(counts)
    try:
        yield counts
    finally:
        _counters.stack.pop()


def counting(function: Any) -> Any:
    """``function`` returning ``(out, n)``: its output and how many of the JAX solves traced
    inside it ran out of steps. A ``jax.jit`` program is a boundary no collector outside it may
    reach into (a traced count would leak out of its trace), so a program that solves returns
    its count, and its caller passes the count on with :func:`note_unconverged`."""

    def counted(*args: Any) -> tuple[Any, Any]:
        with count_unconverged() as counts:
            out = function(*args)
        return out, sum(counts) if counts else 0

    return counted


def note_unconverged(count: Any, of: str = "the problems solved") -> None:
    """A count from a :func:`counting` program: into the enclosing collector while a program
    is traced, else (a concrete count at the top level) a warning when it is not zero. A
    count traced with no collector (a transformation of one's own, such as ``jax.grad``) is
    dropped: it has no value to report yet."""
    from twinlens.backend.concrete import is_concrete

    if _counters.stack:
        _counters.stack[-1].append(count)
    elif is_concrete(count) and int(np.sum(np.asarray(count))) > 0:
        warn_unconverged(int(np.sum(np.asarray(count))), of)


def warn_unconverged(n_unconverged: int, of: str) -> None:
    """The one warning for solves that ran out of steps: ``n_unconverged`` of ``of`` (text:
    what was solved)."""
    warn_user(
        f"non-negative least squares: {n_unconverged} of {of} did not converge in the "
        f"active-set steps allowed ({MAX_ITER_PER_UNKNOWN} k + 1 for k unknowns); their "
        "intensities, and the likelihood from them, are approximate (twinlens.inversion.nnls)",
        RuntimeWarning,
    )


def _step_limit(k: int) -> int:
    """Steps each loop of the solver may take for ``k`` unknowns (read at call time)."""
    return MAX_ITER_PER_UNKNOWN * k + 1


def _masked_system(gram, rhs, passive, xp):
    keep = passive[:, None] & passive[None, :]
    eye = xp.eye(gram.shape[0], dtype=gram.dtype)
    return xp.where(keep, gram, eye), xp.where(passive, rhs, 0.0)


def _solve_one(gram: np.ndarray, rhs: np.ndarray, limit: int) -> tuple[np.ndarray, bool]:
    """One problem, in plain loops (numpy; compiled as is by numba): ``(a, converged)``, where
    ``converged`` is False when a loop ran out of its ``limit`` steps first."""
    k = rhs.shape[0]
    x = np.zeros(k)
    passive = np.zeros(k, dtype=np.bool_)
    scale = max(np.max(np.abs(np.diag(gram))), 1e-300)
    tol = TOLERANCE * scale * max(1.0, np.max(np.abs(rhs)) / scale)
    optimal = False  # no inactive unknown can lower the objective: the KKT conditions hold
    settled = True  # every inner loop reached the passive set's own minimum
    for _ in range(limit):
        w = rhs - gram @ x
        best = -1
        for j in range(k):
            if not passive[j] and w[j] > tol and (best < 0 or w[j] > w[best]):
                best = j
        if best < 0:
            optimal = True
            break
        passive[best] = True
        feasible = False
        for _inner in range(limit):
            z = _passive_solve(gram, rhs, passive)
            bad = passive & (z <= 0.0)
            if not bad.any():
                x = z
                feasible = True
                break
            alpha = 1.0
            for j in range(k):
                if bad[j]:
                    alpha = min(alpha, x[j] / (x[j] - z[j]))
            x = x + alpha * (z - x)
            for j in range(k):
                if passive[j] and x[j] <= 0.0:
                    passive[j] = False
                    x[j] = 0.0
        settled = settled and feasible
    return x, optimal and settled


def _passive_solve(gram: np.ndarray, rhs: np.ndarray, passive: np.ndarray) -> np.ndarray:
    """``z`` solving the passive unknowns' equations ``G_pp z_p = g_p``, 0 elsewhere (numpy;
    numba compiles :func:`_passive_solve_loops` in its place)."""
    keep = passive.reshape(-1, 1) & passive.reshape(1, -1)
    sub = np.where(keep, gram, np.eye(rhs.shape[0]))
    return np.linalg.solve(sub, np.where(passive, rhs, 0.0))


def _passive_solve_loops(gram, rhs, passive):
    """:func:`_passive_solve` by Gaussian elimination with partial pivoting in plain loops, as
    LAPACK's ``gesv`` factorises, for numba: its ``np.linalg.solve`` and the masking arrays
    took most of the solver's compiling, paid by a user's first fit."""
    k = rhs.shape[0]
    index = np.empty(k, dtype=np.int64)
    m = 0
    for j in range(k):
        if passive[j]:
            index[m] = j
            m += 1
    a = np.empty((m, m))
    b = np.empty(m)
    for r in range(m):
        b[r] = rhs[index[r]]
        for c in range(m):
            a[r, c] = gram[index[r], index[c]]
    for c in range(m):
        pivot = c
        for r in range(c + 1, m):
            if abs(a[r, c]) > abs(a[pivot, c]):
                pivot = r
        if a[pivot, c] == 0.0:
            raise np.linalg.LinAlgError("Matrix is singular to machine precision.")
        if pivot != c:
            for cc in range(m):
                a[c, cc], a[pivot, cc] = a[pivot, cc], a[c, cc]
            b[c], b[pivot] = b[pivot], b[c]
        for r in range(c + 1, m):
            f = a[r, c] / a[c, c]
            for cc in range(c + 1, m):
                a[r, cc] -= f * a[c, cc]
            b[r] -= f * b[c]
    z = np.zeros(k)
    for r in range(m - 1, -1, -1):
        total = b[r]
        for cc in range(r + 1, m):
            total -= a[r, cc] * z[index[cc]]
        z[index[r]] = total / a[r, r]
    return z


def _solve_batch(gram, rhs, limit):
    """:func:`_solve_one` for each of a batch of problems (numba: in parallel)."""
    out = np.empty_like(rhs)
    converged = np.empty(rhs.shape[0], dtype=np.bool_)
    for i in prange(rhs.shape[0]):
        x, ok = _solve_one(gram[i], rhs[i], limit)
        out[i] = x
        converged[i] = ok
    return out, converged


@cache
def _numba_solvers():
    """``(one, batch)``: compiled once, cached on disk in the kernels' cache folder, with
    :func:`_passive_solve_loops` standing for :func:`_passive_solve`."""
    import sys

    from twinlens.kernels.compile import numba_copy

    module = numba_copy(
        sys.modules[__name__],
        ("_passive_solve_loops", "_solve_one", "_solve_batch"),
        "inversion_nnls",
        aliases={"_passive_solve": "_passive_solve_loops"},
    )
    return module._solve_one, module._solve_batch


@cache
def _jax_solver():
    from twinlens.backend import jax_runtime
    from twinlens.backend.jax_batching import one_member_at_a_time

    jax = jax_runtime.load()
    jnp = jax.numpy
    lax = jax.lax

    def solve(gram, rhs):
        k = rhs.shape[0]
        scale = jnp.maximum(jnp.max(jnp.abs(jnp.diag(gram))), 1e-300)
        tol = TOLERANCE * scale * jnp.maximum(1.0, jnp.max(jnp.abs(rhs)) / scale)
        limit = _step_limit(k)

        def inner(state):
            x, passive, _, n = state
            sub, sub_rhs = _masked_system(gram, rhs, passive, jnp)
            z = jnp.linalg.solve(sub, sub_rhs)
            bad = passive & (z <= 0.0)
            done = ~jnp.any(bad)
            ratio = jnp.where(bad, x / jnp.where(bad, x - z, 1.0), 1.0)
            alpha = jnp.minimum(1.0, jnp.min(ratio))
            stepped = x + alpha * (z - x)
            drop = passive & (stepped <= 0.0)
            x_new = jnp.where(done, z, jnp.where(drop, 0.0, stepped))
            passive_new = jnp.where(done, passive, passive & ~drop)
            return x_new, passive_new, done, n + 1

        def outer(state):
            # (x, passive, optimal: the KKT conditions hold, steps, settled: every inner loop
            # reached its passive set's minimum), as the numpy solver's
            x, passive, _, n, settled = state
            w = rhs - gram @ x
            candidates = ~passive & (w > tol)
            best = jnp.argmax(jnp.where(candidates, w, -jnp.inf))
            go = jnp.any(candidates)
            passive = passive.at[best].set(passive[best] | go)
            x, passive, feasible, _ = lax.while_loop(
                lambda s: ~s[2] & (s[3] < limit), inner, (x, passive, ~go, 0)
            )
            return x, passive, ~go, n + 1, settled & feasible

        x0 = jnp.zeros_like(rhs)
        p0 = jnp.zeros(rhs.shape, dtype=bool)
        x, _, optimal, _, settled = lax.while_loop(
            lambda s: ~s[2] & (s[3] < limit), outer, (x0, p0, False, 0, True)
        )
        return x, optimal & settled

    # jnp.linalg.solve in a batch is one of jaxlib's pooled LAPACK kernels (see
    # twinlens.backend.jax_linalg): on a CPU the members are solved one after another
    return one_member_at_a_time(solve, on_gpu="vmap")

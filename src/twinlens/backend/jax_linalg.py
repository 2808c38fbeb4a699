"""Dense linear algebra for JAX programs that stays safe under ``vmap`` on a CPU.

jaxlib's CPU LAPACK kernels split a batch of problems over XLA's intra-op thread pool and then
block until every part is done, without taking a part themselves. Two such kernels running at
once (the two Cholesky factorisations of a pixelised inversion, or the triangular solves of its
gradient) can each hold a pool thread while waiting for the other's: with a pool of two threads,
as on a 2-core machine, the program never finishes. A single problem never uses the pool, so on
a CPU a batch is solved here one member at a time, in a ``lax.map`` loop; on a GPU the batched
kernels stay. The derivatives are custom VJPs whose backward passes use the same loops, because a
``custom_vmap`` function cannot be transposed.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from twinlens.backend import jax_runtime
from twinlens.backend.jax_batching import one_member_at_a_time

__all__ = ["log_det_solve_cotangents", "spd_log_det_solve"]


@cache
def _kernels() -> tuple[Any, Any]:
    jax = jax_runtime.load()
    jnp = jax.numpy
    cholesky = one_member_at_a_time(jnp.linalg.cholesky, on_gpu="vmap")
    cho_solve = one_member_at_a_time(
        lambda factor, rhs: jax.scipy.linalg.cho_solve((factor, True), rhs), on_gpu="vmap"
    )
    return cholesky, cho_solve


def _factor(a: Any) -> tuple[Any, Any, Any]:
    """The Cholesky factor of ``a``, or the identity where ``a`` is not positive definite;
    ``ln det a`` (0 where it failed) and whether it succeeded."""
    jnp = jax_runtime.load().numpy
    cholesky, _ = _kernels()
    factor = cholesky(a)
    diag = jnp.diagonal(factor)
    ok = jnp.all(jnp.isfinite(diag) & (diag > 0))
    log_det = 2.0 * jnp.sum(jnp.log(jnp.where(ok, diag, 1.0)))
    return jnp.where(ok, factor, jnp.eye(a.shape[0], dtype=a.dtype)), log_det, ok


def log_det_solve_cotangents(
    factor: Any, x: Any, g_log_det: Any, g_x: Any, cho_solve: Any, xp: Any
) -> tuple[Any, Any]:
    """The cotangents of ``(a, b)`` for ``(ln det a, x = a^-1 b)``, given ``a``'s Cholesky
    ``factor``, ``x`` and the outputs' cotangents; ``cho_solve(factor, rhs)`` solves ``a``.

    ``d ln det a = tr(a^-1 da)`` and ``dx = a^-1 (db - da x)``: with ``v = a^-1 g_x`` (``a``
    symmetric), ``b``'s cotangent is ``v`` and ``a``'s ``g_log_det a^-1 - v x^T``, symmetrised
    because ``a`` is."""
    v = cho_solve(factor, g_x)
    inverse = cho_solve(factor, xp.eye(factor.shape[0], dtype=factor.dtype))
    outer = xp.outer(v, x) if x.ndim == 1 else v @ x.T
    g_a = g_log_det * inverse - outer
    return 0.5 * (g_a + g_a.T), v


@cache
def _log_det_solve() -> Any:
    jax = jax_runtime.load()
    jnp = jax.numpy
    _, cho_solve = _kernels()

    def solve(a: Any, b: Any) -> tuple[Any, Any, Any, Any]:
        factor, log_det, ok = _factor(a)
        # zeros where a failed: nothing non-finite in the value or in the backward pass
        x = jnp.where(ok, cho_solve(factor, b), 0.0)
        return factor, log_det, x, ok

    @jax.custom_vjp
    def log_det_solve(a: Any, b: Any) -> tuple[Any, Any, Any]:
        _, log_det, x, ok = solve(a, b)
        return log_det, x, ok

    def forward(a: Any, b: Any) -> tuple[tuple[Any, Any, Any], tuple[Any, Any]]:
        factor, log_det, x, ok = solve(a, b)
        return (log_det, x, ok), (factor, x)

    def backward(saved: tuple[Any, Any], cotangents: tuple[Any, Any, Any]) -> tuple[Any, Any]:
        g_log_det, g_x, _ = cotangents
        return log_det_solve_cotangents(*saved, g_log_det, g_x, cho_solve, jnp)

    log_det_solve.defvjp(forward, backward)
    return log_det_solve


def spd_log_det_solve(a: Any, b: Any) -> tuple[Any, Any, Any]:
    """``(ln det a, a^-1 b, ok)`` for a symmetric positive definite ``a (n, n)`` and
    ``b (n,)`` or ``(n, k)`` (``k = 0`` for the determinant alone), by one Cholesky
    factorisation. Where ``a`` is not positive definite, ``ok`` is False and the other two are
    zeros, so that no NaN reaches a gradient. Differentiable in reverse mode; a ``vmap`` on a
    CPU loops over its members (see the module's documentation)."""
    return _log_det_solve()(a, b)

"""The power law's series ``F(Z) = sum_k c_k Z^k`` summed by Horner's rule, and its JAX
derivatives (:mod:`twinlens.kernels.power_law` has the series and its coefficients).

numpy and numba sum it with :func:`horner`, two interleaved chains in ``W = Z^2``. On JAX the
same chains are unrolled up to ``_UNROLL_MAX`` terms (XLA fuses the sum into one pass over the
points); a longer, traced ellipticity's series runs the shortest of a few unrolled lengths that
holds its non-zero coefficients, or a scan (:func:`horner_jax`).

**Derivatives on JAX.** Reverse mode through the unrolled chains runs each chain backwards
with every partial sum kept and, for coefficients that depend on a traced slope, one reduction
over the points per coefficient; XLA compiles that program in a time that grows faster than
the number of terms, and a traced ellipticity's program holds every branch's chains
(:ref:`jax-gradients-timedelay`). The power law's JAX kernels therefore pass the series as
:class:`SeriesOfSlope` (the coefficients as a function of the slope), whose derivative is
given in closed form::

    dF = F'(Z) dZ + dF/dslope dslope,
    F'(Z) = sum_k (k + 1) c_{k+1} Z^k,    dF/dslope = sum_k (dc_k / dslope) Z^k,

each again a series of the slope, summed forward like ``F`` (so derivatives of every order
follow the same rule). The value is that of the plain sum, to the bit.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial
from typing import Any, NamedTuple

from twinlens.backend import jax_runtime

__all__ = ["SeriesOfSlope", "horner", "horner_jax"]


def horner(zr: Any, zi: Any, coef: Any) -> tuple[Any, Any]:
    """``(Re F, Im F)`` of ``sum_k coef[k] Z^k`` at ``Z = zr + i zi``: numpy arrays, numba
    scalars, or JAX arrays (the unrolled chains)."""
    # sum c_k Z^k as E(W) + Z O(W), W = Z^2, with E and O the even and odd coefficients: two
    # independent Horner chains halve the latency of one
    n = coef.shape[0]
    wr = zr * zr - zi * zi
    wi = 2.0 * zr * zi
    k = 2 * ((n - 1) // 2)  # the highest even index
    er = coef[k] + 0.0 * zr
    ei = 0.0 * zr
    while k >= 2:
        k -= 2
        er, ei = er * wr - ei * wi + coef[k], er * wi + ei * wr
    if n == 1:
        return er, ei
    k = 2 * (n // 2) - 1  # the highest odd index
    orr = coef[k] + 0.0 * zr
    oi = 0.0 * zr
    while k >= 3:
        k -= 2
        orr, oi = orr * wr - oi * wi + coef[k], orr * wi + oi * wr
    return er + orr * zr - oi * zi, ei + orr * zi + oi * zr


# Horner steps unrolled in the traced program up to this length (XLA then fuses the whole sum
# into one pass over the points); longer sums (a traced ellipticity's) pick the shortest of a
# few unrolled lengths that holds the non-zero coefficients.
_UNROLL_MAX = 64


class SeriesOfSlope(NamedTuple):
    """The series' coefficients on JAX as ``coefficients(slope, e1, e2) -> (N,)``, for the
    JAX ``series`` op in place of the array: the ellipticity only cuts the tail (not
    differentiated), so the coefficients' derivative is that along the slope alone."""

    coefficients: Callable[[Any, Any, Any], Any]
    slope: Any
    e1: Any
    e2: Any


def horner_jax(zr: Any, zi: Any, coef: Any) -> tuple[Any, Any]:
    """The JAX ``series`` op: ``coef`` an array (differentiated through the sum), or a
    :class:`SeriesOfSlope` (differentiated by the closed form of the module notes)."""
    if isinstance(coef, SeriesOfSlope):
        return _of_slope()(coef.coefficients, zr, zi, coef.slope, coef.e1, coef.e2)
    return _sum_jax(zr, zi, coef)


def _sum_jax(zr: Any, zi: Any, coef: Any) -> tuple[Any, Any]:
    jax = jax_runtime.load()
    n = coef.shape[0]  # static
    if n <= _UNROLL_MAX:
        return horner(zr, zi, coef)
    # A traced ellipticity: the tail beyond the terms it needs is zero (the coefficients'
    # _zero_the_tail). lax.switch runs one of a few fully unrolled sums (16, 32, 64, ...
    # terms), the shortest that holds every non-zero coefficient: XLA fuses it into one pass
    # over the points, and the branches not taken cost nothing.
    # Sums longer than _UNROLL_MAX run as a scan: fully unrolled, their expression depth
    # overflowed the stack of XLA's CPU code generator (a segfault while compiling).
    lengths = [L for L in (16, 32, _UNROLL_MAX) if L < n] + [n]
    active = jax.numpy.sum(coef != 0.0)
    index = jax.numpy.sum(active > jax.numpy.asarray(lengths[:-1]))
    branches = [
        lambda zr, zi, c, L=L: (horner if L <= _UNROLL_MAX else _horner_scan)(zr, zi, c[:L])
        for L in lengths
    ]
    return jax.lax.switch(index, branches, zr, zi, coef)


def _horner_scan(zr: Any, zi: Any, coef: Any) -> tuple[Any, Any]:
    # the even/odd chains of horner, as one scan over pairs of coefficients
    jax = jax_runtime.load()
    n = coef.shape[0]
    wr = zr * zr - zi * zi
    wi = 2.0 * zr * zi
    m = n // 2
    pairs = coef[: 2 * m].reshape(m, 2)[::-1]  # rows (c_2k, c_2k+1), k descending
    zero = 0.0 * zr
    start = (coef[n - 1] + zero if n % 2 else zero, zero, zero, zero)

    def step(carry: tuple, c: Any) -> tuple[tuple, None]:
        er, ei, orr, oi = carry
        return (
            er * wr - ei * wi + c[0],
            er * wi + ei * wr,
            orr * wr - oi * wi + c[1],
            orr * wi + oi * wr,
        ), None

    (er, ei, orr, oi), _ = jax.lax.scan(step, start, pairs, unroll=4)
    return er + orr * zr - oi * zi, ei + orr * zi + oi * zr


def _z_derivative(coefficients: Callable, slope: Any, e1: Any, e2: Any) -> Any:
    """``(k + 1) c_{k+1}``, then a 0: ``F'``'s coefficients, as many as ``F``'s (the same
    static length, so the same unrolled sums)."""
    jnp = jax_runtime.load().numpy
    c = coefficients(slope, e1, e2)
    k = jnp.arange(1, c.shape[0], dtype=c.dtype)
    return jnp.concatenate([k * c[1:], jnp.zeros(1, dtype=c.dtype)])


def _slope_derivative(coefficients: Callable, slope: Any, e1: Any, e2: Any) -> Any:
    """``dc_k / dslope``."""
    jax = jax_runtime.load()
    slope = jax.numpy.asarray(slope, dtype=float)
    tangent = jax.numpy.ones_like(slope)
    return jax.jvp(lambda s: coefficients(s, e1, e2), (slope,), (tangent,))[1]


@cache
def _of_slope() -> Callable:
    jax = jax_runtime.load()

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def of_slope(coefficients: Callable, zr: Any, zi: Any, slope: Any, e1: Any, e2: Any) -> Any:
        return _sum_jax(zr, zi, coefficients(slope, e1, e2))

    @of_slope.defjvp
    def _(coefficients: Callable, primals: tuple, tangents: tuple) -> tuple:
        zr, zi, slope, e1, e2 = primals
        dzr, dzi, dslope, _, _ = tangents  # the ellipticity only cuts the tail
        value = of_slope(coefficients, zr, zi, slope, e1, e2)
        fr, fi = of_slope(partial(_z_derivative, coefficients), zr, zi, slope, e1, e2)
        gr, gi = of_slope(partial(_slope_derivative, coefficients), zr, zi, slope, e1, e2)
        return value, (fr * dzr - fi * dzi + gr * dslope, fr * dzi + fi * dzr + gi * dslope)

    return of_slope

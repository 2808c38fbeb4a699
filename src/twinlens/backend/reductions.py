"""Minimum and maximum that JAX differentiates without comparing recomputed values.

JAX's derivative of ``min``/``max`` divides by the count of elements equal to the result. XLA
may compute those elements again in another fusion, with other rounding (fused multiply-adds
or not), and then none is equal: the count is 0 and the derivative NaN (seen under the
tests' unoptimised compiles, where it turned one pixelised gradient into NaN). Reading the
value at its ``argmin``/``argmax`` sends the derivative to that one element instead (the
first of any exact ties, where ``min`` would share it between them).
"""

from __future__ import annotations

from typing import Any


def take_min(values: Any, axis: int, xp: Any) -> Any:
    """``values.min(axis)`` (numpy or jax.numpy), read at the index of the minimum."""
    return _take(values, xp.argmin(values, axis=axis), axis, xp)


def take_max(values: Any, axis: int, xp: Any) -> Any:
    """``values.max(axis)`` (numpy or jax.numpy), read at the index of the maximum."""
    return _take(values, xp.argmax(values, axis=axis), axis, xp)


def _take(values: Any, index: Any, axis: int, xp: Any) -> Any:
    picked = xp.take_along_axis(values, xp.expand_dims(index, axis), axis=axis)
    return xp.squeeze(picked, axis=axis)

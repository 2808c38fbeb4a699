"""Parameter checks for profile constructors: clear errors that name the parameter and range.

Concrete values are checked at once. A traced (free) parameter, or a batch of values, cannot
raise: its value is not known, or differs between batch members. Inside
:func:`collect_validity` such a check records its condition instead (a boolean array or
tracer), and the likelihood turns a failed condition into -inf. Each check is therefore the one
home of its range, for both the error and the in-search test.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from twinlens.backend.concrete import is_concrete, is_jax_array

_collectors: list[list] = []


@contextmanager
def collect_validity() -> Iterator[list]:
    """Within the block, checks on non-concrete values append their conditions (boolean
    arrays or tracers, True where valid) to the yielded list instead of passing silently."""
    conditions: list = []
    _collectors.append(conditions)
    try:
        yield conditions
    finally:
        _collectors.pop()


def _record(condition: Callable[[Any], Any], *values: Any) -> None:
    if _collectors and not all(is_concrete(v) for v in values):
        xp = np
        if any(is_jax_array(v) for v in values):
            from twinlens.backend import jax_runtime

            xp = jax_runtime.load().numpy
        _collectors[-1].append(condition(xp, *values))


def _name(owner: object, field: str) -> str:
    return f"{type(owner).__name__}.{field}"


def check_finite(owner: object, field: str, value: Any) -> None:
    """``value`` (scalar or array) must be finite."""
    _record(lambda xp, v: xp.isfinite(v), value)
    if is_concrete(value) and not np.all(np.isfinite(np.asarray(value, dtype=float))):
        raise ValueError(f"{_name(owner, field)} must be finite, got {value!r}")


def check_positive(owner: object, field: str, value: Any) -> None:
    """``value`` (scalar or array) must be finite and > 0."""
    check_finite(owner, field, value)
    _record(lambda xp, v: v > 0, value)
    if is_concrete(value) and not np.all(np.asarray(value, dtype=float) > 0):
        raise ValueError(f"{_name(owner, field)} must be > 0, got {value!r}")


def check_pair(owner: object, field: str, value: Any) -> None:
    """``value`` must be a pair of finite numbers."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise ValueError(f"{_name(owner, field)} must be a pair (x, y), got {value!r}")
    for v in value:
        check_finite(owner, field, v)


def check_ellipticity(owner: object, field: str, value: Any) -> None:
    """``(e1, e2)`` must satisfy ``|e| < 1`` (axis ratio ``q > 0``)."""
    check_pair(owner, field, value)
    e1, e2 = value
    _record(lambda xp, a, b: a * a + b * b < 1.0, e1, e2)
    if is_concrete(e1) and is_concrete(e2) and not math.hypot(float(e1), float(e2)) < 1.0:
        raise ValueError(
            f"{_name(owner, field)} must satisfy e1^2 + e2^2 < 1 (axis ratio q > 0), got {value!r}"
        )


def check_axis_ratio(owner: str, q: Any) -> None:
    """An axis ratio must lie in (0, 1] (checked when concrete)."""
    if is_concrete(q) and not 0.0 < float(q) <= 1.0:
        raise ValueError(f"{owner}: axis ratio q must be in (0, 1], got {q!r}")


def check_range(
    owner: object,
    field: str,
    value: Any,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """``value`` (scalar) must be finite and within ``[low, high]`` (``low_open`` /
    ``high_open`` exclude an end)."""
    check_finite(owner, field, value)

    def inside(xp: Any, v: Any) -> Any:
        above = v > low if low_open else v >= low
        below = v < high if high_open else v <= high
        return above & below

    _record(inside, value)
    if is_concrete(value) and not bool(np.all(inside(np, np.asarray(value, dtype=float)))):
        allowed = _range_text(low, high, low_open, high_open)
        raise ValueError(f"{_name(owner, field)} must be {allowed}, got {value!r}")


def _range_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if high == math.inf:
        return f"{'>' if low_open else '>='} {low:g}"
    if low == -math.inf:
        return f"{'<' if high_open else '<='} {high:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

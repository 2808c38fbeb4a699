"""Parameter checks for profile constructors: clear errors that name the parameter and range.

A numeric parameter must be a real number: a Python int or float, or a numpy or JAX value of an
integer or floating dtype. Booleans, complex values, strings, None and other objects raise a
TypeError that names the parameter and its allowed range, traced or not (a dtype is known at
trace time). A JAX tracer or a :class:`~twinlens.backend.concrete.Batched` column is a real
number whose value is not known now; anything else that is not concrete is no number at all.

The ranges, measured one parameter at a time against typical profiles on numpy and numba
(``tests/test_bad_values.py``), so that every accepted value gives finite results:

* every real parameter is finite with ``|value| <= MAX_MAGNITUDE`` (1e100): at 1e308 sums of
  squares and products with another parameter overflow;
* a positive parameter (a length, a dispersion, ``kappa_s``) lies in ``POSITIVE_RANGE``
  ``[1e-30, 1e30]``: normal floats whose squares, ratios and the Gaussians a decomposition
  places up to 1e4 times beyond them stay normal (a dispersion of 1e-200 squares to a
  subnormal, and a Gaussian of it divides by that);
* a length that may be 0 (a core or break radius) is 0 or in ``POSITIVE_RANGE``;
* ellipticities satisfy ``|e| <= ELLIPTICITY_MAX = 1 - 1e-6`` (axis ratio ``q >= 5e-7``): from
  ``|e| = 1 - 1e-8`` the potential of every Gaussian-based profile is infinite;
* an axis ratio given directly lies in ``[AXIS_RATIO_MIN, 1] = [1e-6, 1]``.

Products of extreme values of several parameters (an intensity of 1e100 times a
mass-to-light ratio of 1e100) can still overflow.

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
from twinlens.messages import shown

#: The largest magnitude of any real parameter.
MAX_MAGNITUDE = 1e100
#: The band of a positive parameter (lengths, dispersions, positive normalisations).
POSITIVE_RANGE = (1e-30, 1e30)
#: The smallest axis ratio given directly (``from_axis_ratio``, an elliptical multipole).
AXIS_RATIO_MIN = 1e-6
#: The largest ellipticity ``|e|``: axis ratio ``(1 - |e|) / (1 + |e|) >= 5e-7``, so that an
#: axis ratio of ``AXIS_RATIO_MIN`` converted to ``(e1, e2)`` is accepted despite rounding.
ELLIPTICITY_MAX = 1.0 - 1e-6

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


def _record(condition: Callable[..., Any], *values: Any) -> None:
    if _collectors and not all(is_concrete(v) for v in values):
        xp = np
        if any(is_jax_array(v) for v in values):
            from twinlens.backend import jax_runtime

            xp = jax_runtime.load().numpy
        _collectors[-1].append(condition(xp, *values))


def _name(owner: object, field: str) -> str:
    """``Class.field`` for an instance, a class or a class name."""
    if isinstance(owner, str):
        return f"{owner}.{field}"
    cls = owner if isinstance(owner, type) else type(owner)
    return f"{cls.__name__}.{field}"


def _not_real(value: Any) -> str | None:
    """Why ``value`` is no real number, or None when it is one (or a tracer of one)."""
    if isinstance(value, (bool, np.bool_)):
        return "a boolean"
    if isinstance(value, complex):  # numpy's complex128 too
        return "a complex number"
    if isinstance(value, (int, float)):
        return None
    if isinstance(value, (np.ndarray, np.generic)) or is_jax_array(value):  # tracers too
        kind = value.dtype.kind  # static, even for a tracer
        if kind in "iuf":
            return None
        what = {"b": "boolean", "c": "complex"}.get(kind, str(value.dtype))
        return f"of {what} dtype"
    return f"of type {type(value).__name__}"


def _floats(value: Any) -> np.ndarray:
    """A concrete real value as floats; an int beyond every float as infinity (numpy would
    raise OverflowError), so that it fails the range with the usual message."""
    if isinstance(value, int) and abs(value) > 2**1000:
        return np.asarray(-math.inf if value < 0 else math.inf)
    return np.asarray(value, dtype=float)


def _check(name: str, value: Any, allowed: str, inside: Callable[[Any, Any], Any]) -> None:
    """Raise unless ``value`` is a real number with ``inside(np, value)`` true everywhere;
    ``allowed`` says what is (it follows "must be"). A traced or batched value records its
    condition instead (:func:`collect_validity`)."""
    why = _not_real(value)
    if why is not None:
        raise TypeError(f"{name} must be a real number {allowed}, got {shown(value)} ({why})")
    _record(inside, value)
    if not is_concrete(value):
        return
    floats = _floats(value)
    if not bool(np.all(inside(np, floats))):
        finite = bool(np.all(np.isfinite(floats))) or allowed.startswith("finite")
        raise ValueError(
            f"{name} must be {'' if finite else 'finite, '}{allowed}, got {shown(value)}"
        )


def _between(low: float, high: float) -> Callable[[Any, Any], Any]:
    # NaN compares false, so it fails every range
    return lambda xp, v: (v >= low) & (v <= high)


def check_finite(owner: object, field: str, value: Any) -> None:
    """``value`` (scalar or array) must be finite, ``|value| <= MAX_MAGNITUDE``."""
    m = MAX_MAGNITUDE
    _check(_name(owner, field), value, f"finite, in [{-m:g}, {m:g}]", _between(-m, m))


def check_positive(
    owner: object,
    field: str,
    value: Any,
    low: float = POSITIVE_RANGE[0],
    high: float = POSITIVE_RANGE[1],
) -> None:
    """``value`` (scalar or array) must be > 0, within ``[low, high]`` (default
    ``POSITIVE_RANGE``)."""
    _check(_name(owner, field), value, f"> 0 and in [{low:g}, {high:g}]", _between(low, high))


def check_non_negative(owner: object, field: str, value: Any) -> None:
    """``value`` (a length that may vanish) must be 0 or in ``POSITIVE_RANGE``."""
    low, high = POSITIVE_RANGE
    band = _between(low, high)
    _check(
        _name(owner, field),
        value,
        f">= 0: 0 or in [{low:g}, {high:g}]",
        lambda xp, v: (v == 0) | band(xp, v),
    )


def check_pair(owner: object, field: str, value: Any) -> None:
    """``value`` must be a pair of finite numbers."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise ValueError(f"{_name(owner, field)} must be a pair (x, y), got {shown(value)}")
    for v in value:
        check_finite(owner, field, v)


def check_ellipticity(owner: object, field: str, value: Any) -> None:
    """``(e1, e2)`` must satisfy ``|e| <= ELLIPTICITY_MAX`` (axis ratio ``q > 0``, with a
    margin)."""
    check_pair(owner, field, value)
    e1, e2 = value
    e_max = ELLIPTICITY_MAX

    def inside(xp: Any, a: Any, b: Any) -> Any:
        return a * a + b * b <= e_max * e_max

    _record(inside, e1, e2)
    # the same test for a concrete value as for a collected one, so that a vector a likelihood
    # finds in range (joint.py) also builds
    if is_concrete(e1) and is_concrete(e2) and not inside(np, float(e1), float(e2)):
        q_min = (1.0 - e_max) / (1.0 + e_max)
        raise ValueError(
            f"{_name(owner, field)} must satisfy e1^2 + e2^2 < 1, precisely |e| <= 1 - 1e-6 "
            f"(axis ratio q >= {q_min:.1g}), got {shown(value)}"
        )


def check_axis_ratio(owner: object, q: Any, field: str | None = None) -> None:
    """An axis ratio (the field ``field`` of ``owner``, or an argument ``q``) must lie in
    ``[AXIS_RATIO_MIN, 1]``."""
    name = _name(owner, field) if field else f"{owner}: axis ratio q"
    low = AXIS_RATIO_MIN
    _check(name, q, f"in (0, 1], at least {low:g}", _between(low, 1.0))


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
    ``high_open`` exclude an end; an infinite end is ``MAX_MAGNITUDE``)."""
    allowed = _range_text(low, high, low_open, high_open)
    if low == -math.inf:
        low, low_open = -MAX_MAGNITUDE, False
    if high == math.inf:
        high, high_open = MAX_MAGNITUDE, False

    def inside(xp: Any, v: Any) -> Any:
        above = v > low if low_open else v >= low
        below = v < high if high_open else v <= high
        return above & below

    _check(_name(owner, field), value, allowed, inside)


def _range_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    m = MAX_MAGNITUDE
    if high == math.inf:
        return f"{'>' if low_open else '>='} {low:g} (and <= {m:g})"
    if low == -math.inf:
        return f"{'<' if high_open else '<='} {high:g} (and >= {-m:g})"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def check_count(owner: object, field: str, value: Any, low: int, high: int) -> None:
    """A static integer (a number of terms, an order) must be an int in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(
            f"{_name(owner, field)} must be an int >= {low} and <= {high}, got {shown(value)}"
        )


def real_array(owner: object, field: str, value: tuple) -> np.ndarray:
    """A tuple (of tuples) of real numbers as a float array; a boolean, complex or non-numeric
    entry, or a ragged shape, raises naming the field (numpy would convert ``True`` and drop
    an imaginary part with no word)."""

    def walk(v: Any, where: str) -> None:
        if isinstance(v, tuple):
            for i, item in enumerate(v):
                walk(item, f"{where}[{i}]")
        elif (why := _not_real(v)) is not None:
            raise TypeError(f"{where} must be a real number, got {shown(v)} ({why})")
        elif isinstance(v, int) and abs(v) > 2**1000:  # numpy would raise OverflowError
            raise ValueError(f"{where} must be finite, got an int beyond every float")

    name = _name(owner, field)
    walk(value, name)
    try:
        return np.asarray(value, dtype=float)
    except ValueError as err:  # ragged nesting
        raise ValueError(f"{name} must be a rectangular array of numbers: {err}") from None

"""Parameter checks for profile constructors: clear errors that name the parameter and range.

Only concrete values are checked; a traced (free) parameter passes through, since its value is
not known while a program is being traced. Inside a search, out-of-range values are handled by
the likelihood (as -inf), not here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twinlens.backend.concrete import is_concrete


def _name(owner: object, field: str) -> str:
    return f"{type(owner).__name__}.{field}"


def check_finite(owner: object, field: str, value: Any) -> None:
    """``value`` (scalar or array) must be finite."""
    if is_concrete(value) and not np.all(np.isfinite(np.asarray(value, dtype=float))):
        raise ValueError(f"{_name(owner, field)} must be finite, got {value!r}")


def check_positive(owner: object, field: str, value: Any) -> None:
    """``value`` (scalar or array) must be finite and > 0."""
    check_finite(owner, field, value)
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
    if is_concrete(e1) and is_concrete(e2) and not math.hypot(float(e1), float(e2)) < 1.0:
        raise ValueError(
            f"{_name(owner, field)} must satisfy e1^2 + e2^2 < 1 (axis ratio q > 0), got {value!r}"
        )


def check_axis_ratio(owner: str, q: Any) -> None:
    """An axis ratio must lie in (0, 1] (checked when concrete)."""
    if is_concrete(q) and not 0.0 < float(q) <= 1.0:
        raise ValueError(f"{owner}: axis ratio q must be in (0, 1], got {q!r}")

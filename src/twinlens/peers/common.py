"""What every conversion needs: checks of a peer's keyword arguments, naming the peer's
keys, and the lookup in a conversion table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from twinlens.messages import shown

_TWO_PI = 2.0 * math.pi
_T = TypeVar("_T")


def _require(name: str, kwargs: Mapping, keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in kwargs]
    if missing:
        raise KeyError(f"{name} needs {', '.join(keys)}; missing {', '.join(missing)}")


def _positive(source: str, key: str, value: Any) -> None:
    if not np.all(np.asarray(value, dtype=float) > 0):
        raise ValueError(f"{source}: {key} must be > 0, got {shown(value)}")


def _ellipticity(source: str, e1: float, e2: float, key: str = "e1, e2") -> tuple[float, float]:
    # checked before any conversion takes sqrt(q), naming the source's keys
    if not math.hypot(e1, e2) < 1.0:
        raise ValueError(f"{source}: {key} must satisfy e1^2 + e2^2 < 1, got {shown((e1, e2))}")
    return float(e1), float(e2)


def _floats(values: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def _lookup(table: Mapping[Any, _T], key: Any, missing: str, *, inherit: bool = False) -> _T:
    """The entry of a conversion table for ``key`` (a class or a foreign profile name).

    Parameters
    ----------
    table : mapping
        Classes or names to converters.
    key : type or str
        What to convert: a profile's class (looked up exactly, or along its method resolution
        order with ``inherit``) or a foreign profile name.
    missing : str
        The start of the error message when ``key`` has no entry, e.g. ``"no converter to
        lenstronomy for MGE"``.
    inherit : bool
        Accept an entry for a base class of ``key`` (as ``isinstance`` would).

    Returns
    -------
    object
        The table's entry.

    Raises
    ------
    ValueError
        When ``key`` has no entry: ``missing``, then ``"; supported: "`` and every key of the
        table (classes by name).
    """
    candidates = key.__mro__ if inherit and isinstance(key, type) else (key,)
    for candidate in candidates:
        try:
            if candidate in table:
                return table[candidate]
        except TypeError:  # an unhashable name is no name of the table's
            break
    supported = ", ".join(k.__name__ if isinstance(k, type) else str(k) for k in table)
    raise ValueError(f"{missing}; supported: {supported}")

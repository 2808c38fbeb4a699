"""How error messages show the values a user gave.

numpy 2 writes a numpy scalar's ``repr`` as ``np.float64(-0.05)``: a message saying
``got np.float64(-0.05)`` names numpy's type, not the value. :func:`shown` writes the value as
Python writes a number (``-0.05``), inside tuples, lists and arrays too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["shown"]

#: Arrays with more elements than this are summarised (``[0.0, 1.0, ..., 9.0]``), as numpy's
#: own ``repr`` would; smaller ones are written out whole, as lists.
_ARRAY_ELEMENTS = 100


class _Digits:
    """Writes itself as the given text (a number's digits, inside a tuple's or list's
    ``repr``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars (also inside tuples, lists and small arrays) replaced by
    Python values that write the same digits."""
    if isinstance(value, (np.floating, np.complexfloating)):
        # numpy's shortest digits at the scalar's own precision: float32(-0.05) as -0.05, where
        # the Python float it holds would write -0.05000000074505806
        return _Digits(str(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.size <= _ARRAY_ELEMENTS:
        if value.ndim == 0:
            return _plain(value[()])
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def shown(value: Any) -> str:
    """The ``repr`` of ``value`` for an error message, numpy's scalar types left out.

    Parameters
    ----------
    value : Any
        What the user gave: a number, a numpy scalar or array, a tuple or list of them, or
        anything else (written by its own ``repr``).

    Returns
    -------
    str
        ``repr(value)`` with every numpy scalar written as a Python number, boolean or string
        of the same digits (``np.float64(-0.05)`` and ``np.float32(-0.05)`` as ``-0.05``,
        ``np.True_`` as ``True``), and a numpy array as a list of such values (a large one
        summarised with ``...``).

    Examples
    --------
    >>> shown(np.float64(-0.05))
    '-0.05'
    >>> shown((np.float64(0.5), np.int64(2)))
    '(0.5, 2)'
    >>> shown(np.array([1.0, np.nan]))
    '[1.0, nan]'
    """
    if isinstance(value, np.ndarray) and value.size > _ARRAY_ELEMENTS:
        return np.array2string(value, separator=", ", threshold=_ARRAY_ELEMENTS)
    return repr(_plain(value))

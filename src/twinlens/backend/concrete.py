"""Positive tests for JAX arrays, tracers and concrete values.

jax is looked up in ``sys.modules`` and never imported here: if jax has not been imported, no
value can be a JAX array. Concreteness is tested positively (known concrete types), never by
trying ``np.asarray`` and catching the failure.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

_CONCRETE_SCALARS = (bool, int, float, complex, np.generic)


def _jax():
    return sys.modules.get("jax")


def _tracer_type(jax: Any) -> type:
    """JAX's tracer class: public as ``jax.core.Tracer`` today; newer releases are moving
    ``jax.core`` symbols out, so fall back to where the class is defined."""
    tracer: type | None = getattr(jax.core, "Tracer", None)
    if tracer is None:
        from jax._src.core import Tracer

        tracer = Tracer
    return tracer


def is_jax_array(x: Any) -> bool:
    """True for a JAX array or a JAX tracer."""
    jax = _jax()
    return jax is not None and isinstance(x, jax.Array)


def is_tracer(x: Any) -> bool:
    """True for a JAX tracer (a value being traced by jit, vmap or grad)."""
    jax = _jax()
    return jax is not None and isinstance(x, _tracer_type(jax))


def any_jax(*xs: Any) -> bool:
    """True when any argument is a JAX array or tracer."""
    jax = _jax()
    if jax is None:
        return False
    return any(isinstance(x, jax.Array) for x in xs)


class Batched(np.ndarray):
    """One parameter's values across a batch of parameter sets, shape ``(n_batch, 1)``.

    Numpy data, but not one value: code that picks a branch from a parameter's value must treat
    it like a JAX tracer (:func:`is_concrete` is False), and arithmetic broadcasts it against
    per-point arrays ``(n,)`` into ``(n_batch, n)``, as ``vmap`` would map it.
    """


def batched(values: Any) -> Batched:
    """``values`` (one per batch member) as a :class:`Batched` column ``(n_batch, 1)``."""
    return np.asarray(values, dtype=float).reshape(-1, 1).view(Batched)


def is_batched(*xs: Any) -> bool:
    """True when any argument is a :class:`Batched` column."""
    return any(isinstance(x, Batched) for x in xs)


def is_concrete(x: Any) -> bool:
    """True for a value whose content is known now: a Python or numpy scalar, a numpy array,
    or a JAX array that is not a tracer. Anything else (tracers and :class:`Batched` values
    included) is not concrete."""
    if isinstance(x, Batched):
        return False
    if isinstance(x, (np.ndarray, *_CONCRETE_SCALARS)):
        return True
    jax = _jax()
    return jax is not None and isinstance(x, jax.Array) and not isinstance(x, _tracer_type(jax))

"""A content-keyed memo of fields computed from fixed inputs, shared by every backend.

In a fit most of the model is free, but some of it is not: a lens light fixed by an earlier
fit, or the stellar mass that follows it with only a mass-to-light ratio free. The fields of
such a profile (deflections on the ray-traced grid, a light image) are the same at every
evaluation of the likelihood. The memo computes each one once and hands back the stored bytes.

**Keys.** An entry is keyed by its *level*, the *quantity* (``deflections``, ``image``,
``columns``), the profile's value key (see :mod:`twinlens.fields`) and the grid's fingerprint:

* level 1 (``L1``) stores the whole field of a profile whose parameters are all concrete;
* level 2 (``L2``) stores the *unit* field of a profile that is linear in one declared
  parameter (``linear``: a mass-to-light ratio, a light intensity), keyed by every other
  parameter, and returns it times that parameter, which may be free: a new value, a
  :class:`~twinlens.backend.concrete.Batched` column or a JAX tracer;
* the grid fingerprint is a hash of the grid's content, computed once per grid object: a
  value-identity grid (a :class:`~twinlens.grids.SubPixelLayout`: its sub-pixel coordinates'
  bytes, dtype and shape, and its oversampling levels) when the caller names one, else the
  coordinate arrays' bytes, type, dtype and shape. JAX arrays never change and are hashed
  once; numpy arrays are hashed at every call (even a read-only one can be made writeable
  again), so editing coordinates in place can never return a stale field.

Floats are keyed by bit pattern and dtype, so ``1.0`` and the next float up, or a float32 and
a float64 value, are different keys.

**One set of bytes.** A field is always computed by the CPU kernel (numba), whichever backend
asked first, stored as a read-only numpy array, and read back by numpy, numba and JAX alike.

**The JAX fold.** Under ``jit`` and ``vmap`` a field whose grid and key values are concrete is
computed at trace time and enters the traced program as a constant (times the linear
parameter, possibly traced), so its math leaves the program: a smaller program, compiled
sooner. Anything traced (a free centre, positions that depend on free parameters) falls
through to the direct call; nothing branches on a traced value. A compiled program holds the
constant it was traced with; since the key is made of values that are static in that program,
a different key is a different program. ``jax_folds`` in :func:`stats` counts the fields
embedded in traced programs.

**Control.** ``TWINLENS_MEMO=0`` turns the memo off for the process; :func:`disabled` turns it
off in a block (nestable, exception-safe, per thread). ``TWINLENS_MEMO_MAX_MB`` (default 256)
caps the bytes held; the least recently used fields are evicted first. The memo is
thread-safe, and a field requested by several threads at once is computed once. Any failure or
doubt is a miss (the direct call), never a stale hit.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from twinlens.backend.concrete import Batched, is_concrete, is_jax_array
from twinlens.environment import env_number, env_switch
from twinlens.fields import ValueIdentity, frozen_array, value_digest, value_key

__all__ = [
    "ENV_MAX_MB",
    "ENV_SWITCH",
    "Recalled",
    "clear",
    "disabled",
    "enabled",
    "grid_fingerprint",
    "recall",
    "stats",
]

ENV_SWITCH = "TWINLENS_MEMO"
ENV_MAX_MB = "TWINLENS_MEMO_MAX_MB"
DEFAULT_MAX_MB = 256.0
#: The backend that computes every stored field (so the bytes do not depend on the caller).
COMPUTE_BACKEND = "numba"
#: Keys remembered for the second-request admission rule (see :func:`recall`).
SEEN_KEYS = 4096

_disabled_depth: contextvars.ContextVar[int] = contextvars.ContextVar("memo_off", default=0)


# -- switches and counters ----------------------------------------------------------------------


def enabled() -> bool:
    """True unless ``TWINLENS_MEMO`` is ``0``/``off`` or a :func:`disabled` block is open."""
    if _disabled_depth.get():
        return False
    return env_switch(ENV_SWITCH, True)


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Turn the memo off inside a ``with`` block (in this thread; blocks nest)."""
    token = _disabled_depth.set(_disabled_depth.get() + 1)
    try:
        yield
    finally:
        _disabled_depth.reset(token)


def max_bytes() -> int:
    """The byte cap, from ``TWINLENS_MEMO_MAX_MB`` (megabytes, >= 0; default 256)."""
    mb = env_number(ENV_MAX_MB, DEFAULT_MAX_MB, 0.0, "a number of megabytes >= 0")
    return int(mb * 2**20)


class _Store:
    """The entries, least recently used first, with their counters, behind one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: OrderedDict[Any, tuple[np.ndarray, str]] = OrderedDict()
        self.pending: dict[Any, threading.Event] = {}
        self.bytes = 0
        self.seen: OrderedDict[Any, None] = OrderedDict()  # keys deferred once
        self.counts = {"hits": 0, "misses": 0, "deferred": 0, "evictions": 0, "jax_folds": 0}

    def lookup(self, key: Any, eager: bool) -> tuple[tuple | None, threading.Event | None, bool]:
        """``(value, event, owner)``: a hit, or the event to wait on, or (owner) the duty to
        compute the value and :meth:`finish`; ``(None, None, False)`` defers a key met for the
        first time unless ``eager``."""
        with self.lock:
            value = self.entries.get(key)
            if value is not None:
                self.entries.move_to_end(key)
                self.counts["hits"] += 1
                return value, None, False
            if not eager and key not in self.seen:
                self.seen[key] = None
                if len(self.seen) > SEEN_KEYS:
                    self.seen.popitem(last=False)
                self.counts["deferred"] += 1
                return None, None, False
            event = self.pending.get(key)
            if event is not None:
                return None, event, False
            event = self.pending[key] = threading.Event()
            self.counts["misses"] += 1
            return None, event, True

    def hit_after_wait(self, key: Any) -> tuple | None:
        with self.lock:
            value = self.entries.get(key)
            if value is not None:
                self.entries.move_to_end(key)
                self.counts["hits"] += 1
            else:
                self.counts["misses"] += 1
            return value

    def finish(self, key: Any, entry: tuple | None) -> None:
        """Store ``entry`` (None: nothing to store) and release the waiters."""
        with self.lock:
            try:
                cap = max_bytes()
                if entry is not None and entry[0].nbytes <= cap:
                    self.entries[key] = entry
                    self.bytes += entry[0].nbytes
                    while self.bytes > cap:
                        _, (old, _) = self.entries.popitem(last=False)
                        self.bytes -= old.nbytes
                        self.counts["evictions"] += 1
            finally:
                self.pending.pop(key).set()

    def count(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1


_STORE = _Store()


def stats() -> dict[str, int]:
    """``hits``, ``misses`` (fields computed), ``deferred`` (first requests not stored, see
    :func:`recall`), ``evictions``, ``jax_folds``, ``bytes`` held and ``entries``."""
    with _STORE.lock:
        return {**_STORE.counts, "bytes": _STORE.bytes, "entries": len(_STORE.entries)}


def clear() -> None:
    """Drop every entry and zero the counters."""
    with _STORE.lock:
        _STORE.entries.clear()
        _STORE.seen.clear()
        _STORE.bytes = 0
        for name in _STORE.counts:
            _STORE.counts[name] = 0


# -- grid fingerprints --------------------------------------------------------------------------

_FINGERPRINTS: dict[int, tuple[Any, tuple]] = {}


def _array_fingerprint(a: Any) -> tuple | None:
    if isinstance(a, Batched) or not is_concrete(a) or not hasattr(a, "shape"):
        return None
    # a JAX array never changes; a numpy array can, even a read-only one (its write flag can
    # be turned back on), so its bytes are hashed at every call
    immutable = is_jax_array(a)
    if immutable:
        cached = _recalled_fingerprint(a)
        if cached is not None:
            return cached
    data = np.ascontiguousarray(np.asarray(a))
    digest = hashlib.blake2b(data.data.cast("B"), digest_size=16).digest()
    fingerprint = (type(a).__name__, data.dtype.str, data.shape, digest)
    return _remember(a, fingerprint) if immutable else fingerprint


def _recalled_fingerprint(owner: Any) -> tuple | None:
    cached = _FINGERPRINTS.get(id(owner))
    return cached[1] if cached is not None and cached[0]() is owner else None


def _object_fingerprint(grid: ValueIdentity) -> tuple:
    cached = _recalled_fingerprint(grid)
    if cached is not None:
        return cached
    return _remember(grid, (type(grid).__name__, value_digest(grid)))


def _remember(owner: Any, fingerprint: tuple) -> tuple:
    """Cache ``fingerprint`` for the immutable ``owner`` until it is garbage collected."""
    key = id(owner)
    try:
        ref = weakref.ref(owner, lambda _: _FINGERPRINTS.pop(key, None))
    except TypeError:  # not weak-referenceable: fingerprinted at every call
        return fingerprint
    _FINGERPRINTS[key] = (ref, fingerprint)
    return fingerprint


def grid_fingerprint(*coordinates: Any, grid: ValueIdentity | None = None) -> tuple | None:
    """A content fingerprint of the value-identity ``grid`` the coordinates come from, or of
    the coordinate arrays themselves; None when they are not concrete."""
    if grid is not None:
        return _object_fingerprint(grid)
    parts = []
    for a in coordinates:
        fingerprint = _array_fingerprint(a)
        if fingerprint is None:
            return None
        parts.append(fingerprint)
    return tuple(parts)


# -- recall -------------------------------------------------------------------------------------


def _concrete_tree(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_concrete_tree(v) for v in value)
    if isinstance(value, ValueIdentity):
        return all(_concrete_tree(getattr(value, f.name)) for f in dataclasses.fields(value))
    return value is None or isinstance(value, str) or is_concrete(value)


def _level_and_key(obj: ValueIdentity, linear: str | None) -> tuple[int, Any] | None:
    """``(level, key)`` for ``obj``, or None when a value it is keyed on is not concrete.

    With ``linear`` declared the unit field (level 2) serves every value of that parameter,
    concrete or not, so it is preferred to level 1 (which would miss at every new value)."""
    fields = dataclasses.fields(obj)
    if linear is not None:
        if np.ndim(getattr(obj, linear)) != 0 and not isinstance(getattr(obj, linear), Batched):
            return None  # a linear factor is one number per evaluation
        others = [f for f in fields if f.name != linear]
        if not all(_concrete_tree(getattr(obj, f.name)) for f in others):
            return None
        named = tuple((f.name, value_key(getattr(obj, f.name))) for f in others)
        return 2, (type(obj), linear, named)
    if all(_concrete_tree(getattr(obj, f.name)) for f in fields):
        return 1, obj._value_key()
    return None


@dataclasses.dataclass(frozen=True)
class Recalled:
    """A stored field and the factor it is multiplied by (``1.0`` at level 1)."""

    stored: np.ndarray
    kind: str  # "array", "tuple" or "list": the structure the direct call returns
    factor: Any = 1.0
    level: int = 1

    def parts(self) -> list[np.ndarray]:
        """The stored (unit) arrays, one per part of the result."""
        return [self.stored] if self.kind == "array" else list(self.stored)

    def value(self, backend: str) -> Any:
        """The field as the direct call would return it, on ``backend``."""
        if backend == "jax":
            from twinlens.backend import jax_runtime

            jnp = jax_runtime.load().numpy
            parts = [jnp.asarray(p) for p in self.parts()]  # constants of the traced program
            factor = self.factor
        else:
            parts = self.parts()
            factor = np.asarray(self.factor)  # a Batched column broadcasts as plain data
        if self.level == 2:
            parts = [p * factor for p in parts]
        if self.kind == "array":
            return parts[0]
        return tuple(parts) if self.kind == "tuple" else parts


def _pack(result: Any) -> tuple[np.ndarray, str]:
    if isinstance(result, (tuple, list)):
        kind = "tuple" if isinstance(result, tuple) else "list"
        return np.stack([np.asarray(r, dtype=float) for r in result]), kind
    return np.array(result, dtype=float), "array"


def recall(
    obj: ValueIdentity,
    quantity: str,
    x: Any,
    y: Any,
    backend: str,
    evaluate: Callable[[Any, Any, Any, str], Any],
    linear: str | None = None,
    grid: ValueIdentity | None = None,
    eager: bool = True,
) -> Recalled | None:
    """The stored field ``evaluate(obj, x, y, backend)`` of ``obj`` at coordinates ``x, y``,
    or None when the memo does not apply (then call ``evaluate`` directly).

    ``linear`` names the field of ``obj`` the result is linear in (level 2); without it only a
    fully concrete ``obj`` is served (level 1). ``evaluate`` must return an array, a tuple or a
    list of arrays of the coordinates' shape. ``grid``, when given, is the value-identity
    object whose concrete ``xs`` and ``ys`` the coordinates are (perhaps as JAX arrays, even
    traced ones): its fingerprint is computed once, and fields are computed from its arrays.

    ``eager=False`` stores a field only when it is requested a second time (the first request
    is ``deferred``: None). Callers pass it when they cannot tell fixed values from free ones
    (every value concrete, e.g. a tracer evaluated at one parameter vector), so that fields of
    parameters that change at every call are neither computed apart nor stored.
    """
    if backend not in ("numba", "numpy", "jax") or not enabled():
        return None
    try:
        level_key = _level_and_key(obj, linear)
        where = None if level_key is None else grid_fingerprint(x, y, grid=grid)
    except TypeError:  # a value without a value key: not memoisable
        return None
    if where is None:
        return None
    level, obj_key = level_key  # type: ignore[misc]
    key = (level, quantity, obj_key, where)
    entry, event, owner = _STORE.lookup(key, eager or backend == "jax")
    if entry is None and event is None and not owner:
        return None  # deferred
    if entry is None and not owner:
        assert event is not None  # a deferred lookup has returned above
        event.wait()  # another thread is computing this field
        entry = _STORE.hit_after_wait(key)
    if entry is None:
        if grid is not None:  # its own concrete coordinates (x, y may be traced copies)
            x, y = grid.xs, grid.ys  # type: ignore[attr-defined]
        entry = _compute(obj, linear if level == 2 else None, x, y, evaluate)
        if owner:
            _STORE.finish(key, entry)
        if entry is None:
            return None
    if backend == "jax":
        _STORE.count("jax_folds")
    factor = getattr(obj, linear) if level == 2 and linear is not None else 1.0
    return Recalled(entry[0], entry[1], factor, level)


def _compute(
    obj: ValueIdentity,
    linear: str | None,
    x: Any,
    y: Any,
    evaluate: Callable[[Any, Any, Any, str], Any],
) -> tuple[np.ndarray, str] | None:
    """The field on the CPU (the unit field when ``linear``), read-only; None on any failure
    or a non-finite value, so that the direct call decides."""
    try:
        twin = dataclasses.replace(obj, **{linear: 1.0}) if linear else obj
        value, kind = _pack(evaluate(twin, np.asarray(x), np.asarray(y), COMPUTE_BACKEND))
    except Exception:
        return None
    if not np.all(np.isfinite(value)):
        return None
    # frozen, not merely read-only: a level-1 recall hands out this array itself, and an
    # owned read-only array can be made writeable again (then edited, corrupting later hits)
    return frozen_array(value), kind

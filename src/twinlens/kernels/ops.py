"""The math vocabulary of one-source kernels.

A kernel's per-point math is written once, as a plain Python function of scalars that uses
arithmetic, Python's ``abs`` and the functions below. The same function object then runs as

* numpy: called on numpy arrays, each op dispatches to numpy (or scipy);
* JAX: called on JAX arrays or tracers, each op dispatches to ``jax.numpy``;
* numba: compiled with ``numba.njit``; each op has a numba overload on scalars, registered
  by :func:`register_numba_overloads` the first time a numba kernel is built.

Branches on values are written ``where(cond, a, b)``: on arrays both sides are evaluated, so
each side must be finite wherever the other is selected (write ``where(r > 0, x / safe_r, 0)``
with ``safe_r = where(r > 0, r, 1)``), which also keeps JAX gradients finite.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as sc

from twinlens.backend.concrete import any_jax

pi = float(np.pi)


def _jax_fn(path: str | Callable[[], Callable]) -> Callable:
    if callable(path):  # a factory, for ops whose JAX version twinlens builds (custom_jvp)
        return path()
    mod_name, _, attr = path.rpartition(".")
    mod = sys.modules.get(mod_name)
    if mod is None:  # e.g. jax.scipy.special is not imported by ``import jax``
        import importlib

        mod = importlib.import_module(mod_name)
    return getattr(mod, attr)


def make_op(
    name: str,
    np_fn: Callable,
    jax_fn: str | Callable[[], Callable],
    numba_impl: Callable,
    inline: bool = True,
) -> Callable:
    """Define an op usable in one-source kernels.

    Parameters
    ----------
    name
        The op's name.
    np_fn
        Implementation on numpy arrays (the reference).
    jax_fn
        Dotted path of the ``jax`` function, or a zero-argument factory returning it (called
        after JAX is loaded, so it may build a ``jax.custom_jvp`` function).
    numba_impl
        A Python function of scalars that numba compiles as the op's overload (it may itself
        use other ops).
    inline
        Inline the op into its callers at numba's IR level (fast for small ops). Ops that hold
        long loops (quadrature rules) are better called: their call costs nothing next to
        their body, and inlining them makes compilation slow.
    """

    def op(*args: Any) -> Any:
        if any_jax(*args):
            return _jax_fn(jax_fn)(*args)
        return np_fn(*args)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}`` on numpy arrays, JAX arrays or (inside numba) scalars."
    op._numba_impl = numba_impl  # type: ignore[attr-defined]
    op._numba_inline = inline  # type: ignore[attr-defined]
    op.__module__ = getattr(numba_impl, "__module__", __name__)  # where the op is defined
    _ALL_OPS.append(op)
    if _numba_ready:
        _overload(op)
    return op


_ALL_OPS: list[Callable] = []
_numba_ready = False


def pointwise(fn: Callable) -> Callable:
    """Decorator for a helper that point functions call: one Python function, usable on numpy
    arrays, on JAX arrays and from numba-compiled code (where it is compiled as an overload).

    Plain Python functions cannot be called from numba code; a ``pointwise`` one can.
    """
    op = make_op(fn.__name__, fn, lambda: fn, fn)
    op.__doc__ = fn.__doc__
    op.__wrapped__ = fn  # type: ignore[attr-defined]
    op.__module__ = fn.__module__
    op.__qualname__ = fn.__qualname__
    return op


# Each numba implementation works on scalars and uses only what numba compiles.
# fmt: off
sqrt = make_op("sqrt", np.sqrt, "jax.numpy.sqrt", lambda x: np.sqrt(x))
exp = make_op("exp", np.exp, "jax.numpy.exp", lambda x: np.exp(x))
expm1 = make_op("expm1", np.expm1, "jax.numpy.expm1", lambda x: np.expm1(x))
log = make_op("log", np.log, "jax.numpy.log", lambda x: np.log(x))
log1p = make_op("log1p", np.log1p, "jax.numpy.log1p", lambda x: np.log1p(x))
sin = make_op("sin", np.sin, "jax.numpy.sin", lambda x: np.sin(x))
cos = make_op("cos", np.cos, "jax.numpy.cos", lambda x: np.cos(x))
tan = make_op("tan", np.tan, "jax.numpy.tan", lambda x: np.tan(x))
arctan = make_op("arctan", np.arctan, "jax.numpy.arctan", lambda x: np.arctan(x))
arctanh = make_op("arctanh", np.arctanh, "jax.numpy.arctanh", lambda x: np.arctanh(x))
arcsinh = make_op("arcsinh", np.arcsinh, "jax.numpy.arcsinh", lambda x: np.arcsinh(x))
sinh = make_op("sinh", np.sinh, "jax.numpy.sinh", lambda x: np.sinh(x))
cosh = make_op("cosh", np.cosh, "jax.numpy.cosh", lambda x: np.cosh(x))
arctan2 = make_op("arctan2", np.arctan2, "jax.numpy.arctan2", lambda y, x: np.arctan2(y, x))
hypot = make_op("hypot", np.hypot, "jax.numpy.hypot", lambda x, y: np.hypot(x, y))
minimum = make_op("minimum", np.minimum, "jax.numpy.minimum", lambda x, y: min(x, y))
maximum = make_op("maximum", np.maximum, "jax.numpy.maximum", lambda x, y: max(x, y))
floor = make_op("floor", np.floor, "jax.numpy.floor", lambda x: np.floor(x))
real = make_op("real", np.real, "jax.numpy.real", lambda x: x.real)
imag = make_op("imag", np.imag, "jax.numpy.imag", lambda x: x.imag)
conj = make_op("conj", np.conj, "jax.numpy.conj", lambda x: x.conjugate())
erf = make_op("erf", sc.erf, "jax.scipy.special.erf", lambda x: math.erf(x))
erfc = make_op("erfc", sc.erfc, "jax.scipy.special.erfc", lambda x: math.erfc(x))
# where is called, not inlined: numba's IR inliner mishandles its branch (a spurious internal
# warning); LLVM inlines the call anyway, at no measured cost.
where = make_op("where", np.where, "jax.numpy.where", lambda c, a, b: a if c else b, inline=False)
# fmt: on

OPS: tuple[Callable, ...] = (
    sqrt, exp, expm1, log, log1p, sin, cos, tan, arctan, arctanh, arcsinh, sinh, cosh,
    arctan2, hypot, minimum, maximum, floor, real, imag, conj, erf, erfc, where,
)  # fmt: skip


def register_numba_overloads() -> None:
    """Give every op a numba implementation on scalars (idempotent; imports numba).

    Ops defined later with :func:`make_op` are registered as they are defined.
    """
    global _numba_ready
    if _numba_ready:
        return
    for op in _ALL_OPS:
        _overload(op)
    _numba_ready = True


def _overload(op: Callable) -> None:
    from numba.extending import overload

    # inline at the numba IR level: an out-of-line call per op costs more than most ops
    overload(op, inline="always" if op._numba_inline else "never")(_typer_for(op._numba_impl))


def _typer_for(impl: Callable) -> Callable:
    # numba requires the typer's parameter names to match the implementation's.
    params = ", ".join(inspect.signature(impl).parameters)
    namespace: dict[str, Any] = {"impl": impl}
    exec(f"def typer({params}):\n    return impl\n", namespace)
    return namespace["typer"]

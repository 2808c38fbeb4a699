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
from typing import Any, cast

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
    inline: bool | str = True,
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
        How numba places the op in its callers. ``True``: compiled once per argument types and
        inlined by LLVM (forced): an out-of-line call per op would cost more than most ops and
        keep loops from vectorising. ``"ir"``: inlined at numba's IR level, typed again at
        every call site: kernels compile several times slower, so only for an op measured
        faster that way (``faddeeva.wofz_upper``). ``False``: called; for ops that hold long
        loops (quadrature rules), whose call costs nothing next to their body.

        LLVM inlining replaced IR inlining as the default: kernels and fused loops compile
        several times faster from empty caches, with W2-W5 as fast as before; only the
        Faddeeva kernel behind W1 ran slower, and it is ``"ir"``.
    """
    if inline not in (True, False, "ir"):  # a misspelt mode would silently be True
        raise ValueError(f"make_op({name!r}): inline must be True, False or 'ir', got {inline!r}")

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


def pointwise(fn: Callable | None = None, *, inline: bool | str = True) -> Any:
    """Decorator for a helper that point functions call: one Python function, usable on numpy
    arrays, on JAX arrays and from numba-compiled code (where it is compiled as an overload).

    Plain Python functions cannot be called from numba code; a ``pointwise`` one can.

    ``inline`` is :func:`make_op`'s. ``@pointwise(inline=False)`` makes numba call the helper
    instead of having LLVM inline it: calling costs nothing at run time when the helper's body
    holds library calls (``log``, ``arctan``: no SVML) that keep the loop from vectorising
    anyway. Keep the default where the kernel's loop vectorises.
    """

    def wrap(fn: Callable) -> Callable:
        op = make_op(fn.__name__, fn, lambda: fn, fn, inline=inline)
        op.__doc__ = fn.__doc__
        op.__wrapped__ = fn  # type: ignore[attr-defined]
        op.__module__ = fn.__module__
        op.__qualname__ = fn.__qualname__
        return op

    return wrap if fn is None else wrap(fn)


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

# -- exp and log for numba, as arithmetic that vectorises ----------------------------------
#
# numba compiles np.exp and np.log to scalar libm calls, which LLVM cannot vectorise (no SVML
# in numba's LLVM build), several times slower than numpy's SIMD exp.
# Written as a Cody-Waite reduction and a polynomial, with the exponent set through the float's
# bits, they vectorise and stay within 1 ulp of libm on every normal input (tests/test_ops.py
# checks them against numpy and mpmath, specials included).
# They are separate ops, used where a kernel's time is mostly exp and log (the Sersic light):
# inlined everywhere, they made numba compile the Gaussian kernels longer.
# The bit casts are numba intrinsics, made when numba is first loaded.

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 to 33 bits: k * _LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10
_EXP_MAX = 709.79  # above: inf
_EXP_MIN = -745.2  # below: 0
# exp(r) Taylor coefficients 1/j!, j = 2..13: for |r| <= ln(2)/2 the remainder is below 4e-18
_EXP_POLY = (*(1.0 / math.factorial(j) for j in range(13, 1, -1)), 1.0, 1.0)  # highest first
# log(m) = f - s (f - z P(z)), s = f / (2 + f), z = s^2, P = sum 2 / (2 j + 1) z^(j - 1):
# for m in [sqrt(1/2), sqrt(2)) the remainder after z^10 is below 1e-19
_LOG_POLY = tuple(2.0 / (2 * j + 1) for j in range(11, 0, -1))  # highest first
_SQRT2 = 1.4142135623730951
_TINY = 2.2250738585072014e-308  # smallest normal float64
_int_to_float: Any = None  # numba intrinsics, set by register_numba_overloads
_float_to_int: Any = None


@pointwise
def _horner(x, coefficients):
    """The polynomial with ``coefficients`` (highest power first) at ``x``, by Horner's rule
    (numba unrolls the loop over a constant tuple)."""
    p = coefficients[0] * x + coefficients[1]
    for k in range(2, len(coefficients)):
        p = p * x + coefficients[k]
    return p


def _vector_exp(x):  # pragma: no cover - compiled by numba
    xc = min(max(x, _EXP_MIN), _EXP_MAX)
    k = np.floor(xc * _LOG2E + 0.5)
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = _horner(r, _EXP_POLY)
    # 2^k in two normal halves, so that results down to the subnormals are reached
    ki = np.int64(k)
    k1 = ki >> 1
    out = (p * _int_to_float((k1 + 1023) << 52)) * _int_to_float((ki - k1 + 1023) << 52)
    out = np.inf if x > _EXP_MAX else out
    out = 0.0 if x < _EXP_MIN else out
    return x if x != x else out


def _vector_log(x):  # pragma: no cover - compiled by numba
    sub = x < _TINY
    bits = _float_to_int(x * 18014398509481984.0 if sub else x)  # subnormals scaled by 2^54
    e = ((bits >> 52) & 0x7FF) - 1023 - (54 if sub else 0)
    m = _int_to_float((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)  # mantissa in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    f = m - 1.0
    s = f / (m + 1.0)
    z = s * s
    p = _horner(z, _LOG_POLY)
    ef = float(e)
    out = ef * _LN2_HI + ((f - s * (f - z * p)) + ef * _LN2_LO)
    out = -np.inf if x == 0.0 else out
    out = np.nan if x < 0.0 else out
    out = np.inf if x == np.inf else out
    return x if x != x else out


def _float_typer(vector_impl: Callable, fallback: Callable) -> Callable:
    """numba typer: the vectorising implementation for float arguments, else ``fallback``."""

    def typer(x):
        from numba.core import types

        return vector_impl if isinstance(x, types.Float) else fallback

    return typer


# the same values as exp and log (numpy and JAX use theirs), vectorising on numba
exp_vectorised = make_op("exp_vectorised", np.exp, "jax.numpy.exp", lambda x: np.exp(x))
log_vectorised = make_op("log_vectorised", np.log, "jax.numpy.log", lambda x: np.log(x))
exp_vectorised._numba_typer = _float_typer(_vector_exp, exp_vectorised._numba_impl)  # type: ignore[attr-defined]
log_vectorised._numba_typer = _float_typer(_vector_log, log_vectorised._numba_impl)  # type: ignore[attr-defined]


def _make_bit_casts() -> None:
    global _int_to_float, _float_to_int
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def int_to_float(typingctx, bits):
        sig = types.float64(types.int64)
        return sig, lambda context, builder, signature, args: builder.bitcast(
            args[0], context.get_value_type(types.float64)
        )

    @intrinsic
    def float_to_int(typingctx, x):
        sig = types.int64(types.float64)
        return sig, lambda context, builder, signature, args: builder.bitcast(
            args[0], context.get_value_type(types.int64)
        )

    _int_to_float, _float_to_int = int_to_float, float_to_int


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
    _make_bit_casts()
    for op in _ALL_OPS:
        _overload(op)
    _numba_ready = True


def _overload(op: Callable) -> None:
    from numba.extending import overload

    # make_op attaches the numba attributes, which Callable does not declare
    attrs: Any = op
    typer = getattr(op, "_numba_typer", None) or _typer_for(attrs._numba_impl)
    inline = attrs._numba_inline
    if inline == "ir":
        overload(op, inline="always")(typer)
    else:
        overload(op, inline="never", jit_options={"forceinline": bool(inline)})(typer)


def _typer_for(impl: Callable) -> Callable:
    # numba requires the typer's parameter names to match the implementation's: it reads
    # them with inspect.signature, which honours __signature__ (no source to generate)
    def typer(*args: Any) -> Callable:
        return impl

    cast(Any, typer).__signature__ = inspect.signature(impl)
    return typer

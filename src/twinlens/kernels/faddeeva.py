"""The Faddeeva function ``w(z) = exp(-z**2) erfc(-i z)`` as a one-source op.

:data:`wofz` is an op (see :mod:`twinlens.kernels.ops`): other kernels call ``wofz(z)`` inside
their per-point functions. It is also registered as the kernel ``faddeeva.wofz`` (real and
imaginary parts in, real and imaginary parts out) and wrapped for users by
:func:`twinlens.special.wofz`.

Algorithm
---------
On the closed upper half plane one rational approximation serves everywhere (J. A. C.
Weideman, "Computation of the complex error function", SIAM J. Numer. Anal. 31, 1994). From
``w(z) = (i / pi) int exp(-t**2) / (z - t) dt`` (``Im z > 0``), write
``exp(-t**2) = f(t) / (L**2 + t**2)`` with ``f(t) = (L**2 + t**2) exp(-t**2)`` and expand
``f`` in powers of ``exp(i theta) = (L + i t) / (L - i t)``, where ``t = L tan(theta / 2)``:
``f = sum_n a_n exp(i n theta)``, real ``a_n = a_-n``. Integrating term by term by residues,

    w(z) = 1 / (sqrt(pi) (L - i z)) + 2 / (L - i z)**2 * sum_{n=0}^{N-1} a_{n+1} Z**n,

with ``Z = (L + i z) / (L - i z)``, which maps the upper half plane onto the unit disc. The
truncation error is about uniform in ``Z``, and it carries the factor ``1 / (L - i z)**2``
while ``|w| ~ 1 / (sqrt(pi) |z|)``: the relative error is bounded on the whole half plane and
falls like ``1 / |z|`` far out, so no second region is needed. ``N = 40`` and
``L = sqrt(N / sqrt(2))`` give a measured worst relative error of 2e-15 (``docs/special.rst``).
The whole upper half plane costs one real reciprocal pair and a degree-39 polynomial in ``Z``,
with no exponential, square root or branch.

Below the real axis the reflection ``w(z) = 2 exp(-z**2) - w(-z)`` is used, as scipy does.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import scipy.special

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import (
    cos,
    exp,
    imag,
    make_op,
    maximum,
    minimum,
    pointwise,
    real,
    sin,
    where,
)
from twinlens.kernels.registry import Kernel, register
from twinlens.kernels.tolerance import Tolerance

#: Number of Weideman coefficients ``N`` (a multiple of 4, see ``_CHAINS``): 36 gives 8e-15,
#: 40 gives 2e-15 worst relative error; more gains nothing at double precision.
N_TERMS = 40
#: Weideman's scale ``L = sqrt(N / sqrt(2))``.
SCALE = float(np.sqrt(N_TERMS / np.sqrt(2.0)))


def weideman_coefficients(n_terms: int, scale: float, n_samples: int = 8192) -> np.ndarray:
    """Coefficients ``a_1 .. a_n`` of Weideman's expansion, lowest power first.

    ``a_k = (1 / 2 pi) int_{-pi}^{pi} f(L tan(theta / 2)) cos(k theta) d theta`` with
    ``f(t) = (L**2 + t**2) exp(-t**2)``; ``f`` is even in ``theta``, so the sine parts vanish.
    The integrand is smooth and periodic (it vanishes to all orders at ``theta = +-pi``), so
    the midpoint rule on ``n_samples`` points converges geometrically; 8192 points reach
    rounding level for ``n_terms <= 64``.

    Parameters
    ----------
    n_terms
        Number of coefficients ``N``.
    scale
        The scale ``L > 0``.
    n_samples
        Quadrature points on ``(-pi, pi)``.

    Returns
    -------
    ndarray, shape (n_terms,)
        ``a_1 .. a_N``, real.
    """
    theta = np.pi * (2.0 * (np.arange(n_samples) + 0.5) / n_samples - 1.0)
    t = scale * np.tan(theta / 2.0)
    f = (scale**2 + t**2) * np.exp(-(t**2))
    k = np.arange(1, n_terms + 1)
    return (np.cos(np.outer(k, theta)) @ f) / n_samples


if N_TERMS % 4 or N_TERMS < 8:
    raise ValueError("N_TERMS must be a multiple of 4, at least 8 (four Horner chains)")
_A = weideman_coefficients(N_TERMS, SCALE)
# p(Z) = sum_k a_{k+1} Z**k = P0(Z**4) + Z P1(Z**4) + Z**2 P2(Z**4) + Z**3 P3(Z**4): four
# independent Horner chains, Pr holding a_{4m+r+1}, highest power first. Each chain is started
# from its top two coefficients and the remaining N / 4 - 2 = 8 steps form the loop: a short
# constant trip count lets LLVM unroll it fully, and numba then vectorises across points.
_CHAINS = [np.ascontiguousarray(_A[r::4][::-1]) for r in range(4)]
_C0, _C1, _C2, _C3 = (c[2:].copy() for c in _CHAINS)
(_T0, _U0), (_T1, _U1), (_T2, _U2), (_T3, _U3) = ((float(c[0]), float(c[1])) for c in _CHAINS)
_TWO_L = 2.0 * SCALE
_INV_SQRT_PI = float(1.0 / np.sqrt(np.pi))
_TWO_OVER_SQRT_PI = 2.0 * _INV_SQRT_PI
_BIG = 1e300


def _upper_point(x, y):
    # (Re w, Im w) at z = x + i y in the closed upper half plane, y >= 0, the parts clamped
    # to 1e300 (as in wofz_point). A plain function, wofz_upper's numba implementation itself:
    # every level of ops numba inlines is typed again at each call site (a wrapper around this
    # doubled the Gaussian kernels' compile time).
    x = minimum(maximum(x, -_BIG), _BIG)
    y = minimum(y, _BIG)
    # 1 / (L - i z) = 1 / (a - i x) with a = L + y >= L > 0, as (a + i x) / (a**2 + x**2),
    # scaled by s = max(a, |x|) so that nothing overflows for |z| up to the largest float.
    # Real arithmetic throughout: every backend then rounds identically (complex division
    # differs between numpy, numba and XLA) and numba can vectorise the loop over points.
    a = SCALE + y
    s = maximum(a, abs(x))
    inv_s = 1.0 / s
    a_s = a * inv_s
    x_s = x * inv_s
    inv_d = inv_s / (a_s * a_s + x_s * x_s)
    q_re = a_s * inv_d
    q_im = x_s * inv_d
    # Z = (L + i z) / (L - i z) = 2 L / (L - i z) - 1, in the closed unit disc, and Z**2.
    zr = _TWO_L * q_re - 1.0
    zi = _TWO_L * q_im
    z2r = zr * zr - zi * zi
    z2i = 2.0 * zr * zi
    z4r = z2r * z2r - z2i * z2i
    z4i = 2.0 * z2r * z2i
    # p(Z) by four Horner chains in Z**4 (see _CHAINS).
    p0r = _T0 * z4r + _U0
    p0i = _T0 * z4i
    p1r = _T1 * z4r + _U1
    p1i = _T1 * z4i
    p2r = _T2 * z4r + _U2
    p2i = _T2 * z4i
    p3r = _T3 * z4r + _U3
    p3i = _T3 * z4i
    for c0, c1, c2, c3 in zip(_C0, _C1, _C2, _C3):  # noqa: B905 (numba: no strict=)
        p0r, p0i = p0r * z4r - p0i * z4i + c0, p0r * z4i + p0i * z4r
        p1r, p1i = p1r * z4r - p1i * z4i + c1, p1r * z4i + p1i * z4r
        p2r, p2i = p2r * z4r - p2i * z4i + c2, p2r * z4i + p2i * z4r
        p3r, p3i = p3r * z4r - p3i * z4i + c3, p3r * z4i + p3i * z4r
    # p = (P0 + Z**2 P2) + Z (P1 + Z**2 P3)
    er = p0r + z2r * p2r - z2i * p2i
    ei = p0i + z2r * p2i + z2i * p2r
    o_r = p1r + z2r * p3r - z2i * p3i
    oi = p1i + z2r * p3i + z2i * p3r
    pr = er + zr * o_r - zi * oi
    pi_ = ei + zr * oi + zi * o_r
    # w = q (2 p q + 1 / sqrt(pi)) with q = 1 / (L - i z).
    tr = 2.0 * (pr * q_re - pi_ * q_im) + _INV_SQRT_PI
    ti = 2.0 * (pr * q_im + pi_ * q_re)
    wr = q_re * tr - q_im * ti
    wi = q_re * ti + q_im * tr
    return wr, wi


def wofz_point(z):
    """Faddeeva function ``w(z) = exp(-z**2) erfc(-i z)`` of one complex point.

    The one-source version behind :data:`wofz` on numba and JAX.

    Parameters
    ----------
    z : complex
        Argument (dimensionless).

    Returns
    -------
    complex
        ``w(z)``. Upper half plane (``Im z >= 0``): Weideman's rational approximation,
        relative error below 1e-14. Lower half plane: ``2 exp(-z**2) - w(-z)``, whose
        relative error grows like ``|z|**2`` times rounding (the conditioning of ``w``
        there) and is unbounded near the zeros of ``w``.
    """
    x = real(z)
    y = imag(z)
    below = y < 0.0
    # Fold into the closed upper half plane: -z lies there whenever z does not. Clamping to
    # 1e300 keeps infinite parts finite below (w(1e300) ~ 6e-301 stands in for w(inf) = 0).
    x = minimum(maximum(where(below, -x, x), -_BIG), _BIG)
    y = minimum(where(below, -y, y), _BIG)
    wr, wi = _weideman(x, y)
    # Below the axis: w(z) = 2 exp(-z**2) - w(-z); x, y now hold -z, and exp(-z**2) is even.
    # Elsewhere the exponential is evaluated at 0 (finite, and cheap for libm). 2 exp(-z**2)
    # overflows when y**2 - x**2 > ~709.1, and so does w: Re, Im become +-inf, except that a
    # phase of exactly 0 (z on the negative imaginary axis, where w is real) keeps Im w = 0.
    xb = where(below, x, 0.0)
    yb = where(below, y, 0.0)
    mod = 2.0 * exp((yb - xb) * (yb + xb))
    phase = 2.0 * xb * yb
    wr = where(below, mod * cos(phase) - wr, wr)
    wi = where(below, where(phase == 0.0, 0.0, -(mod * sin(phase))) - wi, wi)
    return make_complex(wr, wi)


def _np_make_complex(re, im):
    re, im = np.broadcast_arrays(np.asarray(re, dtype=float), np.asarray(im, dtype=float))
    out = np.empty(re.shape, dtype=complex)
    out.real = re
    out.imag = im
    return out[()]


# ``re + 1j * im`` would turn an infinite ``im`` into a NaN real part (0 * inf), so the
# complex result is assembled from its parts by an op of its own.
make_complex = make_op(
    "make_complex", _np_make_complex, "jax.lax.complex", lambda re, im: complex(re, im)
)


def wofz_derivative(z, w):
    """``w'(z) = -2 z w(z) + 2 i / sqrt(pi)``, given ``w = w(z)`` (exact: from the ODE ``w``
    satisfies)."""
    return -2.0 * z * w + 1j * _TWO_OVER_SQRT_PI


@cache
def _jax_wofz_factory():
    """``wofz`` on JAX: ``wofz_point`` traced, with the exact derivative as a custom JVP.

    Built once (the op calls the factory on every JAX call). The JVP uses
    ``w'(z) = -2 z w(z) + 2 i / sqrt(pi)``, exact and finite wherever ``w`` is, ``z = 0``
    included; gradients never see the inside of the rational approximation.
    """
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def wofz_complex(z):
        return wofz_point(z)

    @wofz_complex.defjvp
    def _wofz_jvp(primals, tangents):
        (z,) = primals
        (dz,) = tangents
        w = wofz_complex(z)
        return w, wofz_derivative(z, w) * dz

    def wofz_jax(z):
        z = jnp.asarray(z)
        if not jnp.iscomplexobj(z):
            z = z.astype(jnp.result_type(z.dtype, jnp.complex64))
        return wofz_complex(z)

    return wofz_jax


wofz = make_op("wofz", scipy.special.wofz, _jax_wofz_factory, wofz_point)
wofz.__doc__ = """Faddeeva function ``w(z) = exp(-z**2) erfc(-i z)``, an op for one-source kernels.

On numpy arrays: ``scipy.special.wofz`` (the reference). On JAX arrays: :func:`wofz_point`
traced, with the exact derivative ``w'(z) = -2 z w(z) + 2 i / sqrt(pi)`` (custom JVP). Inside
numba-compiled code: :func:`wofz_point` on complex scalars.
"""


def _upper_numpy(x, y):
    w = scipy.special.wofz(_np_make_complex(x, y))
    return np.real(w), np.imag(w)


_weideman = pointwise(_upper_point)


@cache
def _jax_upper_factory():
    """``wofz_upper`` on JAX, real parts in and out, with the exact derivative as a custom
    JVP (``w'(z) dz``, as for :data:`wofz`)."""
    import jax

    @jax.custom_jvp
    def upper(x, y):
        return _upper_point(x, y)

    @upper.defjvp
    def _upper_jvp(primals, tangents):
        x, y = primals
        dx, dy = tangents
        wr, wi = upper(x, y)
        # w' = -2 z w + 2 i / sqrt(pi), times dz = dx + i dy
        dr = -2.0 * (x * wr - y * wi)
        di = -2.0 * (x * wi + y * wr) + _TWO_OVER_SQRT_PI
        return (wr, wi), (dr * dx - di * dy, dr * dy + di * dx)

    return upper


# inlined at numba's IR level: W1 (Shajib's Gaussian, two of these per point) ran slower with
# the op inlined by LLVM (see make_op)
wofz_upper = make_op("wofz_upper", _upper_numpy, _jax_upper_factory, _upper_point, inline="ir")
wofz_upper.__doc__ = """``(Re w, Im w)`` of the Faddeeva function at ``z = x + i y``, ``y >= 0``.

For callers that have already folded their argument into the closed upper half plane (Shajib's
Gaussian deflections): :data:`wofz` without the reflection below the axis, whose exponential,
cosine and sine cost as much as the rest and keep numba from vectorising the loop over points.
On numpy, ``scipy.special.wofz`` (the reference); on numba and JAX, Weideman's form (JAX with
the exact derivative as a custom JVP). The values equal :data:`wofz`'s bit for bit where
``y >= 0``.
"""


def wofz_parts(x, y):
    """Real and imaginary parts of ``w(x + i y)``: the per-point source of ``faddeeva.wofz``.

    Parameters
    ----------
    x, y : float or array_like
        Real and imaginary parts of ``z`` (dimensionless).

    Returns
    -------
    (re, im)
        ``Re w(z)`` and ``Im w(z)``.
    """
    w = wofz(make_complex(x, y))
    return real(w), imag(w)


# Kernel domains: |z| from 0 through subnormal-free tiny values to 1e8, on and just above the
# real axis (where Re w = exp(-x**2) underflows for |x| > 27) and out to where w ~ i/(sqrt(pi) z).
_X = Domain(
    -1e8,
    1e8,
    specials=(0.0, 1e-300, -1e-300, 1e-12, -1e-8, 0.5, -1.0, 2.0, 3.9, -5.5, 6.2, 9.5, -26.6,
              27.5, 1e3, -1e5, 1e8, -1e8),
)  # fmt: skip
_Y = Domain(
    0.0, 1e8, specials=(0.0, 1e-300, 1e-100, 1e-12, 1e-6, 0.1, 1.0, 3.0, 5.5, 10.0, 40.0, 1e4, 1e8)
)
# rtol: the accuracy reached (worst 2e-15 here, 4e-14 in scipy itself). atol: both
# implementations are accurate relative to |w| <= 1, not to each part, and a part can be far
# smaller than |w|: Re w = exp(-x**2) just above the real axis for |x| >~ 3, Im w near the
# imaginary axis. Measured absolute errors there reach 1.4e-16 (ours, Re w near x = 3.2) and
# 4.4e-16 (scipy, Im w near z = 0.09 + 5.04i).
_WOFZ_TOL = Tolerance(
    rtol=1e-13, atol=1e-15, why="parts far below |w| are accurate only relative to |w| <= 1"
)

WOFZ = register(
    Kernel(
        name="faddeeva.wofz",
        point=wofz_parts,
        inputs=(Arg("x", _X, "Re z"), Arg("y", _Y, "Im z >= 0")),
        params=(),
        outputs=("re", "im"),
        tol=_WOFZ_TOL,
        doc=wofz_parts.__doc__ or "",
    )
)

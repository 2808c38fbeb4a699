"""Elliptical Gaussian convergence: the math, as plain functions of one point.

Convention (shared with lenstronomy's ``GAUSSIAN_ELLIPSE_KAPPA``): in the profile frame, whose
x' axis is the major axis at angle ``phi``::

    kappa = kappa0 * exp(-(q x'^2 + y'^2 / q) / (2 sigma^2)),

so ``sigma`` is the dispersion along the intermediate axis (the circularised dispersion) and the
total mass is ``2 pi kappa0 sigma^2`` whatever ``q``. In the sky frame, with ellipticity
components ``(e1, e2)`` and ``E = [[e1, e2], [e2, -e1]]``, the quadratic form is::

    q x'^2 + y'^2 / q = theta^T M theta,   M = ((1 + |e|^2) I - 2 E) / (1 - |e|^2),

which is smooth in ``(e1, e2)``: gradients at ``e = (0, 0)`` are well defined.

Deflections come in three exact forms, each accurate where it is used:

* ``*_spherical`` (``q = 1``): closed form ``alpha = kappa0 theta (1 - exp(-s)) / s`` with
  ``s = r^2 / (2 sigma^2)``.
* ``*_elliptical`` (``1 - q`` not small): Shajib (2019), eq. 4.12-4.15, through the Faddeeva
  function. It subtracts two nearly equal terms as ``q -> 1`` and loses about
  ``1 / (1 - q^2)`` in relative accuracy, so it is used only for ``|e| >= E_SWITCH`` (0.02).
* ``*_near_round`` (``|e| < E_SWITCH``): the ellipsoid potential-theory integral
  ``alpha = int_0^1 kappa(u theta^T P^-1 theta) P^-1 theta / sqrt(det P) du`` with
  ``P(u) = I + u (M^-1 - I)``, smooth in ``(e1, e2)`` and exact for every ``q``; near ``q = 1``
  its integrand is ``exp(-a u)``, ``a = r^2 / (2 sigma^2)``, times a slowly varying factor, so a
  40-node Gauss-Legendre rule on ``[0, min(1, 38 / a)]`` integrates it to float64 accuracy
  (:mod:`twinlens.kernels.gaussian_homoeoid`, which also holds the potential's integral).

``deflections`` (and ``hessian``) take a traced ellipticity: on JAX they run the one form that
applies (``lax.cond``), elsewhere they blend the two with ``where``; profiles with concrete
parameters call the single form that applies.
"""

from __future__ import annotations

from functools import cache

from twinlens.backend import jax_runtime
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity
from twinlens.kernels.faddeeva import wofz_upper
from twinlens.kernels.gaussian_homoeoid import _near_round_sums, one_minus_exp_ratio, potential
from twinlens.kernels.geometry import (
    from_profile_frame,
    hessian_from_profile_frame,
    to_profile_frame,
)
from twinlens.kernels.ops import (
    arctan2,
    exp,
    exp_vectorised,
    make_op,
    pi,
    pointwise,
    sqrt,
    where,
)
from twinlens.kernels.registry import Kernel, KernelFamily, numba_by_form
from twinlens.kernels.tolerance import Tolerance

# |e| below which the near-round quadrature replaces Shajib's formula (1 - q < 0.04): there the
# formula's cancellation, a factor 1 / (1 - q^2), would cost more than one digit.
E_SWITCH = 0.02


@pointwise
def quadratic_form(dx, dy, e1, e2):
    """``q x'^2 + y'^2 / q`` at offsets ``(dx, dy)`` from the centre, from ``(e1, e2)``."""
    ee = e1 * e1 + e2 * e2
    # one division per profile, not per point (on a GPU a float64 division costs ~20 FMAs)
    scale = 1.0 / (1.0 - ee)
    return (
        (1.0 + ee) * (dx * dx + dy * dy) - 2.0 * (e1 * (dx * dx - dy * dy) + 2.0 * e2 * dx * dy)
    ) * scale


@pointwise
def one_minus_exp_ratio_derivative(s):
    """Derivative of ``(1 - exp(-s)) / s``; a series below ``s = 1e-3`` avoids cancellation."""
    small = s < 1e-3
    ss = where(small, 1.0, s)
    direct = (exp(-ss) - one_minus_exp_ratio(ss)) / ss
    series = -0.5 + s * (1.0 / 3.0 + s * (-1.0 / 8.0 + s * (1.0 / 30.0 - s / 144.0)))
    return where(small, series, direct)


# ------------------------------------------------------------------------------------------
# convergence


@pointwise
def convergence(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
    """Convergence of an elliptical Gaussian (all ``q``), dimensionless."""
    q2 = quadratic_form(x - centre_x, y - centre_y, e1, e2)
    return kappa0 * exp(-0.5 * q2 / (sigma * sigma))


# ------------------------------------------------------------------------------------------
# q = 1


@pointwise
def deflections_spherical(x, y, centre_x, centre_y, sigma, kappa0):
    """Deflections of a round Gaussian, arcsec (closed form)."""
    dx = x - centre_x
    dy = y - centre_y
    f = kappa0 * one_minus_exp_ratio(0.5 * (dx * dx + dy * dy) / (sigma * sigma))
    return f * dx, f * dy


@pointwise
def hessian_spherical(x, y, centre_x, centre_y, sigma, kappa0):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` of a round Gaussian's potential (closed form)."""
    dx = x - centre_x
    dy = y - centre_y
    inv_s2 = 1.0 / (sigma * sigma)
    s = 0.5 * (dx * dx + dy * dy) * inv_s2
    h = one_minus_exp_ratio(s)
    dh = one_minus_exp_ratio_derivative(s) * inv_s2
    return kappa0 * (h + dx * dx * dh), kappa0 * dx * dy * dh, kappa0 * (h + dy * dy * dh)


# ------------------------------------------------------------------------------------------
# 1 - q not small: Shajib (2019)


@pointwise
def _shajib_shape(q):
    # The q-only factors of Shajib's formula, computed once per point and shared by every
    # component of a multi-Gaussian expansion (square roots and divisions dominate the cost).
    one_m_q2 = 1.0 - q * q
    sqrt_q = sqrt(q)
    return one_m_q2, sqrt_q, q / (sqrt_q * sqrt(2.0 * one_m_q2)), sqrt(2.0 * pi / one_m_q2), 1.0 / q


@pointwise
def _shajib_terms(xp, yp, q, shape, sigma, kappa0):
    # Frame-local deflections and the complex function varsigma of Shajib (2019), eq. 4.12-4.15.
    # Points below the major axis are reflected (w is evaluated in the upper half plane only);
    # the reflection sign is +1 on the axis so that derivatives across it stay exact.
    one_m_q2, sqrt_q, p_unit, pref_unit, inv_q = shape
    s_ = sigma * sqrt_q
    p = p_unit / sigma
    ys = where(yp >= 0.0, 1.0, -1.0)
    big_x = p * xp
    big_y = p * ys * yp
    w1r, w1i = wofz_upper(big_x, big_y)
    w2r, w2i = wofz_upper(q * big_x, big_y * inv_q)
    damp = exp_vectorised(-big_x * big_x * one_m_q2 - big_y * big_y * (inv_q * inv_q - 1.0))
    vs_re = w1i - damp * w2i
    vs_im = (damp * w2r - w1r) * ys
    pref = kappa0 * s_ * pref_unit
    return pref * vs_re, -pref * vs_im, vs_re, vs_im, s_


@pointwise
def deflections_elliptical(x, y, centre_x, centre_y, q, phi, sigma, kappa0):
    """Deflections for ``q`` in ``[0.05, 0.99]`` (Shajib 2019), arcsec; ``phi`` in radians."""
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    ax, ay, _, _, _ = _shajib_terms(xp, yp, q, _shajib_shape(q), sigma, kappa0)
    return from_profile_frame(ax, ay, phi)


@pointwise
def hessian_elliptical(x, y, centre_x, centre_y, q, phi, sigma, kappa0):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` for ``q`` in ``[0.05, 0.99]`` (Shajib 2019)."""
    # frame-local: kappa plus the complex shear of Shajib (2019), eq. 4.18 (written out here,
    # not in a helper: each level of inlined helpers is typed again by numba, at compile cost)
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    shape = _shajib_shape(q)
    _, _, vs_re, vs_im, s_ = _shajib_terms(xp, yp, q, shape, sigma, kappa0)
    one_m_q2 = shape[0]
    kappa = kappa0 * exp(-(q * q * xp * xp + yp * yp) / (2.0 * s_ * s_))
    c = sqrt(2.0 * pi) * q * q * kappa0 / (s_ * sqrt(one_m_q2))
    # (xp - i yp) * (vs_re - i vs_im)
    prod_re = xp * vs_re - yp * vs_im
    prod_im = -(xp * vs_im + yp * vs_re)
    shear_re = -((1.0 + q * q) * kappa - 2.0 * q * kappa0 + c * prod_re) / one_m_q2
    shear_im = -(c * prod_im) / one_m_q2
    hxx, hxy, hyy = kappa + shear_re, shear_im, kappa - shear_re
    return hessian_from_profile_frame(hxx, hxy, hyy, phi)


# ------------------------------------------------------------------------------------------
# |e| small: the potential-theory integral, in (e1, e2)


@pointwise
def is_near_round(e1, e2):
    """True where ``|e| < E_SWITCH``: the near-round form applies (the one home of the switch)."""
    return e1 * e1 + e2 * e2 < E_SWITCH * E_SWITCH


@pointwise
def deflections_near_round(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
    """Deflections for ``|e| < E_SWITCH`` (``1 - q`` below 0.04), arcsec."""
    ax, ay, _, _, _ = _near_round_sums(x - centre_x, y - centre_y, e1, e2, sigma, kappa0)
    return ax, ay


@pointwise
def hessian_near_round(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` for ``|e| < E_SWITCH``."""
    _, _, hxx, hxy, hyy = _near_round_sums(x - centre_x, y - centre_y, e1, e2, sigma, kappa0)
    return hxx, hxy, hyy


# ------------------------------------------------------------------------------------------
# any ellipticity, possibly traced


@pointwise
def _branch_parameters(e1, e2):
    # The near-round flag, and (q, phi) for Shajib's branch with a harmless stand-in ellipticity
    # where that branch is not selected, so neither value nor gradient can become NaN there.
    near = is_near_round(e1, e2)
    f1 = where(near, 0.5, e1)
    f2 = where(near, 0.0, e2)
    e = sqrt(f1 * f1 + f2 * f2)
    return near, (1.0 - e) / (1.0 + e), 0.5 * arctan2(f2, f1)


def _blend_by_form(near_round_fn, elliptical_fn, name):
    """An op for a traced ellipticity: ``near_round_fn`` below ``E_SWITCH``, ``elliptical_fn``
    (given Shajib's ``(q, phi)``) above.

    On JAX a scalar ellipticity (a search's traced parameter) runs the near-round quadrature
    only where it applies, inside ``lax.cond``: computing it at every point cost many times
    Shajib's form alone. Shajib's form stays outside the ``cond`` (with the stand-in ellipticity
    of :func:`_branch_parameters` when near round), because XLA's CPU backend runs a ``cond``
    branch slower than the same work in the main program (measured on W1). Under
    ``vmap`` over parameters JAX turns the ``cond`` into a select of both branches, as before. numpy
    (the reference) and numba blend with ``where``; numba's kernels never reach this op, since
    with concrete parameters :func:`by_ellipticity` picks the form first.
    """

    def blend(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
        near, q, phi = _branch_parameters(e1, e2)
        n = near_round_fn(x, y, centre_x, centre_y, e1, e2, sigma, kappa0)
        s = elliptical_fn(x, y, centre_x, centre_y, q, phi, sigma, kappa0)
        return tuple([where(near, a, b) for a, b in zip(n, s)])  # noqa: B905 (numba)

    @cache
    def jax_factory():
        jax = jax_runtime.load()
        jnp = jax.numpy

        def run(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
            if jnp.ndim(e1) or jnp.ndim(e2):  # one ellipticity per point or row: blend
                return blend(x, y, centre_x, centre_y, e1, e2, sigma, kappa0)
            args = (x, y, centre_x, centre_y, e1, e2, sigma, kappa0)
            shape = jnp.broadcast_shapes(*(jnp.shape(a) for a in args))
            near, q, phi = _branch_parameters(e1, e2)
            far = elliptical_fn(x, y, centre_x, centre_y, q, phi, sigma, kappa0)
            far = tuple(jnp.broadcast_to(o, shape) for o in far)

            # checkpointed: reverse mode then keeps only this branch's inputs as residuals; a
            # cond's residuals are the union of both branches', zero-filled for the branch not
            # taken, and the quadrature's (40 x points arrays) made every gradient many times slower
            @jax.checkpoint
            def near_round(*a):
                return tuple(jnp.broadcast_to(o, shape) for o in near_round_fn(*a))

            def skipped(*a):
                return tuple(jnp.zeros(shape, o.dtype) for o in far)

            close = jax.lax.cond(near, near_round, skipped, *args)
            return tuple(where(near, a, b) for a, b in zip(close, far, strict=True))

        return run

    return make_op(name, blend, jax_factory, blend, inline=False)


_deflections_by_form = _blend_by_form(
    deflections_near_round, deflections_elliptical, "_deflections_by_form"
)
_hessian_by_form = _blend_by_form(hessian_near_round, hessian_elliptical, "_hessian_by_form")


@pointwise
def deflections(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
    """Deflections for any ellipticity ``|e| < 1``, arcsec: the near-round integral below
    ``E_SWITCH``, Shajib's formula above; differentiable in every parameter."""
    return _deflections_by_form(x, y, centre_x, centre_y, e1, e2, sigma, kappa0)


@pointwise
def hessian(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` for any ellipticity ``|e| < 1``."""
    return _hessian_by_form(x, y, centre_x, centre_y, e1, e2, sigma, kappa0)


# ------------------------------------------------------------------------------------------
# registry

_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_SIGMA = Domain(1e-3, 10.0, specials=(1e-3, 10.0, 0.5), log=True)
_KAPPA0 = Domain(0.01, 10.0, specials=(1.0,))
_E_ANY = Domain(-0.6, 0.6, specials=(0.0, 1e-9, -1e-12, 0.0141, 0.0142, -0.6, 0.3))
_E_ROUND = Domain(-0.014, 0.014, specials=(0.0, 1e-9, -1e-12, 0.014, -0.007))
_Q = Domain(0.05, 0.96, specials=(0.05, 0.96, 0.7))
_PHI = Domain(-pi, pi, specials=(0.0, pi / 2, -pi / 4, pi))
# Deflections are vectors: each point's error is measured against |alpha| (a component that
# vanishes because of the frame's orientation has no relative precision of its own). Near the
# centre Shajib's varsigma = w(z1) - E w(z2) cancels to O(r): the absolute error there is a few
# ulp of the deflection scale kappa0 sigma, hence a floor of 1e-14 kappa0 sigma (atol_scale).
# varsigma cancels near the centre: measured 1.1e-14 of kappa0 sigma on a zero component there
_TOL = Tolerance(rtol=1e-12, atol=3e-14, norm=True, why="varsigma cancels near the centre")
# Shajib's shear subtracts terms of order kappa0 to give the far-field shear, which falls as
# 1 / r^2: the absolute error there is about 1e-13 kappa0.
_TOL_HESSIAN = Tolerance(
    rtol=1e-12, atol=3e-13, norm=True, why="far-field cancellation in Shajib's shear, ~1e-13 kappa0"
)


def _deflection_scale(kappa0, sigma, **_):
    return kappa0 * sigma


def _hessian_scale(kappa0, **_):
    return kappa0


def by_ellipticity(near_round: Kernel, elliptical: Kernel):
    """The numba implementation of a blended kernel (``deflections``, ``hessian``) from its two
    exact forms, chosen by the concrete ellipticity
    (:func:`~twinlens.kernels.registry.numba_by_form`)."""

    def choose(e1, e2):
        if is_near_round(e1, e2):
            return near_round, (e1, e2)
        q, phi = axis_ratio_from_ellipticity(e1, e2)
        return elliptical, (float(q), float(phi))

    return numba_by_form(choose, 2)


_FAMILY = KernelFamily("gaussian", _XY, tol=_TOL, atol_scale=_deflection_scale)
_HESSIANS = _FAMILY.variant(tol=_TOL_HESSIAN, atol_scale=_hessian_scale)
_C = (Arg("centre_x", _CENTRE), Arg("centre_y", _CENTRE))
_S = (Arg("sigma", _SIGMA), Arg("kappa0", _KAPPA0))
_A = ("alpha_x", "alpha_y")
_H = ("psi_xx", "psi_xy", "psi_yy")
_QP = (Arg("q", _Q), Arg("phi", _PHI))
_ER = (Arg("e1", _E_ROUND), Arg("e2", _E_ROUND))
_EA = (Arg("e1", _E_ANY), Arg("e2", _E_ANY))
# the params of each form
_SPHERICAL = (*_C, *_S)
_ELLIPTICAL = (*_C, *_QP, *_S)
_NEAR_ROUND = (*_C, *_ER, *_S)
_ANY = (*_C, *_EA, *_S)
CONVERGENCE = _FAMILY.register(
    "convergence", convergence, ("kappa",), params=_ANY, atol_scale=_hessian_scale
)
DEFLECTIONS_SPHERICAL = _FAMILY.register(
    "deflections_spherical", deflections_spherical, _A, params=_SPHERICAL
)
HESSIAN_SPHERICAL = _HESSIANS.register(
    "hessian_spherical", hessian_spherical, _H, params=_SPHERICAL
)
DEFLECTIONS_ELLIPTICAL = _FAMILY.register(
    "deflections_elliptical", deflections_elliptical, _A, params=_ELLIPTICAL
)
HESSIAN_ELLIPTICAL = _HESSIANS.register(
    "hessian_elliptical", hessian_elliptical, _H, params=_ELLIPTICAL
)
DEFLECTIONS_NEAR_ROUND = _FAMILY.register(
    "deflections_near_round", deflections_near_round, _A, params=_NEAR_ROUND
)
HESSIAN_NEAR_ROUND = _HESSIANS.register(
    "hessian_near_round", hessian_near_round, _H, params=_NEAR_ROUND
)
DEFLECTIONS = _FAMILY.register(
    "deflections",
    deflections,
    _A,
    params=_ANY,
    impls={"numba": by_ellipticity(DEFLECTIONS_NEAR_ROUND, DEFLECTIONS_ELLIPTICAL)},
)
HESSIAN = _HESSIANS.register(
    "hessian",
    hessian,
    _H,
    params=_ANY,
    impls={"numba": by_ellipticity(HESSIAN_NEAR_ROUND, HESSIAN_ELLIPTICAL)},
)
POTENTIAL = _FAMILY.register(
    "potential",
    potential,
    ("psi",),
    params=_ANY,
    atol_scale=lambda kappa0, sigma, **_: kappa0 * sigma**2,
)

#: The kernel for each ``(quantity, form)``. Forms: ``spherical`` (ellipticity exactly 0),
#: ``elliptical`` (a known ``(q, phi)``, Shajib's closed form), ``near_round`` (``(e1, e2)``
#: within :func:`is_near_round`, the homoeoid quadrature) and ``traced`` (``(e1, e2)`` of any
#: size, either form chosen per point; for JAX tracers). The convergence and the potential have
#: one form, ``traced``.
KERNELS = _FAMILY.by_form()

"""Isothermal mass: SIS, SIE and the cored NIE, as plain functions of one point.

Convention (lenstronomy's SIE and NIE; ``theta_E``, the argument ``einstein_radius``, is the
intermediate-axis Einstein radius; ``s`` is the argument ``core_radius``)::

    kappa = theta_E / (2 sqrt(q x'^2 + y'^2 / q + s^2)),

with ``x'`` along the major axis and ``s`` the core radius (``s = 0``: the SIE, exactly
isothermal, with no hidden core). Writing ``s_K = s / sqrt(q)``, ``eps = sqrt(1 - q^2)``,
``psi = sqrt(q^2 (x'^2 + s_K^2) + y'^2)`` and ``A = theta_E sqrt(q)``, the deflection is
(Keeton & Kochanek 1998; Keeton 2001)::

    alpha_x' = A / eps * arctan(eps x' / (psi + s_K)),
    alpha_y' = A / eps * arctanh(eps y' / (psi + q^2 s_K)),

evaluated as ``A u f(eps u)`` with ``f(z) = arctan(z) / z`` (and ``arctanh(z) / z``), smooth
through ``z = 0`` (:mod:`twinlens.kernels.inverse_trig`): the same expression is exact at
``q = 1`` and as ``q -> 1``, with derivatives in ``q`` free of the ``1 / eps`` cancellation.
The hessian and potential follow in closed form from the same quantities.

At the centre of a singular profile (``s = 0``, ``r = 0``) the squared radius is floored at
``1e-60`` (r = 1e-30, so that derivatives stay finite): the deflection there is 0 (the
average over directions) and the convergence a huge finite number, never NaN. The deflection
is discontinuous there (its size is ``theta_E`` in every direction), so it has no derivative:
at the exact centre the kernels compute from offsets held constant
(:func:`~twinlens.kernels.geometry.held_at_centre`), and the JAX derivatives of the deflection
and potential with respect to the position and the centre are 0 there (the derivative of the
value returned, held fixed), not ``theta_E / 1e-30``. With a core the centre is smooth and its
derivatives are the true ones.

For a traced ellipticity (JAX), ``(q, phi)`` come from ``(e1, e2)`` inside the kernel. At
``e = (0, 0)`` the angle is undefined although the field is smooth in ``(e1, e2)``, so below
``|e| = E_TAYLOR`` the deflection is the first-order expansion in ``(e1, e2)`` of the
homoeoid integral (exact gradients at ``e = 0``; the neglected second order is below 1e-13
relative there).
"""

from __future__ import annotations

from typing import Any

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity
from twinlens.kernels.gaussian import quadratic_form
from twinlens.kernels.geometry import (
    from_profile_frame,
    held_at_centre,
    hessian_from_profile_frame,
    to_profile_frame,
)
from twinlens.kernels.inverse_trig import arctan_ratio, arctanh_ratio
from twinlens.kernels.ops import log, maximum, pi, pointwise, sqrt, where
from twinlens.kernels.registry import Kernel, KernelFamily, get, numba_by_form
from twinlens.kernels.tolerance import Tolerance

#: |e| below which a traced ellipticity uses the first-order expansion (see the module notes)
E_TAYLOR = 1e-7
#: the floor of squared radii at the centre of a singular profile
R2_FLOOR = 1e-60
#: |e|^2 below which the traced hessian and potential take the round form (|e| < 1e-30)
E2_ROUND = 1e-60


@pointwise
def _shape(q, einstein_radius, core_radius):
    # Per-profile constants: eps^2 = (1 - q)(1 + q) (exact as q -> 1), A, s_K.
    eps2 = (1.0 - q) * (1.0 + q)
    return sqrt(eps2), einstein_radius * sqrt(q), core_radius / sqrt(q)


@pointwise
def _frame_terms(xp, yp, q, eps, core_k):
    # psi, and the arguments u, v of the arctan and arctanh terms
    psi = sqrt(maximum(q * q * (xp * xp + core_k * core_k) + yp * yp, R2_FLOOR))
    u = xp / (psi + core_k)
    v = yp / (psi + q * q * core_k)
    return psi, u, v


@pointwise
def convergence(x, y, centre_x, centre_y, e1, e2, einstein_radius, core_radius):
    """Convergence (dimensionless), all ``q``."""
    xi = quadratic_form(x - centre_x, y - centre_y, e1, e2) + core_radius * core_radius
    return 0.5 * einstein_radius / sqrt(maximum(xi, R2_FLOOR))


# ------------------------------------------------------------------------------------------
# q = 1


@pointwise
def _round_factor(w, einstein_radius, core_radius):
    # alpha = g theta with g = theta_E / (S + s), S = sqrt(r^2 + s^2); and dg / d(r^2)
    big_s = sqrt(maximum(w + core_radius * core_radius, R2_FLOOR))
    g = einstein_radius / (big_s + core_radius)
    return g, -0.5 * g / (big_s * (big_s + core_radius)), big_s


@pointwise
def deflections_spherical(x, y, centre_x, centre_y, einstein_radius, core_radius):
    """Deflections of the round profile, arcsec."""
    dx, dy = held_at_centre(x - centre_x, y - centre_y, core_radius)
    g, _, _ = _round_factor(dx * dx + dy * dy, einstein_radius, core_radius)
    return g * dx, g * dy


@pointwise
def hessian_spherical(x, y, centre_x, centre_y, einstein_radius, core_radius):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` of the round profile."""
    dx = x - centre_x
    dy = y - centre_y
    g, dg, _ = _round_factor(dx * dx + dy * dy, einstein_radius, core_radius)
    return g + 2.0 * dg * dx * dx, 2.0 * dg * dx * dy, g + 2.0 * dg * dy * dy


@pointwise
def _log_core_term(big_s, core_radius, tiny_core):
    # s ln((s + S) / (2 * s)), which -> 0 as s -> 0 (safe at s = 0 on every backend)
    safe = where(tiny_core, 1.0, core_radius)
    return where(tiny_core, 0.0, core_radius * log((safe + big_s) / (2.0 * safe)))


@pointwise
def potential_spherical(x, y, centre_x, centre_y, einstein_radius, core_radius):
    """Potential of the round profile, arcsec^2, zero at the centre."""
    dx = x - centre_x
    dy = y - centre_y
    _, _, big_s = _round_factor(dx * dx + dy * dy, einstein_radius, core_radius)
    return einstein_radius * (
        big_s - core_radius - _log_core_term(big_s, core_radius, core_radius <= 0.0)
    )


# ------------------------------------------------------------------------------------------
# any q in (0, 1], (q, phi) known


@pointwise
def _deflections_frame(xp, yp, q, eps, amp, core_k):
    # held: d u / d xp = 1 / psi would be 1e30 at the floored centre of a singular profile
    xp, yp = held_at_centre(xp, yp, core_k)
    _, u, v = _frame_terms(xp, yp, q, eps, core_k)
    return amp * u * arctan_ratio(eps * u), amp * v * arctanh_ratio(eps * v)


@pointwise
def deflections_elliptical(x, y, centre_x, centre_y, q, phi, einstein_radius, core_radius):
    """Deflections for axis ratio ``q`` in (0, 1] and angle ``phi`` (radians), arcsec."""
    eps, amp, core_k = _shape(q, einstein_radius, core_radius)
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    ax, ay = _deflections_frame(xp, yp, q, eps, amp, core_k)
    return from_profile_frame(ax, ay, phi)


@pointwise
def _hessian_frame(xp, yp, q, eps, amp, core_k):
    psi, _, _ = _frame_terms(xp, yp, q, eps, core_k)
    r2 = xp * xp + yp * yp
    d1 = (1.0 + q * q) * core_k * core_k + 2.0 * core_k * psi + r2
    c = amp / (psi * maximum(d1, R2_FLOOR))
    return (
        c * (q * q * core_k * core_k + yp * yp + core_k * psi),
        -c * xp * yp,
        c * (core_k * core_k + xp * xp + core_k * psi),
    )


@pointwise
def hessian_elliptical(x, y, centre_x, centre_y, q, phi, einstein_radius, core_radius):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` for ``q`` in (0, 1]."""
    eps, amp, core_k = _shape(q, einstein_radius, core_radius)
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    hxx, hxy, hyy = _hessian_frame(xp, yp, q, eps, amp, core_k)
    return hessian_from_profile_frame(hxx, hxy, hyy, phi)


@pointwise
def _potential_frame(xp, yp, q, eps, amp, core_k):
    # psi = x ax + y ay - A s_K ln(sqrt(D1) / ((1 + q) s_K)), zero at the centre
    ax, ay = _deflections_frame(xp, yp, q, eps, amp, core_k)
    psi, _, _ = _frame_terms(xp, yp, q, eps, core_k)
    d1 = (1.0 + q * q) * core_k * core_k + 2.0 * core_k * psi + xp * xp + yp * yp
    tiny = core_k <= 0.0
    safe = where(tiny, 1.0, core_k)
    # d1 = 0 at the centre of a singular profile: a stand-in keeps log's gradient finite there
    log_term = where(tiny, 0.0, core_k * log(sqrt(where(tiny, 1.0, d1)) / ((1.0 + q) * safe)))
    return xp * ax + yp * ay - amp * log_term


@pointwise
def potential_elliptical(x, y, centre_x, centre_y, q, phi, einstein_radius, core_radius):
    """Potential for ``q`` in (0, 1], arcsec^2, zero at the centre."""
    eps, amp, core_k = _shape(q, einstein_radius, core_radius)
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    return _potential_frame(xp, yp, q, eps, amp, core_k)


# ------------------------------------------------------------------------------------------
# traced (e1, e2)


@pointwise
def _first_order_terms(xp, yp, e1, e2, einstein_radius, core_radius, psi):
    # The first-order change in (e1, e2) of the deflection about the round profile:
    # alpha ~ theta I0 - 2 E theta I1 - 2 theta (theta^T E theta) I2, from the homoeoid integral
    # alpha = int_0^1 kappa(u theta^T P^-1 theta) P^-1 theta / sqrt(det P) du expanded to first
    # order in E = [[e1, e2], [e2, -e1]], with I_k = int_0^1 u^k kappa(u r^2) du (k = 0, 1) and
    # I2 = int_0^1 u^2 kappa'(u r^2) du, in closed form for kappa(w) = theta_E / (2 sqrt(w + s^2)).
    # theta I0 is the round deflection; psi is S = sqrt(r^2 + s^2) when q = 1, phi = 0.
    sc = psi + core_radius
    inv = einstein_radius / (6.0 * psi * sc * sc * sc)  # one division for I1 and I2
    i1 = 2.0 * (psi + 2.0 * core_radius) * psi * sc * inv
    i2 = -(psi + 3.0 * core_radius) * inv
    ex = e1 * xp + e2 * yp
    ey = e2 * xp - e1 * yp
    quad = xp * ex + yp * ey
    return -2.0 * (ex * i1 + xp * quad * i2), -2.0 * (ey * i1 + yp * quad * i2)


@pointwise
def _safe_axis_ratio(e1, e2, tiny):
    # (q, phi) away from e = 0, with a harmless stand-in ellipticity where |e| is tiny
    return axis_ratio_from_ellipticity(where(tiny, 0.1, e1), where(tiny, 0.0, e2))


@pointwise
def deflections(x, y, centre_x, centre_y, e1, e2, einstein_radius, core_radius):
    """Deflections from ``(e1, e2)``, smooth (with exact gradients) through ``e = 0``."""
    # Below E_TAYLOR the elliptical form runs at q = 1, phi = 0 (the round deflection) and the
    # first-order terms in (e1, e2) are added: one evaluation per point on either side of the
    # switch, not the elliptical and the expanded forms both (a GPU pays for both under vmap).
    tiny = e1 * e1 + e2 * e2 < E_TAYLOR * E_TAYLOR
    q, phi = _safe_axis_ratio(e1, e2, tiny)
    eps, amp, core_k = _shape(q, einstein_radius, core_radius)
    # the round values set after _shape: eps = sqrt(1 - q^2) has no derivative at q = 1
    q = where(tiny, 1.0, q)
    phi = where(tiny, 0.0, phi)
    eps = where(tiny, 0.0, eps)
    amp = where(tiny, einstein_radius, amp)
    core_k = where(tiny, core_radius, core_k)
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    xp, yp = held_at_centre(xp, yp, core_k)
    psi, u, v = _frame_terms(xp, yp, q, eps, core_k)
    tx, ty = _first_order_terms(xp, yp, e1, e2, einstein_radius, core_radius, psi)
    ax = amp * u * arctan_ratio(eps * u) + where(tiny, tx, 0.0)
    ay = amp * v * arctanh_ratio(eps * v) + where(tiny, ty, 0.0)
    return from_profile_frame(ax, ay, phi)


@pointwise
def hessian(x, y, centre_x, centre_y, e1, e2, einstein_radius, core_radius):
    """Hessian from ``(e1, e2)``; exact values for every ``e`` (round below ``|e| = 1e-30``).

    Its derivatives with respect to ``(e1, e2)`` lose accuracy for ``|e| < 1e-8`` (through the
    undefined angle); the deflections' do not."""
    tiny = e1 * e1 + e2 * e2 < E2_ROUND
    q, phi = _safe_axis_ratio(e1, e2, tiny)
    exx, exy, eyy = hessian_elliptical(
        x, y, centre_x, centre_y, q, phi, einstein_radius, core_radius
    )
    rxx, rxy, ryy = hessian_spherical(x, y, centre_x, centre_y, einstein_radius, core_radius)
    return where(tiny, rxx, exx), where(tiny, rxy, exy), where(tiny, ryy, eyy)


@pointwise
def potential(x, y, centre_x, centre_y, e1, e2, einstein_radius, core_radius):
    """Potential from ``(e1, e2)``, arcsec^2 (the same caveat on ellipticity gradients as
    :func:`hessian`)."""
    tiny = e1 * e1 + e2 * e2 < E2_ROUND
    q, phi = _safe_axis_ratio(e1, e2, tiny)
    out = potential_elliptical(x, y, centre_x, centre_y, q, phi, einstein_radius, core_radius)
    return where(
        tiny, potential_spherical(x, y, centre_x, centre_y, einstein_radius, core_radius), out
    )


# ------------------------------------------------------------------------------------------
# registry

_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_E = Domain(-0.6, 0.6, specials=(0.0, 1e-9, -1e-12, 1e-7, 0.3, -0.6))
_Q = Domain(0.05, 1.0, specials=(0.05, 1.0, 1.0 - 1e-8, 0.7))
_PHI = Domain(-pi, pi, specials=(0.0, pi / 2, -pi / 4, pi))
_THETA_E = Domain(0.01, 10.0, specials=(1.0, 0.01, 10.0), log=True)
_CORE = Domain(0.0, 1.0, specials=(0.0, 1e-8, 0.05, 1.0))
# Components cancel to zero on the axes (the frame's rotation), so errors are measured against
# the norm of the vector; the floor is relative to theta_E.
_TOL = Tolerance(rtol=1e-12, atol=1e-14, norm=True, why="components vanish on the axes")
# The hessian and convergence grow as 1 / r at the centre of an SIE, up to 1e30 at the floor.
_TOL_H = Tolerance(rtol=1e-12, atol=1e-13, norm=True, why="1 / r growth and cancellation on axes")
# The potential subtracts two terms of size theta_E r when the core is large.
_TOL_P = Tolerance(rtol=1e-11, atol=1e-13, why="the core term cancels x alpha_x + y alpha_y")


# the absolute floors are relative to theta_E
_FAMILY = KernelFamily(
    "isothermal", _XY, tol=_TOL, atol_scale=lambda einstein_radius, **_: einstein_radius
)


def _params(*shape: Arg) -> tuple[Arg, ...]:
    # the shape parameters (none, (q, phi) or (e1, e2)) between the centre and the radii
    return (
        Arg("centre_x", _CENTRE),
        Arg("centre_y", _CENTRE),
        *shape,
        Arg("einstein_radius", _THETA_E),
        Arg("core_radius", _CORE),
    )


def _register_traced(name: str, point: Any, outputs: tuple[str, ...], tol: Tolerance) -> Kernel:
    # numba's form of a traced kernel: the round or the elliptical kernel, chosen once per call
    # (the blend by `where` is for tracers, and slow for numba to compile).
    # The round one below the point functions' E2_ROUND: at the centre of an SIE the hessian
    # depends on the direction, which a q within 1e-30 of 1 still picks. The deflections' first
    # order below E_TAYLOR agrees with the elliptical form to its neglected second order.
    spherical, elliptical = (
        get(f"isothermal.{name}_{form}") for form in ("spherical", "elliptical")
    )

    def choose(e1, e2):
        if e1 * e1 + e2 * e2 < E2_ROUND:
            return spherical, ()
        q, phi = axis_ratio_from_ellipticity(e1, e2)
        return elliptical, (float(q), float(phi))

    return _FAMILY.register(
        name, point, outputs, params=_EA, tol=tol, impls={"numba": numba_by_form(choose, 2)}
    )


# the params of each form: (e1, e2), (q, phi) or round
_EA = _params(Arg("e1", _E), Arg("e2", _E))
_QP = _params(Arg("q", _Q), Arg("phi", _PHI))
_ROUND = _params()
_A = ("alpha_x", "alpha_y")
_H = ("psi_xx", "psi_xy", "psi_yy")
_P = ("psi",)
CONVERGENCE = _FAMILY.register("convergence", convergence, ("kappa",), params=_EA, tol=_TOL_H)
DEFLECTIONS_SPHERICAL = _FAMILY.register(
    "deflections_spherical", deflections_spherical, _A, params=_ROUND
)
HESSIAN_SPHERICAL = _FAMILY.register(
    "hessian_spherical", hessian_spherical, _H, params=_ROUND, tol=_TOL_H
)
POTENTIAL_SPHERICAL = _FAMILY.register(
    "potential_spherical", potential_spherical, _P, params=_ROUND, tol=_TOL_P
)
DEFLECTIONS_ELLIPTICAL = _FAMILY.register(
    "deflections_elliptical", deflections_elliptical, _A, params=_QP
)
HESSIAN_ELLIPTICAL = _FAMILY.register(
    "hessian_elliptical", hessian_elliptical, _H, params=_QP, tol=_TOL_H
)
POTENTIAL_ELLIPTICAL = _FAMILY.register(
    "potential_elliptical", potential_elliptical, _P, params=_QP, tol=_TOL_P
)
DEFLECTIONS = _register_traced("deflections", deflections, _A, _TOL)
HESSIAN = _register_traced("hessian", hessian, _H, _TOL_H)
POTENTIAL = _register_traced("potential", potential, _P, _TOL_P)

#: The kernel for each ``(quantity, form)``. Forms: ``spherical`` (ellipticity exactly 0; no
#: shape parameters), ``elliptical`` (a known ``(q, phi)``) and ``traced`` (``(e1, e2)``, smooth
#: through ``e = 0``, for JAX tracers). The convergence has one form, ``traced``, exact for all.
KERNELS = _FAMILY.by_form()

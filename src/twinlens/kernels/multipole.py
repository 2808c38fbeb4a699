"""Multipoles: circular (lenstronomy ``MULTIPOLE``) and elliptical (``MULTIPOLE_ELL``).

Circular multipole of order ``m`` (Xu et al. 2013, appendix B; lenstronomy's ``MULTIPOLE``),
with ``(r, phi)`` the polar coordinates about the centre and ``Delta = phi - phi_m``::

    kappa = a_m cos(m Delta) / (2 r)                                   (every m >= 1)
    psi   = a_m r cos(m Delta) / (1 - m^2)                              (m >= 2)
    psi   = (a_m / 2) r ln(r / r_E) cos(Delta)                          (m = 1)

Elliptical multipole (Paugnat & Gilman 2025; lenstronomy's ``MULTIPOLE_ELL``): in the frame of
a reference ellipse of axis ratio ``q`` whose major axis lies at ``phi_ref`` (``x'`` along it),
with elliptical radius ``R = sqrt(q x'^2 + y'^2 / q)`` and eccentric anomaly
``varphi = arctan2(y', q x')``::

    kappa = a_m cos(m (varphi - phi_m)) / (2 R).

``phi_m`` is measured in the reference frame (an eccentric anomaly); at ``q = 1`` the elliptical
multipole is the circular one with orientation ``phi_ref + phi_m``.

The potential is ``psi = a_m [r P(phi') + (r ln(r / r_E) / 2)(c1 cos phi' + s1 sin phi')]``:
``P`` solves ``P'' + P = g - c1 cos - s1 sin`` with ``g = 2 r kappa / a_m``, and ``(c1, s1)`` is
the first angular harmonic of ``g`` (non-zero for odd ``m`` only: the resonant part, which needs
the logarithm). ``P`` is fixed up to ``A cos + B sin`` (a uniform deflection); twinlens takes
the gauge in which ``P`` has **no first harmonic** (at ``q = 1`` this is the circular
multipole's). lenstronomy's closed forms carry an extra first harmonic, a uniform deflection
that vanishes as ``q -> 1``; :func:`lenstronomy_gauge` gives it, for converters.

``P`` and ``P'`` come from closed forms (Paugnat & Gilman 2025, as in lenstronomy, written here
in Cartesian form) for ``q <= 1 - Q_SWITCH``; closer to round those subtract terms of order
``(1 - q^2)^-2`` and lose precision, so there ``P = (1/2pi) int_0^2pi K(u) g(phi - u) du`` with
the Green's function ``K(u) = (pi - u) sin u - cos(u) / 2`` of ``P'' + P`` (first harmonic
removed), by a fixed ``N_GL``-node Gauss-Legendre rule, accurate to 1e-13 relative for
``q >= 1 - Q_SWITCH`` (``g`` is then nearly a pure harmonic). The hessian and convergence are
closed-form for every ``q``: ``H = (g / r) e_phi e_phi^T + (c1 / 2r) [[c, s], [s, -c]] +
(s1 / 2r) [[-s, c], [c, s]]`` in the reference frame.

At the centre (``r = 0``) every quantity returns 0 (the mean over directions of the bounded
terms; the logarithmically divergent deflection of odd ``m`` is set to 0 too); every ``where``
has finite branches, so JAX gradients are finite there.

The kernels' arguments ``amplitude`` and ``einstein_radius`` are ``a_m`` and ``r_E`` above (the
profiles' field names); ``phi_m`` and ``phi_ref`` are in radians (the profiles hold degrees).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from twinlens.backend import jax_runtime
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.geometry import from_profile_frame, to_profile_frame
from twinlens.kernels.multipole_closed import _closed_p, _fhat_odd
from twinlens.kernels.ops import (
    arctan2,
    cos,
    log,
    make_op,
    pi,
    pointwise,
    sin,
    sqrt,
    where,
)
from twinlens.kernels.registry import Kernel, KernelFamily, numba_by_form
from twinlens.kernels.tolerance import Tolerance

#: the near-round quadrature serves ``1 - Q_SWITCH < q <= 1``; closed forms serve the rest
Q_SWITCH = 0.1
#: Gauss-Legendre nodes of the near-round quadrature over [0, 2 pi]
N_GL = 48
#: the orders the elliptical multipole supports
ELLIPTICAL_ORDERS = (1, 3, 4)

_T, _W = np.polynomial.legendre.leggauss(N_GL)
_U = pi * (_T + 1.0)  # nodes on [0, 2 pi]
_WK = _W * pi / (2.0 * pi) * ((pi - _U) * np.sin(_U) - 0.5 * np.cos(_U))  # w K(u) / 2pi
_WKP = _W * pi / (2.0 * pi) * ((pi - _U) * np.cos(_U) - 0.5 * np.sin(_U))  # w K'(u) / 2pi
_CU = np.cos(_U)
_SU = np.sin(_U)


@pointwise
def _polar(dx, dy):
    # (r, cos phi, sin phi, inside) with finite stand-ins at r = 0
    r2 = dx * dx + dy * dy
    inside = r2 > 0.0
    r = sqrt(where(inside, r2, 1.0))
    return r, where(inside, dx / r, 1.0), where(inside, dy / r, 0.0), inside


# ------------------------------------------------------------------------------------------
# circular multipole


@pointwise
def convergence(x, y, centre_x, centre_y, m, amplitude, phi_m):
    """Convergence ``a_m cos(m (phi - phi_m)) / (2 r)`` (any ``m >= 1``); 0 at the centre."""
    r, c, s, inside = _polar(x - centre_x, y - centre_y)
    return where(inside, 0.5 * amplitude * cos(m * (arctan2(s, c) - phi_m)) / r, 0.0)


@pointwise
def deflections(x, y, centre_x, centre_y, m, amplitude, phi_m):
    """Deflections for ``m >= 2``, arcsec: ``a_m / (1 - m^2) (cos(m D) e_r - m sin(m D)
    e_phi)``, ``D = phi - phi_m``; 0 at the centre."""
    _, c, s, inside = _polar(x - centre_x, y - centre_y)
    d = m * (arctan2(s, c) - phi_m)
    f = amplitude / (1.0 - m * m)
    ar = f * cos(d)
    ap = -f * m * sin(d)
    return where(inside, ar * c - ap * s, 0.0), where(inside, ar * s + ap * c, 0.0)


@pointwise
def hessian(x, y, centre_x, centre_y, m, amplitude, phi_m):
    """Hessian for ``m >= 2``: ``a_m cos(m D) / r e_phi e_phi^T``; 0 at the centre."""
    r, c, s, inside = _polar(x - centre_x, y - centre_y)
    h = where(inside, amplitude * cos(m * (arctan2(s, c) - phi_m)) / r, 0.0)
    return h * s * s, -h * c * s, h * c * c


@pointwise
def potential(x, y, centre_x, centre_y, m, amplitude, phi_m):
    """Potential ``a_m r cos(m D) / (1 - m^2)`` for ``m >= 2``, arcsec^2; 0 at the centre."""
    r, c, s, inside = _polar(x - centre_x, y - centre_y)
    return where(inside, amplitude * r * cos(m * (arctan2(s, c) - phi_m)) / (1.0 - m * m), 0.0)


@pointwise
def deflections_m1(x, y, centre_x, centre_y, amplitude, phi_m, einstein_radius):
    """Deflections for ``m = 1``, arcsec: ``(a_m / 2) (ln(r / r_E) (cos phi_m, sin phi_m) +
    cos(D) (cos phi, sin phi))``; 0 at the centre."""
    r, c, s, inside = _polar(x - centre_x, y - centre_y)
    cm = cos(phi_m)
    sm = sin(phi_m)
    lr = log(r / einstein_radius)
    u = c * cm + s * sm
    ax = 0.5 * amplitude * (cm * lr + u * c)
    ay = 0.5 * amplitude * (sm * lr + u * s)
    return where(inside, ax, 0.0), where(inside, ay, 0.0)


@pointwise
def hessian_m1(x, y, centre_x, centre_y, amplitude, phi_m, einstein_radius):
    """Hessian for ``m = 1`` (independent of ``r_E``); 0 at the centre."""
    r, c, s, inside = _polar(x - centre_x, y - centre_y)
    cm = cos(phi_m)
    sm = sin(phi_m)
    u = c * cm + s * sm
    f = where(inside, 0.5 * amplitude / r, 0.0)
    # psi = (a_m / 2) ln(r / r_E) (x cm + y sm), differentiated twice
    hxx = f * (u + 2.0 * c * cm - 2.0 * c * c * u)
    hxy = f * (c * sm + s * cm - 2.0 * c * s * u)
    hyy = f * (u + 2.0 * s * sm - 2.0 * s * s * u)
    return hxx, hxy, hyy


@pointwise
def potential_m1(x, y, centre_x, centre_y, amplitude, phi_m, einstein_radius):
    """Potential ``(a_m / 2) r ln(r / r_E) cos(phi - phi_m)`` for ``m = 1``; 0 at the centre."""
    r, c, s, inside = _polar(x - centre_x, y - centre_y)
    u = c * cos(phi_m) + s * sin(phi_m)
    return where(inside, 0.5 * amplitude * r * log(r / einstein_radius) * u, 0.0)


# ------------------------------------------------------------------------------------------
# elliptical multipole: pieces shared by every form


@pointwise
def _harmonic(c, s, q, m, cm, sm):
    # g = (r / R) cos(m (varphi - phi_m)) = sqrt(q) Re[(q c + i s)^m e^{-i m phi_m}] / D^((m+1)/2)
    # with D = q^2 c^2 + s^2, for a static integer m in (1, 3, 4).
    a = q * c
    b = s
    d = a * a + b * b
    if m == 1:
        re, im, dd = a, b, d
    elif m == 3:
        re = a * (a * a - 3.0 * b * b)
        im = b * (3.0 * a * a - b * b)
        dd = d * d
    else:
        re = (a * a - b * b) * (a * a - b * b) - 4.0 * a * a * b * b
        im = 4.0 * a * b * (a * a - b * b)
        dd = d * d * sqrt(d)
    return sqrt(q) * (re * cm + im * sm) / dd


@pointwise
def _resonance(q, m):
    # (c1, s1) / (cos(m phi_m), sin(m phi_m)): first harmonic of g's cosine and sine parts
    if m == 1:
        return 2.0 * sqrt(q) / (1.0 + q)
    if m == 3:
        return -2.0 * sqrt(q) * (1.0 - q) / ((1.0 + q) * (1.0 + q))
    return 0.0 * q


@pointwise(inline=False)
def _assemble_deflection(r, c, s, inside, p, dp, c1, s1, einstein_radius, amplitude, phi_ref):
    # alpha' = P e_r + P' e_phi + log terms, rotated from the reference frame to the sky
    lr = log(r / einstein_radius)
    ax = p * c - dp * s + 0.5 * (c1 * (lr + c * c) + s1 * c * s)
    ay = p * s + dp * c + 0.5 * (c1 * c * s + s1 * (lr + s * s))
    ax, ay = from_profile_frame(amplitude * ax, amplitude * ay, phi_ref)
    return where(inside, ax, 0.0), where(inside, ay, 0.0)


@pointwise(inline=False)
def _assemble_potential(r, c, s, inside, p, c1, s1, einstein_radius, amplitude):
    return where(
        inside, amplitude * r * (p + 0.5 * log(r / einstein_radius) * (c1 * c + s1 * s)), 0.0
    )


# ------------------------------------------------------------------------------------------
# near round (q > 1 - Q_SWITCH): the Green's-function quadrature


def _near_round_p_loop(c, s, q, m, cm, sm):
    p = 0.0 * c
    dp = 0.0 * c
    for k in range(N_GL):
        g = _harmonic(c * _CU[k] + s * _SU[k], s * _CU[k] - c * _SU[k], q, m, cm, sm)
        p = p + _WK[k] * g
        dp = dp + _WKP[k] * g
    return p, dp


@cache
def _near_round_p_jax():
    jax = jax_runtime.load()
    wk, wkp, cu, su = _WK, _WKP, _CU, _SU

    def run(c, s, q, m, cm, sm):
        g = jax.vmap(lambda a, b: _harmonic(c * a + s * b, s * a - c * b, q, m, cm, sm))(cu, su)
        return jax.numpy.tensordot(wk, g, axes=1), jax.numpy.tensordot(wkp, g, axes=1)

    return run


_near_round_p = make_op(
    "_near_round_p", _near_round_p_loop, _near_round_p_jax, _near_round_p_loop, inline=False
)


@pointwise
def is_near_round(q):
    """True where the near-round quadrature serves (``q > 1 - Q_SWITCH``)."""
    return q > 1.0 - Q_SWITCH


@pointwise
def _any_p(c, s, q, m, cm, sm):
    # traced q: both forms, each with a harmless stand-in q where not selected
    near = is_near_round(q)
    p1, dp1 = _near_round_p(c, s, where(near, q, 1.0), m, cm, sm)
    p2, dp2 = _closed_p(c, s, where(near, 0.5, q), m, cm, sm)
    return where(near, p1, p2), where(near, dp1, dp2)


_P_BY_FORM = {"closed": _closed_p, "near_round": _near_round_p, "any": _any_p}


# ------------------------------------------------------------------------------------------
# elliptical multipole kernels, one set per order m (static)


@pointwise(inline=False)
def _frame(x, y, centre_x, centre_y, phi_ref):
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi_ref)
    return _polar(xp, yp)


def _make_elliptical(m):
    def convergence(x, y, centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius):
        r, c, s, inside = _frame(x, y, centre_x, centre_y, phi_ref)
        g = _harmonic(c, s, q, m, cos(m * phi_m), sin(m * phi_m))
        return where(inside, 0.5 * amplitude * g / r, 0.0)

    def hessian(x, y, centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius):
        r, c, s, inside = _frame(x, y, centre_x, centre_y, phi_ref)
        cm = cos(m * phi_m)
        sm = sin(m * phi_m)
        g = _harmonic(c, s, q, m, cm, sm)
        res = _resonance(q, m)
        c1 = res * cm
        s1 = res * sm
        f = where(inside, amplitude / r, 0.0)
        hxx = f * (g * s * s + 0.5 * (c1 * c - s1 * s))
        hxy = f * (-g * c * s + 0.5 * (c1 * s + s1 * c))
        hyy = f * (g * c * c - 0.5 * (c1 * c - s1 * s))
        # rotate the tensor from the reference frame to the sky
        cr = cos(phi_ref)
        sr = sin(phi_ref)
        xx = hxx * cr * cr + hyy * sr * sr - 2.0 * sr * cr * hxy
        yy = hxx * sr * sr + hyy * cr * cr + 2.0 * sr * cr * hxy
        xy = sr * cr * (hxx - hyy) + (cr * cr - sr * sr) * hxy
        return xx, xy, yy

    def make_fields(form):
        # one function per form, chosen here: a form passed as a string would make numba
        # compile string comparison (and its error paths) into every kernel
        p_of = _P_BY_FORM[form]

        def fields(x, y, centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius):
            r, c, s, inside = _frame(x, y, centre_x, centre_y, phi_ref)
            cm = cos(m * phi_m)
            sm = sin(m * phi_m)
            res = _resonance(q, m)
            p, dp = p_of(c, s, q, m, cm, sm)
            return r, c, s, inside, p, dp, res * cm, res * sm

        fields.__name__ = fields.__qualname__ = f"_elliptical_m{m}_fields_{form}"
        return pointwise(fields)

    def make_deflections(form):
        fields = make_fields(form)

        def deflections(x, y, centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius):
            r, c, s, inside, p, dp, c1, s1 = fields(
                x, y, centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius
            )
            return _assemble_deflection(
                r, c, s, inside, p, dp, c1, s1, einstein_radius, amplitude, phi_ref
            )

        return deflections

    def make_potential(form):
        fields = make_fields(form)

        def potential(x, y, centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius):
            r, c, s, inside, p, _, c1, s1 = fields(
                x, y, centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius
            )
            return _assemble_potential(r, c, s, inside, p, c1, s1, einstein_radius, amplitude)

        return potential

    out = {"convergence": convergence, "hessian": hessian}
    for form, suffix in (("closed", "_closed"), ("near_round", "_near_round"), ("any", "")):
        out[f"deflections{suffix}"] = make_deflections(form)
        out[f"potential{suffix}"] = make_potential(form)
    return out


def lenstronomy_gauge(m: int, q: float) -> tuple[float, float]:
    """The uniform deflection by which lenstronomy's ``MULTIPOLE_ELL`` differs from twinlens'.

    lenstronomy's potential is twinlens' plus ``a_m (A cos(m phi_m) x' + B sin(m phi_m) y')``
    in the reference frame (its deflection plus that vector, rotated by ``phi_ref``); ``A`` and
    ``B`` vanish for ``m = 4`` and as ``q -> 1``. Evaluated with the closed forms, so (like
    lenstronomy's own) it loses precision as ``q -> 1``.

    Parameters
    ----------
    m : int
        Order, 1, 3 or 4.
    q : float
        Axis ratio of the reference ellipse, in (0, 1).

    Returns
    -------
    (A, B) : floats
    """
    if m == 4 or q == 1.0:
        return 0.0, 0.0
    with np.errstate(all="ignore"):
        a = float(_fhat_odd(1.0, 0.0, float(q), m)[2])
        b = float(_fhat_odd(1.0, 0.0, 1.0 / float(q), m)[2])
    rq = float(np.sqrt(q))
    # the sine part: -(sign / q) times the cosine coefficient at 1/q, seen from (-y, x)
    sign = -1.0 if m == 1 else 1.0
    return rq * a, -sign * rq * b / q


# ------------------------------------------------------------------------------------------
# registry

_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_M = Domain(2.0, 12.0, specials=(2.0, 3.0, 4.0, 12.0))
_A = Domain(-0.2, 0.2, specials=(0.0, 0.05, -1e-9))
_ANGLE = Domain(-pi, pi, specials=(0.0, pi / 2, -pi / 4, pi))
_R_E = Domain(0.1, 5.0, specials=(1.0,))
_Q_ANY = Domain(0.1, 1.0, specials=(1.0, 1.0 - 1e-8, 0.9, 0.9 + 1e-9, 0.1, 0.5))
_Q_CLOSED = Domain(0.1, 0.9, specials=(0.9, 0.1, 0.5, 0.8999))
_Q_ROUND = Domain(0.9, 1.0, specials=(1.0, 1.0 - 1e-8, 1.0 - 1e-12, 0.9 + 1e-9))
# Deflections are vectors, hessians tensors: each point's error is measured against their norm.
# The fields are homogeneous of degree 0 (deflections) and -1 (hessians) in r; the potential
# (degree 1) crosses zero on nodal lines, where only an absolute error of a few ulp of
# |a_m| r makes sense. Odd orders add a log term that crosses zero at r = r_E.
_TOL = Tolerance(rtol=1e-12, atol=1e-15, norm=True, why="components vanish on nodal lines")
# The closed forms (q <= 0.9) subtract terms of order (1 - q^2)^-2 ~ 30: 1e-13 relative to |a_m|.
_TOL_CLOSED = Tolerance(rtol=1e-11, atol=1e-13, norm=True, why="closed forms cancel ~(1-q^2)^-2")
# The potential grows as a_m r (r up to 14 in the domains) and crosses zero on nodal lines.
_TOL_PSI = Tolerance(rtol=1e-11, atol=1e-12, why="a_m r grows to 14 a_m; zero on nodal lines")


_H = ("psi_xx", "psi_xy", "psi_yy")
_AL = ("alpha_x", "alpha_y")
_CIRC = (
    Arg("centre_x", _CENTRE),
    Arg("centre_y", _CENTRE),
    Arg("m", _M),
    Arg("amplitude", _A),
    Arg("phi_m", _ANGLE),
)
_CIRC1 = (
    Arg("centre_x", _CENTRE),
    Arg("centre_y", _CENTRE),
    Arg("amplitude", _A),
    Arg("phi_m", _ANGLE),
    Arg("einstein_radius", _R_E),
)
# the circular multipole's kernels for orders m >= 2, then those for m = 1 (a log term needs r_E)
_CIRCULAR = KernelFamily(
    "multipole",
    _XY,
    params=_CIRC,
    tol=_TOL,
    atol_scale=lambda amplitude, **_: max(abs(amplitude), 1e-300),
)
_CIRCULAR_M1 = _CIRCULAR.variant(params=_CIRC1)
CONVERGENCE = _CIRCULAR.register("convergence", convergence, ("kappa",))
DEFLECTIONS = _CIRCULAR.register("deflections", deflections, _AL)
HESSIAN = _CIRCULAR.register("hessian", hessian, _H)
POTENTIAL = _CIRCULAR.register("potential", potential, ("psi",), tol=_TOL_PSI)
DEFLECTIONS_M1 = _CIRCULAR_M1.register("deflections_m1", deflections_m1, _AL)
HESSIAN_M1 = _CIRCULAR_M1.register("hessian_m1", hessian_m1, _H)
POTENTIAL_M1 = _CIRCULAR_M1.register("potential_m1", potential_m1, ("psi",), tol=_TOL_PSI)

#: The circular multipole's kernels by quantity, for orders ``m >= 2`` (parameters
#: ``centre_x, centre_y, m, amplitude, phi_m``) ...
KERNELS = {
    "convergence": CONVERGENCE,
    "deflections": DEFLECTIONS,
    "hessian": HESSIAN,
    "potential": POTENTIAL,
}
#: ... and for ``m = 1`` (parameters ``centre_x, centre_y, amplitude, phi_m, einstein_radius``;
#: its convergence is the general one).
KERNELS_M1 = {
    "convergence": CONVERGENCE,
    "deflections": DEFLECTIONS_M1,
    "hessian": HESSIAN_M1,
    "potential": POTENTIAL_M1,
}


def _ell_params(q_domain):
    return (
        Arg("centre_x", _CENTRE),
        Arg("centre_y", _CENTRE),
        Arg("phi_ref", _ANGLE),
        Arg("q", q_domain),
        Arg("amplitude", _A),
        Arg("phi_m", _ANGLE),
        Arg("einstein_radius", _R_E),
    )


def _amp_ell(amplitude, **_):
    return max(abs(amplitude), 1e-300)


def by_axis_ratio(near_round: Kernel, closed: Kernel):
    """The numba implementation of a blended elliptical kernel from its two exact forms, chosen
    by the concrete ``q`` (:func:`~twinlens.kernels.registry.numba_by_form`)."""

    def choose(phi_ref, q):
        return (near_round if is_near_round(q) else closed), (phi_ref, q)

    return numba_by_form(choose, 2)


#: The elliptical multipoles' kernels: ``ELLIPTICAL[m][name]`` for ``m`` in
#: :data:`ELLIPTICAL_ORDERS`, names ``convergence``, ``hessian``, and ``deflections`` and
#: ``potential`` in three forms: ``_closed`` (``q <= 1 - Q_SWITCH``), ``_near_round`` (the
#: quadrature, above) and no suffix (either, chosen per point; for a traced ``q``). Parameters
#: ``centre_x, centre_y, phi_ref, q, amplitude, phi_m, einstein_radius``.
ELLIPTICAL: dict[int, dict[str, Kernel]] = {}
for _m in ELLIPTICAL_ORDERS:
    ELLIPTICAL[_m] = {}
    _family = KernelFamily(f"multipole_ell_m{_m}", _XY)
    for _name, _fn in _make_elliptical(_m).items():
        _fn.__name__ = _fn.__qualname__ = f"elliptical_m{_m}_{_name}"
        _fn.__doc__ = (
            f"Elliptical multipole of order {_m}: {_name.replace('_', ' ')} (see the module)."
        )
        _closed = _name.endswith("_closed")
        _round = _name.endswith("_near_round")
        _qd = _Q_CLOSED if _closed else _Q_ROUND if _round else _Q_ANY
        _outs = {"convergence": ("kappa",), "hessian": _H}.get(_name)
        if _outs is None:
            _outs = _AL if _name.startswith("deflections") else ("psi",)
        _tol = _TOL_PSI if _name.startswith("potential") else _TOL
        if _closed or _name in ("deflections", "potential"):
            _tol = _TOL_CLOSED if _outs == _AL else _TOL_PSI
        _impls = None
        if _name in ("deflections", "potential"):
            _forms = ELLIPTICAL[_m]
            _impls = {
                "numba": by_axis_ratio(_forms[f"{_name}_near_round"], _forms[f"{_name}_closed"])
            }
        ELLIPTICAL[_m][_name] = _family.register(
            _name,
            pointwise(_fn),
            _outs,
            params=_ell_params(_qd),
            tol=_tol,
            atol_scale=_amp_ell,
            impls=_impls,
            point_from=f"ELLIPTICAL[{_m}][{_name!r}].point",
        )

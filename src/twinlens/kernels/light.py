"""Light profiles: the Sersic and core-Sersic surface brightness, as plain functions of one point.

**Elliptical radius.** Every light profile here is a function of the intermediate-axis radius
``R = sqrt(q x'^2 + y'^2 / q)`` (lenstronomy's "product average" convention), with ``(x', y')``
the offsets from the centre in the frame of the major axis. With ellipticity components
``(e1, e2)`` (``q = (1 - |e|) / (1 + |e|)``, ``phi = arctan2(e2, e1) / 2``), ``dx = x - centre_x``
and ``dy = y - centre_y``, it is written without trigonometry, smooth through ``e = 0``::

    R^2 = [(1 + e1^2 + e2^2)(dx^2 + dy^2) - 2 (e1 (dx^2 - dy^2) + 2 e2 dx dy)] / (1 - e1^2 - e2^2),

which is :func:`twinlens.kernels.gaussian.quadratic_form` (its one home), wrapped here as
:func:`elliptical_radius_squared`.

**Sersic** (lenstronomy's ``SERSIC_ELLIPSE``, autogalaxy's ``Sersic``)::

    I(R) = intensity * exp(-b_n ((R / R_e)^(1/n) - 1)),

``R_e`` = ``effective_radius``, ``n`` = ``sersic_index``, so ``intensity`` is the surface
brightness at ``R = R_e``. ``b_n`` is a parameter of the kernel (one value per parameter set,
from :func:`sersic_b`): with the exact ``b_n``, the root of ``P(2n, b_n) = 1/2``, ``R_e`` is
exactly the half-light radius. (lenstronomy uses ``b_n ~ 1.9992 n - 0.3271``, autogalaxy the
Ciotti & Bertin (1999) expansion; neither is exact.) The value at ``R = 0`` is exact,
``intensity * exp(b_n)``; there ``(R/R_e)^(1/n)`` is taken as 0 by a ``where`` with a safe
stand-in, so JAX gradients at the exact centre are finite (zero with respect to the centre,
the average over directions of the cusp's one-sided slopes when ``n > 1``).

**Core-Sersic** (Graham et al. 2003; Trujillo et al. 2004), in lenstronomy's ``CORE_SERSIC``
parameterisation and normalisation::

    I(R) = intensity * (1 + (R_b / R)^alpha)^(gamma / alpha)
                     * exp(-b_n [((R^alpha + R_b^alpha) / R_e^alpha)^(1 / (alpha n)) - 1]),

``R_b`` = ``break_radius`` (>= 0), ``gamma`` the inner logarithmic slope (``I ~ R^-gamma`` for
``R << R_b``), ``alpha`` (> 0) the sharpness of the transition. ``intensity`` is lenstronomy's
``amp``: as ``R_b -> 0`` the profile is the Sersic profile above with the same ``intensity``
(the intensity at ``R_e`` of that limit), *not* the intensity at the break radius. Mapping:

* lenstronomy ``CORE_SERSIC``: ``amp`` = ``intensity``, ``R_sersic`` = ``effective_radius``,
  ``Rb`` = ``break_radius``, ``n_sersic`` = ``sersic_index``, ``gamma``, ``alpha`` (its keyword
  argument, default 3) and ``e1, e2, center_x, center_y`` unchanged; lenstronomy's own ``b_n`` is
  its linear approximation, so pass that ``b_n`` to reproduce its numbers.
* autogalaxy ``SersicCore``: its ``intensity`` is ``I_b``, the intensity at ``R = R_b``, and its
  profile is ``I' (1 + (R_b/R)^alpha)^(gamma/alpha) exp(-b_n [...]^(1/(alpha n)))`` with
  ``I' = I_b 2^(-gamma/alpha) exp(b_n (2^(1/alpha) R_b / R_e)^(1/n))``, hence
  ``intensity = I' exp(-b_n) = I_b 2^(-gamma/alpha) exp(b_n (2^(1/(alpha n)) (R_b/R_e)^(1/n) - 1))``
  (``radius_break`` = ``break_radius``; ``centre`` is ``(y, x)`` and ``ell_comps`` is
  ``(e2, e1)`` there).

It is evaluated in logarithms, with ``softplus(t) = log(1 + e^t)``::

    log I = log(intensity) + (gamma / alpha) s_f - b_n (u - 1),
    s_f = softplus(alpha log(R_b / max(R, R_FLOOR))),
    u = exp([log(R_b / R_e) + softplus(alpha log(R / R_b)) / alpha] / n),

so no power overflows for any ``alpha``. The cusp factor diverges at ``R = 0`` (``gamma > 0``):
in it alone (``s_f``) ``R`` is floored at ``R_FLOOR`` = 1e-5 arcsec, lenstronomy's smoothing
scale (``SersicUtil._s``; lenstronomy floors ``R`` in the whole formula). The exponential part
is finite at ``R = 0`` and is evaluated there exactly, so the profile tends to the Sersic
profile as ``R_b -> 0`` at every ``R``, the centre included, and equals it at ``R_b = 0``. JAX
gradients stay finite at the exact centre and below the floor (``where`` with safe stand-ins;
the floored cusp does not depend on ``R`` there).

Exponential light is the Sersic profile with ``n = 1``; Gaussian light is the
``gaussian.convergence`` kernel. Neither has a kernel of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.gaussian import quadratic_form
from twinlens.kernels.ops import exp as exp_libm
from twinlens.kernels.ops import exp_vectorised as exp  # the Sersic's time is mostly exp, log
from twinlens.kernels.ops import log as log_libm
from twinlens.kernels.ops import log1p, maximum, pointwise, where
from twinlens.kernels.ops import log_vectorised as log
from twinlens.kernels.registry import KernelFamily
from twinlens.kernels.sersic_index import sersic_b
from twinlens.kernels.tolerance import Tolerance

#: the floor of the elliptical radius in the core-Sersic cusp factor, arcsec (lenstronomy's)
R_FLOOR = 1e-5
#: the range of Sersic indices the light profiles accept
N_MIN, N_MAX = 0.2, 10.0


# ------------------------------------------------------------------------------------------
# b_n: the exact one lives in sersic_index (shared with the Sersic mass); light keeps the
# approximate forms that other codes use


def sersic_b_capaccioli(n: Any) -> Any:
    """Capaccioli's (1989) linear approximation ``b_n = 1.9992 n - 0.3271``, which lenstronomy
    and COOLEST use (any shape, numpy)."""
    return 1.9992 * np.asarray(n, dtype=float) - 0.3271


def sersic_with_other_b(radius: Any, intensity: Any, n: Any, b_from: Any, b_to: Any) -> Any:
    """``(radius', intensity')`` of the same Sersic profile written with ``b_to`` in place of
    ``b_from``: ``I exp(-b ((R / R_e)^(1/n) - 1))`` is unchanged when
    ``R_e' = R_e (b_to / b_from)^n`` and ``I' = I exp(b_from - b_to)`` (e.g. our exact ``b_n``
    against the approximation of lenstronomy or COOLEST)."""
    return radius * (b_to / b_from) ** n, intensity * np.exp(b_from - b_to)


# ------------------------------------------------------------------------------------------
# per-point math


@pointwise
def elliptical_radius_squared(x, y, centre_x, centre_y, e1, e2):
    """``R^2 = q x'^2 + y'^2 / q``, the squared intermediate-axis radius, arcsec^2, from
    ``(e1, e2)`` without trigonometry (smooth through ``e = 0``)."""
    return quadratic_form(x - centre_x, y - centre_y, e1, e2)


@pointwise
def _softplus(t):
    # log(1 + exp(t)), without overflow for large t nor NaN gradients anywhere
    return maximum(t, 0.0) + log1p(exp_libm(-abs(t)))


@pointwise
def sersic(x, y, centre_x, centre_y, e1, e2, effective_radius, sersic_index, b_n, intensity):
    """Elliptical Sersic surface brightness ``intensity exp(-b_n ((R/R_e)^(1/n) - 1))``, in the
    units of ``intensity`` (the surface brightness at ``R = R_e``); exact at ``R = 0``."""
    r2 = elliptical_radius_squared(x, y, centre_x, centre_y, e1, e2)
    off = r2 > 0.0
    log_ratio = 0.5 * log(where(off, r2, 1.0)) - log(effective_radius)  # log(R / R_e)
    u = where(off, exp(log_ratio * (1.0 / sersic_index)), 0.0)  # (R / R_e)^(1/n)
    return intensity * exp(-b_n * (u - 1.0))


@pointwise
def core_sersic(
    x,
    y,
    centre_x,
    centre_y,
    e1,
    e2,
    effective_radius,
    sersic_index,
    b_n,
    break_radius,
    gamma,
    alpha,
    intensity,
):
    """Elliptical core-Sersic surface brightness (lenstronomy's ``CORE_SERSIC``), in the units of
    ``intensity``; ``R`` is floored at ``R_FLOOR`` in the cusp factor only."""
    # libm's exp and log here, not the vectorising ones: log1p keeps this loop scalar anyway,
    # and nine inlined copies of the polynomials made numba compile it several times longer
    # and run it slower
    r2 = elliptical_radius_squared(x, y, centre_x, centre_y, e1, e2)
    off = r2 > 0.0
    log_r = 0.5 * log_libm(where(off, r2, 1.0))
    has_core = break_radius > 0.0
    log_rb = log_libm(where(has_core, break_radius, 1.0))
    log_re = log_libm(effective_radius)
    # the cusp, log(1 + (R_b / R)^alpha), with R floored at R_FLOOR
    log_rf = 0.5 * log_libm(maximum(r2, R_FLOOR * R_FLOOR))
    cusp = where(has_core, _softplus(alpha * (log_rb - log_rf)), 0.0)
    # u = ((R^alpha + R_b^alpha) / R_e^alpha)^(1/(alpha n)), exact at R = 0 and at R_b = 0
    mixed = where(off, _softplus(alpha * (log_r - log_rb)), 0.0)  # log(1 + (R / R_b)^alpha)
    u_core = exp_libm((log_rb - log_re + mixed / alpha) / sersic_index)
    u_plain = where(off, exp_libm((log_r - log_re) / sersic_index), 0.0)
    u = where(has_core, u_core, u_plain)
    return intensity * exp_libm(gamma / alpha * cusp - b_n * (u - 1.0))


# ------------------------------------------------------------------------------------------
# registry

_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_E = Domain(-0.6, 0.6, specials=(0.0, 1e-9, -1e-12, 0.3, -0.6))
_R_E = Domain(0.01, 10.0, specials=(0.01, 1.0, 10.0), log=True)
_N = Domain(N_MIN, N_MAX, specials=(N_MIN, 0.5, 1.0, 4.0, N_MAX), log=True)
# b_n is drawn independently of n (any positive b_n is valid math), over the range that the
# exact b_n spans for n in [N_MIN, N_MAX], with the exact values at the special indices.
_B_SPECIALS = tuple(float(sersic_b(n)) for n in _N.specials)
_B = Domain(_B_SPECIALS[0], _B_SPECIALS[-1], specials=_B_SPECIALS, log=True)
_INTENSITY = Domain(0.01, 10.0, specials=(1.0,), log=True)
_R_B = Domain(0.0, 1.0, specials=(0.0, 1e-8, R_FLOOR, 0.01, 1.0))
_GAMMA = Domain(0.0, 2.0, specials=(0.0, 0.25, 2.0))
_ALPHA = Domain(0.5, 10.0, specials=(0.5, 1.0, 3.0, 10.0), log=True)
# The result is exp of an exponent E (the cusp and Sersic terms) computed to a few ulp of their
# sizes: relative error ~|E| 1e-16 (JAX's exp and log are a few ulp; measured up to 1.3e-13
# against numpy over 2048-point draws, numba 5e-15). Values far down the tail fall under the
# absolute floor, scaled by intensity (the surface brightness at R_e).
_TOL = Tolerance(rtol=1e-12, atol=1e-14)
_SHAPE = (
    Arg("centre_x", _CENTRE),
    Arg("centre_y", _CENTRE),
    Arg("e1", _E),
    Arg("e2", _E),
    Arg("effective_radius", _R_E),
    Arg("sersic_index", _N),
    Arg("b_n", _B),
)


_FAMILY = KernelFamily("light", _XY, tol=_TOL, atol_scale=lambda intensity, **_: intensity)

SERSIC = _FAMILY.register(
    "sersic", sersic, ("intensity",), params=(*_SHAPE, Arg("intensity", _INTENSITY))
)
CORE_SERSIC = _FAMILY.register(
    "core_sersic",
    core_sersic,
    ("intensity",),
    params=(
        *_SHAPE,
        Arg("break_radius", _R_B),
        Arg("gamma", _GAMMA),
        Arg("alpha", _ALPHA),
        Arg("intensity", _INTENSITY),
    ),
)

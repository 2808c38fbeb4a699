"""Uniform convergence sheet: the math, as plain functions of one point.

Convention (lenstronomy's ``CONVERGENCE``), about ``(centre_x, centre_y)`` (lenstronomy's
``ra_0, dec_0``)::

    psi = kappa r^2 / 2,   alpha = kappa (dx, dy),   (psi_xx, psi_xy, psi_yy) = (kappa, 0, kappa).
"""

from __future__ import annotations

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import pointwise
from twinlens.kernels.registry import KernelFamily
from twinlens.kernels.tolerance import Tolerance


@pointwise
def convergence(x, y, centre_x, centre_y, kappa):
    """Convergence ``kappa`` everywhere."""
    return kappa + 0.0 * (x - centre_x) * (y - centre_y)


@pointwise
def deflections(x, y, centre_x, centre_y, kappa):
    """Deflections ``kappa (dx, dy)``, arcsec."""
    return kappa * (x - centre_x), kappa * (y - centre_y)


@pointwise
def hessian(x, y, centre_x, centre_y, kappa):
    """Hessian ``(kappa, 0, kappa)``."""
    zero = 0.0 * (x - centre_x) * (y - centre_y)
    return kappa + zero, zero, kappa + zero


@pointwise
def potential(x, y, centre_x, centre_y, kappa):
    """Potential ``kappa r^2 / 2``, arcsec^2."""
    dx = x - centre_x
    dy = y - centre_y
    return 0.5 * kappa * (dx * dx + dy * dy)


_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_KAPPA = Domain(-2.0, 2.0, specials=(0.0, 1.0, -1e-9))
_PARAMS = (Arg("centre_x", _CENTRE), Arg("centre_y", _CENTRE), Arg("kappa", _KAPPA))
_FAMILY = KernelFamily("sheet", _XY, params=_PARAMS, tol=Tolerance(rtol=1e-12, atol=1e-15))

CONVERGENCE = _FAMILY.register("convergence", convergence, ("kappa",))
DEFLECTIONS = _FAMILY.register("deflections", deflections, ("alpha_x", "alpha_y"))
HESSIAN = _FAMILY.register("hessian", hessian, ("psi_xx", "psi_xy", "psi_yy"))
POTENTIAL = _FAMILY.register("potential", potential, ("psi",))

#: The mass sheet's kernels by quantity (parameters ``centre_x, centre_y, kappa``).
KERNELS = {
    "convergence": CONVERGENCE,
    "deflections": DEFLECTIONS,
    "hessian": HESSIAN,
    "potential": POTENTIAL,
}

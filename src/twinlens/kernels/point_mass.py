"""Point mass: the math, as plain functions of one point.

Convention (lenstronomy's ``POINT_MASS``)::

    psi = theta_E^2 ln r,   alpha = theta_E^2 theta / r^2,   kappa = 0 for r > 0,

with ``r`` the distance from the centre, arcsec. The convergence is a delta function at the
centre, ``kappa = pi theta_E^2 delta^2(theta)``, which no sampled field can hold: the kernels
return 0 everywhere, and the mass shows only through the deflection (Gauss's law: the mean
convergence inside a circle of radius ``R`` about the centre is ``theta_E^2 / R^2``).

At the centre itself (``r = 0``) the kernels return finite, documented values: deflection 0 and
hessian 0 (the means over directions), potential ``theta_E^2 ln(R_MIN)`` with ``R_MIN = 1e-25``
arcsec (the potential uses ``max(r, R_MIN)``, as lenstronomy does). Both branches of every
``where`` are finite, so JAX gradients are finite there too.
"""

from __future__ import annotations

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import log, maximum, pointwise, where
from twinlens.kernels.registry import KernelFamily
from twinlens.kernels.tolerance import Tolerance

#: smallest radius the potential uses, arcsec (lenstronomy's ``r_min``)
R_MIN = 1e-25


@pointwise
def convergence(x, y, centre_x, centre_y, einstein_radius):
    """Convergence off the centre: 0 (the point mass is a delta function at the centre)."""
    return 0.0 * (x - centre_x) * (y - centre_y) * einstein_radius


@pointwise
def deflections(x, y, centre_x, centre_y, einstein_radius):
    """Deflections ``theta_E^2 (dx, dy) / r^2``, arcsec; ``(0, 0)`` at the centre."""
    dx = x - centre_x
    dy = y - centre_y
    r2 = dx * dx + dy * dy
    inside = r2 > 0.0
    f = einstein_radius * einstein_radius / where(inside, r2, 1.0)
    return where(inside, f * dx, 0.0), where(inside, f * dy, 0.0)


@pointwise
def hessian(x, y, centre_x, centre_y, einstein_radius):
    """Hessian ``(psi_xx, psi_xy, psi_yy)``: ``theta_E^2 (dy^2 - dx^2, -2 dx dy, dx^2 - dy^2) /
    r^4``; 0 at the centre."""
    dx = x - centre_x
    dy = y - centre_y
    r2 = dx * dx + dy * dy
    inside = r2 > 0.0
    inv = 1.0 / where(inside, r2, 1.0)
    f = einstein_radius * einstein_radius * inv * inv
    # (dy^2 - dx^2) as (dy - dx)(dy + dx): no cancellation on the diagonals
    d = f * (dy - dx) * (dy + dx)
    return where(inside, d, 0.0), where(inside, -2.0 * f * dx * dy, 0.0), where(inside, -d, 0.0)


@pointwise
def potential(x, y, centre_x, centre_y, einstein_radius):
    """Potential ``theta_E^2 ln max(r, R_MIN)``, arcsec^2."""
    dx = x - centre_x
    dy = y - centre_y
    r2 = maximum(dx * dx + dy * dy, R_MIN * R_MIN)
    return 0.5 * einstein_radius * einstein_radius * log(r2)


_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_CENTRE = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_THETA_E = Domain(1e-3, 10.0, specials=(1e-3, 1.0, 10.0), log=True)
_PARAMS = (Arg("centre_x", _CENTRE), Arg("centre_y", _CENTRE), Arg("einstein_radius", _THETA_E))
# Deflections are vectors (error against |alpha|); the hessian is a tensor (error against its
# norm): a component that vanishes by symmetry carries no relative precision of its own.
_TOL = Tolerance(rtol=1e-12, atol=1e-300, norm=True, why="components vanish on the axes")
# ln r vanishes at r = 1: near there only an absolute error of a few ulp of theta_E^2 makes sense.
_TOL_PSI = Tolerance(rtol=1e-12, atol=1e-15, why="ln r crosses zero at r = 1")


_FAMILY = KernelFamily("point_mass", _XY, params=_PARAMS)

CONVERGENCE = _FAMILY.register("convergence", convergence, ("kappa",))
DEFLECTIONS = _FAMILY.register("deflections", deflections, ("alpha_x", "alpha_y"), tol=_TOL)
HESSIAN = _FAMILY.register("hessian", hessian, ("psi_xx", "psi_xy", "psi_yy"), tol=_TOL)
POTENTIAL = _FAMILY.register(
    "potential",
    potential,
    ("psi",),
    tol=_TOL_PSI,
    atol_scale=lambda einstein_radius, **_: einstein_radius**2,
)

#: The point mass's kernels by quantity (parameters ``centre_x, centre_y, einstein_radius``).
KERNELS = {
    "convergence": CONVERGENCE,
    "deflections": DEFLECTIONS,
    "hessian": HESSIAN,
    "potential": POTENTIAL,
}

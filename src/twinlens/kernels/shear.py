"""External shear: the math, as plain functions of one point.

Convention (lenstronomy's ``SHEAR``), about the expansion point ``(origin_x, origin_y)``
(lenstronomy's ``ra_0, dec_0``), with ``dx = x - origin_x``, ``dy = y - origin_y``::

    psi = gamma_1 (dx^2 - dy^2) / 2 + gamma_2 dx dy,
    alpha = (gamma_1 dx + gamma_2 dy, gamma_2 dx - gamma_1 dy),
    (psi_xx, psi_xy, psi_yy) = (gamma_1, gamma_2, -gamma_1),   kappa = 0.

Magnitude and angle (lenstronomy's ``SHEAR_GAMMA_PSI``): ``gamma_1 = gamma cos(2 psi)``,
``gamma_2 = gamma sin(2 psi)`` (:func:`components_from_magnitude_angle`).
"""

from __future__ import annotations

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import cos, pointwise, sin
from twinlens.kernels.registry import KernelFamily
from twinlens.kernels.tolerance import Tolerance


def components_from_magnitude_angle(gamma, angle):
    """``(gamma_1, gamma_2) = gamma (cos 2 angle, sin 2 angle)``; ``angle`` in radians."""
    return gamma * cos(2.0 * angle), gamma * sin(2.0 * angle)


@pointwise
def convergence(x, y, origin_x, origin_y, gamma_1, gamma_2):
    """Convergence: 0 (a pure shear)."""
    return 0.0 * (x - origin_x) * (y - origin_y) * gamma_1 * gamma_2


@pointwise
def deflections(x, y, origin_x, origin_y, gamma_1, gamma_2):
    """Deflections ``(gamma_1 dx + gamma_2 dy, gamma_2 dx - gamma_1 dy)``, arcsec."""
    dx = x - origin_x
    dy = y - origin_y
    return gamma_1 * dx + gamma_2 * dy, gamma_2 * dx - gamma_1 * dy


@pointwise
def hessian(x, y, origin_x, origin_y, gamma_1, gamma_2):
    """Hessian ``(psi_xx, psi_xy, psi_yy) = (gamma_1, gamma_2, -gamma_1)``, everywhere."""
    zero = 0.0 * (x - origin_x) * (y - origin_y)
    return gamma_1 + zero, gamma_2 + zero, -gamma_1 + zero


@pointwise
def potential(x, y, origin_x, origin_y, gamma_1, gamma_2):
    """Potential ``gamma_1 (dx^2 - dy^2) / 2 + gamma_2 dx dy``, arcsec^2 (0 at the origin)."""
    dx = x - origin_x
    dy = y - origin_y
    return 0.5 * gamma_1 * (dx - dy) * (dx + dy) + gamma_2 * dx * dy


_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -7.5))
_ORIGIN = Domain(-1.0, 1.0, specials=(0.0, 0.05))
_GAMMA = Domain(-0.5, 0.5, specials=(0.0, 1e-9, -0.5, 0.1))
_PARAMS = (
    Arg("origin_x", _ORIGIN),
    Arg("origin_y", _ORIGIN),
    Arg("gamma_1", _GAMMA),
    Arg("gamma_2", _GAMMA),
)
# Fields that are sums of two products cancel to zero on lines through the origin: there only
# an absolute error of a few ulp of |gamma| |theta| makes sense (|theta| <= 11).
_TOL = Tolerance(rtol=1e-12, atol=1e-14, norm=True, why="sums cancel on lines through the origin")


def _scale(gamma_1, gamma_2, **_):
    return max(abs(gamma_2), abs(gamma_1), 1e-300)


_FAMILY = KernelFamily("shear", _XY, ties=(("x", "origin_x"), ("y", "origin_y")), params=_PARAMS)

CONVERGENCE = _FAMILY.register("convergence", convergence, ("kappa",))
DEFLECTIONS = _FAMILY.register(
    "deflections", deflections, ("alpha_x", "alpha_y"), tol=_TOL, atol_scale=_scale
)
HESSIAN = _FAMILY.register("hessian", hessian, ("psi_xx", "psi_xy", "psi_yy"))
POTENTIAL = _FAMILY.register(
    "potential", potential, ("psi",), tol=_TOL, atol_scale=lambda **p: 20.0 * _scale(**p)
)

#: The external shear's kernels by quantity (parameters ``origin_x, origin_y, gamma_1, gamma_2``).
KERNELS = {
    "convergence": CONVERGENCE,
    "deflections": DEFLECTIONS,
    "hessian": HESSIAN,
    "potential": POTENTIAL,
}

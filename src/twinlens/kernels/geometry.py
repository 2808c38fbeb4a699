"""Coordinate frames: from the sky into a profile's own frame and back.

A profile centred on ``(centre_x, centre_y)`` with major axis at angle ``phi`` (radians,
counter-clockwise from +x) is evaluated in its own frame, where it is centred on the origin with
its major axis along +x. Vectors (deflections) computed there are rotated back to the sky.
"""

from __future__ import annotations

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import cos, pi, pointwise, sin, where
from twinlens.kernels.registry import Kernel, register
from twinlens.kernels.tolerance import Tolerance


@pointwise
def to_profile_frame(x, y, centre_x, centre_y, phi):
    """Shift by the centre, then rotate by ``-phi``.

    Parameters
    ----------
    x, y : array_like
        Sky positions, arcsec.
    centre_x, centre_y : float
        Profile centre, arcsec.
    phi : float
        Position angle of the major axis, radians counter-clockwise from +x.

    Returns
    -------
    (x', y') : arrays
        Positions in the profile frame, arcsec.
    """
    dx = x - centre_x
    dy = y - centre_y
    c = cos(phi)
    s = sin(phi)
    return c * dx + s * dy, c * dy - s * dx


@pointwise
def held_at_centre(dx, dy, core):
    """Offsets ``(dx, dy)`` from a profile centre, held constant at the exact centre of a
    singular profile.

    Where ``dx = dy = 0`` and ``core <= 0`` the returned offsets are the constants ``(0, 0)``:
    the values are unchanged everywhere, but JAX derivatives with respect to the position and
    the centre are 0 at that one point. A singular profile's deflection has no derivative
    there (it grows like ``1 / r``, ``r^-t`` or ``ln(1 / r)``), so a kernel that computes from
    held offsets has documented, finite derivatives at its centre: those of the value it
    returns there, held fixed. Elsewhere (and for any core > 0) derivatives are the true ones.

    Parameters
    ----------
    dx, dy : array_like
        Offsets from the centre, arcsec (or in units of a scale radius).
    core : float
        Core radius (``0`` for a singular profile; a positive core makes the centre smooth).

    Returns
    -------
    (dx, dy) : arrays
        The same values.
    """
    # |dx| + |dy| cannot underflow to 0 unless both are 0 (dx^2 + dy^2 could)
    hold = abs(dx) + abs(dy) + core <= 0.0
    return where(hold, 0.0, dx), where(hold, 0.0, dy)


@pointwise
def from_profile_frame(vx, vy, phi):
    """Rotate a vector (a deflection, a gradient) from a profile's frame back to the sky."""
    c = cos(phi)
    s = sin(phi)
    return c * vx - s * vy, s * vx + c * vy


@pointwise
def hessian_from_profile_frame(hxx, hxy, hyy, phi):
    """Rotate a hessian ``(psi_xx, psi_xy, psi_yy)`` from a profile's frame back to the sky."""
    c = cos(phi)
    s = sin(phi)
    return (
        hxx * c * c + hyy * s * s - 2.0 * s * c * hxy,
        s * c * (hxx - hyy) + (c * c - s * s) * hxy,
        hxx * s * s + hyy * c * c + 2.0 * s * c * hxy,
    )


_COORD = Domain(-10.0, 10.0, specials=(0.0, 1e-12, -1e-12, 10.0, -10.0))
_CENTRE = Domain(-2.0, 2.0, specials=(0.0, 0.05, -1e-9))
_ANGLE = Domain(-pi, pi, specials=(0.0, pi / 2, -pi / 4, pi, 1e-10))
# Outputs cancel to zero for points on the centre or on an axis, where only an absolute error
# makes sense: 1e-13 is about 50 ulp of the largest coordinate (|x - centre| <= 12).
_FRAME_TOL = Tolerance(rtol=1e-12, atol=1e-13, why="cancellation to zero on the centre and axes")

TO_PROFILE_FRAME = register(
    Kernel(
        name="geometry.to_profile_frame",
        point=to_profile_frame,
        inputs=(Arg("x", _COORD), Arg("y", _COORD)),
        params=(Arg("centre_x", _CENTRE), Arg("centre_y", _CENTRE), Arg("phi", _ANGLE)),
        outputs=("x", "y"),
        tol=_FRAME_TOL,
        ties=(("x", "centre_x"), ("y", "centre_y")),
        doc=to_profile_frame.__doc__ or "",
    )
)
FROM_PROFILE_FRAME = register(
    Kernel(
        name="geometry.from_profile_frame",
        point=from_profile_frame,
        inputs=(Arg("vx", _COORD), Arg("vy", _COORD)),
        params=(Arg("phi", _ANGLE),),
        outputs=("vx", "vy"),
        tol=_FRAME_TOL,
        doc=from_profile_frame.__doc__ or "",
    )
)

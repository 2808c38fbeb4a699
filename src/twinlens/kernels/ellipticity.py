"""Ellipticity components and (axis ratio, position angle), one convention for the package.

``e1 = f cos(2 phi)``, ``e2 = f sin(2 phi)`` with ``f = (1 - q) / (1 + q)``; inversely
``q = (1 - |e|) / (1 + |e|)`` and ``phi = arctan2(e2, e1) / 2``. This is lenstronomy's
convention. Angles are radians here; constructors that take degrees convert before calling.
At ``e = (0, 0)`` the angle is undefined and returned as 0.
"""

from __future__ import annotations

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import arctan2, cos, hypot, pi, pointwise, sin, where
from twinlens.kernels.registry import Kernel, register
from twinlens.kernels.tolerance import Tolerance


@pointwise
def ellipticity_from_axis_ratio(q, phi):
    """``(e1, e2)`` from axis ratio ``q`` in (0, 1] and position angle ``phi`` (radians)."""
    f = (1.0 - q) / (1.0 + q)
    return f * cos(2.0 * phi), f * sin(2.0 * phi)


@pointwise
def axis_ratio_from_ellipticity(e1, e2):
    """``(q, phi)`` from ellipticity components with ``|e| < 1``; ``phi`` in (-pi/2, pi/2].

    The angle is folded into (-pi/2, pi/2] so that ``e2 = -0.0`` and ``e2 = +0.0`` (which differ
    on the branch cut of arctan2, and which JAX on CPUs produces from subnormals) give one angle.
    """
    e = hypot(e1, e2)
    phi = 0.5 * arctan2(e2, e1)
    return (1.0 - e) / (1.0 + e), where(phi <= -0.5 * pi, phi + pi, phi)


ELLIPTICITY_FROM_AXIS_RATIO = register(
    Kernel(
        name="ellipticity.ellipticity_from_axis_ratio",
        point=ellipticity_from_axis_ratio,
        inputs=(
            Arg("q", Domain(0.05, 1.0, specials=(1.0, 1.0 - 1e-8, 1.0 - 1e-12, 0.05))),
            Arg("phi", Domain(-pi, pi, specials=(0.0, pi / 4, -pi / 2, pi))),
        ),
        params=(),
        outputs=("e1", "e2"),
        # e1 or e2 cancels to ~1e-17 where cos(2 phi) or sin(2 phi) is near zero.
        tol=Tolerance(rtol=1e-12, atol=1e-15, why="cos/sin of 2 phi vanish on the axes"),
        doc=ellipticity_from_axis_ratio.__doc__ or "",
    )
)
AXIS_RATIO_FROM_ELLIPTICITY = register(
    Kernel(
        name="ellipticity.axis_ratio_from_ellipticity",
        point=axis_ratio_from_ellipticity,
        inputs=(
            Arg("e1", Domain(-0.7, 0.7, specials=(0.0, 1e-9, -1e-9, 0.3, -0.7))),
            Arg("e2", Domain(-0.7, 0.7, specials=(0.0, 1e-9, -1e-9, 0.7))),
        ),
        params=(),
        outputs=("q", "phi"),
        tol=Tolerance(rtol=1e-12, atol=1e-15),
        doc=axis_ratio_from_ellipticity.__doc__ or "",
    )
)

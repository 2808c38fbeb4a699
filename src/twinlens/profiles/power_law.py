"""The elliptical power-law (EPL) mass profile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twinlens.kernels.registry import get
from twinlens.profiles.base import MassProfile
from twinlens.profiles.checks import check_ellipticity, check_pair, check_positive, check_range

#: the open range of slopes the math supports; accuracy is guaranteed and tested on [1.2, 2.8]
SLOPE_RANGE = (1.0, 3.0)


@dataclass(frozen=True, eq=False)
class PowerLaw(MassProfile):
    """Elliptical power-law convergence (lenstronomy's ``EPL``, autogalaxy's ``PowerLaw``).

    In the frame of the major axis,
    ``kappa = (3 - slope) / 2 * (einstein_radius / sqrt(q x'^2 + y'^2 / q))^(slope - 1)``, so
    the mass inside the ellipse ``q x'^2 + y'^2 / q = einstein_radius^2`` is
    ``pi einstein_radius^2`` whatever ``q``. Deflections follow Tessore & Metcalf (2015); see
    :mod:`twinlens.kernels.power_law` for the math, its accuracy and the value returned at the
    exact centre (0 for every quantity).

    Parameters
    ----------
    centre : (float, float)
        ``(x, y)`` of the centre, arcsec.
    ell_comps : (float, float)
        Ellipticity components ``(e1, e2)``, ``|e| < 1`` (see :mod:`twinlens.kernels.ellipticity`).
    einstein_radius : float
        Einstein radius along the intermediate axis, arcsec, > 0.
    slope : float
        3D logarithmic density slope ``gamma`` (2: isothermal). Allowed: the open range
        ``1 < slope < 3`` that the math supports; the 1e-12 accuracy guarantee, the kernels'
        test domains and the tests cover ``1.2 <= slope <= 2.8`` (and ``q >= 0.1``).
    """

    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    einstein_radius: float = 1.0
    slope: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_pair(self, "centre", self.centre)
        check_ellipticity(self, "ell_comps", self.ell_comps)
        check_positive(self, "einstein_radius", self.einstein_radius)
        lo, hi = SLOPE_RANGE
        check_range(self, "slope", self.slope, lo, hi, low_open=True, high_open=True)

    def _call(self, quantity: str, x: Any, y: Any, backend: str) -> Any:
        return get(f"power_law.{quantity}")(
            x, y, *self.centre, *self.ell_comps, self.einstein_radius, self.slope, backend=backend
        )

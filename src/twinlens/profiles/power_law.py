"""The elliptical power-law (EPL) mass profile."""

from __future__ import annotations

import math
from dataclasses import dataclass

from twinlens.kernels import power_law
from twinlens.kernels.power_law import TRACED_Q_MIN
from twinlens.kernels.registry import KernelCall
from twinlens.messages import shown
from twinlens.profiles.base import MassProfile, all_concrete
from twinlens.profiles.checks import check_ellipticity, check_pair, check_positive, check_range

#: the open range of slopes the math supports; accuracy is guaranteed and tested on [1.2, 2.8]
SLOPE_RANGE = (1.0, 3.0)
#: the largest ``|e|`` accepted: axis ratio ``q >= TRACED_Q_MIN`` (0.06)
E_MAX_TRACED = (1.0 - TRACED_Q_MIN) / (1.0 + TRACED_Q_MIN)


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
        Ellipticity components ``(e1, e2)`` (see :mod:`twinlens.kernels.ellipticity`), with
        ``|e| <= E_MAX_TRACED`` (0.887), i.e. axis ratio ``q >= 0.06``: below it a traced
        ellipticity (a JAX search) sums too few terms of the series for the 1e-12 agreement with
        the exact (adaptive) series, so flatter values are refused on every backend (an error
        when concrete, ``-inf`` in a likelihood).
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
        self._check_flatness()
        check_positive(self, "einstein_radius", self.einstein_radius)
        lo, hi = SLOPE_RANGE
        check_range(self, "slope", self.slope, lo, hi, low_open=True, high_open=True)

    def _check_flatness(self) -> None:
        # q >= TRACED_Q_MIN (kernels/power_law.py says why): a clear error when concrete, the
        # same limit as a condition when traced or batched (a likelihood gives -inf there)
        e1, e2 = self.ell_comps
        e_max = E_MAX_TRACED
        if all_concrete(e1, e2):
            if not float(e1) ** 2 + float(e2) ** 2 <= e_max * e_max:
                norm = math.hypot(float(e1), float(e2))
                q = (1.0 - norm) / (1.0 + norm)
                raise ValueError(
                    f"PowerLaw.ell_comps must satisfy e1^2 + e2^2 <= {e_max:.4f}^2 (axis ratio "
                    f"q >= {TRACED_Q_MIN}, where a traced ellipticity's series holds 1e-12), "
                    f"got {shown(self.ell_comps)} (q = {q:.3g})"
                )
            return
        check_range(self, "ell_comps", e1 * e1 + e2 * e2, high=e_max * e_max)

    def kernel_call(self, quantity: str) -> KernelCall:
        """The power law's kernel of ``quantity``."""
        params = (*self.centre, *self.ell_comps, self.einstein_radius, self.slope)
        return KernelCall(power_law.KERNELS[quantity], params)

"""The NFW halo as a lens: closed forms when round, a Gaussian decomposition when elliptical."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twinlens.fields import static_field
from twinlens.kernels import gauss_decomposition as gd
from twinlens.kernels import nfw as nfw_kernels
from twinlens.kernels.registry import KernelCall
from twinlens.profiles.base import ellipse_form
from twinlens.profiles.checks import check_positive
from twinlens.profiles.decomposed import Recipe, _Decomposed

#: Gaussians and their range (units of ``r_s``) for the elliptical NFW: the fewest found that
#: keep the deflections within 1e-6 of the exact ones over 0.01 - 20 ``r_s`` for q >= 0.5
#: (measured 4e-7; tests/test_nfw.py). The range reaches below 1e-3 ``r_s`` because along the
#: major axis the point at radius r lies on the ellipse of radius ``sqrt(q) r``, and the
#: elliptical deflection weights the inner profile differently from the round one. Flatter
#: profiles need a wider range (and more Gaussians).
NFW_N_GAUSSIANS = 41
NFW_SIGMA_RANGE = (3e-4, 3e2)


@dataclass(frozen=True, eq=False)
class NFW(_Decomposed):
    """Navarro-Frenk-White halo, projected, with the ellipticity in the convergence.

    ``kappa = 2 kappa_s (1 - F(x)) / (x^2 - 1)`` with ``x = sqrt(q x'^2 + y'^2 / q) / r_s``
    (``x'`` along the major axis; ``F`` in :mod:`twinlens.kernels.nfw`). This is
    lenstronomy's ``NFW_ELLIPSE_CSE`` convention (ellipticity in the convergence, radius
    ``sqrt(q x^2 + y^2 / q)``) and autogalaxy's ``NFW`` parameters; lenstronomy's
    ``alpha_Rs = 4 kappa_s r_s (1 + ln(1/2))`` and ``Rs = scale_radius``.

    Round (``ell_comps == (0, 0)``, concrete): every quantity is a closed form
    (:mod:`twinlens.kernels.nfw`), exact to float64 on every backend. At the centre itself the
    convergence is finite by convention (``~689 kappa_s``, its value at ``1e-150 r_s``) and the
    deflection is 0.

    Elliptical, or a traced ellipticity: every quantity comes from the decomposition of the
    NFW density into ``n_gaussians`` projected Gaussians
    (:func:`twinlens.kernels.gauss_decomposition.decompose_gnfw` with ``gamma = 1``), evaluated
    as an :class:`~twinlens.mass.MGE`: deflections within ``1e-6`` of the exact elliptical NFW
    over ``0.01 - 20 r_s`` for ``q >= 0.5``; convergence, hessian and potential are those of
    the same MGE, so the four quantities stay mutually consistent. Gradients in ``(e1, e2)``
    are exact at ``e = (0, 0)`` (the MGE's near-round form).

    Parameters
    ----------
    centre : (float, float)
        ``(x, y)`` of the centre, arcsec.
    ell_comps : (float, float)
        Ellipticity components ``(e1, e2)``, ``|e| < 1``.
    kappa_s : float
        ``rho_s r_s / Sigma_crit``, dimensionless, > 0.
    scale_radius : float
        ``r_s``, arcsec, > 0.
    n_gaussians : int
        Gaussians of the elliptical form (static, keyword-only; default 41).
    """

    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    kappa_s: float = 0.05
    scale_radius: float = 1.0
    n_gaussians: int = static_field(default=NFW_N_GAUSSIANS, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_shape()
        check_positive(self, "kappa_s", self.kappa_s)
        check_positive(self, "scale_radius", self.scale_radius)

    @property
    def alpha_rs(self) -> Any:
        """lenstronomy's ``alpha_Rs``: the round profile's deflection at ``r_s``, arcsec."""
        return nfw_kernels.alpha_rs_from_kappa_s(self.kappa_s, self.scale_radius)

    def _recipe(self) -> Recipe:
        # rho_s in Sigma_crit per arcsec: kappa_s / r_s
        return (
            gd.decompose_gnfw,
            self.kappa_s / self.scale_radius,
            (self.scale_radius, 1.0),
            (("n_sigma", self.n_gaussians), ("sigma_range", NFW_SIGMA_RANGE)),
        )

    def _round(self) -> bool:
        return ellipse_form(*self.ell_comps) == "spherical"

    def kernel_call(self, quantity: str) -> KernelCall | None:
        """The round closed form of ``quantity``, or the equivalent MGE's kernel."""
        if self._round():
            params = (*self.centre, self.kappa_s, self.scale_radius)
            return KernelCall(nfw_kernels.KERNELS[quantity], params)
        return super().kernel_call(quantity)

"""Lensing quantities that follow from the hessian of the potential, for any profile."""

from __future__ import annotations


def jacobian_determinant(psi_xx, psi_xy, psi_yy, psi_yx=None):
    """``det(I - H)``, the lens mapping's Jacobian determinant (zero on critical curves).
    ``psi_yx`` defaults to ``psi_xy``; give it for a mapping whose ``H`` is not symmetric (a
    multi-plane lens)."""
    if psi_yx is None:
        psi_yx = psi_xy
    return (1.0 - psi_xx) * (1.0 - psi_yy) - psi_xy * psi_yx


def magnification(psi_xx, psi_xy, psi_yy):
    """Signed magnification ``1 / det(I - H)`` from the hessian components."""
    return 1.0 / jacobian_determinant(psi_xx, psi_xy, psi_yy)


def shear(psi_xx, psi_xy, psi_yy):
    """Shear components ``(gamma_1, gamma_2) = ((psi_xx - psi_yy) / 2, psi_xy)``."""
    return 0.5 * (psi_xx - psi_yy), psi_xy

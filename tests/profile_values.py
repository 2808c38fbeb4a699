"""One valid instance of every mass and light profile, shared by the tests that sweep them all
(bad values, every parameter free).

Values are away from every boundary, no parameter sits at 0 (where a relative perturbation
would not move it), and the multipoles have odd orders, whose ``einstein_radius`` enters the
deflections (it is unused for even orders).
"""

from __future__ import annotations

import dataclasses

import twinlens.light as light
import twinlens.mass as mass

C = (0.02, -0.03)
E = (0.08, -0.05)

MASS = {
    "GNFW": mass.GNFW(C, E, rho_s=0.1, r_s=5.0, gamma=1.5),
    "MGE": mass.MGE((0.2, 0.5, 1.0), (0.6, 0.3, 0.1), C, E, 1.2),
    "NFW": mass.NFW(C, E, kappa_s=0.2, scale_radius=2.0),
    "NIE": mass.NIE(C, E, 0.8, 0.05),
    "SIE": mass.SIE(C, E, 0.8),
    "SIS": mass.SIS(C, 0.8),
    "CoredNFW": mass.CoredNFW(C, E, rho_s=0.1, r_s=5.0, r_c=0.5),
    "EllipticalMultipole": mass.EllipticalMultipole(3, 0.02, 10.0, 0.8, C, 0.8, 5.0),
    "ExternalShear": mass.ExternalShear(0.03, -0.02, C),
    "Gaussian": mass.Gaussian(C, E, 0.5, 0.8, 1.1),
    "MassSheet": mass.MassSheet(0.05, C),
    "MassSum": mass.MassSum((mass.SIE(C, E, 0.8), mass.ExternalShear(0.03, -0.02, C))),
    "Multipole": mass.Multipole(1, 0.02, 10.0, C, 0.8),
    "PointMass": mass.PointMass(C, 0.6),
    "PowerLaw": mass.PowerLaw(C, E, 0.8, 2.1),
    "SersicMass": mass.SersicMass(C, E, 0.5, 2.5, 1.0, 0.6),
}
LIGHT = {
    "CoreSersic": light.CoreSersic(C, E, 0.3, 2.5, 0.05, 0.3, 2.5, 1.0),
    "Exponential": light.Exponential(C, E, 0.3, 1.0),
    "GaussianBasis": light.GaussianBasis((0.1, 0.3), C, E),
    "GaussianLight": light.GaussianLight(C, E, 0.2, 1.0),
    "LinearCoreSersic": light.LinearCoreSersic(C, E, 0.3, 2.5, 0.05, 0.3, 2.5),
    "LinearExponential": light.LinearExponential(C, E, 0.3),
    "LinearGaussian": light.LinearGaussian(C, E, 0.2),
    "LinearSersic": light.LinearSersic(C, E, 0.3, 2.5),
    "MGELight": light.MGELight((0.1, 0.3), (1.0, 0.5), C, E),
    "Sersic": light.Sersic(C, E, 0.3, 2.5, 1.0),
}
ALL = {**MASS, **LIGHT}


def profile_classes() -> set[str]:
    """The names of every concrete profile class the package exports."""
    return {
        n
        for module in (mass, light)
        for n in module.__all__
        if dataclasses.is_dataclass(getattr(module, n))
    }

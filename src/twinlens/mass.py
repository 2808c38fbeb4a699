"""Mass profiles: Gaussian, MGE, and the profiles built on Gaussian decompositions
(SersicMass, GNFW, CoredNFW), and NFW.

Every profile has ``convergence``, ``deflections``, ``hessian``, ``potential``,
``magnification`` and ``shear`` taking positions ``(..., 2)`` and ``backend=``.
"""

from twinlens.profiles.base import MassProfile
from twinlens.profiles.composite import MassSum
from twinlens.profiles.decomposed import GNFW, CoredNFW, SersicMass
from twinlens.profiles.gaussian import MGE, Gaussian
from twinlens.profiles.isothermal import NIE, SIE, SIS
from twinlens.profiles.multipole import EllipticalMultipole, Multipole
from twinlens.profiles.nfw import NFW
from twinlens.profiles.power_law import PowerLaw
from twinlens.profiles.simple import ExternalShear, MassSheet, PointMass

__all__ = [
    "GNFW",
    "MGE",
    "NFW",
    "NIE",
    "SIE",
    "SIS",
    "CoredNFW",
    "EllipticalMultipole",
    "ExternalShear",
    "Gaussian",
    "MassProfile",
    "MassSheet",
    "MassSum",
    "Multipole",
    "PointMass",
    "PowerLaw",
    "SersicMass",
]

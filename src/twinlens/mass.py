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

# every mass profile imported above, so that a new profile needs only its import line here
__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, MassProfile)
)

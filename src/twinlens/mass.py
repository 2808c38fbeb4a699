"""Mass profiles: Gaussian, MGE, and the profiles built on Gaussian decompositions
(SersicMass, GNFW, CoredNFW), and NFW.

Every profile has ``convergence``, ``deflections``, ``hessian``, ``potential``,
``magnification`` and ``shear`` taking positions ``(..., 2)`` and ``backend=``.
"""

from twinlens.profiles.base import MassProfile as MassProfile
from twinlens.profiles.composite import MassSum as MassSum
from twinlens.profiles.decomposed import GNFW as GNFW
from twinlens.profiles.decomposed import CoredNFW as CoredNFW
from twinlens.profiles.decomposed import SersicMass as SersicMass
from twinlens.profiles.gaussian import MGE as MGE
from twinlens.profiles.gaussian import Gaussian as Gaussian
from twinlens.profiles.isothermal import NIE as NIE
from twinlens.profiles.isothermal import SIE as SIE
from twinlens.profiles.isothermal import SIS as SIS
from twinlens.profiles.multipole import EllipticalMultipole as EllipticalMultipole
from twinlens.profiles.multipole import Multipole as Multipole
from twinlens.profiles.nfw import NFW as NFW
from twinlens.profiles.power_law import PowerLaw as PowerLaw
from twinlens.profiles.simple import ExternalShear as ExternalShear
from twinlens.profiles.simple import MassSheet as MassSheet
from twinlens.profiles.simple import PointMass as PointMass

# Every mass profile imported above (``import X as X``: a re-export), so that a new profile
# needs only its import line here.
__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, MassProfile)
)

"""Mass profiles: Gaussian, MGE, and the profiles built on Gaussian decompositions
(SersicMass, GNFW, CoredNFW).

Every profile has ``convergence``, ``deflections``, ``hessian``, ``potential``,
``magnification`` and ``shear`` taking positions ``(..., 2)`` and ``backend=``.
"""

from twinlens.profiles.base import MassProfile
from twinlens.profiles.decomposed import GNFW, CoredNFW, SersicMass
from twinlens.profiles.gaussian import MGE, Gaussian

__all__ = ["GNFW", "MGE", "CoredNFW", "Gaussian", "MassProfile", "SersicMass"]

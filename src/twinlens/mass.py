"""Mass profiles: ``twinlens.mass.Gaussian``, ``twinlens.mass.MGE``.

Every profile has ``convergence``, ``deflections``, ``hessian``, ``potential``,
``magnification`` and ``shear`` taking positions ``(..., 2)`` and ``backend=``.
"""

from twinlens.profiles.base import MassProfile
from twinlens.profiles.gaussian import MGE, Gaussian

__all__ = ["MGE", "Gaussian", "MassProfile"]

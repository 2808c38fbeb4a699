"""Light profiles: Sersic, exponential, core-Sersic, Gaussian and multi-Gaussian, each with a
linear variant whose intensity a fit solves.

Every profile has ``image(xy, backend=None)`` taking positions ``(..., 2)``.
"""

from twinlens.profiles.light import CoreSersic as CoreSersic
from twinlens.profiles.light import Exponential as Exponential
from twinlens.profiles.light import GaussianBasis as GaussianBasis
from twinlens.profiles.light import GaussianLight as GaussianLight
from twinlens.profiles.light import LightProfile as LightProfile
from twinlens.profiles.light import LinearCoreSersic as LinearCoreSersic
from twinlens.profiles.light import LinearExponential as LinearExponential
from twinlens.profiles.light import LinearGaussian as LinearGaussian
from twinlens.profiles.light import LinearSersic as LinearSersic
from twinlens.profiles.light import MGELight as MGELight
from twinlens.profiles.light import Sersic as Sersic

# Every light profile imported above (``import X as X``: a re-export), as in twinlens.mass, so
# that a new profile needs only its import line here.
__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, LightProfile)
)

"""Light profiles: Sersic, exponential, core-Sersic, Gaussian and multi-Gaussian, each with a
linear variant whose intensity a fit solves.

Every profile has ``image(xy, backend=None)`` taking positions ``(..., 2)``.
"""

from twinlens.profiles.light import (
    CoreSersic,
    Exponential,
    GaussianBasis,
    GaussianLight,
    LightProfile,
    LinearCoreSersic,
    LinearExponential,
    LinearGaussian,
    LinearSersic,
    MGELight,
    Sersic,
)

__all__ = [
    "CoreSersic",
    "Exponential",
    "GaussianBasis",
    "GaussianLight",
    "LightProfile",
    "LinearCoreSersic",
    "LinearExponential",
    "LinearGaussian",
    "LinearSersic",
    "MGELight",
    "Sersic",
]

"""Spherical Jeans kinematics: luminosity-weighted line-of-sight velocity dispersions inside an
aperture, with Gaussian or Moffat seeing, on the numba, numpy and JAX backends
(docs/kinematics.rst)."""

from twinlens.kinematics.dispersion import projected_dispersion, velocity_dispersion
from twinlens.kinematics.models import (
    CircularAperture,
    ConstantBeta,
    GaussianSeeing,
    Hernquist,
    Isotropic,
    MoffatSeeing,
    OsipkovMerritt,
    PointMass,
    PowerLawMass,
    PowerLawTracer,
    Slit,
)

__all__ = [
    "CircularAperture",
    "ConstantBeta",
    "GaussianSeeing",
    "Hernquist",
    "Isotropic",
    "MoffatSeeing",
    "OsipkovMerritt",
    "PointMass",
    "PowerLawMass",
    "PowerLawTracer",
    "Slit",
    "projected_dispersion",
    "velocity_dispersion",
]

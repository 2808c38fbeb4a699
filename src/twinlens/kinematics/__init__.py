"""Spherical Jeans kinematics: luminosity-weighted line-of-sight velocity dispersions inside an
aperture, with Gaussian or Moffat seeing, on the numba, numpy and JAX backends
(docs/kinematics.rst)."""

from twinlens.kinematics.dispersion import projected_dispersion, velocity_dispersion
from twinlens.kinematics.models import (
    Annulus,
    CircularAperture,
    ConstantBeta,
    GaussianLight,
    GaussianMass,
    GaussianSeeing,
    Hernquist,
    Isotropic,
    MassSum,
    MGELight,
    MoffatSeeing,
    NFWMass,
    OsipkovMerritt,
    PointMass,
    PowerLawMass,
    PowerLawTracer,
    SersicLight,
    Slit,
)

__all__ = [
    "Annulus",
    "CircularAperture",
    "ConstantBeta",
    "GaussianLight",
    "GaussianMass",
    "GaussianSeeing",
    "Hernquist",
    "Isotropic",
    "MGELight",
    "MassSum",
    "MoffatSeeing",
    "NFWMass",
    "OsipkovMerritt",
    "PointMass",
    "PowerLawMass",
    "PowerLawTracer",
    "SersicLight",
    "Slit",
    "projected_dispersion",
    "velocity_dispersion",
]

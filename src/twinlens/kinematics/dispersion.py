"""The public entry points: ``sigma^2 I`` at projected radii, and aperture dispersions."""

from __future__ import annotations

from typing import Any

import numpy as np

from twinlens.backend import array_module, resolve_backend
from twinlens.backend.concrete import is_concrete
from twinlens.cosmology import LensDistances
from twinlens.kinematics import aperture as ap
from twinlens.kinematics import jeans
from twinlens.kinematics.models import (
    CircularAperture,
    ConstantBeta,
    GaussianSeeing,
    Isotropic,
    MoffatSeeing,
    OsipkovMerritt,
    PointMass,
    PowerLawMass,
    Slit,
)

Mass = PowerLawMass | PointMass
Anisotropy = Isotropic | ConstantBeta | OsipkovMerritt


def _leaves(*objs: Any) -> list:
    out: list = []
    for obj in objs:
        if obj is not None:
            out.extend(getattr(obj, n) for n in getattr(obj, "__dataclass_fields__", ()))
    return out


def _check_rates(mass: Mass, light: Any, anisotropy: Anisotropy) -> None:
    """The integrals converge only when the tracer falls fast enough (concrete values only)."""
    _, p, q, _ = light.shape()
    gamma = mass.slope()
    extra = 1.0 if isinstance(anisotropy, OsipkovMerritt) else 0.0
    if isinstance(anisotropy, ConstantBeta) and is_concrete(anisotropy.beta):
        extra = max(2.0 * float(anisotropy.beta) - 1.0, 0.0)
    if not all(is_concrete(v) for v in (p, q, gamma)):
        return
    if float(p) + float(q) - 1.0 <= 0.0 or float(p + q + gamma) - 3.0 - extra <= 0.0:
        raise ValueError(
            f"the light ({light!r}) falls too slowly for the mass ({mass!r}) and anisotropy "
            f"({anisotropy!r}): sigma^2 I diverges; a power-law tracer needs slope > 1 and "
            f"slope + gamma > 3 (+ 1 with Osipkov-Merritt, + 2 beta - 1 with beta > 1/2)"
        )


def _mass_scale(mass: Mass, distances: LensDistances, xp: Any) -> Any:
    unit = jeans.mass_unit(distances.d_s, distances.d_ds)
    if isinstance(mass, PointMass):
        return unit * mass.theta_e**2
    f = jeans.sphere_to_cylinder(mass.gamma, xp)
    return unit * f * mass.theta_e ** (mass.gamma - 1.0)


def _kernel_call(radius: Any, mass: Mass, light: Any, anisotropy: Anisotropy, backend: str):
    a, p, q, _ = light.shape()
    head = (mass.slope(), a, p, q)
    xp = array_module(backend)
    extra: tuple[Any, ...]
    if isinstance(anisotropy, ConstantBeta):
        nodes = jeans.constant_beta_nodes()
        kernel, extra = jeans.CONSTANT_BETA, (anisotropy.beta,)
    else:
        nodes = jeans.gauss_legendre_unit(jeans.N_Y)
        if isinstance(anisotropy, OsipkovMerritt):
            kernel, extra = jeans.OSIPKOV_MERRITT, (anisotropy.r_ani,)
        elif isinstance(anisotropy, Isotropic):
            kernel, extra = jeans.ISOTROPIC, ()
        else:
            raise TypeError(
                f"anisotropy must be Isotropic, ConstantBeta or OsipkovMerritt, "
                f"got {type(anisotropy).__name__}"
            )
    if backend == "jax":
        nodes = tuple(xp.asarray(n) for n in nodes)
    return kernel(radius, *head, *extra, *nodes, backend=backend)


def projected_dispersion(
    radius: Any,
    mass: Mass,
    light: Any,
    anisotropy: Anisotropy,
    distances: LensDistances,
    backend: str | None = None,
) -> tuple[Any, Any]:
    """``(sigma_los^2 I, I)`` at projected radii ``radius`` (arcsec, > 0, any shape).

    ``I`` is the light's surface brightness per arcsec^2 (unit luminosity; for a power-law
    tracer, ``nu = r^-slope``), and ``sigma_los^2 I`` carries km^2/s^2 on top. Their ratio is
    the line-of-sight dispersion squared at that radius.
    """
    _check_rates(mass, light, anisotropy)
    backend = resolve_backend(backend, radius, *_leaves(mass, light, anisotropy))
    xp = array_module(backend)
    if backend != "jax":
        radius = np.asarray(radius, dtype=float)
        if np.any(~(radius > 0.0)):
            raise ValueError("radius must be > 0 arcsec (projected radii), got a value <= 0")
    s2i, inten = _kernel_call(radius, mass, light, anisotropy, backend)
    norm = light.shape()[3]
    return s2i * (norm * _mass_scale(mass, distances, xp)), inten * norm


def _aperture_nodes(
    aperture: CircularAperture | Slit, seeing: GaussianSeeing | MoffatSeeing | None, xp: Any
) -> tuple[Any, Any]:
    """The aperture's ``(radii, weights)`` through the seeing."""
    if not isinstance(aperture, CircularAperture | Slit):
        raise TypeError(f"aperture must be CircularAperture or Slit, got {type(aperture).__name__}")
    if isinstance(seeing, MoffatSeeing):
        if isinstance(aperture, CircularAperture):
            return ap.circle_moffat(aperture.radius, seeing.fwhm, seeing.beta, xp)
        return ap.slit_moffat(aperture.length, aperture.width, seeing.fwhm, seeing.beta, xp)
    if seeing is not None and not isinstance(seeing, GaussianSeeing):
        raise TypeError(f"seeing must be GaussianSeeing, MoffatSeeing or None, got {seeing!r}")
    sigma = None if seeing is None else seeing.fwhm * ap.FWHM_TO_SIGMA
    if isinstance(aperture, CircularAperture):
        return ap.circle(aperture.radius, sigma, xp)
    return ap.slit(aperture.length, aperture.width, sigma, xp)


def velocity_dispersion(
    mass: Mass,
    light: Any,
    anisotropy: Anisotropy,
    aperture: CircularAperture | Slit,
    distances: LensDistances,
    seeing: GaussianSeeing | MoffatSeeing | None = None,
    backend: str | None = None,
) -> Any:
    """Luminosity-weighted line-of-sight velocity dispersion inside an aperture, km/s.

    Parameters
    ----------
    mass : PowerLawMass or PointMass
    light : Hernquist or PowerLawTracer
        (A power-law tracer has infinite light: use it for radial checks, not in apertures.)
    anisotropy : Isotropic, ConstantBeta or OsipkovMerritt
    aperture : CircularAperture or Slit
    distances : LensDistances
        From :func:`twinlens.cosmology.lens_distances` (only ``d_s / d_ds`` enters).
    seeing : GaussianSeeing or MoffatSeeing, optional
        None: no seeing.
    backend : {"numba", "jax", "numpy"}, optional
        Default: JAX when any parameter is a JAX array or tracer, else the process default.

    Returns
    -------
    float or JAX scalar
        ``sqrt(int W sigma^2 I / int W I)``, km/s.
    """
    _check_rates(mass, light, anisotropy)
    backend = resolve_backend(backend, *_leaves(mass, light, anisotropy, aperture, seeing))
    xp = array_module(backend)
    radii, weights = _aperture_nodes(aperture, seeing, xp)
    radii = radii.reshape(-1)
    weights = weights.reshape(-1)
    s2i, inten = _kernel_call(radii, mass, light, anisotropy, backend)
    ratio = xp.sum(weights * s2i) / xp.sum(weights * inten)
    out = xp.sqrt(ratio * _mass_scale(mass, distances, xp))
    return float(out) if backend != "jax" else out


__all__ = ["projected_dispersion", "velocity_dispersion"]

"""The public entry points: ``sigma^2 I`` at projected radii, and aperture dispersions."""

from __future__ import annotations

from typing import Any

import numpy as np

from twinlens.backend import array_module, resolve_backend
from twinlens.backend.concrete import is_concrete
from twinlens.cosmology import LensDistances
from twinlens.kinematics import aperture as ap
from twinlens.kinematics import general, jeans
from twinlens.kinematics.models import (
    Annulus,
    CircularAperture,
    ConstantBeta,
    GaussianLight,
    GaussianMass,
    GaussianSeeing,
    Isotropic,
    MassSum,
    MoffatSeeing,
    NFWMass,
    OsipkovMerritt,
    PointMass,
    PowerLawMass,
    SersicLight,
    Slit,
)

Mass = PowerLawMass | PointMass | NFWMass | GaussianMass | MassSum
Anisotropy = Isotropic | ConstantBeta | OsipkovMerritt


def _leaves(*objs: Any) -> list:
    """Every parameter value inside the objects (fields of fields, tuples' items)."""
    out: list = []
    for obj in objs:
        if obj is None:
            continue
        if isinstance(obj, tuple):
            out.extend(_leaves(*obj))
        elif hasattr(obj, "__dataclass_fields__"):
            out.extend(_leaves(*(getattr(obj, n) for n in obj.__dataclass_fields__)))
        else:
            out.append(obj)
    return out


def _extra(anisotropy: Anisotropy) -> Any:
    """What the anisotropy kernel's growth takes off the dispersion integrand's decay rate."""
    if isinstance(anisotropy, OsipkovMerritt):
        return 1.0
    if isinstance(anisotropy, ConstantBeta):
        beta = anisotropy.beta
        if is_concrete(beta):
            return max(2.0 * float(beta) - 1.0, 0.0)
        return array_module("jax").maximum(2.0 * beta - 1.0, 0.0)
    return 0.0


def _check_rates(mass: Mass, light: Any, anisotropy: Anisotropy) -> None:
    """The integrals converge only when the tracer falls fast enough (concrete values only)."""
    if isinstance(light, GaussianLight | SersicLight):
        return
    _, p, q, _ = light.shape()
    growth, extra = mass.growth(), _extra(anisotropy)
    if not all(is_concrete(v) for v in (p, q, growth, extra)):
        return
    if float(p) + float(q) - 1.0 <= 0.0 or float(p + q - growth) - extra <= 0.0:
        raise ValueError(
            f"the light ({light!r}) falls too slowly for the mass ({mass!r}) and anisotropy "
            f"({anisotropy!r}): sigma^2 I diverges; a power-law tracer needs slope > 1 and "
            f"slope + gamma > 3 (+ 1 with Osipkov-Merritt, + 2 beta - 1 with beta > 1/2)"
        )


def _general_call(
    radius: Any, mass: Mass, light: Any, anisotropy: Anisotropy, backend: str, n_y: int
):
    """``(sigma^2 I / mass_unit, I)`` by :func:`general.radial_sums` (any mass and light),
    ``n_y`` nodes along the line of sight."""
    xp = array_module(backend)
    radius = xp.asarray(radius, dtype=float)
    flat = radius.reshape(-1)
    if isinstance(anisotropy, Isotropic):
        kind, par = "iso", None
    elif isinstance(anisotropy, OsipkovMerritt):
        kind, par = "om", anisotropy.r_ani
    elif isinstance(anisotropy, ConstantBeta):
        kind, par = "beta", anisotropy.beta
    else:
        raise TypeError(
            f"anisotropy must be Isotropic, ConstantBeta or OsipkovMerritt, got {anisotropy!r}"
        )
    if isinstance(light, GaussianLight | SersicLight):
        lums, sigmas = light.gaussians(xp)

        def nu(r: Any) -> Any:
            return general.GAUSSIAN_LIGHT(r.reshape(-1), lums, sigmas, backend=backend).reshape(
                r.shape
            )

        big_y = general.gaussian_range(flat, xp.max(sigmas), xp)
    else:
        a, p, q, norm = light.shape()

        def nu(r: Any) -> Any:
            return norm * jeans.light_density(r, a, p, q)

        growth = mass.growth()
        big_y = jeans.line_of_sight_range(flat, 3.0 - growth, a, p, q, _extra(anisotropy))
    s2i, inten = general.radial_sums(
        flat, big_y, nu, lambda r: mass.enclosed(r, backend), kind, par, xp, n_y
    )
    return s2i.reshape(radius.shape), inten.reshape(radius.shape)


def _profile(
    radius: Any,
    mass: Mass,
    light: Any,
    anisotropy: Anisotropy,
    unit: Any,
    backend: str,
    n_y: int = jeans.N_Y,
) -> tuple[Any, Any]:
    """``(sigma^2 I, I)``, km^2/s^2 times light and light: the power law's per-point kernels
    where they apply, else the general sums; ``n_y`` nodes along the line of sight."""
    if isinstance(mass, PowerLawMass | PointMass) and hasattr(light, "shape"):
        s2i, inten = _kernel_call(radius, mass, light, anisotropy, backend, n_y)
        norm = light.shape()[3]
        xp = array_module(backend)
        return s2i * (norm * unit * _mass_scale(mass, xp)), inten * norm
    s2i, inten = _general_call(radius, mass, light, anisotropy, backend, n_y)
    return s2i * unit, inten


def _mass_scale(mass: PowerLawMass | PointMass, xp: Any) -> Any:
    if isinstance(mass, PointMass):
        return mass.theta_e**2
    f = jeans.sphere_to_cylinder(mass.gamma, xp)
    return f * mass.theta_e ** (mass.gamma - 1.0)


def _kernel_call(
    radius: Any,
    mass: PowerLawMass | PointMass,
    light: Any,
    anisotropy: Anisotropy,
    backend: str,
    n_y: int = jeans.N_Y,
):
    a, p, q, _ = light.shape()
    head = (mass.slope(), a, p, q)
    xp = array_module(backend)
    extra: tuple[Any, ...]
    if isinstance(anisotropy, ConstantBeta):
        nodes = jeans.constant_beta_nodes(n_y)
        kernel, extra = jeans.CONSTANT_BETA, (anisotropy.beta,)
    else:
        nodes = jeans.gauss_legendre_unit(n_y)
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
    if backend != "jax":
        radius = np.asarray(radius, dtype=float)
        if np.any(~(radius > 0.0)):
            raise ValueError("radius must be > 0 arcsec (projected radii), got a value <= 0")
    unit = jeans.mass_unit(distances.d_s, distances.d_ds)
    return _profile(radius, mass, light, anisotropy, unit, backend)


def _aperture_nodes(
    aperture: CircularAperture | Annulus | Slit,
    seeing: GaussianSeeing | MoffatSeeing | None,
    xp: Any,
) -> tuple[Any, Any]:
    """The aperture's ``(radii, weights)`` through the seeing (an annulus: its outer disc's
    nodes, and its inner disc's with their weights negated: the window is linear in the
    aperture)."""
    if isinstance(aperture, Annulus):
        r1, w1 = _aperture_nodes(CircularAperture(aperture.r_out), seeing, xp)
        r2, w2 = _aperture_nodes(CircularAperture(aperture.r_in), seeing, xp)
        return xp.concatenate([r1, r2], axis=-1), xp.concatenate([w1, -w2], axis=-1)
    if not isinstance(aperture, CircularAperture | Slit):
        raise TypeError(
            f"aperture must be CircularAperture, Annulus or Slit, got {type(aperture).__name__}"
        )
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
    aperture: CircularAperture | Annulus | Slit,
    distances: LensDistances,
    seeing: GaussianSeeing | MoffatSeeing | None = None,
    backend: str | None = None,
) -> Any:
    """Luminosity-weighted line-of-sight velocity dispersion inside an aperture, km/s.

    Parameters
    ----------
    mass : PowerLawMass, PointMass, NFWMass, GaussianMass or MassSum
    light : Hernquist, PowerLawTracer, GaussianLight (MGELight) or SersicLight
        (A power-law tracer has infinite light: use it for radial checks, not in apertures.)
    anisotropy : Isotropic, ConstantBeta or OsipkovMerritt
    aperture : CircularAperture, Annulus or Slit
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
    return _weighted(
        radii.reshape(-1), weights.reshape(-1), mass, light, anisotropy, distances, backend
    )


def _weighted(
    radii: Any, weights: Any, mass: Any, light: Any, anisotropy: Anisotropy, distances: Any,
    backend: str, n_y: int = jeans.N_Y,
) -> Any:  # fmt: skip
    """``sqrt(sum w sigma^2 I / sum w I)`` over a rule's radii, km/s."""
    xp = array_module(backend)
    unit = jeans.mass_unit(distances.d_s, distances.d_ds)
    s2i, inten = _profile(radii, mass, light, anisotropy, unit, backend, n_y)
    out = xp.sqrt(xp.sum(weights * s2i) / xp.sum(weights * inten))
    return float(out) if backend != "jax" else out


#: Gauss-Legendre nodes along the line of sight on an aperture's radial rule: fewer than a
#: single radius's :data:`~twinlens.kinematics.jeans.N_Y`, as the light-weighted sum over an
#: aperture gives little weight to the radii that need more (tests/test_kinematics_rule.py
#: holds the rule to the two-dimensional rule's 160 nodes)
RULE_N_Y = 96


def rule_dispersion(
    rule: tuple[Any, Any],
    mass: Mass,
    light: Any,
    anisotropy: Anisotropy,
    distances: LensDistances,
    backend: str | None = None,
) -> Any:
    """:func:`velocity_dispersion` on a fixed aperture's radial rule
    (:func:`~twinlens.kinematics.radial_rule.aperture_rule`) with :data:`RULE_N_Y` nodes along
    the line of sight: the same value, from a few hundred radii, for a likelihood that
    evaluates one aperture many times."""
    _check_rates(mass, light, anisotropy)
    backend = resolve_backend(backend, *_leaves(mass, light, anisotropy))
    xp = array_module(backend)
    radii, weights = (xp.asarray(a) for a in rule)
    return _weighted(radii, weights, mass, light, anisotropy, distances, backend, RULE_N_Y)


__all__ = ["projected_dispersion", "rule_dispersion", "velocity_dispersion"]

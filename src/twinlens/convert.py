"""Parameters to and from lenstronomy and autogalaxy, without importing either package.

lenstronomy (``from_lenstronomy(name, kwargs)`` / ``to_lenstronomy(profile)``):

``GAUSSIAN_ELLIPSE_KAPPA``
    ``amp, sigma, e1, e2, center_x, center_y``: ``kappa = amp / (2 pi sigma^2) exp(-(q x'^2 +
    y'^2 / q) / (2 sigma^2))``, the same ellipse, sigma and ``(e1, e2)`` as ours, so
    ``mass_to_light_ratio * intensity = amp / (2 pi sigma^2)``.
``MULTI_GAUSSIAN_ELLIPSE_KAPPA``
    ``amp, sigma`` (lists), ``e1, e2, center_x, center_y``, and optionally ``scale_factor``
    (multiplies every ``amp``), componentwise as above.

autogalaxy (``from_autogalaxy(name, kwargs)`` / ``to_autogalaxy(profile)``, names of
``autogalaxy.mp``):

``Gaussian``
    ``centre`` is ``(y, x)``; ``ell_comps`` is ``(e2, e1)`` in our order (autogalaxy puts the
    ``sin 2 phi`` component first); its ellipse is ``q^2 x'^2 + y'^2`` with dispersion
    ``sigma_ag``, so ``sigma_ag = sigma * sqrt(q)``; ``intensity`` and ``mass_to_light_ratio``
    are the same (peak convergence ``mass_to_light_ratio * intensity``). autogalaxy clamps its
    axis ratio at 0.9999 (on every path), so for ``|e| < 5e-5`` autogalaxy's own evaluation of
    the converted profile is not exactly this one.

Worked example::

    >>> from twinlens import convert
    >>> g = convert.from_lenstronomy("GAUSSIAN_ELLIPSE_KAPPA",
    ...     {"amp": 2.0, "sigma": 0.5, "e1": 0.1, "e2": -0.05, "center_x": 0.2, "center_y": 0.0})
    >>> round(g.intensity, 6), g.ell_comps
    (1.27324, (0.1, -0.05))
    >>> convert.to_lenstronomy(g)[0]
    'GAUSSIAN_ELLIPSE_KAPPA'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity
from twinlens.profiles.base import MassProfile
from twinlens.profiles.gaussian import MGE, Gaussian

_TWO_PI = 2.0 * math.pi


def _require(name: str, kwargs: Mapping, keys: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in kwargs]
    if missing:
        raise KeyError(f"{name} needs {', '.join(keys)}; missing {', '.join(missing)}")


def _check_inputs(source: str, sigma: Any, e1: float, e2: float, ell_key: str) -> None:
    # checked before any conversion divides by sigma or takes sqrt(q), naming the source's keys
    if not np.all(np.asarray(sigma, dtype=float) > 0):
        raise ValueError(f"{source}: sigma must be > 0, got {sigma!r}")
    if not math.hypot(e1, e2) < 1.0:
        raise ValueError(f"{source}: {ell_key} must satisfy e1^2 + e2^2 < 1, got {(e1, e2)!r}")


def from_lenstronomy(name: str, kwargs: Mapping[str, Any]) -> MassProfile:
    """Our profile equal to lenstronomy's profile ``name`` with keyword arguments ``kwargs``."""
    if name in ("GAUSSIAN_ELLIPSE_KAPPA", "MULTI_GAUSSIAN_ELLIPSE_KAPPA"):
        _require(name, kwargs, ("amp", "sigma", "e1", "e2"))
        _check_inputs(
            f"lenstronomy {name}",
            kwargs["sigma"],
            float(kwargs["e1"]),
            float(kwargs["e2"]),
            "e1, e2",
        )
    if name == "GAUSSIAN_ELLIPSE_KAPPA":
        sigma = float(kwargs["sigma"])
        return Gaussian(
            centre=(float(kwargs.get("center_x", 0.0)), float(kwargs.get("center_y", 0.0))),
            ell_comps=(float(kwargs["e1"]), float(kwargs["e2"])),
            sigma=sigma,
            intensity=float(kwargs["amp"]) / (_TWO_PI * sigma**2),
        )
    if name == "MULTI_GAUSSIAN_ELLIPSE_KAPPA":
        sigmas = np.asarray(kwargs["sigma"], dtype=float)
        amps = np.asarray(kwargs["amp"], dtype=float) * float(kwargs.get("scale_factor", 1.0))
        return MGE(
            sigmas,
            amps / (_TWO_PI * sigmas**2),
            centre=(float(kwargs.get("center_x", 0.0)), float(kwargs.get("center_y", 0.0))),
            ell_comps=(float(kwargs["e1"]), float(kwargs["e2"])),
        )
    raise ValueError(
        f"no converter from lenstronomy's {name!r}; supported: GAUSSIAN_ELLIPSE_KAPPA, "
        "MULTI_GAUSSIAN_ELLIPSE_KAPPA"
    )


def to_lenstronomy(profile: MassProfile) -> tuple[str, dict[str, Any]]:
    """``(name, kwargs)`` of the lenstronomy profile equal to ``profile``."""
    cx, cy = (float(c) for c in profile.centre)  # type: ignore[attr-defined]
    e1, e2 = (float(e) for e in profile.ell_comps)  # type: ignore[attr-defined]
    if type(profile) is Gaussian:
        sigma = float(profile.sigma)
        amp = float(profile.kappa0) * _TWO_PI * sigma**2
        kwargs = {"amp": amp, "sigma": sigma, "e1": e1, "e2": e2, "center_x": cx, "center_y": cy}
        return "GAUSSIAN_ELLIPSE_KAPPA", kwargs
    if type(profile) is MGE:
        sigmas = np.asarray(profile.sigmas, dtype=float)
        amps = np.asarray(profile.kappas, dtype=float) * _TWO_PI * sigmas**2
        kwargs = {
            "amp": amps.tolist(),
            "sigma": sigmas.tolist(),
            "e1": e1,
            "e2": e2,
            "center_x": cx,
            "center_y": cy,
        }
        return "MULTI_GAUSSIAN_ELLIPSE_KAPPA", kwargs
    raise ValueError(f"no converter to lenstronomy for {type(profile).__name__}")


def _sqrt_q(e1: float, e2: float) -> float:
    q, _ = axis_ratio_from_ellipticity(e1, e2)
    return math.sqrt(float(q))


def from_autogalaxy(name: str, kwargs: Mapping[str, Any]) -> MassProfile:
    """Our profile equal to ``autogalaxy.mp.<name>(**kwargs)``."""
    if name == "Gaussian":
        centre_y, centre_x = (float(c) for c in kwargs.get("centre", (0.0, 0.0)))
        ell_y, ell_x = (float(e) for e in kwargs.get("ell_comps", (0.0, 0.0)))
        _check_inputs("autogalaxy Gaussian", kwargs.get("sigma", 1.0), ell_x, ell_y, "ell_comps")
        return Gaussian(
            centre=(centre_x, centre_y),
            ell_comps=(ell_x, ell_y),
            sigma=float(kwargs.get("sigma", 1.0)) / _sqrt_q(ell_x, ell_y),
            intensity=float(kwargs.get("intensity", 0.1)),
            mass_to_light_ratio=float(kwargs.get("mass_to_light_ratio", 1.0)),
        )
    raise ValueError(f"no converter from autogalaxy's {name!r}; supported: Gaussian")


def to_autogalaxy(profile: MassProfile) -> tuple[str, dict[str, Any]]:
    """``(name, kwargs)`` such that ``autogalaxy.mp.<name>(**kwargs)`` equals ``profile``."""
    if type(profile) is Gaussian:
        cx, cy = (float(c) for c in profile.centre)
        e1, e2 = (float(e) for e in profile.ell_comps)
        return "Gaussian", {
            "centre": (cy, cx),
            "ell_comps": (e2, e1),
            "intensity": float(profile.intensity),
            "sigma": float(profile.sigma) * _sqrt_q(e1, e2),
            "mass_to_light_ratio": float(profile.mass_to_light_ratio),
        }
    raise ValueError(f"no converter to autogalaxy for {type(profile).__name__}")

"""Mass profiles to and from ``autogalaxy.mp`` (:func:`from_autogalaxy`,
:func:`to_autogalaxy`); the conventions are in :mod:`twinlens.convert`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from twinlens.peers.common import _ellipticity, _floats, _lookup, _positive, _require
from twinlens.profiles.base import MassProfile, axis_ratio_angle
from twinlens.profiles.gaussian import Gaussian
from twinlens.profiles.isothermal import NIE, SIE, SIS
from twinlens.profiles.multipole import Multipole
from twinlens.profiles.nfw import NFW
from twinlens.profiles.power_law import PowerLaw
from twinlens.profiles.simple import ExternalShear, MassSheet, PointMass


def _ag_centre(kw: Mapping) -> tuple[float, float]:
    cy, cx = _floats(kw.get("centre", (0.0, 0.0)))
    return (cx, cy)


def _ag_ell(name: str, kw: Mapping) -> tuple[float, float]:
    ey, ex = _floats(kw.get("ell_comps", (0.0, 0.0)))
    return _ellipticity(f"autogalaxy {name}", ex, ey, "ell_comps")


def _ag_isothermal_radius(einstein_radius_ag: float, q: float) -> float:
    # autogalaxy's (major-axis) Einstein radius into ours (intermediate axis)
    return einstein_radius_ag * 2.0 * math.sqrt(q) / (1.0 + q)


_FromAg = Callable[[str, Mapping, tuple[float, float]], MassProfile]


def _from_ag_fields(cls: type, fields: Mapping[str, tuple[str, float]]) -> _FromAg:
    """A converter from a round autogalaxy profile that copies parameters: ``fields`` maps our
    keyword arguments to autogalaxy's keys and defaults; the centre is passed as ``centre``."""

    def convert(name: str, kw: Mapping, centre: tuple[float, float]) -> MassProfile:
        values = {ours: float(kw.get(key, default)) for ours, (key, default) in fields.items()}
        return cls(centre=centre, **values)

    return convert


def _from_ag_gaussian(name: str, kw: Mapping, centre: tuple[float, float]) -> MassProfile:
    ell = _ag_ell(name, kw)
    _positive("autogalaxy Gaussian", "sigma", kw.get("sigma", 1.0))
    return Gaussian(
        centre=centre,
        ell_comps=ell,
        sigma=float(kw.get("sigma", 1.0)) / math.sqrt(axis_ratio_angle(*ell)[0]),
        intensity=float(kw.get("intensity", 0.1)),
        mass_to_light_ratio=float(kw.get("mass_to_light_ratio", 1.0)),
    )


def _from_ag_isothermal(name: str, kw: Mapping, centre: tuple[float, float]) -> MassProfile:
    ell = _ag_ell(name, kw)
    q = axis_ratio_angle(*ell)[0]
    theta_e = _ag_isothermal_radius(float(kw.get("einstein_radius", 1.0)), q)
    if name == "Isothermal":
        return SIE(centre=centre, ell_comps=ell, einstein_radius=theta_e)
    _require(f"autogalaxy {name}", kw, ("core_radius",))
    core = float(kw["core_radius"]) * math.sqrt(q)
    return NIE(centre=centre, ell_comps=ell, einstein_radius=theta_e, core_radius=core)


def _from_ag_power_law(name: str, kw: Mapping, centre: tuple[float, float]) -> MassProfile:
    ell = _ag_ell(name, kw)
    q = axis_ratio_angle(*ell)[0]
    slope = float(kw.get("slope", 2.0))
    factor = math.sqrt(q) * ((1.0 + q) / 2.0) ** (-1.0 / (slope - 1.0))
    theta_e = float(kw.get("einstein_radius", 1.0)) * factor
    return PowerLaw(centre=centre, ell_comps=ell, einstein_radius=theta_e, slope=slope)


def _from_ag_nfw(name: str, kw: Mapping, centre: tuple[float, float]) -> MassProfile:
    ell = _ag_ell(name, kw) if name == "NFW" else (0.0, 0.0)
    _positive(f"autogalaxy {name}", "scale_radius", kw.get("scale_radius", 1.0))
    rs = float(kw.get("scale_radius", 1.0)) * math.sqrt(axis_ratio_angle(*ell)[0])
    return NFW(
        centre=centre, ell_comps=ell, kappa_s=float(kw.get("kappa_s", 0.05)), scale_radius=rs
    )


def _from_ag_shear(name: str, kw: Mapping, centre: tuple[float, float]) -> MassProfile:
    return ExternalShear(
        gamma_1=float(kw.get("gamma_1", 0.0)), gamma_2=float(kw.get("gamma_2", 0.0))
    )


def _from_ag_multipole(name: str, kw: Mapping, centre: tuple[float, float]) -> MassProfile:
    _require(f"autogalaxy {name}", kw, ("m", "multipole_comps"))
    m = int(kw["m"])
    if float(kw.get("slope", 2.0)) != 2.0 or m < 2:
        raise ValueError(
            "autogalaxy PowerLawMultipole: only slope = 2 and m >= 2 have a twinlens "
            f"equivalent (Multipole), got slope={kw.get('slope', 2.0)!r}, m={m}"
        )
    theta_e = float(kw.get("einstein_radius", 1.0))
    k_sin, k_cos = _floats(kw["multipole_comps"])
    return Multipole(
        m=m,
        amplitude=math.hypot(k_sin, k_cos) * theta_e,
        angle=math.degrees(math.atan2(k_sin, k_cos) / m),
        centre=centre,
        einstein_radius=theta_e,
    )


_FROM_AUTOGALAXY: dict[str, _FromAg] = {
    "Gaussian": _from_ag_gaussian,
    "IsothermalSph": _from_ag_fields(SIS, {"einstein_radius": ("einstein_radius", 1.0)}),
    "Isothermal": _from_ag_isothermal,
    "IsothermalCore": _from_ag_isothermal,
    "PowerLaw": _from_ag_power_law,
    "NFWSph": _from_ag_nfw,
    "NFW": _from_ag_nfw,
    "PointMass": _from_ag_fields(PointMass, {"einstein_radius": ("einstein_radius", 1.0)}),
    "ExternalShear": _from_ag_shear,
    "MassSheet": _from_ag_fields(MassSheet, {"kappa": ("kappa", 0.0)}),
    "PowerLawMultipole": _from_ag_multipole,
}


def from_autogalaxy(name: str, kwargs: Mapping[str, Any]) -> MassProfile:
    """Our profile equal to ``autogalaxy.mp.<name>(**kwargs)``.

    Parameters
    ----------
    name : str
        The class name in ``autogalaxy.mp``, e.g. ``"Isothermal"``.
    kwargs : mapping
        Its keyword arguments; autogalaxy's defaults fill missing keys where autogalaxy has
        them.

    Returns
    -------
    MassProfile
        The equal profile.

    Raises
    ------
    ValueError
        For a name with no converter (the message lists the supported ones) or a value with no
        equivalent here.
    KeyError
        When a key autogalaxy requires is missing (named).
    """
    convert = _lookup(_FROM_AUTOGALAXY, name, f"no converter from autogalaxy's {name!r}")
    return convert(name, kwargs, _ag_centre(kwargs))


_ToAg = Callable[[Any, dict[str, Any], float], tuple[str, dict[str, Any]]]


def _to_ag_fields(name: str, fields: Mapping[str, str]) -> _ToAg:
    """A converter to autogalaxy's ``name`` that copies attributes: ``fields`` maps
    autogalaxy's keys to ours, after the centre (and axis) keys already converted."""

    def convert(profile: Any, kw: dict[str, Any], q: float) -> tuple[str, dict[str, Any]]:
        return name, {**kw, **{key: float(getattr(profile, a)) for key, a in fields.items()}}

    return convert


def _to_ag_gaussian(profile: Any, kw: dict[str, Any], q: float) -> tuple[str, dict[str, Any]]:
    kw.update(
        intensity=float(profile.intensity),
        sigma=float(profile.sigma) * math.sqrt(q),
        mass_to_light_ratio=float(profile.mass_to_light_ratio),
    )
    return "Gaussian", kw


def _to_ag_isothermal(profile: Any, kw: dict[str, Any], q: float) -> tuple[str, dict[str, Any]]:
    kw["einstein_radius"] = float(profile.einstein_radius) * (1.0 + q) / (2.0 * math.sqrt(q))
    if type(profile) is SIE:
        return "Isothermal", kw
    return "IsothermalCore", {**kw, "core_radius": float(profile.core_radius) / math.sqrt(q)}


def _to_ag_power_law(profile: Any, kw: dict[str, Any], q: float) -> tuple[str, dict[str, Any]]:
    slope = float(profile.slope)
    factor = ((1.0 + q) / 2.0) ** (1.0 / (slope - 1.0)) / math.sqrt(q)
    kw.update(einstein_radius=float(profile.einstein_radius) * factor, slope=slope)
    return "PowerLaw", kw


def _to_ag_nfw(profile: Any, kw: dict[str, Any], q: float) -> tuple[str, dict[str, Any]]:
    kw.update(
        kappa_s=float(profile.kappa_s), scale_radius=float(profile.scale_radius) / math.sqrt(q)
    )
    if kw["ell_comps"] == (0.0, 0.0):
        del kw["ell_comps"]
        return "NFWSph", kw
    return "NFW", kw


def _to_ag_shear(profile: Any, kw: dict[str, Any], q: float) -> tuple[str, dict[str, Any]]:
    if _floats(profile.origin) != (0.0, 0.0):
        raise ValueError("autogalaxy's ExternalShear has no origin; this one's is not (0, 0)")
    return "ExternalShear", {
        "gamma_1": float(profile.gamma_1),
        "gamma_2": float(profile.gamma_2),
    }


def _to_ag_multipole(profile: Any, kw: dict[str, Any], q: float) -> tuple[str, dict[str, Any]]:
    m = int(profile.m)
    if m < 2:
        raise ValueError(
            f"no converter to autogalaxy for Multipole with m = {m} (autogalaxy's "
            "PowerLawMultipole has m >= 2)"
        )
    theta_e = float(profile.einstein_radius)
    k = float(profile.amplitude) / theta_e
    phi_m = math.radians(float(profile.angle))
    return "PowerLawMultipole", {
        **kw,
        "m": m,
        "einstein_radius": theta_e,
        "slope": 2.0,
        "multipole_comps": (k * math.sin(m * phi_m), k * math.cos(m * phi_m)),
    }


_TO_AUTOGALAXY: dict[type, _ToAg] = {
    Gaussian: _to_ag_gaussian,
    SIS: _to_ag_fields("IsothermalSph", {"einstein_radius": "einstein_radius"}),
    SIE: _to_ag_isothermal,
    NIE: _to_ag_isothermal,
    PowerLaw: _to_ag_power_law,
    NFW: _to_ag_nfw,
    PointMass: _to_ag_fields("PointMass", {"einstein_radius": "einstein_radius"}),
    ExternalShear: _to_ag_shear,
    MassSheet: _to_ag_fields("MassSheet", {"kappa": "kappa"}),
    Multipole: _to_ag_multipole,
}


def to_autogalaxy(profile: MassProfile) -> tuple[str, dict[str, Any]]:
    """``(name, kwargs)`` such that ``autogalaxy.mp.<name>(**kwargs)`` equals ``profile``.

    Parameters
    ----------
    profile : MassProfile
        One of the classes this module lists (matched exactly, not by subclass).

    Returns
    -------
    (str, dict)
        The class name in ``autogalaxy.mp`` and its keyword arguments (``centre`` as ``(y,
        x)``, ``ell_comps`` as ``(e2, e1)``).

    Raises
    ------
    ValueError
        For a class with no converter (the message lists the supported ones), or a profile
        autogalaxy cannot describe (a shear with an origin, a multipole with ``m = 1``).
    """
    kind = type(profile)
    convert = _lookup(_TO_AUTOGALAXY, kind, f"no converter to autogalaxy for {kind.__name__}")
    kw: dict[str, Any] = {}
    if hasattr(profile, "centre"):
        cx, cy = _floats(profile.centre)
        kw["centre"] = (cy, cx)
    q = 1.0
    if hasattr(profile, "ell_comps"):
        e1, e2 = _floats(profile.ell_comps)
        kw["ell_comps"] = (e2, e1)
        q = axis_ratio_angle(e1, e2)[0]
    return convert(profile, kw, q)

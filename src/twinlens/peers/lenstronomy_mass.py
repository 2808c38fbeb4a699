"""Lens (mass) profiles to and from lenstronomy: one profile (:func:`from_lenstronomy`,
:func:`to_lenstronomy`) or a whole lens model (the ``_list`` functions); the conventions are in
:mod:`twinlens.convert`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from twinlens.kernels.nfw import alpha_rs_from_kappa_s, kappa_s_from_alpha_rs
from twinlens.peers.common import _TWO_PI, _ellipticity, _floats, _lookup, _positive, _require
from twinlens.profiles.base import MassProfile, axis_ratio_angle
from twinlens.profiles.composite import MassSum
from twinlens.profiles.gaussian import MGE, Gaussian
from twinlens.profiles.isothermal import NIE, SIE, SIS
from twinlens.profiles.multipole import EllipticalMultipole, Multipole
from twinlens.profiles.nfw import NFW
from twinlens.profiles.power_law import PowerLaw
from twinlens.profiles.simple import ExternalShear, MassSheet, PointMass


def _l_centre(kw: Mapping, keys: tuple[str, str] = ("center_x", "center_y")) -> tuple:
    return (float(kw.get(keys[0], 0.0)), float(kw.get(keys[1], 0.0)))


def _l_ell(name: str, kw: Mapping) -> tuple[float, float]:
    _require(name, kw, ("e1", "e2"))
    return _ellipticity(f"lenstronomy {name}", float(kw["e1"]), float(kw["e2"]))


def _from_l_gaussian(name: str, kw: Mapping) -> MassProfile:
    _require(name, kw, ("amp", "sigma", "e1", "e2"))
    _positive(f"lenstronomy {name}", "sigma", kw["sigma"])
    ell = _l_ell(name, kw)
    if name == "GAUSSIAN_ELLIPSE_KAPPA":
        sigma = float(kw["sigma"])
        intensity = float(kw["amp"]) / (_TWO_PI * sigma**2)
        return Gaussian(centre=_l_centre(kw), ell_comps=ell, sigma=sigma, intensity=intensity)
    sigmas = np.asarray(kw["sigma"], dtype=float)
    amps = np.asarray(kw["amp"], dtype=float) * float(kw.get("scale_factor", 1.0))
    return MGE(sigmas, amps / (_TWO_PI * sigmas**2), centre=_l_centre(kw), ell_comps=ell)


def _from_l_isothermal(name: str, kw: Mapping) -> MassProfile:
    _require(name, kw, ("theta_E",))
    theta_e = float(kw["theta_E"])
    if name == "SIS":
        return SIS(centre=_l_centre(kw), einstein_radius=theta_e)
    ell = _l_ell(name, kw)
    if name == "SIE":
        return SIE(centre=_l_centre(kw), ell_comps=ell, einstein_radius=theta_e)
    _require(name, kw, ("s_scale",))
    return NIE(
        centre=_l_centre(kw),
        ell_comps=ell,
        einstein_radius=theta_e,
        core_radius=float(kw["s_scale"]),
    )


def _from_l_epl(name: str, kw: Mapping) -> PowerLaw:
    _require(name, kw, ("theta_E", "gamma"))
    return PowerLaw(
        centre=_l_centre(kw),
        ell_comps=_l_ell(name, kw),
        einstein_radius=float(kw["theta_E"]),
        slope=float(kw["gamma"]),
    )


def _from_l_nfw(name: str, kw: Mapping) -> MassProfile:
    _require(name, kw, ("Rs", "alpha_Rs"))
    _positive(f"lenstronomy {name}", "Rs", kw["Rs"])
    rs = float(kw["Rs"])
    ell = _l_ell(name, kw) if name == "NFW_ELLIPSE_CSE" else (0.0, 0.0)
    kappa_s = kappa_s_from_alpha_rs(float(kw["alpha_Rs"]), rs)
    return NFW(centre=_l_centre(kw), ell_comps=ell, kappa_s=kappa_s, scale_radius=rs)


def _from_l_point_mass(name: str, kw: Mapping) -> MassProfile:
    _require(name, kw, ("theta_E",))
    return PointMass(centre=_l_centre(kw), einstein_radius=float(kw["theta_E"]))


def _from_l_shear(name: str, kw: Mapping) -> MassProfile:
    origin = _l_centre(kw, ("ra_0", "dec_0"))
    if name == "SHEAR_GAMMA_PSI":
        _require(name, kw, ("gamma_ext", "psi_ext"))
        psi = float(kw["psi_ext"])
        g = float(kw["gamma_ext"])
        return ExternalShear(
            gamma_1=g * math.cos(2 * psi), gamma_2=g * math.sin(2 * psi), origin=origin
        )
    _require(name, kw, ("gamma1", "gamma2"))
    return ExternalShear(gamma_1=float(kw["gamma1"]), gamma_2=float(kw["gamma2"]), origin=origin)


def _from_l_sheet(name: str, kw: Mapping) -> MassProfile:
    _require(name, kw, ("kappa",))
    return MassSheet(kappa=float(kw["kappa"]), centre=_l_centre(kw, ("ra_0", "dec_0")))


def _from_l_multipole(name: str, kw: Mapping) -> MassProfile:
    _require(name, kw, ("m", "a_m", "phi_m"))
    common: dict[str, Any] = {
        "m": int(kw["m"]),
        "amplitude": float(kw["a_m"]),
        "angle": math.degrees(float(kw["phi_m"])),
        "centre": _l_centre(kw),
        "einstein_radius": float(kw.get("r_E", 1.0)),
    }
    if name == "MULTIPOLE":
        return Multipole(**common)
    _require(name, kw, ("q",))
    return EllipticalMultipole(**common, axis_ratio=float(kw["q"]))


_M1M3M4_KEYS = ("a1_a", "delta_phi_m1", "a3_a", "delta_phi_m3", "a4_a", "delta_phi_m4")


def _from_l_epl_multipoles(name: str, kw: Mapping) -> MassProfile:
    _require(name, kw, ("theta_E", "gamma", "e1", "e2", *_M1M3M4_KEYS))
    epl = _from_l_epl(name, kw)
    q, phi = axis_ratio_angle(*epl.ell_comps)
    theta_e = float(kw["theta_E"])
    elliptical = name.endswith("_ELL")
    parts: list[MassProfile] = [epl]
    for m in (1, 3, 4):
        common: dict[str, Any] = {
            "m": m,
            "angle": math.degrees(phi + float(kw[f"delta_phi_m{m}"])),
            "centre": epl.centre,
            "einstein_radius": theta_e,
        }
        a = float(kw[f"a{m}_a"]) * theta_e
        if elliptical:
            parts.append(EllipticalMultipole(**common, amplitude=a, axis_ratio=q))
        else:
            parts.append(Multipole(**common, amplitude=a / math.sqrt(q)))
    return MassSum(tuple(parts))


_FROM_LENSTRONOMY: dict[str, Callable[[str, Mapping], MassProfile]] = {
    "GAUSSIAN_ELLIPSE_KAPPA": _from_l_gaussian,
    "MULTI_GAUSSIAN_ELLIPSE_KAPPA": _from_l_gaussian,
    "SIS": _from_l_isothermal,
    "SIE": _from_l_isothermal,
    "NIE": _from_l_isothermal,
    "EPL": _from_l_epl,
    "EPL_NUMBA": _from_l_epl,
    "NFW": _from_l_nfw,
    "NFW_ELLIPSE_CSE": _from_l_nfw,
    "POINT_MASS": _from_l_point_mass,
    "SHEAR": _from_l_shear,
    "SHEAR_GAMMA_PSI": _from_l_shear,
    "CONVERGENCE": _from_l_sheet,
    "MULTIPOLE": _from_l_multipole,
    "MULTIPOLE_ELL": _from_l_multipole,
    "EPL_MULTIPOLE_M1M3M4": _from_l_epl_multipoles,
    "EPL_MULTIPOLE_M1M3M4_ELL": _from_l_epl_multipoles,
}


def from_lenstronomy(name: str, kwargs: Mapping[str, Any]) -> MassProfile:
    """Our profile equal to one lenstronomy lens profile.

    Parameters
    ----------
    name : str
        lenstronomy's profile name (an entry of its ``lens_model_list``), e.g. ``"SIE"``.
    kwargs : mapping
        That profile's keyword arguments.

    Returns
    -------
    MassProfile
        The equal profile (a :class:`~twinlens.mass.MassSum` for lenstronomy's EPL with
        multipoles).

    Raises
    ------
    ValueError
        For a name with no converter (the message lists the supported ones) or a bad value.
    KeyError
        When a required keyword is missing (named).
    """
    convert = _lookup(_FROM_LENSTRONOMY, name, f"no converter from lenstronomy's {name!r}")
    return convert(name, kwargs)


def from_lenstronomy_list(
    names: Sequence[str], kwargs_list: Sequence[Mapping[str, Any]]
) -> MassProfile:
    """Our profile for a lenstronomy lens model (``lens_model_list`` and its ``kwargs``): one
    profile, or a :class:`~twinlens.mass.MassSum` of several.

    Parameters
    ----------
    names : sequence of str
        lenstronomy's ``lens_model_list``.
    kwargs_list : sequence of mapping
        One keyword dictionary per name.

    Returns
    -------
    MassProfile
        The single profile, or the sum of all of them.

    Raises
    ------
    ValueError
        When the two sequences differ in length, or as :func:`from_lenstronomy`.
    """
    if len(names) != len(kwargs_list):
        raise ValueError(
            f"{len(names)} lens model names but {len(kwargs_list)} kwargs dictionaries"
        )
    parts = [from_lenstronomy(n, kw) for n, kw in zip(names, kwargs_list, strict=True)]
    return parts[0] if len(parts) == 1 else MassSum(tuple(parts))


def _centre_kw(profile: Any) -> dict[str, float]:
    cx, cy = _floats(profile.centre)
    return {"center_x": cx, "center_y": cy}


def _ell_kw(profile: Any) -> dict[str, float]:
    e1, e2 = _floats(profile.ell_comps)
    return {"e1": e1, "e2": e2}


_ToPeer = Callable[[Any], tuple[str, dict[str, Any]]]


def _to_l_fields(name: str, fields: Mapping[str, str], elliptical: bool) -> _ToPeer:
    """A converter to lenstronomy's ``name`` that copies attributes: ``fields`` maps
    lenstronomy's keys to ours; then ``e1, e2`` (if ``elliptical``) and the centre."""

    def convert(profile: Any) -> tuple[str, dict[str, Any]]:
        kw: dict[str, Any] = {key: float(getattr(profile, attr)) for key, attr in fields.items()}
        if elliptical:
            kw |= _ell_kw(profile)
        return name, {**kw, **_centre_kw(profile)}

    return convert


def _to_l_gaussian(profile: Any) -> tuple[str, dict[str, Any]]:
    sigma = float(profile.sigma)
    amp = float(profile.kappa0) * _TWO_PI * sigma**2
    kw = {"amp": amp, "sigma": sigma, **_ell_kw(profile), **_centre_kw(profile)}
    return "GAUSSIAN_ELLIPSE_KAPPA", kw


def _to_l_mge(profile: Any) -> tuple[str, dict[str, Any]]:
    sigmas = np.asarray(profile.sigmas, dtype=float)
    amps = np.asarray(profile.kappas, dtype=float) * _TWO_PI * sigmas**2
    kw = {"amp": amps.tolist(), "sigma": sigmas.tolist(), **_ell_kw(profile)}
    return "MULTI_GAUSSIAN_ELLIPSE_KAPPA", {**kw, **_centre_kw(profile)}


def _to_l_nfw(profile: Any) -> tuple[str, dict[str, Any]]:
    rs = float(profile.scale_radius)
    kw = {"Rs": rs, "alpha_Rs": alpha_rs_from_kappa_s(float(profile.kappa_s), rs)}
    if _floats(profile.ell_comps) == (0.0, 0.0):
        return "NFW", {**kw, **_centre_kw(profile)}
    return "NFW_ELLIPSE_CSE", {**kw, **_ell_kw(profile), **_centre_kw(profile)}


def _to_l_shear(profile: Any) -> tuple[str, dict[str, Any]]:
    ra0, dec0 = _floats(profile.origin)
    kw = {"gamma1": float(profile.gamma_1), "gamma2": float(profile.gamma_2)}
    return "SHEAR", {**kw, "ra_0": ra0, "dec_0": dec0}


def _to_l_sheet(profile: Any) -> tuple[str, dict[str, Any]]:
    ra0, dec0 = _floats(profile.centre)
    return "CONVERGENCE", {"kappa": float(profile.kappa), "ra_0": ra0, "dec_0": dec0}


def _l_multipole_kw(profile: Any) -> dict[str, Any]:
    return {
        "m": int(profile.m),
        "a_m": float(profile.amplitude),
        "phi_m": math.radians(float(profile.angle)),
        "r_E": float(profile.einstein_radius),
        **_centre_kw(profile),
    }


def _to_l_multipole(profile: Any) -> tuple[str, dict[str, Any]]:
    return "MULTIPOLE", _l_multipole_kw(profile)


def _to_l_elliptical_multipole(profile: Any) -> tuple[str, dict[str, Any]]:
    if float(profile.reference_angle) != 0.0:
        raise ValueError(
            "lenstronomy's MULTIPOLE_ELL (to 1.14) has its reference ellipse along +x; "
            f"this profile's reference_angle is {profile.reference_angle!r} degrees"
        )
    return "MULTIPOLE_ELL", {**_l_multipole_kw(profile), "q": float(profile.axis_ratio)}


_TO_LENSTRONOMY: dict[type, _ToPeer] = {
    Gaussian: _to_l_gaussian,
    MGE: _to_l_mge,
    SIS: _to_l_fields("SIS", {"theta_E": "einstein_radius"}, elliptical=False),
    SIE: _to_l_fields("SIE", {"theta_E": "einstein_radius"}, elliptical=True),
    NIE: _to_l_fields(
        "NIE", {"theta_E": "einstein_radius", "s_scale": "core_radius"}, elliptical=True
    ),
    PowerLaw: _to_l_fields("EPL", {"theta_E": "einstein_radius", "gamma": "slope"}, True),
    NFW: _to_l_nfw,
    PointMass: _to_l_fields("POINT_MASS", {"theta_E": "einstein_radius"}, elliptical=False),
    ExternalShear: _to_l_shear,
    MassSheet: _to_l_sheet,
    Multipole: _to_l_multipole,
    EllipticalMultipole: _to_l_elliptical_multipole,
}


def to_lenstronomy(profile: MassProfile) -> tuple[str, dict[str, Any]]:
    """The lenstronomy lens profile equal to ``profile``.

    For a sum of profiles use :func:`to_lenstronomy_list`.

    Parameters
    ----------
    profile : MassProfile
        One of the classes this module lists (matched exactly, not by subclass).

    Returns
    -------
    (str, dict)
        lenstronomy's profile name and its keyword arguments.

    Raises
    ------
    ValueError
        For a :class:`~twinlens.mass.MassSum`, a class with no converter (the message lists
        the supported ones) or a profile lenstronomy cannot describe exactly.
    """
    kind = type(profile)
    if kind is MassSum:
        raise ValueError("a MassSum is several lenstronomy profiles: use to_lenstronomy_list")
    convert = _lookup(_TO_LENSTRONOMY, kind, f"no converter to lenstronomy for {kind.__name__}")
    return convert(profile)


def to_lenstronomy_list(profile: MassProfile) -> tuple[list[str], list[dict[str, Any]]]:
    """``(lens_model_list, kwargs_list)`` for lenstronomy's ``LensModel``.

    Parameters
    ----------
    profile : MassProfile
        One profile, or a :class:`~twinlens.mass.MassSum` (one entry per part, nested sums
        flattened).

    Returns
    -------
    (list of str, list of dict)
        The profile names and their keyword arguments, in the same order.

    Raises
    ------
    ValueError
        As :func:`to_lenstronomy`, for any part.
    """
    if isinstance(profile, MassSum):
        names: list[str] = []
        kwargs: list[dict[str, Any]] = []
        for part in profile.profiles:
            n, k = to_lenstronomy_list(part)
            names += n
            kwargs += k
        return names, kwargs
    name, kw = to_lenstronomy(profile)
    return [name], [kw]

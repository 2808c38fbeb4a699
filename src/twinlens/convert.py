"""Parameters to and from lenstronomy and autogalaxy, without importing either package.

``from_lenstronomy(name, kwargs)`` and ``to_lenstronomy(profile)`` convert one profile;
``from_lenstronomy_list(names, kwargs_list)`` and ``to_lenstronomy_list(profile)`` convert a
whole lens model (lenstronomy's ``LensModel(lens_model_list)`` and its ``kwargs``; a
:class:`~twinlens.mass.MassSum` becomes several entries). ``from_autogalaxy(name, kwargs)`` and
``to_autogalaxy(profile)`` use the class names of ``autogalaxy.mp``.

Every mapping below was checked numerically against the packages (lenstronomy 1.14,
autogalaxy 2026.7); the tests restate each convention as a formula.

lenstronomy
-----------
Keys ``center_x, center_y`` (``ra_0, dec_0`` for ``SHEAR`` and ``CONVERGENCE``) are our
``centre``; ``e1, e2`` are our ``ell_comps``; angles are radians there and degrees here.

``GAUSSIAN_ELLIPSE_KAPPA``
    ``Gaussian``: ``mass_to_light_ratio * intensity = amp / (2 pi sigma^2)``, same ``sigma``.
``MULTI_GAUSSIAN_ELLIPSE_KAPPA``
    ``MGE``, componentwise; ``scale_factor`` multiplies every ``amp``.
``SIS``, ``POINT_MASS``
    ``SIS``, ``PointMass``: ``einstein_radius = theta_E``.
``SIE``
    ``SIE``: ``einstein_radius = theta_E``. lenstronomy's SIE is its NIE with a 1e-10" core, so
    the two differ by up to ~1e-8 relative within 0.02" of the centre.
``NIE``
    ``NIE``: ``einstein_radius = theta_E``, ``core_radius = s_scale`` (no factor of ``q``).
``EPL``, ``EPL_NUMBA``
    ``PowerLaw``: ``einstein_radius = theta_E``, ``slope = gamma``.
``NFW``, ``NFW_ELLIPSE_CSE``
    ``NFW`` (round, or elliptical with the same radius convention): ``scale_radius = Rs``,
    ``alpha_Rs = 4 kappa_s Rs (1 + ln(1/2))``, the deflection at ``Rs``. lenstronomy's
    cored-steep-ellipsoid NFW is itself a fit, accurate to about 5e-6.
``SHEAR``, ``SHEAR_GAMMA_PSI``
    ``ExternalShear``: ``gamma_1 = gamma1``, ``gamma_2 = gamma2``, ``origin = (ra_0, dec_0)``;
    or ``gamma_1 = gamma_ext cos(2 psi_ext)``, ``gamma_2 = gamma_ext sin(2 psi_ext)``.
``CONVERGENCE``
    ``MassSheet``: ``kappa``, ``centre = (ra_0, dec_0)``.
``MULTIPOLE``, ``MULTIPOLE_ELL``
    ``Multipole``, ``EllipticalMultipole``: ``m``, ``amplitude = a_m``, ``angle = phi_m``,
    ``einstein_radius = r_E``, and ``axis_ratio = q``. Released lenstronomy (to 1.14) fixes the
    reference ellipse along +x, so ``reference_angle = 0``. lenstronomy's elliptical multipole
    deflection is ours plus a uniform vector (its potential keeps a first angular harmonic; a
    gauge that moves the source plane rigidly and changes no image, magnification or
    time-delay difference): ``twinlens.kernels.multipole.lenstronomy_gauge`` gives it.
``EPL_MULTIPOLE_M1M3M4``, ``EPL_MULTIPOLE_M1M3M4_ELL``
    ``MassSum`` of a ``PowerLaw`` and multipoles ``m = 1, 3, 4`` with ``angle = phi +
    delta_phi_m{m}``, ``einstein_radius = theta_E`` and ``amplitude = a{m}_a theta_E /
    sqrt(q)`` (circular), or ``amplitude = a{m}_a theta_E``, ``axis_ratio = q`` and
    ``reference_angle = 0`` (elliptical, as lenstronomy 1.14 computes it).

autogalaxy
----------
``centre`` is ``(y, x)`` and ``ell_comps`` is ``(e2, e1)`` in our order. autogalaxy measures
elliptical radii along the major axis (``sqrt(x'^2 + y'^2 / q^2)``), we along the intermediate
axis (``sqrt(q x'^2 + y'^2 / q)``), hence the factors of ``sqrt(q)``:

``Gaussian``
    ``sigma_ag = sigma sqrt(q)``; ``intensity`` and ``mass_to_light_ratio`` are the same.
``IsothermalSph``, ``PointMass``, ``MassSheet``, ``ExternalShear``
    ``SIS``, ``PointMass``, ``MassSheet``, ``ExternalShear`` (``gamma_1, gamma_2`` in the same
    order; no origin).
``Isothermal``, ``IsothermalCore``
    ``SIE``, ``NIE``: ``einstein_radius_ag = theta_E (1 + q) / (2 sqrt(q))``,
    ``core_radius_ag = s / sqrt(q)``.
``PowerLaw``
    ``PowerLaw``: ``einstein_radius_ag = theta_E ((1 + q) / 2)^(1 / (slope - 1)) / sqrt(q)``.
``NFWSph``, ``NFW``
    ``NFW``: ``kappa_s``; ``scale_radius_ag = scale_radius / sqrt(q)``.
``PowerLawMultipole``
    ``Multipole`` with ``m >= 2`` (autogalaxy's has no ``m = 1`` at slope 2):
    ``multipole_comps = (k sin(m phi_m), k cos(m phi_m))``, ``k = amplitude / einstein_radius``,
    ``slope = 2``.

autogalaxy clamps its axis ratios near 1 (0.9999 or 0.99999), so for nearly round profiles its
own evaluation of a converted profile is not exactly this one.

Worked example::

    >>> from twinlens import convert
    >>> g = convert.from_lenstronomy("GAUSSIAN_ELLIPSE_KAPPA",
    ...     {"amp": 2.0, "sigma": 0.5, "e1": 0.1, "e2": -0.05, "center_x": 0.2, "center_y": 0.0})
    >>> round(g.intensity, 6), g.ell_comps
    (1.27324, (0.1, -0.05))
    >>> convert.to_lenstronomy(g)[0]
    'GAUSSIAN_ELLIPSE_KAPPA'
    >>> convert.to_lenstronomy_list(convert.from_lenstronomy("SIE", {"theta_E": 1.2, "e1": 0.1,
    ...     "e2": 0.0}))[0]
    ['SIE']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from twinlens.kernels.nfw import alpha_rs_from_kappa_s, kappa_s_from_alpha_rs
from twinlens.messages import shown
from twinlens.profiles.base import MassProfile, axis_ratio_angle
from twinlens.profiles.composite import MassSum
from twinlens.profiles.gaussian import MGE, Gaussian
from twinlens.profiles.isothermal import NIE, SIE, SIS
from twinlens.profiles.multipole import EllipticalMultipole, Multipole
from twinlens.profiles.nfw import NFW
from twinlens.profiles.power_law import PowerLaw
from twinlens.profiles.simple import ExternalShear, MassSheet, PointMass

_TWO_PI = 2.0 * math.pi
_T = TypeVar("_T")


# -- small helpers ---------------------------------------------------------------------------


def _require(name: str, kwargs: Mapping, keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in kwargs]
    if missing:
        raise KeyError(f"{name} needs {', '.join(keys)}; missing {', '.join(missing)}")


def _positive(source: str, key: str, value: Any) -> None:
    if not np.all(np.asarray(value, dtype=float) > 0):
        raise ValueError(f"{source}: {key} must be > 0, got {shown(value)}")


def _ellipticity(source: str, e1: float, e2: float, key: str = "e1, e2") -> tuple[float, float]:
    # checked before any conversion takes sqrt(q), naming the source's keys
    if not math.hypot(e1, e2) < 1.0:
        raise ValueError(f"{source}: {key} must satisfy e1^2 + e2^2 < 1, got {shown((e1, e2))}")
    return float(e1), float(e2)


def _floats(values: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def _lookup(table: Mapping[Any, _T], key: Any, missing: str, *, inherit: bool = False) -> _T:
    """The entry of a conversion table for ``key`` (a class or a foreign profile name).

    Parameters
    ----------
    table : mapping
        Classes or names to converters.
    key : type or str
        What to convert: a profile's class (looked up exactly, or along its method resolution
        order with ``inherit``) or a foreign profile name.
    missing : str
        The start of the error message when ``key`` has no entry, e.g. ``"no converter to
        lenstronomy for MGE"``.
    inherit : bool
        Accept an entry for a base class of ``key`` (as ``isinstance`` would).

    Returns
    -------
    object
        The table's entry.

    Raises
    ------
    ValueError
        When ``key`` has no entry: ``missing``, then ``"; supported: "`` and every key of the
        table (classes by name).
    """
    candidates = key.__mro__ if inherit and isinstance(key, type) else (key,)
    for candidate in candidates:
        try:
            if candidate in table:
                return table[candidate]
        except TypeError:  # an unhashable name is no name of the table's
            break
    supported = ", ".join(k.__name__ if isinstance(k, type) else str(k) for k in table)
    raise ValueError(f"{missing}; supported: {supported}")


# -- lenstronomy -----------------------------------------------------------------------------


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


# -- autogalaxy ------------------------------------------------------------------------------


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


# -- light profiles ---------------------------------------------------------------------------
#
# lenstronomy's SERSIC, SERSIC_ELLIPSE and CORE_SERSIC use the same elliptical radius as ours
# (sqrt(q x'^2 + y'^2 / q) for the same e1, e2) but the approximation
# b_L = 1.9992 n - 0.3271 where we use the exact b_n (R_eff is then the half-light radius).
# The profiles are equal at every point when R_eff = R_sersic (b_n / b_L)^n and
# I_e = amp exp(b_L - b_n); for the core-Sersic the break radius, gamma and alpha carry over.
# lenstronomy floors R at 1e-4" (and R_sersic likewise); points closer to the centre differ.
# Images: lenstronomy multiplies surface brightness by the pixel area; twinlens images are
# surface brightness (pixel means), so a lenstronomy image is ours times pixel_scale^2.


def _b_lenstronomy(n: float) -> float:
    from twinlens.kernels.light import sersic_b_capaccioli

    return max(float(sersic_b_capaccioli(n)), 1e-5)  # lenstronomy's floor


# lenstronomy's light profile names to whether each is elliptical and has a core
_LIGHT_FROM_LENSTRONOMY: dict[str, tuple[bool, bool]] = {
    "SERSIC": (False, False),
    "SERSIC_ELLIPSE": (True, False),
    "CORE_SERSIC": (True, True),
}


def light_from_lenstronomy(name: str, kwargs: Mapping[str, Any]) -> Any:
    """Our light profile equal to one of lenstronomy's Sersic light profiles.

    Parameters
    ----------
    name : {"SERSIC", "SERSIC_ELLIPSE", "CORE_SERSIC"}
        lenstronomy's light profile name.
    kwargs : mapping
        Its keyword arguments (``amp`` defaults to 1, ``alpha`` of the core-Sersic to 3).

    Returns
    -------
    Sersic or CoreSersic
        The equal profile (radius and intensity rescaled to the exact ``b_n``).

    Raises
    ------
    ValueError
        For another name (the message lists the supported ones) or a bad ellipticity.
    KeyError
        When a required keyword is missing (named).
    """
    from twinlens.kernels.light import sersic_b, sersic_with_other_b
    from twinlens.profiles.light import CoreSersic, Sersic

    elliptical, cored = _lookup(
        _LIGHT_FROM_LENSTRONOMY, name, f"no light converter from lenstronomy's {name!r}"
    )
    _require(name, kwargs, ("R_sersic", "n_sersic"))
    n = float(kwargs["n_sersic"])
    b_l, b_e = _b_lenstronomy(n), float(sersic_b(n))
    ell = _l_ell(name, kwargs) if elliptical else (0.0, 0.0)
    radius, intensity = sersic_with_other_b(
        float(kwargs["R_sersic"]), float(kwargs.get("amp", 1.0)), n, b_l, b_e
    )
    common: dict[str, Any] = {
        "centre": _l_centre(kwargs),
        "ell_comps": ell,
        "effective_radius": float(radius),
        "sersic_index": n,
        "intensity": float(intensity),
    }
    if cored:
        _require(name, kwargs, ("Rb", "gamma"))
        return CoreSersic(
            **common,
            break_radius=float(kwargs["Rb"]),
            gamma=float(kwargs["gamma"]),
            alpha=float(kwargs.get("alpha", 3.0)),
        )
    return Sersic(**common)


def _light_to_lenstronomy_table() -> dict[type, str]:
    # our light classes (subclasses included) to lenstronomy's names; imported when used
    from twinlens.profiles.light import CoreSersic, Exponential, Sersic

    return {Sersic: "SERSIC_ELLIPSE", Exponential: "SERSIC_ELLIPSE", CoreSersic: "CORE_SERSIC"}


def light_to_lenstronomy(profile: Any) -> tuple[str, dict[str, Any]]:
    """The lenstronomy light profile equal to ``profile`` (inverse of
    :func:`light_from_lenstronomy`).

    Parameters
    ----------
    profile : Sersic, Exponential or CoreSersic
        Or an instance of a subclass of one of them.

    Returns
    -------
    (str, dict)
        ``"SERSIC_ELLIPSE"`` or ``"CORE_SERSIC"`` and its keyword arguments.

    Raises
    ------
    ValueError
        For another class (the message lists the supported ones).
    """
    from twinlens.kernels.light import sersic_b, sersic_with_other_b

    kind = type(profile)
    name = _lookup(
        _light_to_lenstronomy_table(),
        kind,
        f"no light converter to lenstronomy for {kind.__name__}",
        inherit=True,
    )
    n = float(profile.sersic_index)
    b_l, b_e = _b_lenstronomy(n), float(sersic_b(n))
    radius, amp = sersic_with_other_b(profile.effective_radius, profile.intensity, n, b_e, b_l)
    kw = {
        "amp": float(amp),
        "R_sersic": float(radius),
        "n_sersic": n,
        **_ell_kw(profile),
        **_centre_kw(profile),
    }
    if name == "CORE_SERSIC":
        kw |= {"Rb": float(profile.break_radius), "gamma": float(profile.gamma)}
        kw["alpha"] = float(profile.alpha)
    return name, kw

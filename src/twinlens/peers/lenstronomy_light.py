"""Sersic light profiles to and from lenstronomy (:func:`light_from_lenstronomy`,
:func:`light_to_lenstronomy`).

lenstronomy's SERSIC, SERSIC_ELLIPSE and CORE_SERSIC use the same elliptical radius as ours
(``sqrt(q x'^2 + y'^2 / q)`` for the same ``e1, e2``) but the approximation
``b_L = 1.9992 n - 0.3271`` where we use the exact ``b_n`` (``R_eff`` is then the half-light
radius). The profiles are equal at every point when ``R_eff = R_sersic (b_n / b_L)^n`` and
``I_e = amp exp(b_L - b_n)``; for the core-Sersic the break radius, ``gamma`` and ``alpha``
carry over. lenstronomy floors ``R`` at 1e-4" (and ``R_sersic`` likewise); points closer to the
centre differ. Images: lenstronomy multiplies surface brightness by the pixel area; twinlens
images are surface brightness (pixel means), so a lenstronomy image is ours times
``pixel_scale^2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twinlens.peers.common import _lookup, _require
from twinlens.peers.lenstronomy_mass import _centre_kw, _ell_kw, _l_centre, _l_ell


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

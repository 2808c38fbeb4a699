"""What each of our profiles becomes in COOLEST: its profile type, entity, and each COOLEST
parameter as a function of our parameters (named by path)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from twinlens.coolest.base import NotDescribable
from twinlens.coolest.conventions import (
    _exp_i_eff,
    _exp_theta_eff,
    _gamma_ext,
    _i_eff,
    _phi,
    _phi_ext,
    _q,
    _same,
    _theta_eff,
)
from twinlens.lensing.tracer import Tracer
from twinlens.profiles.composite import MassSum
from twinlens.profiles.isothermal import SIE, SIS
from twinlens.profiles.light import Exponential, LinearExponential, LinearSersic, Sersic
from twinlens.profiles.power_law import PowerLaw
from twinlens.profiles.simple import ExternalShear, MassSheet
from twinlens.user_warnings import warn_user

_MASS_SUPPORTED = "SIS, SIE, PowerLaw, ExternalShear, MassSheet (and MassSum of them)"


@dataclass(frozen=True)
class _Param:
    """One COOLEST parameter: a function of some of our parameters (named by path)."""

    name: str
    inputs: tuple[str, ...]
    fn: Callable[..., Any]
    affine_in: tuple[str, ...] = ()  # inputs it is affine in when the others are fixed
    angle: bool = False  # degrees, defined modulo 180
    fixed: bool = False  # a constant of our profile, not a parameter


@dataclass(frozen=True)
class _Export:
    path: str  # of our profile, e.g. "lenses[0].mass[1]"
    profile: Any
    ctype: str  # COOLEST's profile type
    model: str  # "mass" or "light"
    field: bool  # a MassField entity of its own
    params: tuple[_Param, ...]

    @property
    def galaxy(self) -> str:
        return self.path.split(".", 1)[0]


def _copy(name: str, path: str) -> _Param:
    return _Param(name, (path,), _same, affine_in=(path,))


def _constant(name: str, value: float) -> _Param:
    return _Param(name, (), lambda: value, fixed=True)


def _centre(path: str) -> tuple[_Param, ...]:
    return _copy("center_x", f"{path}.centre[0]"), _copy("center_y", f"{path}.centre[1]")


def _shape(path: str) -> tuple[_Param, ...]:
    e = (f"{path}.ell_comps[0]", f"{path}.ell_comps[1]")
    return _Param("q", e, _q), _Param("phi", e, _phi, angle=True)


def _at_origin(path: str, profile: Any, field: str, ctype: str) -> None:
    value = tuple(float(v) for v in getattr(profile, field))
    if value != (0.0, 0.0):
        raise NotDescribable(
            f"{path} is a {type(profile).__name__} with {field} {value}: COOLEST's {ctype} has "
            "its origin fixed at (0, 0)"
        )


def _mass_export(path: str, profile: Any) -> _Export:
    kind = type(profile)
    theta_e = _copy("theta_E", f"{path}.einstein_radius")
    if kind is SIE:
        return _Export(
            path, profile, "SIE", "mass", False, (theta_e, *_shape(path), *_centre(path))
        )
    if kind is SIS:
        shape = (_constant("q", 1.0), _constant("phi", 0.0))
        return _Export(path, profile, "SIE", "mass", False, (theta_e, *shape, *_centre(path)))
    if kind is PowerLaw:
        params = (_copy("gamma", f"{path}.slope"), theta_e, *_shape(path), *_centre(path))
        return _Export(path, profile, "PEMD", "mass", False, params)
    if kind is ExternalShear:
        _at_origin(path, profile, "origin", "ExternalShear")
        g = (f"{path}.gamma_1", f"{path}.gamma_2")
        params = (_Param("gamma_ext", g, _gamma_ext), _Param("phi_ext", g, _phi_ext, angle=True))
        return _Export(path, profile, "ExternalShear", "mass", True, params)
    if kind is MassSheet:
        _at_origin(path, profile, "centre", "ConvergenceSheet")
        params = (_copy("kappa_s", f"{path}.kappa"),)
        return _Export(path, profile, "ConvergenceSheet", "mass", True, params)
    raise NotDescribable(
        f"{path} is a {kind.__name__}, which COOLEST cannot describe; the mass profiles "
        f"exported are {_MASS_SUPPORTED}"
    )


def _light_export(path: str, profile: Any) -> _Export | None:
    kind = type(profile)
    if kind not in (Sersic, LinearSersic, Exponential, LinearExponential):
        return None
    r, n, i = (f"{path}.{f}" for f in ("effective_radius", "sersic_index", "intensity"))
    params: tuple[_Param, ...]
    if kind in (Exponential, LinearExponential):
        params = (_Param("theta_eff", (r,), _exp_theta_eff, affine_in=(r,)), _constant("n", 1.0))
        amplitude = _Param("I_eff", (i,), _exp_i_eff, affine_in=(i,))
    else:
        params = (_Param("theta_eff", (r, n), _theta_eff, affine_in=(r,)), _copy("n", n))
        amplitude = _Param("I_eff", (i, n), _i_eff, affine_in=(i,))
    if not profile.n_linear:  # a linear profile's I_eff stays null
        params = (amplitude, *params)
    return _Export(
        path, profile, "Sersic", "light", False, (*params, *_shape(path), *_centre(path))
    )


def _flatten(path: str, profile: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(profile, MassSum):
        for k, part in enumerate(profile.profiles):
            yield from _flatten(f"{path}.profiles[{k}]", part)
    else:
        yield path, profile


#: COOLEST's pixelated light profiles (a pixelised source's)
_GRID_TYPES = ("PixelatedRegularGrid", "IrregularGrid")


def _grid_type(pixelization: Any) -> str:
    from twinlens.inversion.meshes import Rectangular

    # a uniform lattice only: an adaptive one's pixels are not on COOLEST's regular grid
    return "PixelatedRegularGrid" if type(pixelization.mesh) is Rectangular else "IrregularGrid"


def _collect(tracer: Tracer, unsupported_light: str) -> tuple[list[_Export], dict[str, str]]:
    exports: list[_Export] = []
    skipped: dict[str, str] = {}
    linear: list[str] = []
    for role, galaxies in (("lenses", tracer.lenses), ("sources", tracer.sources)):
        for i, galaxy in enumerate(galaxies):
            if role == "lenses":
                for j, mass in enumerate(galaxy.mass):
                    for path, part in _flatten(f"lenses[{i}].mass[{j}]", mass):
                        exports.append(_mass_export(path, part))
            elif galaxy.mass:
                warn_user(
                    f"sources[{i}] has mass profiles, which a Tracer ignores (one lens plane); "
                    "they are not written to COOLEST",
                    UserWarning,
                )
            if galaxy.pixelization is not None:
                ctype = _grid_type(galaxy.pixelization)
                path = f"{role}[{i}].pixelization"
                exports.append(_Export(path, galaxy.pixelization, ctype, "light", False, ()))
            for j, light in enumerate(galaxy.light):
                path = f"{role}[{i}].light[{j}]"
                export = _light_export(path, light)
                if export is None:
                    name = type(light).__name__
                    if unsupported_light == "raise":
                        raise NotDescribable(
                            f"{path} is a {name}, which COOLEST cannot describe (its analytic "
                            "light profiles are Sersic ones); pass unsupported_light='skip' "
                            "to leave it out"
                        )
                    skipped[path] = name
                    continue
                if light.n_linear:
                    linear.append(f"{path} ({type(light).__name__})")
                exports.append(export)
    if skipped:
        listed = ", ".join(f"{p} ({n})" for p, n in skipped.items())
        warn_user(
            f"COOLEST has no equivalent of these light profiles, left out of the file: {listed}",
            UserWarning,
        )
    if linear:
        warn_user(
            f"linear light profiles have no intensity of their own, so their I_eff is written "
            f"null: {', '.join(linear)}; export tracer.with_intensities(...) to record the "
            "intensities a fit solved",
            UserWarning,
        )
    return exports, skipped

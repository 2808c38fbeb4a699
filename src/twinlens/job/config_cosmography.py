"""The ``[cosmography]`` and ``[kinematics]`` tables of a fit configuration: ``H0`` sampled
directly, the mass-sheet parameters, and the lens galaxy's measured velocity dispersion.

``[cosmography]`` takes ``h0`` (km/s/Mpc), ``omega_m`` (flat LambdaCDM; default 0.3),
``lambda_int`` (default 1) and ``kappa_ext`` (default 0): each a number (fixed) or a prior table
(``kappa_ext = {samples = "kappa_ext.txt"}``: a prior given by samples, a list or a file).
It needs a ``[point_source]`` with delays and the redshifts, and takes the place of its
``time_delay_distance``.

``[kinematics]`` takes ``sigma`` (km/s; a number, or a list of bins) with ``sigma_error`` (or a
``covariance``), ``aperture`` (``{type = "slit", length, width}``, ``{type = "circle",
radius}`` or ``{type = "annulus", r_in, r_out}``, or a list of them, one per bin),
``seeing_fwhm`` (arcsec; optional; Gaussian, or Moffat with ``seeing_beta``), ``light``
(``{type = "Hernquist", a}``, ``{type = "Hernquist", effective_radius}`` or
``{type = "Sersic", effective_radius, sersic_index}``), ``anisotropy``
(``{type = "OsipkovMerritt", r_ani}``, ``{type = "ConstantBeta", beta}`` or
``{type = "Isotropic"}``; ``r_ani`` and ``beta`` numbers or priors) and ``mass`` (the path of
the lens profile that the Jeans model takes as spherical, a power law, point mass or NFW, or a
list of paths summed; default ``lenses[0].mass[0]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twinlens.job.config_errors import ConfigError, _is_number, _show, _suggest
from twinlens.job.config_priors import _value

__all__ = ["CosmographyConfig", "check_sections", "read_cosmography"]

_COSMO_KEYS = ("h0", "omega_m", "lambda_int", "kappa_ext")
_KIN_KEYS = (
    "sigma",
    "sigma_error",
    "covariance",
    "aperture",
    "seeing_fwhm",
    "seeing_beta",
    "light",
    "anisotropy",
    "mass",
)
_ANISOTROPIES = {"Isotropic": (), "OsipkovMerritt": ("r_ani",), "ConstantBeta": ("beta",)}
#: a Hernquist profile's half-light (effective) radius over its scale radius ``a``
HERNQUIST_REFF_OVER_A = 1.8153


@dataclass
class CosmographyConfig:
    """What ``[cosmography]`` and ``[kinematics]`` define: the parameters' starting
    values (the free ones' priors are registered), and the dispersion data."""

    cosmography: Any  # a twinlens.likelihood.cosmography.Cosmography
    kinematics: Any = None  # a VelocityDispersionData, or None
    anisotropy: Any = None  # Isotropic, ConstantBeta or OsipkovMerritt, or None


def read_cosmography(
    data: dict, priors: dict, ps_config: Any, base: Path | None = None
) -> CosmographyConfig | None:
    """The two tables (None without ``[cosmography]``); ``ps_config`` is the
    ``[point_source]``'s :class:`~twinlens.job.config_point_source.PointSourceConfig`;
    ``base`` the folder that a samples prior's file is read relative to (``kappa_ext =
    {samples = "kappa_ext.txt"}``)."""
    check_sections(data)
    if "cosmography" not in data:
        return None
    table = _table(data["cosmography"], "[cosmography]", _COSMO_KEYS)
    _check_point_source(ps_config)
    if "h0" not in table:
        raise ConfigError(
            "[cosmography].h0 is missing: the Hubble constant, km/s/Mpc, e.g. "
            "h0 = {uniform = [40.0, 100.0]}"
        )
    from twinlens.likelihood.cosmography import Cosmography

    values = {
        key: _value(table[key], f"[cosmography].{key}", priors, f"cosmography.{key}", base)
        for key in _COSMO_KEYS
        if key in table
    }
    values |= {"z_lens": ps_config.z_lens, "z_source": ps_config.z_source}
    try:
        cosmography = Cosmography(**values)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"[cosmography]: {str(err).replace('Cosmography.', '')}") from None
    if "kinematics" not in data:
        return CosmographyConfig(cosmography)
    kinematics, anisotropy = _kinematics(data["kinematics"], priors)
    return CosmographyConfig(cosmography, kinematics, anisotropy)


def check_sections(data: dict) -> None:
    """``[kinematics]`` comes with ``[cosmography]`` (checked before the other tables, whose
    errors would otherwise speak of what ``[cosmography]`` gives)."""
    if "kinematics" in data and "cosmography" not in data:
        raise ConfigError(
            "[kinematics] needs [cosmography]: the dispersion is predicted in a cosmology "
            "with H0 and the mass-sheet parameters, e.g. [cosmography] h0 = {uniform = "
            "[40.0, 100.0]}"
        )


def _table(raw: Any, where: str, keys: tuple[str, ...]) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table, got {_show(raw)}")
    unknown = [k for k in raw if k not in keys]
    if unknown:
        raise ConfigError(
            f"{where}.{unknown[0]}: unknown key; expected {', '.join(keys)}"
            f"{_suggest(unknown[0], keys)}"
        )
    return raw


def _check_point_source(ps_config: Any) -> None:
    """``[cosmography]`` needs the point source's delays and the redshifts, and replaces its
    ``time_delay_distance``."""
    if ps_config is None or ps_config.likelihood.data.delays is None:
        raise ConfigError("[cosmography] needs a [point_source] with delays: the delays measure H0")
    if ps_config.z_lens is None:
        raise ConfigError(
            "[cosmography] needs the redshifts: give [point_source].z_lens and z_source (or "
            "[[lens]] and [[source]] redshifts)"
        )


def _kinematics(raw: Any, priors: dict) -> tuple[Any, Any]:
    """The ``VelocityDispersionData`` and the anisotropy of ``[kinematics]``."""
    from twinlens.likelihood.cosmography import VelocityDispersionData

    where = "[kinematics]"
    table = _table(raw, where, _KIN_KEYS)
    for key in ("sigma", "aperture", "light"):
        if key not in table:
            raise ConfigError(f"{where}.{key} is missing ({_KIN_HELP[key]})")
    if ("sigma_error" in table) == ("covariance" in table):
        raise ConfigError(
            f"{where}: give sigma_error (km/s, one per value) or covariance ((km/s)^2), one of them"
        )
    apertures = table["aperture"]
    apertures = apertures if isinstance(apertures, list) else [apertures]
    seeing = None
    if "seeing_beta" in table and "seeing_fwhm" not in table:
        raise ConfigError(f"{where}.seeing_beta (a Moffat seeing's) needs seeing_fwhm")
    if "seeing_beta" in table:
        args = {"fwhm": table["seeing_fwhm"], "beta": table["seeing_beta"]}
        seeing = _made(where + ".seeing_beta", "MoffatSeeing", args)
    elif "seeing_fwhm" in table:
        seeing = _made(where + ".seeing_fwhm", "GaussianSeeing", {"fwhm": table["seeing_fwhm"]})
    mass = table.get("mass", "lenses[0].mass[0]")
    if isinstance(mass, list) and mass and all(isinstance(m, str) for m in mass):
        mass = tuple(mass)
    elif not isinstance(mass, str):
        raise ConfigError(
            f"{where}.mass = {_show(mass)}: expected a path in quotes, or a list of them"
        )
    anisotropy = _anisotropy(table.get("anisotropy", {"type": "Isotropic"}), priors)
    made = tuple(_aperture(a, f"{where}.aperture[{i}]") for i, a in enumerate(apertures))
    try:
        data = VelocityDispersionData(
            sigma=_numeric(table["sigma"], f"{where}.sigma"),
            error=_numeric(table.get("sigma_error"), f"{where}.sigma_error"),
            covariance=_numeric(table.get("covariance"), f"{where}.covariance"),
            apertures=made,
            seeing=seeing,
            light=_light(table["light"]),
            mass=mass,
        )
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        message = str(err).replace("VelocityDispersionData.", "").replace("apertures", "aperture")
        raise ConfigError(f"{where}: {message.strip(chr(39))}") from None
    return data, anisotropy


_KIN_HELP = {
    "sigma": "the measured dispersion, km/s, or a list of bins",
    "aperture": 'e.g. {type = "slit", length = 1.0, width = 0.8}, arcsec',
    "light": 'the tracer, e.g. {type = "Hernquist", effective_radius = 0.9}, arcsec',
}


def _numeric(raw: Any, where: str) -> Any:
    if raw is None:
        return None
    ok = _is_number(raw) or (isinstance(raw, list) and raw and all(_rows(v) for v in raw))
    if not ok:
        raise ConfigError(f"{where} = {_show(raw)}: expected a number or a list of numbers")
    return raw


def _rows(value: Any) -> bool:
    return _is_number(value) or (isinstance(value, list) and all(map(_is_number, value)))


def _made(where: str, name: str, args: dict) -> Any:
    """``twinlens.kinematics.<name>(**args)``, its errors in TOML terms."""
    import twinlens.kinematics as kinematics

    for key, value in args.items():
        if not _is_number(value):
            raise ConfigError(f"{where}: {key} = {_show(value)}: expected a number")
    try:
        return getattr(kinematics, name)(**{k: float(v) for k, v in args.items()})
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {str(err).replace(name + '.', '')}") from None


def _aperture(raw: Any, where: str) -> Any:
    kinds = {
        "slit": ("Slit", ("length", "width")),
        "circle": ("CircularAperture", ("radius",)),
        "annulus": ("Annulus", ("r_in", "r_out")),
    }
    if not isinstance(raw, dict) or raw.get("type") not in kinds:
        raise ConfigError(
            f'{where} = {_show(raw)}: expected {{type = "slit", length = ..., width = ...}}, '
            '{type = "circle", radius = ...} or {type = "annulus", r_in = ..., r_out = ...} '
            "(arcsec)"
        )
    name, keys = kinds[raw["type"]]
    given = {k: v for k, v in raw.items() if k != "type"}
    if sorted(given) != sorted(keys):
        raise ConfigError(f"{where}: a {raw['type']} takes {', '.join(keys)}, got {_show(raw)}")
    return _made(where, name, given)


def _light(raw: Any) -> Any:
    where = "[kinematics].light"
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind not in ("Hernquist", "Sersic"):
        raise ConfigError(
            f'{where} = {_show(raw)}: expected {{type = "Hernquist", effective_radius = ...}}'
            ' (or a = ...), or {type = "Sersic", effective_radius = ..., sersic_index = ...} '
            "(arcsec)"
        )
    given = {k: v for k, v in raw.items() if k != "type"}
    if kind == "Sersic":
        if sorted(given) != ["effective_radius", "sersic_index"]:
            raise ConfigError(f"{where}: Sersic takes effective_radius and sersic_index")
        return _made(where, "SersicLight", given)
    if list(given) == ["effective_radius"] and _is_number(given["effective_radius"]):
        given = {"a": float(given["effective_radius"]) / HERNQUIST_REFF_OVER_A}
    if list(given) != ["a"]:
        raise ConfigError(f"{where}: give a or effective_radius (arcsec), got {_show(raw)}")
    return _made(where, "Hernquist", given)


def _anisotropy(raw: Any, priors: dict) -> Any:
    import twinlens.kinematics as kinematics

    where = "[kinematics].anisotropy"
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind not in _ANISOTROPIES:
        raise ConfigError(
            f"{where} = {_show(raw)}: type must be one of {', '.join(_ANISOTROPIES)}"
            f"{_suggest(str(kind), tuple(_ANISOTROPIES))}"
        )
    keys = _ANISOTROPIES[kind]
    given = {k: v for k, v in raw.items() if k != "type"}
    if sorted(given) != sorted(keys):
        raise ConfigError(f"{where}: {kind} takes {', '.join(keys) or 'nothing'}, got {_show(raw)}")
    values = {k: _value(v, f"{where}.{k}", priors, f"kinematics.{k}") for k, v in given.items()}
    try:
        return getattr(kinematics, kind)(**values)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {str(err).replace(kind + '.', '')}") from None

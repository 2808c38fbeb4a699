"""The ``[[lens]]`` and ``[[source]]`` galaxies of a fit configuration: their mass and light
profiles, named by class (or ``"module:Class"`` for one of the user's own), with their
parameters' values and priors."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from twinlens import light as light_module
from twinlens import mass as mass_module
from twinlens.job.config_errors import ConfigError, _is_number, _show, _suggest
from twinlens.job.config_pixelised import _pixelization
from twinlens.job.config_priors import _value
from twinlens.lensing.tracer import Galaxy
from twinlens.profiles.base import MassProfile
from twinlens.profiles.light import LightProfile


def _profile_class(name: Any, kind: str, where: str) -> type:
    module = mass_module if kind == "mass" else light_module
    choices = [n for n in module.__all__ if n not in ("MassProfile", "LightProfile", "MassSum")]
    if name is None:
        raise ConfigError(f"{where}: missing; name the {kind} profile, one of {', '.join(choices)}")
    if isinstance(name, str) and ":" in name:
        return _own_profile_class(name, kind, where)
    if name not in choices:
        raise ConfigError(
            f"{where} = {_show(name)}: unknown {kind} profile; choose from "
            f"{', '.join(choices)}{_suggest(name, choices)}"
        )
    return getattr(module, name)


def _own_profile_class(name: str, kind: str, where: str) -> type:
    """A profile class of the user's own, named ``"module:Class"`` (the module importable from
    the working directory or the Python path)."""
    module_name, _, class_name = name.partition(":")
    base = MassProfile if kind == "mass" else LightProfile
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(
            f"{where} = {_show(name)}: cannot import module {module_name!r} ({err}); a profile "
            'of your own is named "module:Class", the module on the Python path'
        ) from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, base) and dataclasses.is_dataclass(cls)):
        raise ConfigError(
            f"{where} = {_show(name)}: module {module_name!r} has no {kind} profile class "
            f"{class_name!r} (a dataclass subclassing twinlens' {base.__name__})"
        )
    return cls


def _check_parameters(cls: type, params: dict, here: str) -> None:
    """Unknown and missing parameters of profile ``cls``, named in TOML terms (not as
    ``__init__`` arguments), and the shapes of pairs and integers before any value is read."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    names = [f.name for f in fields]
    listed = f"its parameters are {', '.join(names)}"
    unknown = [k for k in params if k not in names]
    if unknown:
        raise ConfigError(
            f"{here}: {cls.__name__} has no parameter {unknown[0]!r}; {listed}"
            f"{_suggest(unknown[0], names)}"
        )
    required = (dataclasses.MISSING, dataclasses.MISSING)
    missing = [
        f.name
        for f in fields
        if (f.default, f.default_factory) == required and f.name not in params
    ]
    if missing:
        hint = (
            " (or light = i, to follow the galaxy's i-th light profile, an MGELight)"
            if cls is mass_module.MGE
            else ""
        )
        raise ConfigError(f"{here}: {cls.__name__} needs {', '.join(missing)}{hint}; {listed}")
    for f in fields:
        if f.name not in params:
            continue
        raw = params[f.name]
        if isinstance(f.default, tuple) and len(f.default) == 2:  # centre, ell_comps, origin
            if not (isinstance(raw, list) and len(raw) == 2):
                raise ConfigError(
                    f"{here}.{f.name} = {_show(raw)}: expected a pair [x, y] of numbers or "
                    "prior tables"
                )
        elif f.type in ("int", int) and not (_is_number(raw) and float(raw).is_integer()):
            raise ConfigError(f"{here}.{f.name} = {_show(raw)}: expected a whole number")


def _profiles(
    entries: Any,
    kind: str,
    where: str,
    prefix: str,
    priors: dict,
    lights: tuple = (),
    data: Any = None,
) -> tuple:
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(
            f"{where} = {_show(entries)}: expected [[...{kind}]] tables, each with a type"
        )
    out = []
    for i, entry in enumerate(entries):
        here, path = f"{where}[{i}]", f"{prefix}.{kind}[{i}]"
        params = dict(entry)
        if kind == "light" and params.get("type") == "Pixelization":
            if prefix.startswith("lenses"):
                raise ConfigError(
                    f'{here}.type = "Pixelization": a pixelization reconstructs a source\'s '
                    "light; put it in a [[source.light]] table"
                )
            out.append(_pixelization(params, here, f"{prefix}.pixelization", priors, data))
            continue
        cls = _profile_class(params.pop("type", None), kind, f"{here}.type")
        follows = params.pop("light", None) if cls is mass_module.MGE else None
        if follows is not None:  # an MGE mass following the galaxy's MGE light
            n = len(lights)
            valid = f"0 to {n - 1}" if n else "none: the galaxy has no light profile"
            if not isinstance(follows, int) or isinstance(follows, bool):
                raise ConfigError(
                    f"{here}.light = {_show(follows)}: expected the index of one of the "
                    f"galaxy's light profiles ({valid})"
                )
            if not 0 <= follows < n:
                raise ConfigError(f"{here}.light = {follows} names no light profile ({valid})")
            source = lights[follows]
            if not isinstance(source, light_module.MGELight):
                raise ConfigError(
                    f"{here}.light = {follows} must name an MGELight, not a {type(source).__name__}"
                )
            params.setdefault("sigmas", list(source.sigmas))
            params.setdefault("intensities", list(source.intensities))
            params.setdefault("centre", list(source.centre))
            params.setdefault("ell_comps", list(source.ell_comps))
        _check_parameters(cls, params, here)
        integers = {f.name for f in dataclasses.fields(cls) if f.type in ("int", int)}
        values = {
            name: int(raw)
            if name in integers
            else _value(raw, f"{here}.{name}", priors, f"{path}.{name}")
            for name, raw in params.items()
        }
        try:
            out.append(cls(**values))
        except (TypeError, ValueError) as err:  # range checks, which name the parameter
            raise ConfigError(f"{here} ({cls.__name__}): {err}") from None
    return tuple(out)


def _galaxies(entries: Any, role: str, priors: dict, data: Any = None) -> tuple:
    if entries is None:
        return ()
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list) or not all(isinstance(t, dict) for t in entries):
        raise ConfigError(
            f"{role} = {_show(entries)}: expected [[{role}]] tables, each with [[{role}.mass]] "
            f"and [[{role}.light]] tables"
        )
    galaxies = []
    for g, table in enumerate(entries):
        entries_allowed = ("mass", "light", "redshift")
        unknown = sorted(set(table) - set(entries_allowed))
        if unknown:
            raise ConfigError(
                f"{role}[{g}]: unknown entries {', '.join(unknown)}; a galaxy has mass, light "
                f"and a redshift{_suggest(unknown[0], entries_allowed)}"
            )
        redshift = table.get("redshift")
        if redshift is not None and not (_is_number(redshift) and 0 <= float(redshift) < 1e3):
            raise ConfigError(
                f"{role}[{g}].redshift = {_show(redshift)}: expected a number in [0, 1000)"
            )
        prefix = f"{'lenses' if role == 'lens' else 'sources'}[{g}]"
        light = _profiles(
            table.get("light", []), "light", f"{role}[{g}].light", prefix, priors, data=data
        )
        mass = _profiles(
            table.get("mass", []), "mass", f"{role}[{g}].mass", prefix, priors, lights=light
        )
        z = None if redshift is None else float(redshift)
        galaxies.append(Galaxy(mass=mass, light=light, redshift=z))
    return tuple(galaxies)

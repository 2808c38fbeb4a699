"""The fit configuration: a TOML file naming the dataset, the galaxies with their priors, the
search and the backend.

A parameter is a number (fixed) or a table with one prior (free)::

    einstein_radius = 1.2                                # fixed
    einstein_radius = {uniform = [0.5, 2.0]}             # free, starts at the prior median
    einstein_radius = {gaussian = [1.2, 0.1], start = 1.15}
    centre = [0.0, {truncated_gaussian = [0.0, 0.1, -0.5, 0.5]}]

Priors: ``uniform = [lower, upper]``, ``log_uniform = [lower, upper]``, ``gaussian = [mean,
sigma]``, ``truncated_gaussian = [mean, sigma, lower, upper]``. Profiles are named by their
class in :mod:`twinlens.mass` and :mod:`twinlens.light`. An ``MGE`` mass may say
``light = i`` to follow the galaxy's ``i``-th light profile (an ``MGELight``): same Gaussians,
centre and ellipticity, with its own ``mass_to_light_ratio``. See ``docs/fitting.rst`` for a
whole file.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from twinlens import light as light_module
from twinlens import mass as mass_module
from twinlens.backend import check_backend
from twinlens.fit.imaging import Imaging
from twinlens.fit.tracer import Galaxy, Tracer
from twinlens.model import (
    GaussianPrior,
    LogUniformPrior,
    Model,
    Prior,
    TruncatedGaussianPrior,
    UniformPrior,
)

__all__ = ["FitConfig", "load_config", "parse_config", "prior_from_table"]

_PRIORS = {
    "uniform": (UniformPrior, 2),
    "log_uniform": (LogUniformPrior, 2),
    "gaussian": (GaussianPrior, 2),
    "truncated_gaussian": (TruncatedGaussianPrior, 4),
}
_SECTIONS = {"backend", "output", "dataset", "search", "lens", "source", "title"}


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the entry."""


@dataclass
class FitConfig:
    """What a fit needs, read from a configuration file."""

    dataset: Imaging
    model: Model
    search: dict = field(default_factory=lambda: {"name": "nautilus"})
    backend: str = "numba"
    output: Path = Path("twinlens_fit")
    title: str = "twinlens fit"


def prior_from_table(table: dict, where: str) -> tuple[Prior, float | None]:
    """``(prior, start)`` from a parameter table such as ``{uniform = [0, 1], start = 0.3}``."""
    kinds = [k for k in table if k in _PRIORS]
    unknown = set(table) - set(_PRIORS) - {"start"}
    if len(kinds) != 1 or unknown:
        raise ConfigError(
            f"{where}: a free parameter needs exactly one of {sorted(_PRIORS)} (and optionally "
            f"start), got {sorted(table)}"
        )
    cls, n_args = _PRIORS[kinds[0]]
    args = table[kinds[0]]
    if not isinstance(args, list) or len(args) != n_args:
        raise ConfigError(f"{where}: {kinds[0]} takes a list of {n_args} numbers, got {args!r}")
    try:
        prior = cls(*(float(a) for a in args))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from None
    start = table.get("start")
    if start is not None and not prior.contains(float(start)):
        raise ConfigError(f"{where}: start = {start} lies outside {prior!r}")
    return prior, None if start is None else float(start)


def _start(prior: Prior, start: float | None) -> float:
    if start is not None:
        return start
    value = prior.median
    return value if math.isfinite(value) else 0.0


def _profile_class(name: Any, kind: str, where: str) -> type:
    module = mass_module if kind == "mass" else light_module
    cls = getattr(module, str(name), None) if name in module.__all__ else None
    if cls is None or name in ("MassProfile", "LightProfile"):
        choices = [n for n in module.__all__ if n not in ("MassProfile", "LightProfile")]
        raise ConfigError(f"{where}: unknown {kind} profile {name!r}; choose from {choices}")
    return cls


def _value(raw: Any, where: str, priors: dict, path: str) -> Any:
    """A parameter value: numbers pass, prior tables register a free parameter at ``path``."""
    if isinstance(raw, dict):
        prior, start = prior_from_table(raw, where)
        priors[path] = prior
        return _start(prior, start)
    if isinstance(raw, list):
        if raw and all(isinstance(v, (int, float)) for v in raw) and len(raw) > 2:
            return np.asarray(raw, dtype=float)  # a fixed array (MGE sigmas, intensities)
        return tuple(_value(v, f"{where}[{i}]", priors, f"{path}[{i}]") for i, v in enumerate(raw))
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ConfigError(f"{where}: expected a number, a list or a prior table, got {raw!r}")
    return float(raw) if isinstance(raw, (int, float)) else raw


def _profiles(
    entries: Any, kind: str, where: str, prefix: str, priors: dict, lights: tuple = ()
) -> tuple:
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: expected a list of [[...{kind}]] tables")
    out = []
    for i, entry in enumerate(entries):
        here, path = f"{where}[{i}]", f"{prefix}.{kind}[{i}]"
        params = dict(entry)
        cls = _profile_class(params.pop("type", None), kind, f"{here}.type")
        follows = params.pop("light", None) if cls is mass_module.MGE else None
        if follows is not None:  # an MGE mass following the galaxy's MGE light
            try:
                source = lights[int(follows)]
            except (IndexError, ValueError, TypeError):
                raise ConfigError(f"{here}.light = {follows!r} names no light profile") from None
            if not isinstance(source, light_module.MGELight):
                raise ConfigError(f"{here}.light must name an MGELight, not {type(source)}")
            params.setdefault("sigmas", list(source.sigmas))
            params.setdefault("intensities", list(source.intensities))
            params.setdefault("centre", list(source.centre))
            params.setdefault("ell_comps", list(source.ell_comps))
        values = {
            name: _value(raw, f"{here}.{name}", priors, f"{path}.{name}")
            for name, raw in params.items()
        }
        try:
            out.append(cls(**values))
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{here} ({cls.__name__}): {err}") from None
    return tuple(out)


def _galaxies(entries: Any, role: str, priors: dict) -> tuple:
    if entries is None:
        return ()
    if isinstance(entries, dict):
        entries = [entries]
    galaxies = []
    for g, table in enumerate(entries):
        unknown = set(table) - {"mass", "light"}
        if unknown:
            raise ConfigError(f"{role}[{g}]: unknown entries {sorted(unknown)} (mass, light)")
        prefix = f"{'lenses' if role == 'lens' else 'sources'}[{g}]"
        light = _profiles(table.get("light", []), "light", f"{role}[{g}].light", prefix, priors)
        mass = _profiles(
            table.get("mass", []), "mass", f"{role}[{g}].mass", prefix, priors, lights=light
        )
        galaxies.append(Galaxy(mass=mass, light=light))
    return tuple(galaxies)


def _dataset(table: dict, base: Path) -> Imaging:
    if not isinstance(table, dict):
        raise ConfigError("[dataset] must be a table with data, noise_map and psf")
    missing = {"data", "noise_map", "psf"} - set(table)
    if missing:
        raise ConfigError(f"[dataset] needs {sorted(missing)} (FITS file paths)")
    unknown = set(table) - {"data", "noise_map", "psf", "pixel_scale", "sub_size", "mask_radius"}
    if unknown:
        raise ConfigError(f"[dataset]: unknown entries {sorted(unknown)}")
    paths = {k: str((base / table[k]).expanduser()) for k in ("data", "noise_map", "psf")}
    for key, p in paths.items():
        if not Path(p).is_file():
            raise ConfigError(f"[dataset].{key}: no such file {p}")
    return Imaging.from_fits(
        paths["data"],
        paths["noise_map"],
        paths["psf"],
        table.get("pixel_scale"),
        sub_size=int(table.get("sub_size", 4)),
        mask_radius=table.get("mask_radius"),
    )


def parse_config(data: dict, base: Path | str = ".") -> FitConfig:
    """A :class:`FitConfig` from the parsed TOML ``data``; file paths relative to ``base``."""
    base = Path(base)
    unknown = set(data) - _SECTIONS
    if unknown:
        raise ConfigError(f"unknown sections {sorted(unknown)}; expected {sorted(_SECTIONS)}")
    priors: dict[str, Prior] = {}
    lenses = _galaxies(data.get("lens"), "lens", priors)
    sources = _galaxies(data.get("source"), "source", priors)
    if not lenses or not sources:
        raise ConfigError("the model needs at least one [[lens]] and one [[source]]")
    if not priors:
        raise ConfigError("no free parameter: give at least one parameter a prior table")
    model = Model(Tracer(lenses, sources), tuple(priors.items()))
    search = dict(data.get("search", {}))
    search.setdefault("name", "nautilus")
    try:
        backend = check_backend(data.get("backend", "numba"))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    output = Path(data.get("output", "twinlens_fit"))
    return FitConfig(
        dataset=_dataset(data.get("dataset"), base),
        model=model,
        search=search,
        backend=backend,
        output=output if output.is_absolute() else base / output,
        title=str(data.get("title", "twinlens fit")),
    )


def load_config(path: str | Path) -> FitConfig:
    """Read a TOML configuration file (see the module documentation)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such configuration file: {path}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from None
    return parse_config(data, path.parent)

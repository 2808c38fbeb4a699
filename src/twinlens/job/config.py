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

A pixelised source (:doc:`/pixelised`) is a source light entry of ``type = "Pixelization"``
with ``mesh`` and ``regularization`` tables, and optionally ``positive = true`` (source
pixels, and lens-light intensities solved with them, constrained to be >= 0)::

    [[source.light]]
    type = "Pixelization"
    mesh = {type = "Delaunay", shape = [20, 20]}
    regularization = {type = "Constant", coefficient = {log_uniform = [0.01, 1000.0]}}
    positive = true

A Delaunay mesh may instead cluster its vertices on a brightness image (weighted k-means,
:func:`~twinlens.inversion.kmeans_vertices`): ``mesh = {type = "Delaunay", n_vertices =
300, brightness = "stage1/fit_output/model.fits"}`` (a FITS image on the data's grid, such
as a previous fit's model, or ``"data"``), with optional ``weight_floor`` and
``weight_power``.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from twinlens import light as light_module
from twinlens import mass as mass_module
from twinlens.backend import BACKENDS, check_backend
from twinlens.imaging.dataset import Imaging
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.model import (
    GaussianPrior,
    LogUniformPrior,
    Model,
    Prior,
    TruncatedGaussianPrior,
    UniformPrior,
)
from twinlens.profiles.base import MassProfile
from twinlens.profiles.light import LightProfile
from twinlens.search import SEARCHES, Emcee

__all__ = ["FitConfig", "load_config", "parse_config", "prior_from_table"]

_PRIORS = {
    "uniform": (UniformPrior, 2),
    "log_uniform": (LogUniformPrior, 2),
    "gaussian": (GaussianPrior, 2),
    "truncated_gaussian": (TruncatedGaussianPrior, 4),
}
_SECTIONS = ("title", "backend", "output", "dataset", "search", "lens", "source", "point_source")
_DATASET_KEYS = ("data", "noise_map", "psf", "mask", "pixel_scale", "sub_size", "mask_radius")


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the entry."""


@dataclass
class FitConfig:
    """What a fit needs, read from a configuration file."""

    # None for a point-source fit without imaging, or when the configuration was checked
    # without reading data (``read_data=False``)
    dataset: Imaging | None
    model: Model
    search: dict = field(default_factory=lambda: {"name": "nautilus"})
    backend: str = "numba"
    output: Path = Path("twinlens_fit")
    title: str = "twinlens fit"
    point_source: PointSourceConfig | None = None


@dataclass
class PointSourceConfig:
    """The ``[point_source]`` table: the likelihood of its data, and the redshifts (and
    ``Omega_m`` of a flat LambdaCDM) that turn ``D_dt`` into ``H0``, when given."""

    likelihood: Any  # a twinlens.likelihood.point_source.PointSourceLikelihood
    z_lens: float | None = None
    z_source: float | None = None
    omega_m: float = 0.3

    def h0(self, time_delay_distance: Any) -> Any:
        """``H0`` (km/s/Mpc) of a flat LambdaCDM with ``omega_m`` whose ``D_dt`` is
        ``time_delay_distance`` (Mpc): every distance scales as ``1 / H0``."""
        if self.z_lens is None or self.z_source is None:
            raise ValueError("[point_source] needs z_lens and z_source to give H0")
        from astropy.cosmology import FlatLambdaCDM

        from twinlens.cosmology import time_delay_distance as d_dt

        reference = d_dt(self.z_lens, self.z_source, FlatLambdaCDM(H0=70.0, Om0=self.omega_m))
        return 70.0 * reference / np.asarray(time_delay_distance, dtype=float)


def _show(value: Any) -> str:
    """``value`` as it is written in TOML, for messages (``true``, not ``True``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + "}"
    if value is None:
        return "nothing"
    return repr(value)


def _suggest(name: Any, choices: Any) -> str:
    """`` (did you mean "x"?)`` for the closest of ``choices`` to a mistyped ``name``."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {_show(close[0])}?)" if close else ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def prior_from_table(table: dict, where: str) -> tuple[Prior, float | None]:
    """``(prior, start)`` from a parameter table such as ``{uniform = [0, 1], start = 0.3}``."""
    kinds = [k for k in table if k in _PRIORS]
    unknown = [k for k in table if k not in _PRIORS and k != "start"]
    if len(kinds) != 1 or unknown:
        hint = _suggest(unknown[0], [*_PRIORS, "start"]) if unknown else ""
        raise ConfigError(
            f"{where} = {_show(table)}: a free parameter needs exactly one of "
            f"{', '.join(_PRIORS)} (and optionally start){hint}"
        )
    kind = kinds[0]
    cls, n_args = _PRIORS[kind]
    args = table[kind]
    if not isinstance(args, list) or len(args) != n_args or not all(map(_is_number, args)):
        raise ConfigError(
            f"{where}: {kind} takes a list of {n_args} numbers, got {kind} = {_show(args)}"
        )
    try:
        prior = cls(*(float(a) for a in args))
    except (TypeError, ValueError) as err:
        # the prior's class name is Python's; the TOML key is the prior's kind
        message = str(err).replace(f"{cls.__name__}.", f"{kind} ").replace(cls.__name__, kind)
        raise ConfigError(f"{where}: {kind} = {_show(args)}: {message}") from None
    start = table.get("start")
    if start is not None and not _is_number(start):
        raise ConfigError(f"{where}: start must be a number, got start = {_show(start)}")
    if start is not None and not prior.contains(float(start)):
        raise ConfigError(
            f"{where}: start = {_show(start)} lies outside the prior {kind} = {_show(args)}"
        )
    return prior, None if start is None else float(start)


def _start(prior: Prior, start: float | None) -> float:
    if start is not None:
        return start
    value = prior.median
    return value if math.isfinite(value) else 0.0


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


def _value(raw: Any, where: str, priors: dict, path: str) -> Any:
    """A parameter value: numbers pass, prior tables register a free parameter at ``path``."""
    if isinstance(raw, dict):
        prior, start = prior_from_table(raw, where)
        priors[path] = prior
        return _start(prior, start)
    if isinstance(raw, list):
        if raw and all(_is_number(v) for v in raw) and len(raw) > 2:
            return np.asarray(raw, dtype=float)  # a fixed array (MGE sigmas, intensities)
        return tuple(_value(v, f"{where}[{i}]", priors, f"{path}[{i}]") for i, v in enumerate(raw))
    if not _is_number(raw):
        raise ConfigError(
            f"{where} = {_show(raw)}: expected a number, a list or a prior table such as "
            "{uniform = [0.5, 1.5]}"
        )
    return float(raw)


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


_MESHES = ("Rectangular", "RectangularAdaptDensity", "Delaunay")
_MESH_KEYS = {
    "Rectangular": ("shape",),
    "RectangularAdaptDensity": ("shape", "uniform_fraction"),
    "Delaunay": ("shape", "n_vertices", "brightness", "weight_floor", "weight_power"),
}
_REGULARIZATIONS = ("Constant", "Curvature", "AdaptiveBrightness")
_PIXELIZATION_KEYS = ("type", "mesh", "regularization", "positive")


def _kmeans_settings(mesh: dict, here: str) -> dict:
    """The k-means settings of a Delaunay mesh table (``n_vertices``, ``brightness``,
    ``weight_floor``, ``weight_power``), checked and removed from ``mesh``."""
    if "shape" in mesh:
        raise ConfigError(
            f"{here}: give shape (an overlay grid) or n_vertices (k-means on a brightness "
            "image), not both"
        )
    n = mesh.pop("n_vertices")
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 3):
        raise ConfigError(f"{here}.n_vertices = {_show(n)}: expected a whole number >= 3")
    if "brightness" not in mesh:
        raise ConfigError(
            f'{here}.brightness is missing: n_vertices clusters on a brightness image, "data" '
            "or a FITS file on the data's grid (a previous fit's \"fit_output/model.fits\")"
        )
    brightness = mesh.pop("brightness")
    if not isinstance(brightness, str):
        raise ConfigError(
            f'{here}.brightness = {_show(brightness)}: expected "data" or a FITS file path'
        )
    settings = {"n_vertices": n, "brightness": brightness}
    for key, lo, hi in (("weight_floor", 0.0, 1.0), ("weight_power", 0.0, 10.0)):
        if key in mesh:
            raw = mesh.pop(key)
            if not (_is_number(raw) and lo <= float(raw) <= hi):
                raise ConfigError(f"{here}.{key} = {_show(raw)}: expected a number in [{lo}, {hi}]")
            settings[key] = float(raw)
    return settings


def _kmeans_mesh(settings: dict, here: str, data: Any) -> Any:
    """A Delaunay mesh whose image-plane vertices are the k-means clusters of a brightness
    image (:func:`~twinlens.inversion.kmeans_vertices`); without the data read (a
    configuration only checked) the brightness file is checked and the overlay mesh stands
    in."""
    from twinlens import inversion as pixelised
    from twinlens.imaging import fits_io

    dataset, base = data if data is not None else (None, Path("."))
    name = settings["brightness"]
    path = None if name == "data" else Path(name) if Path(name).is_absolute() else base / name
    if path is not None and not path.is_file():
        raise ConfigError(f"{here}.brightness = {_show(name)}: no such file {path}")
    if dataset is None:
        return pixelised.Delaunay()
    if path is None:
        image = np.asarray(dataset.data, dtype=float)
    else:
        try:
            image, _ = fits_io.read_image(path)
        except (OSError, ValueError) as err:
            raise ConfigError(f"{here}.brightness = {_show(name)}: {err}") from None
    if image.shape != dataset.grid.shape:
        raise ConfigError(
            f"{here}.brightness = {_show(name)}: an image of shape {image.shape}, but the "
            f"data's grid is {dataset.grid.shape}"
        )
    extra = {k: settings[k] for k in ("weight_floor", "weight_power") if k in settings}
    vertices = pixelised.kmeans_vertices(dataset.grid, image, settings["n_vertices"], **extra)
    return pixelised.Delaunay(image_vertices=vertices)


def _typed_table(raw: Any, here: str, choices: tuple, what: str) -> tuple[str, dict]:
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{here} = {_show(raw)}: expected a table such as {{type = {_show(choices[0])}, ...}}"
        )
    params = dict(raw)
    name = params.pop("type", None)
    if name not in choices:
        raise ConfigError(
            f"{here}.type = {_show(name)}: unknown {what}; choose one of {', '.join(choices)}"
            f"{_suggest(name, choices)}"
        )
    return name, params


def _pixelization(params: dict, here: str, path: str, priors: dict, data: Any = None) -> Any:
    """A ``type = "Pixelization"`` source light entry: its mesh and regularisation (``data``:
    the dataset and the configuration's folder, which a k-means mesh needs)."""
    from twinlens import inversion as pixelised

    params.pop("type")
    unknown = [k for k in params if k not in _PIXELIZATION_KEYS]
    if unknown:
        raise ConfigError(
            f"{here}: Pixelization has no entry {unknown[0]!r}; its entries are mesh, "
            f"regularization and positive{_suggest(unknown[0], _PIXELIZATION_KEYS)}"
        )
    missing = [k for k in ("mesh", "regularization") if k not in params]
    if missing:
        raise ConfigError(
            f"{here}: Pixelization needs {' and '.join(missing)}, e.g. mesh = {{type = "
            '"Delaunay", shape = [20, 20]} and regularization = {type = "Constant", '
            "coefficient = {log_uniform = [0.01, 1000.0]}}"
        )
    positive = params.get("positive", False)
    if not isinstance(positive, bool):
        raise ConfigError(f"{here}.positive = {_show(positive)}: expected true or false")
    name, mesh_params = _typed_table(params["mesh"], f"{here}.mesh", _MESHES, "mesh")
    mesh_keys = _MESH_KEYS[name]
    kmeans = None
    if name == "Delaunay" and "n_vertices" in mesh_params:
        kmeans = _kmeans_settings(mesh_params, f"{here}.mesh")
    for key, raw in mesh_params.items():
        if key not in mesh_keys:
            settings = "setting is" if len(mesh_keys) == 1 else "settings are"
            raise ConfigError(
                f"{here}.mesh.{key}: a {name} mesh has no setting {key!r}; its {settings} "
                f"{', '.join(mesh_keys)}{_suggest(key, mesh_keys)}"
            )
        if key in ("brightness", "weight_floor", "weight_power"):
            raise ConfigError(
                f"{here}.mesh.{key}: a k-means setting; give n_vertices too (the number of "
                "vertices to cluster), or leave it out"
            )
        if key == "uniform_fraction":
            if not _is_number(raw):
                raise ConfigError(
                    f"{here}.mesh.uniform_fraction = {_show(raw)}: expected a number in [0, 1]"
                )
            continue
        if not (
            isinstance(raw, list)
            and len(raw) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in raw)
        ):
            raise ConfigError(
                f"{here}.mesh.shape = {_show(raw)}: expected [ny, nx], two whole numbers"
            )
    try:
        if kmeans is not None:
            mesh = _kmeans_mesh(kmeans, f"{here}.mesh", data)
        else:
            mesh = getattr(pixelised, name)(
                **{k: tuple(v) if k == "shape" else float(v) for k, v in mesh_params.items()}
            )
    except ConfigError:  # already names its key
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{here}.mesh ({name}): {err}") from None
    where = f"{here}.regularization"
    reg_name, reg_params = _typed_table(
        params["regularization"], where, _REGULARIZATIONS, "regularization"
    )
    allowed: tuple[str, ...] = ("coefficient",)
    if reg_name == "AdaptiveBrightness":
        allowed = ("coefficient", "pixel_weights")
    values: dict[str, Any] = {}
    for key, raw in reg_params.items():
        if key not in allowed:
            raise ConfigError(
                f"{where}.{key}: {reg_name} regularization has no setting {key!r}; its settings "
                f"are {', '.join(allowed)}{_suggest(key, allowed)}"
            )
        if key == "pixel_weights":
            if not (isinstance(raw, list) and raw and all(map(_is_number, raw))):
                raise ConfigError(f"{where}.pixel_weights: expected a list of numbers >= 0")
            values[key] = np.asarray(raw, dtype=float)
        else:
            values[key] = _value(raw, f"{where}.{key}", priors, f"{path}.regularization.{key}")
    try:
        regularization = getattr(pixelised, reg_name)(**values)
    except (TypeError, ValueError) as err:
        key = "coefficient" if "coefficient" in str(err) else "type"
        raise ConfigError(
            f"{where}.{key} = {_show(reg_params.get(key, reg_name))}: {err}"
        ) from None
    try:
        return pixelised.Pixelization(mesh, regularization, positive=positive)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}.type = {_show(reg_name)}: {err}") from None


_PS_DATA = ("positions", "position_sigma", "delays", "delay_sigma", "fluxes", "flux_sigma")
_PS_PARAMS = ("centre", "flux", "time_delay_distance", "h0")
_PS_KEYS: tuple[str, ...] = (*_PS_DATA, *_PS_PARAMS, "position_likelihood", "solver")
_PS_KEYS = (
    *_PS_KEYS,
    "z_lens",
    "z_source",
    "omega_m",
    "magnification_limit",
    "in_imaging",
    "imaging_positions",
)
_SOLVER_KEYS = ("window", "centre", "cells", "max_images", "newton_iterations", "tolerance")


def _numbers(raw: Any, where: str, what: str) -> Any:
    """A number or a (nested) list of numbers, as floats; a ConfigError naming ``where``."""

    def ok(v: Any) -> bool:
        return _is_number(v) or (isinstance(v, list) and len(v) > 0 and all(map(ok, v)))

    if not ok(raw):
        raise ConfigError(f"{where} = {_show(raw)}: expected {what}")
    return np.asarray(raw, dtype=float)


def _point_source(
    table: Any, priors: dict, multi_plane: bool = False, imaging: bool = True
) -> tuple[Any, PointSourceConfig]:
    """The ``[point_source]`` table: ``(PointSource, PointSourceConfig)``; ``multi_plane``
    when the lens is a multi-plane one (its delays then scale with ``h0``, not ``D_dt``);
    ``imaging`` when there is a [dataset] (where ``in_imaging`` shows the images)."""
    from twinlens.lensing.lens_equation import ImageSolver
    from twinlens.likelihood.point_source import (
        IMAGING_POSITIONS,
        POSITION_LIKELIHOODS,
        PointSource,
        PointSourceData,
        PointSourceLikelihood,
    )

    if not isinstance(table, dict):
        raise ConfigError(
            f"point_source = {_show(table)}: expected a [point_source] table with positions, "
            "position_sigma and the source's parameters"
        )
    unknown = [k for k in table if k not in _PS_KEYS]
    if unknown:
        raise ConfigError(
            f"[point_source].{unknown[0]}: unknown entry; the entries are "
            f"{', '.join(_PS_KEYS)}{_suggest(unknown[0], _PS_KEYS)}"
        )
    for key in ("positions", "position_sigma"):
        if key not in table:
            raise ConfigError(
                f"[point_source].{key} is missing: give the observed image positions "
                "[[x, y], ...] (arcsec) and their uncertainty position_sigma (arcsec)"
            )
    where = "[point_source]"
    data: dict[str, Any] = {}
    positions = _numbers(table["positions"], f"{where}.positions", "[[x, y], ...] in arcsec")
    if positions.ndim != 2 or positions.shape[1] != 2:
        raise ConfigError(
            f"{where}.positions = {_show(table['positions'])}: expected a list of [x, y] "
            "pairs, arcsec"
        )
    data["positions"] = positions
    n = len(positions)
    for key in _PS_DATA[1:]:
        if key in table:
            data[key] = _numbers(table[key], f"{where}.{key}", "a number or a list of numbers")
    for value, sigma, size in (
        ("position_sigma", "position_sigma", n),
        ("delays", "delay_sigma", n - 1),
        ("fluxes", "flux_sigma", n),
    ):
        for key in (value, sigma):
            if key not in data:
                continue
            arr = data[key]
            if key == value and value != "position_sigma" and sigma not in data:
                raise ConfigError(f"{where}.{sigma} is missing: {value} need uncertainties")
            if key == sigma and value not in data:
                raise ConfigError(f"{where}.{sigma} is given without {value}")
            if arr.ndim > 1 or (arr.ndim == 1 and len(arr) != size):
                kind = "one per image" if size == n else "one per image after the first"
                raise ConfigError(
                    f"{where}.{key} = {_show(table[key])}: expected {size} numbers ({kind}; "
                    f"{n} positions are given)" + ("" if key == value else " or one number")
                )
            if key == sigma and not np.all(arr > 0):
                raise ConfigError(f"{where}.{key} = {_show(table[key])}: must be > 0")
    kind = table.get("position_likelihood", "image")
    if kind not in POSITION_LIKELIHOODS:
        raise ConfigError(
            f"{where}.position_likelihood = {_show(kind)}: choose one of "
            f"{', '.join(map(_show, POSITION_LIKELIHOODS))}{_suggest(kind, POSITION_LIKELIHOODS)}"
        )
    solver_table = table.get("solver", {})
    if not isinstance(solver_table, dict):
        raise ConfigError(
            f"{where}.solver = {_show(solver_table)}: expected a table such as "
            "{window = 3.0, cells = 151}"
        )
    bad = [k for k in solver_table if k not in _SOLVER_KEYS]
    if bad:
        raise ConfigError(
            f"{where}.solver.{bad[0]}: unknown setting; the settings are "
            f"{', '.join(_SOLVER_KEYS)}{_suggest(bad[0], _SOLVER_KEYS)}"
        )
    settings: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in solver_table.items()
    }
    try:
        solver = ImageSolver(**settings) if kind == "image" else None
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}.solver: {str(err).replace('ImageSolver.', '')}") from None
    if "centre" not in table:
        raise ConfigError(
            f"{where}.centre is missing: the source position [x, y], arcsec (free: prior "
            "tables, e.g. [{uniform = [-0.5, 0.5]}, {uniform = [-0.5, 0.5]}])"
        )
    if not (isinstance(table["centre"], list) and len(table["centre"]) == 2):
        raise ConfigError(
            f"{where}.centre = {_show(table['centre'])}: expected a pair [x, y] of numbers or "
            "prior tables"
        )
    if multi_plane:
        for key, why in (
            ("time_delay_distance", "give h0 (its delays come from the cosmology's distances)"),
            ("z_lens", "the lens planes are the [[lens]] redshifts"),
        ):
            if key in table:
                raise ConfigError(f"{where}.{key}: not used with a multi-plane lens; {why}")
    elif "h0" in table:
        raise ConfigError(
            f"{where}.h0: for a multi-plane lens ([[lens]] redshifts on several planes); a "
            "single-plane lens's delays take time_delay_distance, and H0 follows from it with "
            "z_lens and z_source"
        )
    if "delays" in data and multi_plane and "h0" not in table:
        raise ConfigError(
            f"{where}.h0 is missing: a multi-plane lens's delays scale as 1 / H0, e.g. "
            "h0 = {uniform = [40.0, 100.0]} (km/s/Mpc), or h0 = 70.0 to fix it"
        )
    if "delays" in data and "time_delay_distance" not in table and not multi_plane:
        raise ConfigError(
            f"{where}.time_delay_distance is missing: delays need D_dt (Mpc), e.g. "
            "time_delay_distance = {uniform = [1000.0, 10000.0]}"
        )
    if "fluxes" in data and "flux" not in table:
        raise ConfigError(
            f"{where}.flux is missing: fluxes need the source's intrinsic flux, e.g. "
            "flux = {log_uniform = [0.01, 100.0]}"
        )
    values = {
        key: _value(table[key], f"{where}.{key}", priors, f"point_source.{key}")
        for key in _PS_PARAMS
        if key in table
    }
    try:
        point_source = PointSource(**values)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {str(err).replace('PointSource.', '')}") from None
    limit = table.get("magnification_limit", 0.0)
    if not (_is_number(limit) and float(limit) >= 0):
        raise ConfigError(f"{where}.magnification_limit = {_show(limit)}: expected a number >= 0")
    if "magnification_limit" in table and kind != "image":
        raise ConfigError(
            f'{where}.magnification_limit: counts model images, for position_likelihood = "image" '
            f"only (this one is {_show(kind)})"
        )
    in_imaging = table.get("in_imaging", False)
    if not isinstance(in_imaging, bool):
        raise ConfigError(f"{where}.in_imaging = {_show(in_imaging)}: expected true or false")
    if in_imaging and not imaging:
        raise ConfigError(
            f"{where}.in_imaging = true, but there is no [dataset]: the images are modelled "
            "in the imaging data; give a [dataset] or drop in_imaging"
        )
    placed = table.get("imaging_positions", IMAGING_POSITIONS[0])
    if placed not in IMAGING_POSITIONS:
        raise ConfigError(
            f"{where}.imaging_positions = {_show(placed)}: choose one of "
            f"{', '.join(map(_show, IMAGING_POSITIONS))}{_suggest(placed, IMAGING_POSITIONS)}"
        )
    if "imaging_positions" in table and not in_imaging:
        raise ConfigError(
            f"{where}.imaging_positions places the images in the imaging data: it needs "
            "in_imaging = true"
        )
    try:
        likelihood = PointSourceLikelihood(
            PointSourceData(**data),
            kind,
            solver,  # type: ignore[arg-type]
            float(limit),
            in_imaging,
            placed,
        )
    except (TypeError, ValueError) as err:
        message = str(err).replace("PointSourceData.", "").replace("PointSourceLikelihood", "")
        raise ConfigError(f"{where}: {message.lstrip(': ')}") from None
    cosmo: dict[str, Any] = {}
    for key in ("z_lens", "z_source", "omega_m"):
        if key in table:
            if not _is_number(table[key]):
                raise ConfigError(f"{where}.{key} = {_show(table[key])}: expected a number")
            cosmo[key] = float(table[key])
    # one of z_lens and z_source may come from a [[lens]] or [[source]] redshift instead
    # (_redshifts_for_h0 checks that both are known)
    if "z_lens" in cosmo and "z_source" in cosmo:
        from twinlens.cosmology import time_delay_distance

        try:  # D_dt, which H0 is read from, needs 0 < z_lens < z_source
            time_delay_distance(cosmo["z_lens"], cosmo["z_source"])
        except ValueError as err:
            raise ConfigError(f"{where}: {err}") from None
    if not 0.0 < cosmo.get("omega_m", 0.3) <= 1.0:
        raise ConfigError(f"{where}.omega_m = {_show(table['omega_m'])}: must be in (0, 1]")
    return point_source, PointSourceConfig(likelihood, **cosmo)


def _redshifts_for_h0(
    ps_config: PointSourceConfig, lenses: tuple, sources: tuple
) -> PointSourceConfig:
    """A single-plane lens's ``[[lens]]`` and ``[[source]]`` redshifts, when given, are the
    ``z_lens`` and ``z_source`` that turn ``D_dt`` into ``H0``; the ``[point_source]`` ones
    must not disagree with them."""
    filled = {}
    for key, galaxies, role in (("z_lens", lenses, "lens"), ("z_source", sources, "source")):
        zs = sorted({g.redshift for g in galaxies if g.redshift is not None})
        if not zs:
            continue
        if len(zs) > 1:  # sources at several redshifts (lenses on several planes are
            raise ConfigError(  # a multi-plane lens, built before this)
                f"the [[{role}]] redshifts differ ({zs}): a single-plane fit has one {role} "
                "redshift"
            )
        given = getattr(ps_config, key)
        if given is not None and given != zs[0]:
            raise ConfigError(
                f"[point_source].{key} = {given:g} but the [[{role}]] redshift is {zs[0]:g}: "
                "give it once"
            )
        filled[key] = zs[0]
    out = dataclasses.replace(ps_config, **filled) if filled else ps_config
    z_lens, z_source = out.z_lens, out.z_source
    if (z_lens is None) != (z_source is None):
        missing = "z_source" if z_source is None else "z_lens"
        raise ConfigError(
            f"[point_source].{missing} is missing: give both z_lens and z_source (to report "
            "H0; a [[lens]] or [[source]] redshift serves as well), or neither"
        )
    if z_lens is not None and z_source is not None and not z_lens < z_source:
        raise ConfigError(f"the lens redshift {z_lens:g} must be below the source's {z_source:g}")
    return out


def _check_without_imaging(tracer: Tracer, priors: dict) -> None:
    """Without a [dataset] only mass and the point source meet data: a free light parameter
    would be sampled from its prior alone, so it is refused, as is a pixelised source."""
    if tracer.pixelizations:
        raise ConfigError("a Pixelization source needs the imaging [dataset] to reconstruct")
    light = [p for p in priors if ".light[" in p]
    if light:
        raise ConfigError(
            f"{_toml_path(light[0])} is free, but without a [dataset] no light is fitted: fix "
            "it (a number), remove the light, or add the imaging [dataset]"
        )


def _toml_path(message: str) -> str:
    """A message naming tracer paths (``sources[0].light``) in TOML terms (``source[0]``)."""
    return message.replace("lenses[", "lens[").replace("sources[", "source[")


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


def _tracer(lenses: tuple, sources: tuple, point_table: Any) -> Tracer:
    """A :class:`Tracer`, or a :class:`~twinlens.lensing.multiplane.MultiPlaneTracer` when the
    lens galaxies' redshifts name more than one plane (its source redshift from the sources'
    ``redshift`` or ``[point_source].z_source``; flat LambdaCDM with H0 = 70 and the
    point source's ``omega_m``)."""
    planes = sorted({g.redshift for g in lenses if g.redshift is not None})
    missing = [f"lens[{i}]" for i, g in enumerate(lenses) if g.redshift is None]
    if planes and missing:
        raise ConfigError(
            f"{missing[0]}.redshift is missing: give every [[lens]] a redshift (on several "
            f"planes they make a multi-plane lens), or none; given: {planes}"
        )
    if len(planes) < 2:
        return Tracer(lenses, sources)
    table = point_table if isinstance(point_table, dict) else {}
    z_sources = {g.redshift for g in sources if g.redshift is not None}
    if "z_source" in table and _is_number(table["z_source"]):
        z_sources.add(float(table["z_source"]))
    if len(z_sources) != 1:
        differ = f"; they differ: {sorted(z_sources)}" if z_sources else ""
        raise ConfigError(
            "a multi-plane lens needs one source redshift: give [[source]] redshift (or "
            f"[point_source].z_source){differ}"
        )
    from astropy.cosmology import FlatLambdaCDM

    from twinlens.lensing.multiplane import MultiPlaneTracer

    omega_m = float(table.get("omega_m", 0.3)) if _is_number(table.get("omega_m", 0.3)) else 0.3
    try:
        return MultiPlaneTracer(
            lenses,
            sources,
            z_source=z_sources.pop(),
            cosmology=FlatLambdaCDM(H0=70.0, Om0=omega_m),
        )
    except (TypeError, ValueError) as err:
        raise ConfigError(_toml_path(str(err).replace("MultiPlaneTracer.", ""))) from None


def _dataset(table: Any, base: Path, read: bool = True) -> Imaging | None:
    """The ``[dataset]`` table, checked; the data read from its files when ``read``."""
    if not isinstance(table, dict):
        raise ConfigError(
            "[dataset] must be a table with data, noise_map and psf (FITS file paths), got "
            f"{'nothing' if table is None else 'dataset = ' + _show(table)}"
        )
    missing = [k for k in ("data", "noise_map", "psf") if k not in table]
    if missing:
        raise ConfigError(f"[dataset] needs {', '.join(missing)} (FITS file paths)")
    unknown = sorted(set(table) - set(_DATASET_KEYS))
    if unknown:
        raise ConfigError(
            f"[dataset]: unknown entries {', '.join(unknown)}; allowed: "
            f"{', '.join(_DATASET_KEYS)}{_suggest(unknown[0], _DATASET_KEYS)}"
        )
    for key in ("data", "noise_map", "psf", "mask"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(
                f"[dataset].{key} = {_show(table[key])}: expected a FITS file path in quotes"
            )
    for key in ("pixel_scale", "mask_radius"):
        value = table.get(key)
        if value is not None and not (_is_number(value) and 0 < value < math.inf):
            raise ConfigError(f"[dataset].{key} = {_show(value)}: expected a number > 0 (arcsec)")
    sub_size = table.get("sub_size", 4)
    if not (isinstance(sub_size, int) and not isinstance(sub_size, bool)):
        raise ConfigError(
            f"[dataset].sub_size = {_show(sub_size)}: expected a whole number of sub-pixels "
            "per pixel side, 1 to 64 (-1 to -64: Gauss-Legendre nodes)"
        )
    if not read:
        return None
    files = [k for k in ("data", "noise_map", "psf", "mask") if k in table]
    paths = {k: str((base / table[k]).expanduser()) for k in files}
    for key, p in paths.items():
        if not Path(p).is_file():
            raise ConfigError(f"[dataset].{key}: no such file {p}")
    try:
        imaging = Imaging.from_fits(
            paths["data"],
            paths["noise_map"],
            paths["psf"],
            None if table.get("pixel_scale") is None else float(table["pixel_scale"]),
            sub_size=sub_size,
            mask_radius=table.get("mask_radius"),
        )
        if "mask" in paths:
            imaging = _with_mask_file(imaging, paths["mask"])
        return imaging
    except (OSError, TypeError, ValueError) as err:  # unreadable files, shapes, grid checks
        message = (
            str(err)
            .replace("Grid2D.sub_size", "sub_size")
            .replace("pixel_scale=", "pixel_scale = ")
            .replace("PSF.kernel", "the psf image")
        )
        raise ConfigError(f"[dataset]: {message}") from None


def _with_mask_file(imaging: Imaging, path: str) -> Imaging:
    """``imaging`` fitting only the pixels where the FITS image at ``path`` is nonzero (and
    inside ``mask_radius``, when both are given)."""
    from twinlens.imaging import fits_io

    mask, _ = fits_io.read_image(path)
    if mask.shape != imaging.grid.shape:
        raise ValueError(f"the mask {path} has shape {mask.shape}, the data {imaging.grid.shape}")
    used = np.asarray(mask) != 0
    if imaging.grid.mask is not None:
        used &= imaging.grid.used
    if not used.any():
        raise ValueError(f"the mask {path} leaves no pixel to fit")
    return imaging.with_grid(dataclasses.replace(imaging.grid, mask=used))


def _search(table: Any, backend: str, n_params: int) -> dict:
    """The ``[search]`` table, checked by building the search it names: a wrong name, an
    unknown or out-of-range setting, or a backend the search does not run on stops here,
    before anything is written or sampled."""
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f'search = {_show(table)}: expected a [search] table with name = "..."')
    search = dict(table)
    name = search.setdefault("name", "nautilus")
    choices = list(SEARCHES)
    if not isinstance(name, str) or name not in SEARCHES:
        raise ConfigError(
            f"[search].name = {_show(name)}: unknown search; choose one of "
            f"{', '.join(choices)}{_suggest(name, choices)}"
        )
    cls = SEARCHES[name]
    # map and nuts need JAX's gradients; their run() would refuse numba only after the output
    # folder was made, so the class's backends are checked here
    runs_on = cls.backends
    if backend not in runs_on:
        others = [n for n, c in SEARCHES.items() if backend in c.backends]
        raise ConfigError(
            f"[search].name = {_show(name)} runs on the {' or '.join(runs_on)} backend only, "
            f"but backend = {_show(backend)}: set backend = {_show(runs_on[0])} at the top of "
            f"the file, or choose a search that runs on {backend}: {', '.join(others)}"
        )
    allowed = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = [k for k in search if k != "name" and k not in allowed]
    if unknown:
        raise ConfigError(
            f"[search].{unknown[0]} = {_show(search[unknown[0]])}: the {name} search has no "
            f"setting {unknown[0]!r}; its settings are {', '.join(allowed)}"
            f"{_suggest(unknown[0], allowed)}"
        )
    settings = {k: v for k, v in search.items() if k != "name"}
    try:
        built = cls(**settings)
    except (TypeError, ValueError) as err:
        raise ConfigError(_search_error(cls, settings, err)) from None
    if isinstance(built, Emcee) and built.n_walkers < 2 * n_params:
        # emcee itself refuses this only once the run starts
        raise ConfigError(
            f"[search].n_walkers = {built.n_walkers}: emcee needs at least two walkers per free "
            f"parameter, n_walkers >= {2 * n_params} for this model's {n_params}"
        )
    return search


def _search_error(cls: type, settings: dict, err: Exception) -> str:
    """A search's range error (``"Nautilus.n_live must be an integer >= 1, got 0"``) in TOML
    terms: ``[search].n_live = 0: must be an integer >= 1``."""
    message = str(err).replace("True or False", "true or false")
    owner, _, rest = message.partition(" ")
    key = owner.rpartition(".")[2]
    if owner.startswith(f"{cls.__name__}.") and key in settings:
        rest = rest.rpartition(", got ")[0] or rest
        return f"[search].{key} = {_show(settings[key])}: {rest}"
    return f"[search] ({cls.name}): {message}"  # type: ignore[attr-defined]


def _check_pixelised(tracer: Tracer, priors: dict) -> None:
    """What cannot go with a pixelised source, named in TOML terms."""
    from twinlens.inversion.source import free_lens_light, pixelised_parts

    try:
        parts = pixelised_parts(tracer)
    except ValueError as err:
        raise ConfigError(_toml_path(str(err))) from None
    if parts is None:
        return
    free = free_lens_light(priors, parts)
    if free:
        raise ConfigError(
            f"{_toml_path(free[0])}: lens light beside a pixelised source must have fixed "
            "parameters unless it has a linear profile (without one it is subtracted from the "
            "data before the inversion); give it a number, or make a profile linear"
        )


def parse_config(
    data: dict, base: Path | str = ".", backend: str | None = None, read_data: bool = True
) -> FitConfig:
    """A :class:`FitConfig` from the parsed TOML ``data``; file paths relative to ``base``.

    ``backend`` (the command line's ``--backend``) replaces the file's, before the search is
    checked against it. Every mistake raises :class:`ConfigError` naming the TOML entry.
    ``read_data=False`` checks everything but reads no data file (``dataset`` is then None):
    a catalogue checks every lens's configuration so before any fit starts."""
    base = Path(base)
    unknown = sorted(set(data) - set(_SECTIONS))
    if unknown:
        raise ConfigError(
            f"unknown sections {', '.join(unknown)}; expected {', '.join(_SECTIONS)}"
            f"{_suggest(unknown[0], _SECTIONS)}"
        )
    for key in ("title", "output"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{key} = {_show(data[key])}: expected text in quotes")
    raw_backend = data.get("backend", "numba") if backend is None else backend
    try:
        backend = check_backend(raw_backend)
    except ValueError:
        raise ConfigError(
            f"backend = {_show(raw_backend)}: unknown backend; choose one of "
            f"{', '.join(BACKENDS)}{_suggest(raw_backend, BACKENDS)}"
        ) from None
    priors: dict[str, Prior] = {}
    imaging = "dataset" in data
    # read first: a k-means source mesh clusters on the data's grid
    dataset = _dataset(data["dataset"], base, read_data) if imaging else None
    lenses = _galaxies(data.get("lens"), "lens", priors)
    sources = _galaxies(data.get("source"), "source", priors, (dataset, base))
    if not imaging and "point_source" not in data:
        raise ConfigError(
            "nothing to fit: give a [dataset] (imaging), a [point_source] (image positions, "
            "delays, fluxes), or both"
        )
    if not lenses or (imaging and not sources):
        raise ConfigError(
            "the model needs at least one [[lens]] and one [[source]]"
            if imaging
            else "the model needs at least one [[lens]]"
        )
    tracer = _tracer(lenses, sources, data.get("point_source"))
    point_source, ps_config = None, None
    if "point_source" in data:
        multi_plane = type(tracer) is not Tracer
        point_source, ps_config = _point_source(data["point_source"], priors, multi_plane, imaging)
    if ps_config is not None and ps_config.likelihood.in_imaging and tracer.pixelizations:
        raise ConfigError(
            "[point_source].in_imaging = true with a pixelised source: its inversion does not "
            "solve for point-image fluxes; use parametric source light, or drop in_imaging"
        )
    if ps_config is not None and type(tracer) is Tracer:
        ps_config = _redshifts_for_h0(ps_config, lenses, sources)
    if not priors:  # the point source's free parameters count too
        raise ConfigError("no free parameter: give at least one parameter a prior table")
    if not imaging:
        _check_without_imaging(tracer, priors)
    _check_pixelised(tracer, priors)
    model = Model(tracer, tuple(priors.items()), point_source)
    search = _search(data.get("search"), backend, model.n_params)
    output = Path(data.get("output", "twinlens_fit"))
    return FitConfig(
        dataset=dataset,
        model=model,
        search=search,
        backend=backend,
        output=output if output.is_absolute() else base / output,
        title=data.get("title", "twinlens fit"),
        point_source=ps_config,
    )


def load_config(path: str | Path, backend: str | None = None) -> FitConfig:
    """Read a TOML configuration file (see the module documentation); ``backend`` replaces
    the file's (see :func:`parse_config`)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such configuration file: {path}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from None
    return parse_config(data, path.parent, backend)

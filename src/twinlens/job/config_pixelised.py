"""A pixelised source in a fit configuration: the ``type = "Pixelization"`` source light entry
with its ``mesh`` and ``regularization`` tables (see :mod:`twinlens.job.config`), and what
cannot go with one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.job.config_errors import ConfigError, _is_number, _show, _suggest, _toml_path
from twinlens.job.config_priors import _value
from twinlens.lensing.tracer import Tracer

_MESHES = ("Rectangular", "RectangularAdaptDensity", "Delaunay")
_MESH_KEYS = {
    "Rectangular": ("shape",),
    "RectangularAdaptDensity": ("shape", "uniform_fraction"),
    "Delaunay": (
        "shape",
        "n_vertices",
        "brightness",
        "weight_floor",
        "weight_power",
        "placement",
        "outside_hull",
    ),
}
_REGULARIZATIONS = ("Constant", "Curvature", "AdaptiveBrightness")
_PIXELIZATION_KEYS = ("type", "mesh", "regularization", "positive", "relocation")


@dataclass(frozen=True)
class AdaptFrom:
    """A pixelization whose regularisation weights come from an earlier fit (a staged fit,
    :mod:`twinlens.job.stages`): ``regularization = {type = "AdaptiveBrightness", adapt =
    "stage1.toml", ...}``.

    Attributes
    ----------
    pixelization : str
        Its path in the tracer (``sources[0].pixelization``).
    config : Path
        The earlier stage's configuration file.
    where : str
        The TOML entry that names it, for messages.
    """

    pixelization: str
    config: Path
    where: str


@dataclass
class ReadContext:
    """What building a source entry may need beyond its own table: the dataset (None when a
    configuration is only checked) and the configuration's folder, which a k-means mesh
    needs; ``stages`` collects the pixelizations that adapt to an earlier fit."""

    dataset: Any = None
    base: Path = Path(".")
    stages: list[AdaptFrom] = field(default_factory=list)


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


def _kmeans_mesh(settings: dict, here: str, data: ReadContext, outside_hull: str) -> Any:
    """A Delaunay mesh whose image-plane vertices are the k-means clusters of a brightness
    image (:func:`~twinlens.inversion.kmeans_vertices`); without the data read (a
    configuration only checked) the brightness file is checked and the overlay mesh stands
    in."""
    from twinlens import inversion as pixelised
    from twinlens.imaging import fits_io

    dataset, base = data.dataset, data.base
    name = settings["brightness"]
    path = None if name == "data" else Path(name) if Path(name).is_absolute() else base / name
    if path is not None and not path.is_file():
        raise ConfigError(f"{here}.brightness = {_show(name)}: no such file {path}")
    if dataset is None:
        return pixelised.Delaunay(outside_hull=outside_hull)
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
    return pixelised.Delaunay(image_vertices=vertices, outside_hull=outside_hull)


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


def _pixelization(
    params: dict, here: str, path: str, priors: dict, data: ReadContext | None = None
) -> Any:
    """A ``type = "Pixelization"`` source light entry: its mesh and regularisation (``data``:
    see :class:`ReadContext`)."""
    from twinlens import inversion as pixelised
    from twinlens.inversion.conventions import RELOCATIONS

    params.pop("type")
    unknown = [k for k in params if k not in _PIXELIZATION_KEYS]
    if unknown:
        raise ConfigError(
            f"{here}: Pixelization has no entry {unknown[0]!r}; its entries are mesh, "
            f"regularization, positive and relocation{_suggest(unknown[0], _PIXELIZATION_KEYS)}"
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
    relocation = params.get("relocation", "smooth")
    if relocation not in RELOCATIONS:
        raise ConfigError(
            f"{here}.relocation = {_show(relocation)}: expected one of "
            f"{', '.join(map(repr, RELOCATIONS))}{_suggest(str(relocation), RELOCATIONS)}"
        )
    data = data if data is not None else ReadContext()
    mesh = _mesh(params["mesh"], here, data)
    where = f"{here}.regularization"
    regularization, reg_name = _regularization(params["regularization"], where, priors, path, data)
    try:
        return pixelised.Pixelization(
            mesh, regularization, positive=positive, relocation=relocation
        )
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}.type = {_show(reg_name)}: {err}") from None


def _mesh(table: Any, here: str, data: ReadContext) -> Any:
    """The pixelization ``here``'s ``mesh`` table, checked and built (``data`` as
    :func:`_pixelization` takes it)."""
    from twinlens import inversion as pixelised

    name, mesh_params = _typed_table(table, f"{here}.mesh", _MESHES, "mesh")
    mesh_keys = _MESH_KEYS[name]
    kmeans = None
    options = _mesh_options(mesh_params, f"{here}.mesh") if name == "Delaunay" else {}
    if name == "Delaunay" and "n_vertices" in mesh_params:
        if "placement" in options:
            raise ConfigError(
                f"{here}.mesh.placement: places an overlay grid's points (shape); k-means "
                "vertices (n_vertices) have their own places, so leave it out"
            )
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
            hull = options.get("outside_hull", "hull_edge")
            return _kmeans_mesh(kmeans, f"{here}.mesh", data, hull)
        return getattr(pixelised, name)(
            **{k: tuple(v) if k == "shape" else float(v) for k, v in mesh_params.items()},
            **options,
        )
    except ConfigError:  # already names its key
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{here}.mesh ({name}): {err}") from None


def _mesh_options(mesh_params: dict, here: str) -> dict:
    """A Delaunay mesh table's ``placement`` and ``outside_hull`` (autoarray's conventions,
    :mod:`twinlens.inversion.conventions`), checked and removed from ``mesh_params``."""
    from twinlens.inversion.conventions import OUTSIDE_HULL, PLACEMENTS

    out = {}
    for key, choices in (("placement", PLACEMENTS), ("outside_hull", OUTSIDE_HULL)):
        if key in mesh_params:
            raw = mesh_params.pop(key)
            if raw not in choices:
                raise ConfigError(
                    f"{here}.{key} = {_show(raw)}: expected one of "
                    f"{', '.join(map(repr, choices))}{_suggest(str(raw), choices)}"
                )
            out[key] = raw
    return out


def _regularization(
    table: Any, where: str, priors: dict, path: str, data: ReadContext
) -> tuple[Any, str]:
    """The ``regularization`` table at ``where``, checked and built, and its type's name; a
    free coefficient registers its prior under the pixelization's ``path``. An
    ``AdaptiveBrightness`` that adapts to an earlier fit (``adapt``) stands as ``Constant``
    until :mod:`twinlens.job.stages` has that fit's weights, and is noted in ``data``."""
    from twinlens import inversion as pixelised

    reg_name, reg_params = _typed_table(table, where, _REGULARIZATIONS, "regularization")
    allowed: tuple[str, ...] = ("coefficient",)
    if reg_name == "AdaptiveBrightness":
        allowed = ("coefficient", "pixel_weights", "adapt")
    values: dict[str, Any] = {}
    for key, raw in reg_params.items():
        if key not in allowed:
            hint = ""
            if key == "adapt":
                hint = '; adapt sets AdaptiveBrightness weights: use type = "AdaptiveBrightness"'
            raise ConfigError(
                f"{where}.{key}: {reg_name} regularization has no setting {key!r}; its settings "
                f"are {', '.join(allowed)}{hint or _suggest(key, allowed)}"
            )
        if key == "pixel_weights":
            if not (isinstance(raw, list) and raw and all(map(_is_number, raw))):
                raise ConfigError(f"{where}.pixel_weights: expected a list of numbers >= 0")
            values[key] = np.asarray(raw, dtype=float)
        elif key == "adapt":
            data.stages.append(AdaptFrom(path, _stage_file(raw, where, data.base), where))
        else:
            values[key] = _value(raw, f"{where}.{key}", priors, f"{path}.regularization.{key}")
    if reg_name == "AdaptiveBrightness":
        if ("adapt" in reg_params) == ("pixel_weights" in reg_params):
            raise ConfigError(
                f"{where}: AdaptiveBrightness needs its weights from one place: adapt = "
                '"stage1.toml" (an earlier fit of the same data, run first when it has not '
                "been) or pixel_weights = [...] (one per source pixel), not "
                f"{'both' if 'adapt' in reg_params else 'neither'}"
            )
        if "adapt" in reg_params:
            reg_name = "Constant"  # until the earlier fit gives the weights
    try:
        regularization = getattr(pixelised, reg_name)(**values)
    except (TypeError, ValueError) as err:
        key = "coefficient" if "coefficient" in str(err) else "type"
        raise ConfigError(
            f"{where}.{key} = {_show(reg_params.get(key, reg_name))}: {err}"
        ) from None
    return regularization, reg_name


def _stage_file(raw: Any, where: str, base: Path) -> Path:
    """``adapt``'s configuration file, checked to exist (relative to ``base``)."""
    if not isinstance(raw, str) or not raw.endswith(".toml"):
        raise ConfigError(
            f"{where}.adapt = {_show(raw)}: expected the path of an earlier fit's configuration "
            'file in quotes, such as "stage1.toml"'
        )
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise ConfigError(f"{where}.adapt = {_show(raw)}: no such file {path}")
    return path.resolve()


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

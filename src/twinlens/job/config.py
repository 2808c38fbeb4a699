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
``weight_power``. An ``AdaptiveBrightness`` regularisation takes its weights from an earlier
fit with ``adapt = "stage1.toml"`` (that configuration is fitted first unless its finished fit
is up to date; :mod:`twinlens.job.stages`) or as ``pixel_weights = [...]``.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.backend import BACKENDS, check_backend
from twinlens.imaging.dataset import Imaging
from twinlens.job.config_bands import BAND_KEYS, Bands, check_band_paths, read_bands
from twinlens.job.config_cosmography import CosmographyConfig, check_sections, read_cosmography
from twinlens.job.config_errors import ConfigError, _is_number, _show, _suggest, _toml_path
from twinlens.job.config_pixelised import AdaptFrom, ReadContext, _check_pixelised
from twinlens.job.config_point_source import (
    PointSourceConfig,
    _point_source,
    _redshifts_for_h0,
)
from twinlens.job.config_profiles import _galaxies
from twinlens.lensing.tracer import Tracer
from twinlens.model import Model, Prior
from twinlens.search import SEARCHES, Emcee

# ConfigError and PointSourceConfig live below this module; the code that reads a
# configuration names them from here
__all__ = ["ConfigError", "FitConfig", "PointSourceConfig", "load_config", "parse_config"]

_SECTIONS = (
    "title",
    "backend",
    "output",
    "dataset",
    "search",
    "lens",
    "source",
    "point_source",
    "cosmography",
    "kinematics",
)
_DATASET_KEYS = ("data", "noise_map", "psf", "mask", "pixel_scale", "sub_size", "mask_radius")


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
    # ``[cosmography]`` and ``[kinematics]``: H0 sampled, and the measured dispersions
    cosmography: CosmographyConfig | None = None
    # a pixelization whose weights an earlier fit gives (:mod:`twinlens.job.stages`): until
    # run_fit has them the model holds a stand-in, which objective() refuses
    adapt: AdaptFrom | None = None
    # once it has them: where they came from, for result.json
    adapted_from: dict | None = None
    # a multi-band fit's band names and datasets (``dataset`` is then the first band's)
    bands: tuple = ()
    datasets: tuple = ()

    def objective(self, backend: str | None = None) -> Any:
        """The :class:`~twinlens.search.Objective` this configuration defines (its model, data
        and point source) on ``backend`` (default: the configuration's): what
        :func:`~twinlens.job.run_fit` searches and what a finished fit's fingerprint is of."""
        from twinlens.search import Objective

        if self.adapt is not None:
            raise ConfigError(
                f"{self.adapt.where}.adapt: this fit's regularisation weights come from the fit "
                f"of {self.adapt.config}; run it with twinlens fit (run_fit), which runs that "
                "stage first"
            )

        ps = self.point_source
        likelihood = None if ps is None else ps.likelihood
        data = self.datasets if self.bands else self.dataset
        kinematics = None if self.cosmography is None else self.cosmography.kinematics
        return Objective.build(self.model, data, backend or self.backend, likelihood, kinematics)


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


def _dataset(
    table: Any, base: Path, read: bool = True, where: str = "[dataset]", extra: tuple = ()
) -> Imaging | None:
    """The ``[dataset]`` table (or one band's, ``where``; ``extra``: the keys a band's table
    has besides), checked; the data read from its files when ``read``."""
    if not isinstance(table, dict):
        raise ConfigError(
            f"{where} must be a table with data, noise_map and psf (FITS file paths), got "
            f"{'nothing' if table is None else 'dataset = ' + _show(table)}"
        )
    missing = [k for k in ("data", "noise_map", "psf") if k not in table]
    if missing:
        raise ConfigError(f"{where} needs {', '.join(missing)} (FITS file paths)")
    allowed = (*_DATASET_KEYS, *extra)
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{where}: unknown entries {', '.join(unknown)}; allowed: "
            f"{', '.join(allowed)}{_suggest(unknown[0], allowed)}"
        )
    for key in ("data", "noise_map", "psf", "mask"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(
                f"{where}.{key} = {_show(table[key])}: expected a FITS file path in quotes"
            )
    for key in ("pixel_scale", "mask_radius"):
        value = table.get(key)
        if value is not None and not (_is_number(value) and 0 < value < math.inf):
            raise ConfigError(f"{where}.{key} = {_show(value)}: expected a number > 0 (arcsec)")
    sub_size = table.get("sub_size", 4)
    if not (isinstance(sub_size, int) and not isinstance(sub_size, bool)):
        raise ConfigError(
            f"{where}.sub_size = {_show(sub_size)}: expected a whole number of sub-pixels "
            "per pixel side, 1 to 64 (-1 to -64: Gauss-Legendre nodes)"
        )
    if not read:
        return None
    files = [k for k in ("data", "noise_map", "psf", "mask") if k in table]
    paths = {k: str((base / table[k]).expanduser()) for k in files}
    for key, p in paths.items():
        if not Path(p).is_file():
            raise ConfigError(f"{where}.{key}: no such file {p}")
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
        raise ConfigError(f"{where}: {message}") from None


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


def parse_config(
    data: dict, base: Path | str = ".", backend: str | None = None, read_data: bool = True
) -> FitConfig:
    """A :class:`FitConfig` from the parsed TOML ``data``; file paths relative to ``base``.

    ``backend`` (the command line's ``--backend``) replaces the file's, before the search is
    checked against it. Every mistake raises :class:`ConfigError` naming the TOML entry.
    ``read_data=False`` checks everything but reads no data file (``dataset`` is then None):
    a catalogue checks every lens's configuration so before any fit starts."""
    base = Path(base)
    backend = _check_head(data, backend)
    check_sections(data)
    priors: dict[str, Prior] = {}
    imaging = "dataset" in data
    # read first: a k-means source mesh clusters on the data's grid (the first band's)
    dataset, bands = _imaging(data, base, read_data) if imaging else (None, None)
    lenses = _galaxies(data.get("lens"), "lens", priors)
    context = ReadContext(dataset, base)
    sources = _galaxies(data.get("source"), "source", priors, context)
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
        point_source, ps_config = _point_source(
            data["point_source"], priors, multi_plane, imaging, "cosmography" in data
        )
    if ps_config is not None and ps_config.likelihood.in_imaging and tracer.pixelizations:
        raise ConfigError(
            "[point_source].in_imaging = true with a pixelised source: its inversion does not "
            "solve for point-image fluxes; use parametric source light, or drop in_imaging"
        )
    if ps_config is not None and type(tracer) is Tracer:
        ps_config = _redshifts_for_h0(ps_config, lenses, sources)
    cosmography = read_cosmography(data, priors, ps_config, base)
    if not priors:  # the point source's free parameters count too
        raise ConfigError("no free parameter: give at least one parameter a prior table")
    if not imaging:
        _check_without_imaging(tracer, priors)
    _check_pixelised(tracer, priors)
    if bands is not None:
        _add_bands(bands, tracer, priors, point_source, bool(context.stages))
    names = () if bands is None else tuple(bands.names)
    model = Model(
        tracer,
        tuple(priors.items()),
        point_source,
        names,
        None if cosmography is None else cosmography.cosmography,
        None if cosmography is None else cosmography.anisotropy,
    )
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
        cosmography=cosmography,
        adapt=context.stages[0] if context.stages else None,
        bands=names,
        datasets=() if bands is None or not read_data else tuple(bands.datasets),
    )


def _check_head(data: dict, backend: str | None) -> str:
    """The file's sections, title and output checked; the backend (``backend``, the command
    line's, in place of the file's)."""
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
        return check_backend(raw_backend)
    except ValueError:
        raise ConfigError(
            f"backend = {_show(raw_backend)}: unknown backend; choose one of "
            f"{', '.join(BACKENDS)}{_suggest(raw_backend, BACKENDS)}"
        ) from None


def _imaging(data: dict, base: Path, read_data: bool) -> tuple[Imaging | None, Bands | None]:
    """The ``[dataset]`` table, or the ``[[dataset]]`` tables of several bands (the dataset
    is then the first band's)."""
    if isinstance(data["dataset"], list):
        bands = read_bands(
            data["dataset"], lambda table, where: _dataset(table, base, read_data, where, BAND_KEYS)
        )
        return bands.datasets[0], bands
    return _dataset(data["dataset"], base, read_data), None


def _add_bands(bands: Bands, tracer: Tracer, priors: dict, point_source: Any, staged: bool) -> None:
    """The bands' own parameters, after the shared ones."""
    if staged:
        raise ConfigError(
            "adapt with several [[dataset]] bands is not supported yet: stage a pixelised fit "
            "with one [dataset]"
        )
    if point_source is not None:
        raise ConfigError(
            "[point_source] with several [[dataset]] bands is not supported yet: fit the point "
            "source with one [dataset]"
        )
    check_band_paths(bands, tracer)
    priors.update(bands.priors)


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

"""The ``[[dataset]]`` tables of a multi-band fit: one per band (or epoch), each named.

.. code-block:: toml

    [[dataset]]
    name = "F814W"
    data = "F814W/data.fits"
    noise_map = "F814W/noise_map.fits"
    psf = "F814W/psf.fits"
    mask_radius = 2.0

    [[dataset]]
    name = "F160W"
    data = "F160W/data.fits"
    noise_map = "F160W/noise_map.fits"
    psf = "F160W/psf.fits"
    mask_radius = 2.0
    # this band's own parameters: free for it alone (a colour gradient)
    own = {"sources[0].light[0].effective_radius" = {log_uniform = [0.02, 2.0]}}

Every band sees the one model of the ``[[lens]]`` and ``[[source]]`` tables and solves its own
linear intensities. A band's ``own`` entry names model paths, each with a prior table: that
parameter is then free for this band alone, as ``band.<name>.<path>`` in the results, starting
at the model's value of the path. ``offset[0]`` and ``offset[1]`` are the band's astrometric
offset (arcsec, starting at 0): its image of the whole scene moved by that much.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twinlens.imaging.dataset import Imaging
from twinlens.job.config_errors import ConfigError, _show
from twinlens.job.config_priors import prior_from_table
from twinlens.model.paths import BAND_NAME
from twinlens.model.priors import Prior

__all__ = ["BAND_KEYS", "Bands", "read_bands"]

#: what a band's table holds besides a ``[dataset]``'s entries
BAND_KEYS = ("name", "own")


class Bands:
    """The bands read: names, datasets (None when the data were not read) and the priors of
    each band's own parameters, by their ``band.<name>.<path>`` paths."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.datasets: list[Imaging | None] = []
        self.priors: dict[str, Prior] = {}


def read_bands(entries: list, read_one: Callable[[Any, str], Imaging | None]) -> Bands:
    """The ``[[dataset]]`` tables; ``read_one(table, where)`` reads one band's data."""
    bands = Bands()
    for i, table in enumerate(entries):
        if not isinstance(table, dict):
            raise ConfigError(f"[[dataset]] number {i + 1} must be a table, got {_show(table)}")
        name = table.get("name")
        if not (isinstance(name, str) and BAND_NAME.match(name)):
            raise ConfigError(
                f"[[dataset]] number {i + 1}: name = {_show(name)}: each band needs a name that "
                "starts with a letter and holds letters, digits, '_' and '-' (e.g. \"F160W\")"
            )
        if name in bands.names:
            raise ConfigError(f'[[dataset]] name = "{name}" is given twice; names must differ')
        where = f'[[dataset]] "{name}"'
        bands.names.append(name)
        bands.datasets.append(read_one(table, where))
        own = table.get("own", {})
        if not isinstance(own, dict):
            raise ConfigError(
                f"{where}.own = {_show(own)}: expected a table of model paths with prior tables, "
                'e.g. own = {"sources[0].light[0].effective_radius" = {uniform = [0.05, 1.0]}}'
            )
        for path, raw in own.items():
            here = f'{where}.own."{path}"'
            if not isinstance(raw, dict):
                raise ConfigError(
                    f"{here} = {_show(raw)}: a band's own parameter needs a prior table such as "
                    "{uniform = [0.05, 1.0]}"
                )
            if "start" in raw:
                raise ConfigError(
                    f"{here}: a band's own parameter starts at the model's value of the path; "
                    "drop start"
                )
            bands.priors[f"band.{name}.{path}"], _ = prior_from_table(raw, here)
    return bands


def check_band_paths(bands: Bands, tracer: Any) -> None:
    """Each band's own parameter names a scalar parameter of the model, whose value (where
    the band starts) lies inside the band's prior."""
    from twinlens.model.paths import OFFSET, band_path, get_path, parameter_paths

    scalars = [*parameter_paths(tracer), *OFFSET]
    for path, prior in bands.priors.items():
        band, inner = band_path(path)
        where = f'[[dataset]] "{band}".own."{inner}"'
        if inner not in scalars:
            raise ConfigError(
                f"{where}: the model has no scalar parameter {inner!r}; its parameters are "
                f"{', '.join(scalars)}"
            )
        value = 0.0 if inner in OFFSET else float(get_path(tracer, inner))
        if not prior.contains(value):
            raise ConfigError(
                f"{where}: the band starts at the model's value {value:g}, which lies outside "
                f"its prior {prior!r}; widen the prior or change the model's value"
            )

"""The ``[point_source]`` table of a fit configuration: the observed images (positions, and
optionally delays and fluxes), the source's parameters, the image solver, and the redshifts
that turn a time-delay distance into ``H0``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinlens.job.config_errors import ConfigError, _is_number, _show, _suggest
from twinlens.job.config_priors import _numbers, _value

__all__ = ["PointSourceConfig"]


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
_WHERE = "[point_source]"


def _point_source(
    table: Any,
    priors: dict,
    multi_plane: bool = False,
    imaging: bool = True,
    cosmography: bool = False,
) -> tuple[Any, PointSourceConfig]:
    """The ``[point_source]`` table: ``(PointSource, PointSourceConfig)``; ``multi_plane``
    when the lens is a multi-plane one (its delays then scale with ``h0``, not ``D_dt``);
    ``imaging`` when there is a [dataset] (where ``in_imaging`` shows the images);
    ``cosmography`` when a ``[cosmography]`` table gives ``D_dt``."""
    _check_entries(table)
    data = _observed(table)
    kind, solver = _position_likelihood(table)
    point_source = _source(table, data, priors, multi_plane, cosmography)
    likelihood = _likelihood(table, data, kind, solver, imaging)
    return point_source, PointSourceConfig(likelihood, **_cosmology(table))


def _check_entries(table: Any) -> None:
    """A table, with known entries only, and the image positions with their uncertainty."""
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


def _observed(table: dict) -> dict[str, Any]:
    """The observed images' data (``PointSourceData``'s arguments), each checked against the
    number of positions, and each value given with its uncertainty."""
    where = _WHERE
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
    return data


def _position_likelihood(table: dict) -> tuple[Any, Any]:
    """``(position_likelihood, solver)``: the solver only for ``"image"``, which solves the
    lens equation for the model's images (None otherwise)."""
    from twinlens.lensing.lens_equation import ImageSolver
    from twinlens.likelihood.point_source import POSITION_LIKELIHOODS

    where = _WHERE
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
    return kind, solver


def _source(table: dict, data: dict, priors: dict, multi_plane: bool, cosmography: bool) -> Any:
    """The ``PointSource``: its centre, and the flux and distance (``time_delay_distance``, or
    a multi-plane lens's ``h0``) that the observed data need; free ones register their priors
    under ``point_source.*``."""
    from twinlens.likelihood.point_source import PointSource

    where = _WHERE
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
    _check_distances(table, data, multi_plane, cosmography)
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
        return PointSource(**values)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {str(err).replace('PointSource.', '')}") from None


def _check_distances(table: dict, data: dict, multi_plane: bool, cosmography: bool) -> None:
    """A single-plane lens's delays scale with ``time_delay_distance`` (or ``[cosmography]``'s
    ``h0``), a multi-plane lens's with ``h0``: each takes its own, and refuses the other's."""
    where = _WHERE
    if cosmography:
        if multi_plane:
            raise ConfigError(
                "[cosmography] is for a single-plane lens; a multi-plane lens's delays take "
                "[point_source].h0"
            )
        if "time_delay_distance" in table or "h0" in table:
            key = "time_delay_distance" if "time_delay_distance" in table else "h0"
            raise ConfigError(
                f"{where}.{key}: with [cosmography], D_dt follows from its h0, omega_m, "
                "lambda_int and kappa_ext; remove it"
            )
        if "omega_m" in table:
            raise ConfigError(f"{where}.omega_m: with [cosmography], give it there")
        return
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


def _likelihood(table: dict, data: dict, kind: Any, solver: Any, imaging: bool) -> Any:
    """The ``PointSourceLikelihood`` of the observed ``data``, with its magnification limit
    and whether (and where) the images are modelled in the imaging data."""
    from twinlens.likelihood.point_source import (
        IMAGING_POSITIONS,
        PointSourceData,
        PointSourceLikelihood,
    )

    where = _WHERE
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
        return PointSourceLikelihood(
            PointSourceData(**data),
            kind,
            solver,
            float(limit),
            in_imaging,
            placed,
        )
    except (TypeError, ValueError) as err:
        message = str(err).replace("PointSourceData.", "").replace("PointSourceLikelihood", "")
        raise ConfigError(f"{where}: {message.lstrip(': ')}") from None


def _cosmology(table: dict) -> dict[str, float]:
    """``z_lens``, ``z_source`` and ``omega_m`` as given (``PointSourceConfig``'s arguments),
    checked."""
    where = _WHERE
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
    return cosmo


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

"""A tracer written as a COOLEST template (:func:`~twinlens.export.to_coolest`; what the file
holds is in the :mod:`twinlens.export` docstring)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from twinlens.coolest.base import _UNSUPPORTED_LIGHT, NotDescribable, _json_path, _load_coolest
from twinlens.coolest.pixels import _fill_grid, _observation, _regularization
from twinlens.coolest.posterior import _Posterior
from twinlens.coolest.priors import _Priors
from twinlens.coolest.profiles import _GRID_TYPES, _collect, _Export
from twinlens.lensing.tracer import Tracer
from twinlens.messages import shown
from twinlens.model.paths import get_path

_MODES = ("MAP", "MOCK")


def _entity_redshift(galaxy: Any, where: str, argument: str, default: float | None) -> Any:
    """A galaxy's own redshift (``Galaxy.redshift``), else the ``lens_redshift`` or
    ``source_redshift`` argument; the two must not disagree."""
    own = galaxy.redshift
    if own is None:
        return default
    if default is not None and own != default:
        raise ValueError(
            f"{where}.redshift is {own} but {argument}={default}: give the redshift once "
            "(the Galaxy's, which multi-plane lensing reads, or the argument)"
        )
    return own


def to_coolest(
    tracer: Tracer,
    path: str | os.PathLike[str],
    *,
    dataset: Any = None,
    posterior: Mapping[str, Any] | None = None,
    priors: Any = None,
    mode: str = "MAP",
    lens_redshift: float | None = None,
    source_redshift: float | None = None,
    unsupported_light: str = "skip",
    reconstruction: Any = None,
) -> Path:
    """Write ``tracer`` as the COOLEST template ``path`` (a ``.json`` file); return its path.

    Point estimates are the tracer's values. See the module docstring for the profiles
    supported, the conventions, and what else the file holds.

    Parameters
    ----------
    tracer : Tracer
        Lens galaxies (SIS, SIE, PowerLaw, ExternalShear and MassSheet mass; Sersic-family
        light) and sources (Sersic-family light).
    path : str or path-like
        The JSON file to write (replaced if it exists); its directory must exist.
    dataset : Imaging, optional
        The data the model was fitted to; written as FITS files next to the JSON.
    posterior : mapping, optional
        Our parameter paths (as :attr:`twinlens.model.Model.paths`, e.g.
        ``"lenses[0].mass[0].ell_comps[0]"``) to either samples (a 1-D array; every entry one
        length: joint, equally weighted draws, e.g. ``dict(zip(model.paths, samples.T))``) or a
        tuple ``(median, p16, p84, mean)``; see Posterior statistics in the module docstring.
    priors : mapping, optional
        Our parameter paths to the priors of the fit (a dict, or
        :attr:`twinlens.model.Model.priors`): written as COOLEST priors where COOLEST has the
        same kind, and otherwise as a prior of type null whose ``description`` names ours and
        says why (see :class:`_Priors`). Without it every prior is COOLEST's empty one.
    mode : {"MAP", "MOCK"}
        COOLEST's mode: a fitted model (with posterior statistics) or a mock.
    lens_redshift, source_redshift : float, optional
        Written on the lens and source entities whose galaxy has no ``redshift`` of its own
        (null when neither is given). A galaxy's own redshift (a multi-plane lens) is written
        as it is; an argument that disagrees with it is an error.
    unsupported_light : {"skip", "raise"}
        What to do with light profiles COOLEST cannot describe: leave them out with a warning
        (and list them in the metadata), or raise ``ValueError``.
    reconstruction : optional
        The solved pixelised source of a tracer with a
        :class:`~twinlens.inversion.Pixelization` (``FitImaging(...).pixelised``, or a
        :class:`~twinlens.inversion.FitPixelised`); required for such a tracer (one
        pixelised source), written as the module docstring says (Pixelised sources).

    Returns
    -------
    pathlib.Path
        The absolute path of the JSON file.

    Raises
    ------
    ImportError
        Without the coolest package.
    ValueError
        For a mass profile COOLEST cannot describe (named, with its path), a shear or sheet
        not at the origin, a value outside COOLEST's range (e.g. a Sersic index below 0.5), a
        path not ending in ``.json``, or a bad posterior.
    FileNotFoundError
        When the directory of ``path`` does not exist.
    """
    c = _load_coolest()
    _check_arguments(tracer, mode, unsupported_light, posterior, lens_redshift, source_redshift)
    out = _json_path(path, must_exist=False)
    exports, skipped = _collect(tracer, unsupported_light)
    _check_pixelised(exports, reconstruction)
    post = None if posterior is None else _Posterior(posterior, tracer)
    prior_map = None if priors is None else _Priors(priors, tracer)
    entity_list, owners = _entities(c.lazy, tracer, exports, lens_redshift, source_redshift)
    filled = _fill_entities(c, entity_list, owners, tracer, post, prior_map, reconstruction, out)
    _write_document(c, out, mode, tracer, dataset, entity_list, *filled, skipped)
    return out


def _check_arguments(
    tracer: Any,
    mode: str,
    unsupported_light: str,
    posterior: Any,
    lens_redshift: float | None,
    source_redshift: float | None,
) -> None:
    """Refuse arguments :func:`to_coolest` cannot use, before anything is written."""
    if not isinstance(tracer, Tracer):
        raise TypeError(f"to_coolest needs a Tracer, got {type(tracer).__name__}")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    if unsupported_light not in _UNSUPPORTED_LIGHT:
        raise ValueError(
            f"unsupported_light must be one of {_UNSUPPORTED_LIGHT}, got {unsupported_light!r}"
        )
    if posterior is not None and mode != "MAP":
        raise ValueError("posterior statistics belong to mode='MAP' (COOLEST drops them in MOCK)")
    for name, z in (("lens_redshift", lens_redshift), ("source_redshift", source_redshift)):
        if z is not None and not (math.isfinite(z) and z >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {shown(z)}")


def _check_pixelised(exports: list[_Export], reconstruction: Any) -> None:
    """At most one pixelised source, and its reconstruction given (one is written)."""
    pixelised = [e for e in exports if e.ctype in _GRID_TYPES]
    if len(pixelised) > 1:
        raise NotDescribable(
            f"{', '.join(e.path for e in pixelised)}: one pixelised source can be written (one "
            "reconstruction is given)"
        )
    if pixelised and reconstruction is None:
        raise ValueError(
            f"{pixelised[0].path} is a pixelised source: pass its solved source as "
            "reconstruction=FitImaging(dataset, tracer).pixelised to write it"
        )


def _entities(
    lazy: Any,
    tracer: Tracer,
    exports: list[_Export],
    lens_redshift: float | None,
    source_redshift: float | None,
) -> tuple[Any, list[tuple[list[_Export], list[_Export]]]]:
    """COOLEST's lensing entities (not yet filled) and, for each, the exports of its mass and
    light profiles: a ``Galaxy`` per galaxy of ours, and a ``MassField`` per shear or sheet."""
    z_source = getattr(tracer, "z_source", None)  # a multi-plane tracer's sources lie there
    if z_source is not None and source_redshift not in (None, z_source):
        raise ValueError(
            f"source_redshift={source_redshift} but the multi-plane tracer's z_source is "
            f"{z_source}: give it once"
        )
    entities: list[Any] = []
    owners: list[tuple[list[_Export], list[_Export]]] = []
    for role, galaxies, label, default in (
        ("lenses", tracer.lenses, "lens", lens_redshift),
        ("sources", tracer.sources, "source", source_redshift if z_source is None else z_source),
    ):
        for i in range(len(galaxies)):
            z = _entity_redshift(galaxies[i], f"{role}[{i}]", f"{label}_redshift", default)
            mine = [e for e in exports if e.galaxy == f"{role}[{i}]"]
            mass = [e for e in mine if e.model == "mass" and not e.field]
            light = [e for e in mine if e.model == "light"]
            if mass or light:
                entities.append(
                    lazy.Galaxy(
                        f"{label} {i}",
                        z,
                        light_model=lazy.LightModel(*(e.ctype for e in light)),
                        mass_model=lazy.MassModel(*(e.ctype for e in mass)),
                    )
                )
                owners.append((mass, light))
            for e in (e for e in mine if e.field):
                model = lazy.MassModel(e.ctype)
                entities.append(lazy.MassField(f"{label} {i} {e.ctype}", z, mass_model=model))
                owners.append(([e], []))
    entity_list = lazy.LensingEntityList(*entities)  # assigns the profile and parameter ids
    return entity_list, owners


def _fill_entities(
    c: SimpleNamespace,
    entity_list: Any,
    owners: list[tuple[list[_Export], list[_Export]]],
    tracer: Tracer,
    post: _Posterior | None,
    prior_map: _Priors | None,
    reconstruction: Any,
    out: Path,
) -> tuple[dict[str, dict[str, str]], _Filled]:
    """Fill every entity's profiles; returns ``(recorded, filled)``: our path and class of
    each COOLEST profile id, and the pixelised sources' files and regularisations."""
    recorded: dict[str, dict[str, str]] = {}
    filled = _Filled()
    for entity, (mass, light) in zip(entity_list, owners, strict=True):
        light_model = getattr(entity, "light_model", [])
        for model, exported in ((entity.mass_model, mass), (light_model, light)):
            for profile, export in zip(model, exported, strict=True):
                recorded[profile.id] = {"path": export.path, "type": type(export.profile).__name__}
                if export.ctype in _GRID_TYPES:
                    filled.grid_files[export.path] = _fill_grid(
                        profile, export, reconstruction, out
                    )
                    # its regularisation's lambda is a parameter like a profile's
                    regularization, own, meta = _regularization(
                        c, profile, export, len(filled.regularizations)
                    )
                    _fill(c, regularization, own, tracer, post, prior_map)
                    filled.regularizations.append(regularization)
                    filled.regularization_meta[regularization.id] = meta
                else:
                    _fill(c, profile, export, tracer, post, prior_map)
    # only now is it known which posterior entries and priors no parameter used
    if post is not None:
        post.report()
    if prior_map is not None:
        prior_map.report()
    return recorded, filled


@dataclass
class _Filled:
    """What filling the entities made besides the profiles: each pixelised source's FITS
    file (by our path) and its regularisation (COOLEST's object, and our metadata by its
    id)."""

    grid_files: dict[str, str] = field(default_factory=dict)
    regularizations: list[Any] = field(default_factory=list)
    regularization_meta: dict[str, dict[str, Any]] = field(default_factory=dict)


def _write_document(
    c: SimpleNamespace,
    out: Path,
    mode: str,
    tracer: Tracer,
    dataset: Any,
    entity_list: Any,
    recorded: dict[str, dict[str, str]],
    filled: _Filled,
    skipped: dict[str, str],
) -> None:
    """Write the observation's FITS files and the COOLEST document around ``entity_list``."""
    lazy = c.lazy
    observation, instrument, likelihoods, obs_meta = _observation(lazy, dataset, out)
    meta = _metadata(tracer, recorded, skipped, obs_meta, filled)
    cosmology = _coolest_cosmology(lazy, tracer)
    document = c.COOLEST(
        mode,
        lazy.CoordinatesOrigin(),
        entity_list,
        observation,
        instrument,
        cosmology=cosmology,
        likelihoods=likelihoods,
        metadata=meta,
    )
    if filled.regularizations:
        # the document's field that COOLEST's API leaves out (0.1.11) and drops in MOCK mode
        document.regularizations = filled.regularizations
    serializer = c.JSONSerializer(
        str(out.with_suffix("")), obj=document, check_external_files=False
    )
    serializer.dump_simple()


def _metadata(
    tracer: Tracer,
    recorded: dict[str, dict[str, str]],
    skipped: dict[str, str],
    obs_meta: dict[str, Any],
    filled: _Filled,
) -> dict[str, Any]:
    """The document's metadata: under ``"twinlens"``, what :func:`from_coolest` reads back
    (each profile's path and class, the tracer's class) and notes on what was written."""
    from twinlens import __version__

    meta: dict[str, Any] = {
        "twinlens": {
            "version": __version__,
            "profiles": recorded,
            "skipped_light_profiles": skipped,
            **obs_meta,
        }
    }
    if filled.grid_files:
        meta["twinlens"]["pixelised_sources"] = filled.grid_files
        meta["twinlens"]["regularizations"] = filled.regularization_meta
    meta["twinlens"]["tracer"] = type(tracer).__name__  # from_coolest rebuilds the same class
    return meta


def _coolest_cosmology(lazy: Any, tracer: Tracer) -> Any:
    """COOLEST's cosmology (flat LambdaCDM: ``H0``, ``Om0``) of a multi-plane tracer, whose
    planes' distances depend on it; None for a single-plane tracer."""
    from twinlens.lensing.multiplane import MultiPlaneTracer

    if not isinstance(tracer, MultiPlaneTracer):
        return None
    if tracer.distance_ratios is not None:
        raise NotDescribable(
            "a MultiPlaneTracer built from distance_ratios has no cosmology for COOLEST to "
            "hold; build it with cosmology= (a flat LambdaCDM)"
        )
    cosmology = tracer.cosmology_in_use.astropy
    flat = type(cosmology).__name__ == "FlatLambdaCDM" and not cosmology.Tcmb0.value
    if not flat:
        raise NotDescribable(
            "COOLEST holds a flat LambdaCDM cosmology (H0, Om0) without radiation, not "
            f"{cosmology!r}"
        )
    return lazy.Cosmology(H0=float(cosmology.H0.value), Om0=float(cosmology.Om0))


def _fill(
    c: SimpleNamespace, profile: Any, export: _Export, tracer: Tracer, post: Any, priors: Any
) -> None:
    """Set one COOLEST profile's point estimates (and posterior statistics and priors)."""
    where = f"{export.path} ({type(export.profile).__name__})"
    for p in export.params:
        parameter = profile.parameters[p.name]
        value = float(p.fn(*(float(get_path(tracer, s)) for s in p.inputs)))
        rng = parameter.definition_range
        lo, hi = rng.min_value, rng.max_value
        if (
            not math.isfinite(value)
            or (lo is not None and value < lo)
            or (hi is not None and value > hi)
        ):
            raise NotDescribable(
                f"{where}: COOLEST's {export.ctype} parameter {p.name} would be {value!r}, "
                f"outside its range [{lo}, {hi}]"
            )
        parameter.set_point_estimate(value)
        if p.fixed:
            parameter.fix()
        stats = None if post is None else post.stats(p, tracer, where)
        if stats is not None:
            parameter.set_posterior(c.lazy.PosteriorStatistics(**stats))
        if priors is not None:
            prior = priors.coolest(c.probabilities, p, tracer)
            if prior is not None:
                parameter.set_prior(prior)
            elif priors.fixed(p):
                parameter.fix()

"""A COOLEST template's point estimates read back as a tracer
(:func:`~twinlens.export.from_coolest`; how entities become galaxies is in the
:mod:`twinlens.export` docstring)."""

from __future__ import annotations

import os
import re
from typing import Any

from twinlens.coolest.base import _UNSUPPORTED_LIGHT, _json_path, _load_coolest
from twinlens.coolest.conventions import _ell_comps
from twinlens.kernels.light import sersic_b, sersic_b_capaccioli, sersic_with_other_b
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.profiles.isothermal import SIE, SIS
from twinlens.profiles.light import Exponential, LinearExponential, LinearSersic, Sersic
from twinlens.profiles.power_law import PowerLaw
from twinlens.profiles.simple import ExternalShear, MassSheet
from twinlens.user_warnings import warn_user

_PATH = re.compile(r"(lenses|sources)\[(\d+)\]\.(mass|light)\[(\d+)\]((?:\.profiles\[\d+\])*)")


def from_coolest(path: str | os.PathLike[str], *, unsupported_light: str = "skip") -> Tracer:
    """Read a COOLEST template's point estimates as a :class:`~twinlens.lensing.tracer.Tracer`
    (a :class:`~twinlens.lensing.multiplane.MultiPlaneTracer` when its lenses lie at several
    redshifts; every galaxy carries its entity's redshift).

    COOLEST ``SIE``, ``PEMD``, ``ExternalShear`` and ``ConvergenceSheet`` mass profiles
    become ``SIE``, ``PowerLaw``, ``ExternalShear`` and ``MassSheet``; ``Sersic`` light a
    ``Sersic`` (``LinearSersic`` when ``I_eff`` is null). A file written by
    :func:`to_coolest` comes back as the same galaxies and profile classes (an ``SIS`` or an
    ``Exponential`` again, as long as its ``q = 1`` or ``n = 1``); for other files see the
    module docstring. Posterior statistics, priors and the observation are not read.

    Parameters
    ----------
    path : str or path-like
        The ``.json`` file.
    unsupported_light : {"skip", "raise"}
        Light profiles with no twinlens equivalent (pixelated, shapelets, ...): leave them out
        with a warning, or raise ``ValueError``. Unsupported mass profiles always raise.
    """
    c = _load_coolest()
    if unsupported_light not in _UNSUPPORTED_LIGHT:
        raise ValueError(
            f"unsupported_light must be one of {_UNSUPPORTED_LIGHT}, got {unsupported_light!r}"
        )
    src = _json_path(path, must_exist=True)
    serializer = c.JSONSerializer(str(src.with_suffix("")), check_external_files=False)
    try:
        document = serializer.load_simple(str(src), as_object=True, validate=False)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise ValueError(f"{str(src)!r} is not a readable COOLEST file: {err!r}") from err

    meta = document.meta if isinstance(document.meta, dict) else {}
    ours_meta = meta.get("twinlens")
    record = ours_meta.get("profiles") if isinstance(ours_meta, dict) else None
    entities = list(document.lensing_entities)
    read: list[tuple[int, str, Any, Any]] = []  # (entity index, model, COOLEST profile, ours)
    skipped: list[str] = []
    for k, entity in enumerate(entities):
        for model in ("mass", "light"):
            for j, profile in enumerate(getattr(entity, f"{model}_model", None) or []):
                where = f"entity {k} ({entity.name!r}) {model} profile {j} ({profile.type})"
                entry = record.get(profile.id) if isinstance(record, dict) else None
                kind = entry.get("type") if isinstance(entry, dict) else None
                ours = _read_profile(profile, model, where, kind)
                if ours is None:
                    if unsupported_light == "raise":
                        raise ValueError(
                            f"{where}: twinlens has no equivalent of COOLEST's {profile.type} "
                            "light profile (it reads Sersic ones)"
                        )
                    skipped.append(where)
                    continue
                read.append((k, model, profile, ours))
    if skipped:
        warn_user(
            f"light profiles with no twinlens equivalent, left out: {'; '.join(skipped)}",
            UserWarning,
        )
    placed = _place_recorded(read, record, entities)
    if placed is None:
        placed = _place_by_entity(read, entities)
    written_as = ours_meta.get("tracer") if isinstance(ours_meta, dict) else None
    return _tracer_of(*placed, written_as, getattr(document, "cosmology", None))


def _tracer_of(
    lenses: list[Galaxy], sources: list[Galaxy], written_as: Any = None, cosmology: Any = None
) -> Tracer:
    """A :class:`Tracer`, or a :class:`~twinlens.lensing.multiplane.MultiPlaneTracer` when the
    lens galaxies lie at more than one redshift (a single-plane tracer would ignore that), with
    the file's flat LambdaCDM ``cosmology`` when it has one; ``written_as``: the class
    :func:`to_coolest` recorded, which wins (a single-plane tracer whose galaxies carried
    several redshifts comes back single-plane)."""
    planes = sorted({g.redshift for g in lenses if g.redshift is not None})
    if written_as == "Tracer" or (written_as is None and len(planes) < 2):
        return Tracer(tuple(lenses), tuple(sources))
    missing = [f"lenses[{i}]" for i, g in enumerate(lenses) if g.redshift is None]
    z_sources = {g.redshift for g in sources}
    if missing or len(z_sources) != 1 or None in z_sources:
        raise ValueError(
            f"lens galaxies at several redshifts {planes} make a multi-plane lens, which needs "
            "a redshift on every lens entity and one common redshift on the sources; "
            + (f"{', '.join(missing)} have none" if missing else f"source redshifts {z_sources}")
        )
    from twinlens.lensing.multiplane import MultiPlaneTracer

    flat = None
    if cosmology is not None and getattr(cosmology, "H0", None) is not None:
        from astropy.cosmology import FlatLambdaCDM

        flat = FlatLambdaCDM(H0=float(cosmology.H0), Om0=float(cosmology.Om0))
    return MultiPlaneTracer(tuple(lenses), tuple(sources), z_source=z_sources.pop(), cosmology=flat)


def _value(profile: Any, name: str, where: str) -> float:
    value = profile.parameters[name].point_estimate.value
    if value is None:
        raise ValueError(f"{where}: parameter {name} has no point estimate")
    return float(value)


def _read_profile(profile: Any, model: str, where: str, kind: str | None) -> Any:
    """Our profile for one COOLEST profile (``kind``: the class :func:`to_coolest` recorded
    for it, if any); None for a light profile we cannot read."""
    ctype = profile.type

    def get(name: str) -> float:
        return _value(profile, name, where)

    def centre_shape() -> dict[str, Any]:
        return {
            "centre": (get("center_x"), get("center_y")),
            "ell_comps": _ell_comps(get("q"), get("phi")),
        }

    if model == "mass":
        if ctype == "SIE":
            if kind == "SIS" and get("q") == 1.0:
                return SIS(
                    centre=(get("center_x"), get("center_y")), einstein_radius=get("theta_E")
                )
            return SIE(**centre_shape(), einstein_radius=get("theta_E"))
        if ctype == "PEMD":
            return PowerLaw(**centre_shape(), einstein_radius=get("theta_E"), slope=get("gamma"))
        if ctype == "ExternalShear":
            return ExternalShear.from_magnitude_angle(get("gamma_ext"), get("phi_ext") - 90.0)
        if ctype == "ConvergenceSheet":
            return MassSheet(kappa=get("kappa_s"))
        raise ValueError(
            f"{where}: twinlens has no equivalent of COOLEST's {ctype} mass profile; it reads "
            "SIE, PEMD, ExternalShear and ConvergenceSheet"
        )
    if ctype != "Sersic":
        return None
    n = get("n")
    b, b_n = float(sersic_b_capaccioli(n)), float(sersic_b(n))
    radius = float(sersic_with_other_b(get("theta_eff"), 1.0, n, b, b_n)[0])
    shape = {**centre_shape(), "effective_radius": radius}
    exponential = kind in ("Exponential", "LinearExponential") and n == 1.0
    i_eff = profile.parameters["I_eff"].point_estimate.value
    if i_eff is None:  # no amplitude: a linear profile
        return LinearExponential(**shape) if exponential else LinearSersic(**shape, sersic_index=n)
    intensity = float(sersic_with_other_b(1.0, float(i_eff), n, b, b_n)[1])
    if exponential:
        return Exponential(**shape, intensity=intensity)
    return Sersic(**shape, sersic_index=n, intensity=intensity)


def _redshift(entity: Any) -> float | None:
    z = getattr(entity, "redshift", None)
    return None if z is None else float(z)


def _place_recorded(
    read: list, record: Any, entities: list
) -> tuple[list[Galaxy], list[Galaxy]] | None:
    """Galaxies as :func:`to_coolest` recorded them, or None without a full record; each
    galaxy at its entities' redshift."""
    if not isinstance(record, dict):
        return None
    slots: dict[tuple[str, int], dict[str, list]] = {}
    redshifts: dict[tuple[str, int], set] = {}
    for k, model, profile, ours in read:
        entry = record.get(profile.id)
        match = _PATH.fullmatch(entry.get("path", "")) if isinstance(entry, dict) else None
        if match is None or match.group(3) != model:
            return None
        role, index, _, position, nested = match.groups()
        key = (int(position), *(int(n) for n in re.findall(r"\d+", nested)))
        slots.setdefault((role, int(index)), {"mass": [], "light": []})[model].append((key, ours))
        redshifts.setdefault((role, int(index)), set()).add(_redshift(entities[k]))
    out: dict[str, list[Galaxy]] = {"lenses": [], "sources": []}
    for (role, index), parts in sorted(slots.items()):
        mass = tuple(p for _, p in sorted(parts["mass"], key=lambda t: t[0]))
        light = tuple(p for _, p in sorted(parts["light"], key=lambda t: t[0]))
        z = redshifts[role, index]
        if len(z) > 1:  # a galaxy's entities (its shear's too) share its redshift
            return None
        out[role].append(Galaxy(mass, light, redshift=z.pop()))
    return out["lenses"], out["sources"]


def _place_by_entity(read: list, entities: list) -> tuple[list[Galaxy], list[Galaxy]]:
    """One galaxy per COOLEST entity, at its redshift: lenses carry mass; a light-only galaxy
    is a source unless its redshift is at most the farthest lens's."""
    lens_z = {
        float(e.redshift)
        for e in entities
        if len(getattr(e, "mass_model", None) or []) and e.redshift is not None
    }
    z_lens = max(lens_z, default=None)
    lenses: list[Galaxy] = []
    sources: list[Galaxy] = []
    for k, entity in enumerate(entities):
        mass = tuple(ours for i, m, _, ours in read if i == k and m == "mass")
        light = tuple(ours for i, m, _, ours in read if i == k and m == "light")
        if not (mass or light):
            continue
        z = _redshift(entity)
        in_lens_plane = z is not None and z_lens is not None and z <= z_lens
        (lenses if mass or in_lens_plane else sources).append(Galaxy(mass, light, redshift=z))
    return lenses, sources

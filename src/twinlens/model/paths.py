"""Parameter paths: names for the numbers inside a model, and rebuilding a model with new ones.

A path names one number by the fields that lead to it, with ``[i]`` for tuple entries, e.g.
``lenses[0].mass[0].einstein_radius`` or ``sources[0].light[0].ell_comps[1]``. Rebuilding goes
through each class's constructor (``dataclasses.replace``), so every parameter check runs: a
concrete bad value raises a clear error, and a traced or batched one records its validity
condition (:func:`twinlens.profiles.checks.collect_validity`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from twinlens.fields import ValueIdentity

#: the prefix of a point source's parameter paths (``point_source.centre[0]``)
POINT_SOURCE = "point_source."
#: the prefixes of time-delay cosmography's parameters (``cosmography.h0``) and of the
#: kinematics' anisotropy (``kinematics.r_ani``)
COSMOGRAPHY, KINEMATICS = "cosmography.", "kinematics."
#: the model's parts besides its tracer, by path prefix (:class:`~twinlens.model.Model`)
PARTS = {POINT_SOURCE: "point_source", COSMOGRAPHY: "cosmography", KINEMATICS: "kinematics"}
#: a band's name: letters, digits, ``_`` and ``-`` (it stands in a band's own parameter paths,
#: ``band.<name>.<path>``, of a multi-band fit)
BAND_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")
_BAND_PATH = re.compile(r"^band\.([^.]+)\.(.+)$")

__all__ = [
    "BAND_NAME",
    "COSMOGRAPHY",
    "KINEMATICS",
    "OFFSET",
    "PARTS",
    "POINT_SOURCE",
    "band_path",
    "get_path",
    "parameter_paths",
    "parameter_unit",
    "part_path",
    "readable_label",
    "set_paths",
    "set_paths_offset",
    "translate",
]

_TOKEN = re.compile(r"([A-Za-z_]\w*)((?:\[\d+\])*)")


def part_path(path: str) -> tuple[str | None, str]:
    """``(part, path inside it)`` of a free parameter's path: the part's attribute name on
    the model (``"point_source"``, ``"cosmography"``, ``"kinematics"``), or None for the
    tracer's own parameters."""
    for prefix, name in PARTS.items():
        if path.startswith(prefix):
            return name, path[len(prefix) :]
    return None, path


def band_path(path: str) -> tuple[str | None, str]:
    """``(band name, model path)`` of a free parameter's path; the name is None when the
    parameter is shared by every band."""
    match = _BAND_PATH.match(path)
    return (match.group(1), match.group(2)) if match else (None, path)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parameter_paths(obj: ValueIdentity) -> list[str]:
    """Every scalar parameter of ``obj`` (static configuration and arrays excluded), in field
    order."""
    out: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, ValueIdentity):
            for f in dataclasses.fields(value):
                if not f.metadata.get("static"):
                    walk(getattr(value, f.name), f"{path}.{f.name}" if path else f.name)
        elif isinstance(value, tuple):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        elif _is_number(value):
            out.append(path)

    walk(obj, "")
    return out


# units of a parameter by its field name: arcsec for lengths and positions, degrees for
# angles; ratios, ellipticities, shears, slopes and indices have none
_ARCSEC = {
    "centre",
    "origin",
    "einstein_radius",
    "effective_radius",
    "scale_radius",
    "core_radius",
    "break_radius",
    "sigma",
    "r_s",
    "r_c",
    "r_ani",
}
_DEGREES = {"angle", "reference_angle"}
_OTHER_UNITS = {"time_delay_distance": "Mpc", "h0": "km/s/Mpc"}


def parameter_unit(path: str) -> str:
    """The unit of the parameter at ``path``, by its field name: ``"`` (arcsec) for lengths
    and positions, ``deg`` for angles, ``Mpc`` and ``km/s/Mpc`` for a time-delay distance and
    ``H0``; empty for a number without one."""
    field = _TOKEN.fullmatch(path.rsplit(".", 1)[-1])
    name = field.group(1) if field is not None else ""
    if name in _ARCSEC:
        return '"'
    return "deg" if name in _DEGREES else _OTHER_UNITS.get(name, "")


def readable_label(path: str, units: bool = True) -> str:
    """A plain-text label for a parameter path: named as in a fit's TOML file (``lens``,
    ``source``), with its unit, e.g. ``lens[0].mass[0].einstein_radius ["]``."""
    steps = path.split(".")
    head = {"lenses": "lens", "sources": "source"}
    m = _TOKEN.fullmatch(steps[0])
    if m is not None and m.group(1) in head:
        steps[0] = head[m.group(1)] + m.group(2)
    label = ".".join(steps)
    unit = parameter_unit(path)
    return f"{label} [{unit}]" if units and unit else label


@lru_cache(maxsize=4096)
def _parse(path: str) -> tuple[str | int, ...]:
    steps: list[str | int] = []
    for part in path.split("."):
        m = _TOKEN.fullmatch(part)
        if m is None:
            raise ValueError(f"bad parameter path {path!r} at {part!r}")
        steps.append(m.group(1))
        steps += [int(i) for i in re.findall(r"\d+", m.group(2))]
    return tuple(steps)


def get_path(obj: Any, path: str) -> Any:
    """The value at ``path`` in ``obj``."""
    value = obj
    for step in _parse(path):
        try:
            value = value[step] if isinstance(step, int) else getattr(value, step)
        except (AttributeError, IndexError, TypeError):
            raise KeyError(
                f"{path!r} names no parameter of {type(obj).__name__}; its parameters are "
                f"{parameter_paths(obj)}"
            ) from None
    return value


#: the pseudo-parameters of an image's astrometric offset (x, y), arcsec: the whole scene
#: appears moved by it (every centre and origin translated)
OFFSET = ("offset[0]", "offset[1]")


def translate(obj: Any, dx: Any, dy: Any) -> Any:
    """``obj`` with every ``centre`` and ``origin`` moved by ``(dx, dy)``: the image of a
    tracer so translated is the image of ``obj`` moved by the same offset. A profile without
    a centre (a uniform mass sheet) does not move."""
    paths = [p for p in parameter_paths(obj) if p.endswith(("centre[0]", "origin[0]"))]
    values = {}
    for p in paths:
        y = p[:-3] + "[1]"
        values[p] = get_path(obj, p) + dx
        values[y] = get_path(obj, y) + dy
    return set_paths(obj, values, False)


def set_paths_offset(obj: Any, values: Mapping[str, Any]) -> Any:
    """:func:`set_paths` (paths already checked) where ``values`` may also hold the
    :data:`OFFSET` pseudo-parameters, applied after the others by :func:`translate`."""
    values = dict(values)
    dx, dy = values.pop(OFFSET[0], None), values.pop(OFFSET[1], None)
    out = set_paths(obj, values, False)
    if dx is None and dy is None:
        return out
    return translate(out, 0.0 if dx is None else dx, 0.0 if dy is None else dy)


def set_paths(obj: Any, values: Mapping[str, Any], check_paths: bool = True) -> Any:
    """A copy of ``obj`` with the numbers at the given paths replaced (through constructors).

    ``check_paths=False`` skips looking each path up first (for paths already checked)."""
    tree: dict = {}
    for path, value in values.items():
        if check_paths:
            get_path(obj, path)  # raises a clear KeyError for a bad path
        node = tree
        steps = _parse(path)
        for step in steps[:-1]:
            node = node.setdefault(step, {})
        node[steps[-1]] = value
    return _rebuild(obj, tree)


def _rebuild(value: Any, changes: dict) -> Any:
    if isinstance(value, tuple):
        items = list(value)
        for i, sub in changes.items():
            items[i] = _rebuild(items[i], sub) if isinstance(sub, dict) else sub
        return tuple(items)
    updates = {
        name: _rebuild(getattr(value, name), sub) if isinstance(sub, dict) else sub
        for name, sub in changes.items()
    }
    return dataclasses.replace(value, **updates)

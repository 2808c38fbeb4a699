"""Short labels of parameter paths, for figures where a full path does not fit.

A path such as ``lenses[0].mass[0].einstein_radius`` becomes the parameter's usual symbol
(``θE``), qualified only as far as the other paths of the same figure require: by its
component (``mass0 θE``, ``light1 e1``), by its galaxy (``src0 Reff``, ``lens1 θE``), or by
both (``lens0 light0 e1``). summary.txt lists each label beside its full path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import combinations

from twinlens.model.paths import band_path, parameter_unit, readable_label

__all__ = ["axis_labels", "short_labels"]

#: the usual symbol of a parameter, by its field name (and index); plain text, no spaces
SYMBOLS = {
    "einstein_radius": "θE",
    "centre[0]": "x",
    "centre[1]": "y",
    "origin[0]": "x0",
    "origin[1]": "y0",
    "ell_comps[0]": "e1",
    "ell_comps[1]": "e2",
    "gamma_1": "γ1",
    "gamma_2": "γ2",
    "slope": "γ",
    "gamma": "γ",
    "alpha": "α",
    "axis_ratio": "q",
    "angle": "φ",
    "reference_angle": "φref",
    "mass_to_light_ratio": "Υ",
    "effective_radius": "Reff",
    "sersic_index": "n",
    "intensity": "I",
    "amplitude": "A",
    "sigma": "σ",
    "kappa": "κ",
    "kappa_s": "κs",
    "rho_s": "ρs",
    "scale_radius": "rs",
    "r_s": "rs",
    "core_radius": "rc",
    "r_c": "rc",
    "break_radius": "rb",
    "coefficient": "λ",  # a pixelised source's regularisation coefficient
    "time_delay_distance": "DΔt",
    "flux": "F",
    "h0": "H0",
    "omega_m": "Ωm",
    "lambda_int": "λint",
    "kappa_ext": "κext",
    "r_ani": "rani",
}

_STEP = re.compile(r"([A-Za-z_]\w*)((?:\[\d+\])*)")
_GALAXY = {"lenses": "lens", "sources": "src"}
_COMPONENT = {"mass": "mass", "light": "light", "profiles": "part", "pixelization": "pix"}


def _symbol(step: str) -> str:
    if step in SYMBOLS:
        return SYMBOLS[step]
    m = _STEP.fullmatch(step)
    if m is not None and m.group(1) in SYMBOLS:  # an indexed field: sigmas[2] -> σ2
        return SYMBOLS[m.group(1)] + "".join(re.findall(r"\d+", m.group(2)))
    return step.replace("[", "").replace("]", "")


def _tokens(path: str) -> tuple[dict[str, str], str] | None:
    """``({kind: token}, symbol)`` of a path, kinds ``galaxy``, ``component``, ``part``; None
    for a path of another shape (it keeps its full name)."""
    steps = path.split(".")
    qualifiers: dict[str, str] = {}
    for step in steps[:-1]:
        m = _STEP.fullmatch(step)
        if m is None:
            return None
        name, index = m.group(1), "".join(re.findall(r"\d+", m.group(2)))
        if name in _GALAXY and "galaxy" not in qualifiers:
            qualifiers["galaxy"] = _GALAXY[name] + index
        elif name == "point_source" and "galaxy" not in qualifiers:
            qualifiers["galaxy"] = "ps"
        elif name in ("cosmography", "kinematics") and not qualifiers:
            continue  # their parameters' symbols say what they are
        elif name in ("mass", "light", "pixelization") and "component" not in qualifiers:
            qualifiers["component"] = _COMPONENT[name] + index
        elif name == "profiles" and "part" not in qualifiers:
            qualifiers["part"] = _COMPONENT[name] + index
        elif name != "regularization":  # the only field under pixelization with a number
            return None
    return qualifiers, _symbol(steps[-1])


#: the qualifiers tried in turn, fewest first. A lens's component comes before its galaxy, as
#: it says whether the parameter is the mass's or the light's; a source's galaxy comes first
#: and stays, as a source has light alone (``src0 Reff``, ``src0 light1 n``, where
#: ``light0 Reff`` could be a lens's).
_KINDS = ("galaxy", "component", "part")


def _order(first: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
    rest = (c for n in (0, 1, 2, 3) for c in combinations(_KINDS, n) if c not in first)
    return (*first, *rest)


_LENS_ORDER = _order(((), ("component",), ("galaxy",), ("galaxy", "component")))
_SOURCE_ORDER = _order(((), ("galaxy",), ("galaxy", "component")))


def _candidates(path: str) -> list[tuple[tuple[str, ...], str]]:
    """The labels of one path with the qualifier kinds each uses, shortest first; a path of
    another shape has its full, readable name alone. A band's own parameter (``band.<name>.``)
    always ends with its band's name (``src0 Reff F160W``)."""
    band, inner = band_path(path)
    parsed = _tokens(inner)
    if parsed is None:
        return [(("path",), readable_label(path, units=False))]
    qualifiers, symbol = parsed
    source = qualifiers.get("galaxy", "").startswith("src")
    tail = [] if band is None else [band]
    return [
        (chosen, " ".join([*(qualifiers[k] for k in _KINDS if k in chosen), symbol, *tail]))
        for chosen in (_SOURCE_ORDER if source else _LENS_ORDER)
        if all(k in qualifiers for k in chosen)
    ]


def short_labels(paths: Sequence[str]) -> list[str]:
    """One short label per path, all distinct: the parameter's symbol with the fewest
    qualifiers (component, galaxy, part of a sum) that tell it from the other paths. The
    parameters of one component share their qualifiers (``mass0 e1``, ``mass0 θE``), so that
    a label reads the same way as its neighbours'. A path of another shape keeps its full,
    readable name."""
    options = [_candidates(p) for p in paths]
    groups: dict[str, list[int]] = {}
    for i, path in enumerate(paths):
        groups.setdefault(path.rsplit(".", 1)[0], []).append(i)

    def first_unique(i: int) -> int:
        for n, (kinds, label) in enumerate(options[i]):
            same = (dict(o).get(kinds) for j, o in enumerate(options) if j != i)
            if label not in same:
                return n
        return len(options[i]) - 1

    level = {g: max(first_unique(i) for i in members) for g, members in groups.items()}
    while True:
        of = {i: g for g, members in groups.items() for i in members}
        labels = [options[i][level[of[i]]][1] for i in range(len(paths))]
        clashing = {of[i] for i, label in enumerate(labels) if labels.count(label) > 1}
        if not clashing:
            return labels
        if any(level[g] + 1 >= len(options[groups[g][0]]) for g in clashing):
            return [readable_label(p, units=False) for p in paths]
        for g in clashing:  # more qualifiers for every component of a clash
            level[g] += 1


def axis_labels(paths: Sequence[str]) -> list[str]:
    """:func:`short_labels` with each parameter's unit, as a figure's axes show them, e.g.
    ``mass0 θE ["]``."""
    out = []
    for path, label in zip(paths, short_labels(paths), strict=True):
        unit = parameter_unit(path)
        out.append(f"{label} [{unit}]" if unit else label)
    return out

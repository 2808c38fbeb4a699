"""A model to fit: a tracer holding every value, and priors on the free ones.

:class:`Model` pairs a :class:`~twinlens.lensing.tracer.Tracer` (fixed values, and a starting value
for each free one) with a prior per free parameter, named by its path. It maps a parameter
vector to a tracer whose fixed values stay concrete Python floats (so fixed fields are
memoised, and folded into JAX programs), and maps the unit cube to parameter vectors for nested
sampling. It is a value-identity object: an identical model rebuilt reuses every compiled
program.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinlens.fields import ValueIdentity, static_field, value_key
from twinlens.lensing.tracer import Tracer
from twinlens.messages import shown
from twinlens.model.paths import (
    OFFSET,
    PARTS,
    band_path,
    get_path,
    parameter_paths,
    part_path,
    set_paths,
    set_paths_offset,
)
from twinlens.model.priors import Prior

__all__ = ["Model", "latex_label", "path_from_latex_label"]

# LaTeX for the last part of a path (the parameter's own name), with the component index
_LABELS = {
    "einstein_radius": r"\theta_{\rm E}",
    "centre[0]": "x",
    "centre[1]": "y",
    "origin[0]": "x_0",
    "origin[1]": "y_0",
    "ell_comps[0]": "e_1",
    "ell_comps[1]": "e_2",
    "gamma_1": r"\gamma_1",
    "gamma_2": r"\gamma_2",
    "slope": r"\gamma",
    "mass_to_light_ratio": r"\Upsilon",
    "effective_radius": r"R_{\rm eff}",
    "sersic_index": "n",
    "intensity": "I",
    "sigma": r"\sigma",
    "kappa_s": r"\kappa_s",
    "scale_radius": r"r_s",
    "core_radius": r"r_c",
    "coefficient": r"\lambda",  # a pixelised source's regularisation coefficient
    "time_delay_distance": r"D_{\Delta t}",
    "flux": "F",
    "h0": r"H_0",
    "omega_m": r"\Omega_{\rm m}",
    "lambda_int": r"\lambda_{\rm int}",
    "kappa_ext": r"\kappa_{\rm ext}",
    "r_ani": r"r_{\rm ani}",
}


def latex_label(path: str) -> str:
    r"""A LaTeX label for a parameter path, e.g. ``\theta_{\rm E}^{\rm lens\,0\,m0}``."""
    band, inner = band_path(path)
    if band is not None:  # a band's own parameter: the shared label, and the band
        return rf"{latex_label(inner)}\,({{\rm {band}}})"
    head, _, last = path.rpartition(".")
    name = _LABELS.get(last, last.replace("_", r"\_"))
    if head == "point_source":
        return f"{name}^{{\\rm ps}}"
    if head in ("cosmography", "kinematics"):  # one of each: the symbol says it
        return name
    where = head.replace("lenses", "L").replace("sources", "S").replace(".mass", "m")
    where = where.replace(".light", "l").replace(".pixelization.regularization", "pix")
    where = where.replace("[", "").replace("]", "")
    return f"{name}^{{\\rm {where}}}" if where else name


_LATEX = re.compile(r"(?P<name>.+)\^\{\\rm (?P<where>[LS]\d+[ml]\d+(?:\.[A-Za-z_]+\d+)*)\}")
_WHERE = re.compile(r"([LS])(\d+)([ml])(\d+)")


def path_from_latex_label(label: str) -> str | None:
    """The parameter path :func:`latex_label` made ``label`` from, or None when ``label`` is
    not one (checked by making the label again)."""
    m = _LATEX.fullmatch(label)
    if m is None:
        return None
    names = {v: k for k, v in _LABELS.items()}
    last = names.get(m["name"], m["name"].replace(r"\_", "_"))
    head, *nested = m["where"].split(".")
    w = _WHERE.fullmatch(head)
    if w is None:
        return None
    role = "lenses" if w[1] == "L" else "sources"
    kind = "mass" if w[3] == "m" else "light"
    parts = [f"{role}[{w[2]}]", f"{kind}[{w[4]}]"]
    parts += [re.sub(r"(\d+)$", r"[\1]", step) for step in nested]
    path = ".".join([*parts, last])
    return path if latex_label(path) == label else None


@dataclass(frozen=True, eq=False)
class Model(ValueIdentity):
    """A tracer with priors on its free parameters.

    Parameters
    ----------
    tracer : Tracer
        Holds every value: the fixed ones, and a starting value inside its prior for each free
        one.
    priors : tuple of (path, Prior) pairs, or a dict
        The free parameters in vector order, e.g.
        ``{"lenses[0].mass[0].einstein_radius": UniformPrior(0.5, 2.0)}``.
    point_source : PointSource, optional
        A lensed point source's parameters
        (:class:`~twinlens.likelihood.point_source.PointSource`), named by paths that start
        with ``point_source.`` (``point_source.time_delay_distance``).
    cosmography : Cosmography, optional
        Time-delay cosmography's parameters
        (:class:`~twinlens.likelihood.cosmography.Cosmography`: ``H0``, ``Omega_m``,
        ``lambda_int``, ``kappa_ext``), named by paths that start with ``cosmography.``.
    kinematics : Isotropic, ConstantBeta or OsipkovMerritt, optional
        The anisotropy of the lens's stellar orbits (:mod:`twinlens.kinematics`), named by
        paths that start with ``kinematics.`` (``kinematics.r_ani``).
    bands : tuple of str, optional
        The names of the imaging bands of a multi-band fit
        (:class:`~twinlens.likelihood.MultiBandLikelihood`): a path ``band.<name>.<path>``
        is a parameter of that band alone, its start the tracer's value at ``<path>``;
        ``band.<name>.offset[0]`` and ``offset[1]`` are the band's astrometric offset (start
        0).
    """

    tracer: Tracer = static_field()
    priors: Any = static_field(default=())
    point_source: Any = static_field(default=None)
    bands: tuple = static_field(default=())
    cosmography: Any = static_field(default=None)
    kinematics: Any = static_field(default=None)

    def __post_init__(self) -> None:
        if isinstance(self.priors, dict):
            object.__setattr__(self, "priors", tuple(self.priors.items()))
        object.__setattr__(self, "priors", tuple(tuple(p) for p in self.priors))
        object.__setattr__(self, "bands", tuple(self.bands))
        super().__post_init__()
        if not isinstance(self.tracer, Tracer):
            raise TypeError(f"Model.tracer must be a Tracer, got {type(self.tracer).__name__}")
        if not self.priors:
            raise ValueError("Model.priors is empty: give at least one free parameter a prior")
        self._check_parts()
        seen = set()
        free_paths = set(self.scalar_paths())
        own = [*parameter_paths(self.tracer), *OFFSET]  # what a band may free for itself
        free_paths |= {f"band.{b}.{p}" for b in self.bands for p in own}
        for item in self.priors:
            if len(item) != 2 or not isinstance(item[0], str) or not isinstance(item[1], Prior):
                raise TypeError(
                    f"Model.priors entries must be (path, Prior) pairs, got {shown(item)}"
                )
            path, prior = item
            if path in seen:
                raise ValueError(f"Model.priors names {path!r} twice")
            seen.add(path)
            value = self.value(path)  # a clear KeyError for a bad path
            if path not in free_paths:  # an array, or a class constant such as a linear
                raise ValueError(  # profile's unit intensity
                    f"{path!r} is not a scalar parameter field of the tracer (it holds "
                    f"{shown(value)}); scalar parameters are {sorted(free_paths)}"
                )
            if not prior.contains(float(value)):
                raise ValueError(
                    f"the starting value of {path!r} ({value}) lies outside its prior {prior!r}"
                )

    def _check_parts(self) -> None:
        from twinlens.kinematics.dispersion import Anisotropy
        from twinlens.likelihood.cosmography import Cosmography
        from twinlens.likelihood.point_source import PointSource

        for name, kind, wanted in (
            ("point_source", PointSource, "a PointSource"),
            ("cosmography", Cosmography, "a Cosmography"),
            ("kinematics", Anisotropy, "an Isotropic, ConstantBeta or OsipkovMerritt"),
        ):
            part = getattr(self, name)
            if part is not None and not isinstance(part, kind):
                raise TypeError(f"Model.{name} must be {wanted}, got {type(part).__name__}")

    # -- names ---------------------------------------------------------------------------

    def scalar_paths(self) -> list[str]:
        """Every scalar parameter: the tracer's, then the point source's, cosmography's and
        the kinematics' (each with its prefix)."""
        paths = parameter_paths(self.tracer)
        for prefix, name in PARTS.items():
            part = getattr(self, name)
            if part is not None:
                paths += [prefix + p for p in parameter_paths(part)]
        return paths

    def value(self, path: str) -> Any:
        """The value at ``path`` (in the tracer, or in the part a prefix names:
        ``point_source.``, ``cosmography.``, ``kinematics.``; a band's own path starts at the
        tracer's value)."""
        band, inner = band_path(path)
        if band is not None:
            if band not in self.bands:
                raise KeyError(f"{path!r}: the model has no band {band!r} (bands: {self.bands})")
            return 0.0 if inner in OFFSET else get_path(self.tracer, inner)
        name, inner = part_path(path)
        if name is not None:
            part = getattr(self, name)
            if part is None:
                raise KeyError(f"{path!r}: the model has no {name.replace('_', ' ')}")
            return get_path(part, inner)
        return get_path(self.tracer, path)

    @property
    def tracer_paths(self) -> tuple[str, ...]:
        """The free parameters of the tracer, in vector order."""
        return tuple(p for p in self.paths if part_path(p)[0] is None)

    @property
    def paths(self) -> tuple[str, ...]:
        """The free parameters, in vector order."""
        return tuple(path for path, _ in self.priors)

    @property
    def n_params(self) -> int:
        """The number of free parameters."""
        return len(self.priors)

    @property
    def labels(self) -> tuple[str, ...]:
        """LaTeX labels of the free parameters (for plots)."""
        return tuple(latex_label(p) for p in self.paths)

    @property
    def start(self) -> np.ndarray:
        """The tracer's own values of the free parameters."""
        return np.array([float(self.value(p)) for p in self.paths])

    # -- vectors -------------------------------------------------------------------------

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """Parameter vectors ``(..., n_params)`` from points of the unit cube (each prior's
        inverse cumulative distribution); ``xp`` is numpy or jax.numpy."""
        u = xp.asarray(u)
        if u.shape[-1] != self.n_params:
            raise ValueError(f"unit-cube points need {self.n_params} coordinates, got {u.shape}")
        columns = [prior.from_unit(u[..., i], xp) for i, (_, prior) in enumerate(self.priors)]
        return xp.stack(columns, axis=-1)

    def to_unit(self, vectors: Any) -> np.ndarray:
        """Points of the unit cube from parameter vectors ``(..., n_params)`` (each prior's
        cumulative distribution; numpy): :meth:`from_unit`'s inverse."""
        vectors = np.asarray(vectors, dtype=float)
        columns = [prior.to_unit(vectors[..., i]) for i, (_, prior) in enumerate(self.priors)]
        return np.stack(columns, axis=-1)

    def log_prior(self, vectors: Any) -> np.ndarray:
        """Log prior density of vectors ``(..., n_params)`` (``-inf`` outside a support)."""
        v = np.asarray(vectors, dtype=float)
        if v.shape[-1] != self.n_params:
            raise ValueError(f"vectors need {self.n_params} entries, got shape {v.shape}")
        total = np.zeros(v.shape[:-1])
        for i, (_, prior) in enumerate(self.priors):
            total = total + prior.log_density(v[..., i])
        return total

    def fixed_key(self) -> tuple:
        """The tracer's value key with each free parameter replaced by the marker ``"free"``:
        what the model is apart from where a search starts (its profiles and fixed
        values)."""
        free = set(self.paths)

        def walk(value: Any, path: str) -> Any:
            if path in free:
                return "free"
            if isinstance(value, tuple):
                return ("tuple", tuple(walk(v, f"{path}[{i}]") for i, v in enumerate(value)))
            if isinstance(value, ValueIdentity):
                prefix = f"{path}." if path else ""
                fields = dataclasses.fields(value)
                named = tuple(
                    (f.name, walk(getattr(value, f.name), prefix + f.name)) for f in fields
                )
                return ("object", (type(value), named))
            return value_key(value, path)

        parts = [
            walk(getattr(self, name), prefix[:-1])
            for prefix, name in PARTS.items()
            if getattr(self, name) is not None
        ]
        if not parts:
            return walk(self.tracer, "")
        if len(parts) == 1 and self.point_source is not None:  # as before the other parts
            return (walk(self.tracer, ""), parts[0])
        return (walk(self.tracer, ""), *parts)

    def instance(self, vector: Any) -> Tracer:
        """The tracer at ``vector`` (fixed values stay as they are; raises a clear error for
        a value outside a profile's valid range)."""
        v = np.asarray(vector, dtype=float).reshape(-1)
        if v.size != self.n_params:
            raise ValueError(f"vector needs {self.n_params} entries, got {v.size}")
        values = {
            p: float(x)
            for p, x in zip(self.paths, v, strict=True)
            if part_path(p)[0] is None and not p.startswith("band.")
        }
        return set_paths(self.tracer, values, False)

    def band_instance(self, vector: Any, band: str) -> Tracer:
        """The tracer that ``band`` sees at ``vector``: :meth:`instance` with the band's own
        parameters in place of the shared ones."""
        v = np.asarray(vector, dtype=float).reshape(-1)
        own = {}
        for p, x in zip(self.paths, v, strict=True):
            name, inner = band_path(p)
            if name == band:
                own[inner] = float(x)
        return set_paths_offset(self.instance(v), own)

    def point_source_instance(self, vector: Any) -> Any:
        """The point source at ``vector`` (None when the model has none)."""
        return self.part_instance("point_source", vector)

    def part_instance(self, name: str, vector: Any) -> Any:
        """The part ``name`` (``"point_source"``, ``"cosmography"``, ``"kinematics"``) at
        ``vector``, None when the model has none."""
        part = getattr(self, name)
        if part is None:
            return None
        v = np.asarray(vector, dtype=float).reshape(-1)
        values = {}
        for p, x in zip(self.paths, v, strict=True):
            owner, inner = part_path(p)
            if owner == name:
                values[inner] = float(x)
        return set_paths(part, values, False)

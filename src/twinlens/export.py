"""Lens models to and from COOLEST, the lensing community's standard JSON format.

:func:`to_coolest` writes a :class:`~twinlens.lensing.tracer.Tracer` (point estimates, optionally
posterior statistics, and the dataset it was fitted to) as a COOLEST template;
:func:`from_coolest` reads the point estimates of one back into a tracer. Both need the
``coolest`` package (``pip install "twinlens[fit]"``), imported only when they are called.

Profiles
--------
``SIE``
    COOLEST ``SIE``: ``theta_E = einstein_radius``.
``SIS``
    COOLEST ``SIE`` with ``q = 1`` and ``phi = 0``, both marked fixed.
``PowerLaw``
    COOLEST ``PEMD``: ``theta_E = einstein_radius``, ``gamma = slope``.
``ExternalShear``
    COOLEST ``ExternalShear``, in a ``MassField`` entity of its own:
    ``gamma_ext = hypot(gamma_1, gamma_2)`` and ``phi_ext = psi + 90`` degrees, ``psi =
    arctan2(gamma_2, gamma_1) / 2`` (lenstronomy's ``psi_ext``). COOLEST fixes the shear's
    origin at (0, 0): a shear with another origin is refused.
``MassSheet``
    COOLEST ``ConvergenceSheet`` (a ``MassField``): ``kappa_s = kappa``; centre (0, 0) only.
``Sersic``, ``Exponential`` (and their linear variants)
    COOLEST ``Sersic``. COOLEST uses the approximation ``b = 1.9992 n - 0.3271`` where we use
    the exact ``b_n``; the profiles are equal at every point when ``theta_eff = R_e (b /
    b_n)^n`` and ``I_eff = intensity exp(b_n - b)`` (the mapping :mod:`twinlens.convert` uses
    for lenstronomy's Sersic, which has the same approximation). COOLEST allows ``0.5 <= n <=
    10`` and ``I_eff >= 0``. A linear profile (intensity solved by the fit) is written with
    ``I_eff`` null, and read back as a linear profile; write ``tracer.with_intensities(...)``
    to record the solved intensities. An ``Exponential`` is a Sersic with ``n = 1`` (fixed).
``MassSum``
    Its parts, one COOLEST profile each.

Every other mass profile is refused with a ``ValueError`` that names it. Light profiles that
COOLEST cannot describe (``GaussianLight``, ``MGELight``, ``GaussianBasis``, ``CoreSersic``
and their linear variants) are skipped with a warning naming each one, and listed under
``meta["twinlens"]["skipped_light_profiles"]``; ``unsupported_light="raise"`` refuses them.

Conventions (checked against COOLEST's own profile code, ``coolest.api.profiles``)
-------------------------------------------------------------------------------------
Both use ``x`` to the right and ``y`` up, in arcsec (``centre`` is ``(center_x,
center_y)``). Axis ratios agree: ``q = (1 - |e|) / (1 + |e|)`` for our ``ell_comps = (e1,
e2)``. Our major-axis angle ``theta = arctan2(e2, e1) / 2`` is counter-clockwise from +x;
COOLEST's ``phi`` is in degrees counter-clockwise from +y, in ``(-90, 90]``, so
``phi = theta + 90`` degrees, folded, and ``theta = phi - 90`` degrees. Radii (``theta_E``,
``theta_eff``) are on the intermediate axis in both: ``kappa_SIE = theta_E / (2 sqrt(q x'^2
+ y'^2 / q))``, ``x'`` along the major axis.

Entities
--------
Lens galaxy ``i`` becomes the COOLEST ``Galaxy`` ``"lens i"`` (mass and light); each of its
shears and sheets a ``MassField``; source galaxy ``j`` the ``Galaxy`` ``"source j"`` (light;
a source's mass, which a tracer ignores, is not written). Redshifts are written when given.
``meta["twinlens"]["profiles"]`` maps each COOLEST profile id to our profile's path and class,
so :func:`from_coolest` rebuilds the same galaxies (a ``MassSum`` comes back as its parts).
For a file without that record, every entity becomes a galaxy of its own: a lens if it has
mass; a light-only galaxy is a lens-plane galaxy if its redshift is at most the farthest
lens's, and otherwise (or with no redshifts) a source. Each galaxy read back carries its
entity's redshift (``Galaxy.redshift``). A file written here records the tracer's class
(``meta["twinlens"]["tracer"]``) and, for a
:class:`~twinlens.lensing.multiplane.MultiPlaneTracer`, its flat LambdaCDM cosmology in COOLEST's
``cosmology``, and reads back as that class; in another file, lenses at more than one redshift
make a multi-plane tracer whose ``z_source`` is the sources' (they must share one), on the
file's cosmology or the default one.

Priors
------
With ``priors`` (the fit's, e.g. :attr:`twinlens.model.Model.priors`) each COOLEST parameter
that is an affine function of one free parameter of ours gets the image of its prior when
COOLEST has that kind: ``UniformPrior`` and ``GaussianPrior``. COOLEST has no log-uniform or
truncated Gaussian prior, and the prior ours induce on a nonlinear parameter (``q``, ``phi``,
``gamma_ext``, ``phi_ext``; ``theta_eff`` with ``n`` free) has no closed form: those get a
prior of type null whose ``description`` names ours and says why. A parameter no free
parameter of ours reaches is marked ``fixed``, except a solved amplitude ``I_eff``.

Pixelised sources
-----------------
A source galaxy's :class:`~twinlens.inversion.Pixelization` is written from its solved
reconstruction (the ``reconstruction`` argument) as COOLEST's ``PixelatedRegularGrid`` (a uniform
rectangular mesh) or ``IrregularGrid`` (any other mesh), its values in a FITS file next to the
JSON; :func:`from_coolest` skips such a light profile, with a warning.

Observation
-----------
With ``dataset`` (an :class:`~twinlens.imaging.dataset.Imaging`), the data, noise map, PSF kernel
and (if any) mask are written as FITS files next to the JSON (``<name>_data.fits``,
``<name>_noise_map.fits``, ``<name>_psf.fits``, ``<name>_mask.fits``, replacing existing
ones), rows in our order (row 0 at the bottom, as COOLEST reads them). The observation's field
of view is the grid's. Without a dataset the observation has no pixels and the instrument's
``pixel_size`` is a placeholder 1.0 (COOLEST requires a positive one), as the metadata notes;
COOLEST's reader then needs ``check_external_files=False`` (it otherwise asks for a data FITS
file). COOLEST (0.1.11) reads a FITS array's shape as ``(num_pix_x, num_pix_y)``, transposed
from the ``(ny, nx)`` its coordinates and plots use, so its file check refuses non-square
images that are written correctly.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity, ellipticity_from_axis_ratio
from twinlens.kernels.light import sersic_b, sersic_b_capaccioli, sersic_with_other_b
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.messages import shown
from twinlens.model.paths import get_path
from twinlens.model.priors import GaussianPrior, Prior, UniformPrior
from twinlens.posterior_stats import Summary, fold_angle, summarise
from twinlens.profiles.composite import MassSum
from twinlens.profiles.isothermal import SIE, SIS
from twinlens.profiles.light import Exponential, LinearExponential, LinearSersic, Sersic
from twinlens.profiles.power_law import PowerLaw
from twinlens.profiles.simple import ExternalShear, MassSheet
from twinlens.user_warnings import warn_user

__all__ = ["NotDescribable", "from_coolest", "to_coolest"]


class NotDescribable(ValueError):
    """The model holds something COOLEST's format has no place for (a profile, a cosmology,
    a value outside COOLEST's range): the model is fine, the format cannot say it."""


_INSTALL = 'pip install "twinlens[fit]"'
_MODES = ("MAP", "MOCK")
_UNSUPPORTED_LIGHT = ("skip", "raise")
_MASS_SUPPORTED = "SIS, SIE, PowerLaw, ExternalShear, MassSheet (and MassSum of them)"
_PLACEHOLDER_PIXEL_SIZE = 1.0


def _load_coolest() -> SimpleNamespace:
    try:
        import coolest
        from coolest.template import lazy
        from coolest.template.classes import probabilities
        from coolest.template.json import JSONSerializer
        from coolest.template.standard import COOLEST
    except ImportError as err:
        raise ImportError(
            f"COOLEST export and import need the coolest package: {_INSTALL}"
        ) from err
    return SimpleNamespace(
        lazy=lazy,
        probabilities=probabilities,
        COOLEST=COOLEST,
        JSONSerializer=JSONSerializer,
        version=coolest.__version__,
    )


# -- conventions, vectorised over numpy arrays (posterior samples) ----------------------------


def _phi_from_theta(theta_rad: Any) -> Any:
    """COOLEST's angle (degrees from +y, in ``(-90, 90]``) of a direction ``theta_rad``
    (radians from +x)."""
    return fold_angle(np.degrees(theta_rad) + 90.0)


def _theta_from_phi(phi_deg: float) -> float:
    return math.radians(phi_deg - 90.0)


def _q(e1: Any, e2: Any) -> Any:
    return axis_ratio_from_ellipticity(e1, e2)[0]


def _phi(e1: Any, e2: Any) -> Any:
    return _phi_from_theta(axis_ratio_from_ellipticity(e1, e2)[1])


def _gamma_ext(g1: Any, g2: Any) -> Any:
    return np.hypot(g1, g2)


def _phi_ext(g1: Any, g2: Any) -> Any:
    return _phi_from_theta(0.5 * np.arctan2(g2, g1))


def _theta_eff(radius: Any, n: Any) -> Any:
    # COOLEST's Sersic uses Capaccioli's b_n (as coolest.api.profiles.light)
    return sersic_with_other_b(radius, 1.0, n, sersic_b(n), sersic_b_capaccioli(n))[0]


def _i_eff(intensity: Any, n: Any) -> Any:
    return sersic_with_other_b(1.0, intensity, n, sersic_b(n), sersic_b_capaccioli(n))[1]


def _same(value: Any) -> Any:
    return value


def _ell_comps(q: float, phi_deg: float) -> tuple[float, float]:
    e1, e2 = ellipticity_from_axis_ratio(q, _theta_from_phi(phi_deg))
    return float(e1), float(e2)


# -- what each of our profiles becomes -------------------------------------------------------


@dataclass(frozen=True)
class _Param:
    """One COOLEST parameter: a function of some of our parameters (named by path)."""

    name: str
    inputs: tuple[str, ...]
    fn: Callable[..., Any]
    affine_in: tuple[str, ...] = ()  # inputs it is affine in when the others are fixed
    angle: bool = False  # degrees, defined modulo 180
    fixed: bool = False  # a constant of our profile, not a parameter


@dataclass(frozen=True)
class _Export:
    path: str  # of our profile, e.g. "lenses[0].mass[1]"
    profile: Any
    ctype: str  # COOLEST's profile type
    model: str  # "mass" or "light"
    field: bool  # a MassField entity of its own
    params: tuple[_Param, ...]

    @property
    def galaxy(self) -> str:
        return self.path.split(".", 1)[0]


def _copy(name: str, path: str) -> _Param:
    return _Param(name, (path,), _same, affine_in=(path,))


def _constant(name: str, value: float) -> _Param:
    return _Param(name, (), lambda: value, fixed=True)


def _centre(path: str) -> tuple[_Param, ...]:
    return _copy("center_x", f"{path}.centre[0]"), _copy("center_y", f"{path}.centre[1]")


def _shape(path: str) -> tuple[_Param, ...]:
    e = (f"{path}.ell_comps[0]", f"{path}.ell_comps[1]")
    return _Param("q", e, _q), _Param("phi", e, _phi, angle=True)


def _at_origin(path: str, profile: Any, field: str, ctype: str) -> None:
    value = tuple(float(v) for v in getattr(profile, field))
    if value != (0.0, 0.0):
        raise NotDescribable(
            f"{path} is a {type(profile).__name__} with {field} {value}: COOLEST's {ctype} has "
            "its origin fixed at (0, 0)"
        )


def _mass_export(path: str, profile: Any) -> _Export:
    kind = type(profile)
    theta_e = _copy("theta_E", f"{path}.einstein_radius")
    if kind is SIE:
        return _Export(
            path, profile, "SIE", "mass", False, (theta_e, *_shape(path), *_centre(path))
        )
    if kind is SIS:
        shape = (_constant("q", 1.0), _constant("phi", 0.0))
        return _Export(path, profile, "SIE", "mass", False, (theta_e, *shape, *_centre(path)))
    if kind is PowerLaw:
        params = (_copy("gamma", f"{path}.slope"), theta_e, *_shape(path), *_centre(path))
        return _Export(path, profile, "PEMD", "mass", False, params)
    if kind is ExternalShear:
        _at_origin(path, profile, "origin", "ExternalShear")
        g = (f"{path}.gamma_1", f"{path}.gamma_2")
        params = (_Param("gamma_ext", g, _gamma_ext), _Param("phi_ext", g, _phi_ext, angle=True))
        return _Export(path, profile, "ExternalShear", "mass", True, params)
    if kind is MassSheet:
        _at_origin(path, profile, "centre", "ConvergenceSheet")
        params = (_copy("kappa_s", f"{path}.kappa"),)
        return _Export(path, profile, "ConvergenceSheet", "mass", True, params)
    raise NotDescribable(
        f"{path} is a {kind.__name__}, which COOLEST cannot describe; the mass profiles "
        f"exported are {_MASS_SUPPORTED}"
    )


def _exp_theta_eff(radius: Any) -> Any:
    return _theta_eff(radius, 1.0)


def _exp_i_eff(intensity: Any) -> Any:
    return _i_eff(intensity, 1.0)


def _light_export(path: str, profile: Any) -> _Export | None:
    kind = type(profile)
    if kind not in (Sersic, LinearSersic, Exponential, LinearExponential):
        return None
    r, n, i = (f"{path}.{f}" for f in ("effective_radius", "sersic_index", "intensity"))
    params: tuple[_Param, ...]
    if kind in (Exponential, LinearExponential):
        params = (_Param("theta_eff", (r,), _exp_theta_eff, affine_in=(r,)), _constant("n", 1.0))
        amplitude = _Param("I_eff", (i,), _exp_i_eff, affine_in=(i,))
    else:
        params = (_Param("theta_eff", (r, n), _theta_eff, affine_in=(r,)), _copy("n", n))
        amplitude = _Param("I_eff", (i, n), _i_eff, affine_in=(i,))
    if not profile.n_linear:  # a linear profile's I_eff stays null
        params = (amplitude, *params)
    return _Export(
        path, profile, "Sersic", "light", False, (*params, *_shape(path), *_centre(path))
    )


def _flatten(path: str, profile: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(profile, MassSum):
        for k, part in enumerate(profile.profiles):
            yield from _flatten(f"{path}.profiles[{k}]", part)
    else:
        yield path, profile


def _collect(tracer: Tracer, unsupported_light: str) -> tuple[list[_Export], dict[str, str]]:
    exports: list[_Export] = []
    skipped: dict[str, str] = {}
    linear: list[str] = []
    for role, galaxies in (("lenses", tracer.lenses), ("sources", tracer.sources)):
        for i, galaxy in enumerate(galaxies):
            if role == "lenses":
                for j, mass in enumerate(galaxy.mass):
                    for path, part in _flatten(f"lenses[{i}].mass[{j}]", mass):
                        exports.append(_mass_export(path, part))
            elif galaxy.mass:
                warn_user(
                    f"sources[{i}] has mass profiles, which a Tracer ignores (one lens plane); "
                    "they are not written to COOLEST",
                    UserWarning,
                )
            if galaxy.pixelization is not None:
                ctype = _grid_type(galaxy.pixelization)
                path = f"{role}[{i}].pixelization"
                exports.append(_Export(path, galaxy.pixelization, ctype, "light", False, ()))
            for j, light in enumerate(galaxy.light):
                path = f"{role}[{i}].light[{j}]"
                export = _light_export(path, light)
                if export is None:
                    name = type(light).__name__
                    if unsupported_light == "raise":
                        raise NotDescribable(
                            f"{path} is a {name}, which COOLEST cannot describe (its analytic "
                            "light profiles are Sersic ones); pass unsupported_light='skip' "
                            "to leave it out"
                        )
                    skipped[path] = name
                    continue
                if light.n_linear:
                    linear.append(f"{path} ({type(light).__name__})")
                exports.append(export)
    if skipped:
        listed = ", ".join(f"{p} ({n})" for p, n in skipped.items())
        warn_user(
            f"COOLEST has no equivalent of these light profiles, left out of the file: {listed}",
            UserWarning,
        )
    if linear:
        warn_user(
            f"linear light profiles have no intensity of their own, so their I_eff is written "
            f"null: {', '.join(linear)}; export tracer.with_intensities(...) to record the "
            "intensities a fit solved",
            UserWarning,
        )
    return exports, skipped


# -- posterior statistics ---------------------------------------------------------------------


def _coolest_statistics(summary: Summary) -> dict[str, float]:
    """COOLEST's ``PosteriorStatistics`` keywords for a 16th-84th percentile summary."""
    return {
        "median": summary.median,
        "percentile_16th": summary.lower,
        "percentile_84th": summary.upper,
        "mean": summary.mean,
    }


class _Posterior:
    """Our parameters' posterior (samples or summaries), converted parameter by parameter."""

    def __init__(self, posterior: Mapping[str, Any], tracer: Tracer) -> None:
        if not isinstance(posterior, Mapping):
            raise TypeError(
                "posterior must map parameter paths to (median, p16, p84, mean) tuples or to "
                f"samples, got {type(posterior).__name__}"
            )
        self.samples: dict[str, np.ndarray] = {}
        self.summaries: dict[str, tuple[float, float, float, float]] = {}
        self.size: int | None = None
        for key, value in posterior.items():
            target = get_path(tracer, key)  # a KeyError naming the tracer's parameters
            if isinstance(target, bool) or not isinstance(target, (int, float)):
                raise ValueError(
                    f"posterior[{key!r}]: the path names a {type(target).__name__}, not a "
                    "scalar parameter"
                )
            if isinstance(value, tuple):
                self.summaries[key] = self._summary(key, value)
            else:
                self.samples[key] = self._samples(key, value)
        self.used: set[str] = set()
        self.unconverted: list[str] = []

    @staticmethod
    def _summary(key: str, value: tuple) -> tuple[float, float, float, float]:
        if len(value) != 4:
            raise ValueError(
                f"posterior[{key!r}]: a summary is a tuple (median, p16, p84, mean), got "
                f"{len(value)} values"
            )
        median, p16, p84, mean = (float(v) for v in value)
        if not all(map(math.isfinite, (median, p16, p84, mean))) or not p16 <= median <= p84:
            raise ValueError(
                f"posterior[{key!r}]: need finite p16 <= median <= p84, got median {median}, "
                f"p16 {p16}, p84 {p84}"
            )
        return median, p16, p84, mean

    def _samples(self, key: str, value: Any) -> np.ndarray:
        arr = np.asarray(value, dtype=float)
        if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
            raise ValueError(
                f"posterior[{key!r}]: samples must be a non-empty 1-D array of finite numbers, "
                f"got shape {arr.shape}"
            )
        if self.size is None:
            self.size = arr.size
        elif arr.size != self.size:
            raise ValueError(
                f"posterior[{key!r}] has {arr.size} samples and another entry {self.size}: "
                "samples must be joint draws, one array length for every parameter"
            )
        return arr

    def stats(self, param: _Param, tracer: Tracer, where: str) -> dict[str, float] | None:
        free = [p for p in param.inputs if p in self.samples or p in self.summaries]
        if not free:
            return None
        self.used.update(free)

        def value(p: str) -> Any:
            return float(get_path(tracer, p))

        if all(p in self.samples for p in free):
            args = [self.samples[p] if p in self.samples else value(p) for p in param.inputs]
            converted = np.broadcast_to(param.fn(*args), (self.size or 1,))
            return _coolest_statistics(summarise(converted, angle=param.angle))
        if len(free) == 1 and free[0] in param.affine_in:
            (free_path,) = free

            def at(x: float) -> float:
                return float(param.fn(*[x if p == free_path else value(p) for p in param.inputs]))

            median, p16, p84, mean = (at(v) for v in self.summaries[free_path])
            lo, hi = sorted((p16, p84))
            return _coolest_statistics(Summary(median, lo, hi, mean))
        self.unconverted.append(f"{where} {param.name} (from {', '.join(free)})")
        return None

    def report(self) -> None:
        if self.unconverted:
            warn_user(
                "no posterior statistics written for "
                + "; ".join(self.unconverted)
                + ": summaries (median, p16, p84, mean) convert only to parameters that are an "
                "affine function of one of ours; give samples for these",
                UserWarning,
            )
        unused = [p for p in (*self.samples, *self.summaries) if p not in self.used]
        if unused:
            warn_user(
                f"posterior entries that no COOLEST parameter depends on (not written): {unused}",
                UserWarning,
            )


# -- priors ----------------------------------------------------------------------------------


class _Priors:
    """Our priors on free parameters, as priors of COOLEST's parameters.

    A COOLEST parameter that is an affine function of one free parameter of ours (the others
    fixed) gets the image of its prior when COOLEST has that kind: ``UniformPrior`` (ours and
    COOLEST's, bounds mapped) and ``GaussianPrior`` (COOLEST's ``mean`` and ``width``). COOLEST
    has no log-uniform or truncated Gaussian prior, and the prior that ours induce on a
    nonlinear function (``q`` and ``phi`` of ``ell_comps``, ``gamma_ext`` and ``phi_ext`` of
    the shear, ``theta_eff`` when ``n`` is free too) has no closed form: those parameters get a
    prior of type null whose ``description`` says so and names our priors. A parameter with no
    free input keeps COOLEST's empty prior and is marked fixed, except an amplitude ``I_eff``,
    which the fit solved linearly (its prior stays empty, and it is not fixed)."""

    def __init__(self, priors: Any, tracer: Tracer) -> None:
        try:
            items = dict(priors)
        except (TypeError, ValueError):
            raise TypeError(
                "priors must map parameter paths to twinlens priors (a dict, or Model.priors), "
                f"got {type(priors).__name__}"
            ) from None
        for key, prior in items.items():
            get_path(tracer, key)  # a KeyError naming the tracer's parameters
            if not isinstance(prior, Prior):
                raise TypeError(
                    f"priors[{key!r}] must be a twinlens prior (twinlens.model), got "
                    f"{type(prior).__name__}"
                )
        self.priors: dict[str, Prior] = items
        self.used: set[str] = set()

    def coolest(self, proba: Any, param: _Param, tracer: Tracer) -> Any:
        """COOLEST's prior of ``param`` (from the module ``proba``), or None for none."""
        free = [p for p in param.inputs if p in self.priors]
        if param.name == "I_eff" and param.inputs[0] not in free:
            return None  # an amplitude the fit solved (a linear profile's): no prior
        if not free:
            return None
        self.used.update(free)
        named = " and ".join(f"{self.priors[p]!r} on {p}" for p in free)
        if len(free) == 1 and free[0] in param.affine_in:
            (path,) = free
            prior = self.priors[path]
            fixed = {p: float(get_path(tracer, p)) for p in param.inputs if p != path}

            def at(x: float) -> float:
                return float(param.fn(*[x if p == path else fixed[p] for p in param.inputs]))

            if isinstance(prior, UniformPrior):
                lo, hi = sorted((at(prior.lower), at(prior.upper)))
                return proba.UniformPrior(min_value=lo, max_value=hi)
            if isinstance(prior, GaussianPrior):
                mean = at(prior.mean)
                return proba.GaussianPrior(
                    mean=mean, width=abs(at(prior.mean + prior.sigma) - mean)
                )
            why = f"COOLEST has no {type(prior).__name__}"
        else:
            why = f"the prior induced on {param.name} has no COOLEST form"
        kind = "priors" if len(free) > 1 else "prior"
        return proba.Prior(None, description=f"twinlens {kind} {named}; {why}")

    def fixed(self, param: _Param) -> bool:
        """Whether the fit held ``param`` fixed: no input has a prior, and it is no amplitude
        (a linear profile's intensity is solved, not fixed)."""
        return param.name != "I_eff" and not any(p in self.priors for p in param.inputs)

    def report(self) -> None:
        unused = [p for p in self.priors if p not in self.used]
        if unused:
            warn_user(
                f"priors on parameters that no COOLEST parameter depends on (not written): "
                f"{unused}",
                UserWarning,
            )


# -- files -----------------------------------------------------------------------------------


def _json_path(path: Any, must_exist: bool) -> Path:
    try:
        out = Path(os.fspath(path)).expanduser().absolute()
    except TypeError:
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__}") from None
    if out.suffix != ".json":
        raise ValueError(f"a COOLEST file is a .json file; got {str(path)!r}")
    if must_exist and not out.is_file():
        raise FileNotFoundError(f"no COOLEST file at {str(out)!r}")
    if not must_exist and not out.parent.is_dir():
        raise FileNotFoundError(f"directory {str(out.parent)!r} does not exist (for {out.name})")
    return out


def _observation(lazy: Any, dataset: Any, out: Path) -> tuple[Any, Any, Any, dict[str, Any]]:
    """``(observation, instrument, likelihoods, metadata)``, writing FITS files by ``out``."""
    if dataset is None:
        note = (
            "no dataset was given: the observation has no pixels, and the instrument's "
            f"pixel_size ({_PLACEHOLDER_PIXEL_SIZE}) is a placeholder"
        )
        instrument = lazy.Instrument(pixel_size=_PLACEHOLDER_PIXEL_SIZE)
        return lazy.Observation(), instrument, None, {"observation": note}
    from twinlens.imaging import fits_io
    from twinlens.imaging.dataset import Imaging

    if not isinstance(dataset, Imaging):
        raise TypeError(f"dataset must be an Imaging, got {type(dataset).__name__}")
    grid = dataset.grid
    scale = float(grid.pixel_scale)
    files: dict[str, str] = {}

    def pixels(name: str, array: np.ndarray, centre: tuple[float, float]) -> Any:
        file = f"{out.stem}_{name}.fits"
        fits_io.write_image(out.parent / file, array, scale, overwrite=True)
        files[name] = file
        ny, nx = array.shape
        return lazy.PixelatedRegularGrid(
            file,
            field_of_view_x=(centre[0] - nx * scale / 2.0, centre[0] + nx * scale / 2.0),
            field_of_view_y=(centre[1] - ny * scale / 2.0, centre[1] + ny * scale / 2.0),
            num_pix_x=nx,
            num_pix_y=ny,
            check_fits_file=False,
        )

    origin = (float(grid.origin[0]), float(grid.origin[1]))
    observation = lazy.Observation(
        pixels=pixels("data", dataset.data, origin),
        noise=lazy.NoiseMap(noise_map=pixels("noise_map", dataset.noise_map, origin)),
    )
    psf = lazy.PixelatedPSF(
        pixels=pixels("psf", dataset.psf.kernel, (0.0, 0.0)),
        description="twinlens PSF kernel at the data's pixel scale, normalised to unit sum",
    )
    likelihoods = None
    if grid.mask is not None:
        mask = pixels("mask", np.asarray(grid.mask, dtype=float), origin)
        likelihoods = lazy.DataLikelihoodList(lazy.ImagingDataLikelihood(mask=mask))
    instrument = lazy.Instrument(pixel_size=scale, psf=psf)
    meta = {"fits_files": files, "sub_size": _sub_size_note(grid.sub_size)}
    return observation, instrument, likelihoods, meta


def _sub_size_note(sub_size: Any) -> Any:
    if isinstance(sub_size, np.ndarray):
        return "adaptive (per pixel)"
    return int(sub_size)


# -- to COOLEST ------------------------------------------------------------------------------


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
        tuple ``(median, p16, p84, mean)``. Samples are converted to COOLEST's parameters
        first and summarised after (angles unwrapped about their circular mean, the median
        folded into (-90, 90] and the percentiles and mean shifted with it, so they may lie
        just outside it). A summary converts only to a COOLEST parameter that is an affine
        function of that one parameter of ours with the others fixed (a centre, ``theta_E``,
        ``gamma``, ``n``, and ``theta_eff`` or ``I_eff`` when ``n`` is fixed); other
        parameters are left without statistics, with a warning. Paths that no exported
        parameter uses are reported in a warning.
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
        pixelised source). Written as the source galaxy's COOLEST light: a
        ``PixelatedRegularGrid`` for a uniform :class:`~twinlens.inversion.Rectangular`
        mesh (its vertices are the pixel centres, which COOLEST interpolates bilinearly, as
        ours does), else an ``IrregularGrid`` of the mesh's vertices and values (a FITS table
        ``x, y, z``; COOLEST interpolates it on the vertices' Delaunay triangles, as a
        :class:`~twinlens.inversion.Delaunay` mesh does, and as an approximation of a
        :class:`~twinlens.inversion.RectangularAdaptDensity` lattice's bilinear cells).
        The values are the reconstruction's, in the data's units per image pixel.

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
    lazy = c.lazy
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
    out = _json_path(path, must_exist=False)
    exports, skipped = _collect(tracer, unsupported_light)
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
    post = None if posterior is None else _Posterior(posterior, tracer)
    prior_map = None if priors is None else _Priors(priors, tracer)

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

    recorded: dict[str, dict[str, str]] = {}
    grid_files: dict[str, str] = {}
    for entity, (mass, light) in zip(entity_list, owners, strict=True):
        light_model = getattr(entity, "light_model", [])
        for model, exported in ((entity.mass_model, mass), (light_model, light)):
            for profile, export in zip(model, exported, strict=True):
                recorded[profile.id] = {"path": export.path, "type": type(export.profile).__name__}
                if export.ctype in _GRID_TYPES:
                    grid_files[export.path] = _fill_grid(profile, export, reconstruction, out)
                else:
                    _fill(c, profile, export, tracer, post, prior_map)
    if post is not None:
        post.report()
    if prior_map is not None:
        prior_map.report()

    observation, instrument, likelihoods, obs_meta = _observation(lazy, dataset, out)
    from twinlens import __version__

    meta: dict[str, Any] = {
        "twinlens": {
            "version": __version__,
            "profiles": recorded,
            "skipped_light_profiles": skipped,
            **obs_meta,
        }
    }
    if grid_files:
        meta["twinlens"]["pixelised_sources"] = grid_files
    meta["twinlens"]["tracer"] = type(tracer).__name__  # from_coolest rebuilds the same class
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
    serializer = c.JSONSerializer(
        str(out.with_suffix("")), obj=document, check_external_files=False
    )
    serializer.dump_simple()
    return out


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


#: COOLEST's pixelated light profiles (a pixelised source's)
_GRID_TYPES = ("PixelatedRegularGrid", "IrregularGrid")


def _grid_type(pixelization: Any) -> str:
    from twinlens.inversion.meshes import Rectangular

    # a uniform lattice only: an adaptive one's pixels are not on COOLEST's regular grid
    return "PixelatedRegularGrid" if type(pixelization.mesh) is Rectangular else "IrregularGrid"


def _fill_grid(profile: Any, export: _Export, reconstruction: Any, out: Path) -> str:
    """Write a pixelised source's values as a FITS file by ``out`` and point ``profile``'s
    ``pixels`` at it; returns the file's name."""
    reconstruction = getattr(reconstruction, "inversion", reconstruction)  # a FitImaging's
    vertices = np.asarray(reconstruction.source_vertices, dtype=float)
    values = np.asarray(reconstruction.reconstruction, dtype=float)
    mesh = reconstruction.pixelization.mesh
    if _grid_type(reconstruction.pixelization) != export.ctype or len(values) != len(vertices):
        raise ValueError(
            f"reconstruction is of a {type(mesh).__name__} mesh with {len(vertices)} vertices, "
            f"not of {export.path} ({type(export.profile.mesh).__name__})"
        )
    file = f"{out.stem}_{export.path.replace('[', '_').replace('].', '_')}.fits"
    pixels = profile.parameters["pixels"]
    if export.ctype == "PixelatedRegularGrid":
        from twinlens.imaging import fits_io

        ny, nx = mesh.shape
        xs, ys = vertices[:, 0].reshape(ny, nx)[0], vertices[:, 1].reshape(ny, nx)[:, 0]
        dx, dy = (xs[-1] - xs[0]) / (nx - 1), (ys[-1] - ys[0]) / (ny - 1)
        fits_io.write_image(out.parent / file, values.reshape(ny, nx), None, overwrite=True)
        pixels.set_grid(
            file,
            field_of_view_x=(float(xs[0] - dx / 2), float(xs[-1] + dx / 2)),
            field_of_view_y=(float(ys[0] - dy / 2), float(ys[-1] + dy / 2)),
            num_pix_x=nx,
            num_pix_y=ny,
            check_fits_file=False,
        )
    else:
        from astropy.io import fits

        xyz = zip("xyz", (*vertices.T, values), strict=True)
        columns = [fits.Column(name, "D", array=a) for name, a in xyz]
        fits.BinTableHDU.from_columns(columns).writeto(out.parent / file, overwrite=True)
        pixels.set_grid(
            file,
            field_of_view_x=(float(vertices[:, 0].min()), float(vertices[:, 0].max())),
            field_of_view_y=(float(vertices[:, 1].min()), float(vertices[:, 1].max())),
            num_pix=len(values),
            check_fits_file=False,
        )
    return file


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


# -- from COOLEST ----------------------------------------------------------------------------

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

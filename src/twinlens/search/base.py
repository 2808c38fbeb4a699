"""What every search shares: the objective it explores, the result it returns, and its registry.

An :class:`Objective` binds a :class:`~twinlens.model.Model` (priors and the unit-cube
transform) to an :class:`~twinlens.likelihood.ImagingLikelihood` on one backend. The searches use
only the small interface of :class:`ObjectiveLike`, so any object with the same methods (an
analytic toy likelihood in the tests, say) can be searched too.

Every search runs by :meth:`Search.run`, with the same arguments for each, and returns a
:class:`SearchResult`: equal-weight posterior samples (or the optimum, for an optimiser), the
best point found, the evidence when the search gives one, and diagnostics (each search's class
notes say which).
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Protocol

import numpy as np

from twinlens.backend import resolve_backend
from twinlens.fields import key_digest, result_digest, value_digest
from twinlens.likelihood.batched import ImagingLikelihood
from twinlens.likelihood.multiband import MultiBandLikelihood
from twinlens.messages import shown
from twinlens.model.model import Model

__all__ = [
    "FIT_INSTALL_HINT",
    "SEARCHES",
    "Objective",
    "ObjectiveLike",
    "Search",
    "SearchResult",
    "log_posterior",
    "prior_and_likelihood",
    "register",
    "require",
    "search_from_config",
]

FIT_INSTALL_HINT = 'pip install "twinlens[fit]"'


def require(module: str, search: str) -> ModuleType:
    """Import ``module`` for the ``search`` search, or raise ImportError naming the install."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"the {search} search needs the {module.split('.')[0]} package, which is not "
            f"installed: {FIT_INSTALL_HINT}"
        ) from err


def hdf5_checkpoint_readable(path: Path, search: str, group: str, attribute: str) -> bool:
    """Whether ``path`` is an HDF5 file whose ``group`` holds ``attribute`` (the mark of a
    complete checkpoint of the ``search`` library)."""
    if not path.exists():
        return False
    h5py = require("h5py", search)
    try:
        with h5py.File(path, "r") as f:
            return group in f and attribute in f[group].attrs
    except OSError:
        return False


# -- the objective ---------------------------------------------------------------------------


class ObjectiveLike(Protocol):
    """What a search needs of its objective (:class:`Objective` is the real one).

    Vectors are numpy arrays ``(n, n_params)``; ``from_unit`` also takes ``jax.numpy`` as
    ``xp`` (for the JAX searches), and ``jax_log_likelihood`` is a JAX-traceable ``log L`` of
    one vector, needed only by the JAX searches.
    """

    @property
    def backend(self) -> str:
        """The backend the likelihood runs on."""
        ...

    @property
    def paths(self) -> tuple[str, ...]:
        """The free parameters, in vector order."""
        ...

    @property
    def n_params(self) -> int:
        """The number of free parameters."""
        ...

    @property
    def start(self) -> np.ndarray:
        """A starting vector inside every prior."""
        ...

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """Vectors from points of the unit cube (each prior's inverse CDF)."""
        ...

    def to_unit(self, vectors: Any) -> np.ndarray:
        """Points of the unit cube from vectors (each prior's CDF; numpy)."""
        ...

    def log_prior(self, vectors: Any) -> np.ndarray:
        """``log`` prior density of each vector."""
        ...

    def log_likelihood(self, vectors: Any) -> np.ndarray:
        """``log L`` of each vector."""
        ...

    def log_posterior(self, vectors: Any) -> np.ndarray:
        """Log prior plus ``log L`` of each vector (unnormalised)."""
        ...

    def jax_log_likelihood(self, vector: Any) -> Any:
        """A JAX-traceable ``log L`` of one vector (for the JAX searches)."""
        ...


@dataclass(frozen=True)
class Objective:
    """A model's priors and an imaging likelihood, evaluated on one backend.

    Parameters
    ----------
    model : Model
        The free parameters (in vector order), their priors and the fixed values.
    likelihood : ImagingLikelihood or JointLikelihood
        ``log L`` of parameter vectors in the model's order (see :meth:`build`); a
        :class:`~twinlens.likelihood.joint.JointLikelihood` adds a lensed point source's.
    backend : str
        ``"numba"``, ``"jax"`` or ``"numpy"``.
    """

    model: Model
    likelihood: Any  # an ImagingLikelihood, or a JointLikelihood with a point source
    backend: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", resolve_backend(self.backend))
        if tuple(self.likelihood.free) != tuple(self.model.paths):
            raise ValueError(
                "Objective: the likelihood's free parameters "
                f"{tuple(self.likelihood.free)} differ from the model's {self.model.paths}"
            )

    @classmethod
    def build(
        cls,
        model: Model,
        dataset: Any,
        backend: str | None = None,
        point_source: Any = None,
        kinematics: Any = None,
    ) -> Objective:
        """The objective of ``model`` fitted to the imaging ``dataset`` on ``backend``
        (default: the process default backend); for a model with bands, ``dataset`` is one
        dataset per band, in the order of ``model.bands``; with a ``point_source`` likelihood
        (:class:`~twinlens.likelihood.point_source.PointSourceLikelihood`) and a model with
        a point source, the two log-likelihoods are added. A model with a ``cosmography``
        makes a :class:`~twinlens.likelihood.cosmography.CosmographyLikelihood`, with the
        ``kinematics`` (:class:`~twinlens.likelihood.cosmography.VelocityDispersionData`)
        when given (the model's ``kinematics`` is then the anisotropy)."""
        if (point_source is None) != (model.point_source is None):
            raise ValueError(
                "Objective.build: a point-source likelihood needs a model with a point source "
                "(Model(..., point_source=PointSource(...))), and the reverse"
            )
        if model.bands:
            if point_source is not None:
                raise ValueError(
                    "Objective.build: a point source with several imaging bands is not "
                    "supported yet; fit the point source with one band"
                )
            likelihood: Any = MultiBandLikelihood(
                tuple(dataset), model.bands, model.tracer, model.paths
            )
        elif point_source is None:
            likelihood = ImagingLikelihood(dataset, model.tracer, model.paths)
        elif model.cosmography is not None:
            from twinlens.likelihood.cosmography import CosmographyLikelihood

            likelihood = CosmographyLikelihood(
                dataset,
                model.tracer,
                model.point_source,
                point_source,
                model.cosmography,
                kinematics,
                model.kinematics,
                model.paths,
            )
        else:
            from twinlens.likelihood.joint import JointLikelihood

            likelihood = JointLikelihood(
                dataset, model.tracer, model.point_source, point_source, model.paths
            )
        return cls(model, likelihood, resolve_backend(backend))

    # -- the model's side ----------------------------------------------------------------

    @property
    def paths(self) -> tuple[str, ...]:
        """The free parameters, in vector order."""
        return self.model.paths

    @property
    def n_params(self) -> int:
        """The number of free parameters."""
        return self.model.n_params

    @property
    def start(self) -> np.ndarray:
        """The model's starting vector (inside every prior)."""
        return self.model.start

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """Parameter vectors from unit-cube points (numpy or ``xp=jax.numpy``)."""
        return self.model.from_unit(u, xp)

    def to_unit(self, vectors: Any) -> np.ndarray:
        """Unit-cube points from parameter vectors (numpy)."""
        return self.model.to_unit(vectors)

    def log_prior(self, vectors: Any) -> np.ndarray:
        """Log prior density of vectors ``(n, n_params)``; ``-inf`` outside a prior."""
        return np.asarray(self.model.log_prior(vectors), dtype=float)

    # -- the likelihood's side -----------------------------------------------------------

    def log_likelihood(self, vectors: Any) -> np.ndarray:
        """``log L`` of vectors ``(n, n_params)`` as an ``(n,)`` array, in batches on the
        objective's backend (``-inf`` outside the profiles' valid ranges, never NaN)."""
        return self.likelihood.batch(np.asarray(vectors, dtype=float), self.backend)

    def log_posterior(self, vectors: Any) -> np.ndarray:
        """Log prior plus ``log L`` (unnormalised); the likelihood is evaluated only where
        the prior is nonzero."""
        return log_posterior(self, vectors)

    def jax_log_likelihood(self, vector: Any) -> Any:
        """``log L`` of one vector as a JAX-traceable function (jit-, vmap- and grad-able;
        ``-inf`` outside the valid ranges)."""
        return self.likelihood.jax_log_likelihood(vector)

    def fingerprint(self) -> dict[str, str]:
        """What defines this objective, part by part, as text that is the same in every
        process: digests of the data, noise map, PSF, grid (mask, pixel scale, sub-pixels)
        and model (its profiles and fixed values), and each free parameter's
        prior in words. Starting values and the backend are not part of it (both backends
        give the same ``log L``, so a run may resume on the other one)."""
        bands = getattr(self.likelihood, "names", None)
        datasets = getattr(self.likelihood, "datasets", (self.likelihood.dataset,))
        parts: dict[str, Any] = {}
        for i, dataset in enumerate(datasets):
            if dataset is None:  # a point-source fit may have no imaging
                continue
            band = "" if bands is None else f"{bands[i]} "
            parts |= {
                f"{band}data": dataset.data,
                f"{band}noise map": dataset.noise_map,
                f"{band}PSF": dataset.psf,
                f"{band}mask and grid": dataset.grid,
            }
        record = {"free parameters": ", ".join(self.paths)}
        record.update({key: value_digest(value, key).hex() for key, value in parts.items()})
        record["model"] = key_digest(self.model.fixed_key()).hex()
        point_source = getattr(self.likelihood, "point_source_likelihood", None)
        if point_source is not None:  # in_imaging included: it changes the imaging term
            record["point source"] = result_digest(point_source, "point source").hex()
        kinematics = getattr(self.likelihood, "kinematics", None)
        if kinematics is not None:  # the measured dispersions and how they were taken
            record["kinematics"] = result_digest(kinematics, "kinematics").hex()
        point_images = getattr(self.likelihood, "point_images", None)
        if point_images is not None:  # an imaging likelihood's own point images
            record["point images"] = result_digest(point_images, "point images").hex()
        record.update({f"prior of {path}": repr(prior) for path, prior in self.model.priors})
        return record


def prior_and_likelihood(objective: ObjectiveLike, vectors: Any) -> tuple[np.ndarray, np.ndarray]:
    """Log prior and ``log L`` of ``vectors (n, d)``; ``log L`` is evaluated only inside the
    priors (``-inf`` elsewhere), so a search never pays for (or trips on) points the prior
    excludes, and NaN becomes ``-inf``."""
    vectors = np.atleast_2d(np.asarray(vectors, dtype=float))
    log_prior = np.asarray(objective.log_prior(vectors), dtype=float).reshape(-1)
    log_l = np.full(log_prior.shape, -np.inf)
    inside = np.isfinite(log_prior)
    if inside.any():
        log_l[inside] = np.asarray(objective.log_likelihood(vectors[inside]), dtype=float)
    log_l[np.isnan(log_l)] = -np.inf
    return log_prior, log_l


def log_posterior(objective: ObjectiveLike, vectors: Any) -> np.ndarray:
    """Log prior plus ``log L`` of ``vectors (n, d)`` (see :func:`prior_and_likelihood`)."""
    log_prior, log_l = prior_and_likelihood(objective, vectors)
    return np.where(np.isfinite(log_l), log_prior + log_l, -np.inf)


# -- results ---------------------------------------------------------------------------------


@dataclass
class SearchResult:
    """What a search found.

    Attributes
    ----------
    name : str
        The search's registry name (``"nautilus"``, ``"emcee"``, ``"map"``, ``"nuts"``).
    paths : tuple of str
        The free parameters, in the columns' order.
    samples : ndarray, shape (n, d)
        Equal-weight posterior samples (for an optimiser: the optimum, ``n = 1``).
    log_likelihood : ndarray, shape (n,)
        ``log L`` of each sample.
    max_likelihood : ndarray, shape (d,)
        The best point the search evaluated (for an optimiser: the maximum posterior).
    max_log_likelihood : float
        ``log L`` there.
    log_evidence, log_evidence_error : float or None
        ``log Z`` and its error estimate, where the search gives them.
    n_evaluations : int
        Likelihood evaluations (gradient evaluations for the JAX searches), resumed runs
        included.
    seed : int
        The seed the search ran with.
    info : dict
        Search-specific diagnostics.
    """

    name: str
    paths: tuple[str, ...]
    samples: np.ndarray
    log_likelihood: np.ndarray
    max_likelihood: np.ndarray
    max_log_likelihood: float
    log_evidence: float | None
    log_evidence_error: float | None
    n_evaluations: int
    seed: int
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.paths = tuple(self.paths)
        self.samples = np.atleast_2d(np.asarray(self.samples, dtype=float))
        self.log_likelihood = np.asarray(self.log_likelihood, dtype=float).reshape(-1)
        self.max_likelihood = np.asarray(self.max_likelihood, dtype=float).reshape(-1)
        d = len(self.paths)
        if self.samples.shape[1] != d or self.max_likelihood.shape != (d,):
            raise ValueError(
                f"SearchResult: samples {self.samples.shape} and max_likelihood "
                f"{self.max_likelihood.shape} must have {d} columns, one per path"
            )
        if self.log_likelihood.shape != (self.samples.shape[0],):
            raise ValueError(
                f"SearchResult: log_likelihood has shape {self.log_likelihood.shape}, "
                f"expected ({self.samples.shape[0]},), one per sample"
            )

    @property
    def n_samples(self) -> int:
        """The number of posterior samples."""
        return self.samples.shape[0]

    def medians(self) -> np.ndarray:
        """The posterior median of each parameter, ``(d,)``."""
        return np.median(self.samples, axis=0)

    def intervals(self, level: float = 0.68) -> tuple[np.ndarray, np.ndarray]:
        """Central credible intervals holding ``level`` of the posterior: ``(lower, upper)``,
        each ``(d,)`` (``level=0.68`` gives the 16th and 84th percentiles)."""
        if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
            raise ValueError(f"level must be in (0, 1), got {shown(level)}")
        tail = 50.0 * (1.0 - level)
        lower, upper = np.percentile(self.samples, [tail, 100.0 - tail], axis=0)
        return lower, upper


# -- searches --------------------------------------------------------------------------------


class Search:
    """Base class of the searches: a frozen dataclass of settings with :meth:`run`.

    Subclasses set ``name`` and implement ``_run`` (what :meth:`run` does, with the same
    arguments); their settings are dataclass fields, checked in ``__post_init__`` (a clear
    error names the setting and its allowed range). Each search's class notes say what its
    :class:`SearchResult` holds.
    """

    name: ClassVar[str] = ""
    #: whether the search checkpoints into its output folder and stops at a safe point on
    #: request (:mod:`twinlens.search.stopping`)
    checkpoints: ClassVar[bool] = False
    #: the backends the search runs on
    backends: ClassVar[tuple[str, ...]] = ("numba", "jax", "numpy")
    #: settings that schedule the run without changing its results (left out of a finished
    #: result's fingerprint, so changing them never makes a result stale)
    schedule_settings: ClassVar[tuple[str, ...]] = ()
    #: whether the results depend on the objective's starting vector (an MCMC ball about it)
    uses_start: ClassVar[bool] = False

    def run(
        self,
        objective: ObjectiveLike,
        output_dir: Path | None = None,
        progress: bool = False,
        restart: bool = False,
    ) -> SearchResult:
        """Run the search on ``objective``.

        Parameters
        ----------
        objective : ObjectiveLike
            The posterior to explore (an :class:`Objective`, or any object with its methods).
        output_dir : Path or None, default None
            The folder of a search that checkpoints (``checkpoints``): it resumes from a
            checkpoint found there when that belongs to the same run, and refuses one of a
            differently defined run, naming what changed. The other searches do not use it.
        progress : bool, default False
            Print progress lines.
        restart : bool, default False
            Discard a checkpoint in ``output_dir`` instead of resuming or refusing it.

        Returns
        -------
        SearchResult
            What the search found; its class notes say what ``samples`` and ``info`` hold.

        Raises
        ------
        ~twinlens.search.stopping.SearchStopped
            When a stop was requested (:func:`~twinlens.search.stopping.stop_on_signals`);
            the checkpoint then holds the work finished before the stop.
        ~twinlens.search.checkpoint.CheckpointMismatch
            When ``output_dir`` holds a checkpoint of a differently defined run and
            ``restart`` is False.
        """
        return self._run(objective, output_dir, progress, restart)

    def _run(
        self, objective: ObjectiveLike, output_dir: Path | None, progress: bool, restart: bool
    ) -> SearchResult:
        """The search itself, for :meth:`run` (which documents the arguments)."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """The search's settings, as given to its constructor (for configs and records)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def result_settings(self) -> dict[str, Any]:
        """The settings that shape the results (every setting but the scheduling ones), with
        the search's name: a finished result's record of how it was searched."""
        kept = {k: v for k, v in self.settings().items() if k not in self.schedule_settings}
        return {"search": self.name, **kept}


def check_int(owner: str, name: str, value: Any, minimum: int) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{owner}.{name} must be an integer >= {minimum}, got {shown(value)}")


def check_float(
    owner: str, name: str, value: Any, lower: float, upper: float, *, closed: str = "neither"
) -> None:
    """``value`` must be a real number in the interval (``closed``: "lower", "upper", "both"
    or "neither" says which ends belong to it)."""
    ok = isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
    if ok:
        above = value >= lower if closed in ("lower", "both") else value > lower
        below = value <= upper if closed in ("upper", "both") else value < upper
        ok = bool(above and below)
    if not ok:
        left = "[" if closed in ("lower", "both") else "("
        right = "]" if closed in ("upper", "both") else ")"
        raise ValueError(
            f"{owner}.{name} must be in {left}{lower}, {upper}{right}, got {shown(value)}"
        )


def check_seed(owner: str, value: Any) -> None:
    check_int(owner, "seed", value, 0)


def check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{owner}.{name} must be True or False, got {shown(value)}")


# filled by ``@register`` as the package imports each search module (twinlens.search's
# __init__ imports them all, and importing any of its modules runs that first)
SEARCHES: dict[str, type[Search]] = {}


def register(name: str) -> Any:
    """Class decorator: add a search to :data:`SEARCHES` under ``name``."""

    def add(cls: type[Search]) -> type[Search]:
        cls.name = name
        SEARCHES[name] = cls
        return cls

    return add


def search_from_config(name: str, **settings: Any) -> Search:
    """The search called ``name`` (a key of :data:`SEARCHES`) with ``settings``.

    Raises
    ------
    ValueError
        For an unknown name or setting (listing the choices), or a setting out of range.
    """
    if name not in SEARCHES:
        raise ValueError(f"unknown search {name!r}; choose one of {', '.join(SEARCHES)}")
    cls = SEARCHES[name]
    allowed = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown setting(s) {', '.join(map(repr, unknown))} for the {name} search; "
            f"its settings are {', '.join(allowed)}"
        )
    return cls(**settings)

"""The imaging log-likelihood as a function of parameter vectors, one at a time or in batches.

:class:`ImagingLikelihood` binds a dataset, a model (a :class:`~twinlens.lensing.tracer.Tracer`
holding every fixed value) and the paths of its free parameters. It hashes by value, so JAX
compiles once per likelihood and chunk shape, and a rebuilt-identical likelihood reuses the
program.

Inside a search an out-of-range vector (a negative Einstein radius, ``|e| >= 1``) gives
``-inf``: never an exception and never NaN. Each profile's own parameter checks decide what is
in range (:func:`twinlens.profiles.checks.collect_validity`); the invalid members are evaluated
at the model's own (valid) values, and their results replaced by ``-inf``.

Batches run as one computation per chunk:

* numba/numpy: the free parameters become :class:`~twinlens.backend.concrete.Batched` columns
  and every stage (ray tracing, light, binning, convolution, the intensity solve) runs over the
  whole chunk in parallel;
* JAX: ``jit(vmap(...))`` of the single evaluation; with several local JAX devices (the GPUs
  of a node) each chunk's rows are split evenly among them
  (:mod:`twinlens.likelihood.sharding`), their values one device's to rounding.

A model with a pixelised source (:mod:`twinlens.inversion.source`) is scored by the
log-evidence of its source inversion; on numba and numpy its chunks run one vector at a time
(each builds its own mesh), under JAX as above.

The chunk size comes from a memory budget (``memory_budget`` bytes, by default a quarter of the
free memory of the machine, or half the free memory of the GPUs), or is given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.backend import resolve_backend
from twinlens.backend.concrete import any_jax, batched
from twinlens.environment import env_number
from twinlens.fields import ValueIdentity, static_field
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.point_images import PointImages, check_point_images
from twinlens.inversion.nnls import counting, warn_unconverged
from twinlens.inversion.source import (
    PixelisedSourceFit,
    free_lens_light,
    has_pixelization,
    pixelised_parts,
)
from twinlens.lensing.blurred import blurred_terms
from twinlens.lensing.tracer import Tracer
from twinlens.likelihood.imaging import solve_and_score
from twinlens.likelihood.sharding import local_devices, pad_rows, sharded_program
from twinlens.messages import shown
from twinlens.model.paths import OFFSET, get_path, parameter_paths, set_paths_offset
from twinlens.profiles.checks import collect_validity
from twinlens.user_warnings import warn_user

__all__ = ["ImagingLikelihood"]

NUMBA_CHUNK = 8
#: vectors per JAX chunk of a joint or multi-band likelihood (a power of two; padded with the
#: reference vector)
JAX_CHUNK = 64
CPU_VMAP_WIDTH = 1


@dataclass(frozen=True, eq=False)
class ImagingLikelihood(ValueIdentity):
    """``log L(vector)`` for an imaging dataset and a model with free parameters.

    Parameters
    ----------
    dataset : Imaging
    model : Tracer
        Holds every parameter's value; the free ones are replaced from each vector.
    free : tuple of str
        Paths of the free parameters (see :func:`twinlens.model.parameter_paths`), in vector
        order. Default: every scalar parameter of ``model``. ``offset[0]`` and ``offset[1]``
        are the image's astrometric offset, arcsec (:func:`~twinlens.model.paths.translate`;
        0 in the model): for a band of a multi-band fit.
    point_images : PointImages, optional
        Unresolved images at fixed positions whose fluxes are solved with the linear light
        (:mod:`twinlens.imaging.point_images`).
    """

    dataset: Imaging = static_field()
    model: Tracer = static_field()
    free: tuple = static_field(default=())
    point_images: PointImages | None = static_field(default=None)

    def __post_init__(self) -> None:
        if not self.free:
            object.__setattr__(self, "free", tuple(parameter_paths(self.model)))
        super().__post_init__()
        if not isinstance(self.dataset, Imaging):
            raise TypeError("ImagingLikelihood.dataset must be an Imaging")
        if not isinstance(self.model, Tracer):
            raise TypeError("ImagingLikelihood.model must be a Tracer")
        if len(set(self.free)) != len(self.free):
            raise ValueError(f"ImagingLikelihood.free repeats a path: {self.free}")
        for path in self.free:
            if path in OFFSET:  # the image's offset: a pseudo-parameter, 0 in the model
                continue
            value = get_path(self.model, path)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{path!r} is not a scalar parameter (it holds {shown(value)})")
        check_point_images(self.point_images, self.model, self.dataset)
        parts = pixelised_parts(self.model)  # refuses what cannot go with one
        if parts is not None:
            lens_light = free_lens_light(self.free, parts)
            if lens_light:
                raise ValueError(
                    f"{lens_light[0]!r}: lens light beside a pixelised source must have fixed "
                    "parameters unless it has a linear profile (without one it is subtracted "
                    "from the data before the inversion); fix it, or make a profile linear"
                )

    @property
    def _pixelised(self) -> bool:
        return has_pixelization(self.model)

    def _evidence(self, tracer: Tracer, backend: str) -> Any:
        """The log-evidence of a model with a pixelised source."""
        return PixelisedSourceFit(self.dataset, tracer, backend).log_evidence

    @property
    def n_params(self) -> int:
        """The number of free parameters."""
        return len(self.free)

    @property
    def reference(self) -> np.ndarray:
        """The model's own values of the free parameters (valid by construction)."""
        return np.array([0.0 if p in OFFSET else float(get_path(self.model, p)) for p in self.free])

    def instance(self, vector: Any) -> Tracer:
        """The model at ``vector`` (raises a clear error for an out-of-range value)."""
        v = self._check_vectors(np.atleast_2d(np.asarray(vector, dtype=float)))[0]
        return self._model_of(list(map(float, v)))

    # -- evaluation --------------------------------------------------------------------------

    def __call__(self, vector: Any, backend: str | None = None) -> Any:
        """``log L`` at one parameter vector (``-inf`` outside the valid ranges): a float, or
        for a JAX array or tracer a JAX scalar (:meth:`jax_log_likelihood`), so that
        ``jax.jit(like)``, ``jax.grad(like)`` and ``jax.vmap(like)`` work."""
        if any_jax(vector):
            resolve_backend(backend, vector)  # refuses backend="numba" with a JAX input
            return self.jax_log_likelihood(check_jax_vectors(vector, self.free, 1))
        backend = resolve_backend(backend)
        v = self._check_vectors(np.atleast_2d(np.asarray(vector, dtype=float)))[0]
        if backend == "jax":
            value = float(run_jax(_jax_single(), self, v, memo.enabled())[0])
        else:
            # as a batch of one: the free values are batch columns, never concrete, so the
            # memo can tell them from the fixed ones (as under JAX, where they are traced)
            value = float(self._array_chunk(v[None, :], backend)[0])
        return float(finite_or_minus_inf(np.array([value]))[0])

    def batch(
        self,
        vectors: Any,
        backend: str | None = None,
        *,
        memory_budget: float | None = None,
        chunk_size: int | None = None,
        progress: bool = False,
    ) -> np.ndarray:
        """``log L`` for each row of ``vectors (n_batch, n_params)``, as an ``(n_batch,)`` array.

        ``memory_budget`` (bytes) bounds the memory a chunk may use; ``chunk_size`` sets the
        chunk directly. ``progress`` prints one line per chunk. JAX ``vectors`` (an array or a
        tracer) give ``jax.vmap`` of :meth:`jax_log_likelihood`, traceable as a whole (under
        ``jit``, ``grad``, or a sharded array), the settings unused.
        """
        if any_jax(vectors):
            resolve_backend(backend, vectors)
            return jax_batch(self.jax_log_likelihood, check_jax_vectors(vectors, self.free, 2))
        backend = resolve_backend(backend)
        values = self._check_vectors(np.asarray(vectors, dtype=float))
        if chunk_size is None:
            # at most the budget; for JAX a power of two, so batch sizes share programs; numba
            # works best on small chunks, whose arrays stay in cache
            size = min(self.chunk_size(backend, memory_budget), 1 << (len(values) - 1).bit_length())
            if backend == "jax":
                # down to a power of two: batches of powers of two then split into whole
                # chunks (a 1,024 batch in chunks of the budget's 445 computed 1,335 vectors)
                size = 1 << (size.bit_length() - 1)
            else:
                size = min(size, NUMBA_CHUNK)
        else:
            size = chunk_size
        if not (isinstance(size, int) and size >= 1):
            raise ValueError(f"chunk_size must be an integer >= 1, got {shown(size)}")
        out = np.empty(values.shape[0])
        n_chunks = math.ceil(values.shape[0] / size)
        for i in range(n_chunks):
            chunk = values[i * size : (i + 1) * size]
            if backend == "jax":
                out[i * size : i * size + chunk.shape[0]] = self._jax_chunk(chunk, size)
            else:
                out[i * size : i * size + chunk.shape[0]] = self._array_chunk(chunk, backend)
            if progress:
                print(f"chunk {i + 1}/{n_chunks}: {min((i + 1) * size, len(values))} vectors")
        return finite_or_minus_inf(out)

    def _check_vectors(self, values: np.ndarray) -> np.ndarray:
        return check_vectors(values, self.free)

    def _array_chunk(
        self, values: np.ndarray, backend: str, point_columns: Any = None
    ) -> np.ndarray:
        """``log L`` of each row on numba or numpy; ``point_columns (n_rows, n_images,
        n_mask)``: point images rendered per row by the caller
        (:mod:`twinlens.likelihood.joint`)."""
        valid, tracer = batch_of_models(self._model_of, values, self.reference)
        if self._pixelised:  # one mesh per vector
            rows = (
                self._evidence(
                    self._model_of(list(map(float, v))),
                    backend,
                )
                if ok
                else -np.inf
                for v, ok in zip(values, valid, strict=True)
            )
            return np.array([float(r) for r in rows])
        terms = blurred_terms(tracer, self.dataset, backend, self.point_images, point_columns)
        log_l = solve_and_score(terms, self.dataset, backend)
        result = np.broadcast_to(np.asarray(log_l[0], dtype=float).reshape(-1), valid.shape)
        return np.where(valid, result, -np.inf)

    def _model_of(self, columns: list) -> Tracer:
        """The model with the free parameters set to ``columns`` (one per parameter)."""
        return set_paths_offset(self.model, dict(zip(self.free, columns, strict=True)))

    def _jax_chunk(self, values: np.ndarray, size: int) -> np.ndarray:
        n = values.shape[0]
        if n < size:  # pad to the compiled chunk shape with valid vectors
            values = np.concatenate([values, np.repeat(self.reference[None, :], size - n, 0)])
        return run_jax_rows(self, values, n)

    def jax_log_likelihood(self, vector: Any, point_columns: Any = None) -> Any:
        """``log L`` of one vector ``(n_params,)`` as a JAX computation: jit-, grad- and
        vmap-able, ``-inf`` outside the valid ranges (its gradient there is zero).
        ``point_columns``: point images rendered by the caller
        (:class:`~twinlens.likelihood.JointLikelihood`)."""
        from twinlens.backend import jax_runtime

        jnp = jax_runtime.load().numpy
        with collect_validity() as conditions:
            self._model_of([vector[j] for j in range(len(self.free))])
        valid = jnp.all(jnp.isfinite(vector))
        for c in conditions:
            valid = valid & jnp.all(c)
        safe = jnp.where(valid, vector, jnp.asarray(self.reference))
        tracer = self._model_of([safe[j] for j in range(len(self.free))])
        if self._pixelised:
            return jnp.where(valid, self._evidence(tracer, "jax"), -jnp.inf)
        terms = blurred_terms(tracer, self.dataset, "jax", self.point_images, point_columns)
        log_l = solve_and_score(terms, self.dataset, "jax")
        return jnp.where(valid, log_l[0], -jnp.inf)

    # -- memory -----------------------------------------------------------------------------

    def bytes_per_evaluation(self) -> int:
        """Estimated peak memory of one evaluation in a batch: the ray-traced points' arrays
        (positions, deflections, light terms) and the padded, Fourier-transformed images."""
        n_points = self.dataset.layout.n_points
        terms = 1 + self.model.n_linear
        if self.point_images is not None:
            terms += self.point_images.n_images
        n_pix = self.dataset.grid.n_pixels
        parts = pixelised_parts(self.model)
        if parts is not None:  # mapping matrices, padded PSF cubes and the dense solve
            mesh = parts.pixelization.mesh
            vertices = mesh.image_plane_vertices(self.dataset.grid)
            n_source = mesh.n_pixels if vertices is None else len(vertices)
            n_mask = self.dataset.mask_index.size
            # a linear lens light is solved jointly: its columns stand beside the pixels'
            terms = n_source + self.model.n_linear
            extra = 8 * (4 * n_mask * terms + 6 * terms * terms)
            return int(8 * n_points * 20 + 8 * n_pix * terms * 4 + extra)
        return int(8 * n_points * (10 + 2 * terms) + 8 * n_pix * terms * 8)

    def chunk_size(self, backend: str, memory_budget: float | None = None) -> int:
        """Vectors per chunk under ``memory_budget`` bytes (default: see the module)."""
        budget = memory_budget if memory_budget is not None else default_memory_budget(backend)
        if not budget > 0:
            raise ValueError(f"memory_budget must be > 0 bytes, got {shown(budget)}")
        return max(1, min(16384, int(budget // self.bytes_per_evaluation())))


def batch_of_models(
    build: Callable[[list], Any], values: np.ndarray, reference: np.ndarray
) -> tuple[np.ndarray, Any]:
    """Rows ``values (n_rows, n_params)`` as one batch of models: ``build`` takes one
    :func:`~twinlens.backend.concrete.batched` column per parameter. Returns which rows are
    finite and inside every parameter's range (collected, not raised) and what ``build``
    made, rebuilt with ``reference`` in the rows that are not, so that they evaluate
    harmlessly (one build when every row is valid, two otherwise)."""
    valid, built = checked_rows(build, values)
    if not valid.all():
        safe = np.where(valid[:, None], values, reference[None, :])
        built = build([batched(c) for c in safe.T])
    return valid, built


def checked_rows(build: Callable[[list], Any], values: np.ndarray) -> tuple[np.ndarray, Any]:
    """Which rows of ``values (n_rows, n_params)`` are finite and inside every parameter's
    range, and what ``build`` (see :func:`batch_of_models`) made of them. The parameter checks
    decide, collected rather than raised (:func:`~twinlens.profiles.checks.collect_validity`):
    the one test of "out of range, so ``-inf``", so that no exception is ever caught for it
    and a programming error still raises."""
    valid = np.all(np.isfinite(values), axis=1)
    with np.errstate(all="ignore"), collect_validity() as conditions:
        built = build([batched(c) for c in values.T])
    for c in conditions:
        valid &= np.broadcast_to(np.asarray(c, dtype=bool).reshape(-1), valid.shape)
    return valid, built


def check_vectors(values: np.ndarray, free: tuple) -> np.ndarray:
    """``values`` as given, once checked to be ``(n_batch, len(free))``: one column per free
    parameter."""
    if values.ndim != 2 or values.shape[1] != len(free):
        raise ValueError(
            f"vectors must have shape (n_batch, {len(free)}) for the free parameters {free}, "
            f"got {values.shape}"
        )
    return values


def finite_or_minus_inf(out: np.ndarray) -> np.ndarray:
    """``out`` with NaN replaced by ``-inf``, and a warning: NaN inside the valid ranges is a
    bug to report, and never reaches a sampler."""
    bad = np.isnan(out)
    if bad.any():
        warn_user(
            f"{int(bad.sum())} vectors gave NaN inside the valid parameter ranges; they are "
            "reported as -inf",
            RuntimeWarning,
        )
        out[bad] = -np.inf
    return out


def default_memory_budget(backend: str) -> float:
    """Bytes a batch chunk may use: half the accelerators' free memory when JAX runs on them
    (summed over the local devices, which each hold their share of a chunk's rows), else a
    quarter of the machine's available memory."""
    if backend == "jax":
        free = [_free_bytes(device) for device in local_devices()]
        known = [f for f in free if f is not None]
        if known and len(known) == len(free):
            return 0.5 * sum(known)
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        return 0.25 * pages
    except (ValueError, OSError, AttributeError):
        return 2.0e9


def _free_bytes(device: Any) -> int | None:
    """An accelerator's free memory in bytes (None where the device does not say: a CPU)."""
    stats = getattr(device, "memory_stats", lambda: None)()
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
    return None


def vmap_width() -> int:
    """Vectors evaluated side by side (vmapped) inside a JAX chunk: all of them on an
    accelerator; on a CPU a few at a time, in a loop, since the vmapped intermediates of many
    vectors overflow the caches (W5 on 2 cores: see docs/imaging.rst). ``TWINLENS_VMAP_WIDTH``
    overrides it."""
    width = env_number("TWINLENS_VMAP_WIDTH", 0, 1, "an integer >= 1", integer=True)
    if width:
        return int(width)
    from twinlens.backend import jax_runtime

    return 1 << 30 if jax_runtime.load().default_backend() != "cpu" else CPU_VMAP_WIDTH


def _counted(likelihood: Any) -> Any:
    """``vector -> [log L, n]``: the likelihood's JAX evaluation and how many of its
    non-negative least-squares solves ran out of steps (a program cannot warn; the caller
    does, with :func:`run_jax`), in one array: on a GPU every array read back is a round trip
    to the device, which cost more than a W5 evaluation itself (docs/benchmarks.rst)."""
    counted = counting(likelihood.jax_log_likelihood)

    def packed(vector: Any) -> Any:
        from twinlens.backend import jax_runtime

        jnp = jax_runtime.load().numpy
        log_l, unconverged = counted(vector)
        return jnp.stack([log_l, jnp.asarray(unconverged, dtype=log_l.dtype)])

    return packed


def run_jax(program: Any, *args: Any, n: int | None = None) -> np.ndarray:
    """Run a program of :func:`_jax_single` or :func:`_jax_batch`: the ``log L`` of its first
    ``n`` vectors (the rest pad a chunk), after a warning if any of their solves ran out of
    steps."""
    out = np.asarray(program(*args)).reshape(-1, 2)[:n]
    log_l, unconverged = out[:, 0], out[:, 1]
    if unconverged.any():
        warn_unconverged(
            int(np.count_nonzero(unconverged)), f"{unconverged.size} likelihood evaluations"
        )
    return log_l


@cache
def _jax_single():
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    # the memo's switch is static: it decides whether fixed fields are folded into the program
    return jax.jit(
        lambda likelihood, vector, memo_on: _counted(likelihood)(vector), static_argnums=(0, 2)
    )


def _rows(likelihood: Any, width: int, vectors: Any) -> Any:
    """The body of a batch program: ``[log L, n]`` of each row of ``vectors``, ``width`` rows
    side by side (vmapped) at a time."""
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    if width >= vectors.shape[0]:
        return jax.vmap(_counted(likelihood))(vectors)
    # vmap over ``width`` vectors at a time, in a loop inside the one program
    return jax.lax.map(_counted(likelihood), vectors, batch_size=width)


@cache
def _jax_batch():
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()

    def run(likelihood: ImagingLikelihood, vectors: Any, width: int, memo_on: bool) -> Any:
        return _rows(likelihood, width, vectors)

    # the likelihood is static: it hashes by value, so one program per likelihood and shape
    return jax.jit(run, static_argnums=(0, 2, 3))


def run_jax_rows(likelihood: Any, values: np.ndarray, n: int) -> np.ndarray:
    """``log L`` of the first ``n`` rows of a chunk ``values`` (the rest pad it) on JAX: one
    program on one device; with several local devices the chunk, padded further with the
    likelihood's reference vector to a multiple of their number, is split among them
    (:mod:`twinlens.likelihood.sharding`). ``likelihood``: an imaging or joint likelihood."""
    devices = local_devices()
    width, memo_on = vmap_width(), memo.enabled()
    if len(devices) == 1:
        return run_jax(_jax_batch(), likelihood, values, width, memo_on, n=n)
    from twinlens.backend import jax_runtime

    program, sharding = sharded_program(_rows, devices)
    values = pad_rows(values, likelihood.reference, len(devices))
    placed = jax_runtime.load().device_put(values, sharding)
    return run_jax(program, likelihood, placed, width, memo_on, n=n)


def check_jax_vectors(vectors: Any, free: tuple, ndim: int) -> Any:
    """JAX ``vectors`` as a float array of ``ndim`` dimensions with one column per free
    parameter (shapes are static under tracing, so this checks traced inputs too)."""
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    v = jnp.asarray(vectors, dtype=float)
    if v.ndim != ndim or v.shape[-1] != len(free):
        shape = f"({len(free)},)" if ndim == 1 else f"(n_batch, {len(free)})"
        raise ValueError(
            f"a JAX {'vector' if ndim == 1 else 'batch'} must have shape {shape} for the free "
            f"parameters {free}, got {v.shape}"
        )
    return v


def jax_batch(single: Callable[[Any], Any], vectors: Any) -> Any:
    """``jax.vmap(single)(vectors)``: the JAX form of a likelihood's ``batch``."""
    from twinlens.backend import jax_runtime

    return jax_runtime.load().vmap(single)(vectors)

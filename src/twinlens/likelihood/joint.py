"""The joint log-likelihood of imaging and a lensed point source, on parameter vectors.

:class:`JointLikelihood` adds the point-source log-likelihood
(:class:`~twinlens.likelihood.point_source.PointSourceLikelihood`: image positions, fluxes,
time delays) to the imaging one (:class:`~twinlens.likelihood.batched.ImagingLikelihood`), the
two sharing the lens. A vector holds the free parameters of the tracer and of the point source
(paths ``point_source.centre[0]``, ``point_source.time_delay_distance``...). Like the imaging
likelihood it is frozen and value-hashed (one JAX program per likelihood and chunk shape), and
an out-of-range vector (a negative ``D_dt``, ``|e| >= 1``) gives ``-inf``, never an exception
or NaN.

On numba and numpy the imaging term runs in batches as usual; the point-source term runs in
batches on numba (a chunk of rows as one batch of lenses, solved together) and one vector at
a time on numpy; on JAX the single evaluation is
``jit(vmap(...))``-ed over chunks, each chunk's rows split among the local devices when there
are several (:mod:`twinlens.likelihood.sharding`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.backend import resolve_backend
from twinlens.backend.concrete import any_jax
from twinlens.fields import ValueIdentity, static_field
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.point_images import (
    SHIFTS,
    PointImages,
    check_point_images,
    is_seen,
    render,
)
from twinlens.lensing.lens_equation import _serial_when_small
from twinlens.lensing.multiplane import MultiPlaneTracer
from twinlens.lensing.tracer import Tracer
from twinlens.likelihood.batched import (
    JAX_CHUNK,
    NUMBA_CHUNK,
    ImagingLikelihood,
    _jax_single,
    batch_of_models,
    check_jax_vectors,
    check_vectors,
    checked_rows,
    finite_or_minus_inf,
    jax_batch,
    run_jax,
    run_jax_rows,
)
from twinlens.likelihood.point_source import (
    PointSource,
    PointSourceLikelihood,
    model_images,
)
from twinlens.messages import shown
from twinlens.model.paths import POINT_SOURCE, get_path, parameter_paths, set_paths
from twinlens.profiles.checks import collect_validity

__all__ = ["JointLikelihood"]

#: the point-source term's batches on numba: at most this many rows, and about this many
#: mapped grid vertices of the image solver in all (each row maps its own grid)
_CHUNK_ROWS, _CHUNK_POINTS = 64, 1 << 21


@dataclass(frozen=True, eq=False)
class JointLikelihood(ValueIdentity):
    """``log L(vector) = log L_imaging + log L_point_source``.

    Parameters
    ----------
    dataset : Imaging or None
        The imaging data; None fits the point source alone.
    model : Tracer
        The lens (and sources): every value, the free ones replaced from each vector.
    point_source : PointSource
        The point source's values, the free ones replaced from each vector.
    point_source_likelihood : PointSourceLikelihood
        The point-source data and how its positions are scored.
    free : tuple of str
        Free parameter paths in vector order: the tracer's, and ``point_source.``-prefixed ones.
    """

    dataset: Any = static_field()
    model: Tracer = static_field()
    point_source: PointSource = static_field()
    point_source_likelihood: PointSourceLikelihood = static_field()
    free: tuple = static_field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "free", tuple(self.free))
        super().__post_init__()
        if self.dataset is not None and not isinstance(self.dataset, Imaging):
            raise TypeError("JointLikelihood.dataset must be an Imaging or None")
        if not isinstance(self.model, Tracer):
            raise TypeError("JointLikelihood.model must be a Tracer")
        if not isinstance(self.point_source, PointSource):
            raise TypeError("JointLikelihood.point_source must be a PointSource")
        if not isinstance(self.point_source_likelihood, PointSourceLikelihood):
            raise TypeError(
                "JointLikelihood.point_source_likelihood must be a PointSourceLikelihood"
            )
        if self.dataset is None and self.point_source_likelihood.in_imaging:
            raise ValueError(
                "JointLikelihood: the point-source likelihood has in_imaging = True but there "
                "is no imaging dataset to see the images in"
            )
        if not self.free:
            raise ValueError("JointLikelihood.free is empty: name at least one free parameter")
        if len(set(self.free)) != len(self.free):
            raise ValueError(f"JointLikelihood.free repeats a path: {self.free}")
        for path in self.free:
            value = self._get(path)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{path!r} is not a scalar parameter (it holds {shown(value)})")
        # now, not at the first evaluation inside a search (the imaging term checks fixed
        # images); images that move start at the observed positions, which must be seen
        self.imaging  # noqa: B018
        psl = self.point_source_likelihood
        if psl.images_move:
            try:
                check_point_images(PointImages(psl.data.positions), self.model, self.dataset)
            except ValueError as err:  # name what the user gave
                message = str(err).replace("PointImages.positions", "PointSourceData.positions")
                raise ValueError(message) from None

    def _get(self, path: str) -> Any:
        if path.startswith(POINT_SOURCE):
            return get_path(self.point_source, path[len(POINT_SOURCE) :])
        return get_path(self.model, path)

    # -- the parts -----------------------------------------------------------------------------

    @property
    def n_params(self) -> int:
        """The number of free parameters."""
        return len(self.free)

    @property
    def reference(self) -> np.ndarray:
        """The model's own values of the free parameters (valid by construction)."""
        return np.array([float(self._get(p)) for p in self.free])

    @property
    def _tracer_columns(self) -> list[int]:
        return [i for i, p in enumerate(self.free) if not p.startswith(POINT_SOURCE)]

    @cached_property
    def imaging(self) -> ImagingLikelihood | None:
        """The imaging likelihood of the tracer's free parameters (None without a dataset)."""
        if self.dataset is None:
            return None
        tracer_free = tuple(self.free[i] for i in self._tracer_columns)
        # with no free lens or source parameter the imaging term is a constant: every scalar
        # is then passed at its own value
        points = self.point_source_likelihood.point_images  # the observed images, if seen
        return ImagingLikelihood(self.dataset, self.model, tracer_free, points)

    def _split(self, vector: Any) -> tuple[dict, dict]:
        tracer, point = {}, {}
        n = len(POINT_SOURCE)
        for j, p in enumerate(self.free):
            if p.startswith(POINT_SOURCE):
                point[p[n:]] = vector[j]
            else:
                tracer[p] = vector[j]
        return tracer, point

    def _members(self, values: Any) -> tuple[Tracer, PointSource]:
        """The tracer and point source at ``values`` (one per free parameter)."""
        tracer_values, point_values = self._split(values)
        tracer = set_paths(self.model, tracer_values, False)
        return tracer, set_paths(self.point_source, point_values, False)

    def instances(self, vector: Any) -> tuple[Tracer, PointSource]:
        """The tracer and point source at ``vector`` (a clear error when out of range)."""
        v = self._check_vectors(np.atleast_2d(np.asarray(vector, dtype=float)))[0]
        return self._members([float(x) for x in v])

    def _check_vectors(self, values: np.ndarray) -> np.ndarray:
        return check_vectors(values, self.free)

    # -- evaluation ----------------------------------------------------------------------------

    def __call__(self, vector: Any, backend: str | None = None) -> Any:
        """``log L`` at one vector (``-inf`` outside the valid ranges): a float, or for a JAX
        array or tracer a JAX scalar (:meth:`jax_log_likelihood`; jit-, grad-, vmap-able)."""
        if any_jax(vector):
            resolve_backend(backend, vector)
            return self.jax_log_likelihood(check_jax_vectors(vector, self.free, 1))
        return float(self.batch(np.atleast_2d(np.asarray(vector, dtype=float)), backend)[0])

    def batch(self, vectors: Any, backend: str | None = None, **settings: Any) -> np.ndarray:
        """``log L`` of each row of ``vectors (n_batch, n_params)``, ``(n_batch,)``.
        ``settings`` (``memory_budget``, ``chunk_size``, ``progress``) go to the imaging
        likelihood's batches (with images that move, ``chunk_size`` alone: the rows per
        rendering of their images); on numba ``chunk_size`` is also the rows per batch of the
        point-source term (default: about ``_CHUNK_POINTS`` grid vertices, at most
        ``_CHUNK_ROWS`` rows). JAX ``vectors`` give ``jax.vmap`` of
        :meth:`jax_log_likelihood`, traceable as a whole."""
        if any_jax(vectors):
            resolve_backend(backend, vectors)
            return jax_batch(self.jax_log_likelihood, check_jax_vectors(vectors, self.free, 2))
        backend = resolve_backend(backend)
        values = self._check_vectors(np.asarray(vectors, dtype=float))
        if backend == "jax":
            out = np.concatenate(
                [
                    self._jax_chunk(values[i : i + JAX_CHUNK])
                    for i in range(0, len(values), JAX_CHUNK)
                ]
            )
        else:
            chunk = settings.get("chunk_size")
            if chunk is not None and not (isinstance(chunk, int) and chunk >= 1):
                raise ValueError(f"chunk_size must be an integer >= 1, got {shown(chunk)}")
            out = self._point_source_rows(values, backend, chunk)
            imaging = self.imaging
            if imaging is not None and self.point_source_likelihood.images_move:
                chunk = NUMBA_CHUNK if chunk is None else chunk
                out = out + self._imaging_rows_with_moving_images(imaging, values, backend, chunk)
            elif imaging is not None:
                columns = self._tracer_columns
                if columns:
                    out = out + imaging.batch(values[:, columns], backend, **settings)
                else:
                    out = out + imaging(imaging.reference, backend)
        return finite_or_minus_inf(np.asarray(out, dtype=float))

    def _point_source_rows(
        self, values: np.ndarray, backend: str, chunk: int | None = None
    ) -> np.ndarray:
        """The point-source term of each row. On numba a chunk of rows at a time, as one
        batch of models (their parameters :func:`~twinlens.backend.concrete.batched`
        columns): one set of kernel calls per step of the image solver serves the whole
        chunk, each parallel over its rows and points, with the same numbers as row by row
        (:meth:`_rows`, which numpy and multi-plane lenses run)."""
        if backend != "numba" or isinstance(self.model, MultiPlaneTracer):
            return self._rows(values, backend)
        out = np.full(len(values), -np.inf)
        size = self._rows_per_chunk if chunk is None else chunk
        for s in range(0, len(values), size):
            rows = values[s : s + size]
            ok, (tracer, point) = batch_of_models(self._members, rows, self.reference)
            # a few rows: on one thread (waking the others costs more than their few points)
            with _serial_when_small(len(rows), backend), np.errstate(all="ignore"):
                log_l = self.point_source_likelihood.log_likelihood(tracer, point, backend)
            # a term that no free parameter reaches is one value for every row
            log_l = np.broadcast_to(np.asarray(log_l, dtype=float).reshape(-1), (len(rows),))
            out[s : s + len(rows)] = np.where(ok, log_l, -np.inf)
        return out

    @property
    def _rows_per_chunk(self) -> int:
        """Rows per batch of the point-source term: about ``_CHUNK_POINTS`` mapped grid
        vertices of the image solver (each row maps its own grid), at most ``_CHUNK_ROWS``."""
        solver = self.point_source_likelihood.solver
        vertices = 1 if solver is None else (solver.cells + 1) ** 2
        return max(1, min(_CHUNK_ROWS, _CHUNK_POINTS // vertices))

    def _rows(self, values: np.ndarray, backend: str) -> np.ndarray:
        """The point-source term row by row."""
        # out of range (-inf) as the imaging likelihood decides it: by the checks' collected
        # conditions, so that no exception is caught here and a programming error raises
        valid, _ = checked_rows(self._members, values)
        out = np.full(len(values), -np.inf)
        # a few points per kernel call: on one numba thread (waking the others costs more)
        with _serial_when_small(1, backend):
            for i, v in enumerate(values):
                if not valid[i]:
                    continue
                tracer, point = self._members([float(x) for x in v])
                with np.errstate(all="ignore"):
                    log_l = self.point_source_likelihood.log_likelihood(tracer, point, backend)
                out[i] = float(log_l)
        return out

    def _point_columns(self, positions: Any) -> Any:
        """The point images at ``positions (..., n_images, 2)``, at the fitted pixels."""
        d = self.dataset
        return render(positions, d.grid, d.psf, d.mask_index, SHIFTS[0])

    def _observed_columns(self) -> np.ndarray:
        """The images at the observed positions (cached with the dataset): the stand-in for a
        row whose model images were not found."""
        positions = self.point_source_likelihood.data.positions
        return PointImages(positions).columns(self.dataset)

    def _model_image_rows(self, rows: np.ndarray, backend: str) -> tuple[np.ndarray, np.ndarray]:
        """``(positions (n_rows, n_images, 2), ok)``: each row's model images, found by one
        batch of Newton steps for all the rows (a row's members are
        :func:`~twinlens.backend.concrete.batched` columns: the same numbers as row by row, at
        one set of kernel calls per step instead of one per row); the observed positions and
        ``ok`` False where a row is not finite, outside a parameter's range, or its images were
        not found."""
        data = self.point_source_likelihood.data
        n_rows, n_images = len(rows), data.n_images

        ok, (tracer, point) = batch_of_models(self._members, rows, self.reference)
        p, found = model_images(tracer, point, data, backend)
        # without free lens or source parameters every row has the same images
        p = np.broadcast_to(np.asarray(p, dtype=float), (n_rows, n_images, 2))
        ok &= np.broadcast_to(np.asarray(found, dtype=bool), (n_rows,))
        positions = np.where(ok[:, None, None], p, data.positions[None])
        return positions, ok

    def _imaging_rows_with_moving_images(
        self, imaging: ImagingLikelihood, values: np.ndarray, backend: str, chunk: int
    ) -> np.ndarray:
        """The imaging term of each row, its point images at the model's positions (numba and
        numpy), ``chunk`` rows at a time: ``-inf`` where the model's images are not found or
        one leaves the fitted pixels."""
        tracer_columns = self._tracer_columns
        out = np.full(len(values), -np.inf)
        for s in range(0, len(values), chunk):
            rows = values[s : s + chunk]
            with _serial_when_small(1, backend), np.errstate(all="ignore"):
                positions, ok = self._model_image_rows(rows, backend)
                columns = self._point_columns(positions)
            ok &= np.all(is_seen(columns), axis=-1)
            if not ok.any():
                continue
            if tracer_columns:
                vectors = rows[:, tracer_columns]
            else:  # the imaging term's own values (see imaging): only the images move
                vectors = np.repeat(imaging.reference[None, :], len(rows), axis=0)
            log_l = imaging._array_chunk(vectors, backend, columns)
            out[s : s + len(rows)] = np.where(ok, log_l, -np.inf)
        return out

    def _jax_chunk(self, values: np.ndarray) -> np.ndarray:
        n = values.shape[0]
        size = JAX_CHUNK if n > 1 else 1
        if n < size:
            values = np.concatenate([values, np.repeat(self.reference[None, :], size - n, 0)])
        if size == 1:
            return run_jax(_jax_single(), self, values[0], memo.enabled())
        return run_jax_rows(self, values, n)

    def jax_log_likelihood(self, vector: Any) -> Any:
        """``log L`` of one vector, JAX-traceable (``-inf`` outside the valid ranges)."""
        from twinlens.backend import jax_runtime

        jnp = jax_runtime.load().numpy
        tracer_values, point_values = self._split(vector)
        with collect_validity() as conditions:
            set_paths(self.model, tracer_values, False)
            set_paths(self.point_source, point_values, False)
        valid = jnp.all(jnp.isfinite(vector))
        for c in conditions:
            valid = valid & jnp.all(c)
        safe = jnp.where(valid, vector, jnp.asarray(self.reference))
        tracer_values, point_values = self._split(safe)
        tracer = set_paths(self.model, tracer_values, False)
        point = set_paths(self.point_source, point_values, False)
        total = self.point_source_likelihood.log_likelihood(tracer, point, "jax")
        imaging = self.imaging
        if imaging is not None and self.point_source_likelihood.images_move:
            data = self.point_source_likelihood.data
            positions, found = model_images(tracer, point, data, "jax")
            # images not found give -inf; the observed ones stand in, keeping the solve (and
            # its gradients) finite
            positions = jnp.where(found, positions, jnp.asarray(data.positions))
            point_columns = self._point_columns(positions)
            seen = found & jnp.all(is_seen(point_columns))
            point_columns = jnp.where(seen, point_columns, self._observed_columns())
            columns = self._tracer_columns
            tracer_vector = safe[jnp.asarray(columns)] if columns else imaging.reference
            total = total + imaging.jax_log_likelihood(tracer_vector, point_columns)
            valid = valid & seen
        elif imaging is not None:
            columns = self._tracer_columns
            if columns:
                total = total + imaging.jax_log_likelihood(safe[jnp.asarray(columns)])
            else:
                total = total + imaging(imaging.reference, "numba")
        return jnp.where(valid, total, -jnp.inf)

    def scalar_paths(self) -> list[str]:
        """Every scalar parameter of the model and the point source."""
        return parameter_paths(self.model) + [
            POINT_SOURCE + p for p in parameter_paths(self.point_source)
        ]

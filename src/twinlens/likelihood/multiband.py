"""Several imaging datasets of one lens (bands, epochs), fitted jointly.

:class:`MultiBandLikelihood` sums the imaging log-likelihoods of its bands. Every band has its
own :class:`~twinlens.imaging.dataset.Imaging` (grid, pixel scale, mask, PSF, noise map and
sub-pixels) and sees the same model, so the lens mass and every shape are shared; each band
solves its own linear light intensities (or its own pixelised source), so colours come free.

A free parameter is named by a path of the model, shared by every band
(``lenses[0].mass[0].einstein_radius``), or by ``band.<name>.`` and a path, for that band alone
(``band.F160W.sources[0].light[0].effective_radius``): a colour gradient, a band's own
regularisation coefficient. A band with its own value of a path uses it in place of the
shared one. ``band.<name>.offset[0]`` and ``offset[1]`` are a band's astrometric offset
(arcsec): its image of the whole scene moved by that much.

Like :class:`~twinlens.likelihood.batched.ImagingLikelihood` it is frozen and hashed by value,
gives ``-inf`` outside the valid ranges, and runs on numba, numpy and JAX (one program for all
the bands; ``jit``, ``grad`` and ``vmap`` compose with a call on a JAX array).
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
from twinlens.lensing.tracer import Tracer
from twinlens.likelihood.batched import (
    JAX_CHUNK,
    ImagingLikelihood,
    _jax_single,
    check_jax_vectors,
    check_vectors,
    finite_or_minus_inf,
    jax_batch,
    run_jax,
    run_jax_rows,
)
from twinlens.messages import shown
from twinlens.model.paths import BAND_NAME, band_path, get_path

__all__ = ["MultiBandLikelihood"]


@dataclass(frozen=True, eq=False)
class MultiBandLikelihood(ValueIdentity):
    """``log L(vector) = sum over bands of log L_band``.

    Parameters
    ----------
    datasets : tuple of Imaging
        One per band, each with its own grid, mask, PSF and noise.
    names : tuple of str
        The bands' names, in the same order (``F814W``, ``F160W``; letters, digits, ``_``,
        ``-``).
    model : Tracer
        The model every band sees: every value, the free ones replaced from each vector.
    free : tuple of str
        Free parameter paths in vector order: a model path (every band), or
        ``band.<name>.<path>`` (that band only).
    """

    datasets: tuple = static_field()
    names: tuple = static_field()
    model: Tracer = static_field()
    free: tuple = static_field(default=())

    def __post_init__(self) -> None:
        for key in ("datasets", "names", "free"):
            object.__setattr__(self, key, tuple(getattr(self, key)))
        super().__post_init__()
        if not self.datasets:
            raise ValueError("MultiBandLikelihood.datasets is empty: give at least one Imaging")
        if len(self.names) != len(self.datasets):
            raise ValueError(
                f"MultiBandLikelihood: {len(self.names)} names for {len(self.datasets)} datasets"
            )
        for i, (name, dataset) in enumerate(zip(self.names, self.datasets, strict=True)):
            if not isinstance(dataset, Imaging):
                raise TypeError(f"MultiBandLikelihood.datasets[{i}] must be an Imaging")
            if not (isinstance(name, str) and BAND_NAME.match(name)):
                raise ValueError(
                    f"MultiBandLikelihood.names[{i}] = {shown(name)}: a band's name starts with "
                    "a letter and holds letters, digits, '_' and '-'"
                )
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"MultiBandLikelihood.names repeats a band: {self.names}")
        if not isinstance(self.model, Tracer):
            raise TypeError("MultiBandLikelihood.model must be a Tracer")
        if not self.free:
            raise ValueError("MultiBandLikelihood.free is empty: name at least one free parameter")
        if len(set(self.free)) != len(self.free):
            raise ValueError(f"MultiBandLikelihood.free repeats a path: {self.free}")
        for path in self.free:
            name, _ = band_path(path)
            if name is not None and name not in self.names:
                raise ValueError(
                    f"{path!r}: no band named {name!r}; the bands are {', '.join(self.names)}"
                )
        self.bands  # noqa: B018  (each band's likelihood checks its own paths now)

    @cached_property
    def _columns(self) -> tuple[np.ndarray, ...]:
        """For each band, the vector's columns of its free parameters, in its own order."""
        split = [band_path(p) for p in self.free]
        shared = {inner: j for j, (name, inner) in enumerate(split) if name is None}
        out = []
        for band in self.names:
            own = {inner: j for j, (name, inner) in enumerate(split) if name == band}
            out.append(np.array(list({**shared, **own}.values()), dtype=int))
        return tuple(out)

    @cached_property
    def bands(self) -> tuple[ImagingLikelihood, ...]:
        """Each band's :class:`~twinlens.likelihood.batched.ImagingLikelihood`, its free
        parameters those that reach it."""
        out = []
        for name, dataset, columns in zip(self.names, self.datasets, self._columns, strict=True):
            free = tuple(band_path(self.free[j])[1] for j in columns)
            if not free:
                raise ValueError(f"band {name!r} has no free parameter")
            out.append(ImagingLikelihood(dataset, self.model, free))
        return tuple(out)

    @property
    def n_params(self) -> int:
        """The number of free parameters."""
        return len(self.free)

    @property
    def dataset(self) -> Imaging:
        """The first band's dataset (what a single-dataset caller reads)."""
        return self.datasets[0]

    @property
    def reference(self) -> np.ndarray:
        """The model's own values of the free parameters (valid by construction)."""
        return np.array([float(get_path(self.model, band_path(p)[1])) for p in self.free])

    def band_vectors(self, vectors: Any) -> list[Any]:
        """Each band's columns of ``vectors (..., n_params)``."""
        return [vectors[..., columns] for columns in self._columns]

    # -- evaluation --------------------------------------------------------------------------

    def __call__(self, vector: Any, backend: str | None = None) -> Any:
        """``log L`` at one vector: a float, or a JAX scalar for a JAX array or tracer."""
        if any_jax(vector):
            resolve_backend(backend, vector)
            return self.jax_log_likelihood(check_jax_vectors(vector, self.free, 1))
        backend = resolve_backend(backend)
        v = self._check_vectors(np.atleast_2d(np.asarray(vector, dtype=float)))
        if backend == "jax":
            return float(finite_or_minus_inf(run_jax(_jax_single(), self, v[0], memo.enabled()))[0])
        return float(self.batch(v, backend)[0])

    def batch(
        self,
        vectors: Any,
        backend: str | None = None,
        *,
        memory_budget: float | None = None,
        chunk_size: int | None = None,
        progress: bool = False,
    ) -> Any:
        """``log L`` of each row of ``vectors (n_batch, n_params)``. The settings are
        :meth:`ImagingLikelihood.batch`'s: on numba and numpy each band's; on JAX, where one
        program evaluates every band, ``chunk_size`` rows per program (default: what the
        bands' ``memory_budget`` allows, at most :data:`JAX_CHUNK`, a power of two). JAX
        ``vectors`` give a traceable ``vmap``."""
        if any_jax(vectors):
            resolve_backend(backend, vectors)
            return jax_batch(self.jax_log_likelihood, check_jax_vectors(vectors, self.free, 2))
        backend = resolve_backend(backend)
        values = self._check_vectors(np.asarray(vectors, dtype=float))
        if backend == "jax":
            return self._jax_chunks(
                values, self._jax_size(len(values), memory_budget, chunk_size), progress
            )
        total = np.zeros(len(values))
        for band, v in zip(self.bands, self.band_vectors(values), strict=True):
            total += band.batch(
                v, backend, memory_budget=memory_budget, chunk_size=chunk_size, progress=progress
            )
        return total

    def _jax_size(self, n: int, memory_budget: float | None, chunk_size: int | None) -> int:
        if chunk_size is not None:
            if not (isinstance(chunk_size, int) and chunk_size >= 1):
                raise ValueError(f"chunk_size must be an integer >= 1, got {shown(chunk_size)}")
            return chunk_size
        fits = min(band.chunk_size("jax", memory_budget) for band in self.bands)
        size = min(JAX_CHUNK, fits, 1 << (n - 1).bit_length())
        return 1 << (size.bit_length() - 1)  # a power of two: batch sizes share programs

    def _jax_chunks(self, values: np.ndarray, size: int, progress: bool) -> np.ndarray:
        """Chunks of ``size`` rows (the last padded with the reference vector), one program
        per chunk shape for every band."""
        out = np.empty(len(values))
        n_chunks = -(-len(values) // size)
        for i, start in enumerate(range(0, len(values), size)):
            chunk = values[start : start + size]
            n = len(chunk)
            padded = np.concatenate([chunk, np.repeat(self.reference[None, :], size - n, 0)])
            out[start : start + n] = run_jax_rows(self, padded, n)
            if progress:
                print(f"chunk {i + 1}/{n_chunks}: {start + n} vectors")
        return finite_or_minus_inf(out)

    def jax_log_likelihood(self, vector: Any) -> Any:
        """``log L`` of one vector ``(n_params,)`` as one JAX computation over every band."""
        parts = [
            band.jax_log_likelihood(v)
            for band, v in zip(self.bands, self.band_vectors(vector), strict=True)
        ]
        return sum(parts[1:], parts[0])

    def per_band(self, vector: Any, backend: str | None = None) -> dict[str, float]:
        """Each band's ``log L`` at one vector, by name."""
        v = self._check_vectors(np.atleast_2d(np.asarray(vector, dtype=float)))[0]
        return {
            name: float(band(bv, backend))
            for name, band, bv in zip(self.names, self.bands, self.band_vectors(v), strict=True)
        }

    def _check_vectors(self, values: np.ndarray) -> np.ndarray:
        return check_vectors(values, self.free)

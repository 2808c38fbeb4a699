"""All images of a point source: solving the lens equation ``beta = theta - alpha(theta)``.

The method, the same on every backend:

1. **Triangle mapping.** A square grid of ``cells x cells`` cells over the search window is
   cut into two triangles per cell, and every vertex is mapped to the source plane once per
   lens. Where the lens map is close to linear over a triangle (everywhere but within a cell of
   a critical curve), the source lies inside a mapped triangle exactly when an image lies inside
   the triangle, so the triangles whose mapped image contains the source (a barycentric test)
   locate every image. The barycentric weights give a first guess inside the triangle.
2. **Newton refinement** with the Jacobian ``A = I - H`` from the tracer's hessian ``H``:
   ``theta <- theta + A^-1 (beta - beta(theta))``, each step clipped to two grid cells (near a
   critical curve ``A`` is nearly singular and a full step would jump away). A candidate
   clipped five times is dropped: its triangle held no image nearby (about a singular centre
   the mapped triangles are huge and contain sources whose images are far away).
3. **Acceptance and de-duplication.** A candidate is an image when its source-plane residual
   ``|theta - alpha(theta) - beta|`` is below ``tolerance``; candidates closer than
   ``1e-4`` of a cell are one image (a source on a shared edge is found in both triangles), the
   first in grid order kept.
4. **Magnification and parity**: ``mu = 1 / det A`` (signed; infinite exactly on a critical
   curve) and ``parity = sign(det A)`` (+1 for minima and maxima, -1 for saddle points).

On JAX the images' derivatives (with respect to the lens and the source) are the implicit
function theorem's, ``d theta = A^-1 (d beta + d alpha)`` with ``d alpha`` at fixed ``theta``
(``jax.custom_jvp``, every order): the search and the steps run without derivatives, so that
reverse mode does not run back through every step and the mapped grid.

Images are returned in grid order (by the first triangle that found them, rows of increasing
``y``, then increasing ``x``), padded to ``max_images`` with a mask, on every backend: one shape
for numba and JAX, and a JAX program of fixed size that ``jit`` and ``vmap`` accept.

Limits, by construction: images outside the window are not found; two images closer than
about a cell near a critical curve (a source within about ``(cell size)^2`` of a fold caustic)
may be found as one or none; a lens whose centre is singular (SIS, SIE, power laws with
``slope >= 2``) has no central image, and none is returned (the kernels' value of the
deflection at the exact centre is 0, and the grid avoids the window's centre).

A degenerate configuration (a round lens with the source exactly behind its centre) has a
ring of solutions, not images: the solver returns ``max_images`` points of the ring, each
solving the lens equation, with very large (or infinite) magnifications, and ``complete`` is
False because the ring has more solutions than slots. No error is raised.

The steps every backend shares are in :mod:`twinlens.lensing.lens_equation_steps`; this module
holds the solver, its host driver (numba, numpy) and its JAX program.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from twinlens.backend import resolve_backend
from twinlens.backend.concrete import Batched
from twinlens.fields import ValueIdentity, schedule_field, static_field
from twinlens.lensing import lens_equation_loops as loops
from twinlens.lensing.lens_equation_steps import (
    _BLOCK,
    _SLACK,
    _block_arrays,
    _finish,
    _first_guess,
    _lens_deflections,
    _newton,
    _newton_rows,
    _root_derivatives,
    _triangle_table,
    _without_derivatives,
    slot_layout,
)
from twinlens.lensing.tracer import Tracer
from twinlens.profiles.base import _numbers
from twinlens.profiles.checks import check_count, check_pair, check_positive, check_range

__all__ = ["ImageSolver", "Images", "solve_lens_equation"]


class Images(NamedTuple):
    """Images of point sources, padded to a fixed number per source.

    Its fields, each with the sources' batch shape ``(...)`` in front (none for one source):

    positions : array, (..., max_images, 2)
        Image positions ``(x, y)``, arcsec; 0 in unused slots.
    magnifications : array, (..., max_images)
        Signed magnification ``1 / det(I - H)``; 0 in unused slots.
    parities : array, (..., max_images)
        ``sign(det(I - H))``: +1 (minimum or maximum), -1 (saddle point), 0 in unused slots.
    mask : array of bool, (..., max_images)
        True for the slots that hold an image.
    complete : array of bool, (...)
        False when more images (or candidate triangles) were found than there are slots, so
        some may be missing: raise ``max_images`` (a degenerate ring is always incomplete).
    """

    positions: Any
    magnifications: Any
    parities: Any
    mask: Any
    complete: Any

    @property
    def n_images(self) -> Any:
        """Number of images per source, ``(...)``."""
        return self.mask.sum(axis=-1)

    def found(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For one source: ``(positions (n, 2), magnifications (n,), parities (n,))`` of the
        ``n`` images found, as numpy arrays (unused slots dropped)."""
        mask = np.asarray(self.mask)
        if mask.ndim != 1:
            raise ValueError(
                f"found() is for one source; these images are for a batch of shape "
                f"{mask.shape[:-1]}: index it first (images[i] is not a source)"
            )
        return (
            np.asarray(self.positions)[mask],
            np.asarray(self.magnifications)[mask],
            np.asarray(self.parities)[mask],
        )


@dataclass(frozen=True, eq=False)
class ImageSolver(ValueIdentity):
    """Finds all images of point sources behind a :class:`~twinlens.Tracer` (one lens plane)
    or a :class:`~twinlens.lensing.multiplane.MultiPlaneTracer`.

    See :mod:`twinlens.lensing.lens_equation` for the method and its limits. Every field is static
    configuration (it fixes the size of the JAX program); the solver is value-hashed, so an
    equal solver reuses the compiled programs and the mapped grids.

    Parameters
    ----------
    window : float
        Half-width of the square search window, arcsec, > 0: images are looked for within
        ``centre +- window`` in x and y.
    centre : (float, float)
        Centre of the window, arcsec.
    cells : int
        Grid cells per side, 2 to 4000 (default 301, odd so that no vertex falls on the window's
        centre, where a lens centre usually is). Finer grids separate images closer to critical
        curves; the search costs ``2 cells^2`` triangle tests per source.
    max_images : int
        Slots per source in the result, 1 to 64 (default 5: a quad and a central image).
    newton_iterations : int
        Newton steps, 1 to 200 (the JAX program takes all of them; numba stops once converged).
    tolerance : float
        Largest source-plane residual ``|theta - alpha(theta) - beta|`` of an image, arcsec,
        > 0 (default 1e-10).
    batch_size : int or None
        Sources per step of ``jax.lax.map`` for a batch of sources on JAX, 1 to 65536 (about
        0.5 MB each with the default ``cells``). None (default): 32 on a CPU, where wider steps
        only move more memory, and 1024 on an accelerator, where the width is the speed
        (:func:`jax_batch_size`).
    """

    window: float = static_field(default=4.0)
    centre: tuple[float, float] = static_field(default=(0.0, 0.0))
    cells: int = static_field(default=301)
    max_images: int = static_field(default=5)
    newton_iterations: int = static_field(default=20)
    tolerance: float = static_field(default=1e-10)
    batch_size: int | None = schedule_field(default=None)  # not in a checkpoint's digest

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "window", self.window)
        check_pair(self, "centre", self.centre)
        check_count(self, "cells", self.cells, 2, 4000)
        check_count(self, "max_images", self.max_images, 1, 64)
        check_count(self, "newton_iterations", self.newton_iterations, 1, 200)
        check_range(self, "tolerance", self.tolerance, 0.0, 1.0, low_open=True)
        if self.batch_size is not None:
            check_count(self, "batch_size", self.batch_size, 1, 65536)

    # -- the grid ---------------------------------------------------------------------------

    @property
    def spacing(self) -> float:
        """Grid cell size, arcsec."""
        return 2.0 * float(self.window) / self.cells

    @property
    def max_candidates(self) -> int:
        """Candidate triangles kept per source before de-duplication."""
        return 4 * self.max_images + 8

    def vertices(self) -> np.ndarray:
        """Grid vertices ``((cells + 1)^2, 2)``, arcsec, rows of increasing ``y``."""
        n = self.cells + 1
        x = float(self.centre[0]) + np.linspace(-self.window, self.window, n)
        y = float(self.centre[1]) + np.linspace(-self.window, self.window, n)
        xx, yy = np.meshgrid(x, y)
        return np.stack([xx.ravel(), yy.ravel()], axis=-1)

    @property
    def max_blocks(self) -> int:
        """Blocks of cells searched per source on JAX (``complete`` is False beyond)."""
        return 8 * self.max_images + 8

    @cached_property
    def _layout(self) -> tuple[Any, Any, Any]:
        """:func:`slot_layout` of this solver's triangles: the same for every lens."""
        v = self.vertices()
        return slot_layout(self.triangles(), v[:, 0], v[:, 1])

    def triangles(self) -> np.ndarray:
        """Vertex indices of the triangles, ``(n_blocks, 2 B^2, 3)``, in blocks of ``B x B``
        cells (``B = 8``; rows of blocks, then rows of cells within a block), per cell
        ``(v00, v10, v11)`` then ``(v00, v11, v01)``; -1 pads the blocks at the far edges.
        A source is looked for only in blocks whose mapped vertices' bounding box holds it."""
        return _triangle_table(self.cells)

    # -- solving ----------------------------------------------------------------------------

    def solve(self, tracer: Tracer, source: Any, backend: str | None = None) -> Images:
        """All images of point sources at ``source``.

        Parameters
        ----------
        tracer : Tracer
            The lens (its lens galaxies' mass; source galaxies are ignored).
        source : array, (..., 2)
            Source positions ``(beta_x, beta_y)``, arcsec: one source ``(2,)`` or a batch.
            For a batch of lenses (a tracer whose lens parameters are
            :func:`~twinlens.backend.concrete.batched` columns, numba and numpy) one source per
            lens, ``(n_lenses, 2)``, or ``(2,)`` behind every lens.
        backend : str, optional
            ``"numba"``, ``"jax"`` or ``"numpy"`` (default: JAX for JAX inputs or parameters,
            else the process default).

        Returns
        -------
        Images
            Padded to ``max_images`` per source, with the batch shape of ``source`` in front.
        """
        if not isinstance(tracer, Tracer):
            raise TypeError(f"tracer must be a Tracer, got {type(tracer).__name__}")
        b = resolve_backend(backend, source, *_numbers(tracer))
        if b == "jax":
            return _jax_program()(self, tracer, source)
        src = np.asarray(source)
        if src.dtype.kind not in "iuf" or src.ndim < 1 or src.shape[-1] != 2:
            raise ValueError(
                f"source must be real positions of shape (..., 2), got shape {src.shape} and "
                f"dtype {src.dtype}"
            )
        src = src.astype(np.float64)
        if not np.all(np.isfinite(src)):
            raise ValueError("source must hold finite positions (x, y), arcsec; got NaN or inf")
        rows = lens_rows(tracer)
        if rows:
            return self._solve_rows(tracer, _one_per_lens(src, rows), b)
        flat = src.reshape(-1, 2)
        # the grid's mapping (its vertices deflected, its blocks gathered) is large work: on
        # every thread; the search and Newton steps of a few sources are not
        self._mapped(tracer, b)
        with _serial_when_small(flat.shape[0], b):
            images = self._solve_host(tracer, flat, b)
        batch = src.shape[:-1]
        m = self.max_images
        return Images(
            images.positions.reshape(*batch, m, 2),
            images.magnifications.reshape(*batch, m),
            images.parities.reshape(*batch, m),
            images.mask.reshape(*batch, m),
            images.complete.reshape(batch),
        )

    def _mapped(self, tracer: Tracer, backend: str) -> tuple[np.ndarray, ...]:
        """``(tri (T, 6), image (T, 6), boxes (n_blocks, 4))``: the mapped and the image-plane
        vertices of every triangle slot (zeros in padding) and each block's source-plane
        bounding box ``(x_min, x_max, y_min, y_max)``, remembered for the last few (solver,
        tracer) pairs: the grid is mapped once per lens."""
        key = (self, tracer, backend)
        hit = _MAPPED.get(key)
        if hit is not None:
            _MAPPED.move_to_end(key)
            return hit
        v = self.vertices()
        ax, ay = _lens_deflections(tracer, v[:, 0], v[:, 1], backend)
        mx, my = v[:, 0] - ax, v[:, 1] - ay
        if backend == "numba":  # one compiled pass over the blocks, in parallel
            pad, safe, image = self._layout
            tri = np.empty((*safe.shape[:2], 6))
            boxes = np.empty((safe.shape[0], 4))
            loops.compiled().map_blocks(mx, my, safe, pad, tri, boxes)
            out = (tri.reshape(-1, 6), image.reshape(-1, 6), boxes)
        else:
            out = _block_arrays(self._layout, mx, my, np)
        _MAPPED[key] = out
        while len(_MAPPED) > _MAPPED_SIZE:
            _MAPPED.popitem(last=False)
        return out

    def _solve_host(self, tracer: Tracer, sources: np.ndarray, backend: str) -> Images:
        """numba and numpy: sources ``(n, 2)``."""
        tri, image, boxes = self._mapped(tracer, backend)
        n, k = sources.shape[0], self.max_candidates
        index = np.empty((n, k), dtype=np.int64)
        count = np.empty(n, dtype=np.int64)
        search = loops.compiled().find_triangles if backend == "numba" else loops.find_triangles
        search(tri, boxes, sources, _SLACK, index, count)
        valid = index >= 0
        safe = np.where(valid, index, 0)
        sx = np.broadcast_to(sources[:, :1], (n, k))
        sy = np.broadcast_to(sources[:, 1:], (n, k))
        x0, y0 = _first_guess(tri[safe], image[safe], sx, sy, np)
        # Newton on the candidates only: most slots are empty
        x, y, alive = _newton(tracer, x0[valid], y0[valid], sx[valid], sy[valid], self, backend, np)
        xs, ys = np.zeros((n, k)), np.zeros((n, k))
        xs[valid], ys[valid] = x, y
        valid[valid] = alive
        return Images(*_finish(tracer, xs, ys, sx, sy, valid, count <= k, self, backend, np))

    def _solve_rows(self, tracer: Tracer, sources: np.ndarray, backend: str) -> Images:
        """numba and numpy, a batch of lenses with one source each, ``sources (n, 2)``: the
        steps of :meth:`_solve_host`, each for every lens in one set of kernel calls (the
        same numbers as lens by lens)."""
        n, k = sources.shape[0], self.max_candidates
        v = self.vertices()
        ax, ay = _lens_deflections(tracer, v[:, 0], v[:, 1], backend)
        mx, my = (
            np.ascontiguousarray(np.broadcast_to(v[:, i] - a, (n, len(v))))
            for i, a in ((0, ax), (1, ay))
        )
        pad, safe, image = self._layout
        with _serial_when_small(n, backend):
            run = loops.compiled() if backend == "numba" else loops
            boxes = np.empty((n, safe.shape[0], 4))
            run.block_boxes_rows(mx, my, self.cells, _BLOCK, boxes)
            index = np.empty((n, k), dtype=np.int64)
            count = np.empty(n, dtype=np.int64)
            run.find_triangles_rows(mx, my, safe, pad, boxes, sources, _SLACK, index, count)
            valid = index >= 0
            slot = np.where(valid, index, 0)
            vertex = safe.reshape(-1, 3)[slot]  # (n, k, 3)
            row = np.arange(n)[:, None, None]
            gx, gy = mx[row, vertex], my[row, vertex]
            tri = np.stack([gx, gy], axis=-1).reshape(n, k, 6)  # the slots' (ax, ay, bx, ...)
            sx = np.broadcast_to(sources[:, :1], (n, k))
            sy = np.broadcast_to(sources[:, 1:], (n, k))
            x0, y0 = _first_guess(tri, image.reshape(-1, 6)[slot], sx, sy, np)
            # the candidates fill each row's first columns: Newton on those columns only
            c = int(min(count.max(initial=0), k))
            xs, ys = np.zeros((n, k)), np.zeros((n, k))
            if c:
                on = valid[:, :c]
                x, y, alive = _newton_rows(
                    tracer, x0[:, :c], y0[:, :c], sx[:, :c], sy[:, :c], on, self, backend
                )
                xs[:, :c], ys[:, :c] = np.where(on, x, 0.0), np.where(on, y, 0.0)
                valid[:, :c] &= alive
            out = _finish(tracer, xs, ys, sx, sy, valid, count <= k, self, backend, np)
        return Images(*out)


def lens_rows(tracer: Tracer) -> int:
    """The number of lenses in a tracer whose lens (mass) parameters hold
    :func:`~twinlens.backend.concrete.batched` columns, or 0 when they are plain values."""
    sizes = [
        int(np.size(v))
        for g in tracer.lenses
        for p in g.mass
        for v in _numbers(p)
        if isinstance(v, Batched)
    ]
    return max(sizes, default=0)


def _one_per_lens(sources: np.ndarray, rows: int) -> np.ndarray:
    if sources.shape not in ((2,), (1, 2), (rows, 2)):
        raise ValueError(
            f"for a batch of {rows} lenses, source must be one position (2,) or one per lens "
            f"({rows}, 2), got shape {sources.shape}"
        )
    return np.ascontiguousarray(np.broadcast_to(sources.reshape(-1, 2), (rows, 2)))


@contextmanager
def _serial_when_small(n_sources: int, backend: str) -> Iterator[None]:
    """numba on one thread for a few sources: each parallel kernel call wakes the other
    threads, which costs far more than its few points (measured on 2 busy cores)."""
    if backend != "numba" or n_sources >= _PARALLEL_MIN_SOURCES:
        yield
        return
    from twinlens.backend import numba_runtime

    numba = numba_runtime.load()
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


_PARALLEL_MIN_SOURCES = 16
_MAPPED: OrderedDict = OrderedDict()
_MAPPED_SIZE = 2  # about 18 MB each at the default 301 cells


def solve_lens_equation(
    tracer: Tracer, source: Any, backend: str | None = None, **settings: Any
) -> Images:
    """All images of point sources at ``source (..., 2)`` behind ``tracer``:
    ``ImageSolver(**settings).solve(tracer, source, backend)`` (see :class:`ImageSolver`)."""
    return ImageSolver(**settings).solve(tracer, source, backend)


# -- JAX ------------------------------------------------------------------------------------

_PROGRAM: Any = None


def _jax_program() -> Any:
    """The jitted JAX solver ``(solver, tracer, source) -> Images`` (the solver static, the
    tracer a pytree whose parameters may be traced)."""
    global _PROGRAM
    if _PROGRAM is None:
        from twinlens.backend import jax_runtime

        jax = jax_runtime.load()
        _PROGRAM = jax.jit(_solve_jax, static_argnums=0)
    return _PROGRAM


#: sources per ``lax.map`` step when the solver leaves it open: on an H200, P1's 1,000 sources
#: (docs/benchmarks.rst) ran many times faster in one step than in steps of 32, while on 2 CPU
#: cores the one step was slower
CPU_BATCH, ACCELERATOR_BATCH = 32, 1024


def jax_batch_size(solver: ImageSolver) -> int:
    """Sources per ``lax.map`` step: the solver's ``batch_size``, else by JAX's device."""
    if solver.batch_size is not None:
        return solver.batch_size
    from twinlens.backend import jax_runtime

    on_cpu = jax_runtime.load().default_backend() == "cpu"
    return CPU_BATCH if on_cpu else ACCELERATOR_BATCH


def _solve_jax(solver: ImageSolver, tracer: Tracer, source: Any) -> Images:
    import jax
    import jax.numpy as jnp

    src = jnp.asarray(source, dtype=float)
    if src.ndim < 1 or src.shape[-1] != 2:
        raise ValueError(f"source must have shape (..., 2) holding (x, y), got {src.shape}")
    v = solver.vertices()
    table = solver.triangles()
    n_blocks, per_block = table.shape[:2]
    vx, vy = jnp.asarray(v[:, 0]), jnp.asarray(v[:, 1])
    # the search and Newton's steps run without derivatives: the images' derivatives are the
    # lens equation's at its roots (_root_derivatives), so that reverse mode does not run
    # back through every step and the mapped grid
    fixed = _without_derivatives(tracer)
    ax, ay = _lens_deflections(fixed, vx, vy, "jax")
    tri, image, boxes = _block_arrays(solver._layout, vx - ax, vy - ay, jnp)
    tri = tri.reshape(n_blocks, per_block, 6)
    image = image.reshape(n_blocks, per_block, 6)
    k, kb = solver.max_candidates, solver.max_blocks

    def one(source: Any) -> Images:
        s = jax.lax.stop_gradient(source)
        # the blocks whose box holds the source, then their triangles (as the numba loop)
        in_box = (
            (boxes[:, 0] - _SLACK <= s[0])
            & (s[0] <= boxes[:, 1] + _SLACK)
            & (boxes[:, 2] - _SLACK <= s[1])
            & (s[1] <= boxes[:, 3] + _SLACK)
        )
        n_in_box = in_box.sum()
        (blocks,) = jnp.nonzero(in_box, size=kb, fill_value=0)
        t = tri[blocks]  # (kb, P, 6)
        ax, ay, bx, by, cx, cy = (t[..., i] for i in range(6))
        la, lb, lc, d = loops.barycentric(ax, ay, bx, by, cx, cy, s[0], s[1])
        inside = (d != 0.0) & (la >= -_SLACK) & (lb >= -_SLACK) & (lc >= -_SLACK)
        inside = (inside & (jnp.arange(kb) < n_in_box)[:, None]).ravel()
        count = inside.sum()
        (index,) = jnp.nonzero(inside, size=k, fill_value=0)
        valid = jnp.arange(k) < count
        sx = jnp.full(k, s[0])
        sy = jnp.full(k, s[1])
        x0, y0 = _first_guess(
            t.reshape(-1, 6)[index], image[blocks].reshape(-1, 6)[index], sx, sy, jnp
        )
        x, y, alive = _newton(fixed, x0, y0, sx, sy, solver, "jax", jnp)
        x, y = _root_derivatives(tracer, x, y, source[0], source[1])
        searched_all = (n_in_box <= kb) & (count <= k)
        packed = _finish(tracer, x, y, sx, sy, valid & alive, searched_all, solver, "jax", jnp)
        return Images(*packed)

    if src.ndim == 1:
        return one(src)
    flat = src.reshape(-1, 2)
    out = jax.lax.map(one, flat, batch_size=min(jax_batch_size(solver), flat.shape[0]))
    batch = src.shape[:-1]
    return Images(*(a.reshape(*batch, *a.shape[1:]) for a in out))

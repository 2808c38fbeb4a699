"""Source-plane meshes: where the source pixels sit and how points interpolate between them.

A mesh is static configuration (its fields select array sizes, so they hash by value and are
never JAX leaves). Given the traced, border-relocated sub-pixel positions of an evaluation, it
returns a :class:`MeshMapping`: for each sub-pixel, the source pixels it reads and their
weights, and the neighbour pairs that regularisation couples.

* :class:`Rectangular`: an ``(ny, nx)`` lattice of vertices spanning the traced sub-pixels'
  extent; bilinear interpolation (4 weights per sub-pixel); neighbours along rows and columns.
* :class:`RectangularAdaptDensity`: the same lattice with its columns and rows at the
  quantiles of the traced sub-pixels' ``x`` and ``y``, so each column (row) of cells holds
  about the same number of sub-pixels: small cells where the lens magnifies, large ones where
  the traced sub-pixels are sparse;
* :class:`Delaunay`: vertices at the points of an ``(ny, nx)`` overlay grid that fall in the
  mask, traced to the source plane (and relocated like the sub-pixels); barycentric
  interpolation in their Delaunay triangulation (3 weights); neighbours along triangle edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.backend.reductions import take_max, take_min
from twinlens.fields import ValueIdentity, static_field
from twinlens.grids import Grid2D
from twinlens.inversion import conventions, triangulation
from twinlens.inversion.interpolation import delaunay_weights, lattice_weights
from twinlens.messages import shown

__all__ = [
    "Delaunay",
    "MeshMapping",
    "Rectangular",
    "RectangularAdaptDensity",
    "overlay_points",
    "quantile_edges",
]


@dataclass(frozen=True)
class MeshMapping:
    """One evaluation's mesh: interpolation from source pixels to points, and neighbours.

    Attributes
    ----------
    indices : int array (n_points, k)
        Source pixels each point reads (``k = 4`` rectangular, 3 Delaunay).
    weights : float array (n_points, k)
        Their interpolation weights (summing to 1 per point).
    n_pixels : int
        Source pixels.
    vertices : float array, a row (x, y) per source pixel
        Source-pixel positions ``(x, y)``, arcsec.
    edges : int array (n_edges, 2)
        Neighbouring source-pixel pairs (may include padding).
    edge_valid : bool array (n_edges,)
        False on padding.
    stencils : int array (n_stencils, 3) or None
        Rows and columns of three consecutive pixels ``(left, middle, right)`` along a lattice
        line (the second differences of curvature regularisation); rectangular meshes only.
    status : int or int array
        0 when usable; else a :mod:`~twinlens.inversion.triangulation` status code.
    """

    indices: Any
    weights: Any
    n_pixels: int
    vertices: Any
    edges: Any
    edge_valid: Any
    stencils: Any
    status: Any


@dataclass(frozen=True, eq=False)
class Rectangular(ValueIdentity):
    """A uniform lattice of ``shape = (ny, nx)`` source pixels over the traced sub-pixels'
    extent, with bilinear interpolation.

    Parameters
    ----------
    shape : (int, int)
        Vertices along y and x, each from 3 to 1000 (curvature regularisation needs three in
        a line).
    """

    shape: tuple = static_field(default=(30, 30))

    def __post_init__(self) -> None:
        super().__post_init__()
        if (
            not isinstance(self.shape, tuple)
            or len(self.shape) != 2
            or not all(isinstance(n, int) and 3 <= n <= 1000 for n in self.shape)
        ):
            raise ValueError(
                f"{type(self).__name__}.shape must be (ny, nx), integers from 3 to 1000, got "
                f"{self.shape!r}"
            )

    @property
    def n_pixels(self) -> int:
        """Source pixels."""
        return self.shape[0] * self.shape[1]

    def image_plane_vertices(self, grid: Grid2D) -> np.ndarray | None:
        """None: the lattice is placed from the traced sub-pixels, not traced vertices."""
        return None

    def edges(self, points: Any, xp: Any = np, weights: Any = None) -> tuple[Any, Any]:
        """The lattice's vertex columns ``x_edges (nx,)`` and rows ``y_edges (ny,)``, arcsec,
        for traced sub-pixels ``points (n, 2)``: uniform over their extent (``weights`` is
        unused here; see :class:`RectangularAdaptDensity`)."""
        ny, nx = self.shape
        lo, hi = take_min(points, 0, xp), take_max(points, 0, xp)
        return _spread(lo[0], hi[0], nx, xp), _spread(lo[1], hi[1], ny, xp)

    def mapping(self, points: Any, vertices: Any, xp: Any = np, weights: Any = None) -> MeshMapping:
        """The mesh for traced sub-pixels ``points (n, 2)`` of area weights ``weights (n,)``
        (numpy; default equal) (``vertices`` is unused): the lattice at :meth:`edges`, with
        bilinear weights (:func:`~twinlens.inversion.interpolation.lattice_weights`)."""
        ny, nx = self.shape
        x_edges, y_edges = self.edges(points, xp, weights)
        ok = (x_edges[-1] > x_edges[0]) & (y_edges[-1] > y_edges[0])
        # a zero-width extent (every point on one line) is unusable; spread the edges so the
        # arithmetic stays finite
        x_edges = xp.where(ok, x_edges, x_edges[0] + xp.linspace(0.0, 1.0, nx))
        y_edges = xp.where(ok, y_edges, y_edges[0] + xp.linspace(0.0, 1.0, ny))
        indices, weights = lattice_weights(points, x_edges, y_edges, xp)
        vx = xp.broadcast_to(x_edges[None, :], (ny, nx)).reshape(-1)
        vy = xp.broadcast_to(y_edges[:, None], (ny, nx)).reshape(-1)
        edges, stencils = _lattice(self.shape)
        status = xp.where(ok, triangulation.STATUS_OK, triangulation.STATUS_DEGENERATE)
        if xp is np:
            status = int(status)
        return MeshMapping(
            indices=indices,
            weights=weights,
            n_pixels=self.n_pixels,
            vertices=xp.stack([vx, vy], axis=-1),
            edges=edges,
            edge_valid=np.ones(len(edges), dtype=bool),
            stencils=stencils,
            status=status,
        )


def _spread(lo: Any, hi: Any, n: int, xp: Any) -> Any:
    """``n`` uniform edges from ``lo`` to ``hi``, the end ones exactly ``lo`` and ``hi`` (so the
    extremal points lie on the lattice): ``lo + (hi - lo) t`` can round past ``hi`` at
    ``t = 1``."""
    t = xp.linspace(0.0, 1.0, n)
    return lo * (1.0 - t) + hi * t


def quantile_edges(values: Any, n: int, xp: Any = np, weights: Any = None) -> Any:
    """``n`` quantiles of ``values (n_values,)`` at probabilities ``0, 1/(n-1), ..., 1``, the
    first the minimum and the last the maximum.

    Without ``weights`` (or with equal ones): linear interpolation between order statistics
    (numpy's default ``linear`` method). With ``weights (n_values,)`` (each value's share,
    e.g. a sub-pixel's area): each value is spread over an interval of the cumulative weight
    as long as its weight, ``Q(t)`` (``0 <= t <= W``, ``W`` the total) is the value whose
    interval holds ``t``, and quantile ``j`` is the mean of ``Q`` over a window as wide as the
    mean weight ``h = W / n_values``, starting at ``(j / (n - 1)) (W - h)``; the mean is a
    difference of ``int_0^t Q``, interpolated linearly on the cumulative weight. For equal
    weights this is the unweighted rule exactly; for any weights it is continuous and
    piecewise linear in the values (two values of different weights that swap order are equal
    where they swap), hence differentiable almost everywhere under JAX.

    Parameters
    ----------
    values : float array (n_values,)
    n : int
        >= 2.
    xp : module
    weights : float array (n_values,), optional
        Concrete (numpy), > 0.

    Returns
    -------
    float array (n,)
        Non-decreasing.
    """
    count = values.shape[0]
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        if np.all(weights == weights[0]):
            weights = None
    if weights is None:
        position = np.linspace(0.0, 1.0, n) * (count - 1)
        lo = np.floor(position).astype(np.int64)
        hi = np.minimum(lo + 1, count - 1)
        frac = position - lo
        ordered = xp.sort(values)
        return ordered[lo] + frac * (ordered[hi] - ordered[lo])
    order = xp.argsort(_stop(values, xp))
    ordered = values[order]
    w = xp.asarray(weights)[order]
    zero = xp.zeros(1)
    knots = xp.concatenate([zero, xp.cumsum(w)])  # the cumulative weight
    integral = xp.concatenate([zero, xp.cumsum(ordered * w)])  # int_0^knot Q(t) dt
    total = float(np.sum(weights))
    h = total / count
    start = np.linspace(0.0, 1.0, n)[1:-1] * (total - h)
    inner = (xp.interp(start + h, knots, integral) - xp.interp(start, knots, integral)) / h
    return xp.concatenate([ordered[:1], inner, ordered[-1:]])


def _stop(value: Any, xp: Any) -> Any:
    if xp is np:
        return value
    from twinlens.backend import jax_runtime

    return jax_runtime.load().lax.stop_gradient(value)


@dataclass(frozen=True, eq=False)
class RectangularAdaptDensity(Rectangular):
    """A lattice of ``shape = (ny, nx)`` source pixels whose columns and rows adapt to the
    density of the traced sub-pixels, with bilinear interpolation (autolens'
    ``RectangularAdaptDensity`` idea; the edges here are quantiles, not a kernel CDF).

    The vertex columns sit at the ``j / (nx - 1)`` quantiles of the traced sub-pixels' ``x``
    (:func:`quantile_edges`), weighted by each sub-pixel's area (its weight in its pixel's
    average, so adaptive oversampling, with sub-pixels of several sizes, does not pull the
    edges to where sub-pixels are dense), the rows likewise in ``y``: each column of cells,
    and each row, holds about ``1 / (nx - 1)`` (``1 / (ny - 1)``) of the masked image-plane
    area, so the source pixels crowd where the lens magnifies. The first and last edges are
    the traced extent, as for :class:`Rectangular`. ``uniform_fraction`` blends the quantile
    edges with the uniform ones, ``(1 - u) q + u e``, bounding how thin a cell gets;
    ``u = 1`` is :class:`Rectangular`'s lattice.

    The edges are continuous, piecewise linear functions of the traced positions, so the
    evidence is continuous in the lens parameters and JAX differentiates it (the derivative
    changes where two sub-pixels swap order along an axis, as a Delaunay mesh's changes where
    its triangulation does).

    Parameters
    ----------
    shape : (int, int)
        Vertices along y and x, each from 3 to 1000.
    uniform_fraction : float
        ``u`` in [0, 1]; 0 (default) places the edges at the quantiles alone.
    """

    uniform_fraction: float = static_field(default=0.0)

    def __post_init__(self) -> None:
        u = self.uniform_fraction
        if (
            isinstance(u, bool)
            or not isinstance(u, (int, float, np.integer, np.floating))
            or not 0.0 <= float(u) <= 1.0
        ):
            raise ValueError(
                "RectangularAdaptDensity.uniform_fraction must be a number in [0, 1], "
                f"got {shown(u)}"
            )
        object.__setattr__(self, "uniform_fraction", float(u))
        super().__post_init__()

    def edges(self, points: Any, xp: Any = np, weights: Any = None) -> tuple[Any, Any]:
        """The lattice's vertex columns ``x_edges (nx,)`` and rows ``y_edges (ny,)``, arcsec,
        for traced sub-pixels ``points (n, 2)`` of area weights ``weights (n,)`` (numpy;
        default equal)."""
        ny, nx = self.shape
        out = []
        for axis, n in ((0, nx), (1, ny)):
            q = quantile_edges(points[:, axis], n, xp, weights)
            u = self.uniform_fraction
            if u > 0.0:
                lo, hi = q[0], q[-1]  # the extent: minimum and maximum
                inner = (1.0 - u) * q[1:-1] + u * _spread(lo, hi, n, xp)[1:-1]
                q = xp.concatenate([q[:1], inner, q[-1:]])  # the ends stay exactly lo, hi
            out.append(q)
        return out[0], out[1]


@lru_cache(maxsize=16)
def _lattice(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour pairs and three-in-a-line stencils of an ``(ny, nx)`` lattice."""
    ny, nx = shape
    index = np.arange(ny * nx).reshape(ny, nx)
    edges = np.concatenate(
        [
            np.stack([index[:, :-1].ravel(), index[:, 1:].ravel()], axis=-1),
            np.stack([index[:-1, :].ravel(), index[1:, :].ravel()], axis=-1),
        ]
    )
    stencils = np.concatenate(
        [
            np.stack([index[:, :-2].ravel(), index[:, 1:-1].ravel(), index[:, 2:].ravel()], -1),
            np.stack([index[:-2, :].ravel(), index[1:-1, :].ravel(), index[2:, :].ravel()], -1),
        ]
    )
    for a in (edges, stencils):
        a.setflags(write=False)
    return edges, stencils


@dataclass(frozen=True, eq=False)
class Delaunay(ValueIdentity):
    """Source pixels at the traced points of an image-plane overlay grid, triangulated, with
    barycentric interpolation.

    Vertices that coincide in the source plane (the border relocation can move two onto one
    point) are kept: each is tied by regularisation to the vertex it coincides with and
    receives no light of its own.

    Parameters
    ----------
    shape : (int, int)
        The overlay grid: ``ny x nx`` points spread uniformly over the bounding box of the
        mask's pixels; those falling in a masked-in pixel become vertices. Each from 2 to 1000.
    image_vertices : float array (n, 2), optional
        Image-plane vertex positions ``(x, y)`` (arcsec) to use instead of the overlay: at
        least 3, distinct, not all on one line (e.g. from a clustering of a previous fit's
        source brightness).
    placement : str
        Where the overlay's points sit: ``"inset"`` (default), at ``k / (n + 1)`` of the
        mask's bounding box; ``"cell_centres"``, autoarray's ``Overlay``
        (:func:`~twinlens.inversion.conventions.cell_centre_points`).
    outside_hull : str
        What a sub-pixel outside the vertices' convex hull reads: ``"hull_edge"`` (default),
        the nearest point of the hull; ``"nearest_vertex"``, the nearest vertex (autoarray's
        rule; the weights then jump where a sub-pixel crosses the hull).
    """

    shape: tuple = static_field(default=(30, 30))
    image_vertices: Any = static_field(default=None)
    placement: str = static_field(default="inset")
    outside_hull: str = static_field(default="hull_edge")

    def __post_init__(self) -> None:
        _check_delaunay_options(self)
        if self.image_vertices is not None:
            vertices = np.asarray(self.image_vertices, dtype=float)
            if vertices.ndim != 2 or vertices.shape[1] != 2:
                raise ValueError(
                    f"Delaunay.image_vertices must have shape (n, 2), got {vertices.shape}"
                )
            triangulation.check_vertices(vertices, "Delaunay.image_vertices")
            object.__setattr__(self, "image_vertices", vertices)
        super().__post_init__()
        if (
            not isinstance(self.shape, tuple)
            or len(self.shape) != 2
            or not all(isinstance(n, int) and 2 <= n <= 1000 for n in self.shape)
        ):
            raise ValueError(
                f"Delaunay.shape must be (ny, nx), integers from 2 to 1000, got {shown(self.shape)}"
            )

    def image_plane_vertices(self, grid: Grid2D) -> np.ndarray:
        """The vertices in the image plane, ``(n_vertices, 2)``, arcsec: ``image_vertices``,
        or the overlay points inside the mask."""
        if self.image_vertices is not None:
            return self.image_vertices
        if self.placement == "cell_centres":
            return conventions.cell_centre_points(grid, self.shape)
        return overlay_points(grid, self.shape)

    def mapping(self, points: Any, vertices: Any, xp: Any = np, weights: Any = None) -> MeshMapping:
        """The mesh for traced sub-pixels ``points (n, 2)`` and traced vertices
        ``vertices (n_vertices, 2)`` (``weights`` is unused)."""
        if xp is np:
            top = triangulation.topology(vertices, points, outside_hull=self.outside_hull)
            corners, inside, edges, valid, status = (
                top.corners,
                top.inside,
                top.edges,
                top.edge_valid,
                top.status,
            )
        else:
            corners, inside, edges, valid, status = triangulation.jax_topology(
                vertices, points, self.outside_hull
            )
        weights = delaunay_weights(points, vertices, corners, inside, xp)
        return MeshMapping(
            indices=corners,
            weights=weights,
            n_pixels=int(vertices.shape[0]),
            vertices=vertices,
            edges=edges,
            edge_valid=valid,
            stencils=None,
            status=status,
        )


def _check_delaunay_options(mesh: Delaunay) -> None:
    conventions.check_choice("Delaunay.placement", mesh.placement, conventions.PLACEMENTS)
    conventions.check_choice("Delaunay.outside_hull", mesh.outside_hull, conventions.OUTSIDE_HULL)
    if mesh.image_vertices is not None and mesh.placement != conventions.PLACEMENTS[0]:
        raise ValueError(
            f"Delaunay.placement = {mesh.placement!r} places an overlay's points; it does not "
            "apply to image_vertices (leave it out)"
        )


def overlay_points(grid: Grid2D, shape: tuple[int, int]) -> np.ndarray:
    """Points of an ``shape = (ny, nx)`` grid spread over the bounding box of ``grid``'s used
    pixels (edges included), kept where they fall inside a used pixel; ``(n, 2)``, arcsec."""
    return _overlay(grid, tuple(shape))


@lru_cache(maxsize=32)
def _overlay(grid: Grid2D, shape: tuple[int, int]) -> np.ndarray:
    used = grid.used
    s = grid.pixel_scale
    xs, ys = grid.x[used], grid.y[used]
    ny, nx = shape
    ox = np.linspace(xs.min() - s / 2, xs.max() + s / 2, nx + 2)[1:-1]
    oy = np.linspace(ys.min() - s / 2, ys.max() + s / 2, ny + 2)[1:-1]
    yy, xx = np.meshgrid(oy, ox, indexing="ij")
    gny, gnx = grid.shape
    col = np.floor((xx - grid.origin[0]) / s + gnx / 2).astype(np.int64)
    row = np.floor((yy - grid.origin[1]) / s + gny / 2).astype(np.int64)
    ok = (col >= 0) & (col < gnx) & (row >= 0) & (row < gny)
    ok[ok] = used[row[ok], col[ok]]
    out = np.stack([xx[ok], yy[ok]], axis=-1)
    out.setflags(write=False)
    return out

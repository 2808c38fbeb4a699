"""Interpolation weights from source-pixel values to source-plane points.

A pixelised source is a vector ``s`` of values at the mesh's vertices (its *source pixels*);
the brightness at a point is a weighted sum of a few of them:

* rectangular mesh: bilinear interpolation between the four corners of the lattice cell that
  holds the point (4 weights), on a lattice of edges of any spacing, uniform or not
  (:func:`lattice_weights`);
* Delaunay mesh: barycentric (linear) interpolation inside the triangle that holds the point
  (3 weights); a point outside the convex hull of the vertices takes the value of the nearest
  point of the hull (linear along the nearest hull edge), so the weights are continuous across
  the hull.

Every weight is a polynomial of the point's and the vertices' coordinates divided by a cell
size or a triangle's doubled area, so it is differentiable (under JAX) with respect to both;
which cell or triangle holds a point is found separately and carries no derivative.

The per-point formulas are plain arithmetic (:func:`barycentric_point`,
:func:`bilinear_point`), so one source serves numpy, JAX and the numba loops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "barycentric_point",
    "bilinear_point",
    "delaunay_weights",
    "hull_edge_fraction",
    "lattice_weights",
]


def barycentric_point(
    x: Any, y: Any, xa: Any, ya: Any, xb: Any, yb: Any, xc: Any, yc: Any
) -> tuple[Any, Any, Any]:
    """Barycentric coordinates ``(la, lb, lc)`` of point ``(x, y)`` in triangle ``abc``.

    They sum to 1 and reproduce every linear function exactly:
    ``la * f(a) + lb * f(b) + lc * f(c) = f(x, y)``. A degenerate (zero-area) triangle gives
    finite values (its doubled area is replaced by 1); meshes with such triangles are refused
    before this is reached.
    """
    det = (yb - yc) * (xa - xc) + (xc - xb) * (ya - yc)
    det = det + (det == 0.0)  # arithmetic, so it runs on numpy, JAX and numba scalars
    la = ((yb - yc) * (x - xc) + (xc - xb) * (y - yc)) / det
    lb = ((yc - ya) * (x - xc) + (xa - xc) * (y - yc)) / det
    return la, lb, 1.0 - la - lb


def bilinear_point(tx: Any, ty: Any) -> tuple[Any, Any, Any, Any]:
    """Bilinear weights of the corners ``(x0 y0, x1 y0, x0 y1, x1 y1)`` of a cell, at fractional
    position ``(tx, ty)`` in ``[0, 1]^2``."""
    return (1.0 - tx) * (1.0 - ty), tx * (1.0 - ty), (1.0 - tx) * ty, tx * ty


def hull_edge_fraction(x: Any, y: Any, xa: Any, ya: Any, xb: Any, yb: Any) -> Any:
    """Unclamped fraction ``t`` along edge ``ab`` of the projection of point ``(x, y)``;
    the weights are ``(1 - t, t)`` once ``t`` is clamped to ``[0, 1]``. A zero-length edge
    gives a finite value."""
    dx, dy = xb - xa, yb - ya
    length2 = dx * dx + dy * dy
    length2 = length2 + (length2 == 0.0)
    return ((x - xa) * dx + (y - ya) * dy) / length2


def lattice_weights(points: Any, x_edges: Any, y_edges: Any, xp: Any = np) -> tuple[Any, Any]:
    """Indices and weights of bilinear interpolation on a lattice whose vertex columns sit at
    ``x_edges (nx,)`` and rows at ``y_edges (ny,)`` (each non-decreasing, spacing free).

    Vertex ``(i, j)`` sits at ``(x_edges[j], y_edges[i])`` and is source pixel ``i * nx + j``.
    A point reads the cell ``[x_edges[j], x_edges[j + 1]] x [y_edges[i], y_edges[i + 1]]``
    that holds it, with the fractions ``tx = (x - x_edges[j]) / (x_edges[j + 1] - x_edges[j])``
    (likewise ``ty``) in :func:`bilinear_point`; a point outside the lattice is clamped to its
    edge. A cell of zero width (two equal edges) holds no point: a point on that edge reads
    the next cell, so no division by zero is reached.

    Parameters
    ----------
    points : float array (n, 2)
        ``(x, y)``, arcsec.
    x_edges : float array (nx,)
    y_edges : float array (ny,)
        ``nx, ny >= 2``.
    xp : module
        ``numpy`` or ``jax.numpy``.

    Returns
    -------
    indices : int array (n, 4)
    weights : float array (n, 4)
        Non-negative, summing to 1 per point; they reproduce every bilinear function of
        ``(x, y)`` exactly inside the lattice.
    """
    nx = x_edges.shape[0]
    j, tx = _axis_fraction(points[:, 0], x_edges, xp)
    i, ty = _axis_fraction(points[:, 1], y_edges, xp)
    w = bilinear_point(tx, ty)
    base = i * nx + j
    indices = xp.stack([base, base + 1, base + nx, base + nx + 1], axis=-1)
    return indices, xp.stack(w, axis=-1)


def _axis_fraction(values: Any, edges: Any, xp: Any) -> tuple[Any, Any]:
    """Cell index (no derivative) and fraction within it (differentiable in the values and
    the edges) of 1-D ``values`` on non-decreasing ``edges``."""
    n = edges.shape[0]
    # the last cell whose left edge is <= the value: skips zero-width cells
    if xp is np:
        cell = _cell_numpy(values, edges)
    else:
        cell = xp.searchsorted(_stop(edges, xp), _stop(values, xp), side="right") - 1
        cell = xp.clip(cell, 0, n - 2)
    # per cell, not per point: the inverse width (0 for a zero-width cell, which then gives
    # t = 0 without a division by zero), gathered once
    width = edges[1:] - edges[:-1]
    wide = width > 0.0
    inverse = xp.where(wide, 1.0 / xp.where(wide, width, 1.0), 0.0)
    t = (values - edges[cell]) * inverse[cell]
    return cell, xp.clip(t, 0.0, 1.0)


def _cell_numpy(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``clip(searchsorted(edges, values, "right") - 1, 0, n - 2)``, faster where the edges are
    near uniform (:class:`~twinlens.inversion.meshes.Rectangular`): a guess by
    arithmetic, corrected by a step either way, checked, and the binary search only where a
    guess is still wrong."""
    n = edges.shape[0]
    span = edges[-1] - edges[0]
    step = span / (n - 1)
    if span > 0 and np.all(np.abs(np.diff(edges) - step) < 0.5 * step):  # near uniform
        cell = np.floor((values - edges[0]) * ((n - 1) / span))
        cell = np.clip(cell, 0, n - 2).astype(np.intp)
        for _ in range(2):
            cell += (values >= edges[cell + 1]) & (cell < n - 2)
            cell -= (values < edges[cell]) & (cell > 0)
        ok = ((values >= edges[cell]) | (cell == 0)) & (
            (values < edges[cell + 1]) | (cell == n - 2)
        )
        if not ok.all():  # the binary search where the guess is still wrong
            bad = ~ok
            cell[bad] = np.clip(np.searchsorted(edges, values[bad], side="right") - 1, 0, n - 2)
        return cell
    return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, n - 2)


def delaunay_weights(points: Any, vertices: Any, corners: Any, inside: Any, xp: Any = np) -> Any:
    """Weights of the three ``corners`` of each point's triangle (or hull edge).

    Parameters
    ----------
    points : float array (n, 2)
    vertices : float array (n_vertices, 2)
    corners : int array (n, 3)
        For a point inside the hull, its triangle's vertices; for one outside, the nearest hull
        edge's two vertices, the second repeated.
    inside : bool array (n,)
    xp : module

    Returns
    -------
    float array (n, 3)
        Barycentric weights inside; ``(1 - t, t, 0)`` along the nearest hull edge outside.
    """
    x, y = points[:, 0], points[:, 1]
    a, b, c = vertices[corners[:, 0]], vertices[corners[:, 1]], vertices[corners[:, 2]]
    la, lb, lc = barycentric_point(x, y, a[:, 0], a[:, 1], b[:, 0], b[:, 1], c[:, 0], c[:, 1])
    t = xp.clip(hull_edge_fraction(x, y, a[:, 0], a[:, 1], b[:, 0], b[:, 1]), 0.0, 1.0)
    return xp.stack(
        [xp.where(inside, la, 1.0 - t), xp.where(inside, lb, t), xp.where(inside, lc, 0.0)],
        axis=-1,
    )


def _stop(value: Any, xp: Any) -> Any:
    if xp is np:
        return value
    from twinlens.backend import jax_runtime

    return jax_runtime.load().lax.stop_gradient(value)

"""Delaunay triangulation and point location, on the host (scipy), for every backend.

The topology of a Delaunay mesh (which vertices form triangles, which triangle holds each
point, which vertices are neighbours) is integer data with no derivative. It is computed by
``scipy.spatial.Delaunay`` on the CPU for every backend; under JAX it is reached through
``jax.pure_callback`` (:func:`jax_topology`) with its inputs' derivatives stopped, and the
interpolation weights are then computed from the vertex coordinates in JAX
(:func:`twinlens.inversion.interpolation.delaunay_weights`), so they stay differentiable.

Outputs have fixed shapes, so that a jit-compiled program can hold them: a triangulation of
``n`` vertices has at most ``3 n - 3`` edges, and the edge list is padded to ``3 n`` with
``(0, 0)`` pairs marked invalid.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "STATUS_DEGENERATE",
    "STATUS_EMPTY",
    "STATUS_OK",
    "Topology",
    "check_vertices",
    "jax_topology",
    "topology",
]

logger = logging.getLogger("twinlens.inversion")

STATUS_OK = 0
STATUS_DEGENERATE = 2  # fewer than 3 vertices, all on one line, or not finite
STATUS_EMPTY = 3  # no traced sub-pixel falls inside the mesh

_REASONS = {
    STATUS_DEGENERATE: "degenerate mesh vertices (fewer than 3, collinear, or not finite)",
    STATUS_EMPTY: "no traced sub-pixel falls inside the mesh",
}
_BLOCK = 2048
FIND_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Topology:
    """The integer side of a Delaunay mesh for one set of vertices and points.

    Attributes
    ----------
    corners : int array (n_points, 3)
        Each point's triangle; for a point outside the hull, its nearest hull edge ``(a, b, b)``.
    inside : bool array (n_points,)
        Whether the point lies in a triangle (else on the hull's outside).
    edges : int array (3 n_vertices, 2)
        Neighbouring vertex pairs ``i < j``, padded with ``(0, 0)``.
    edge_valid : bool array (3 n_vertices,)
        False on the padding.
    status : int
        :data:`STATUS_OK`, or why the mesh is unusable (the other arrays are then zeros).
    """

    corners: np.ndarray
    inside: np.ndarray
    edges: np.ndarray
    edge_valid: np.ndarray
    status: int

    @property
    def reason(self) -> str:
        """Why the mesh is unusable ('' when it is usable)."""
        return _REASONS.get(self.status, "")


def _status_of(vertices: np.ndarray) -> tuple[int, Any]:
    """``(status, triangulation or None)``; coincident vertices are allowed here (see
    :func:`topology`)."""
    from scipy.spatial import Delaunay, QhullError

    if vertices.ndim != 2 or vertices.shape[0] < 3 or not np.all(np.isfinite(vertices)):
        return STATUS_DEGENERATE, None
    try:
        tri = Delaunay(vertices)
    except QhullError:
        return STATUS_DEGENERATE, None
    return STATUS_OK, tri


def check_vertices(vertices: Any, name: str = "vertices") -> None:
    """Raise ValueError, naming ``name``, if concrete ``vertices (n, 2)`` cannot form a mesh:
    fewer than 3, not finite, all collinear, or two at one position."""
    arr = np.asarray(vertices, dtype=float)
    status, tri = _status_of(arr)
    if status == STATUS_DEGENERATE:
        raise ValueError(
            f"{name} must be at least 3 finite (x, y) points, not all on one line; got "
            f"shape {arr.shape}"
        )
    if len(tri.coplanar):
        first = int(tri.coplanar[0, 0])
        raise ValueError(
            f"{name} must be distinct points: {len(tri.coplanar)} coincide with another "
            f"(the first, index {first}, is at {tuple(arr[first])})"
        )


def topology(
    vertices: Any, points: Any, log: bool = True, outside_hull: str = "hull_edge"
) -> Topology:
    """Triangulate ``vertices (n_v, 2)`` and locate ``points (n, 2)`` in the triangulation.

    A point outside the hull reads its nearest hull edge ``(a, b, b)`` (``outside_hull =
    "hull_edge"``) or its nearest vertex ``(v, v, v)`` (``"nearest_vertex"``, autoarray's
    rule; :func:`~twinlens.inversion.interpolation.delaunay_weights` then gives it the weights
    ``(1, 0, 0)``). An unusable mesh gives a :class:`Topology` whose ``status`` says why
    (logged at warning level when ``log``), never an exception, so that a likelihood can
    return ``-inf``.
    """
    vertices = np.asarray(vertices, dtype=float)
    points = np.asarray(points, dtype=float)
    n_v, n = vertices.shape[0], points.shape[0]
    corners = np.zeros((n, 3), dtype=np.int64)
    inside = np.zeros(n, dtype=bool)
    edges = np.zeros((3 * n_v, 2), dtype=np.int64)
    valid = np.zeros(3 * n_v, dtype=bool)
    status, tri = _status_of(vertices)
    if status != STATUS_OK:
        if log:
            logger.warning("pixelised source: %s; log-evidence is -inf", _REASONS[status])
        return Topology(corners, inside, edges, valid, status)
    # a tolerance (in barycentric coordinates) above scipy's default of 100 ulp: with the
    # default, the walk through the triangulation fell back to a slow search for most points
    # (5,744 points in 492 vertices); a point within it of a triangle is interpolated in that
    # triangle, continuous with the hull-edge rule to 1e-12
    simplex = tri.find_simplex(points, tol=FIND_TOLERANCE)
    inside = simplex >= 0
    if not inside.any():
        if log:
            logger.warning("pixelised source: %s; log-evidence is -inf", _REASONS[STATUS_EMPTY])
        return Topology(corners, inside, edges, valid, STATUS_EMPTY)
    corners[inside] = tri.simplices[simplex[inside]]
    outside = np.flatnonzero(~inside)
    if outside.size and outside_hull == "nearest_vertex":
        corners[outside] = _nearest_vertices(points[outside], vertices)[:, None]
    elif outside.size:
        corners[outside] = _nearest_hull_edges(points[outside], vertices, tri.convex_hull)
    parts = [tri.simplices[:, [0, 1]], tri.simplices[:, [1, 2]], tri.simplices[:, [0, 2]]]
    if len(tri.coplanar):
        # a vertex at (or within Qhull's precision of) another's position has no triangle:
        # it is coupled to its twin by one neighbour pair, so regularisation ties it there
        parts.append(tri.coplanar[:, [0, 2]])
    pairs = np.unique(np.sort(np.concatenate(parts), axis=1), axis=0)
    edges[: len(pairs)] = pairs
    valid[: len(pairs)] = True
    return Topology(corners, inside, edges, valid, STATUS_OK)


def _nearest_hull_edges(points: np.ndarray, vertices: np.ndarray, hull: np.ndarray) -> np.ndarray:
    """``(a, b, b)`` for each point's nearest hull edge ``ab``."""
    a, b = vertices[hull[:, 0]], vertices[hull[:, 1]]
    d = b - a
    length2 = np.maximum(np.sum(d * d, axis=1), 1e-300)
    out = np.empty((points.shape[0], 3), dtype=np.int64)
    for start in range(0, points.shape[0], _BLOCK):
        p = points[start : start + _BLOCK, None, :]
        t = np.clip(np.sum((p - a) * d, axis=-1) / length2, 0.0, 1.0)
        gap = p - (a + t[..., None] * d)
        best = np.argmin(np.sum(gap * gap, axis=-1), axis=1)
        out[start : start + _BLOCK, 0] = hull[best, 0]
        out[start : start + _BLOCK, 1] = hull[best, 1]
        out[start : start + _BLOCK, 2] = hull[best, 1]
    return out


def _nearest_vertices(points: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Index of each point's nearest vertex, by a k-d tree query as autoarray finds it (so
    a tie between vertices goes the same way for the same vertex order)."""
    from scipy.spatial import cKDTree

    return cKDTree(vertices).query(points)[1].astype(np.int64)


def jax_topology(
    vertices: Any, points: Any, outside_hull: str = "hull_edge"
) -> tuple[Any, Any, Any, Any, Any]:
    """:func:`topology` from inside a JAX program (``jit``, ``vmap``, ``grad``).

    Returns ``(corners, inside, edges, edge_valid, status)`` as JAX arrays (int32 and bool).
    The inputs' derivatives are stopped (an index has none); under ``vmap`` the host is
    called once per batch member.
    """
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    jnp = jax.numpy
    n_v, n = vertices.shape[0], points.shape[0]
    shapes = (
        jax.ShapeDtypeStruct((n, 3), jnp.int32),
        jax.ShapeDtypeStruct((n,), jnp.bool_),
        jax.ShapeDtypeStruct((3 * n_v, 2), jnp.int32),
        jax.ShapeDtypeStruct((3 * n_v,), jnp.bool_),
        jax.ShapeDtypeStruct((), jnp.int32),
    )

    def host(v: Any, p: Any) -> tuple:
        top = topology(
            np.asarray(v, dtype=float), np.asarray(p, dtype=float), outside_hull=outside_hull
        )
        return (
            top.corners.astype(np.int32),
            top.inside,
            top.edges.astype(np.int32),
            top.edge_valid,
            np.int32(top.status),
        )

    stop = jax.lax.stop_gradient
    return jax.pure_callback(host, shapes, stop(vertices), stop(points), vmap_method="sequential")

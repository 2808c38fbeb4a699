"""Image-plane vertices for a Delaunay source mesh, placed by brightness.

An overlay grid (:func:`~twinlens.inversion.meshes.overlay_points`) spends as many
vertices on empty sky as on the lensed arcs. Given the image-plane brightness of a previous
fit (its model image of the lensed source, or the data itself), :func:`kmeans_vertices`
clusters the masked-in pixel centres with weights rising with that brightness, so the
vertices crowd where the source is bright (autolens' ``KMeans`` image mesh idea). The
vertices are then traced to the source plane with the lens model of each evaluation, like the
overlay's, by passing them as ``Delaunay(image_vertices=...)``.

The clustering is weighted k-means (Lloyd's iterations from a weighted k-means++ start) with a
fixed random seed, so the same inputs always give the same vertices, bit for bit, and the
value identity of the mesh (its ``image_vertices`` are keyed by their bytes) stays meaningful.

For weighted k-means in two dimensions the density of the centres follows the square root of
the weight density (the high-resolution limit of optimal quantisation, density ``w^{d/(d+2)}``),
so ``weight_power = 2`` makes the vertex density roughly proportional to the brightness.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twinlens.grids import Grid2D
from twinlens.messages import shown

__all__ = ["brightness_weights", "kmeans_vertices"]


def brightness_weights(
    brightness: Any, weight_floor: float = 0.0, weight_power: float = 1.0
) -> np.ndarray:
    """Clustering weights from a brightness: ``w = max(b, 0) / max(b)``, raised to
    ``weight_power``, then raised to at least ``weight_floor`` (autolens' convention, except
    that negative brightness counts as none rather than by its absolute value).

    Parameters
    ----------
    brightness : float array, any shape
        Finite.
    weight_floor : float
        In [0, 1]: the least weight, so faint regions keep some vertices.
    weight_power : float
        >= 0; larger values pull vertices harder towards the brightest regions (0: uniform).

    Returns
    -------
    float array, the shape of ``brightness``
        In [weight_floor, 1]; all ones when nothing is brighter than 0.
    """
    b = np.asarray(brightness, dtype=float)
    if not np.all(np.isfinite(b)):
        raise ValueError("brightness must be finite (NaN or inf found)")
    if not (
        isinstance(weight_floor, (int, float))
        and not isinstance(weight_floor, bool)
        and 0.0 <= weight_floor <= 1.0
    ):
        raise ValueError(f"weight_floor must be a number in [0, 1], got {shown(weight_floor)}")
    if not (
        isinstance(weight_power, (int, float))
        and not isinstance(weight_power, bool)
        and 0.0 <= weight_power <= 100.0
    ):
        raise ValueError(f"weight_power must be a number in [0, 100], got {shown(weight_power)}")
    peak = b.max() if b.size else 0.0
    if not peak > 0.0:
        return np.ones_like(b)
    w = (np.maximum(b, 0.0) / peak) ** weight_power
    return np.maximum(w, weight_floor)


def kmeans_vertices(
    grid: Grid2D,
    brightness: Any,
    n_vertices: int,
    weight_floor: float = 0.1,
    weight_power: float = 1.0,
    iterations: int = 100,
    seed: int = 1,
) -> np.ndarray:
    """Image-plane Delaunay vertices by weighted k-means of the masked-in pixel centres.

    Parameters
    ----------
    grid : Grid2D
        The dataset's grid (its mask selects the pixels clustered).
    brightness : float array (ny, nx)
        The image-plane brightness that guides the vertices (a previous fit's model image of
        the lensed source, or the data), on ``grid``; finite inside the mask (outside it is
        ignored, NaN allowed).
    n_vertices : int
        From 3 to the number of masked-in pixels with a positive weight.
    weight_floor, weight_power : float
        See :func:`brightness_weights`. The floor (default 0.1) keeps some vertices on the
        faint parts of the mask, which the source's outskirts and the regularisation need.
    iterations : int
        Most Lloyd iterations, 1 to 10,000 (they stop earlier when no pixel changes cluster).
    seed : int
        Seed of the k-means++ start (fixed: the same inputs give the same vertices).

    Returns
    -------
    float array (n_vertices, 2)
        Vertex positions ``(x, y)``, arcsec: for each cluster, its pixel centre nearest the
        cluster's weighted mean (so every vertex is a masked-in pixel centre, also on an
        annular mask, where a mean can fall in the hole), sorted by ``y`` then ``x``;
        read-only. Pass them as ``Delaunay(image_vertices=...)``.
    """
    used = grid.used
    b = np.asarray(brightness, dtype=float)
    if b.shape != used.shape:
        raise ValueError(f"brightness must have the grid's shape {used.shape}, got {b.shape}")
    if not np.all(np.isfinite(b[used])):
        raise ValueError("brightness must be finite inside the mask (NaN or inf found)")
    points = np.column_stack([grid.x[used], grid.y[used]])
    weights = brightness_weights(b[used], weight_floor, weight_power)
    positive = int(np.count_nonzero(weights > 0))
    _check_settings(n_vertices, iterations, seed, positive)
    k = int(n_vertices)
    centres = _kmeans_plus_plus(points, weights, k, np.random.default_rng(seed))
    centres = _lloyd(points, weights, centres, iterations)
    out = _snapped_to_pixels(points, centres)
    out = out[np.lexsort((out[:, 0], out[:, 1]))]
    out.setflags(write=False)
    return out


def _check_settings(n_vertices: Any, iterations: Any, seed: Any, positive: int) -> None:
    """Raise ValueError naming the first of ``kmeans_vertices``' settings out of range."""
    if not (
        isinstance(n_vertices, (int, np.integer))
        and not isinstance(n_vertices, bool)
        and 3 <= n_vertices <= positive
    ):
        raise ValueError(
            f"n_vertices must be an integer from 3 to {positive} (the masked-in pixels with a "
            f"positive weight; raise weight_floor to count more), got {shown(n_vertices)}"
        )
    if not (
        isinstance(iterations, (int, np.integer))
        and not isinstance(iterations, bool)
        and 1 <= iterations <= 10_000
    ):
        raise ValueError(f"iterations must be an integer from 1 to 10000, got {shown(iterations)}")
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        raise ValueError(f"seed must be an integer >= 0, got {shown(seed)}")


def _lloyd(
    points: np.ndarray, weights: np.ndarray, centres: np.ndarray, iterations: int
) -> np.ndarray:
    """Weighted Lloyd iterations from ``centres`` (updated in place and returned), at most
    ``iterations``, stopping once no pixel changes cluster."""
    from scipy.spatial import cKDTree

    k = centres.shape[0]
    labels = np.full(len(points), -1)
    for _ in range(iterations):
        new = cKDTree(centres).query(points)[1]
        if np.array_equal(new, labels):
            break
        labels = new
        total = np.bincount(labels, weights=weights, minlength=k)
        sx = np.bincount(labels, weights=weights * points[:, 0], minlength=k)
        sy = np.bincount(labels, weights=weights * points[:, 1], minlength=k)
        filled = total > 0  # a cluster of weightless pixels keeps its centre
        centres[filled, 0] = sx[filled] / total[filled]
        centres[filled, 1] = sy[filled] / total[filled]
    return centres


def _snapped_to_pixels(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each centre moved to its cluster's pixel nearest it (``centres`` updated in place).

    A cluster's mean can lie off the mask: an arc of an annular mask has its mean towards the
    ring's centre, in the hole, where a vertex traces to a far corner of the source plane and
    wastes a pixel. Clusters share no pixel, so the vertices stay distinct."""
    from scipy.spatial import cKDTree

    labels = cKDTree(centres).query(points)[1]
    d2 = np.sum((points - centres[labels]) ** 2, axis=1)
    order = np.lexsort((d2, labels))
    nearest = order[np.r_[True, labels[order][1:] != labels[order][:-1]]]
    centres[labels[nearest]] = points[nearest]
    return centres


def _kmeans_plus_plus(
    points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """``k`` distinct starting centres: each drawn with probability proportional to the weight
    times the squared distance to the nearest centre so far (k-means++, weighted)."""
    first = rng.choice(len(points), p=weights / weights.sum())
    chosen = [first]
    d2 = np.sum((points - points[first]) ** 2, axis=1)
    for _ in range(1, k):
        p = weights * d2
        # every remaining weighted pixel is a chosen centre: none can be drawn twice, since a
        # chosen pixel has d2 = 0
        j = int(rng.choice(len(points), p=p / p.sum()))
        chosen.append(j)
        d2 = np.minimum(d2, np.sum((points - points[j]) ** 2, axis=1))
    return points[chosen].astype(float)

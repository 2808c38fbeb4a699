"""The border of a mask, and the relocation of sub-pixels traced beyond it.

Sub-pixels near the centre of a lens are strongly demagnified: they trace to source-plane
positions far from the lensed source, and a mesh spanning them would waste most of its pixels
on empty sky. As in autolens, every traced sub-pixel is compared with the *border*, the traced
sub-pixels of the mask's outer edge. ``origin`` is the mean of the traced border points and
``r_b`` their distances from it; a point at distance ``r`` from the origin beyond the border
radius ``R(p)`` found for it moves radially onto that radius,
``p <- origin + (p - origin) * R(p) / r``; the others stay. Two rules give ``R(p)``:

* ``"smooth"`` (the default): a kernel average of the radii of the point's ``k + 1 = 5``
  nearest border points, ``R = sum_i w_i r_b[i] / sum_i w_i`` with the Epanechnikov weight
  ``w_i = 1 - d_i^2 / h^2``, ``d_i`` the distance to border point ``i`` and ``h`` the
  largest of the ``k + 1`` (its own weight is 0). A border point entering or leaving the
  ``k + 1`` does so at ``d_i = h``, with weight 0, so ``R`` and the relocated point are
  continuous in the point's and the border's positions, hence in the lens parameters;
* ``"nearest"`` (autolens'): a point at ``r > min(r_b)`` takes the radius of its nearest
  border point. Where two border points of different radii are equally near, ``R`` jumps, and
  so does a relocated point (by about the spread of the border radii); the evidence then
  jumps too (measured in :doc:`/pixelised`, "Continuity and gradient searches").

Either way a point exactly on its radius stays where it is, so the map is continuous where
``R`` is, and its derivatives are finite wherever the point moves (``r > 0`` there).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from scipy import ndimage

__all__ = [
    "NEIGHBOURS",
    "RELOCATIONS",
    "border_mask",
    "border_sub_indices",
    "kernel_radius",
    "relocate",
]

#: points per block of the brute-force nearest-border search under JAX: a block's distances
#: (``_CHUNK x n_border``) stay in the cache, which much larger blocks leave
_CHUNK = 256

#: the relocation rules (see the module documentation); the first is the default
RELOCATIONS = ("smooth", "nearest")

#: border points whose radii the smooth relocation averages (``k``; the ``k + 1``-th nearest
#: sets the kernel's width)
NEIGHBOURS = 4

#: border points per group of the JAX ``k``-nearest search: one pass finds each group's
#: nearest, and only the ``k + 1`` groups with the nearest minima are searched again
_GROUP = 16


def border_mask(used: np.ndarray) -> np.ndarray:
    """The outer edge of a mask: used pixels with a side-neighbour outside the used region
    that connects to the frame of the array (the hole of an annular mask is not a border).

    Parameters
    ----------
    used : bool array (ny, nx)
        True where a pixel is fitted.

    Returns
    -------
    bool array (ny, nx)
    """
    used = np.asarray(used, dtype=bool)
    padded = np.pad(~used, 1, constant_values=True)
    labels, _ = ndimage.label(padded)
    outside = (labels == labels[0, 0])[1:-1, 1:-1]
    outside_padded = np.pad(outside, 1, constant_values=True)
    near = (
        outside_padded[:-2, 1:-1]
        | outside_padded[2:, 1:-1]
        | outside_padded[1:-1, :-2]
        | outside_padded[1:-1, 2:]
    )
    return used & near


def border_sub_indices(used: np.ndarray, pixels: np.ndarray, factor: int) -> np.ndarray:
    """Indices of the border sub-pixels in a layout of ``factor x factor`` sub-pixels per pixel.

    The mask is refined to sub-pixel resolution and its outer edge taken there, so the border
    is the outermost ring of sub-pixels (as autolens' sub-border).

    Parameters
    ----------
    used : bool array (ny, nx)
        The mask (True = fitted).
    pixels : int array, one entry per pixel
        Flat indices of the layout's pixels, in layout order (each has ``factor**2`` sub-pixels,
        row-major within the pixel).
    factor : int
        Sub-pixels per pixel side, >= 1.

    Returns
    -------
    int array (n_border,)
        Positions in the layout's sub-pixel array.
    """
    used = np.asarray(used, dtype=bool)
    nx = used.shape[1]
    fine = np.repeat(np.repeat(used, factor, axis=0), factor, axis=1)
    edge = border_mask(fine)
    rows, cols = np.divmod(np.asarray(pixels), nx)
    i, j = np.meshgrid(np.arange(factor), np.arange(factor), indexing="ij")
    sub_rows = rows[:, None] * factor + i.reshape(1, -1)
    sub_cols = cols[:, None] * factor + j.reshape(1, -1)
    return np.flatnonzero(edge[sub_rows, sub_cols].reshape(-1))


def relocate(points: Any, border: Any, xp: Any = np, rule: str = "smooth") -> Any:
    """Move points traced beyond the border onto it (see the module documentation).

    Parameters
    ----------
    points : float array (n, 2)
        Source-plane positions ``(x, y)``, arcsec.
    border : float array (n_border, 2)
        Traced border points (see :func:`border_sub_indices`).
    xp : module
        ``numpy`` or ``jax.numpy``.
    rule : str
        ``"smooth"`` (continuous in the positions) or ``"nearest"`` (autolens').

    Returns
    -------
    float array (n, 2)
    """
    if rule not in RELOCATIONS:
        raise ValueError(f"relocation rule must be one of {RELOCATIONS}, got {rule!r}")
    origin = xp.mean(border, axis=0)
    rel_b = border - origin
    r_b = xp.sqrt(xp.sum(rel_b * rel_b, axis=-1))
    rel = points - origin
    r = xp.sqrt(xp.sum(rel * rel, axis=-1))
    if rule == "nearest":
        r_near = r_b[_nearest(points, border, xp)]
        move = (r > xp.min(r_b)) & (r > r_near)
    elif xp is np:
        # R >= min(r_b) (an average of border radii): points within it never move
        r_near = np.full(r.shape, np.inf)
        far = r > r_b.min()
        r_near[far] = _smooth_radius(points[far], border, r_b, np)
        move = r > r_near
    else:
        r_near = _smooth_radius(points, border, r_b, xp)
        move = r > r_near
    factor = xp.where(move, r_near / xp.where(move, r, 1.0), 1.0)
    return origin + rel * factor[:, None]


def kernel_radius(d2: Any, radii: Any, xp: Any = np) -> Any:
    """The smooth rule's border radius from a point's ``k + 1`` nearest border points, their
    squared distances ``d2 (n, k + 1)`` and radii ``radii (n, k + 1)`` (any order):
    ``sum w r / sum w`` with ``w = 1 - d2 / max(d2)``. Degenerate rows (every distance
    equal, or all zero) take the plain mean, so the value stays finite."""
    h2 = xp.max(d2, axis=-1, keepdims=True)
    wide = h2 > 0.0
    w = xp.where(wide, 1.0 - d2 / xp.where(wide, h2, 1.0), 1.0)
    total = xp.sum(w, axis=-1, keepdims=True)
    some = total > 0.0
    w = xp.where(some, w, 1.0)
    total = xp.where(some, total, float(d2.shape[-1]))
    return xp.sum(w * radii, axis=-1) / total[..., 0]


def _smooth_radius(points: Any, border: Any, r_b: Any, xp: Any) -> Any:
    """The smooth rule's ``R(p)`` for each point: the ``k + 1`` nearest border points are
    found without derivative (a k-d tree on numpy, blocks under JAX), and their distances
    taken again in the backend's arithmetic, so ``R`` is differentiable in both."""
    m = min(NEIGHBOURS + 1, border.shape[0])
    if xp is np:
        from scipy.spatial import cKDTree

        index = cKDTree(border).query(points, k=m)[1].reshape(-1, m)
    else:
        from twinlens.backend import jax_runtime

        lax = jax_runtime.load().lax
        index = _k_nearest_jax(m)(lax.stop_gradient(points), lax.stop_gradient(border))
    near = border[index]  # (n, m, 2)
    d2 = (points[:, None, 0] - near[..., 0]) ** 2 + (points[:, None, 1] - near[..., 1]) ** 2
    return kernel_radius(d2, r_b[index], xp)


def _nearest(points: Any, border: Any, xp: Any) -> Any:
    """Index of the nearest border point to each point: a k-d tree on numpy, brute force in
    blocks under JAX."""
    if xp is np:
        from scipy.spatial import cKDTree

        return cKDTree(border).query(points)[1]
    from twinlens.backend import jax_runtime

    lax = jax_runtime.load().lax
    # an index has no derivative
    return _nearest_jax()(lax.stop_gradient(points), lax.stop_gradient(border))


#: relative slack of the second look for rows whose recomputed distances miss their minimum
_RECOMPUTED_SLACK = 8.0 * float(np.finfo(float).eps)


def lowest_index_at_min(d2: Any, closest: Any, index: Any) -> Any:
    """Per row of ``d2 (rows, n)``, the lowest index whose value equals ``closest (rows, 1)``,
    its minimum (JAX): argmin's answer from plain minimum reductions, which vectorise (XLA's
    argmin, a reduction over (value, index) pairs, does not). XLA may compute ``d2``
    again for the comparison with other rounding (fused multiply-adds or not), and then no
    element of a row equals its minimum: such rows take the lowest index within a few
    roundings of it, not a default (a row of NaN gives the last index)."""
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    n = d2.shape[1]
    first = jnp.min(jnp.where(d2 == closest, index[None, :], n), axis=1)
    near = d2 <= closest * (1.0 + _RECOMPUTED_SLACK)
    second = jnp.min(jnp.where(near, index[None, :], n), axis=1)
    return jnp.minimum(jnp.where(first < n, first, second), n - 1)


@cache
def _nearest_jax() -> Any:
    """The JAX nearest-border search, with a batching rule that loops over a ``vmap``'s
    members: batched, each block would hold every member's distances and leave the cache (a
    ``vmap`` of the blocks ran slower than the members one after another)."""
    from twinlens.backend import jax_runtime
    from twinlens.backend.jax_batching import one_member_at_a_time

    jax = jax_runtime.load()
    jnp, lax = jax.numpy, jax.lax

    def nearest(points: Any, border: Any) -> Any:
        n, n_border = points.shape[0], border.shape[0]
        blocks = jnp.pad(points, ((0, (-n) % _CHUNK), (0, 0))).reshape(-1, _CHUNK, 2)
        index = jnp.arange(n_border)

        def one(block: Any) -> Any:
            d2 = (block[:, 0:1] - border[None, :, 0]) ** 2 + (
                block[:, 1:2] - border[None, :, 1]
            ) ** 2
            return lowest_index_at_min(d2, jnp.min(d2, axis=1, keepdims=True), index)

        return lax.map(one, blocks).reshape(-1)[:n]

    return one_member_at_a_time(nearest)


def _smallest_keys(keys: Any, ids: Any, m: int, low: int, modulo: int) -> Any:
    """Per row of the integer ``keys (rows, n)``, its ``m`` smallest, ascending, by ``m``
    passes of minimum reductions (JAX). A key taken is struck out by its identity, ``ids``
    (``(rows, n)`` or ``(1, n)``) equal to ``(key & low) % modulo``, not by its value: XLA may
    compute the keys again for the comparison with other rounding, which can change a key's
    distance bits but never its index bits."""
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    largest = jnp.iinfo(keys.dtype).max
    out = []
    for _ in range(m):
        least = jnp.min(keys, axis=1)
        out.append(least)
        keys = jnp.where(ids == ((least & low) % modulo)[:, None], largest, keys)
    return jnp.stack(out, axis=-1)


@cache
def _k_nearest_jax(m: int) -> Any:
    """The JAX search for the ``m`` nearest border points of each point, in blocks of
    ``_CHUNK`` points.

    A distance and its border point's index travel as one integer key: the squared
    distance's bits (a non-negative float orders as its bits do) with the lowest ones
    replaced by the index, so one integer minimum gives both, and no two keys are equal. The
    order is the distances' to a relative ``2**(bits - 52)`` (``bits`` the index's width; ~5e-13
    for 2,000 border points), and which of two points that close is taken changes the smooth
    radius by that much at most: a point at the edge of the ``m`` has weight ~0. The border
    points fall in ``_GROUP`` strided groups (point ``j`` in group ``j % n_groups``); one
    pass takes each group's minimum, and only the ``m`` groups of the smallest minima are
    searched again (the ``m`` nearest lie in at most ``m`` groups, none of whose minimum
    exceeds the ``m``-th distance). A ``vmap`` runs its members one after another, as
    :func:`_nearest_jax`'s does."""
    from twinlens.backend import jax_runtime
    from twinlens.backend.jax_batching import one_member_at_a_time

    jax = jax_runtime.load()
    jnp, lax = jax.numpy, jax.lax

    def search(points: Any, border: Any) -> Any:
        n, n_border = points.shape[0], border.shape[0]
        n_groups = -(-n_border // _GROUP)
        size = n_groups * _GROUP
        itype = jnp.int64 if points.dtype == jnp.float64 else jnp.int32
        low = (1 << max(size - 1, 1).bit_length()) - 1
        index = jnp.arange(size, dtype=itype)
        group_ids = jnp.arange(n_groups, dtype=itype)[None, :]
        # padding: infinitely far border points, never among the m nearest
        padded = jnp.pad(border, ((0, size - n_border), (0, 0)), constant_values=jnp.inf)
        blocks = jnp.pad(points, ((0, (-n) % _CHUNK), (0, 0))).reshape(-1, _CHUNK, 2)

        def one(block: Any) -> Any:
            d2 = (block[:, 0:1] - padded[None, :, 0]) ** 2 + (
                block[:, 1:2] - padded[None, :, 1]
            ) ** 2
            keys = (lax.bitcast_convert_type(d2, itype) & ~low) | index[None, :]
            keys = keys.reshape(_CHUNK, _GROUP, n_groups)
            groups = _smallest_keys(
                jnp.min(keys, axis=1), group_ids, min(m, n_groups), low, n_groups
            )
            near = jnp.take_along_axis(keys, ((groups & low) % n_groups)[:, None, :], axis=2)
            near = near.reshape(_CHUNK, -1)
            return _smallest_keys(near, near & low, m, low, size) & low

        return lax.map(one, blocks).reshape(-1, m)[:n]

    return one_member_at_a_time(search)

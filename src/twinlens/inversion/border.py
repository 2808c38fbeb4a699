"""The border of a mask, and the relocation of sub-pixels traced beyond it.

Sub-pixels near the centre of a lens are strongly demagnified: they trace to source-plane
positions far from the lensed source, and a mesh spanning them would waste most of its pixels
on empty sky. As in autolens, every traced sub-pixel is compared with the *border*, the traced
sub-pixels of the mask's outer edge:

1. ``origin`` is the mean of the traced border points and ``r_b`` their distances from it;
2. a point at distance ``r > min(r_b)`` from the origin is paired with its nearest border
   point ``b``; if ``r > r_b[b]`` it is moved radially onto that radius,
   ``p <- origin + (p - origin) * r_b[b] / r``.

Points inside the border do not move, so the map is continuous (a point exactly on the radius
stays where it is) and its derivatives are finite wherever the point moves (``r > 0`` there).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from scipy import ndimage

__all__ = ["border_mask", "border_sub_indices", "relocate"]

#: points per block of the brute-force nearest-border search under JAX: a block's distances
#: (``_CHUNK x n_border``) stay in the cache, which much larger blocks leave
_CHUNK = 256


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


def relocate(points: Any, border: Any, xp: Any = np) -> Any:
    """Move points traced beyond the border onto it (see the module documentation).

    Parameters
    ----------
    points : float array (n, 2)
        Source-plane positions ``(x, y)``, arcsec.
    border : float array (n_border, 2)
        Traced border points (see :func:`border_sub_indices`).
    xp : module
        ``numpy`` or ``jax.numpy``.

    Returns
    -------
    float array (n, 2)
    """
    origin = xp.mean(border, axis=0)
    rel_b = border - origin
    r_b = xp.sqrt(xp.sum(rel_b * rel_b, axis=-1))
    rel = points - origin
    r = xp.sqrt(xp.sum(rel * rel, axis=-1))
    nearest = _nearest(points, border, xp)
    r_near = r_b[nearest]
    move = (r > xp.min(r_b)) & (r > r_near)
    factor = xp.where(move, r_near / xp.where(move, r, 1.0), 1.0)
    return origin + rel * factor[:, None]


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

    jax = jax_runtime.load()
    jnp, lax = jax.numpy, jax.lax

    @jax.custom_batching.custom_vmap
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

    @nearest.def_vmap
    def _one_member_at_a_time(size: int, batched: Any, points: Any, border: Any) -> Any:
        points, border = (
            x if b else jnp.broadcast_to(x, (size, *x.shape))
            for x, b in zip((points, border), batched, strict=True)
        )
        return lax.map(lambda pair: nearest(*pair), (points, border)), True

    return nearest

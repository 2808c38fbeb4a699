"""autoarray's conventions (the inversion library of autolens) where they differ from ours, as
options of a pixelised source; our defaults are unchanged.

Three choices of a Delaunay source's evaluation (docs/pixelised.rst, "Differences from
autolens", measures what each moves the evidence by):

* **vertex placement** (``Delaunay(placement=...)``): along each axis of the mask's bounding
  box (the outer edges of its outermost pixels), ``"inset"`` (ours) puts ``n`` points at
  ``k / (n + 1)`` of it, ``k = 1..n``, and ``"cell_centres"`` (autoarray's ``Overlay`` image
  mesh) at the centres of ``n`` equal cells, ``(k - 1/2) / n`` (:func:`cell_centre_points`);
* **relocation** (``Pixelization(relocation=...)``): ``"smooth"`` (ours) and ``"nearest"``
  (autolens' earlier rule) move a point onto a border radius found from the nearest border
  points (:mod:`~twinlens.inversion.border`); ``"ellipse"`` (autoarray's current
  ``BorderRelocator``) fits an ellipse to the traced centres of the mask's border pixels and
  moves every point outside it radially onto it (:func:`ellipse_from_border`,
  :func:`relocate_onto_ellipse`);
* **outside the hull** (``Delaunay(outside_hull=...)``): a sub-pixel outside the convex hull
  of the Delaunay vertices reads the nearest point of the hull, linear along its edge
  (``"hull_edge"``, ours), or the nearest vertex alone (``"nearest_vertex"``, autoarray's);
  see :func:`~twinlens.inversion.triangulation.topology`.

The ellipse is plain arithmetic on the backend's arrays, so it runs on numpy (which the numba
backend uses too: every step is elementwise or a reduction) and under JAX, where it is
differentiable in the lens parameters.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.grids import Grid2D
from twinlens.inversion import border
from twinlens.messages import shown

__all__ = [
    "OUTSIDE_HULL",
    "PLACEMENTS",
    "RELOCATIONS",
    "border_pixel_centres",
    "cell_centre_points",
    "check_choice",
    "ellipse_from_border",
    "relocate_by_ellipse",
    "relocate_onto_ellipse",
    "straight_line_border",
]

#: ``Delaunay.placement``: ours first (the default)
PLACEMENTS = ("inset", "cell_centres")
#: ``Pixelization.relocation``: the border module's rules (the default first), then the ellipse
RELOCATIONS = (*border.RELOCATIONS, "ellipse")
#: ``Delaunay.outside_hull``: ours first (the default)
OUTSIDE_HULL = ("hull_edge", "nearest_vertex")

#: added to the ellipse's semi-axes and to the floor of a point's elliptical radius, as
#: autoarray does: a border on one line still gives a finite ellipse
_ELLIPSE_EPS = 1e-12


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else a ValueError naming ``name`` and them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, choices))}, got {shown(value)}"
        )
    return value


def cell_centre_points(grid: Grid2D, shape: tuple[int, int]) -> np.ndarray:
    """autoarray's ``Overlay`` vertices: the centres of a ``shape = (ny, nx)`` grid of equal
    cells spanning the bounding box of the masked-in pixels (their outer edges), kept where
    they fall in a masked-in pixel; ``(n, 2)`` ``(x, y)``, arcsec, ordered as autoarray
    orders them (rows from the top of the image, each from the left).

    A point exactly on a pixel edge belongs to the pixel on its right, or below it
    (autoarray's rounding, which counts rows from the top), so that the same vertices are
    kept. autoarray finds the pixel as if the image were centred on (0, 0); here the
    grid's own origin is used, the same when it is (0, 0).
    """
    return _cell_centres(grid, tuple(shape))


@lru_cache(maxsize=32)
def _cell_centres(grid: Grid2D, shape: tuple[int, int]) -> np.ndarray:
    used = grid.used
    s = grid.pixel_scale
    gny, gnx = grid.shape
    xs, ys = grid.x[used], grid.y[used]
    # the cells span the masked-in pixel centres' extent plus one pixel
    step_y = (float(np.ptp(ys)) + s) / shape[0]
    step_x = (float(np.ptp(xs)) + s) / shape[1]
    centre_x = (xs.max() + xs.min()) / 2.0
    centre_y = (ys.max() + ys.min()) / 2.0
    # written as autoarray's arithmetic (offset in cells, then times the cell), so that a
    # point on a pixel edge rounds the same way in both
    top = np.arange(shape[0])[:, None] - ((shape[0] - 1) / 2.0 + centre_y / step_y)
    left = np.arange(shape[1])[None, :] - ((shape[1] - 1) / 2.0 - centre_x / step_x)
    yy = np.broadcast_to(-(top * step_y), shape)
    xx = np.broadcast_to(left * step_x, shape)
    row_top = np.floor(-(yy - grid.origin[1]) / s + (gny - 1) / 2.0 + 0.5).astype(np.int64)
    col = np.floor((xx - grid.origin[0]) / s + (gnx - 1) / 2.0 + 0.5).astype(np.int64)
    row = gny - 1 - row_top  # our rows count from the bottom
    ok = (col >= 0) & (col < gnx) & (row >= 0) & (row < gny)
    ok[ok] = used[row[ok], col[ok]]
    out = np.stack([xx[ok], yy[ok]], axis=-1)
    out.setflags(write=False)
    return out


def straight_line_border(used: np.ndarray) -> np.ndarray:
    """autoarray's border pixels: used pixels from which a straight line along the row or
    the column, in at least one of the four directions, reaches the edge of the array through
    unused pixels only (the hole of an annulus is not a border). Bool array ``(ny, nx)``.

    For a mask whose rows and columns are each one run of used pixels (a disc, an ellipse)
    this is :func:`~twinlens.inversion.border.border_mask`'s outer edge.
    """
    used = np.asarray(used, dtype=bool)
    clear = ~used
    # per direction, True where every pixel before this one along the line is unused
    lines = []
    for axis in (0, 1):
        for flip in (False, True):
            a = np.flip(clear, axis) if flip else clear
            before = np.cumprod(a, axis=axis).astype(bool)
            shifted = np.concatenate(
                [np.ones_like(np.take(before, [0], axis=axis)), np.delete(before, -1, axis)],
                axis=axis,
            )
            lines.append(np.flip(shifted, axis) if flip else shifted)
    return used & np.logical_or.reduce(lines)


def border_pixel_centres(grid: Grid2D) -> np.ndarray:
    """Image-plane centres ``(n_border, 2)`` of :func:`straight_line_border`'s pixels of the
    grid's mask (what autoarray fits its ellipse to, traced)."""
    return _border_centres(grid)


@lru_cache(maxsize=16)
def _border_centres(grid: Grid2D) -> np.ndarray:
    edge = straight_line_border(grid.used)
    out = np.stack([grid.x[edge], grid.y[edge]], axis=-1)
    out.setflags(write=False)
    return out


def ellipse_from_border(border: Any, xp: Any = np) -> tuple:
    """The ellipse autoarray fits to traced border points ``border (n, 2)``:
    ``(x0, y0, a, b, cos_phi, sin_phi)``.

    Its centre is the points' mean; its first axis (angle ``phi``) the direction of their
    largest spread (the principal axis of their covariance); ``a`` and ``b`` the largest
    distances of the points from the centre along the first and the second axis. So every
    border point lies on or inside it.
    """
    origin = xp.mean(border, axis=0)
    dx, dy = border[:, 0] - origin[0], border[:, 1] - origin[1]
    sxx, syy, sxy = xp.sum(dx * dx), xp.sum(dy * dy), xp.sum(dx * dy)
    # the eigenvector of the larger eigenvalue of [[sxx, sxy], [sxy, syy]] is at
    # 2 phi = atan2(2 sxy, sxx - syy); a round spread has no axis (any phi): take 0, with a
    # finite derivative
    u, v = 2.0 * sxy, sxx - syy
    round_ = (u == 0.0) & (v == 0.0)
    phi = 0.5 * xp.arctan2(xp.where(round_, 0.0, u), xp.where(round_, 1.0, v))
    c, s = xp.cos(phi), xp.sin(phi)
    a = xp.max(xp.abs(c * dx + s * dy)) + _ELLIPSE_EPS
    b = xp.max(xp.abs(-s * dx + c * dy)) + _ELLIPSE_EPS
    return origin[0], origin[1], a, b, c, s


def relocate_onto_ellipse(points: Any, ellipse: tuple, xp: Any = np) -> Any:
    """Points ``(n, 2)`` outside ``ellipse`` (:func:`ellipse_from_border`) moved towards its
    centre onto it; those inside (or on it) are returned as they are.

    A point at elliptical radius ``q = (x'/a)^2 + (y'/b)^2 > 1`` (``x', y'`` along the axes)
    is scaled by ``1 / sqrt(q)`` about the centre. Continuous across the ellipse (up to
    autoarray's floor of ``q`` at ``1 + 1e-12``); its derivatives are finite everywhere.
    """
    x0, y0, a, b, c, s = ellipse
    dx, dy = points[:, 0] - x0, points[:, 1] - y0
    q = ((c * dx + s * dy) / a) ** 2 + ((-s * dx + c * dy) / b) ** 2
    outside = q > 1.0
    scale = 1.0 / xp.sqrt(xp.maximum(q, 1.0 + _ELLIPSE_EPS))
    moved = xp.stack([x0 + dx * scale, y0 + dy * scale], axis=-1)
    return xp.where(outside[:, None], moved, points)


def relocate_by_ellipse(
    points: Any, vertices: Any, traced_border: Any, xp: Any = np
) -> tuple[Any, Any]:
    """``(points, vertices)`` (``vertices`` may be None) relocated onto the ellipse fitted
    to ``traced_border`` (:func:`border_pixel_centres`, traced)."""
    ellipse = ellipse_from_border(traced_border, xp)
    moved = relocate_onto_ellipse(points, ellipse, xp)
    return moved, None if vertices is None else relocate_onto_ellipse(vertices, ellipse, xp)

"""Pixel grids: coordinates, masks and the (uniform or adaptive) oversampling layout.

A :class:`Grid2D` is static data: its shape, pixel scale, origin, mask and sub-pixel factors
select code and array sizes, so they hash by value and none of them is a JAX leaf. What the
grid computes from them (coordinates, the layout of sub-pixels) is plain numpy, built once per
distinct grid and cached.

Pixel ``[i, j]`` (row ``i``, column ``j``) has its centre at
``x = origin_x + (j - (nx - 1) / 2) * pixel_scale`` and
``y = origin_y + (i - (ny - 1) / 2) * pixel_scale``: ``x`` grows with the column and ``y`` with
the row, so row 0 is the bottom of the image (display with ``origin="lower"``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from twinlens.fields import ValueIdentity, canonical, static_field
from twinlens.messages import shown

__all__ = ["Grid2D", "Grid2DIrregular", "SubPixelLayout", "bin_to_pixels"]


def _check_factor(name: str, value: int) -> None:
    if not (isinstance(value, (int, np.integer)) and 1 <= abs(value) <= 64):
        raise ValueError(
            f"{name} must be an integer from 1 to 64 (-1 to -64 for Gauss-Legendre nodes), "
            f"got {shown(value)}"
        )


@dataclass(frozen=True, eq=False)
class SubPixelLayout(ValueIdentity):
    """Where a grid's sub-pixels are and how they average back into pixels.

    The evaluated pixels are grouped by sub-pixel factor ``f`` (one *level* per factor); each
    level's points are its pixels' ``f x f`` sub-pixel centres, pixel after pixel, so binning is a
    reshape and a mean per level, with no scatter (the same program on every backend).

    Attributes
    ----------
    pixels : int array, one entry per evaluated pixel
        Flat (row-major) indices of the evaluated pixels, level after level: the order of the
        binned values.
    levels : tuple of (factor, n_pixels_at_level)
        In the order their points and pixels appear; a negative factor ``-f`` marks ``f x f``
        Gauss-Legendre nodes (see :class:`Grid2D`).
    points : float array (n_points, 2)
        Sub-pixel centres ``(x, y)``, arcsec.
    """

    pixels: np.ndarray = static_field()
    levels: tuple = static_field()
    points: np.ndarray = static_field()

    @property
    def n_points(self) -> int:
        """Ray-traced points per evaluation."""
        return int(self.points.shape[0])

    @cached_property
    def xs(self) -> np.ndarray:
        """Sub-pixel ``x`` as one contiguous array (what compiled loops read)."""
        return np.ascontiguousarray(self.points[:, 0])

    @cached_property
    def ys(self) -> np.ndarray:
        """Sub-pixel ``y`` as one contiguous array."""
        return np.ascontiguousarray(self.points[:, 1])


@lru_cache(maxsize=64)
def sub_pixel_rule(factor: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets along one axis (in pixels, within (-1/2, 1/2)) and the weights (summing to 1)
    of ``factor`` sub-pixel centres, or of ``-factor`` Gauss-Legendre nodes when negative."""
    if factor > 0:
        return (np.arange(factor) + 0.5) / factor - 0.5, np.full(factor, 1.0 / factor)
    nodes, weights = np.polynomial.legendre.leggauss(-factor)
    return nodes / 2.0, weights / 2.0


def bin_to_pixels(values: Any, layout: SubPixelLayout, xp: Any = np) -> Any:
    """Average sub-pixel ``values (..., n_points)`` into pixels ``(..., n_pixels)`` in the order
    of ``layout.pixels``. ``xp`` is ``numpy`` or ``jax.numpy``; leading axes (a batch) pass."""
    parts, start = [], 0
    lead = values.shape[:-1]
    for factor, count in layout.levels:
        f = abs(factor)
        n = count * f * f
        block = values[..., start : start + n].reshape(*lead, count, f * f)
        # a product with the weights, not .mean(axis=-1): numpy reduces a short last axis
        # (W5's 10,000 pixels of 16) several times slower than the product
        if factor > 0:
            parts.append(block @ np.full(f * f, 1.0 / (f * f)))
        else:  # Gauss-Legendre: the tensor product of the 1-D weights
            w = sub_pixel_rule(factor)[1]
            parts.append(block @ np.outer(w, w).reshape(-1))
        start += n
    return parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=-1)


@dataclass(frozen=True, eq=False)
class Grid2D(ValueIdentity):
    """A uniform grid of square pixels, with an optional mask and sub-pixel oversampling.

    Parameters
    ----------
    shape : (int, int)
        ``(ny, nx)`` pixels.
    pixel_scale : float
        Pixel side, arcsec, > 0.
    origin : (float, float)
        ``(x, y)`` of the image centre, arcsec.
    mask : bool array (ny, nx), optional
        True where a pixel is used (fitted); ``None`` uses every pixel. Build one with
        :meth:`circular_mask` or :meth:`annular_mask`.
    sub_size : int or int array (ny, nx)
        Sub-pixels per pixel side: one integer for uniform ``n x n`` oversampling, or one per pixel
        for adaptive oversampling (see :meth:`adaptive_radial` and :meth:`adaptive_to_tolerance`).
        A negative entry ``-n`` places ``n x n`` Gauss-Legendre nodes with their weights instead
        of ``n x n`` equal sub-pixels: exact for light that is a polynomial of degree ``2n - 1``
        across the pixel, so for smooth light 2 x 2 nodes average a pixel about as well as
        8 x 8 sub-pixels.
    """

    shape: tuple = static_field()
    pixel_scale: float = static_field()
    origin: tuple = static_field(default=(0.0, 0.0))
    mask: Any = static_field(default=None)
    sub_size: Any = static_field(default=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (
            not isinstance(self.shape, tuple)
            or len(self.shape) != 2
            or not all(isinstance(n, int) and n > 0 for n in self.shape)
        ):
            raise ValueError(
                f"Grid2D.shape must be (ny, nx) positive integers, got {shown(self.shape)}"
            )
        if not (isinstance(self.pixel_scale, (int, float)) and 0 < self.pixel_scale < math.inf):
            raise ValueError(
                "Grid2D.pixel_scale must be a finite number > 0 (arcsec), "
                f"got {shown(self.pixel_scale)}"
            )
        object.__setattr__(self, "pixel_scale", float(self.pixel_scale))
        if len(self.origin) != 2 or not all(math.isfinite(float(v)) for v in self.origin):
            raise ValueError(
                f"Grid2D.origin must be a finite pair (x, y), got {shown(self.origin)}"
            )
        object.__setattr__(self, "origin", tuple(float(v) for v in self.origin))
        if self.mask is not None:
            mask = np.asarray(self.mask)
            if mask.dtype != np.bool_ or mask.shape != self.shape:
                raise ValueError(
                    f"Grid2D.mask must be a boolean array of shape {self.shape}, got "
                    f"{mask.dtype} {mask.shape}"
                )
            if not mask.any():
                raise ValueError("Grid2D.mask selects no pixel (True marks the pixels used)")
            # store the validated array (a nested list would otherwise stay a tuple of tuples,
            # which `used` and `layout` cannot index, and would key differently from the array)
            object.__setattr__(self, "mask", canonical(mask, "Grid2D.mask"))
        if isinstance(self.sub_size, np.ndarray):
            sub = self.sub_size
            if sub.shape != self.shape or sub.dtype.kind not in "iu":
                raise ValueError(
                    f"Grid2D.sub_size must be an integer or an integer array of shape "
                    f"{self.shape}, got {sub.dtype} {sub.shape}"
                )
            if np.any(sub == 0) or np.abs(sub).max() > 64:
                raise ValueError(
                    "Grid2D.sub_size values must be from 1 to 64 (or -1 to -64 for "
                    f"Gauss-Legendre nodes), got {sub.min()} to {sub.max()}"
                )
        else:
            _check_factor("Grid2D.sub_size", self.sub_size)
            object.__setattr__(self, "sub_size", int(self.sub_size))

    # -- coordinates -------------------------------------------------------------------------

    @classmethod
    def uniform(
        cls,
        shape: int | tuple[int, int],
        pixel_scale: float,
        sub_size: int = 1,
        origin: tuple[float, float] = (0.0, 0.0),
    ) -> Grid2D:
        """An unmasked grid (``shape`` may be one integer for a square grid)."""
        if isinstance(shape, int):
            shape = (shape, shape)
        return cls(tuple(int(n) for n in shape), pixel_scale, origin, None, sub_size)

    @property
    def n_pixels(self) -> int:
        """Pixels in the image (masked or not)."""
        return self.shape[0] * self.shape[1]

    @cached_property
    def x(self) -> np.ndarray:
        """Pixel-centre ``x`` coordinates, ``(ny, nx)``, arcsec."""
        return self._axes()[1]

    @cached_property
    def y(self) -> np.ndarray:
        """Pixel-centre ``y`` coordinates, ``(ny, nx)``, arcsec."""
        return self._axes()[0]

    @property
    def xy(self) -> np.ndarray:
        """Pixel centres ``(ny, nx, 2)`` as ``(x, y)``: pass a grid wherever positions go."""
        return np.stack([self.x, self.y], axis=-1)

    def pixel_coordinates(self, x: Any, y: Any) -> tuple[Any, Any]:
        """``(row, column)`` of positions ``x, y`` (arcsec) in continuous pixel units: the
        inverse of the pixel-centre convention (integers at the centres)."""
        ny, nx = self.shape
        s = self.pixel_scale
        return (y - self.origin[1]) / s + (ny - 1) / 2.0, (x - self.origin[0]) / s + (nx - 1) / 2.0

    def _axes(self) -> tuple[np.ndarray, np.ndarray]:
        ny, nx = self.shape
        s = self.pixel_scale
        xs = self.origin[0] + (np.arange(nx) - (nx - 1) / 2.0) * s
        ys = self.origin[1] + (np.arange(ny) - (ny - 1) / 2.0) * s
        yy, xx = np.meshgrid(ys, xs, indexing="ij")
        return yy, xx

    @property
    def used(self) -> np.ndarray:
        """Boolean ``(ny, nx)``: the mask, or all True."""
        return np.ones(self.shape, dtype=bool) if self.mask is None else self.mask

    # -- masks -------------------------------------------------------------------------------

    def _radius(self, centre: tuple[float, float]) -> np.ndarray:
        return np.hypot(self.x - centre[0], self.y - centre[1])

    def circular_mask(self, radius: float, centre: tuple[float, float] = (0.0, 0.0)) -> Grid2D:
        """The grid using only pixels whose centres lie within ``radius`` (arcsec) of
        ``centre``."""
        if not radius > 0:
            raise ValueError(f"circular_mask: radius must be > 0 arcsec, got {shown(radius)}")
        return replace(self, mask=self._radius(centre) <= radius)

    def annular_mask(
        self, inner_radius: float, outer_radius: float, centre: tuple[float, float] = (0.0, 0.0)
    ) -> Grid2D:
        """The grid using pixels with ``inner_radius <= r <= outer_radius`` (arcsec)."""
        if not 0 <= inner_radius < outer_radius:
            raise ValueError(
                "annular_mask: need 0 <= inner_radius < outer_radius, got "
                f"{inner_radius!r}, {outer_radius!r}"
            )
        r = self._radius(centre)
        return replace(self, mask=(r >= inner_radius) & (r <= outer_radius))

    # -- oversampling ------------------------------------------------------------------------

    @property
    def sub_size_map(self) -> np.ndarray:
        """Sub-pixels per side for every pixel, ``(ny, nx)`` integers."""
        if isinstance(self.sub_size, np.ndarray):
            return self.sub_size
        return np.full(self.shape, self.sub_size, dtype=np.int64)

    def adaptive_radial(
        self,
        centres: tuple[tuple[float, float], ...],
        radii: tuple[float, ...],
        sub_sizes: tuple[int, ...],
        outer_sub_size: int = 1,
    ) -> Grid2D:
        """Adaptive oversampling by distance from light-profile centres (where a profile is
        steepest): pixels within ``radii[k]`` of any centre get ``sub_sizes[k]`` (the first
        radius that contains the pixel, so list radii from the inside out), others
        ``outer_sub_size``."""
        if len(radii) != len(sub_sizes) or not radii:
            raise ValueError("adaptive_radial: radii and sub_sizes need one entry each, >= 1")
        if any(b <= a for a, b in itertools.pairwise(radii)):
            raise ValueError(f"adaptive_radial: radii must increase, got {shown(radii)}")
        for s in (*sub_sizes, outer_sub_size):
            _check_factor("adaptive_radial sub size", s)
        r = np.min([self._radius(c) for c in centres], axis=0)
        out = np.full(self.shape, outer_sub_size, dtype=np.int64)
        for radius, size in reversed(list(zip(radii, sub_sizes, strict=True))):
            out[r <= radius] = size
        return replace(self, sub_size=out)

    def adaptive_to_tolerance(
        self, image_of: Any, tolerance: float, sub_sizes: tuple[int, ...] = (1, -2, -3, 8)
    ) -> Grid2D:
        """Adaptive oversampling chosen per pixel from an image function: each pixel gets the
        first rule in ``sub_sizes`` (cheapest first; the last is the reference) whose pixel
        average differs from the reference's by less than ``tolerance`` (absolute, in the
        image's units), or else the reference. Negative entries are Gauss-Legendre nodes (see
        the class); the default tries the pixel centre, then 2 x 2 and 3 x 3 nodes, against
        8 x 8 sub-pixels.

        ``image_of(xy)`` returns the (unconvolved) image at positions ``(..., 2)``: typically a
        fiducial model's light, e.g. ``lambda xy: tracer.image(xy)``. The layout is then fixed
        (static), so a search compiles once; choose it from a model near the expected solution.
        """
        if not tolerance > 0:
            raise ValueError(
                f"adaptive_to_tolerance: tolerance must be > 0, got {shown(tolerance)}"
            )
        for s in sub_sizes:
            _check_factor("adaptive_to_tolerance sub size", s)
        sizes = list(dict.fromkeys(sub_sizes))
        averages = []
        for s in sizes:
            g = replace(self, mask=None, sub_size=s)
            lay = g.layout(np.ones(self.shape, dtype=bool))
            values = np.asarray(image_of(lay.points))
            averages.append(bin_to_pixels(values, lay).reshape(self.shape))
        out = np.full(self.shape, sizes[-1], dtype=np.int64)
        done = np.zeros(self.shape, dtype=bool)
        for k in range(len(sizes) - 1):
            ok = ~done & (np.abs(averages[k] - averages[-1]) < tolerance)
            out[ok] = sizes[k]
            done |= ok
        return replace(self, sub_size=out)

    def layout(self, pixels: np.ndarray | None = None) -> SubPixelLayout:
        """The sub-pixel layout over ``pixels`` (boolean ``(ny, nx)``; default the used ones),
        built once per grid and pixel set."""
        chosen = self.used if pixels is None else np.asarray(pixels, dtype=bool)
        return _layout(self, _Key(chosen))

    @property
    def n_points(self) -> int:
        """Ray-traced points per evaluation over the used pixels."""
        return self.layout().n_points


class _Key:
    """A boolean array as a hashable key (for the layout cache)."""

    __slots__ = ("array", "h")

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.h = (array.shape, np.packbits(array).tobytes())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.h == other.h

    def __hash__(self) -> int:
        return hash(self.h)


@lru_cache(maxsize=64)
def _layout(grid: Grid2D, key: _Key) -> SubPixelLayout:
    chosen = key.array.reshape(-1)
    factors = grid.sub_size_map.reshape(-1)
    xs, ys = grid.x.reshape(-1), grid.y.reshape(-1)
    s = grid.pixel_scale
    pixels, levels, points = [], [], []
    for f in np.unique(factors[chosen]):
        f = int(f)
        idx = np.flatnonzero(chosen & (factors == f))
        offsets = sub_pixel_rule(f)[0] * s
        oy, ox = np.meshgrid(offsets, offsets, indexing="ij")  # sub-pixels row-major
        px = (xs[idx, None] + ox.reshape(1, -1)).reshape(-1)
        py = (ys[idx, None] + oy.reshape(1, -1)).reshape(-1)
        pixels.append(idx)
        levels.append((f, int(idx.size)))
        points.append(np.stack([px, py], axis=-1))
    return SubPixelLayout(
        pixels=np.concatenate(pixels), levels=tuple(levels), points=np.concatenate(points)
    )


@dataclass(frozen=True, eq=False)
class Grid2DIrregular(ValueIdentity):
    """Arbitrary positions ``(n, 2)`` as ``(x, y)``, arcsec (image positions, a source-plane
    sampling). Pass it wherever positions go."""

    xy: Any = static_field()

    def __post_init__(self) -> None:
        object.__setattr__(self, "xy", np.asarray(self.xy, dtype=float))
        super().__post_init__()
        if self.xy.ndim != 2 or self.xy.shape[1] != 2:
            raise ValueError(f"Grid2DIrregular.xy must have shape (n, 2), got {self.xy.shape}")
        if not np.all(np.isfinite(self.xy)):
            raise ValueError("Grid2DIrregular.xy must be finite")

"""The mapping matrix: source pixels to image pixels, binned and blurred by the PSF.

Sub-pixel ``k`` of the masked-in image reads source pixels ``indices[k]`` with interpolation
weights ``weights[k]`` (from the mesh). Binning averages each pixel's sub-pixels with the
layout's weights (``1 / f^2`` for ``f x f`` sub-pixels), so

``M[p, s] = sum over sub-pixels k of pixel p, slots j with indices[k, j] = s of
sub_weight[k] * weights[k, j]``,

an ``(n_mask, n_source)`` matrix whose column ``s`` is the (unblurred) image of source pixel
``s`` at unit brightness. The blurred matrix ``B`` convolves each column, as an image that is
zero outside the mask, with the PSF and reads it at the masked-in pixels (as autolens does:
source light mapped outside the mask is not modelled).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from twinlens.fields import ValueIdentity, static_field
from twinlens.fit.imaging import Imaging
from twinlens.fit.psf import convolve
from twinlens.grids import SubPixelLayout, sub_pixel_rule

__all__ = ["MaskedLayout", "blurred_mapping_matrix", "border_indices", "mapping_matrix"]


@dataclass(frozen=True, eq=False)
class MaskedLayout(ValueIdentity):
    """What a pixelised inversion needs of a dataset, computed once (plain numpy).

    Parameters
    ----------
    dataset : Imaging
    """

    dataset: Imaging = static_field()

    @cached_property
    def layout(self) -> SubPixelLayout:
        """Sub-pixels of the masked-in pixels only."""
        return self.dataset.grid.layout()

    @cached_property
    def sub_pixel(self) -> np.ndarray:
        """For each sub-pixel, its pixel's position in the mask's order (``mask_index``)."""
        position = np.full(self.dataset.grid.n_pixels, -1, dtype=np.int64)
        position[self.dataset.mask_index] = np.arange(self.dataset.mask_index.size)
        per_pixel = np.concatenate(
            [np.full(count, f * f, dtype=np.int64) for f, count in self.layout.levels]
        )
        return np.repeat(position[self.layout.pixels], per_pixel)

    @cached_property
    def sub_weight(self) -> np.ndarray:
        """Each sub-pixel's weight in its pixel's average."""
        parts = []
        for f, count in self.layout.levels:
            w = sub_pixel_rule(f)[1]
            parts.append(np.tile(np.outer(w, w).reshape(-1), count))
        return np.concatenate(parts)

    @cached_property
    def starts(self) -> np.ndarray:
        """Sub-pixel ranges of the pixels, in mask order: ``starts[p]`` to ``starts[p + 1]``.
        Sub-pixels are then reordered with :attr:`order`."""
        counts = np.bincount(self.sub_pixel, minlength=self.dataset.mask_index.size)
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    @cached_property
    def order(self) -> np.ndarray:
        """Sub-pixel permutation that groups them by pixel in mask order (stable)."""
        return np.argsort(self.sub_pixel, kind="stable")

    @cached_property
    def data(self) -> np.ndarray:
        """The masked-in data, ``(n_mask,)``."""
        return self.dataset.data.reshape(-1)[self.dataset.mask_index]

    @cached_property
    def noise(self) -> np.ndarray:
        """The masked-in noise, ``(n_mask,)``."""
        return self.dataset.noise_map.reshape(-1)[self.dataset.mask_index]

    @cached_property
    def image_to_mask(self) -> np.ndarray:
        """For each flat image pixel, its position in the mask's order, or -1."""
        out = np.full(self.dataset.grid.n_pixels, -1, dtype=np.int64)
        out[self.dataset.mask_index] = np.arange(self.dataset.mask_index.size)
        return out


def mapping_matrix(
    indices: Any,
    weights: Any,
    sub_pixel: np.ndarray,
    sub_weight: np.ndarray,
    n_mask: int,
    n_source: int,
    xp: Any = np,
) -> Any:
    """The unblurred mapping matrix ``M (n_mask, n_source)`` (see the module documentation).

    Parameters
    ----------
    indices : int array (n_sub, k)
    weights : float array (n_sub, k)
    sub_pixel : int array (n_sub,)
        Each sub-pixel's pixel (row of ``M``).
    sub_weight : float array (n_sub,)
        Each sub-pixel's weight in its pixel's average.
    n_mask, n_source : int
    xp : module
    """
    rows = np.broadcast_to(sub_pixel[:, None], indices.shape)
    values = weights * sub_weight[:, None]
    if xp is np:
        out = np.zeros((n_mask, n_source))
        np.add.at(out, (rows, indices), values)
        return out
    return xp.zeros((n_mask, n_source), dtype=values.dtype).at[rows, indices].add(values)


def blurred_mapping_matrix(mapping: Any, dataset: Imaging, xp: Any = np) -> Any:
    """``B (n_mask, n_source)``: each column of ``mapping`` placed in the image (zero outside
    the mask), convolved with the dataset's PSF, read at the masked-in pixels."""
    ny, nx = dataset.grid.shape
    n_source = mapping.shape[1]
    index = dataset.mask_index
    if xp is np:
        cube = np.zeros((n_source, ny * nx))
        cube[:, index] = mapping.T
    else:
        cube = xp.zeros((n_source, ny * nx), dtype=mapping.dtype).at[:, index].set(mapping.T)
    blurred = convolve(cube.reshape(n_source, ny, nx), dataset.psf, xp)
    return blurred.reshape(n_source, ny * nx)[:, index].T


def border_indices(masked: MaskedLayout) -> np.ndarray:
    """Positions of the border sub-pixels in ``masked.layout``'s points: the outer ring of
    sub-pixels of the mask refined to sub-pixel resolution when the oversampling is uniform
    (``f x f`` sub-pixels), else every sub-pixel of the mask's outer-edge pixels."""
    from twinlens.fit.pixelised.border import border_mask, border_sub_indices

    grid = masked.dataset.grid
    levels = masked.layout.levels
    if len(levels) == 1 and levels[0][0] > 0:
        return border_sub_indices(grid.used, masked.layout.pixels, levels[0][0])
    edge = border_mask(grid.used).reshape(-1)
    per_pixel = np.concatenate([np.full(count, f * f, dtype=np.int64) for f, count in levels])
    return np.flatnonzero(np.repeat(edge[masked.layout.pixels], per_pixel))

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
from twinlens.grids import SubPixelLayout, sub_pixel_rule
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.psf import convolve

__all__ = [
    "MaskedLayout",
    "SparseBlurred",
    "blurred_columns",
    "blurred_mapping_matrix",
    "border_indices",
    "mapping_matrix",
    "sparse_blurred",
]


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

    @cached_property
    def pixel_rows_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Row and column in the image of each masked-in pixel (mask order), int64."""
        rows, columns = np.divmod(self.dataset.mask_index, self.dataset.grid.shape[1])
        return rows.astype(np.int64), columns.astype(np.int64)


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


def blurred_columns(
    indices: Any, weights: Any, n_source: int, masked: MaskedLayout, xp: Any = np
) -> Any:
    """``B^T (n_source, n_mask)``, the transposed blurred mapping matrix, without forming
    ``M``: the sub-pixel entries are added straight into one image per source pixel, the images
    are convolved with the PSF and read at the masked-in pixels (the same result as
    :func:`blurred_mapping_matrix`, with one scatter of the ``n_sub k`` entries instead of a
    scatter of ``n_mask n_source`` values; JAX)."""
    dataset = masked.dataset
    ny, nx = dataset.grid.shape
    pixel = np.broadcast_to(dataset.mask_index[masked.sub_pixel][:, None], indices.shape)
    values = weights * masked.sub_weight[:, None]
    if xp is np:
        cube = np.zeros((n_source, ny * nx))
        np.add.at(cube, (indices, pixel), values)
    else:
        cube = xp.zeros((n_source, ny * nx), dtype=values.dtype).at[indices, pixel].add(values)
    blurred = convolve(cube.reshape(n_source, ny, nx), dataset.psf, xp)
    return blurred.reshape(n_source, ny * nx)[:, dataset.mask_index]


def border_indices(masked: MaskedLayout) -> np.ndarray:
    """Positions of the border sub-pixels in ``masked.layout``'s points: the outer ring of
    sub-pixels of the mask refined to sub-pixel resolution when the oversampling is uniform
    (``f x f`` sub-pixels), else every sub-pixel of the mask's outer-edge pixels."""
    from twinlens.inversion.border import border_mask, border_sub_indices

    grid = masked.dataset.grid
    levels = masked.layout.levels
    if len(levels) == 1 and levels[0][0] > 0:
        return border_sub_indices(grid.used, masked.layout.pixels, levels[0][0])
    edge = border_mask(grid.used).reshape(-1)
    per_pixel = np.concatenate([np.full(count, f * f, dtype=np.int64) for f, count in levels])
    return np.flatnonzero(np.repeat(edge[masked.layout.pixels], per_pixel))


@dataclass(frozen=True)
class SparseBlurred:
    """The noise-weighted blurred mapping matrix ``B~ = C^-1/2 B`` of one evaluation, sparse
    (numba backend): compressed rows (``indptr``, ``cols`` ascending within a row, ``vals``)
    and a column index into them (column ``s`` has CSR positions
    ``col_pos[col_ptr[s]:col_ptr[s + 1]]`` in rows ``col_row[...]``).

    Column ``s`` of ``B`` is nonzero only on the image pixels that source pixel ``s`` maps
    to, dilated by the PSF, so ``F = B~^T B~`` costs the sum over image pixels of the squared
    row lengths rather than ``n_mask n_source^2``.
    """

    indptr: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    col_ptr: np.ndarray
    col_pos: np.ndarray
    col_row: np.ndarray
    n_source: int

    def curvature(self) -> np.ndarray:
        """``F = B~^T B~``, dense ``(n_source, n_source)``."""
        from twinlens.inversion import loops

        compiled = loops.compiled()
        out = np.zeros((self.n_source, self.n_source))
        compiled.curvature_upper(
            self.indptr, self.cols, self.vals, self.col_ptr, self.col_pos, self.col_row, out
        )
        compiled.mirror_upper(out)
        return out

    def transpose_times(self, x: np.ndarray) -> np.ndarray:
        """``B~^T x`` for ``x (n_mask,)``."""
        from twinlens.inversion import loops

        out = np.empty(self.n_source)
        loops.compiled().transpose_times(
            self.vals, self.col_ptr, self.col_pos, self.col_row, np.ascontiguousarray(x), out
        )
        return out

    def times(self, x: np.ndarray) -> np.ndarray:
        """``B~ x`` for ``x (n_source,)``."""
        from twinlens.inversion import loops

        out = np.empty(self.indptr.size - 1)
        loops.compiled().rows_times(
            self.indptr, self.cols, self.vals, np.ascontiguousarray(x, dtype=float), out
        )
        return out


#: Image pixels per scratch chunk of the sparse blurring (each chunk owns ``n_source`` marks)
_CHUNK = 256


def sparse_blurred(
    indices: np.ndarray,
    weights: np.ndarray,
    n_source: int,
    masked: MaskedLayout,
    row_scale: np.ndarray,
) -> SparseBlurred:
    """:class:`SparseBlurred` from the mesh's interpolation (``indices``, ``weights``
    ``(n_sub, k)``) with rows scaled by ``row_scale (n_mask,)`` (``1 / sigma``); numba."""
    from twinlens.inversion import loops

    compiled = loops.compiled()
    dataset = masked.dataset
    order = masked.order
    idx = np.ascontiguousarray(indices[order], dtype=np.int64)
    wts = np.ascontiguousarray(weights[order], dtype=float)
    sub_weight = np.ascontiguousarray(masked.sub_weight[order])
    starts = masked.starts
    n_mask = starts.size - 1
    width = int(np.max(np.diff(starts))) * idx.shape[1]
    cols = np.zeros((n_mask, width), dtype=np.int64)
    vals = np.zeros((n_mask, width))
    counts = np.zeros(n_mask, dtype=np.int64)
    compiled.sparse_rows(idx, wts, sub_weight, starts, cols, vals, counts)
    ny, nx = dataset.grid.shape
    rows, columns = masked.pixel_rows_columns
    kernel = np.ascontiguousarray(dataset.psf.kernel, dtype=float)
    row_counts = np.zeros(n_mask, dtype=np.int64)
    compiled.blurred_row_counts(
        cols,
        counts,
        masked.image_to_mask,
        rows,
        columns,
        kernel,
        nx,
        ny,
        n_source,
        _CHUNK,
        row_counts,
    )
    indptr = np.zeros(n_mask + 1, dtype=np.int64)
    np.cumsum(row_counts, out=indptr[1:])
    nnz = int(indptr[-1])
    b_cols = np.empty(nnz, dtype=np.int64)
    b_vals = np.empty(nnz)
    compiled.blurred_sparse_rows(
        cols,
        vals,
        counts,
        masked.image_to_mask,
        rows,
        columns,
        kernel,
        nx,
        ny,
        np.ascontiguousarray(row_scale, dtype=float),
        n_source,
        _CHUNK,
        indptr,
        b_cols,
        b_vals,
    )
    col_ptr = np.zeros(n_source + 1, dtype=np.int64)
    col_pos = np.empty(nnz, dtype=np.int64)
    col_row = np.empty(nnz, dtype=np.int64)
    compiled.column_index(indptr, b_cols, col_ptr, col_pos, col_row)
    return SparseBlurred(indptr, b_cols, b_vals, col_ptr, col_pos, col_row, n_source)

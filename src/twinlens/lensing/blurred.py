"""The blurred images of a lens model's light on a dataset: what every imaging likelihood,
the pixelised source's lens light and the plots fit to the data.

The tracer's light on the grid's sub-pixels, averaged to pixels, convolved with the PSF (light
from the blurring pixels just outside the mask included) and read at the masked-in pixels:
first the parametric light, then each linear profile's unit-intensity image, then each point
image at unit flux.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twinlens.backend import array_module
from twinlens.grids import bin_to_pixels
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.point_images import PointImages
from twinlens.imaging.psf import convolve
from twinlens.lensing.tracer import Tracer

__all__ = ["blurred_terms"]


def blurred_terms(
    tracer: Tracer,
    dataset: Imaging,
    backend: str,
    point_images: PointImages | None = None,
    point_columns: Any = None,
) -> Any:
    """The blurred images at the masked-in pixels, ``(..., 1 + n_linear [+ n_images], n_mask)``:
    first the parametric light, then each linear profile's unit-intensity image, then each
    point image at unit flux (:mod:`twinlens.imaging.point_images`): fixed ones from
    ``point_images``, or ``point_columns (..., n_images, n_mask)`` rendered by the caller (the
    model's positions, one set per vector)."""
    if tracer.pixelizations:
        raise ValueError(
            "a pixelised source has no image of its own until it is fitted: use FitImaging "
            "(its model_image), or simulate with light profiles"
        )
    xp = array_module(backend)
    layout = dataset.layout
    x, y = (layout.xs, layout.ys) if xp is np else (xp.asarray(layout.xs), xp.asarray(layout.ys))
    # under jit the JAX copies are tracers; the layout itself tells the memo which grid this
    # is, so fixed fields are still recalled and folded (twinlens.memo)
    fixed, columns = tracer._light_terms(x, y, backend, grid=layout)
    # without parametric light the fixed image is zero: skip its binning and convolution
    has_fixed = not (isinstance(fixed, float) and fixed == 0.0)
    if not has_fixed and columns:
        terms = []
    elif getattr(fixed, "shape", ())[-1:] == x.shape[-1:]:
        terms = [fixed]  # already one value per point: no copy
    else:
        terms = [x * 0.0 + fixed]
    terms += columns
    shape = np.broadcast_shapes(*(t.shape for t in terms))
    if len(terms) == 1:  # a view, not a copy (W5: 160,000 values per evaluation)
        stack = xp.broadcast_to(terms[0], shape)[..., None, :]
    else:
        stack = xp.stack([xp.broadcast_to(t, shape) for t in terms], axis=-2)
    binned = bin_to_pixels(stack, layout, xp)
    ny, nx = dataset.grid.shape
    lead = binned.shape[:-1]
    if xp is np:
        image = np.zeros((*lead, ny * nx))
        image[..., layout.pixels] = binned
    else:
        image = xp.zeros((*lead, ny * nx), dtype=binned.dtype).at[..., layout.pixels].set(binned)
    blurred = convolve(image.reshape(*lead, ny, nx), dataset.psf, xp)
    out = blurred.reshape(*lead, ny * nx)[..., dataset.mask_index]
    if len(terms) == len(columns):
        out = xp.concatenate([xp.zeros_like(out[..., :1, :]), out], axis=-2)
    if point_images is not None:  # fixed columns, the same numbers on every backend
        if point_columns is not None:
            raise ValueError("give point_images or point_columns, not both")
        point_columns = point_images.columns(dataset)
    if point_columns is not None:
        points = xp.asarray(point_columns)
        lead = np.broadcast_shapes(out.shape[:-2], points.shape[:-2])
        out = xp.concatenate(
            [
                xp.broadcast_to(out, (*lead, *out.shape[-2:])),
                xp.broadcast_to(points, (*lead, *points.shape[-2:])),
            ],
            axis=-2,
        )
    return out

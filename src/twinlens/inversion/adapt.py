"""Adapt images: what a previous fit tells the next one's source mesh and regularisation.

autolens fits a pixelised source in stages: a first fit's model image of the lensed source
(the *adapt image*) places the next fit's mesh vertices where the source is bright and sets
an adaptive regularisation that smooths faint regions more than bright ones. Here:

* :func:`adapt_image`: a fit's model image of the lensed source, zero outside the mask (the
  brightness :func:`~twinlens.inversion.kmeans_vertices` clusters on);
* :func:`adapt_signal`: an image's brightness per source pixel of a mesh, the average of
  the image over the pixels each source pixel lights, weighted by the mapping matrix
  (autolens' ``pixel_signals``); :func:`~twinlens.inversion.adaptive_weights` turns it into
  :class:`~twinlens.inversion.AdaptiveBrightness` weights;
* :func:`adaptive_pixelization`: a mesh with adaptive-brightness regularisation made from a
  previous fit, its hyper-parameters set by the evidence at that fit's lens model
  (:func:`tune_adaptive`, autolens' adapt search).

Why: a single ``lambda`` cannot suit both a source's compact bright knots and the empty sky
around them, and on the pixelised example that mismatch pulled the lens model off the truth
on every mesh, also on noise-free data; weights from a first fit's adapt image remove the pull
(:doc:`/pixelised`, "Bias of pixelised lens models and how to avoid it").
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from twinlens.inversion.mapping import MaskedLayout, mapping_matrix
from twinlens.inversion.pixelization import FitPixelised, Pixelization, _lens_light_terms
from twinlens.inversion.regularization import AdaptiveBrightness, Constant, adaptive_weights

__all__ = ["TUNE_BOUNDS", "adapt_image", "adapt_signal", "adaptive_pixelization", "tune_adaptive"]


def adapt_image(fit: FitPixelised) -> np.ndarray:
    """The lensed source of ``fit``, blurred, on the data's grid: its model image less any
    lens light fitted with it, zero outside the mask (an image to cluster vertices on, or to
    read :func:`adapt_signal` from)."""
    dataset = fit.dataset
    model = np.asarray(fit.model_image, dtype=float).reshape(-1)[dataset.mask_index]
    if fit.lens_light is not None:
        light = np.asarray(_lens_light_terms(fit.lens_light, dataset, fit.backend))
        model = model - light[0] - np.asarray(fit.intensities, dtype=float) @ light[1:]
    out = np.zeros(dataset.grid.n_pixels)
    out[dataset.mask_index] = model
    return out.reshape(dataset.grid.shape)


def adapt_signal(fit: FitPixelised, image: Any) -> np.ndarray:
    """An image's brightness per source pixel of ``fit``'s mesh: for source pixel ``s``,
    ``sum_p M[p, s] a_p / sum_p M[p, s]`` over the masked-in pixels ``p``, with ``M`` the
    (unblurred) mapping matrix of ``fit``'s lens model and ``a`` the image.

    Parameters
    ----------
    fit : FitPixelised
        Gives the mesh, the lens model and the dataset.
    image : float array (ny, nx)
        On the dataset's grid, finite inside the mask (an adapt image: :func:`adapt_image`
        of a previous fit).

    Returns
    -------
    float array (n_source,)
        0 for a source pixel that lights no masked-in pixel.
    """
    dataset = fit.dataset
    a = np.asarray(image, dtype=float)
    if a.shape != dataset.grid.shape:
        raise ValueError(f"image must have the data's shape {dataset.grid.shape}, got {a.shape}")
    a = a.reshape(-1)[dataset.mask_index]
    if not np.all(np.isfinite(a)):
        raise ValueError("image must be finite inside the mask")
    masked = MaskedLayout(dataset)
    mesh = fit.pixelization.mesh.mapping(
        np.asarray(fit.source_plane_points), np.asarray(fit.source_vertices), np, masked.sub_weight
    )
    m = mapping_matrix(
        np.asarray(mesh.indices),
        np.asarray(mesh.weights),
        masked.sub_pixel,
        masked.sub_weight,
        a.size,
        mesh.n_pixels,
    )
    total = m.sum(axis=0)
    return np.divide(a @ m, total, out=np.zeros(mesh.n_pixels), where=total > 0)


def adaptive_pixelization(
    fit: FitPixelised,
    mesh: Any,
    image: Any = None,
    *,
    tune: bool = True,
    inner: float = 1.0,
    outer: float = 100.0,
    signal_scale: float = 1.0,
    coefficient: float = 1.0,
    unit_coefficient: bool = False,
) -> Pixelization:
    """A pixelization on ``mesh`` with :class:`~twinlens.inversion.AdaptiveBrightness`
    regularisation made from a previous fit (autolens' adapt stage): the weights are
    :func:`~twinlens.inversion.adaptive_weights` of the adapt image's :func:`adapt_signal` on
    ``mesh`` at ``fit``'s lens model.

    Parameters
    ----------
    fit : FitPixelised
        The previous fit: its lens model, dataset, lens light and ``positive`` are kept.
    mesh : Rectangular or Delaunay
        The new source mesh (``Delaunay(image_vertices=kmeans_vertices(grid, adapt_image(fit),
        n))`` spends its vertices where the source is bright).
    image : float array (ny, nx), optional
        The adapt image; default :func:`adapt_image` of ``fit``.
    tune : bool
        Set ``coefficient``, ``outer`` and ``signal_scale`` (``inner`` 1) by maximising the
        evidence at ``fit``'s lens model (:func:`tune_adaptive`), as autolens' adapt search
        does; else use the values given.
    inner, outer, signal_scale, coefficient : float
        As :func:`~twinlens.inversion.adaptive_weights` and ``AdaptiveBrightness`` take them.
    unit_coefficient : bool
        Scale the weights by the coefficient and make the coefficient 1: the same
        regularisation, with ``lambda = 1`` now meaning "as tuned", so that a prior on the
        next fit's ``lambda`` is a range about the tuned strength (the tuned coefficient
        alone can lie anywhere in :data:`TUNE_BOUNDS`, where the evidence is flat in the
        bright end's strength).

    Returns
    -------
    Pixelization
        Its weights fixed from now on; its ``coefficient`` (1 with ``unit_coefficient``) is a
        start for the next fit's ``lambda`` (free there as before).
    """
    image = adapt_image(fit) if image is None else image
    # the previous fit's other choices (positive, relocation) stay
    probe = dataclasses.replace(fit.pixelization, mesh=mesh, regularization=Constant(1.0))
    on_mesh = FitPixelised(fit.dataset, fit.tracer, probe, fit.backend, fit.lens_light)
    signal = adapt_signal(on_mesh, image)
    if tune:
        coefficient, outer, signal_scale = tune_adaptive(on_mesh, signal)
        inner = 1.0
    weights = adaptive_weights(signal, inner, outer, signal_scale)
    if unit_coefficient:
        weights, coefficient = weights * coefficient, 1.0
    regularization = AdaptiveBrightness(coefficient, pixel_weights=weights)
    return dataclasses.replace(probe, regularization=regularization)


#: Bounds of :func:`tune_adaptive`'s search: log10 of the regularisation's strength where the
#: source is brightest (``lambda inner^2``) and where it is dark (``lambda outer^2``), and of
#: ``signal_scale``.
TUNE_BOUNDS = ((-6.0, 6.0), (-6.0, 6.0), (-1.0, 1.0))


def tune_adaptive(fit: FitPixelised, signal: Any) -> tuple[float, float, float]:
    """``(coefficient, outer, signal_scale)`` maximising the log-evidence of ``fit``'s lens
    model and mesh with :class:`~twinlens.inversion.AdaptiveBrightness` weights
    ``adaptive_weights(signal, 1, outer, signal_scale)``.

    The search (Nelder-Mead within :data:`TUNE_BOUNDS`) runs over the strengths at the bright
    and the dark end, ``lambda`` and ``lambda outer^2``, which the evidence constrains nearly
    independently (over ``lambda`` and ``outer`` it would follow a curved valley). It starts
    where both equal Constant's best ``lambda`` on the same mesh (all weights 1), so the
    result is never worse than constant regularisation.
    """
    from scipy.optimize import minimize, minimize_scalar

    def cost(p: np.ndarray) -> float:
        outer = 10.0 ** (0.5 * (p[1] - p[0]))
        weights = adaptive_weights(signal, 1.0, outer, 10.0 ** p[2])
        reg = AdaptiveBrightness(10.0 ** p[0], pixel_weights=weights)
        pix = dataclasses.replace(fit.pixelization, regularization=reg)
        value = FitPixelised(fit.dataset, fit.tracer, pix, fit.backend, fit.lens_light)
        e = float(value.log_evidence)
        return -e if math.isfinite(e) else math.inf

    flat = minimize_scalar(
        lambda t: cost(np.array([t, t, 0.0])), bounds=TUNE_BOUNDS[0], method="bounded"
    )
    t = float(flat.x)
    x0 = np.array([t, t, 0.0])
    simplex = np.vstack([x0, x0 + np.diag([-1.0, 1.0, 0.3])])
    best = minimize(
        cost,
        x0,
        method="Nelder-Mead",
        bounds=TUNE_BOUNDS,
        options={"initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-3, "maxfev": 600},
    )
    x = best.x if best.fun <= cost(x0) else x0
    return 10.0 ** float(x[0]), 10.0 ** (0.5 * float(x[1] - x[0])), 10.0 ** float(x[2])

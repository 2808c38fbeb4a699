"""Figures of a fit: data, model, residuals and source; convergence with critical curves and
caustics; the corner plot of the posterior. Each function writes one PNG and returns its path
(matplotlib's Agg backend, so no screen is needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinlens.fit.likelihood import FitImaging
from twinlens.fit.tracer import Tracer
from twinlens.kernels import lensing

__all__ = [
    "critical_curves_and_caustics",
    "plot_corner",
    "plot_fit",
    "plot_lens",
    "source_plane_image",
]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _extent(fit: FitImaging) -> tuple[float, float, float, float]:
    grid = fit.dataset.grid
    half = np.array(grid.shape[::-1]) * grid.pixel_scale / 2
    ox, oy = grid.origin
    return (ox - half[0], ox + half[0], oy - half[1], oy + half[1])


def source_plane_image(
    tracer: Tracer, half_width: float, n: int = 200, centre: tuple[float, float] = (0.0, 0.0)
) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """The sources' light (unlensed) on an ``n x n`` grid of half-width ``half_width`` arcsec
    about ``centre``, and its extent for ``imshow``."""
    axis = np.linspace(-half_width, half_width, n)
    xs, ys = np.meshgrid(axis + centre[0], axis + centre[1])
    xy = np.stack([xs, ys], axis=-1)
    image = np.zeros(xs.shape)
    for galaxy in tracer.sources:
        for profile in galaxy.light:
            image = image + np.asarray(profile.image(xy, backend="numpy"))
    lo_x, hi_x = centre[0] - half_width, centre[0] + half_width
    lo_y, hi_y = centre[1] - half_width, centre[1] + half_width
    return image, (lo_x, hi_x, lo_y, hi_y)


def critical_curves_and_caustics(
    tracer: Tracer, extent: tuple[float, float, float, float], n: int = 400
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Critical curves (where ``1 / magnification = det(I - H) = 0``) traced as contours on an
    ``n x n`` grid over ``extent``, and the caustics they map to in the source plane."""
    plt = _pyplot()
    x = np.linspace(extent[0], extent[1], n)
    y = np.linspace(extent[2], extent[3], n)
    xs, ys = np.meshgrid(x, y)
    xy = np.stack([xs, ys], axis=-1)
    h = np.asarray(tracer.hessian(xy, "numpy"))
    det = lensing.jacobian_determinant(h[..., 0, 0], h[..., 0, 1], h[..., 1, 1])
    figure = plt.figure()
    contour = plt.contour(xs, ys, det, levels=[0.0])
    curves = [np.asarray(p) for p in contour.allsegs[0] if len(p) > 2]
    plt.close(figure)
    caustics = [np.asarray(tracer.source_plane(c, backend="numpy")) for c in curves]
    return curves, caustics


def plot_fit(fit: FitImaging, path: str | Path) -> Path:
    """Data, model, normalised residuals and the solved source, side by side."""
    plt = _pyplot()
    extent = _extent(fit)
    grid = fit.dataset.grid
    data = np.where(grid.used, fit.dataset.data, np.nan)
    lo, hi = np.nanpercentile(data, [0.5, 99.5])
    solved = fit.solved_tracer
    half = 0.5 * (extent[1] - extent[0]) / 2
    source, source_extent = source_plane_image(solved, half)
    _, caustics = critical_curves_and_caustics(solved, extent, n=200)
    fig, axes = plt.subplots(1, 4, figsize=(17, 4), constrained_layout=True)
    panels = (
        ("data", data, "viridis", (lo, hi), extent),
        ("model", fit.model_image, "viridis", (lo, hi), extent),
        ("normalised residuals", fit.normalized_residual_map, "RdBu_r", (-4, 4), extent),
        ("source (solved)", source, "magma", (None, None), source_extent),
    )
    for ax, (title, image, cmap, (vmin, vmax), ext) in zip(axes, panels, strict=True):
        shown = ax.imshow(image, origin="lower", extent=ext, cmap=cmap, vmin=vmin, vmax=vmax)
        ax.set_title(title)
        ax.set_xlabel("x [arcsec]")
        fig.colorbar(shown, ax=ax, shrink=0.85)
    for c in caustics:
        axes[3].plot(c[:, 0], c[:, 1], color="cyan", lw=0.8)
    axes[3].set_xlim(source_extent[:2])
    axes[3].set_ylim(source_extent[2:])
    axes[0].set_ylabel("y [arcsec]")
    fig.suptitle(
        f"log L = {float(fit.log_likelihood):.2f}    chi^2 = {float(fit.chi_squared):.1f} over "
        f"{fit.dataset.mask_index.size} pixels"
    )
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_lens(tracer: Tracer, extent: tuple[float, float, float, float], path: str | Path) -> Path:
    """The lenses' convergence (log scale) with critical curves, and the caustics."""
    plt = _pyplot()
    n = 300
    x = np.linspace(extent[0], extent[1], n)
    y = np.linspace(extent[2], extent[3], n)
    xs, ys = np.meshgrid(x, y)
    xy = np.stack([xs, ys], axis=-1)
    kappa = np.asarray(tracer.convergence(xy, "numpy"))
    curves, caustics = critical_curves_and_caustics(tracer, extent)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), constrained_layout=True)
    shown = axes[0].imshow(
        np.log10(np.clip(kappa, 1e-3, None)), origin="lower", extent=extent, cmap="gray_r"
    )
    fig.colorbar(shown, ax=axes[0], shrink=0.85, label="log10 convergence")
    for c in curves:
        axes[0].plot(c[:, 0], c[:, 1], color="tab:red", lw=1)
    for c in caustics:
        axes[1].plot(c[:, 0], c[:, 1], color="tab:blue", lw=1)
    axes[0].set_title("convergence and critical curves")
    axes[1].set_title("caustics (source plane)")
    axes[1].set_aspect("equal")
    for ax in axes:
        ax.set_xlabel("x [arcsec]")
        ax.set_ylabel("y [arcsec]")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_corner(
    samples: np.ndarray, labels: tuple[str, ...], path: str | Path, truths: Any = None
) -> Path:
    """The corner plot of posterior samples ``(n, d)`` (the ``corner`` package)."""
    import corner

    plt = _pyplot()
    spread = np.ptp(samples, axis=0) > 0  # a parameter that never moved has no histogram
    fig = corner.corner(
        samples[:, spread],
        labels=[f"${label}$" for label, keep in zip(labels, spread, strict=True) if keep],
        truths=None if truths is None else np.asarray(truths)[spread],
        quantiles=[0.16, 0.5, 0.84],
        show_titles=True,
        title_fmt=".3f",
    )
    fig.savefig(path, dpi=70)
    plt.close(fig)
    return Path(path)

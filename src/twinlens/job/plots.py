"""Figures of a fit: data, model, residuals and source; convergence with critical curves and
caustics; the corner plot of the posterior. Each function writes one PNG and returns its path
(matplotlib's Agg backend, so no screen is needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.kernels import lensing
from twinlens.lensing.tracer import Tracer
from twinlens.likelihood.imaging import FitImaging
from twinlens.model.model import path_from_latex_label
from twinlens.model.paths import readable_label

__all__ = [
    "corner_figure",
    "corner_labels",
    "critical_curves_and_caustics",
    "plot_corner",
    "plot_fit",
    "plot_lens",
    "point_source_half_width",
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


def plot_fit(fit: FitImaging, path: str | Path, title: str | None = None) -> Path:
    """Data, model, normalised residuals and the solved source, side by side; titled
    ``title`` (the job passes the numbers summary.txt prints) or, by default, ``fit``'s own
    log-likelihood and chi^2."""
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
    for ax, (label, image, cmap, (vmin, vmax), ext) in zip(axes, panels, strict=True):
        shown = ax.imshow(image, origin="lower", extent=ext, cmap=cmap, vmin=vmin, vmax=vmax)
        ax.set_title(label)
        ax.set_xlabel("x [arcsec]")
        fig.colorbar(shown, ax=ax, shrink=0.85)
    for c in caustics:
        axes[3].plot(c[:, 0], c[:, 1], color="cyan", lw=0.8)
    axes[3].set_xlim(source_extent[:2])
    axes[3].set_ylim(source_extent[2:])
    axes[0].set_ylabel("y [arcsec]")
    fig.suptitle(
        title
        if title is not None
        else f"log-likelihood = {float(fit.log_likelihood):.3f}    chi^2 = "
        f"{float(fit.chi_squared):.1f} over {fit.dataset.mask_index.size} pixels"
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


def corner_labels(labels: Sequence[str], paths: Sequence[str] | None = None) -> list[str]:
    """Axis labels of a corner plot: each parameter's path as the TOML file names it, with its
    unit (:func:`~twinlens.model.paths.readable_label`). ``paths`` default to those the LaTeX
    ``labels`` were made from; a label that is no parameter's is kept, as LaTeX."""
    out = []
    for i, label in enumerate(labels):
        path = paths[i] if paths is not None else path_from_latex_label(label)
        out.append(f"${label}$" if path is None else readable_label(path))
    return out


def _ranges(samples: np.ndarray, truths: np.ndarray | None) -> list[tuple[float, float]]:
    """Each axis spans 99.8% of the samples and the truth, with a margin."""
    lo, hi = np.percentile(samples, [0.1, 99.9], axis=0)
    if truths is not None:
        finite = np.isfinite(truths)
        lo = np.where(finite, np.minimum(lo, np.where(finite, truths, 0.0)), lo)
        hi = np.where(finite, np.maximum(hi, np.where(finite, truths, 0.0)), hi)
    pad = 0.06 * np.maximum(hi - lo, 1e-12 * np.maximum(np.abs(hi), 1.0))
    return [(float(a), float(b)) for a, b in zip(lo - pad, hi + pad, strict=True)]


def _digits(width: float) -> int:
    """Decimals that show two significant figures of a posterior's width."""
    if not (np.isfinite(width) and width > 0):
        return 3
    return int(np.clip(1 - np.floor(np.log10(width)), 0, 8))


def corner_figure(
    samples: np.ndarray,
    labels: Sequence[str],
    truths: Any = None,
    *,
    paths: Sequence[str] | None = None,
) -> Any:
    """The corner plot of posterior samples ``(n, d)`` as a matplotlib figure (the ``corner``
    package); see :func:`plot_corner`."""
    import corner

    plt = _pyplot()
    samples = np.asarray(samples, dtype=float)
    spread = np.ptp(samples, axis=0) > 0  # a parameter that never moved has no histogram
    kept = samples[:, spread]
    k = kept.shape[1]
    names = [n for n, keep in zip(corner_labels(labels, paths), spread, strict=True) if keep]
    truth = None if truths is None else np.asarray(truths, dtype=float)[spread]
    size = float(np.clip(0.9 * k + 2.5, 5.0, 12.0))  # inches: a laptop screen at 100 dpi
    font = 7.0 if k > 6 else 9.0
    fig = plt.figure(figsize=(size, size))
    corner.corner(
        kept,
        fig=fig,
        truths=truth,
        range=_ranges(kept, truth),
        quantiles=[0.16, 0.5, 0.84],
        max_n_ticks=3,
    )
    axes = np.asarray(fig.axes).reshape(k, k)
    med = np.median(kept, axis=0)
    lo, hi = np.percentile(kept, [16.0, 84.0], axis=0)
    for i in range(k):
        d = _digits(hi[i] - lo[i])
        axes[i, i].set_title(
            f"${med[i]:.{d}f}^{{+{hi[i] - med[i]:.{d}f}}}_{{-{med[i] - lo[i]:.{d}f}}}$",
            fontsize=font,
        )
        # long labels: vertical under the bottom row, horizontal left of the first column
        axes[-1, i].set_xlabel(names[i], fontsize=font, rotation=90)
        if i > 0:
            axes[i, 0].set_ylabel(names[i], fontsize=font, rotation=0, ha="right", va="center")
    for ax in axes.ravel():
        ax.tick_params(labelsize=0.85 * font)
    # margins in inches: the longest label and the tick labels, at most a third of the figure
    margin = min(0.6 + max(len(n) for n in names) * 0.55 * font / 72, size / 3)
    fig.subplots_adjust(
        left=margin / size,
        bottom=margin / size,
        right=1 - 0.1 / size,
        top=1 - 0.3 / size,
        wspace=0.08,
        hspace=0.08,
    )
    return fig


def plot_corner(
    samples: np.ndarray,
    labels: Sequence[str],
    path: str | Path,
    truths: Any = None,
    *,
    paths: Sequence[str] | None = None,
) -> Path:
    """The corner plot of posterior samples ``(n, d)`` (the ``corner`` package).

    Axes are labelled with the parameters' paths and units (``paths``, or those the LaTeX
    ``labels`` of :attr:`twinlens.model.Model.labels` were made from), span 99.8% of the
    samples and ``truths`` (so a truth far from the posterior is still drawn), and the figure
    stays within 12 inches a side. Each diagonal panel is titled with the median and the 68%
    interval."""
    plt = _pyplot()
    fig = corner_figure(samples, labels, truths, paths=paths)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def point_source_half_width(positions: Any) -> float:
    """Half-width (arcsec) of a square about the origin that holds the observed images with a
    margin: the field of the plots of a fit without imaging."""
    reach = float(np.max(np.abs(np.asarray(positions, dtype=float))))
    return max(1.0, 1.4 * reach)

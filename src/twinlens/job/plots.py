"""Figures of a fit: data, model, residuals and source; convergence with critical curves and
caustics; the corner plot of the posterior. Each function writes one PNG and returns its path
(matplotlib's Agg backend, so no screen is needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from twinlens import posterior_stats
from twinlens.kernels import lensing
from twinlens.lensing.tracer import Tracer
from twinlens.likelihood.imaging import FitImaging
from twinlens.model.labels import axis_labels
from twinlens.model.model import path_from_latex_label

__all__ = [
    "corner_figure",
    "corner_labels",
    "critical_curves_and_caustics",
    "density_settings",
    "draw_on_mesh",
    "plot_band_fits",
    "plot_corner",
    "plot_fit",
    "plot_lens",
    "point_source_half_width",
    "source_plane_image",
    "weighted_posterior",
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
    if title is None:
        title = (
            f"log-likelihood = {float(fit.log_likelihood):.3f}    chi^2 = "
            f"{float(fit.chi_squared):.1f} over {fit.dataset.mask_index.size} pixels"
        )
    return plot_band_fits([fit], [None], path, title)


def plot_band_fits(
    fits: list[FitImaging], names: list[str | None], path: str | Path, title: str
) -> Path:
    """:func:`plot_fit`'s four panels, one row per fit (a multi-band fit's bands, each row
    headed by its band's ``name`` and chi^2)."""
    plt = _pyplot()
    fig, rows = plt.subplots(
        len(fits), 4, figsize=(17, 4 * len(fits)), constrained_layout=True, squeeze=False
    )
    for axes, fit, name in zip(rows, fits, names, strict=True):
        _fit_row(fig, axes, fit)
        if name is not None:
            chi2 = f"chi^2 = {float(fit.chi_squared):.1f} / {fit.dataset.mask_index.size}"
            axes[0].set_ylabel(f"{name}   ({chi2})\ny [arcsec]")
    fig.suptitle(title)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def _fit_row(fig: Any, axes: Any, fit: FitImaging) -> None:
    extent = _extent(fit)
    grid = fit.dataset.grid
    data = np.where(grid.used, fit.dataset.data, np.nan)
    lo, hi = np.nanpercentile(data, [0.5, 99.5])
    solved = fit.solved_tracer
    panels = [
        ("data", data, "viridis", (lo, hi), extent),
        ("model", fit.model_image, "viridis", (lo, hi), extent),
        ("normalised residuals", fit.normalized_residual_map, "RdBu_r", (-4, 4), extent),
    ]
    pixelised = fit.pixelised
    if pixelised is None:
        half = 0.5 * (extent[1] - extent[0]) / 2
        source, source_extent = source_plane_image(solved, half)
        panels.append(("source (solved)", source, "magma", (None, None), source_extent))
        _, caustics = critical_curves_and_caustics(solved, extent, n=200)
    else:
        _, caustics = critical_curves_and_caustics(pixelised.parts.mass, extent, n=200)
    for ax, (label, image, cmap, (vmin, vmax), ext) in zip(axes, panels, strict=False):
        shown = ax.imshow(image, origin="lower", extent=ext, cmap=cmap, vmin=vmin, vmax=vmax)
        ax.set_title(label)
        fig.colorbar(shown, ax=ax, shrink=0.85)
    if pixelised is not None:  # the reconstruction on its own mesh
        inversion = pixelised.inversion
        shown = draw_on_mesh(axes[3], inversion, inversion.reconstruction)
        axes[3].set_title(f"source ({type(inversion.pixelization.mesh).__name__})")
        fig.colorbar(shown, ax=axes[3], shrink=0.85)
    xlim, ylim = axes[3].get_xlim(), axes[3].get_ylim()
    for c in caustics:
        axes[3].plot(c[:, 0], c[:, 1], color="cyan", lw=0.8)
    axes[3].set_xlim(xlim)
    axes[3].set_ylim(ylim)
    for ax in axes:
        ax.set_xlabel("x [arcsec]")
    axes[0].set_ylabel("y [arcsec]")


def draw_on_mesh(ax: Any, inversion: Any, values: Any, cmap: str = "magma") -> Any:
    """Draw per-source-pixel ``values`` of a :class:`~twinlens.inversion.FitPixelised`
    on its mesh in the matplotlib axes ``ax``, cells as they are (no resampling); returns
    the artist (for a colour bar)."""
    vertices = np.asarray(inversion.source_vertices, dtype=float)
    values = np.asarray(values, dtype=float)
    mesh = inversion.pixelization.mesh
    from twinlens.inversion.meshes import Rectangular

    if isinstance(mesh, Rectangular):
        ny, nx = mesh.shape
        xs = vertices[:, 0].reshape(ny, nx)
        ys = vertices[:, 1].reshape(ny, nx)
        shown = ax.pcolormesh(xs, ys, values.reshape(ny, nx), shading="nearest", cmap=cmap)
    else:
        from scipy.spatial import Delaunay as Triangulation

        triangles = Triangulation(vertices).simplices
        shown = ax.tripcolor(
            vertices[:, 0], vertices[:, 1], triangles, values, shading="gouraud", cmap=cmap
        )
        ax.triplot(vertices[:, 0], vertices[:, 1], triangles, color="white", lw=0.15, alpha=0.4)
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    pad = 0.03 * (hi - lo)
    ax.set_xlim(lo[0] - pad[0], hi[0] + pad[0])
    ax.set_ylim(lo[1] - pad[1], hi[1] + pad[1])
    ax.set_aspect("equal")
    return shown


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
    """Axis labels of a corner plot: each parameter's short label with its unit
    (:func:`~twinlens.model.labels.axis_labels`, e.g. ``mass0 θE ["]``; summary.txt lists each
    beside its full path). ``paths`` default to those the LaTeX ``labels`` were made from; a
    label that is no parameter's is kept, as LaTeX."""
    found = [
        paths[i] if paths is not None else path_from_latex_label(label)
        for i, label in enumerate(labels)
    ]
    short = iter(axis_labels([p for p in found if p is not None]))
    return [
        f"${label}$" if p is None else next(short) for label, p in zip(labels, found, strict=True)
    ]


def weighted_posterior(info: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """The weighted posterior a search's ``info`` holds (nautilus's points and weights, of
    which its equal-weight samples are a thinned draw), or None."""
    if "weighted_samples" not in info or "log_weights" not in info:
        return None
    log_w = np.asarray(info["log_weights"], dtype=float)
    return np.asarray(info["weighted_samples"], dtype=float), np.exp(log_w - np.max(log_w))


def _percentiles(x: np.ndarray, weights: np.ndarray | None, q: Sequence[float]) -> np.ndarray:
    """Percentiles ``q`` of each column of ``x`` under ``weights``
    (:func:`~twinlens.posterior_stats.percentile`), shape ``(len(q), d)``."""
    if weights is None:
        return np.percentile(x, q, axis=0)
    columns = [posterior_stats.percentile(x[:, i], q, weights) for i in range(x.shape[1])]
    return np.stack(columns, axis=1)


def _ranges(
    x: np.ndarray, weights: np.ndarray | None, truths: np.ndarray | None
) -> list[tuple[float, float]]:
    """Each axis spans 99.8% of the posterior and the truth, with a margin."""
    lo, hi = _percentiles(x, weights, [0.1, 99.9])
    if truths is not None:
        finite = np.isfinite(truths)
        lo = np.where(finite, np.minimum(lo, np.where(finite, truths, 0.0)), lo)
        hi = np.where(finite, np.maximum(hi, np.where(finite, truths, 0.0)), hi)
    pad = 0.06 * np.maximum(hi - lo, 1e-12 * np.maximum(np.abs(hi), 1.0))
    return [(float(a), float(b)) for a, b in zip(lo - pad, hi + pad, strict=True)]


#: bins per posterior sigma (half the 68% interval) in the 2-D histograms
BINS_PER_SIGMA = 4.0


def density_settings(
    x: np.ndarray, weights: np.ndarray | None, ranges: Sequence[tuple[float, float]]
) -> tuple[list[int], float, float]:
    """Bins per axis and the Gaussian smoothing (in bins) of a corner plot's 2-D and 1-D
    histograms: binned kernel density estimates.

    A histogram of a few hundred points in corner's default 20 x 20 bins over axes that also
    reach a distant truth holds counts of 0 to 3: several contour levels fall on one count
    and corner warns "Too few points to create valid contours". Here a bin is a quarter of
    the parameter's posterior sigma (so the 1-sigma region spans 8 bins whatever the axis
    holds), and the histogram is smoothed with Scott's bandwidth ``sigma n_eff^(-1/6)`` (two
    dimensions; ``sigma n_eff^(-1/5)`` for the 1-D histograms), ``n_eff`` the weights'
    effective sample size: the contours follow the posterior rather than the counts, and
    widen by ``sqrt(1 + n_eff^(-1/3))`` (8% at 180 samples)."""
    n_eff = len(x) if weights is None else float(weights.sum() ** 2 / (weights**2).sum())
    lo, hi = _percentiles(x, weights, [16.0, 84.0])
    sigma = 0.5 * (hi - lo)
    span = np.array([b - a for a, b in ranges])
    sigma = np.where(sigma > 0, sigma, span / 20)  # a posterior piled on one value
    bins = np.clip(np.ceil(span / sigma * BINS_PER_SIGMA), 10, 200).astype(int)
    per_bin = float(np.min(sigma / (span / bins)))  # bins per sigma, less where clipped
    n = max(n_eff, 2.0)
    return [int(b) for b in bins], per_bin * n ** (-1 / 6), per_bin * n ** (-1 / 5)


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
    weighted: tuple[np.ndarray, np.ndarray] | None = None,
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
    x, weights = (kept, None) if weighted is None else (weighted[0][:, spread], weighted[1])
    ranges = _ranges(x, weights, truth)
    bins, smooth, smooth1d = density_settings(x, weights, ranges)
    size = float(np.clip(0.9 * k + 2.5, 5.0, 12.0))  # inches: a laptop screen at 100 dpi
    font = 7.0 if k > 6 else 9.0
    fig = plt.figure(figsize=(size, size))
    corner.corner(
        x,
        weights=weights,
        fig=fig,
        truths=truth,
        range=ranges,
        bins=bins,
        smooth=smooth,
        smooth1d=smooth1d,
        plot_datapoints=False,  # drawn below from the equal-weight samples
        max_n_ticks=3,
    )
    _annotate(np.asarray(fig.axes).reshape(k, k), kept, names, font)
    # margins in inches: the longest label and the tick labels, at most a third of the figure
    left = min(0.7 + max(len(n) for n in names) * 0.55 * font / 72, size / 3)
    fig.subplots_adjust(
        left=left / size,
        bottom=min(0.9, size / 3) / size,
        right=1 - 0.1 / size,
        top=1 - 0.3 / size,
        wspace=0.08,
        hspace=0.08,
    )
    return fig


def _annotate(axes: np.ndarray, samples: np.ndarray, names: list[str], font: float) -> None:
    """Each diagonal panel's median and 68% interval (title and dashed lines) and each 2-D
    panel's points, all from the equal-weight ``samples``, whose statistics summary.txt
    prints; the labels, horizontal."""
    k = len(names)
    med = np.median(samples, axis=0)
    lo, hi = np.percentile(samples, [16.0, 84.0], axis=0)
    for i in range(k):
        d = _digits(hi[i] - lo[i])
        axes[i, i].set_title(
            f"${med[i]:.{d}f}^{{+{hi[i] - med[i]:.{d}f}}}_{{-{med[i] - lo[i]:.{d}f}}}$",
            fontsize=font,
        )
        for value in (lo[i], med[i], hi[i]):
            axes[i, i].axvline(value, color="k", ls="dashed", lw=1)
        for j in range(i):
            axes[i, j].plot(
                samples[:, j],
                samples[:, i],
                "o",
                ms=2,
                mec="none",
                color="k",
                alpha=0.1,
                zorder=-1,
                rasterized=True,
            )
        axes[-1, i].set_xlabel(names[i], fontsize=font)
        if i > 0:
            axes[i, 0].set_ylabel(names[i], fontsize=font, rotation=0, ha="right", va="center")
    for ax in axes.ravel():
        ax.tick_params(labelsize=0.85 * font)


def plot_corner(
    samples: np.ndarray,
    labels: Sequence[str],
    path: str | Path,
    truths: Any = None,
    *,
    paths: Sequence[str] | None = None,
    weighted: tuple[np.ndarray, np.ndarray] | None = None,
) -> Path:
    """The corner plot of posterior samples ``(n, d)`` (the ``corner`` package).

    Axes are labelled with the parameters' short labels and units (:func:`corner_labels`,
    from ``paths`` or the LaTeX ``labels`` of :attr:`twinlens.model.Model.labels`), span
    99.8% of the posterior and ``truths`` (so a truth far from the posterior is still
    drawn), and the figure stays within 12 inches a side. Each diagonal panel is titled with
    the median and the 68% interval of ``samples``.

    The histograms and contours are a kernel density estimate (:func:`density_settings`) of
    ``weighted``, ``(points, weights)``, when given: the weighted posterior of which the
    equal-weight ``samples`` are a thinned draw (nautilus's, :func:`weighted_posterior`),
    which holds more of the search's information; else of ``samples``."""
    plt = _pyplot()
    fig = corner_figure(samples, labels, truths, paths=paths, weighted=weighted)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def point_source_half_width(positions: Any) -> float:
    """Half-width (arcsec) of a square about the origin that holds the observed images with a
    margin: the field of the plots of a fit without imaging."""
    reach = float(np.max(np.abs(np.asarray(positions, dtype=float))))
    return max(1.0, 1.4 * reach)

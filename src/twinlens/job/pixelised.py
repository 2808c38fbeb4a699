"""Results of a fit with a pixelised source: its figure and its FITS images.

* :func:`plot_pixelised_fit`: data, model and normalised residuals; the lens-light-subtracted
  data (when the model has lens light); the reconstructed source drawn on its own mesh
  (Delaunay triangles shaded linearly between their vertices, as the mesh interpolates; a
  rectangular lattice as ``pcolormesh`` cells), with the lens model's caustics; and its error
  map, ``sqrt(diag((F + R)^-1))``, on the same mesh;
* :func:`write_source_fits`: the source and its errors interpolated on a regular grid
  (``source.fits``, ``source_errors.fits``), with the pixel scale and the grid's centre in
  the header.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinlens.imaging import fits_io
from twinlens.inversion.source import reconstruction_errors, source_on_grid
from twinlens.likelihood.imaging import FitImaging

__all__ = ["plot_pixelised_fit", "write_source_fits"]


def _pixelised(fit: FitImaging) -> Any:
    if fit.pixelised is None:
        raise ValueError("the fit has no pixelised source")
    return fit.pixelised


def plot_pixelised_fit(fit: FitImaging, path: str | Path, title: str | None = None) -> Path:
    """The figure of a fit with a pixelised source (see the module); one PNG at ``path``,
    titled ``title`` (the job passes the numbers summary.txt prints) or, by default, ``fit``'s
    own log-likelihood (the inversion's evidence), chi^2 and regularisation coefficient."""
    from twinlens.job.plots import _extent, _pyplot, critical_curves_and_caustics, draw_on_mesh

    p = _pixelised(fit)
    plt = _pyplot()
    extent = _extent(fit)
    grid = fit.dataset.grid
    data = np.where(grid.used, fit.dataset.data, np.nan)
    lo, hi = np.nanpercentile(data, [0.5, 99.5])
    subtracted = np.where(grid.used, p.source_data, np.nan)
    _, caustics = critical_curves_and_caustics(p.parts.mass, extent, n=200)
    fig, axes = plt.subplots(2, 3, figsize=(14, 8.5), constrained_layout=True)
    panels = (
        ("data", data, "viridis", (lo, hi)),
        ("model", fit.model_image, "viridis", (lo, hi)),
        ("normalised residuals", fit.normalized_residual_map, "RdBu_r", (-4, 4)),
        (
            "data minus lens light" if p.parts.lens_light is not None else "data (source only)",
            subtracted,
            "viridis",
            (np.nanpercentile(subtracted, 0.5), np.nanpercentile(subtracted, 99.5)),
        ),
    )
    flat = [axes[0, 0], axes[0, 1], axes[0, 2], axes[1, 0]]
    for ax, (label, image, cmap, (vmin, vmax)) in zip(flat, panels, strict=True):
        shown = ax.imshow(image, origin="lower", extent=extent, cmap=cmap, vmin=vmin, vmax=vmax)
        ax.set_title(label)
        fig.colorbar(shown, ax=ax, shrink=0.85)
    inversion = p.inversion
    mesh_name = type(inversion.pixelization.mesh).__name__
    n_source = np.asarray(inversion.reconstruction).size
    for ax, label, values in (
        (axes[1, 1], f"source ({mesh_name}, {n_source} pixels)", inversion.reconstruction),
        (axes[1, 2], "source error sqrt(diag((F+R')^-1)_ss)", reconstruction_errors(inversion)),
    ):
        shown = draw_on_mesh(ax, inversion, values)
        xlim, ylim = ax.get_xlim(), ax.get_ylim()
        for c in caustics:
            ax.plot(c[:, 0], c[:, 1], color="cyan", lw=0.8)
        ax.set_xlim(xlim)
        ax.set_ylim(ylim)
        ax.set_title(label)
        fig.colorbar(shown, ax=ax, shrink=0.85)
    for ax in axes.ravel():
        ax.set_xlabel("x [arcsec]")
        ax.set_ylabel("y [arcsec]")
    if title is None:
        coefficient = float(inversion.pixelization.regularization.coefficient)
        title = (
            f"log-likelihood (the source inversion's log evidence) = "
            f"{float(fit.log_likelihood):.3f}    chi^2 = {float(fit.chi_squared):.1f} over "
            f"{fit.dataset.mask_index.size} pixels\nregularization coefficient = {coefficient:.4g}"
        )
    fig.suptitle(title)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def write_source_fits(fit: FitImaging, folder: str | Path, n: int = 100) -> dict[str, Path]:
    """``source.fits`` and ``source_errors.fits`` in ``folder``: the reconstruction and its
    errors interpolated on an ``n x n`` grid over the mesh (NaN outside it), with
    ``PIXSCALE`` (arcsec) and the grid centre ``XCENTRE``, ``YCENTRE`` (arcsec) in the
    header."""
    p = _pixelised(fit)
    folder = Path(folder)
    out = {}
    for name, values in (
        ("source", None),
        ("source_errors", reconstruction_errors(p.inversion)),
    ):
        image, scale, centre = source_on_grid(p.inversion, n, values)
        out[name] = folder / f"{name}.fits"
        header = {
            "XCENTRE": (centre[0], "[arcsec] x of the grid centre (source plane)"),
            "YCENTRE": (centre[1], "[arcsec] y of the grid centre (source plane)"),
        }
        fits_io.write_image(out[name], image, scale, True, header)
    return out

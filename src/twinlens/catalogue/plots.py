"""The catalogue's figures: ``catalogue.png`` (the Einstein radius and the search's wall time
across lenses, against the true radius when it is known) and ``thumbnails.png`` (the
normalised residuals of every finished lens, a page of small images)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["plot_catalogue"]

_THETA = "lenses[0].mass[0].einstein_radius"


def plot_catalogue(catalogue: Any, table: Any) -> dict[str, Path]:
    """Write the catalogue's figures into its output folder; returns their paths (none
    without matplotlib, or before any lens finished)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    from twinlens.catalogue.task import lens_folders
    from twinlens.imaging import fits_io

    done = [i for i, row in enumerate(table) if row["status"] == "done"]
    if not done:
        return {}
    files: dict[str, Path] = {}
    ids = [str(table["id"][i]) for i in done]
    # the first lens's Einstein radius where it is a free parameter (comparable with a true
    # value), else the effective radius of all lens mass
    column = _THETA if _THETA in table.colnames else "einstein_radius"
    label = (
        'Einstein radius of lens[0].mass[0] ["]'
        if column == _THETA
        else ('effective Einstein radius ["]')
    )
    theta = np.array([table[column][i] for i in done], dtype=float)
    lower = np.array([table[f"{column}_lower_68"][i] for i in done], dtype=float)
    upper = np.array([table[f"{column}_upper_68"][i] for i in done], dtype=float)
    seconds = np.array([table["wall_time_s"][i] for i in done], dtype=float)
    truths = [catalogue.tasks[i].truths or {} for i in done]
    true_theta = np.array([t.get(_THETA, np.nan) for t in truths], dtype=float)

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    errors = [theta - lower, upper - theta]
    if np.isfinite(true_theta).any():
        left.errorbar(true_theta, theta, yerr=errors, fmt="o", ms=4, capsize=2)
        span = [np.nanmin([true_theta, theta]) * 0.95, np.nanmax([true_theta, theta]) * 1.05]
        left.plot(span, span, "k--", lw=0.8, label="recovered = true")
        left.set_xlabel(f"true {label}")
        left.legend(loc="upper left", fontsize=8)
    else:
        left.errorbar(np.arange(len(ids)), theta, yerr=errors, fmt="o", ms=4, capsize=2)
        left.set_xticks(np.arange(len(ids)), ids, rotation=90, fontsize=7)
    left.set_ylabel(f"{label}, median and 68%")
    left.set_title(f"{len(done)} of {len(table)} lenses fitted")
    right.bar(np.arange(len(ids)), seconds / 60.0)
    right.set_xticks(np.arange(len(ids)), ids, rotation=90, fontsize=7)
    right.set_ylabel("search wall time per lens [min]")
    right.set_title(f"median {np.nanmedian(seconds) / 60:.1f} min per lens")
    files["summary"] = Path(catalogue.output) / "catalogue.png"
    fig.savefig(files["summary"], dpi=110)
    plt.close(fig)

    n = len(done)
    cols = min(8, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(1.6 * cols, 1.7 * rows), squeeze=False, constrained_layout=True
    )
    for ax in axes.ravel():
        ax.axis("off")
    for ax, lens_id in zip(axes.ravel(), ids, strict=False):
        finished, _ = lens_folders(catalogue.output, lens_id)
        path = finished / "normalized_residuals.fits"
        if path.is_file():
            image, _ = fits_io.read_image(path)
            ax.imshow(image, origin="lower", cmap="coolwarm", vmin=-3, vmax=3)
        ax.set_title(lens_id, fontsize=7)
    fig.suptitle("normalised residuals (-3 to 3 sigma)", fontsize=9)
    files["thumbnails"] = Path(catalogue.output) / "thumbnails.png"
    fig.savefig(files["thumbnails"], dpi=110)
    plt.close(fig)
    return files

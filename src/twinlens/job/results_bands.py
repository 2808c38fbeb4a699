"""The results of a multi-band fit, band by band: each band's maximum-likelihood fit, its FITS
images in a folder named after the band, and its part of ``result.json``.

The first band's fit also stands where a single-band fit's does (``chi_squared`` in the
summary is the sum over the bands; ``max_likelihood_model`` is the first band's model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinlens.imaging import fits_io
from twinlens.likelihood.imaging import FitImaging

__all__ = ["band_fits", "band_records", "write_band_images"]


def band_fits(config: Any, vector: Any) -> list[FitImaging]:
    """Each band's fit of the model at ``vector``, its own parameters in place."""
    return [
        FitImaging(dataset, config.model.band_instance(vector, name), "numpy")
        for name, dataset in zip(config.bands, config.datasets, strict=True)
    ]


def write_band_images(
    names: tuple, fits: list[FitImaging], output: Path, files: dict[str, Path]
) -> None:
    """``<output>/<band>/{model,residuals,normalized_residuals}.fits`` for every band."""
    for name, fit in zip(names, fits, strict=True):
        folder = output / name
        folder.mkdir(exist_ok=True)
        images = {
            "model": fit.model_image,
            "residuals": fit.residual_map,
            "normalized_residuals": fit.normalized_residual_map,
        }
        for kind, image in images.items():
            files[f"{name} {kind}"] = folder / f"{kind}.fits"
            fits_io.write_image(folder / f"{kind}.fits", image, fit.dataset.grid.pixel_scale, True)


def band_records(names: tuple, fits: list[FitImaging]) -> dict[str, dict]:
    """Each band's log-likelihood, chi^2, pixel count and solved intensities at the best fit."""
    return {
        name: {
            "log_likelihood": float(fit.log_likelihood),
            "chi_squared": float(fit.chi_squared),
            "n_pixels": int(fit.dataset.mask_index.size),
            "solved_intensities": [
                float(v) for v in np.asarray(fit.intensities)[: fit.tracer.n_linear]
            ],
        }
        for name, fit in zip(names, fits, strict=True)
    }

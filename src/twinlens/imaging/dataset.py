"""Imaging datasets: data, noise map, PSF and grid (mask and oversampling); FITS and simulation."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from twinlens.fields import ValueIdentity, static_field
from twinlens.grids import Grid2D, SubPixelLayout, bin_to_pixels
from twinlens.imaging import fits_io, noise
from twinlens.imaging.psf import PSF, convolve

__all__ = ["Imaging", "simulate"]


@dataclass(frozen=True, eq=False)
class Imaging(ValueIdentity):
    """An image to fit.

    Parameters
    ----------
    data : float array (ny, nx)
        Surface brightness per pixel (e.g. electrons per second), background subtracted.
    noise_map : float array (ny, nx)
        Standard deviation of each pixel's noise, > 0 and finite where the mask is True.
    psf : PSF
        At the data's pixel scale.
    grid : Grid2D
        Shape ``(ny, nx)``, pixel scale, mask (True = fitted) and sub-pixel oversampling.

    Pixels outside the mask are never fitted, but those within the PSF's reach of a masked-in
    pixel (the *blurring* pixels) are modelled, because their light blurs into the mask.
    """

    data: Any = static_field()
    noise_map: Any = static_field()
    psf: PSF = static_field()
    grid: Grid2D = static_field()

    def __post_init__(self) -> None:
        for name in ("data", "noise_map"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        super().__post_init__()
        if not isinstance(self.psf, PSF):
            raise TypeError(f"Imaging.psf must be a PSF, got {type(self.psf).__name__}")
        if not isinstance(self.grid, Grid2D):
            raise TypeError(f"Imaging.grid must be a Grid2D, got {type(self.grid).__name__}")
        for name in ("data", "noise_map"):
            shape = getattr(self, name).shape
            if shape != self.grid.shape:
                raise ValueError(
                    f"Imaging.{name} has shape {shape} but the grid is {self.grid.shape}"
                )
        used = self.grid.used
        if not np.all(np.isfinite(self.data[used])):
            raise ValueError("Imaging.data must be finite inside the mask (mask bad pixels out)")
        sigma = self.noise_map[used]
        if not np.all(np.isfinite(sigma) & (sigma > 0)):
            raise ValueError(
                "Imaging.noise_map must be finite and > 0 inside the mask, got a minimum of "
                f"{np.nanmin(sigma)!r}"
            )

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_fits(
        cls,
        data_path: str,
        noise_map_path: str,
        psf_path: str,
        pixel_scale: float | None = None,
        *,
        hdu: int | str = 0,
        sub_size: int = 1,
        mask_radius: float | None = None,
    ) -> Imaging:
        """Read data, noise map and PSF from FITS files (the PSF is normalised).

        ``pixel_scale`` (arcsec) is taken from the data's header when not given; if both are
        present they must agree. ``mask_radius`` (arcsec) applies a circular mask about the
        image centre.
        """
        data, header_scale = fits_io.read_image(data_path, hdu)
        noise_map, _ = fits_io.read_image(noise_map_path, hdu)
        kernel, _ = fits_io.read_image(psf_path, hdu)
        if pixel_scale is None:
            if header_scale is None:
                raise ValueError(
                    f"{data_path} gives no pixel scale in its header; pass pixel_scale (arcsec)"
                )
            pixel_scale = header_scale
        elif header_scale is not None and not math.isclose(pixel_scale, header_scale, rel_tol=1e-6):
            raise ValueError(
                f"pixel_scale={pixel_scale} disagrees with {data_path}'s header ({header_scale})"
            )
        grid = Grid2D.uniform(data.shape, pixel_scale, sub_size)
        if mask_radius is not None:
            grid = grid.circular_mask(mask_radius)
        return cls(data, noise_map, PSF(kernel), grid)

    def to_fits(self, directory: str, overwrite: bool = False) -> dict[str, str]:
        """Write ``data.fits``, ``noise_map.fits`` and ``psf.fits`` into ``directory`` (the
        pixel scale in each header); returns the paths."""
        from pathlib import Path

        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {}
        for name, array in (
            ("data", self.data),
            ("noise_map", self.noise_map),
            ("psf", self.psf.kernel),
        ):
            path = folder / f"{name}.fits"
            fits_io.write_image(path, array, self.grid.pixel_scale, overwrite=overwrite)
            paths[name] = str(path)
        return paths

    def with_grid(self, grid: Grid2D) -> Imaging:
        """The same data on another grid of the same shape (a new mask or oversampling)."""
        return replace(self, grid=grid)

    # -- what the likelihood needs, computed once per dataset --------------------------------

    @cached_property
    def blurring_pixels(self) -> np.ndarray:
        """Boolean ``(ny, nx)``: outside the mask but within the PSF's reach of it."""
        used = self.grid.used
        ky, kx = self.psf.kernel.shape
        reach = _dilate(used, ky // 2, kx // 2)
        return reach & ~used

    @cached_property
    def layout(self) -> SubPixelLayout:
        """Sub-pixels of every modelled pixel (the mask and its blurring pixels)."""
        return self.grid.layout(self.grid.used | self.blurring_pixels)

    @cached_property
    def mask_index(self) -> np.ndarray:
        """Flat indices of the fitted pixels."""
        return np.flatnonzero(self.grid.used.reshape(-1))

    @cached_property
    def noise_normalization(self) -> float:
        """``sum(log(2 pi sigma^2))`` over the fitted pixels."""
        sigma = self.noise_map.reshape(-1)[self.mask_index]
        return float(np.sum(np.log(2.0 * math.pi * sigma**2)))


def _dilate(mask: np.ndarray, ry: int, rx: int) -> np.ndarray:
    """Pixels within a ``(2 ry + 1) x (2 rx + 1)`` box of a True pixel."""
    ny, nx = mask.shape
    padded = np.pad(mask, ((ry, ry), (rx, rx)))
    out = np.zeros_like(mask)
    for a in range(2 * ry + 1):
        for b in range(2 * rx + 1):
            out |= padded[a : a + ny, b : b + nx]
    return out


def simulate(
    tracer: Any,
    grid: Grid2D,
    psf: PSF,
    *,
    exposure_time: float | None = None,
    background_sky: float = 0.0,
    background_rms: float = 0.0,
    noise_sigma: float | None = None,
    seed: int | None = 0,
    backend: str | None = None,
) -> Imaging:
    """Simulate an :class:`Imaging` of ``tracer`` (whose light profiles must be parametric).

    The image is computed on the grid's sub-pixels over the whole image, averaged to pixels and
    convolved with ``psf``. Noise is either Poisson plus background (``exposure_time``
    seconds, ``background_sky`` and ``background_rms`` in the image's units per second; see
    :func:`twinlens.imaging.noise.add_noise`) or Gaussian of standard deviation ``noise_sigma``;
    ``seed`` makes it reproducible. The returned dataset uses ``grid`` (its mask included).
    """
    if tracer.n_linear:
        raise ValueError(
            "simulate needs intensities: replace linear light profiles with parametric ones "
            "(e.g. tracer.with_intensities(...))"
        )
    if (exposure_time is None) == (noise_sigma is None):
        raise ValueError("simulate: give exactly one of exposure_time (Poisson) or noise_sigma")
    full = replace(grid, mask=None)
    layout = full.layout()
    values = np.asarray(tracer.image(layout.points, backend=backend))
    image = np.zeros(grid.n_pixels)
    image[layout.pixels] = bin_to_pixels(values, layout)
    image = convolve(image.reshape(grid.shape), psf)
    if noise_sigma is not None:
        data, noise_map = noise.gaussian_noise(image, noise_sigma, seed)
    else:
        assert exposure_time is not None  # exactly one of the two, checked above
        # FFT convolution leaves rounding-level negatives (~1e-17 of the peak) where the image
        # is dark; a Poisson mean cannot be negative, so those become 0 (real negatives stay
        # and are refused by add_noise)
        rounding = (image < 0) & (image > -1e-12 * np.max(np.abs(image)))
        data, noise_map = noise.add_noise(
            np.where(rounding, 0.0, image),
            exposure_time=exposure_time,
            background_sky=background_sky,
            background_rms=background_rms,
            seed=seed,
        )
    return Imaging(data, noise_map, psf, grid)

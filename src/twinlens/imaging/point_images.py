"""Unresolved images in the imaging data: a lensed quasar's or supernova's images, each the PSF
at the image's position times a flux.

In the imaging of a lensed quasar the point images are usually the brightest thing in the data;
a model of the host and the lens light alone leaves them in the residuals. :class:`PointImages`
names their positions (arcsec, fixed: for example the measured positions a point-source
likelihood uses); the imaging likelihood then adds one column per image to the linear light
profiles' columns, and the fluxes are solved with their intensities (non-negative least
squares). Fixed positions make the columns fixed work: they are rendered once per dataset, in
numpy, and enter every backend as the same numbers (under JAX as constants of the program).
Images that move with the model (a point-source likelihood's ``imaging_positions = "model"``)
are rendered at every evaluation by the same :func:`render`, from traced positions under JAX.

**Sub-pixel placement.** A point at pixel ``(i0, j0)`` seen through the PSF is the kernel
centred there (what :func:`~twinlens.imaging.psf.convolve` makes of a one-pixel image). At a
fractional offset the kernel is shifted, by one of two rules (``shift``):

* ``"fourier"`` (default): the Fourier shift theorem (zero-padded, transformed, multiplied by the
  phase ramp of the offset, transformed back). It keeps the flux exactly (the zero frequency is
  untouched), is exact at whole-pixel offsets and, for a PSF sampled finely enough to be
  band-limited, gives the samples of the shifted PSF.
* ``"linear"``: bilinear interpolation between the kernel's samples (lenstronomy's default
  order-1 shift for point sources). Flux and centroid are kept exactly, but the image is the
  PSF blurred by the interpolation.

Against the closed form of a Gaussian PSF placed off the pixel centres, the largest error in
units of the peak, for sigma = 2, 1.5, 1 and 0.64 pixels: ``"fourier"`` 1e-9, 2e-6, 1.4e-3 and
3.7e-2 (its centroid off by 0.09 pixel at the last); ``"linear"`` 4.3e-2, 7.2e-2, 0.13 and
0.21. No rule recovers an undersampled PSF between its samples; a warning says so when the
kernel keeps more than 1e-3 of its total at the highest frequencies (sigma below about 1.5
pixels).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.backend import any_jax, array_module
from twinlens.fields import ValueIdentity, static_field
from twinlens.grids import Grid2D
from twinlens.imaging.psf import PSF
from twinlens.user_warnings import warn_user

__all__ = [
    "MIN_SEEN",
    "SHIFTS",
    "PointImages",
    "check_point_images",
    "is_seen",
    "point_image",
    "render",
]

#: the rules that place a kernel between pixel centres (module notes), the default first
SHIFTS = ("fourier", "linear")
#: the fraction of the kernel's total left at the highest frequencies above which the PSF is
#: called undersampled
_RINGING = 1e-3

#: the least fraction of a unit-flux image that must fall in the fitted pixels
MIN_SEEN = 1e-3

#: zero padding around the kernel before it is shifted (pixels per side), so that the periodic
#: shift does not wrap the kernel's edge onto the opposite side
_PAD = 2


@dataclass(frozen=True, eq=False)
class PointImages(ValueIdentity):
    """Point images at fixed positions, with fluxes solved by the imaging fit.

    Parameters
    ----------
    positions : float array (n_images, 2)
        ``(x, y)`` of each image, arcsec, in the grid's frame; at least one.
    shift : {"fourier", "linear"}
        How the PSF is placed between pixel centres (module notes). Default ``"fourier"``;
        ``"linear"`` keeps each image's centroid exactly, at the cost of its shape.
    """

    positions: Any = static_field()
    shift: str = static_field(default=SHIFTS[0])

    def __post_init__(self) -> None:
        p = np.array(self.positions, dtype=float)
        if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] < 1:
            raise ValueError(
                f"PointImages.positions must have shape (n_images, 2) with n_images >= 1, got "
                f"shape {p.shape}"
            )
        if not np.all(np.isfinite(p)):
            raise ValueError(f"PointImages.positions must be finite, got {p.tolist()}")
        p.flags.writeable = False
        object.__setattr__(self, "positions", p)
        if self.shift not in SHIFTS:
            raise ValueError(
                f"PointImages.shift must be one of {', '.join(map(repr, SHIFTS))}, got "
                f"{self.shift!r}"
            )
        super().__post_init__()

    @property
    def n_images(self) -> int:
        """The number of images (of fluxes solved)."""
        return int(self.positions.shape[0])

    def images(self, grid: Grid2D, psf: PSF) -> np.ndarray:
        """``(n_images, ny, nx)``: each image at unit flux, seen through ``psf`` on ``grid``
        (light falling outside the grid is lost, as it is from the data)."""
        _warn_if_undersampled(psf)
        return np.stack([point_image(psf, grid, x, y, self.shift) for x, y in self.positions])

    def columns(self, dataset: Any) -> np.ndarray:
        """``(n_images, n_mask)``: :meth:`images` at the dataset's masked-in pixels, computed
        once per dataset."""
        return _columns(self, dataset)


@lru_cache(maxsize=16)
def _columns(images: PointImages, dataset: Any) -> np.ndarray:
    out = render(images.positions, dataset.grid, dataset.psf, dataset.mask_index, images.shift)
    # an image none of whose light reaches the fitted pixels has no data to fix its flux: the
    # solve would return 0 for it, which reads as a measurement
    seen = out.sum(axis=1)
    for k in np.flatnonzero(~is_seen(out)):
        x, y = images.positions[k]
        raise ValueError(
            f"PointImages.positions[{k}] = ({x:g}, {y:g}) arcsec puts {seen[k]:.2g} of the "
            f"image's light in the dataset's unmasked pixels (at least {MIN_SEEN:g} is "
            "needed to measure its flux): move the position inside the mask or widen the mask"
        )
    out = np.ascontiguousarray(out)
    out.flags.writeable = False
    return out


def is_seen(columns: Any) -> Any:
    """Whether each unit-flux image of ``columns (..., n_images, n_pixels)`` puts at least
    ``MIN_SEEN`` of its light in those pixels, ``(..., n_images)``: else no pixel measures its
    flux (numpy or JAX arrays)."""
    return columns.sum(axis=-1) >= MIN_SEEN


def point_image(psf: PSF, grid: Grid2D, x: float, y: float, shift: str = "fourier") -> np.ndarray:
    """A unit-flux point at ``(x, y)`` arcsec seen through ``psf``: an ``(ny, nx)`` image on
    ``grid``'s pixels, placed between pixel centres by ``shift`` (see the module notes)."""
    every = np.arange(grid.n_pixels)
    return render(np.array([[x, y]]), grid, psf, every, shift)[0].reshape(grid.shape)


def render(positions: Any, grid: Grid2D, psf: PSF, pixels: np.ndarray, shift: str) -> Any:
    """Unit-flux points seen through ``psf`` at the flat pixel indices ``pixels`` of ``grid``:
    ``(..., n_images, n_pixels)`` from ``positions (..., n_images, 2)`` (arcsec).

    One routine for every caller: numpy arrays give numpy (fixed images, rendered once), JAX
    arrays or tracers give JAX, differentiable in the positions (images placed by the model).
    Each point is the kernel shifted by its offset from the nearest pixel centre, then read at
    the pixels it covers (a gather, so a traced position needs no dynamic slicing)."""
    if shift not in SHIFTS:
        raise ValueError(f"shift must be one of {', '.join(map(repr, SHIFTS))}, got {shift!r}")
    xp = array_module("jax" if any_jax(positions) else "numpy")
    positions = xp.asarray(positions, dtype=float)
    row, col = grid.pixel_coordinates(positions[..., 0], positions[..., 1])
    i0, j0 = xp.round(row), xp.round(col)
    shifted = _shifted_kernels(psf.kernel, row - i0, col - j0, shift, xp)  # (..., n, ky, kx)
    ky, kx = shifted.shape[-2:]
    nx = grid.shape[1]
    # each pixel's place in each shifted kernel, and whether it lies inside the kernel
    kr = (pixels // nx)[None, :] - (i0[..., None].astype(int) - ky // 2)
    kc = (pixels % nx)[None, :] - (j0[..., None].astype(int) - kx // 2)
    inside = (kr >= 0) & (kr < ky) & (kc >= 0) & (kc < kx)
    flat = xp.where(inside, kr * kx + kc, 0)
    values = xp.take_along_axis(shifted.reshape(*shifted.shape[:-2], ky * kx), flat, axis=-1)
    return xp.where(inside, values, 0.0)


def _shifted_kernels(kernel: np.ndarray, dy: Any, dx: Any, shift: str, xp: Any) -> Any:
    """``kernel`` moved by ``(dy, dx)`` pixels (each ``(...)``, ``|d| <= 1/2``), padded by
    ``_PAD`` per side: ``(..., ky + 2 _PAD, kx + 2 _PAD)``."""
    padded = xp.asarray(np.pad(kernel, _PAD))
    dy, dx = dy[..., None, None], dx[..., None, None]
    if shift == "linear":
        # each sample moves a fraction |d| of the way to its neighbour in the shift's direction
        # (the padding's zeros are what rolls round)
        def step(image: Any, d: Any, axis: int) -> Any:
            toward = xp.where(d >= 0, xp.roll(image, 1, axis), xp.roll(image, -1, axis))
            return (1.0 - xp.abs(d)) * image + xp.abs(d) * toward

        return step(step(padded, dy, -2), dx, -1)
    # odd padded sides (the kernel's are odd): no Nyquist frequency, whose shift is ambiguous
    k = np.ascontiguousarray(kernel, dtype=float)
    spectrum = xp.asarray(_spectrum(k.tobytes(), k.shape))
    fy = xp.asarray(np.fft.fftfreq(spectrum.shape[0])[:, None])
    fx = xp.asarray(np.fft.fftfreq(spectrum.shape[1])[None, :])
    ramp = xp.exp(-2j * np.pi * (fy * dy + fx * dx))
    out = xp.fft.ifft2(spectrum * ramp).real
    if xp is np:  # on a pixel centre the kernel itself, not its round trip through the FFT
        out = np.where((dy == 0.0) & (dx == 0.0), padded, out)
    return out


@lru_cache(maxsize=16)
def _spectrum(kernel: bytes, shape: tuple[int, int]) -> np.ndarray:
    """The padded kernel's transform, computed once per PSF."""
    return np.fft.fft2(np.pad(np.frombuffer(kernel).reshape(shape), _PAD))


def check_point_images(point_images: Any, tracer: Any, dataset: Any) -> PointImages | None:
    """``point_images`` if a fit of ``dataset`` can take it (None passes): a clear error for
    another type, beside a pixelised source (whose inversion does not solve for point fluxes),
    or for an image none of whose light reaches the fitted pixels."""
    if point_images is None:
        return None
    if not isinstance(point_images, PointImages):
        raise TypeError(f"point_images must be a PointImages, got {type(point_images).__name__}")
    if getattr(tracer, "pixelizations", None):
        raise ValueError(
            "point_images beside a pixelised source are not supported: the source inversion "
            "does not solve for point fluxes; fit the point images with parametric light"
        )
    if dataset is not None:
        _warn_if_undersampled(dataset.psf)  # here, not in the cached columns
        point_images.columns(dataset)  # refuses an image the fit cannot see
    return point_images


def _warn_if_undersampled(psf: PSF) -> None:
    kernel = np.ascontiguousarray(psf.kernel, dtype=float)
    if _undersampled(kernel.tobytes(), kernel.shape):
        warn_user(
            "the PSF is undersampled (its kernel keeps more than 1e-3 of its total at the "
            "highest frequencies): between pixel centres its samples do not fix its shape, "
            "so expect residuals of up to a few per cent of each point image's peak",
            RuntimeWarning,
        )


@lru_cache(maxsize=16)
def _undersampled(data: bytes, shape: tuple[int, int]) -> bool:
    """Whether the kernel keeps more than ``_RINGING`` of its total at the highest frequencies
    (the outer fifth of each axis's band): too coarsely sampled to be shifted faithfully.
    Keyed by the kernel's bytes, since a fit checks its PSF each time it is built."""
    kernel = np.frombuffer(data).reshape(shape)
    spectrum = np.abs(np.fft.fft2(np.pad(kernel, _PAD)))
    fy = np.abs(np.fft.fftfreq(spectrum.shape[0]))[:, None]
    fx = np.abs(np.fft.fftfreq(spectrum.shape[1]))[None, :]
    high = (fy >= 0.4) | (fx >= 0.4)
    return bool(spectrum[high].max() > _RINGING * abs(kernel.sum()))

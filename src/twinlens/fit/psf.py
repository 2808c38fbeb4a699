"""Point-spread functions and image convolution on every backend.

Convolution is linear, "same"-sized and zero outside the image: pixel ``[i, j]`` of the result
is ``sum_ab kernel[a, b] * image[i - a + cy, j - b + cx]`` with ``(cy, cx)`` the kernel centre.
Two methods give the same numbers (to rounding): ``direct`` (a sum of shifted copies, best for
small kernels) and ``fft`` (real FFTs on a zero-padded image, best for large ones). ``auto``
picks ``direct`` for kernels of at most :data:`DIRECT_MAX_TAPS` entries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.fields import ValueIdentity, static_field

__all__ = ["PSF", "convolve"]

DIRECT_MAX_TAPS = 49  # 7 x 7: beyond this the FFT was faster on a 100 x 100 image (benchmarks/)
FWHM_PER_SIGMA = 2.0 * math.sqrt(2.0 * math.log(2.0))


@dataclass(frozen=True, eq=False)
class PSF(ValueIdentity):
    """A pixelised point-spread function at the data's pixel scale.

    Parameters
    ----------
    kernel : float array (ky, kx)
        Odd side lengths, centred on the middle pixel, finite, positive sum. It is normalised
        to unit sum unless ``normalize=False`` (then the sum must already be 1 to 1e-10).
    method : {"auto", "direct", "fft"}
        How images are convolved (same result; a speed choice).
    """

    kernel: Any = static_field()
    method: str = static_field(default="auto")
    normalize: bool = static_field(default=True)

    def __post_init__(self) -> None:
        k = np.asarray(self.kernel, dtype=float)
        if k.ndim != 2 or k.shape[0] % 2 == 0 or k.shape[1] % 2 == 0:
            raise ValueError(f"PSF.kernel must be 2-D with odd side lengths, got shape {k.shape}")
        if not np.all(np.isfinite(k)):
            raise ValueError("PSF.kernel must be finite")
        total = k.sum()
        if not total > 0:
            raise ValueError(f"PSF.kernel must have a positive sum, got {total!r}")
        if self.normalize:
            k = k / total
        elif abs(total - 1.0) > 1e-10:
            raise ValueError(f"PSF.kernel must sum to 1 when normalize=False, got {total!r}")
        object.__setattr__(self, "kernel", k)
        if self.method not in ("auto", "direct", "fft"):
            raise ValueError(f"PSF.method must be 'auto', 'direct' or 'fft', got {self.method!r}")
        super().__post_init__()

    @classmethod
    def gaussian(
        cls, fwhm: float, pixel_scale: float, shape: int | tuple[int, int] = 21, **kwargs: Any
    ) -> PSF:
        """A round Gaussian of full width at half maximum ``fwhm`` (arcsec), sampled at pixel
        centres and normalised; ``shape`` odd (pixels per side)."""
        if not (fwhm > 0 and pixel_scale > 0):
            raise ValueError(
                f"PSF.gaussian: fwhm and pixel_scale must be > 0 arcsec, got {fwhm!r}, "
                f"{pixel_scale!r}"
            )
        ky, kx = (shape, shape) if isinstance(shape, int) else shape
        sigma = fwhm / FWHM_PER_SIGMA
        y = (np.arange(ky) - (ky - 1) / 2) * pixel_scale
        x = (np.arange(kx) - (kx - 1) / 2) * pixel_scale
        k = np.exp(-(y[:, None] ** 2 + x[None, :] ** 2) / (2 * sigma**2))
        return cls(k, **kwargs)

    @property
    def resolved_method(self) -> str:
        """The convolution used: ``method``, or for ``"auto"`` direct for small kernels and
        FFT otherwise."""
        if self.method != "auto":
            return self.method
        return "direct" if self.kernel.size <= DIRECT_MAX_TAPS else "fft"

    def convolve(self, image: Any, xp: Any = np) -> Any:
        """Convolve ``image (..., ny, nx)`` (leading axes are a batch)."""
        return convolve(image, self, xp)


def convolve(image: Any, psf: PSF, xp: Any = np) -> Any:
    """``image (..., ny, nx)`` convolved with ``psf``; ``xp`` is ``numpy`` or ``jax.numpy``."""
    if psf.resolved_method == "direct":
        return _direct(image, psf.kernel, xp)
    return _fft(image, psf, xp)


def _direct(image: Any, kernel: np.ndarray, xp: Any) -> Any:
    ky, kx = kernel.shape
    ny, nx = image.shape[-2:]
    cy, cx = ky // 2, kx // 2
    pad = [(0, 0)] * (image.ndim - 2) + [(cy, cy), (cx, cx)]
    padded = xp.pad(image, pad)
    flipped = kernel[::-1, ::-1]
    out = None
    for a in range(ky):
        for b in range(kx):
            w = float(flipped[a, b])
            if w == 0.0:
                continue
            term = w * padded[..., a : a + ny, b : b + nx]
            out = term if out is None else out + term
    return out


@lru_cache(maxsize=32)
def _fft_plan(psf: PSF, ny: int, nx: int) -> tuple[tuple[int, int], np.ndarray]:
    """Padded FFT size and the kernel's real FFT for an image of ``(ny, nx)``; computed once per
    PSF and image shape (a constant for every backend)."""
    from scipy import fft as sfft

    ky, kx = psf.kernel.shape
    size = (sfft.next_fast_len(ny + ky - 1, real=True), sfft.next_fast_len(nx + kx - 1, real=True))
    return size, np.fft.rfft2(psf.kernel, s=size)


def _fft(image: Any, psf: PSF, xp: Any) -> Any:
    ny, nx = image.shape[-2:]
    ky, kx = psf.kernel.shape
    size, kernel_ft = _fft_plan(psf, ny, nx)
    if xp is np:
        from scipy import fft as sfft

        # threads pay off across a batch of images, not within one small image
        workers = -1 if image.ndim > 2 and image.size > ny * nx else 1
        full = sfft.irfft2(
            sfft.rfft2(image, s=size, workers=workers) * kernel_ft, s=size, workers=workers
        )
    else:
        full = xp.fft.irfft2(xp.fft.rfft2(image, s=size) * kernel_ft, s=size)
    cy, cx = ky // 2, kx // 2
    return full[..., cy : cy + ny, cx : cx + nx]

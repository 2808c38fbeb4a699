"""Point-spread functions and image convolution on every backend.

Convolution is linear, "same"-sized and zero outside the image: pixel ``[i, j]`` of the result
is ``sum_ab kernel[a, b] * image[i - a + cy, j - b + cx]`` with ``(cy, cx)`` the kernel centre.
Three methods give the same numbers (to rounding): ``direct`` (a sum of shifted copies, best for
small kernels), ``fft`` (real FFTs on a zero-padded image, best for large ones) and
``separable`` (for a kernel that is the outer product of a column and a row, as a round
Gaussian's is: two one-dimensional passes, ``ky + kx`` taps per pixel instead of ``ky kx``).
``auto`` picks ``separable`` for a separable kernel of at most :data:`SEPARABLE_MAX_TAPS` taps
in its two passes together, else ``direct`` for kernels of at most :data:`DIRECT_MAX_TAPS`
entries, else ``fft``.

A kernel counts as separable when its second singular value is at most
:data:`SEPARABLE_RTOL` of its first: the rank-one factors then reproduce it to rounding (a
sampled round Gaussian's ratio is about 1e-17).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.fields import ValueIdentity, static_field
from twinlens.messages import shown

__all__ = ["PSF", "convolve", "separable_factors"]

DIRECT_MAX_TAPS = 49  # 7 x 7: beyond this the FFT was faster on a 100 x 100 image (benchmarks/)
#: the passes' taps (``ky + kx``) up to which ``auto`` prefers the separable form: at 21 x 21 on
#: 100 x 100 images it beat the FFT on numpy and JAX; at 41 x 41 the FFT was faster on numpy
SEPARABLE_MAX_TAPS = 48
#: the longest image axis that JAX convolves in the separable form, each pass a product with
#: a Toeplitz matrix, whose cost grows with the axis (at 256 x 256 it was slower than the FFT;
#: beyond this, JAX uses the FFT)
SEPARABLE_DOT_MAX = 160
#: the largest second-to-first singular value ratio of a kernel called separable
SEPARABLE_RTOL = 1e-15
METHODS = ("auto", "direct", "fft", "separable")
FWHM_PER_SIGMA = 2.0 * math.sqrt(2.0 * math.log(2.0))


@dataclass(frozen=True, eq=False)
class PSF(ValueIdentity):
    """A pixelised point-spread function at the data's pixel scale.

    Parameters
    ----------
    kernel : float array (ky, kx)
        Odd side lengths, centred on the middle pixel, finite, positive sum. It is normalised
        to unit sum unless ``normalize=False`` (then the sum must already be 1 to 1e-10).
    method : {"auto", "direct", "fft", "separable"}
        How images are convolved (same result; a speed choice; ``separable`` only for a
        kernel that is an outer product, see the module notes).
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
            raise ValueError(f"PSF.kernel must have a positive sum, got {shown(total)}")
        if self.normalize:
            k = k / total
        elif abs(total - 1.0) > 1e-10:
            raise ValueError(f"PSF.kernel must sum to 1 when normalize=False, got {shown(total)}")
        object.__setattr__(self, "kernel", k)
        if self.method not in METHODS:
            raise ValueError(
                f"PSF.method must be one of {', '.join(map(repr, METHODS))}, got {self.method!r}"
            )
        super().__post_init__()
        if self.method == "separable" and separable_factors(self) is None:
            raise ValueError(
                "PSF.method = 'separable' needs a kernel that is an outer product (second "
                f"singular value at most {SEPARABLE_RTOL:g} of the first, got "
                f"{_singular_ratio(self.kernel):.3g}); use 'fft' or 'direct'"
            )

    @classmethod
    def gaussian(
        cls, fwhm: float, pixel_scale: float, shape: int | tuple[int, int] = 21, **kwargs: Any
    ) -> PSF:
        """A round Gaussian of full width at half maximum ``fwhm`` (arcsec), sampled at pixel
        centres and normalised; ``shape`` odd (pixels per side)."""
        if not (fwhm > 0 and pixel_scale > 0):
            raise ValueError(
                f"PSF.gaussian: fwhm and pixel_scale must be > 0 arcsec, got {shown(fwhm)}, "
                f"{shown(pixel_scale)}"
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
        if sum(self.kernel.shape) <= SEPARABLE_MAX_TAPS and separable_factors(self) is not None:
            return "separable"
        return "direct" if self.kernel.size <= DIRECT_MAX_TAPS else "fft"

    def convolve(self, image: Any, xp: Any = np) -> Any:
        """Convolve ``image (..., ny, nx)`` (leading axes are a batch)."""
        return convolve(image, self, xp)


def convolve(image: Any, psf: PSF, xp: Any = np) -> Any:
    """``image (..., ny, nx)`` convolved with ``psf``; ``xp`` is ``numpy`` or ``jax.numpy``."""
    method = psf.resolved_method
    if method == "direct":
        return _direct(image, psf.kernel, xp)
    if method == "separable":
        return _separable(image, psf, xp)
    return _fft(image, psf, xp)


@lru_cache(maxsize=32)
def separable_factors(psf: PSF) -> tuple[np.ndarray, np.ndarray] | None:
    """``(column, row)`` with ``kernel = outer(column, row)`` to rounding, or None when the
    kernel is not separable (module notes); computed once per PSF."""
    u, s, vt = np.linalg.svd(psf.kernel)
    if len(s) > 1 and s[1] > SEPARABLE_RTOL * s[0]:
        return None
    scale = math.sqrt(s[0])
    column, row = u[:, 0] * scale, vt[0] * scale
    if column.sum() < 0:  # the sign is the SVD's choice: keep both factors' sums positive
        column, row = -column, -row
    return column, row


def _singular_ratio(kernel: np.ndarray) -> float:
    s = np.linalg.svd(kernel, compute_uv=False)
    return float(s[1] / s[0]) if len(s) > 1 else 0.0


def _separable(image: Any, psf: PSF, xp: Any) -> Any:
    factors = separable_factors(psf)
    assert factors is not None  # PSF refuses method="separable" otherwise
    column, row = factors
    if xp is np:
        from scipy import ndimage

        out = ndimage.convolve1d(np.asarray(image, dtype=float), column, axis=-2, mode="constant")
        return ndimage.convolve1d(out, row, axis=-1, mode="constant")
    ny, nx = image.shape[-2:]
    if max(ny, nx) > SEPARABLE_DOT_MAX:
        return _fft(image, psf, xp)
    # JAX: each pass a product with the pass's banded Toeplitz matrix. As a sum of shifted
    # slices (faster alone) XLA fuses a pass into whatever reads it, and a gather of the
    # masked-in pixels that read it computed the pass again for every element
    out = xp.matmul(_toeplitz(psf, ny, 0), image)
    return xp.matmul(out, _toeplitz(psf, nx, 1).T)


@lru_cache(maxsize=32)
def _toeplitz(psf: PSF, n: int, which: int) -> np.ndarray:
    """``(n, n)``: the matrix that convolves a length-``n`` axis with the kernel's column
    (``which = 0``) or row (``1``) factor, zero outside: ``T[i, j] = taps[i - j + c]``."""
    factors = separable_factors(psf)
    assert factors is not None
    taps = factors[which]
    c = len(taps) // 2
    offset = np.arange(n)[:, None] - np.arange(n)[None, :] + c
    inside = (offset >= 0) & (offset < len(taps))
    return np.where(inside, taps[np.clip(offset, 0, len(taps) - 1)], 0.0)


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

"""Noise for simulated images: Poisson photon noise plus Gaussian background, or plain Gaussian.

Both functions return the noisy image and the noise map (per-pixel standard deviation) that a
likelihood uses. Random numbers come from ``np.random.default_rng(seed)``, so a given seed
always gives the same image.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from twinlens.messages import shown

__all__ = ["add_noise", "gaussian_noise"]

Seed = int | np.random.SeedSequence | np.random.Generator | None


def add_noise(
    image: np.ndarray,
    *,
    exposure_time: float,
    background_sky: float = 0.0,
    background_rms: float = 0.0,
    seed: Seed,
) -> tuple[np.ndarray, np.ndarray]:
    """Add Poisson photon noise and Gaussian background noise to a noiseless image.

    The expected counts in a pixel are ``(image + background_sky) * exposure_time``; a Poisson
    draw of them is divided by ``exposure_time`` and the sky is subtracted again, so the data
    are sky-subtracted like a reduced image. Gaussian noise of standard deviation
    ``background_rms`` (read noise, or any background not modelled as sky) is then added.

    Parameters
    ----------
    image : array_like of float, any shape (usually (ny, nx))
        Noiseless image in electrons per second per pixel. Must be finite, and
        ``image + background_sky >= 0`` everywhere (a Poisson mean cannot be negative).
    exposure_time : float
        Exposure time in seconds, finite and > 0.
    background_sky : float, default 0
        Sky level in e-/s per pixel, finite and >= 0. Adds Poisson noise; subtracted again.
    background_rms : float, default 0
        Standard deviation of the added Gaussian noise in e-/s per pixel, finite and >= 0.
    seed : int, SeedSequence, Generator or None
        Passed to ``np.random.default_rng``. An int gives the same output on every call; a
        Generator is used (and advanced) as is; None draws fresh entropy (not reproducible).
        The Poisson draw comes first, then the Gaussian one, for every value of
        ``background_rms`` (also 0), so the Poisson realisation does not depend on it.

    Returns
    -------
    data : ndarray of float64, same shape as ``image``
        Noisy, sky-subtracted image in e-/s per pixel.
    noise_map : ndarray of float64, same shape as ``image``
        ``sqrt((image + background_sky) / exposure_time + background_rms**2)`` in e-/s, the
        standard deviation of ``data - image``, computed from the noiseless image (the
        expected noise, not an estimate from the noisy data). It is 0 where
        ``image + background_sky == 0`` and ``background_rms == 0``; mask such pixels before
        dividing by it.

    Raises
    ------
    ValueError
        If a parameter is outside its range; the message names it.
    """
    exposure_time = _scalar("exposure_time", exposure_time, "s", positive=True)
    background_sky = _scalar("background_sky", background_sky, "e-/s per pixel")
    background_rms = _scalar("background_rms", background_rms, "e-/s per pixel")
    image = _finite_image(image)
    mean_rate = image + background_sky
    if mean_rate.size and mean_rate.min() < 0:
        raise ValueError(
            "image + background_sky must be >= 0 everywhere (a Poisson mean cannot be "
            f"negative); image has minimum {image.min()!r} e-/s with "
            f"background_sky = {background_sky!r}"
        )
    rng = np.random.default_rng(seed)
    counts = rng.poisson(mean_rate * exposure_time)
    data = counts / exposure_time - background_sky
    data += rng.normal(0.0, background_rms, size=image.shape)
    noise_map = np.sqrt(mean_rate / exposure_time + background_rms**2)
    return data, noise_map


def gaussian_noise(
    image: np.ndarray, noise_sigma: float, seed: Seed
) -> tuple[np.ndarray, np.ndarray]:
    """Add Gaussian noise of constant standard deviation to an image.

    Parameters
    ----------
    image : array_like of float, any shape (usually (ny, nx))
        Noiseless image, finite, in any flux unit (e-/s per pixel elsewhere in twinlens).
    noise_sigma : float
        Standard deviation of the noise in the unit of ``image``, finite and > 0.
    seed : int, SeedSequence, Generator or None
        Passed to ``np.random.default_rng``; see :func:`add_noise`.

    Returns
    -------
    data : ndarray of float64, same shape as ``image``
        ``image`` plus the noise.
    noise_map : ndarray of float64, same shape as ``image``
        ``noise_sigma`` in every pixel.

    Raises
    ------
    ValueError
        If ``noise_sigma`` is not finite and > 0, or ``image`` is not finite.
    """
    noise_sigma = _scalar("noise_sigma", noise_sigma, "image units", positive=True)
    image = _finite_image(image)
    rng = np.random.default_rng(seed)
    data = image + rng.normal(0.0, noise_sigma, size=image.shape)
    return data, np.full(image.shape, noise_sigma)


def _scalar(name: str, value: Any, unit: str, *, positive: bool = False) -> float:
    """``value`` as a float, checked to be a real number, finite and > 0 (``positive``) or >= 0."""
    allowed = "finite and > 0" if positive else "finite and >= 0"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    # No strings (float("10") would pass) and no bools (float(True) would pass).
    if not isinstance(value, numbers.Real) or isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a real number ({unit}), {allowed}; got {shown(value)}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise ValueError(f"{name} must be {allowed} ({unit}); got {shown(value)}")
    return number


def _finite_image(image: Any) -> np.ndarray:
    array = np.asarray(image, dtype=np.float64)
    bad = ~np.isfinite(array)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"image must be finite everywhere; it has {int(bad.sum())} non-finite "
            f"value(s), the first at index {first}: {array[first]!r}"
        )
    return array

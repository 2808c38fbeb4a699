"""Fermat potential, arrival times and time delays of the images of a point source.

An image at ``theta`` of a source at ``beta`` has the Fermat potential

    ``phi(theta) = |theta - beta|^2 / 2 - psi(theta)``   (arcsec^2),

``psi`` the lens galaxies' summed lensing potential; its light arrives at
``t = D_dt / c * phi`` (:func:`twinlens.cosmology.time_delay_days`), of which only differences
between images are observable. Images are the stationary points of ``phi``
(:mod:`twinlens.lensing.lens_equation` finds them).

:func:`arrival_times` and :func:`time_delays` also take a
:class:`~twinlens.lensing.multiplane.MultiPlaneTracer`, whose delays follow from its cosmology's
distances plane by plane (:meth:`~twinlens.lensing.multiplane.MultiPlaneTracer.arrival_times`):
give no ``time_delay_distance`` then. A multi-plane lens has no single Fermat potential, so
:func:`fermat_potential` takes single-plane tracers only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twinlens.backend import array_module, resolve_backend
from twinlens.cosmology import time_delay_days
from twinlens.lensing.multiplane import MultiPlaneTracer
from twinlens.lensing.tracer import Tracer
from twinlens.profiles.base import _numbers, positions

__all__ = ["arrival_times", "fermat_potential", "time_delays"]


def fermat_potential(tracer: Tracer, xy: Any, source: Any, backend: str | None = None) -> Any:
    """Fermat potential ``|theta - beta|^2 / 2 - psi(theta)``, arcsec^2 (single-plane
    tracers; a multi-plane lens has :func:`arrival_times` only).

    Parameters
    ----------
    tracer : Tracer
        The lens (its lens galaxies' potential).
    xy : array, (..., 2)
        Image-plane positions ``theta``, arcsec.
    source : array, (2,), or (..., 2) with one source per batch member of ``xy (..., n, 2)``
        Source position ``beta``, arcsec.
    backend : str, optional
        ``"numba"``, ``"jax"`` or ``"numpy"``.

    Returns
    -------
    array, (...)
        arcsec^2.
    """
    b = resolve_backend(backend, xy, source, *_numbers(tracer))
    x, y, xp = positions(xy, b)
    beta = xp.asarray(source)
    if beta.ndim < 1 or beta.shape[-1] != 2:
        raise ValueError(f"source must have shape (..., 2) holding (x, y), got {beta.shape}")
    if beta.ndim == np.ndim(xy) - 1 and beta.ndim > 1:
        beta = beta[..., None, :]  # one source per batch member, for its images (..., n, 2)
    dx = x - beta[..., 0]
    dy = y - beta[..., 1]
    return 0.5 * (dx * dx + dy * dy) - tracer.potential(xy, b)


def arrival_times(
    tracer: Tracer,
    xy: Any,
    source: Any,
    time_delay_distance: Any = None,
    backend: str | None = None,
) -> Any:
    """Arrival times ``D_dt / c * phi(theta)``, days, up to a constant common to all images.

    Parameters
    ----------
    tracer, xy, source, backend
        As for :func:`fermat_potential`; or a
        :class:`~twinlens.lensing.multiplane.MultiPlaneTracer`, for which ``source`` may be None
        (each ray's own source-plane position).
    time_delay_distance : float
        ``D_dt``, Mpc (:func:`twinlens.cosmology.time_delay_distance`; may be a JAX tracer).
        Required for a single-plane tracer; not given for a multi-plane one, whose distances
        come from its cosmology.

    Returns
    -------
    array, (...)
        Days.
    """
    if isinstance(tracer, MultiPlaneTracer):
        if time_delay_distance is not None:
            raise TypeError(
                "time_delay_distance is not used with a MultiPlaneTracer: its delays follow "
                "from the cosmology's distances plane by plane (leave it unset)"
            )
        return tracer.arrival_times(xy, source, backend)
    if time_delay_distance is None:
        raise TypeError(
            "arrival_times needs time_delay_distance (D_dt, Mpc) for a single-plane Tracer"
        )
    return time_delay_days(fermat_potential(tracer, xy, source, backend), time_delay_distance)


def time_delays(
    tracer: Tracer,
    xy: Any,
    source: Any,
    time_delay_distance: Any = None,
    backend: str | None = None,
) -> Any:
    """Time delays of images ``xy (..., n, 2)`` relative to the first, ``t_i - t_0``, days
    (``(..., n)``; positive for an image that arrives after the first).

    Arguments as :func:`arrival_times`.
    """
    t = arrival_times(tracer, xy, source, time_delay_distance, backend)
    xp = array_module(resolve_backend(backend, t))
    t = xp.asarray(t)
    return t - t[..., :1]

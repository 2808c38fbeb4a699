"""Summaries of one-dimensional posterior samples: medians, percentiles, means, intervals.

Samples are equally weighted draws (as a sampler's resampled posterior) unless ``weights`` are
given (as a nested sampler's importance weights, in any normalisation).

Percentiles
-----------
Without weights, :func:`percentile` is numpy's default (linear interpolation between order
statistics) and :func:`median` is :func:`numpy.median`. With weights, the ``p``-th percentile
is the smallest sample whose cumulative weight reaches ``p`` percent of the total (numpy's
``method="inverted_cdf"``, generalised to weights): a weight of ``k`` counts exactly as ``k``
copies of the sample, so integer weights give the percentiles of the repeated samples, and
rescaling the weights changes nothing. With equal weights this differs from the unweighted
(interpolated) value by at most the gap between neighbouring samples.

Angles
------
An axis orientation (as COOLEST's ``phi``, degrees) is defined modulo 180 degrees
(``period``). :func:`summarise` with ``angle=True`` unwraps the samples about their circular
mean first, so a posterior straddling the fold stays one piece, summarises them, and shifts
the median into ``(-period / 2, period / 2]`` (:func:`fold_angle`) with the percentiles and
mean moved by the same multiple of the period (so these may lie just outside that range).

Example::

    >>> import numpy as np
    >>> from twinlens import posterior_stats
    >>> posterior_stats.percentile(np.array([1.0, 2.0, 3.0]), 50.0, weights=[1, 1, 2])
    2.0
    >>> s = posterior_stats.summarise(np.array([89.0, -89.0, 88.0]), angle=True)
    >>> float(round(s.median, 9))
    89.0
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from twinlens.messages import shown

__all__ = [
    "Summary",
    "central_interval",
    "circular_mean",
    "fold_angle",
    "mean",
    "median",
    "percentile",
    "summarise",
    "unwrap_angle",
]


class Summary(NamedTuple):
    """Summary statistics of one parameter's posterior samples."""

    median: float
    lower: float  #: the lower percentile (16th by default)
    upper: float  #: the upper percentile (84th by default)
    mean: float


# -- checks ----------------------------------------------------------------------------------


def _samples(values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"samples must be a non-empty 1-D array, got shape {v.shape}")
    return v


def _weights(weights: Any, n: int) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"weights must have the samples' shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and >= 0")
    if not np.sum(w) > 0:
        raise ValueError("weights must not all be 0")
    return w


# -- statistics ------------------------------------------------------------------------------


def percentile(values: Any, q: Any, weights: Any = None) -> Any:
    """The ``q``-th percentile(s) of posterior samples.

    Parameters
    ----------
    values : array_like, shape (n,)
        The samples.
    q : float or array_like
        Percentile(s) in ``[0, 100]``.
    weights : array_like, shape (n,), optional
        Non-negative weights in any normalisation (not all 0). Without them, numpy's default
        linear interpolation; with them, the smallest sample whose cumulative weight reaches
        ``q`` percent of the total (see the module docstring).

    Returns
    -------
    float or numpy.ndarray
        A float for a scalar ``q``, else an array of ``q``'s shape.

    Raises
    ------
    ValueError
        For empty or non-1-D samples, ``q`` outside ``[0, 100]``, or bad weights.
    """
    v = _samples(values)
    qs = np.asarray(q, dtype=float)
    if not np.all((qs >= 0.0) & (qs <= 100.0)):
        raise ValueError(f"percentiles must be in [0, 100], got {shown(q)}")
    if weights is None:
        out = np.percentile(v, qs)
    else:
        w = _weights(weights, v.size)
        keep = w > 0  # a sample of weight 0 is never a percentile
        v, w = v[keep], w[keep]
        order = np.argsort(v, kind="stable")
        cumulative = np.cumsum(w[order])
        target = qs / 100.0 * cumulative[-1]
        index = np.searchsorted(cumulative, target, side="left")
        out = v[order][np.minimum(index, v.size - 1)]
    return float(out) if np.ndim(out) == 0 else out


def median(values: Any, weights: Any = None) -> float:
    """The posterior median: :func:`numpy.median`, or the weighted 50th :func:`percentile`.

    Parameters
    ----------
    values : array_like, shape (n,)
        The samples.
    weights : array_like, shape (n,), optional
        Non-negative weights (see :func:`percentile`).

    Returns
    -------
    float
        The median.
    """
    if weights is None:
        return float(np.median(_samples(values)))
    return float(percentile(values, 50.0, weights))


def mean(values: Any, weights: Any = None) -> float:
    """The posterior mean, weighted by ``weights`` if given.

    Parameters
    ----------
    values : array_like, shape (n,)
        The samples.
    weights : array_like, shape (n,), optional
        Non-negative weights in any normalisation (not all 0).

    Returns
    -------
    float
        ``sum(w x) / sum(w)``, or the plain mean.
    """
    v = _samples(values)
    if weights is None:
        return float(np.mean(v))
    return float(np.average(v, weights=_weights(weights, v.size)))


def central_interval(values: Any, level: float = 0.68, weights: Any = None) -> tuple[float, float]:
    """The central credible interval holding ``level`` of the posterior.

    Parameters
    ----------
    values : array_like, shape (n,)
        The samples.
    level : float
        The probability inside, in ``(0, 1)``: the interval runs from the ``50 (1 - level)``-th
        to the ``50 (1 + level)``-th percentile (0.68: about the 16th to the 84th).
    weights : array_like, shape (n,), optional
        Non-negative weights (see :func:`percentile`).

    Returns
    -------
    (float, float)
        The lower and upper ends.

    Raises
    ------
    ValueError
        For ``level`` outside ``(0, 1)``, or as :func:`percentile`.
    """
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise ValueError(f"level must be in (0, 1), got {shown(level)}")
    tail = 50.0 * (1.0 - level)
    lower, upper = percentile(values, [tail, 100.0 - tail], weights)
    return float(lower), float(upper)


# -- angles ----------------------------------------------------------------------------------


def fold_angle(degrees: Any, period: float = 180.0) -> np.ndarray:
    """Angles folded into ``(-period / 2, period / 2]`` (by default ``(-90, 90]``).

    Parameters
    ----------
    degrees : array_like
        Angles in degrees.
    period : float
        The period the angles are defined modulo (180 for an axis, 360 for a direction).

    Returns
    -------
    numpy.ndarray
        The folded angles, of the input's shape (0-d for a scalar).
    """
    half = 0.5 * period
    out = np.mod(np.asarray(degrees, dtype=float) + half, period) - half
    return np.where(out == -half, half, out)


def circular_mean(degrees: Any, weights: Any = None, period: float = 180.0) -> float:
    """The mean direction of angles defined modulo ``period`` degrees.

    Each angle is mapped to the unit circle at ``360 / period`` times itself, the unit
    vectors averaged (weighted if ``weights``), and the mean vector's angle mapped back.

    Parameters
    ----------
    degrees : array_like, shape (n,)
        The angles in degrees.
    weights : array_like, shape (n,), optional
        Non-negative weights in any normalisation (not all 0).
    period : float
        180 for axes (orientations), 360 for directions.

    Returns
    -------
    float
        The mean in ``[-period / 2, period / 2]``; undefined (returned as given by ``atan2``)
        when the mean vector vanishes.
    """
    v = _samples(degrees)
    scale = period / 360.0
    turns = np.radians(v / scale)
    if weights is None:
        s, c = float(np.mean(np.sin(turns))), float(np.mean(np.cos(turns)))
    else:
        w = _weights(weights, v.size)
        s, c = (
            float(np.average(np.sin(turns), weights=w)),
            float(np.average(np.cos(turns), weights=w)),
        )
    return scale * math.degrees(math.atan2(s, c))


def unwrap_angle(degrees: Any, reference: float, period: float = 180.0) -> np.ndarray:
    """Angles shifted by multiples of ``period`` into ``[reference - period / 2, reference +
    period / 2)``.

    Parameters
    ----------
    degrees : array_like
        Angles in degrees.
    reference : float
        The centre of the range, e.g. the :func:`circular_mean`.
    period : float
        The period the angles are defined modulo.

    Returns
    -------
    numpy.ndarray
        The unwrapped angles, each equal to its input modulo ``period``.
    """
    half = 0.5 * period
    return reference + np.mod(np.asarray(degrees, dtype=float) - reference + half, period) - half


# -- summaries -------------------------------------------------------------------------------


def summarise(
    values: Any,
    *,
    weights: Any = None,
    angle: bool = False,
    period: float = 180.0,
    percentiles: tuple[float, float] = (16.0, 84.0),
) -> Summary:
    """Median, lower and upper percentiles, and mean of posterior samples.

    Parameters
    ----------
    values : array_like, shape (n,)
        The samples.
    weights : array_like, shape (n,), optional
        Non-negative weights in any normalisation (see :func:`percentile`).
    angle : bool
        The samples are angles in degrees defined modulo ``period``: unwrapped about their
        :func:`circular_mean` before summarising, the median then folded into ``(-period / 2,
        period / 2]`` and the other statistics shifted with it (see the module docstring).
    period : float
        The angles' period, with ``angle``.
    percentiles : (float, float)
        The lower and upper percentiles reported.

    Returns
    -------
    Summary
        ``(median, lower, upper, mean)``.
    """
    v = _samples(values)
    if angle:
        v = unwrap_angle(v, circular_mean(v, weights, period), period)
    centre = median(v, weights)
    lower, upper = (float(p) for p in percentile(v, list(percentiles), weights))
    average = mean(v, weights)
    if angle:
        shift = period * round((float(fold_angle(centre, period)) - centre) / period)
        centre, lower, upper, average = (x + shift for x in (centre, lower, upper, average))
    return Summary(centre, lower, upper, average)

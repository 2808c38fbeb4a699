"""Posterior statistics of our parameters (samples or summaries), as COOLEST's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from twinlens.coolest.profiles import _Param
from twinlens.lensing.tracer import Tracer
from twinlens.model.paths import get_path
from twinlens.posterior_stats import Summary, summarise
from twinlens.user_warnings import warn_user


def _coolest_statistics(summary: Summary) -> dict[str, float]:
    """COOLEST's ``PosteriorStatistics`` keywords for a 16th-84th percentile summary."""
    return {
        "median": summary.median,
        "percentile_16th": summary.lower,
        "percentile_84th": summary.upper,
        "mean": summary.mean,
    }


class _Posterior:
    """Our parameters' posterior (samples or summaries), converted parameter by parameter."""

    def __init__(self, posterior: Mapping[str, Any], tracer: Tracer) -> None:
        if not isinstance(posterior, Mapping):
            raise TypeError(
                "posterior must map parameter paths to (median, p16, p84, mean) tuples or to "
                f"samples, got {type(posterior).__name__}"
            )
        self.samples: dict[str, np.ndarray] = {}
        self.summaries: dict[str, tuple[float, float, float, float]] = {}
        self.size: int | None = None
        for key, value in posterior.items():
            target = get_path(tracer, key)  # a KeyError naming the tracer's parameters
            if isinstance(target, bool) or not isinstance(target, (int, float)):
                raise ValueError(
                    f"posterior[{key!r}]: the path names a {type(target).__name__}, not a "
                    "scalar parameter"
                )
            if isinstance(value, tuple):
                self.summaries[key] = self._summary(key, value)
            else:
                self.samples[key] = self._samples(key, value)
        self.used: set[str] = set()
        self.unconverted: list[str] = []

    @staticmethod
    def _summary(key: str, value: tuple) -> tuple[float, float, float, float]:
        if len(value) != 4:
            raise ValueError(
                f"posterior[{key!r}]: a summary is a tuple (median, p16, p84, mean), got "
                f"{len(value)} values"
            )
        median, p16, p84, mean = (float(v) for v in value)
        if not all(map(math.isfinite, (median, p16, p84, mean))) or not p16 <= median <= p84:
            raise ValueError(
                f"posterior[{key!r}]: need finite p16 <= median <= p84, got median {median}, "
                f"p16 {p16}, p84 {p84}"
            )
        return median, p16, p84, mean

    def _samples(self, key: str, value: Any) -> np.ndarray:
        arr = np.asarray(value, dtype=float)
        if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
            raise ValueError(
                f"posterior[{key!r}]: samples must be a non-empty 1-D array of finite numbers, "
                f"got shape {arr.shape}"
            )
        if self.size is None:
            self.size = arr.size
        elif arr.size != self.size:
            raise ValueError(
                f"posterior[{key!r}] has {arr.size} samples and another entry {self.size}: "
                "samples must be joint draws, one array length for every parameter"
            )
        return arr

    def stats(self, param: _Param, tracer: Tracer, where: str) -> dict[str, float] | None:
        free = [p for p in param.inputs if p in self.samples or p in self.summaries]
        if not free:
            return None
        self.used.update(free)

        def value(p: str) -> Any:
            return float(get_path(tracer, p))

        if all(p in self.samples for p in free):
            args = [self.samples[p] if p in self.samples else value(p) for p in param.inputs]
            converted = np.broadcast_to(param.fn(*args), (self.size or 1,))
            return _coolest_statistics(summarise(converted, angle=param.angle))
        if len(free) == 1 and free[0] in param.affine_in:
            (free_path,) = free

            def at(x: float) -> float:
                return float(param.fn(*[x if p == free_path else value(p) for p in param.inputs]))

            median, p16, p84, mean = (at(v) for v in self.summaries[free_path])
            lo, hi = sorted((p16, p84))
            return _coolest_statistics(Summary(median, lo, hi, mean))
        self.unconverted.append(f"{where} {param.name} (from {', '.join(free)})")
        return None

    def report(self) -> None:
        if self.unconverted:
            warn_user(
                "no posterior statistics written for "
                + "; ".join(self.unconverted)
                + ": summaries (median, p16, p84, mean) convert only to parameters that are an "
                "affine function of one of ours; give samples for these",
                UserWarning,
            )
        unused = [p for p in (*self.samples, *self.summaries) if p not in self.used]
        if unused:
            warn_user(
                f"posterior entries that no COOLEST parameter depends on (not written): {unused}",
                UserWarning,
            )

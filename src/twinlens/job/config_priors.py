"""Parameter values of a fit configuration: a number (fixed), or a table with one prior
(free), which registers the parameter's prior under its model path."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.job.config_errors import ConfigError, _is_number, _show, _suggest
from twinlens.model import (
    GaussianPrior,
    LogUniformPrior,
    Prior,
    SampledPrior,
    TruncatedGaussianPrior,
    UniformPrior,
)

__all__ = ["prior_from_table"]

_PRIORS = {
    "uniform": (UniformPrior, 2),
    "log_uniform": (LogUniformPrior, 2),
    "gaussian": (GaussianPrior, 2),
    "truncated_gaussian": (TruncatedGaussianPrior, 4),
}


def prior_from_table(
    table: dict, where: str, base: Path | None = None
) -> tuple[Prior, float | None]:
    """``(prior, start)`` from a parameter table such as ``{uniform = [0, 1], start = 0.3}``;
    ``{samples = [...]}`` or ``{samples = "file.txt"}`` (read relative to ``base``) is a
    :class:`~twinlens.model.SampledPrior`."""
    if "samples" in table:
        return _sampled(table, where, base)
    kinds = [k for k in table if k in _PRIORS]
    unknown = [k for k in table if k not in _PRIORS and k != "start"]
    if len(kinds) != 1 or unknown:
        hint = _suggest(unknown[0], [*_PRIORS, "start"]) if unknown else ""
        raise ConfigError(
            f"{where} = {_show(table)}: a free parameter needs exactly one of "
            f"{', '.join(_PRIORS)} (and optionally start){hint}"
        )
    kind = kinds[0]
    cls, n_args = _PRIORS[kind]
    args = table[kind]
    if not isinstance(args, list) or len(args) != n_args or not all(map(_is_number, args)):
        raise ConfigError(
            f"{where}: {kind} takes a list of {n_args} numbers, got {kind} = {_show(args)}"
        )
    try:
        prior = cls(*(float(a) for a in args))
    except (TypeError, ValueError) as err:
        # the prior's class name is Python's; the TOML key is the prior's kind
        message = str(err).replace(f"{cls.__name__}.", f"{kind} ").replace(cls.__name__, kind)
        raise ConfigError(f"{where}: {kind} = {_show(args)}: {message}") from None
    start = table.get("start")
    if start is not None and not _is_number(start):
        raise ConfigError(f"{where}: start must be a number, got start = {_show(start)}")
    if start is not None and not prior.contains(float(start)):
        raise ConfigError(
            f"{where}: start = {_show(start)} lies outside the prior {kind} = {_show(args)}"
        )
    return prior, None if start is None else float(start)


def _sampled(table: dict, where: str, base: Path | None) -> tuple[Prior, float | None]:
    """A prior from samples: a list of numbers, or a text file of them (one or more per
    line), and optionally ``n_bins``."""
    unknown = [k for k in table if k not in ("samples", "n_bins", "start")]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: a samples prior takes samples and n_bins")
    raw = table["samples"]
    if isinstance(raw, str):
        path = Path(raw) if base is None or Path(raw).is_absolute() else Path(base) / raw
        try:
            values = np.loadtxt(path, dtype=float, ndmin=1).reshape(-1)
        except (OSError, ValueError) as err:
            raise ConfigError(f"{where}.samples: cannot read {path}: {err}") from None
    elif isinstance(raw, list) and all(map(_is_number, raw)):
        values = np.asarray(raw, dtype=float)
    else:
        raise ConfigError(
            f"{where}.samples = {_show(raw)}: expected a list of numbers or a file name"
        )
    bins = table.get("n_bins")
    if bins is not None and not (isinstance(bins, int) and bins >= 2):
        raise ConfigError(f"{where}.n_bins = {_show(bins)}: expected an integer >= 2")
    try:
        prior = SampledPrior.from_samples(values, bins)
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None
    start = table.get("start")
    if start is not None and not (_is_number(start) and prior.contains(float(start))):
        raise ConfigError(f"{where}: start = {_show(start)} lies outside the samples' range")
    return prior, None if start is None else float(start)


def _start(prior: Prior, start: float | None) -> float:
    if start is not None:
        return start
    value = prior.median
    return value if math.isfinite(value) else 0.0


def _value(raw: Any, where: str, priors: dict, path: str, base: Path | None = None) -> Any:
    """A parameter value: numbers pass, prior tables register a free parameter at ``path``
    (a samples file read relative to ``base``)."""
    if isinstance(raw, dict):
        prior, start = prior_from_table(raw, where, base)
        priors[path] = prior
        return _start(prior, start)
    if isinstance(raw, list):
        if raw and all(_is_number(v) for v in raw) and len(raw) > 2:
            return np.asarray(raw, dtype=float)  # a fixed array (MGE sigmas, intensities)
        return tuple(_value(v, f"{where}[{i}]", priors, f"{path}[{i}]") for i, v in enumerate(raw))
    if not _is_number(raw):
        raise ConfigError(
            f"{where} = {_show(raw)}: expected a number, a list or a prior table such as "
            "{uniform = [0.5, 1.5]}"
        )
    return float(raw)


def _numbers(raw: Any, where: str, what: str) -> Any:
    """A number or a (nested) list of numbers, as floats; a ConfigError naming ``where``."""

    def ok(v: Any) -> bool:
        return _is_number(v) or (isinstance(v, list) and len(v) > 0 and all(map(ok, v)))

    if not ok(raw):
        raise ConfigError(f"{where} = {_show(raw)}: expected {what}")
    return np.asarray(raw, dtype=float)

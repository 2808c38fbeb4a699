"""Staged fits: a pixelised fit whose regularisation adapts to an earlier fit of the same data.

One entry in a configuration makes a fit of two stages::

    [[source.light]]
    type = "Pixelization"
    mesh = {type = "RectangularAdaptDensity", shape = [20, 20]}
    regularization = {type = "AdaptiveBrightness", coefficient = {log_uniform = [0.01, 100.0]},
                      adapt = "stage1.toml"}

``twinlens fit fit.toml`` then (:func:`resolve_stages`, called by
:func:`~twinlens.job.run_fit`):

1. fits ``stage1.toml`` into its own output folder, unless a finished fit of exactly that
   configuration is there already (its fingerprint equal: then it says so and uses it; a
   stale one is set aside and fitted afresh, as any rerun does);
2. takes that fit's maximum-likelihood model: its lensed source (the model image less the lens
   light, the *adapt image*; a parametric source or a pixelised one) and its lens;
3. at that lens, sets ``AdaptiveBrightness`` weights on this fit's mesh from the adapt image and
   tunes them by the evidence (:func:`~twinlens.inversion.adaptive_pixelization`, autolens'
   adapt stage), then fits this configuration with the weights fixed, ``lambda`` free, starting
   from stage 1's lens.

The weights are part of the model's fingerprint, so a changed stage 1 (a prior, its data)
changes them and the finished stage 2 is set aside and fitted again, saying what changed;
``result.json`` records under ``adapted_from`` which fit gave them. Why stages: a single
``lambda`` biases the lens model of a clumpy source (:doc:`/pixelised`, "Bias of pixelised
lens models and how to avoid it").
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.job.config_errors import ConfigError

__all__ = ["lensed_source_image", "resolve_stages"]


def resolve_stages(config: Any, **run: Any) -> Any:
    """``config`` (a :class:`~twinlens.job.config.FitConfig`) with its adaptive regularisation
    made from its earlier stage's fit, running that fit first where it is not done (``run``:
    :func:`~twinlens.job.run_fit`'s ``progress``, ``plot``, ``restart``, ``hard_exit``);
    ``config`` itself when it adapts to nothing."""
    from twinlens.job import freshness, run_fit
    from twinlens.job.config import load_config

    adapt = config.adapt
    if adapt is None:
        return config
    _check_chain(adapt)
    try:
        first = load_config(adapt.config)
    except ConfigError as err:  # say which stage's file it is in
        raise ConfigError(f"{adapt.config} (the stage {adapt.where}.adapt names): {err}") from None
    if first.dataset is None or config.dataset is None:
        raise ConfigError(f"{adapt.where}.adapt: both stages need an imaging [dataset]")
    if first.dataset.grid.shape != config.dataset.grid.shape:
        raise ConfigError(
            f"{adapt.where}.adapt: {adapt.config}'s data are {first.dataset.grid.shape} pixels, "
            f"this fit's {config.dataset.grid.shape}; an adapt image must be on this fit's grid"
        )
    progress = run.get("progress", True)
    folder = Path(first.output)
    changed = freshness.staleness(folder, freshness.fingerprint_of(first))
    if changed is not None and not changed:
        if progress:
            print(f"stage 1: {folder} holds the finished fit of {adapt.config}; using it")
    else:
        if progress:
            print(f"stage 1: fitting {adapt.config} (its results in {folder})", flush=True)
        run_fit(first, **run)
    record = freshness.read_result(folder)
    if record is None:  # run_fit writes it last; nothing else removes it
        raise RuntimeError(f"stage 1 left no result in {folder}")
    adapted = adapt_to(config, first, record)
    if progress:
        print(f"stage 2: {config.title}, its regularisation adapted to stage 1's fit", flush=True)
    return adapted


def _check_chain(adapt: Any) -> None:
    """Each stage's ``adapt`` leads to an earlier one, never back round (read without data)."""
    from twinlens.job.config import parse_config

    seen = [adapt.config]
    step = adapt
    while True:
        try:
            data = tomllib.loads(step.config.read_text())
        except (OSError, tomllib.TOMLDecodeError) as err:
            raise ConfigError(f"{step.where}.adapt: {step.config}: {err}") from None
        step = parse_config(data, step.config.parent, read_data=False).adapt
        if step is None:
            return
        if step.config in seen:
            chain = " -> ".join(str(p) for p in [*seen, step.config])
            raise ConfigError(f"{step.where}.adapt: the stages adapt in a circle: {chain}")
        seen.append(step.config)


def adapt_to(config: Any, first: Any, record: dict) -> Any:
    """``config`` with the stand-in regularisation at ``config.adapt`` replaced by adaptive
    weights from ``first``'s finished fit (``record``, its ``result.json``), and its search
    starting from that fit's lens."""
    from twinlens.inversion import adaptive_pixelization
    from twinlens.likelihood.imaging import FitImaging
    from twinlens.model import Model
    from twinlens.model.paths import get_path, parameter_paths, set_paths

    adapt = config.adapt
    best = _max_likelihood_vector(first, record, adapt)
    image = lensed_source_image(FitImaging(first.dataset, first.model.instance(best), "numpy"))
    model = config.model
    lens = _lens_values(record, parameter_paths(model.tracer))
    at_first = set_paths(model.tracer, lens, False)
    fit = FitImaging(config.dataset, at_first, "numba").pixelised
    if fit is None:  # adapt is only read inside a pixelization
        raise AssertionError(f"{adapt.pixelization} is not a pixelization")
    pixelization = get_path(model.tracer, adapt.pixelization)
    # coefficient 1 is the tuned regularisation: lambda's prior is a range about it
    made = adaptive_pixelization(fit.inversion, pixelization.mesh, image, unit_coefficient=True)
    tuned = made.regularization.pixel_weights
    tracer = set_paths(model.tracer, {adapt.pixelization: made}, False)
    starts = {**lens, f"{adapt.pixelization}.regularization.coefficient": 1.0}
    tracer = set_paths(tracer, _inside_priors(model, starts), False)
    adapted = Model(tracer, model.priors, model.point_source)
    provenance = {
        "config": str(adapt.config),
        "result": str(Path(first.output) / "result.json"),
        "stage_1_log_evidence": record.get("log_evidence"),
        "stage_1_max_log_likelihood": record.get("max_log_likelihood"),
        # the tuned strengths of the regularisation where the source is brightest and darkest
        "tuned_strengths": [float(tuned.min()), float(tuned.max())],
        "lens": lens,
    }
    return dataclasses.replace(config, model=adapted, adapt=None, adapted_from=provenance)


def _max_likelihood_vector(first: Any, record: dict, adapt: Any) -> np.ndarray:
    parameters = record.get("parameters", {})
    missing = [p for p in first.model.paths if p not in parameters]
    if missing:
        raise ConfigError(
            f"{adapt.where}.adapt: the result in {first.output} has no {missing[0]}: it is not "
            f"a fit of {adapt.config} as it reads now"
        )
    return np.array([float(parameters[p]["max_likelihood"]) for p in first.model.paths])


def _lens_values(record: dict, paths: list[str]) -> dict[str, float]:
    """Stage 1's maximum-likelihood value of each lens parameter this model has too."""
    best = record.get("max_likelihood_model", {})
    return {p: float(best[p]) for p in paths if p.startswith("lenses[") and p in best}


def _inside_priors(model: Any, values: dict[str, float]) -> dict[str, float]:
    """The free parameters among ``values``, each kept inside its prior (a start must be)."""
    out = {}
    for path, prior in model.priors:
        if path in values:
            lo, hi = prior.support
            value = float(np.clip(values[path], lo, hi))
            if prior.contains(value):
                out[path] = value
    return out


def lensed_source_image(fit: Any) -> np.ndarray:
    """The lensed source of a :class:`~twinlens.likelihood.imaging.FitImaging`, blurred, zero
    outside the mask: its model image less the lens light (a pixelised source's
    :func:`~twinlens.inversion.adapt_image`; a parametric source's light at the solved
    intensities)."""
    from twinlens.inversion import adapt_image
    from twinlens.lensing.blurred import blurred_terms

    if fit.pixelised is not None:
        return adapt_image(fit.pixelised.inversion)
    tracer = fit.solved_tracer
    dark = tuple(dataclasses.replace(g, light=()) for g in tracer.lenses)
    source_only = dataclasses.replace(tracer, lenses=dark)
    dataset = fit.dataset
    terms = np.asarray(blurred_terms(source_only, dataset, "numpy"))
    out = np.zeros(dataset.grid.n_pixels)
    out[dataset.mask_index] = terms[0]
    return out.reshape(dataset.grid.shape)

"""What a fit's ``summary.txt`` says, and the figure titles that name the same numbers.

One name per quantity: ``maximum log-likelihood`` is the search's best ``log L`` (for a
pixelised source, the source inversion's log evidence, said so), ``log evidence`` only the
search's evidence; a figure title prints a number under the name and with the rounding that
``summary.txt`` uses (:func:`fit_figure_title`, :func:`interval_text`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from twinlens.model import Model
from twinlens.model.labels import axis_labels

__all__ = [
    "draws_corner",
    "fit_figure_title",
    "interval_text",
    "is_point_estimate",
    "label_legend",
    "likelihood_name",
    "summary_table",
    "summary_text",
    "summary_warnings",
]

#: R-hat above this flags NUTS chains that disagree (the threshold of Vehtari et al. 2021).
R_HAT_MAX = 1.01
#: A best fit whose chi^2 lies this many standard deviations of a chi^2 distribution with one
#: degree of freedom per pixel above its mean is flagged (see :func:`summary_warnings`).
CHI2_SIGMAS = 5.0


def is_point_estimate(result: Any) -> bool:
    """Whether ``result`` is one point (the ``map`` optimiser's maximum posterior, or any
    result of a single sample) rather than posterior samples: it has no intervals."""
    return result.name == "map" or result.samples.shape[0] <= 1


def draws_corner(result: Any, n_params: int) -> bool:
    """Whether the results draw ``corner.png``: posterior samples, more of them than the
    ``n_params`` free parameters."""
    return not is_point_estimate(result) and result.samples.shape[0] > n_params


def label_legend(paths: Sequence[str]) -> list[str]:
    """The lines that name each short label of ``corner.png``
    (:func:`~twinlens.model.labels.axis_labels`, as the axes show it) beside its parameter's
    full path."""
    labels = axis_labels(paths)
    width = max(len(label) for label in labels)
    return [f"  {label:<{width}}  {path}" for label, path in zip(labels, paths, strict=True)]


def summary_warnings(
    result: Any, chi_squared: float | None = None, n_pixels: int | None = None
) -> list[str]:
    """What makes ``result`` doubtful, one sentence each (empty when nothing does).

    - emcee: the chain after burn-in is shorter than 50 autocorrelation times
      (``info["autocorrelation_reliable"]`` False);
    - nautilus: the run stopped before its stopping criterion (``info["converged"]`` False,
      as when ``n_like_max`` is reached);
    - NUTS: divergent transitions, or chains that disagree (R-hat > 1.01);
    - any search: the best fit's ``chi_squared`` over ``n_pixels`` pixels is more than 5
      standard deviations above what noise alone gives. If the model fits to the noise,
      chi^2 follows a chi^2 distribution of about ``n`` degrees of freedom (the fitted
      parameters remove a few), with mean ``n`` and standard deviation ``sqrt(2 n)``; the
      threshold is reduced chi^2 = chi^2 / n > 1 + 5 sqrt(2 / n) (1.10 for 5,000 pixels).
      Above it the model misses structure in the image, or the noise map is too small.
    """
    info = result.info or {}
    out = []
    if info.get("autocorrelation_reliable") is False:
        tau = np.asarray(info.get("autocorrelation_time", np.nan), dtype=float)
        kept = info.get("n_steps", 0) - info.get("discarded_steps", 0)
        longest = (
            f"the longest is {np.nanmax(tau):.0f} steps"
            if np.isfinite(tau).any()
            else "they could not be estimated"
        )
        out.append(
            f"the emcee chain after burn-in ({kept} steps) is shorter than 50 autocorrelation "
            f"times ({longest}): it may not have converged, and the intervals may be wrong; "
            "run more n_steps"
        )
    if info.get("converged") is False:
        out.append(
            f"{result.name} stopped before its convergence criterion was met (n_like_max "
            "reached?): the posterior and the evidence may be incomplete"
        )
    divergent = info.get("n_divergent")
    if divergent:
        out.append(
            f"{divergent} divergent NUTS transitions: the sampler may have missed parts of the "
            "posterior"
        )
    r_hat = info.get("r_hat")
    if r_hat is not None and np.nanmax(np.asarray(r_hat, dtype=float)) > R_HAT_MAX:
        out.append(
            f"the NUTS chains disagree (largest R-hat {np.nanmax(r_hat):.3f} > {R_HAT_MAX}): "
            "run longer chains"
        )
    if chi_squared is not None and n_pixels:
        reduced = float(chi_squared) / n_pixels
        limit = 1.0 + CHI2_SIGMAS * math.sqrt(2.0 / n_pixels)
        if reduced > limit:
            out.append(
                f"the best fit's chi^2 / pixels = {reduced:.3f} (chi^2 {float(chi_squared):.1f} "
                f"over {n_pixels} pixels) is above {limit:.3f}, {CHI2_SIGMAS:g} standard "
                "deviations above noise alone: the model misses structure in the image, or the "
                "noise map is too small; the intervals are then too narrow"
            )
    return out


def summary_table(model: Model | None, result: Any) -> str:
    """The free parameters as a text table: median and 68% interval (16th and 84th
    percentiles of the samples) and the maximum likelihood; for a point estimate
    (:func:`is_point_estimate`), the estimate alone. ``model`` may be None (the names are
    then ``result.paths``)."""
    paths = tuple(model.paths if model is not None else result.paths)
    width = max([len("parameter"), *(len(p) for p in paths)])
    if is_point_estimate(result):
        lines = [f"{'parameter':<{width}}  {'estimate':>12}"]
        lines += [f"{p:<{width}}  {result.max_likelihood[i]:12.5f}" for i, p in enumerate(paths)]
        return "\n".join(lines)
    med = result.medians()
    lo, hi = result.intervals(0.68)
    lines = [
        f"{'parameter':<{width}}  {'median':>12}  {'16th pct':>12}  {'84th pct':>12}  "
        f"{'max like':>12}"
    ]
    for i, path in enumerate(paths):
        lines.append(
            f"{path:<{width}}  {med[i]:12.5f}  {lo[i]:12.5f}  {hi[i]:12.5f}  "
            f"{result.max_likelihood[i]:12.5f}"
        )
    return "\n".join(lines)


def summary_text(
    result: Any,
    model: Model | None = None,
    *,
    title: str = "twinlens fit",
    backend: str | None = None,
    chi_squared: float | None = None,
    n_pixels: int | None = None,
    einstein_radius: dict | None = None,
    flags: list[str] | None = None,
    pixelised: bool = False,
) -> str:
    """The text of ``summary.txt``: warnings (:func:`summary_warnings`, unless given), what
    ran, the evidence, the best fit, the parameter table, the corner plot's short labels
    beside the parameters' paths (:func:`label_legend`) and the derived Einstein radius
    (``einstein_radius``: a dict with ``median``, ``lower_68``, ``upper_68``,
    ``n_samples``, as in ``result.json``). The best fit's ``log L`` is named by
    :func:`likelihood_name` (``pixelised``: it is the source inversion's evidence), as the
    figures name it."""
    if flags is None:
        flags = summary_warnings(result, chi_squared, n_pixels)
    point = is_point_estimate(result)
    where = f" on {backend}" if backend else ""
    lines = [f"WARNING: {w}" for w in flags]
    if flags:
        lines.append("")
    lines.append(
        f"{title}: {result.name}{where}, {result.n_samples} "
        f"{'point' if point else 'samples'}, {result.n_evaluations} likelihood evaluations"
    )
    if result.log_evidence is None:
        lines.append("log evidence: not given by this search")
    elif result.log_evidence_error is None:
        lines.append(
            f"log evidence: {result.log_evidence:.3f} (no error estimate from this search)"
        )
    else:
        lines.append(f"log evidence: {result.log_evidence:.3f} +- {result.log_evidence_error:.3f}")
    fit = (
        f" (chi^2 {float(chi_squared):.1f} over {n_pixels} pixels)"
        if chi_squared is not None and n_pixels
        else ""
    )
    lines.append(
        f"{likelihood_name(result, pixelised)}: {float(result.max_log_likelihood):.3f}{fit}"
    )
    if point:
        kind = "a maximum-posterior point estimate" if result.name == "map" else "one point"
        lines += ["", f"{kind}: no uncertainties (run nautilus, emcee or nuts for a posterior)"]
    else:
        lines += [
            "",
            "posterior median and 68% interval (16th to 84th percentile); max like: the "
            "highest-likelihood sample",
        ]
    lines += [summary_table(model, result)]
    paths = tuple(model.paths if model is not None else result.paths)
    if draws_corner(result, len(paths)):
        lines += ["", "corner.png's labels:", *label_legend(paths)]
    if einstein_radius is not None:
        theta = einstein_radius
        if point or theta.get("lower_68") is None:
            value = f"{theta['median']:.5f}"
        else:
            value = (
                f"{theta['median']:.5f}, 68% interval {theta['lower_68']:.5f} to "
                f"{theta['upper_68']:.5f} ({theta['n_samples']} samples)"
            )
        lines += ["", f"derived: effective Einstein radius (mean convergence 1 within it) {value}"]
    return "\n".join(lines) + "\n"


def likelihood_name(result: Any, pixelised: bool = False) -> str:
    """The one name of ``result.max_log_likelihood`` in summary.txt and the figures' titles:
    the figures are drawn at ``result.max_likelihood``, the best sample (or the estimate).
    With a pixelised source that likelihood is the source inversion's Bayesian evidence,
    said so, for "log evidence" alone is the search's evidence over the free parameters."""
    name = (
        "log-likelihood at the estimate" if is_point_estimate(result) else "maximum log-likelihood"
    )
    return f"{name} (the source inversion's log evidence)" if pixelised else name


def fit_figure_title(
    result: Any, model: Model, chi_squared: float, n_pixels: int, pixelised: bool = False
) -> str:
    """``fit.png``'s title: the best fit's ``log L``, chi^2 and (pixelised) a free
    regularisation coefficient, each named and rounded as summary.txt prints it."""
    title = (
        f"{likelihood_name(result, pixelised)} = {float(result.max_log_likelihood):.3f}    "
        f"chi^2 = {float(chi_squared):.1f} over {n_pixels} pixels"
    )
    for i, path in enumerate(model.paths):
        if path.endswith(".regularization.coefficient"):  # as in summary_table's max like
            title += f"\n{path} = {result.max_likelihood[i]:.5f}"  # a second line: the width
    return title


def interval_text(name: str, stats: dict, unit: str) -> str:
    """A derived quantity's median and 68% interval (``stats`` as :func:`_stats` makes it),
    as summary.txt and the figures print it."""
    if stats["lower_68"] is None:
        return f"{name} = {stats['median']:.5g} {unit}"
    return (
        f"{name} = {stats['median']:.5g} +{stats['upper_68'] - stats['median']:.3g} "
        f"-{stats['median'] - stats['lower_68']:.3g} {unit} (68%)"
    )

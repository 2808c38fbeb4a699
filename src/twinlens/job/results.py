"""Writing a fit's results to its output folder.

The folder holds, for people:

- ``summary.txt``: median and 68% interval of each free parameter, the maximum-likelihood
  value, the evidence;
- ``fit.png``, ``lens.png``, ``corner.png``: data, model, residuals and the source;
  convergence with critical curves and caustics; the posterior.

For machines:

- ``result.json``: the same numbers, the search's settings and diagnostics;
- ``samples.csv``: the equal-weight posterior samples with their log-likelihoods;
- ``model.fits``, ``residuals.fits``, ``normalized_residuals.fits``, ``source.fits``: the
  maximum-likelihood model's images (NaN outside the mask);
- ``coolest.json``: the maximum-likelihood model with posterior statistics in COOLEST, the
  lensing community's standard format, when every profile has a COOLEST equivalent.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from twinlens import __version__
from twinlens.fit import fits_io
from twinlens.fit.likelihood import FitImaging
from twinlens.job import plots
from twinlens.model import Model, get_path, parameter_paths

__all__ = ["write_results"]


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


def summary_table(model: Model, result: Any) -> str:
    """The posterior as a text table: median, 68% interval and maximum likelihood."""
    med = result.medians()
    lo, hi = result.intervals(0.68)
    width = max(len(p) for p in model.paths)
    lines = [
        f"{'parameter':<{width}}  {'median':>12}  {'-1 sigma':>10}  {'+1 sigma':>10}  "
        f"{'max like':>12}",
    ]
    for i, path in enumerate(model.paths):
        lines.append(
            f"{path:<{width}}  {med[i]:12.5f}  {med[i] - lo[i]:10.5f}  {hi[i] - med[i]:10.5f}  "
            f"{result.max_likelihood[i]:12.5f}"
        )
    return "\n".join(lines)


def einstein_radii(model: Model, samples: np.ndarray, n_max: int = 200) -> np.ndarray:
    """The effective Einstein radius (:meth:`~twinlens.fit.tracer.Tracer.einstein_radius`)
    of up to ``n_max`` evenly spaced posterior samples: in a model with several mass
    components it is the well-measured quantity, while each component's own radius may be
    degenerate with the others (an SIE against a stellar mass-to-light ratio)."""
    pick = np.unique(np.linspace(0, len(samples) - 1, min(n_max, len(samples))).astype(int))
    return np.array([model.instance(samples[i]).einstein_radius() for i in pick])


def write_results(
    config: Any, result: Any, output: str | Path, truths: Any = None, plot: bool = True
) -> dict[str, Path]:
    """Write every result file of a finished search (see the module) and return their paths.

    ``config`` is a :class:`twinlens.job.config.FitConfig`; ``result`` a
    :class:`twinlens.search.SearchResult`; ``truths`` (optional) the true parameter vector of
    a simulated dataset, drawn on the corner plot.
    """
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    model, dataset = config.model, config.dataset
    files: dict[str, Path] = {}

    samples = np.column_stack([result.samples, result.log_likelihood])
    files["samples"] = output / "samples.csv"
    np.savetxt(
        files["samples"],
        samples,
        delimiter=",",
        header=",".join([*model.paths, "log_likelihood"]),
        comments="",
    )

    theta = einstein_radii(model, result.samples)
    derived = {
        "einstein_radius": {
            "definition": "radius of the circle about the lens centre within which the mean "
            "convergence of all lens mass is 1, arcsec",
            "median": float(np.nanmedian(theta)),
            "lower_68": float(np.nanpercentile(theta, 16)),
            "upper_68": float(np.nanpercentile(theta, 84)),
            "n_samples": int(np.isfinite(theta).sum()),
        }
    }
    best = model.instance(result.max_likelihood)
    fit = FitImaging(dataset, best, "numpy")
    solved = fit.solved_tracer
    med = result.medians()
    lo, hi = result.intervals(0.68)
    evidence = result.log_evidence
    text = [
        f"{config.title}: {result.name} on {config.backend}, {len(result.samples)} samples, "
        f"{result.n_evaluations} likelihood evaluations",
        f"log evidence: {evidence:.3f} +- {result.log_evidence_error or 0:.3f}"
        if evidence is not None
        else "log evidence: not given by this search",
        f"maximum log-likelihood: {float(result.max_log_likelihood):.3f} "
        f"(chi^2 {float(fit.chi_squared):.1f} over {dataset.mask_index.size} pixels)",
        "",
        summary_table(model, result),
        "",
        "derived: effective Einstein radius (mean convergence 1 within it) "
        f"{derived['einstein_radius']['median']:.5f} "
        f"-{derived['einstein_radius']['median'] - derived['einstein_radius']['lower_68']:.5f} "
        f"+{derived['einstein_radius']['upper_68'] - derived['einstein_radius']['median']:.5f}",
    ]
    files["summary"] = output / "summary.txt"
    files["summary"].write_text("\n".join(text) + "\n")

    files["json"] = output / "result.json"
    record = {
        "twinlens_version": __version__,
        "title": config.title,
        "search": result.name,
        "search_settings": config.search,
        "backend": config.backend,
        "seed": result.seed,
        "parameters": {
            path: {
                "label": model.labels[i],
                "prior": repr(prior),
                "median": float(med[i]),
                "lower_68": float(lo[i]),
                "upper_68": float(hi[i]),
                "max_likelihood": float(result.max_likelihood[i]),
            }
            for i, (path, prior) in enumerate(model.priors)
        },
        "derived": derived,
        "max_log_likelihood": float(result.max_log_likelihood),
        "log_evidence": _float(evidence),
        "log_evidence_error": _float(result.log_evidence_error),
        "n_samples": len(result.samples),
        "n_evaluations": int(result.n_evaluations),
        "solved_intensities": [float(v) for v in np.asarray(fit.intensities)],
        # every scalar of the maximum-likelihood model, fixed ones and solved intensities too
        "max_likelihood_model": {
            path: float(get_path(solved, path)) for path in parameter_paths(solved)
        },
        "info": {k: v for k, v in result.info.items() if _jsonable(v)},
    }
    files["json"].write_text(json.dumps(record, indent=1) + "\n")

    scale = dataset.grid.pixel_scale
    extent_half = 0.5 * dataset.grid.shape[1] * scale
    source, _ = plots.source_plane_image(solved, 0.5 * extent_half, n=dataset.grid.shape[1])
    images = {
        "model": fit.model_image,
        "residuals": fit.residual_map,
        "normalized_residuals": fit.normalized_residual_map,
        "source": source,
    }
    for name, image in images.items():
        files[name] = output / f"{name}.fits"
        fits_io.write_image(files[name], image, scale if name != "source" else None, True)

    if plot:
        files["fit_plot"] = plots.plot_fit(fit, output / "fit.png")
        box = (-extent_half, extent_half, -extent_half, extent_half)
        files["lens_plot"] = plots.plot_lens(solved, box, output / "lens.png")
        if len(result.samples) > model.n_params:  # a point estimate (map) has no corner
            files["corner_plot"] = plots.plot_corner(
                result.samples, model.labels, output / "corner.png", truths
            )

    try:
        from twinlens.export import to_coolest

        posterior = {path: result.samples[:, i] for i, path in enumerate(model.paths)}
        files["coolest"] = Path(
            to_coolest(solved, output / "coolest.json", dataset=dataset, posterior=posterior)
        )
    except (ImportError, ValueError, TypeError, NotImplementedError) as err:
        warnings.warn(f"no COOLEST file written: {err}", RuntimeWarning, stacklevel=2)
    return files


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True

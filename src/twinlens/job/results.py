"""Writing a fit's results to its output folder.

The folder holds, for people:

- ``summary.txt``: warnings first (a chain or run that did not converge, a fit far from the
  noise), then the median and 68% interval (16th to 84th percentile) of each free parameter,
  the maximum-likelihood value and the evidence; a point estimate (``map``) is given alone;
  and each short label of the corner plot beside its parameter's path;
- ``fit.png``, ``lens.png``, ``corner.png``: data, model, residuals and the source;
  convergence with critical curves and caustics; the posterior
  (:func:`~twinlens.job.plots.plot_corner`).

For machines:

- ``result.json``: the same numbers, the warnings, the search's settings and diagnostics,
  the fingerprint of what defined the run (:mod:`twinlens.job.freshness`) and the files
  written; it is written last, so its presence marks a finished fit;
- ``samples.csv``: the equal-weight posterior samples with their log-likelihoods;
- ``model.fits``, ``residuals.fits``, ``normalized_residuals.fits``, ``source.fits``: the
  maximum-likelihood model's images (NaN outside the mask);
- ``coolest.json``: the maximum-likelihood model with posterior statistics in COOLEST, the
  lensing community's standard format, when every profile has a COOLEST equivalent (else
  ``result.json``'s ``coolest`` says why there is none). A failed export raises
  :class:`ExportFailed` once every other file is written.

With a pixelised source the likelihood is the log-evidence of the source inversion,
``fit.png`` shows the source on its mesh and its error map (:mod:`twinlens.job.pixelised`),
``source.fits`` is the reconstruction interpolated on a regular grid, ``source_errors.fits``
its errors, and ``coolest.json`` holds the reconstruction and its regularisation (the scheme,
and ``lambda`` with its posterior statistics and prior; :mod:`twinlens.export`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from twinlens import __version__, memo
from twinlens.imaging import fits_io
from twinlens.job import plots
from twinlens.job.plots import point_source_half_width
from twinlens.job.results_bands import band_fits, band_records, write_band_images
from twinlens.job.summary import (
    draws_corner,
    fit_figure_title,
    interval_text,
    is_point_estimate,
    summary_text,
    summary_warnings,
)
from twinlens.likelihood.imaging import FitImaging
from twinlens.model import Model, get_path, parameter_paths
from twinlens.model.labels import axis_labels
from twinlens.model.paths import part_path
from twinlens.search.checkpoint import atomic_write_text
from twinlens.user_warnings import warn_user

__all__ = [
    "ExportFailed",
    "best_fit_point_images",
    "einstein_radii",
    "write_results",
]


class ExportFailed(RuntimeError):
    """An export (COOLEST) failed after every other result file was written."""


#: Posterior samples whose effective Einstein radius is computed: the 16th and 84th
#: percentiles of 200 draws sit within about 0.1 sigma of the posterior's.
N_EINSTEIN_RADII = 200


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


def best_fit_point_images(likelihood: Any, tracer: Any, point_source: Any) -> Any:
    """The point images the imaging held at the best fit (None without ``in_imaging``). Should
    the model's images not be found there on numpy (the search ran on another backend, at the
    edge of the steps' test), the observed positions stand in, with a warning: a finished
    search's files are always written."""
    try:
        return likelihood.point_images_at(tracer, point_source)
    except ValueError as err:
        warn_user(
            f"{err}; the results draw the point images at the observed positions",
            RuntimeWarning,
        )
        return dataclasses.replace(likelihood, imaging_positions="observed").point_images


def einstein_radii(
    model: Model, samples: np.ndarray, n_max: int = N_EINSTEIN_RADII, backend: str = "numpy"
) -> np.ndarray:
    """The effective Einstein radius (:meth:`~twinlens.lensing.tracer.Tracer.einstein_radius`)
    of up to ``n_max`` evenly spaced posterior samples: in a model with several mass
    components it is the well-measured quantity, while each component's own radius may be
    degenerate with the others (an SIE against a stellar mass-to-light ratio).

    Each radius takes a few dozen deflection calls of 128 points. On numba each call pays a
    parallel launch that costs far more than the arithmetic, so numpy (which agrees with
    numba to rounding) is the default, and the memo is off: no sample repeats."""
    pick = np.unique(np.linspace(0, len(samples) - 1, min(n_max, len(samples))).astype(int))
    with memo.disabled():
        return np.array([model.instance(samples[i]).einstein_radius(backend=backend) for i in pick])


def _search_settings(search: dict) -> dict:
    """Every setting of the search, defaults included, so the record says how it ran."""
    from twinlens.search import search_from_config

    try:
        return {"name": search["name"], **search_from_config(**search).settings()}
    except (KeyError, TypeError, ValueError):
        return dict(search)


def write_results(
    config: Any,
    result: Any,
    output: str | Path,
    truths: Any = None,
    plot: bool = True,
    progress: bool = False,
    fingerprint: dict | None = None,
) -> dict[str, Path]:
    """Write every result file of a finished search (see the module) and return their paths.

    ``config`` is a :class:`twinlens.job.config.FitConfig`; ``result`` a
    :class:`twinlens.search.SearchResult`; ``truths`` (optional) the true parameter vector of
    a simulated dataset, drawn on the corner plot; ``progress`` prints a line before each
    slow step; ``fingerprint`` what defined the run
    (:func:`~twinlens.search.checkpoint.run_record`), stored in ``result.json``.

    ``result.json`` is written last: its presence marks a finished fit.

    Raises
    ------
    ExportFailed
        When the COOLEST export failed, after every other file is written (a model that
        COOLEST cannot describe is not a failure: ``result.json`` says why no file was written).
    """

    def say(text: str) -> None:
        if progress:
            print(f"results: {text}", flush=True)

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    files["samples"] = _write_samples(config.model, result, output)

    n_theta = min(N_EINSTEIN_RADII, len(result.samples))
    say(f"effective Einstein radius of {n_theta} posterior samples")
    derived, h0_samples = _derived_quantities(config, result)
    best = _best_fit(config, result, derived)
    flags = summary_warnings(result, best.chi_squared, best.n_pixels)
    files["summary"] = output / "summary.txt"
    _write_summary(config, result, derived, best, flags, files["summary"])

    fit, solved = best.fit, best.solved
    if best.bands:
        write_band_images(config.bands, list(best.bands), output, files)
    if fit is not None:
        extent_half = _write_images(fit, solved, output, files)
    else:  # no imaging: a configuration then has a point source
        extent_half = point_source_half_width(config.point_source.likelihood.data.positions)
    if plot:
        say("plots of the fit and the lens")
        _write_plots(
            config, result, best, derived, (extent_half, h0_samples, truths), output, files
        )
    say("COOLEST export")
    note, failure = _export_coolest(config, result, fit, solved, output, files)

    files["json"] = output / "result.json"
    record = _record(config, result, derived, best, flags, note, fingerprint, files)
    atomic_write_text(json.dumps(record, indent=1) + "\n", files["json"])
    if failure is not None:
        raise ExportFailed(
            f"the COOLEST export failed ({note}); every other result is written in {output}"
        ) from failure
    return files


@dataclasses.dataclass(frozen=True)
class _BestFit:
    """The maximum-likelihood model and, with imaging, its fit to the data."""

    tracer: Any  # the model's tracer at the maximum likelihood
    solved: Any  # the tracer with its linear intensities solved (itself without imaging)
    fit: FitImaging | None = None
    chi_squared: float | None = None
    n_pixels: int | None = None
    bands: tuple = ()  # a multi-band fit's fits, one per band (the first is ``fit``)


def _write_samples(model: Model, result: Any, output: Path) -> Path:
    """``samples.csv``: the equal-weight samples, each with its log-likelihood."""
    path = output / "samples.csv"
    np.savetxt(
        path,
        np.column_stack([result.samples, result.log_likelihood]),
        delimiter=",",
        header=",".join([*model.paths, "log_likelihood"]),
        comments="",
    )
    return path


def _derived_quantities(config: Any, result: Any) -> tuple[dict[str, Any], Any]:
    """The derived quantities' statistics (the effective Einstein radius, and with a point
    source the time-delay distance and ``H0``), and the ``H0`` samples (None without)."""
    model, point = config.model, is_point_estimate(result)
    theta = einstein_radii(model, result.samples)
    derived: dict[str, Any] = {
        "einstein_radius": _stats(
            theta,
            point,
            "radius of the circle about the lens centre within which the mean convergence of "
            "all lens mass is 1, arcsec",
        )
    }
    point_config = getattr(config, "point_source", None)
    h0_samples = None
    d_dt_path = "point_source.time_delay_distance"
    if getattr(config, "cosmography", None) is not None:  # H0 sampled directly
        from twinlens.job.results_cosmography import cosmography_derived

        more, h0_samples = cosmography_derived(config, result, _stats, point)
        derived |= more
    elif "point_source.h0" in model.paths:  # a multi-plane lens: H0 is sampled
        h0_samples = result.samples[:, model.paths.index("point_source.h0")]
        derived["h0"] = _stats(
            h0_samples,
            point,
            "H0 of the multi-plane lens's cosmology (flat LambdaCDM, its Omega_m fixed), "
            "sampled, km/s/Mpc",
        )
    elif point_config is not None and d_dt_path in model.paths:
        d_dt = result.samples[:, model.paths.index(d_dt_path)]
        derived["time_delay_distance"] = _stats(
            d_dt, point, "time-delay distance D_dt = (1 + z_d) D_d D_s / D_ds, Mpc"
        )
        if point_config.z_lens is not None:
            h0_samples = np.asarray(point_config.h0(d_dt), dtype=float)
            derived["h0"] = _stats(
                h0_samples,
                point,
                f"H0 of flat LambdaCDM (Omega_m = {point_config.omega_m}) whose D_dt at "
                f"z_lens = {point_config.z_lens}, z_source = {point_config.z_source} is the "
                "sampled one, km/s/Mpc",
            )
    return derived, h0_samples


def _best_fit(config: Any, result: Any, derived: dict[str, Any]) -> _BestFit:
    """The maximum-likelihood model, fitted to the imaging when there is some; the point
    images it holds then add their fluxes (and, where the images move, their positions) to
    ``derived``."""
    model, dataset = config.model, config.dataset
    point_config = getattr(config, "point_source", None)
    if getattr(config, "bands", ()):
        fits = band_fits(config, result.max_likelihood)
        chi_squared = sum(float(f.chi_squared) for f in fits)
        n_pixels = sum(int(f.dataset.mask_index.size) for f in fits)
        first = fits[0]
        solved = first.solved_tracer
        return _BestFit(first.tracer, solved, first, chi_squared, n_pixels, tuple(fits))
    best = model.instance(result.max_likelihood)
    if dataset is None:  # a point-source fit without imaging
        return _BestFit(best, best)
    seen = None
    if point_config is not None:  # the images the imaging held at the best fit
        best_source = model.point_source_instance(result.max_likelihood)
        seen = best_fit_point_images(point_config.likelihood, best, best_source)
    fit = FitImaging(dataset, best, "numpy", seen)
    solved = fit.solved_tracer
    chi_squared, n_pixels = float(fit.chi_squared), int(dataset.mask_index.size)
    if seen is not None:
        derived["point_image_fluxes"] = [float(f) for f in fit.point_image_fluxes]
        if point_config is not None and point_config.likelihood.images_move:
            derived["point_image_positions"] = seen.positions.tolist()
    return _BestFit(best, solved, fit, chi_squared, n_pixels)


def _write_summary(
    config: Any,
    result: Any,
    derived: dict[str, Any],
    best: _BestFit,
    flags: list[str],
    path: Path,
) -> None:
    """``summary.txt``: the report of :func:`~twinlens.job.summary.summary_text`, then the
    derived quantities it does not print."""
    radius = derived["einstein_radius"]
    text = summary_text(
        result,
        config.model,
        title=config.title,
        backend=config.backend,
        chi_squared=best.chi_squared,
        n_pixels=best.n_pixels,
        einstein_radius=radius if radius["median"] is not None else None,
        flags=flags,
        pixelised=best.fit is not None and best.fit.pixelised is not None,
    )
    # the corner plot's labels are Greek letters (θE, γ1, λ): UTF-8 whatever the locale
    path.write_text(text + "".join(_summary_lines(derived)), encoding="utf-8")


def _summary_lines(derived: dict[str, Any]) -> list[str]:
    """The summary's lines of ``D_dt``, ``H0`` and the point images in the imaging."""
    lines = []
    for key, unit in (("time_delay_distance", "Mpc"), ("h0", "km/s/Mpc")):
        if key in derived:
            name = "D_dt" if key == "time_delay_distance" else "H0"
            lines.append(interval_text(name, derived[key], unit) + "\n")
    from twinlens.job.results_cosmography import dispersion_lines

    lines += dispersion_lines(derived)
    if "point_image_fluxes" in derived:
        fluxes = ", ".join(f"{f:.5g}" for f in derived["point_image_fluxes"])
        lines.append(f"point image fluxes in the imaging (best fit): {fluxes}\n")
        if "point_image_positions" in derived:
            placed = ", ".join(f"({x:.5f}, {y:.5f})" for x, y in derived["point_image_positions"])
            lines.append(f"point image positions, the model's (best fit), arcsec: {placed}\n")
    return lines


def _record(
    config: Any,
    result: Any,
    derived: dict[str, Any],
    best: _BestFit,
    flags: list[str],
    note: str | None,
    fingerprint: dict | None,
    files: dict[str, Path],
) -> dict[str, Any]:
    """What ``result.json`` holds (see the module); ``note`` says why ``coolest.json`` is
    missing."""
    model, fit = config.model, best.fit
    point = is_point_estimate(result)
    return {
        "twinlens_version": __version__,
        "title": config.title,
        "warnings": flags,
        "search": result.name,
        "search_settings": _search_settings(config.search),
        "backend": config.backend,
        "seed": result.seed,
        # a point estimate (map) has no interval: its lower_68 and upper_68 are null
        "point_estimate": point,
        "parameters": _parameter_records(model, result, point),
        "derived": derived,
        "max_log_likelihood": float(result.max_log_likelihood),
        "chi_squared": best.chi_squared,
        "n_pixels": best.n_pixels,
        "log_evidence": _float(result.log_evidence),
        "log_evidence_error": _float(result.log_evidence_error),
        "n_samples": len(result.samples),
        "n_evaluations": int(result.n_evaluations),
        # the linear profiles' (Tracer.with_intensities takes them); point fluxes are derived
        "solved_intensities": []
        if fit is None
        else [float(v) for v in np.asarray(fit.intensities)[: best.tracer.n_linear]],
        # every scalar of the maximum-likelihood model, fixed ones and solved intensities too
        "max_likelihood_model": {
            path: float(get_path(best.solved, path)) for path in parameter_paths(best.solved)
        },
        "info": _diagnostics(result.info),
        # a staged fit: which earlier fit set its adaptive regularisation (twinlens.job.stages)
        "adapted_from": getattr(config, "adapted_from", None),
        # a multi-band fit: each band's part of the best fit (chi_squared above is their sum)
        "bands": band_records(config.bands, list(best.bands)) if best.bands else None,
        # coolest.json, or why it is missing
        "coolest": files["coolest"].name if "coolest" in files else note,
        "fingerprint": fingerprint,
        "files": sorted(p.name for p in files.values()),
    }


def _parameter_records(model: Model, result: Any, point: bool) -> dict[str, dict]:
    """Each free parameter's labels (LaTeX, and the short one of the corner plot), prior,
    median, 68% interval and maximum-likelihood value."""
    med = result.medians()
    lo, hi = result.intervals(0.68)
    short = axis_labels(model.paths)
    return {
        path: {
            "label": model.labels[i],
            "short_label": short[i],  # as corner.png's axes and summary.txt show it
            "prior": repr(prior),
            "median": float(med[i]),
            "lower_68": None if point else float(lo[i]),
            "upper_68": None if point else float(hi[i]),
            "max_likelihood": float(result.max_likelihood[i]),
        }
        for i, (path, prior) in enumerate(model.priors)
    }


def _write_plots(
    config: Any,
    result: Any,
    best: _BestFit,
    derived: dict[str, Any],
    extras: tuple[float, Any, Any],
    output: Path,
    files: dict[str, Path],
) -> None:
    """The fit's, the lens's, the point source's, the kinematics' and the corner plots, into
    ``files``; ``extras`` are the lens plot's half-width, the ``H0`` samples (or None) and
    the corner plot's truths."""
    extent_half, h0_samples, truths = extras
    model, fit, solved = config.model, best.fit, best.solved
    point_config = getattr(config, "point_source", None)
    if fit is not None:  # titled with summary.txt's names and numbers
        pixelised = fit.pixelised is not None
        bands = best.bands
        # with imaging _best_fit sets both (a multi-band fit's: sums over the bands)
        chi_squared, n_pixels = float(best.chi_squared or 0.0), int(best.n_pixels or 0)
        title = fit_figure_title(result, model, chi_squared, n_pixels, pixelised)
        if bands:
            files["fit_plot"] = plots.plot_band_fits(
                list(bands), list(config.bands), output / "fit.png", title
            )
        elif pixelised:
            from twinlens.job.pixelised import plot_pixelised_fit

            files["fit_plot"] = plot_pixelised_fit(fit, output / "fit.png", title)
        else:
            files["fit_plot"] = plots.plot_fit(fit, output / "fit.png", title)
    box = (-extent_half, extent_half, -extent_half, extent_half)
    files["lens_plot"] = plots.plot_lens(solved, box, output / "lens.png")
    if point_config is not None:
        from twinlens.job.timedelay import plot_time_delay_fit

        # the statistics of derived["h0"], printed as the summary prints them
        h0 = None if h0_samples is None else _stats(h0_samples, is_point_estimate(result), "")
        files["point_source_plot"] = plot_time_delay_fit(
            fit,
            solved,
            model.point_source_instance(result.max_likelihood),
            point_config.likelihood.data,
            h0_samples,
            output / "point_source.png",
            h0_title=None if h0 is None else interval_text("H0", h0, "km/s/Mpc"),
        )
    cosmography = getattr(config, "cosmography", None)
    if cosmography is not None and cosmography.kinematics is not None:
        from twinlens.job.results_cosmography import plot_kinematics

        files["kinematics_plot"] = plot_kinematics(
            config, result, derived, output / "kinematics.png"
        )
    if draws_corner(result, model.n_params):
        files["corner_plot"] = plots.plot_corner(
            result.samples,
            model.labels,
            output / "corner.png",
            truths,
            paths=model.paths,
            weighted=plots.weighted_posterior(result.info or {}),
        )


def _export_coolest(
    config: Any,
    result: Any,
    fit: FitImaging | None,
    solved: Any,
    output: Path,
    files: dict[str, Path],
) -> tuple[str | None, Exception | None]:
    """Write ``coolest.json`` into ``files``; returns ``(note, error)``: why no file was
    written (None when it was), and the error when the export failed (None when COOLEST
    merely cannot describe the model)."""
    from twinlens.export import NotDescribable, to_coolest

    model = config.model

    def described(path: str) -> bool:
        # COOLEST describes the lens, the sources' light and a pixelised source's
        # regularisation coefficient (its lambda), not a point source (result.json has it)
        if part_path(path)[0] is not None or path.startswith("band."):
            return False  # nor a band's own parameter, nor cosmography's
        return ".pixelization." not in path or path.endswith(".regularization.coefficient")

    posterior = {
        path: result.samples[:, i] for i, path in enumerate(model.paths) if described(path)
    }
    try:
        written = to_coolest(
            solved,
            output / "coolest.json",
            dataset=config.dataset,
            posterior=posterior,
            priors=tuple(p for p in model.priors if described(p[0])),
            reconstruction=None if fit is None else fit.pixelised,
        )
    except NotDescribable as err:  # the format's limit, not a failure: said in result.json
        return f"not written: {err}", None
    except Exception as err:  # raised by write_results once every other file is written
        return f"{type(err).__name__}: {err}", err
    files["coolest"] = Path(written)
    return None, None


def _write_images(fit: FitImaging, solved: Any, output: Path, files: dict[str, Path]) -> float:
    """The model, residual and source FITS images of an imaging fit, into ``files``; returns
    the half-width of the data's field of view, arcsec."""
    grid = fit.dataset.grid
    scale = grid.pixel_scale
    extent_half = 0.5 * grid.shape[1] * scale
    images = {
        "model": fit.model_image,
        "residuals": fit.residual_map,
        "normalized_residuals": fit.normalized_residual_map,
    }
    if fit.pixelised is None:
        source, _ = plots.source_plane_image(solved, 0.5 * extent_half, n=grid.shape[1])
        images["source"] = source
    for name, image in images.items():
        files[name] = output / f"{name}.fits"
        fits_io.write_image(files[name], image, scale if name != "source" else None, True)
    if fit.pixelised is not None:
        from twinlens.job import pixelised

        files.update(pixelised.write_source_fits(fit, output))
    return extent_half


def _stats(values: np.ndarray, point: bool, definition: str) -> dict:
    """Median and central 68% interval of derived ``values`` (no interval for a point
    estimate)."""
    finite = values[np.isfinite(values)]
    some = finite.size > 0
    return {
        "definition": definition,
        "median": float(np.median(finite)) if some else None,
        "lower_68": None if point or not some else float(np.percentile(finite, 16)),
        "upper_68": None if point or not some else float(np.percentile(finite, 84)),
        "n_samples": int(finite.size),
    }


#: Arrays in a search's ``info`` up to this size go into result.json (autocorrelation times,
#: acceptance fractions, R-hat, the optimiser's starts); larger ones (nautilus's weighted
#: posterior) are left to samples.csv.
MAX_INFO_ARRAY = 1000


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it (arrays as lists, NaN and infinities as null), or
    ``_SKIP``."""
    if isinstance(value, np.ndarray):
        if value.size > MAX_INFO_ARRAY or value.dtype.kind not in "biuf":
            return _SKIP
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    if isinstance(value, dict):
        entries = {str(k): _plain(v) for k, v in value.items()}
        return {k: v for k, v in entries.items() if v is not _SKIP}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return _SKIP


_SKIP = object()


def _diagnostics(info: dict) -> dict:
    """The search's diagnostics that fit in result.json (see :data:`MAX_INFO_ARRAY`)."""
    plain = {k: _plain(v) for k, v in info.items()}
    return {k: v for k, v in plain.items() if v is not _SKIP}

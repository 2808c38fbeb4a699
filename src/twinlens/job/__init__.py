"""The main job: read a configuration, run a search, write results, plots and exports.

``twinlens fit CONFIG`` runs :func:`run_fit` on :func:`~twinlens.job.config.load_config`'s
result; ``twinlens fit --example`` first writes the built-in example
(:mod:`twinlens.job.example`).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["run_fit"]


def run_fit(
    config: Any,
    *,
    output: str | Path | None = None,
    progress: bool = True,
    plot: bool = True,
    truths: Any = None,
    restart: bool = False,
    hard_exit: bool = False,
) -> dict[str, Path]:
    """Fit ``config`` (a :class:`~twinlens.job.config.FitConfig`) and write its results to
    ``output`` (default ``config.output``); returns the written files by name.

    A search that checkpoints (nautilus, emcee) resumes from the folder's checkpoint when it
    belongs to the same run, and refuses one of a differently defined run
    (:class:`~twinlens.search.checkpoint.CheckpointMismatch`, naming what changed) unless
    ``restart``. While it runs, a first SIGINT or SIGTERM stops it after the batch in flight
    with its checkpoint written (:class:`~twinlens.search.stopping.SearchStopped` is raised);
    a second stops at once (``hard_exit``: the process exits, as the command line does;
    otherwise ``KeyboardInterrupt``).

    A finished fit already in the folder whose fingerprint differs from this run's (another
    prior, other data, another seed) is set aside into ``<folder>.stale-<date>`` first, with
    a line saying what changed (:mod:`twinlens.job.freshness`); its checkpoint stays when the
    change lets the search go on from it. A failed COOLEST export raises
    :class:`~twinlens.job.results.ExportFailed` once every other file is written.

    A pixelised source whose regularisation adapts to an earlier fit (``adapt``) has that
    fit run first, or reused when it is finished and up to date
    (:func:`~twinlens.job.stages.resolve_stages`).
    """
    from twinlens.job.results import write_results
    from twinlens.job.stages import resolve_stages
    from twinlens.search import search_from_config
    from twinlens.search.checkpoint import run_record
    from twinlens.search.stopping import stop_on_signals

    stage = {"progress": progress, "plot": plot, "restart": restart, "hard_exit": hard_exit}
    config = resolve_stages(config, **stage)
    folder = Path(output) if output is not None else Path(config.output)
    search = search_from_config(**config.search)
    objective = config.objective()
    fingerprint = run_record(search, objective)
    _set_aside_if_stale(folder, fingerprint)
    if progress:
        data = (
            f"{config.dataset.layout.n_points} ray-traced points"
            if config.dataset is not None
            else f"{len(config.point_source.likelihood.data.positions)} point images, no imaging"
        )
        print(
            f"{config.title}\n{config.model.n_params} free parameters, {data}, search "
            f"{config.search['name']} on {config.backend}; results in {folder}",
            flush=True,
        )
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if search.checkpoints:  # the gradient searches compile their own programs
        _warm_up(objective, search, progress)
    stoppable = stop_on_signals(hard_exit) if search.checkpoints else contextlib.nullcontext()
    with stoppable:
        result = search.run(objective, folder, progress, restart=restart)
    result.info.setdefault("wall_time_s", time.perf_counter() - start)
    if progress:
        images = "" if config.dataset is None else " FITS images,"
        print(f"writing the results: summary, samples,{images} plots, COOLEST", flush=True)
    files = write_results(
        config,
        result,
        folder,
        truths=truths,
        plot=plot,
        progress=progress,
        fingerprint=fingerprint,
    )
    if progress:
        print(f"done in {time.perf_counter() - start:.0f} s; summary: {files['summary']}")
        print(files["summary"].read_text())
    return files


def _set_aside_if_stale(folder: Path, fingerprint: dict) -> None:
    """A finished fit in ``folder`` of another definition is moved aside, never overwritten
    nor taken for this run's; the run says what changed. Its checkpoint stays where the
    change lets the search go on from it (more samples asked for)."""
    from twinlens.job import freshness

    changed = freshness.staleness(folder, fingerprint)
    if not changed:
        return
    names = freshness.result_files(folder)
    resumes = freshness.checkpoint_survives(folder, changed)
    if not resumes:
        names += freshness.checkpoint_files(folder)
    aside = freshness.set_aside(folder, names)
    again = "continuing its search from its checkpoint" if resumes else "fitting afresh"
    # said even when quiet: the user's earlier results moved
    print(
        f"{folder} held a finished fit of another definition ({changed.text}); its files are "
        f"kept in {aside}; {again}",
        flush=True,
    )


def _warm_up(objective: Any, search: Any, progress: bool) -> None:
    """Compile the likelihood before sampling, saying so (numba compiles on first use and
    caches on disk: minutes on a machine's first run, a second after), and check that the
    starting vector gives a finite ``log L``."""
    rows = getattr(search, "n_batch", None) or getattr(search, "n_walkers", None) or 100
    if progress:
        print(f"compiling the likelihood on {objective.backend} (cached after the first run)")
    began = time.perf_counter()
    start = np.broadcast_to(np.asarray(objective.start, dtype=float), (rows, objective.n_params))
    log_l = float(np.asarray(objective.log_likelihood(np.array(start)))[0])
    if progress:
        print(f"compiled in {time.perf_counter() - began:.1f} s; log L at the start {log_l:.2f}")
    if not np.isfinite(log_l):
        why = "outside a profile's valid range"
        if objective.model.point_source is not None:
            why += ", or a lens that makes another number of images than were observed"
        print(
            f"warning: the starting values give log L = -inf ({why}); the search can still "
            "run, but check the configuration's start values",
            flush=True,
        )

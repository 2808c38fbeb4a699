"""The main job: read a configuration, run a search, write results, plots and exports.

``twinlens fit CONFIG`` runs :func:`run_fit` on :func:`~twinlens.job.config.load_config`'s
result; ``twinlens fit --example`` first writes the built-in example
(:mod:`twinlens.job.example`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

__all__ = ["run_fit"]


def run_fit(
    config: Any,
    *,
    output: str | Path | None = None,
    progress: bool = True,
    plot: bool = True,
    truths: Any = None,
) -> dict[str, Path]:
    """Fit ``config`` (a :class:`~twinlens.job.config.FitConfig`) and write its results to
    ``output`` (default ``config.output``); returns the written files by name. A search that
    checkpoints resumes from the folder's checkpoint when one exists."""
    from twinlens.job.results import write_results
    from twinlens.search import Objective, search_from_config

    folder = Path(output) if output is not None else Path(config.output)
    folder.mkdir(parents=True, exist_ok=True)
    search = search_from_config(**config.search)
    objective = Objective.build(config.model, config.dataset, config.backend)
    if progress:
        print(
            f"{config.title}\n{config.model.n_params} free parameters, "
            f"{config.dataset.layout.n_points} ray-traced points, search {config.search['name']} "
            f"on {config.backend}; results in {folder}",
            flush=True,
        )
    start = time.perf_counter()
    result = search.run(objective, folder, progress)
    result.info.setdefault("wall_time_s", time.perf_counter() - start)
    files = write_results(config, result, folder, truths=truths, plot=plot)
    if progress:
        print(f"done in {time.perf_counter() - start:.0f} s; summary: {files['summary']}")
        print(files["summary"].read_text())
    return files

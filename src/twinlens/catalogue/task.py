"""One lens's fit as a Dask task, and the folder it leaves.

A lens fits into ``OUTPUT/lenses/<id>.partial/`` (its search's checkpoint, its log) and, once
every result is written, that folder is renamed to ``OUTPUT/lenses/<id>/``: a rename is atomic,
so a lens's folder is either complete or absent. A task finds a finished lens and returns at
once; an interrupted one resumes from the checkpoint in its partial folder. A lock file held
while a lens runs keeps a duplicate task (a worker the scheduler gave up on while it still
ran) from writing into the same folder.

A finished lens's ``result.json`` holds the fingerprint of what defined its fit
(:mod:`twinlens.job.freshness`); the runner compares it with the catalogue's before it
submits anything, and a lens whose definition changed is refitted, its old folder kept aside
as ``OUTPUT/lenses/<id>.stale-<date>/`` until the new fit finishes. An interrupted lens whose
checkpoint belongs to another definition starts afresh, saying so in its log.

A lens whose data or fit fails writes ``failure.json`` (the error, its traceback, the log's
path) into its partial folder and returns ``failed``: it does not raise, so the scheduler does
not retry what would fail again, and the other lenses go on. A rerun tries a failed lens again
(its data may have been mended).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.catalogue.spec import LensTask

__all__ = ["fit_lens", "lens_folders", "lens_status", "stale_folders"]

FAILURE = "failure.json"
LOG = "fit.log"


def lens_folders(output: Path, lens_id: str) -> tuple[Path, Path]:
    """``(finished, partial)`` folders of a lens."""
    lenses = Path(output) / "lenses"
    return lenses / lens_id, lenses / f"{lens_id}.partial"


def stale_folders(output: Path, lens_id: str) -> list[Path]:
    """The lens's folders kept aside by a refit (``<id>.stale-<date>``)."""
    return sorted((Path(output) / "lenses").glob(f"{lens_id}.stale-*"))


def lens_status(output: Path, lens_id: str) -> str:
    """``done``, ``failed``, ``interrupted`` (a partial folder, no failure) or ``pending``."""
    finished, partial = lens_folders(output, lens_id)
    if (finished / "result.json").is_file():
        return "done"
    if (partial / FAILURE).is_file():
        return "failed"
    return "interrupted" if partial.is_dir() else "pending"


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with open(folder / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # waits for a duplicate task of the same lens
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _check_pixels(dataset: Any) -> None:
    """NaN or infinite pixels where the fit looks, or a noise map that is not > 0 there, would
    make every likelihood NaN: refuse them, naming how many."""
    used = dataset.grid.used
    data, noise = np.asarray(dataset.data)[used], np.asarray(dataset.noise_map)[used]
    bad_data = int(np.count_nonzero(~np.isfinite(data)))
    bad_noise = int(np.count_nonzero(~(np.isfinite(noise) & (noise > 0))))
    if bad_data or bad_noise:
        raise ValueError(
            f"{bad_data} data pixels are NaN or infinite and {bad_noise} noise-map pixels are "
            "not finite numbers > 0 inside the mask: mask them out or mend the files"
        )


def limit_numba_threads(n: int | None) -> None:
    """Run numba's loops on at most ``n`` threads in the calling thread.

    numba's thread count is per calling thread: a Dask worker's set-up runs in another thread
    than its tasks, so each task sets it again. Without this, two workers on two cores each ran
    numba on both cores, and every fit slowed by a quarter (``docs/cluster.rst``)."""
    if n:
        import numba

        most = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
        numba.set_num_threads(max(1, min(n, most)))


def fit_lens(
    task: LensTask,
    output: str,
    backend: str | None = None,
    plot: bool = True,
    numba_threads: int | None = None,
) -> dict:
    """Fit one lens of a catalogue into ``output`` (see the module); returns its status row:
    ``id``, ``status`` (``done`` or ``failed``), ``skipped`` (already finished), ``error``,
    ``seconds`` and ``log``. ``numba_threads`` bounds numba's threads (the worker's share of
    its node's cores)."""
    from twinlens.job.config import parse_config

    limit_numba_threads(numba_threads)

    finished, partial = lens_folders(Path(output), task.id)
    row: dict[str, Any] = {"id": task.id, "status": "done", "skipped": False, "error": ""}
    if (finished / "result.json").is_file():
        return {**row, "skipped": True, "seconds": 0.0, "log": str(finished / LOG)}
    partial.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    with _locked(partial):
        if (finished / "result.json").is_file():  # a duplicate finished while we waited
            return {**row, "skipped": True, "seconds": 0.0, "log": str(finished / LOG)}
        (partial / FAILURE).unlink(missing_ok=True)
        log = partial / LOG
        try:
            with (
                open(log, "a") as stream,
                contextlib.redirect_stdout(stream),
                contextlib.redirect_stderr(stream),
            ):
                print(f"--- lens {task.id}, {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
                config = parse_config(task.config, task.base, backend)
                _check_pixels(config.dataset)
                truths = None
                if task.truths is not None:
                    truths = [task.truths.get(p, np.nan) for p in config.model.paths]
                _fit(config, partial, plot, truths)
        except Exception as err:  # the lens's own fault: record it, let the others go on
            failure = {
                "id": task.id,
                "error": f"{type(err).__name__}: {err}",
                "traceback": traceback.format_exc(),
                "log": str(log),
            }
            (partial / FAILURE).write_text(json.dumps(failure, indent=1) + "\n")
            return {
                **row,
                "status": "failed",
                "error": failure["error"],
                "seconds": time.perf_counter() - began,
                "log": str(log),
            }
        (partial / ".lock").unlink(missing_ok=True)
        os.rename(partial, finished)  # atomic: the lens's folder appears complete
    for aside in stale_folders(Path(output), task.id):  # kept until the new fit finished
        shutil.rmtree(aside, ignore_errors=True)
    return {**row, "seconds": time.perf_counter() - began, "log": str(finished / LOG)}


def _fit(config: Any, partial: Path, plot: bool, truths: Any) -> None:
    """Fit into the partial folder, resuming its checkpoint; a checkpoint of another
    definition (the catalogue changed since the lens was interrupted) is restarted, as the
    log says: it holds no finished result, only the old definition's unfinished search."""
    from twinlens.job import run_fit
    from twinlens.search.checkpoint import CheckpointMismatch

    try:
        run_fit(config, output=partial, progress=True, plot=plot, truths=truths)
    except CheckpointMismatch as err:
        print(f"{err}\nthe catalogue changed since this lens was interrupted: restarting it")
        run_fit(config, output=partial, progress=True, plot=plot, truths=truths, restart=True)

"""Running a catalogue: one Dask task per lens, progress as they finish, and the results table.

The table is always rebuilt from the lenses' folders (:mod:`twinlens.catalogue.table`), so a
killed command or a lost scheduler loses nothing that finished; a rerun skips finished lenses
whose definition is unchanged, refits those whose template, row or data changed since their
fit (saying what changed; ``keep_stale`` keeps them instead, marked ``stale`` in the table),
and resumes interrupted ones from their checkpoints.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

from twinlens.catalogue.cluster import ClusterError, check_table, start_client
from twinlens.catalogue.gpus import PinGPU
from twinlens.catalogue.plots import plot_catalogue
from twinlens.catalogue.spec import Catalogue, LensTask
from twinlens.catalogue.table import build_table, write_table
from twinlens.catalogue.task import fit_lens, lens_folders, lens_status, limit_numba_threads

__all__ = ["WarmUp", "run_catalogue"]


try:
    from distributed import WorkerPlugin
except ImportError:  # run_catalogue says what to install
    WorkerPlugin = object  # type: ignore[assignment,misc]


class WarmUp(WorkerPlugin):
    """A Dask worker plugin: on a worker's start, compile the template's likelihood on a tiny
    stand-in image (numba caches it on disk, shared by the node's workers) and set numba's
    threads to this worker's share of the node. ``compile_seconds`` is kept on the worker."""

    name = "twinlens-warm-up"

    def __init__(self, task: LensTask, backend: str | None, numba_threads: int | None) -> None:
        self.task, self.backend, self.numba_threads = task, backend, numba_threads

    def setup(self, worker: Any) -> None:
        """Compile the template on ``worker`` and record the seconds it took."""
        began = time.perf_counter()
        try:
            compile_template(self.task, self.backend, self.numba_threads)
        except Exception as err:  # a warm-up is an optimisation: the fits will say what fails
            print(f"twinlens warm-up failed: {err}", file=sys.stderr)
        worker.twinlens_compile_seconds = time.perf_counter() - began

    def teardown(self, worker: Any) -> None:
        """Nothing to undo."""


def compile_template(task: LensTask, backend: str | None, numba_threads: int | None = None) -> None:
    """Evaluate the lens's model once on an 8 x 8 stand-in image, so that the kernels its
    fit needs are compiled (and cached) before the fit starts."""
    import numpy as np

    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import Imaging
    from twinlens.imaging.psf import PSF
    from twinlens.job.config import parse_config
    from twinlens.search import Objective

    limit_numba_threads(numba_threads)
    config = parse_config(task.config, task.base, backend, read_data=False)
    sub = task.config.get("dataset", {}).get("sub_size", 4)
    grid = Grid2D.uniform(8, 0.1, sub)
    kernel = np.zeros((3, 3))
    kernel[1, 1] = 1.0
    stand_in = Imaging(np.zeros((8, 8)), np.ones((8, 8)), PSF(kernel), grid)
    objective = Objective.build(config.model, stand_in, config.backend)
    objective.log_likelihood(np.asarray(objective.start)[None, :])


def _numba_share(table: dict, cores: int, workers: int | None, threads: int) -> int | None:
    """numba threads per Dask thread: the local cores shared out among the workers; one for a
    batch job (dask-jobqueue starts one Dask thread per core of the job, so each core already
    runs a fit); numba's default for a scheduler found by address (its workers' nodes are
    unknown here)."""
    kind = table.get("kind", "local")
    if kind == "local":
        return max(1, cores // ((workers or cores) * threads))
    if kind in ("slurm", "pbs"):
        return 1
    return None


def _clock(seconds: float) -> str:
    if not seconds < float("inf"):
        return "unknown"
    hours, rest = divmod(int(seconds), 3600)
    minutes = rest // 60
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {int(seconds) % 60:02d} s"


def run_catalogue(
    catalogue: Catalogue,
    *,
    cluster: str | None = None,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    retries: int = 2,
    plot: bool = True,
    progress: bool = True,
    keep_stale: bool = False,
    gpus: bool | list | None = None,
) -> Any:
    """Fit every lens of ``catalogue`` on a Dask cluster and return the results table (an
    ``astropy.table.Table``, also written as ``catalogue.csv`` and ``catalogue.parquet`` in
    the output folder).

    ``cluster`` (``local``, ``slurm``, ``pbs`` or ``tcp://HOST:PORT``) replaces the
    catalogue's ``[cluster].kind``; ``workers`` and ``threads_per_worker`` its sizes;
    ``gpus`` its ``gpus`` (one worker per GPU, each pinned to its own: ``docs/cluster.rst``,
    for templates on the JAX backend). A worker
    lost mid-fit (killed, out of memory) is restarted by its nanny and its lens tried again
    on another, up to ``retries`` more times; the fit resumes from its checkpoint.

    A finished lens whose fingerprint (template, row, data, search settings) differs from the
    catalogue's now is refitted, its old folder kept aside until the new fit finishes;
    ``keep_stale`` keeps it instead, with status ``stale`` in the table.
    """
    import dask

    output = catalogue.output
    output.mkdir(parents=True, exist_ok=True)
    table = dict(catalogue.cluster)
    if cluster is not None:
        table["kind"] = cluster
    if gpus is not None:
        table["gpus"] = gpus
    check_table(table)  # before anything moves
    stale = _stale_lenses(catalogue, keep_stale)
    if stale and not keep_stale:
        for lens_id, changed in stale.items():
            _set_aside(output, lens_id, changed)
    todo = [t for t in catalogue.tasks if lens_status(output, t.id) != "done"]
    done_before = len(catalogue.tasks) - len(todo)
    if progress:
        print(
            f"catalogue: {len(catalogue.tasks)} lenses, {done_before} already done, "
            f"{len(todo)} to fit; results in {output}",
            flush=True,
        )
    if todo:
        pin = _gpu_pin(table, catalogue.backend, todo)
        cores = os.cpu_count() or 1
        n_workers = workers or table.get("workers")
        threads = threads_per_worker or table.get("threads_per_worker", 1)
        numba_threads = _numba_share(table, cores, n_workers, threads)
        with dask.config.set({"distributed.scheduler.allowed-failures": retries}):
            client, owned = start_client(table, n_workers, threads)
            try:
                if pin is not None:  # first: before the warm-up loads JAX in the workers
                    client.register_plugin(pin)
                _run(client, catalogue, todo, numba_threads, retries, plot, progress, done_before)
            finally:
                # a worker still in numba's threads is killed at close; that is expected
                logging.getLogger("distributed.nanny").setLevel(logging.ERROR)
                client.close()
                if owned is not None:
                    owned.close()
    result = build_table(catalogue, stale if keep_stale else {})
    files = write_table(result, output)
    if plot:
        files.update(plot_catalogue(catalogue, result))
    if progress:
        failed = [r for r in result if r["status"] == "failed"]
        print(f"catalogue: table in {files['csv']} and {files['parquet']}", flush=True)
        if failed:
            print(f"catalogue: {len(failed)} of {len(result)} lenses failed:", flush=True)
            for r in failed:
                print(f"  {r['id']}: {r['error']} (log: {r['log']})", flush=True)
    return result


def _check_jax_backend(backend: str | None, todo: list[LensTask]) -> None:
    """Workers on GPUs fit with JAX: a lens on another backend would leave its GPU idle.
    ``backend``: the catalogue's, which replaces the lenses' own."""
    for task in todo:
        backend_of = backend or task.config.get("backend", "numba")
        if backend_of != "jax":
            raise ClusterError(
                f"[cluster].gpus: lens {task.id} fits on the {backend_of} backend, which runs on "
                'CPUs only; set backend = "jax" in the template or the catalogue, or pass '
                "--backend jax"
            )


def _gpu_pin(table: dict, backend: str | None, todo: list[LensTask]) -> PinGPU | None:
    """The plugin that pins each worker to its GPU (None without ``gpus``): a batch job's
    ``processes`` workers share its GPUs out; a dask-cuda worker has its own GPU first.
    Refuses lenses that would not fit on the GPUs (:func:`_check_jax_backend`)."""
    if not table.get("gpus"):
        return None
    _check_jax_backend(backend, todo)
    kind = table.get("kind", "local")
    return PinGPU(table["processes"] if kind in ("slurm", "pbs") else 1)


def _set_aside(output: Any, lens_id: str, changed: Any) -> None:
    """Keep a stale lens's folder aside until its refit finishes; its search's checkpoint is
    copied into the new partial folder where the change lets the search go on from it."""
    import shutil

    from twinlens.job import freshness

    finished, partial = lens_folders(output, lens_id)
    resumes = freshness.checkpoint_survives(finished, changed)
    names = freshness.checkpoint_files(finished)
    aside = freshness.set_aside(finished)
    if resumes and not partial.exists():
        partial.mkdir(parents=True)
        for name in names:
            if (aside / name).is_file():
                shutil.copyfile(aside / name, partial / name)


def _stale_lenses(catalogue: Catalogue, keep: bool) -> dict[str, Any]:
    """The finished lenses whose fit was defined otherwise than the catalogue defines it now,
    with how (:class:`~twinlens.job.freshness.Staleness`); says so in one line, even when
    quiet: results the user has are about to move (or stay, ``keep``, out of date)."""
    from twinlens.job.config import ConfigError, parse_config
    from twinlens.job.freshness import fingerprint_of, staleness

    stale: dict[str, Any] = {}
    unchecked: dict[str, str] = {}
    for task in catalogue.tasks:
        if lens_status(catalogue.output, task.id) != "done":
            continue
        try:
            config = parse_config(task.config, task.base, catalogue.backend)
        except ConfigError as err:  # data this process cannot read: the result stands, said so
            unchecked[task.id] = str(err)
            continue
        changed = staleness(lens_folders(catalogue.output, task.id)[0], fingerprint_of(config))
        if changed:
            stale[task.id] = changed
    if unchecked:
        first = next(iter(unchecked.items()))
        print(
            f"catalogue: {len(unchecked)} finished lens(es) kept unchecked: their data cannot be "
            f"read here to compare with their fit (lens {first[0]}: {first[1]})",
            flush=True,
        )
    if stale:
        parts = list(dict.fromkeys(p for s in stale.values() for p in s.parts))
        shown = ", ".join(parts[:3]) + (f" and {len(parts) - 3} more" if len(parts) > 3 else "")
        print(
            f"catalogue: {len(stale)} lens{'es' if len(stale) > 1 else ''} changed since "
            f"{'their' if len(stale) > 1 else 'its'} fit ({shown}): "
            f"{'keeping their results, marked stale' if keep else 'refitting'}",
            flush=True,
        )
    return stale


def _run(
    client: Any,
    catalogue: Catalogue,
    todo: list[LensTask],
    numba_threads: int | None,
    retries: int,
    plot: bool,
    progress: bool,
    done_before: int,
) -> None:
    from distributed import as_completed

    backend = catalogue.backend
    client.register_plugin(WarmUp(todo[0], backend, numba_threads))
    if progress:
        print(f"catalogue: Dask dashboard at {client.dashboard_link}", flush=True)
    futures = [
        client.submit(
            fit_lens,
            task,
            str(catalogue.output),
            backend,
            plot,
            numba_threads,
            key=f"lens-{task.id}",
            retries=retries,
            pure=False,
        )
        for task in todo
    ]
    began = time.monotonic()
    counts = {"done": 0, "failed": 0, "lost": 0}
    seconds: list[float] = []
    total = len(todo)
    for future in as_completed(futures):
        try:
            row = future.result()
            counts[row["status"]] += 1
            if row["status"] == "done" and not row["skipped"]:
                seconds.append(row["seconds"])
        except Exception as err:  # the worker died more than ``retries`` times
            counts["lost"] += 1
            row = {"id": future.key, "status": "lost", "error": f"{type(err).__name__}: {err}"}
        if progress:
            finished = counts["done"] + counts["failed"] + counts["lost"]
            elapsed = time.monotonic() - began
            rate = counts["done"] * 3600.0 / max(elapsed, 1e-9)
            left = (total - finished) * elapsed / finished if finished else float("inf")
            slots = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
            running = min(total - finished, slots)
            note = "" if row["status"] == "done" else f"  [{row['id']}: {row['status']}]"
            print(
                f"catalogue: {done_before + counts['done']} done, {counts['failed']} failed, "
                f"{running} running, {total - finished - running} waiting; "
                f"{rate:.1f} lenses/hour, about {_clock(left)} left{note}",
                flush=True,
            )
    if progress:
        _report_compile(client, seconds)


def _compile_seconds(dask_worker: Any) -> float | None:
    return getattr(dask_worker, "twinlens_compile_seconds", None)


def _report_compile(client: Any, seconds: list[float]) -> None:
    """Say what compiling cost each worker against what a lens's fit cost."""
    import numpy as np

    compiled = [v for v in client.run(_compile_seconds).values() if v is not None]
    if compiled and seconds:
        print(
            f"catalogue: compiling took {np.median(compiled):.1f} s per worker (median of "
            f"{len(compiled)}), a lens's fit {np.median(seconds):.1f} s (median of "
            f"{len(seconds)})",
            flush=True,
        )

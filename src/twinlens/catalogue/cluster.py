"""Where a catalogue's fits run: a Dask cluster, from a ``[cluster]`` table or the command line.

- ``local`` (the default): a ``distributed.LocalCluster`` of worker *processes* on this
  machine, one thread each (numba's threads work inside a fit), as many as the cores allow.
- ``tcp://HOST:PORT``: an existing Dask scheduler.
- ``slurm`` / ``pbs``: ``dask_jobqueue.SLURMCluster`` / ``PBSCluster``, by default one
  single-threaded worker process per core of each batch job (``processes`` changes that),
  scaled adaptively between ``minimum_jobs`` and ``maximum_jobs``.

The ``[cluster]`` table's keys for a batch scheduler: ``cores``, ``memory`` (``"4GB"``),
``walltime`` (``"02:00:00"``), ``queue``, ``account``, ``job_extra_directives`` (a list of
``#SBATCH``/``#PBS`` options), ``job_script_prologue`` (shell lines run before the worker,
e.g. ``module load``), ``local_directory``, ``processes``, ``minimum_jobs`` and ``maximum_jobs``.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["CLUSTER_KINDS", "ClusterError", "jobqueue_cluster", "start_client"]

CLUSTER_KINDS = ("local", "slurm", "pbs")
_JOBQUEUE_KEYS = (
    "cores",
    "memory",
    "walltime",
    "queue",
    "account",
    "job_extra_directives",
    "job_script_prologue",
    "local_directory",
    "processes",
    "interface",
)
_TABLE_KEYS = (
    "kind",
    "workers",
    "threads_per_worker",
    "minimum_jobs",
    "maximum_jobs",
    *_JOBQUEUE_KEYS,
)


class ClusterError(ValueError):
    """A cluster that cannot be started as asked; the message names the setting."""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def check_table(table: dict) -> None:
    unknown = sorted(set(table) - set(_TABLE_KEYS))
    if unknown:
        raise ClusterError(
            f"[cluster]: unknown entries {', '.join(unknown)}; allowed: {', '.join(_TABLE_KEYS)}"
        )
    kind = table.get("kind", "local")
    if not isinstance(kind, str) or not (kind in CLUSTER_KINDS or kind.startswith("tcp://")):
        raise ClusterError(
            f"[cluster].kind = {kind!r}: choose local, slurm, pbs or tcp://HOST:PORT"
        )
    for key in (
        "workers",
        "threads_per_worker",
        "minimum_jobs",
        "maximum_jobs",
        "cores",
        "processes",
    ):
        value = table.get(key)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            raise ClusterError(f"[cluster].{key} = {value!r}: expected a whole number >= 1")


def jobqueue_cluster(table: dict) -> Any:
    """A ``SLURMCluster`` or ``PBSCluster`` built from the ``[cluster]`` table (not started:
    ``.job_script()`` shows the script it would submit)."""
    check_table(table)
    kind = table.get("kind")
    if kind not in ("slurm", "pbs"):
        raise ClusterError(f"[cluster].kind = {kind!r}: a batch-scheduler cluster is slurm or pbs")
    try:
        import dask_jobqueue
    except ImportError as err:
        raise ClusterError(
            'running on SLURM or PBS needs dask-jobqueue: pip install "twinlens[cluster]"'
        ) from err
    missing = [k for k in ("cores", "memory") if k not in table]
    if missing:
        raise ClusterError(f"[cluster] with kind = {kind!r} needs {', '.join(missing)}")
    if table.get("processes", 1) > table["cores"]:
        raise ClusterError(
            f"[cluster].processes = {table['processes']} is more than cores = {table['cores']}: "
            "each worker process needs at least one core"
        )
    options = {k: table[k] for k in _JOBQUEUE_KEYS if k in table}
    # dask-jobqueue runs `cores` Dask threads per job, split among `processes` worker
    # processes: every core runs a fit of its own. One single-threaded process per core keeps
    # the fits' Python (planning, FFTs, the solve) off one another's interpreter lock.
    options.setdefault("processes", options["cores"])
    cls = dask_jobqueue.SLURMCluster if kind == "slurm" else dask_jobqueue.PBSCluster
    return cls(**options)


def start_client(
    table: dict, workers: int | None = None, threads_per_worker: int | None = None
) -> tuple[Any, Any]:
    """A ``distributed.Client`` (and the cluster it owns, or None for an existing scheduler)
    as the ``[cluster]`` table and the command line's overrides ask."""
    check_table(table)
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise ClusterError(
            'running a catalogue needs Dask distributed: pip install "twinlens[cluster]"'
        ) from err
    kind = table.get("kind", "local")
    if kind.startswith("tcp://"):
        return Client(kind), None
    if kind == "local":
        threads = threads_per_worker or table.get("threads_per_worker", 1)
        n = workers or table.get("workers") or max(1, _cores() // threads)
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=threads,
            processes=True,
            dashboard_address=":0",
        )
        return Client(cluster), cluster
    cluster = jobqueue_cluster(table)
    low = table.get("minimum_jobs", 1)
    high = table.get("maximum_jobs", workers or max(low, 1))
    cluster.adapt(minimum_jobs=low, maximum_jobs=max(low, high))
    return Client(cluster), cluster

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
e.g. ``module load``), ``local_directory``, ``processes``, ``minimum_jobs`` and ``maximum_jobs``;
on PBS, ``resource_spec`` (the ``-l`` line: ``"select=1:ncpus=16:ngpus=4:mem=64GB"``).

``gpus = true`` runs one worker per GPU, pinned to it (:mod:`twinlens.catalogue.gpus`): on
``local``, dask-cuda's ``LocalCUDACluster`` (``gpus = [0, 2]``: those GPUs, by index or
UUID); on ``slurm``/``pbs``, ``processes`` workers per job, one per GPU the job asks for.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["CLUSTER_KINDS", "ClusterError", "cuda_cluster", "jobqueue_cluster", "start_client"]

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
    "resource_spec",
)
_TABLE_KEYS = (
    "kind",
    "workers",
    "threads_per_worker",
    "minimum_jobs",
    "maximum_jobs",
    "gpus",
    *_JOBQUEUE_KEYS,
)
CUDA_INSTALL_HINT = "pip install dask-cuda"


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
    _check_gpus(table.get("gpus", False), kind)
    if "resource_spec" in table and kind != "pbs":
        raise ClusterError(
            f"[cluster].resource_spec is PBS's -l line; with kind = {kind!r} give the job's "
            "resources in job_extra_directives"
        )


def _check_gpus(gpus: Any, kind: str) -> None:
    """``gpus``: true or false, or on a local cluster a list of GPUs (indices >= 0 or UUIDs)."""
    if isinstance(gpus, bool):
        return
    if not isinstance(gpus, list) or not gpus or not all(_is_gpu_name(g) for g in gpus):
        raise ClusterError(
            f"[cluster].gpus = {gpus!r}: expected true, false, or a list of GPUs (indices >= 0, "
            'or UUIDs such as "GPU-..." or "MIG-...")'
        )
    if kind != "local":
        raise ClusterError(
            f'[cluster].gpus = {gpus!r}: a list of GPUs is for kind = "local"; with kind = '
            f"{kind!r} the workers' GPUs are those their node or job gives: use gpus = true"
        )


def _is_gpu_name(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and value.startswith(("GPU-", "MIG-"))


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
    if table.get("gpus") and "processes" not in table:
        raise ClusterError(
            f"[cluster] with kind = {kind!r} and gpus = true needs processes: the number of "
            "GPUs each job asks for (one worker per GPU)"
        )
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
    threads = threads_per_worker or table.get("threads_per_worker", 1)
    if kind == "local" and table.get("gpus"):
        cluster = cuda_cluster(table["gpus"], workers or table.get("workers"), threads)
        return Client(cluster), cluster
    if kind == "local":
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


def cuda_cluster(gpus: bool | list, workers: int | None = None, threads_per_worker: int = 1) -> Any:
    """dask-cuda's ``LocalCUDACluster``: one worker process per GPU of this machine (of
    ``gpus`` when it lists them; ``workers``, when given, the first that many), each given
    every GPU with its own first; the catalogue runner then pins each worker to its own
    (:class:`~twinlens.catalogue.gpus.PinGPU`)."""
    try:
        import dask_cuda
    except ImportError as err:
        raise ClusterError(
            f"[cluster].gpus: one worker per GPU needs dask-cuda: {CUDA_INSTALL_HINT}"
        ) from err
    devices = ",".join(map(str, gpus)) if isinstance(gpus, list) else None
    return dask_cuda.LocalCUDACluster(
        CUDA_VISIBLE_DEVICES=devices,
        n_workers=workers,
        threads_per_worker=threads_per_worker,
        dashboard_address=":0",
    )

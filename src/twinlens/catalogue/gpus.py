"""One Dask worker per GPU: each worker sees its own GPU and no other.

A catalogue run with ``[cluster] gpus = true`` (``twinlens batch --gpus``) starts one worker
process per GPU (:mod:`twinlens.catalogue.cluster`). The workers start with a list of GPUs in
``CUDA_VISIBLE_DEVICES``:

- dask-cuda (``LocalCUDACluster``, ``dask cuda worker``) gives each worker every GPU of the
  node, its own first (``2,3,0,1`` for the third of four);
- the workers of a SLURM or PBS job all inherit the job's GPUs (``4,5,6,7``), and the ``k``-th
  worker process of a job is named ``<job>-<k>`` by ``dask worker --nworkers``.

JAX opens every GPU it sees (reserving most of each one's memory) and shares a batch out over
all of them (:mod:`twinlens.likelihood.sharding`), so N workers that each see N GPUs would
fight over every one. :class:`PinGPU` narrows each worker's ``CUDA_VISIBLE_DEVICES`` to its
own GPU when the worker starts, before any task loads JAX: the CUDA driver reads the variable
once, when JAX starts its GPU backend, and JAX then sees that one GPU as its device 0.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

__all__ = ["PinGPU", "pinned_device", "visible_devices", "worker_slot"]

try:
    from distributed import WorkerPlugin
except ImportError:  # run_catalogue says what to install
    WorkerPlugin = object  # type: ignore[assignment,misc]

#: the variable the CUDA driver reads when JAX starts its GPU backend
VISIBLE = "CUDA_VISIBLE_DEVICES"


def visible_devices(value: str | None) -> list[str]:
    """The GPUs named by a ``CUDA_VISIBLE_DEVICES`` value (indices or UUIDs), in its order;
    empty when it is unset or empty."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def worker_slot(name: Any, per_job: int) -> int:
    """A worker's place among the ``per_job`` worker processes sharing one list of GPUs: 0
    when it is alone (a dask-cuda worker, whose own GPU is first in its list), else the
    ``k`` that ends its name ``<job>-<k>``."""
    if not (isinstance(per_job, int) and per_job >= 1):
        raise ValueError(f"per_job must be a whole number >= 1, got {per_job!r}")
    if per_job == 1:
        return 0
    found = re.fullmatch(r".*-(\d+)", str(name))
    if found is None:
        raise ValueError(
            f"worker {name!r}: one of {per_job} workers per job, but its name does not end in "
            "-<k> (its place in the job), so its GPU cannot be chosen"
        )
    return int(found.group(1))


def pinned_device(visible: list[str], slot: int) -> str:
    """The GPU that the worker in ``slot`` keeps of the ``visible`` ones; with none listed
    (every GPU of the node is visible), the GPU whose index is ``slot``."""
    if not visible:
        return str(slot)
    if slot >= len(visible):
        raise ValueError(
            f"worker {slot} of a job sees only {len(visible)} GPUs ({','.join(visible)}): give "
            "[cluster].processes as the number of GPUs each job asks for, one worker per GPU"
        )
    return visible[slot]


def _jax_backend_started() -> bool:
    """Whether JAX has started a backend in this process (after which the CUDA driver has
    read ``CUDA_VISIBLE_DEVICES``); False while JAX is not imported."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    started = getattr(bridge, "backends_are_initialized", None)
    return bool(started()) if started is not None else "jax" in sys.modules


class PinGPU(WorkerPlugin):
    """A Dask worker plugin: on a worker's start, narrow ``CUDA_VISIBLE_DEVICES`` to the one
    GPU of that worker (:func:`pinned_device` of its :func:`worker_slot`), before JAX starts
    there. ``per_job``: the worker processes of one batch job (1 for dask-cuda's workers).
    The GPU is kept on the worker as ``twinlens_gpu``."""

    name = "twinlens-pin-gpu"

    def __init__(self, per_job: int = 1) -> None:
        if not (isinstance(per_job, int) and not isinstance(per_job, bool) and per_job >= 1):
            raise ValueError(f"PinGPU.per_job must be a whole number >= 1, got {per_job!r}")
        self.per_job = per_job

    def setup(self, worker: Any) -> None:
        """Keep ``worker``'s own GPU visible, and no other; a worker that cannot be pinned is
        closed (with its nanny, which would start it again into the same error), saying why."""
        try:
            device = self._device(worker)
        except Exception as err:
            # Dask stops the run for a worker present when the plugin is registered; one that
            # joins later (a batch job's) only logs the error, and would fit on every GPU
            worker.loop.add_callback(worker.close, nanny=True, reason=f"{self.name}: {err}")
            raise
        os.environ[VISIBLE] = device
        worker.twinlens_gpu = device

    def _device(self, worker: Any) -> str:
        if _jax_backend_started():
            raise RuntimeError(
                f"worker {worker.name!r}: JAX started before its GPU was chosen, and sees "
                f"{VISIBLE}={os.environ.get(VISIBLE)!r}; start the workers without anything "
                "that runs JAX first (a preload script)"
            )
        visible = visible_devices(os.environ.get(VISIBLE))
        return pinned_device(visible, worker_slot(worker.name, self.per_job))

    def teardown(self, worker: Any) -> None:
        """Nothing to undo: the worker process ends with its GPU."""

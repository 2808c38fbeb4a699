"""A JAX batch chunk's rows shared out over every local device.

With more than one local JAX device (``jax.local_devices()``: the GPUs of a node, or CPU
devices forced with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``), a chunk of
vectors is padded to a multiple of the device count, placed with a
:class:`jax.sharding.NamedSharding` over a one-axis :class:`jax.sharding.Mesh` (its rows split
evenly), and evaluated by ``shard_map``: each device runs the one-device program's body on its
own rows, with no communication between devices, so every row's value is computed by the
same operations as on one device. With one device nothing here is used.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial
from typing import Any

import numpy as np

__all__ = ["ROWS", "local_devices", "pad_rows", "sharded_program"]

#: the mesh axis that a chunk's rows are split along
ROWS = "rows"


def local_devices() -> tuple:
    """The JAX devices of the default backend in this process, which a chunk is shared out over."""
    from twinlens.backend import jax_runtime

    return tuple(jax_runtime.load().local_devices())


def pad_rows(values: np.ndarray, reference: np.ndarray, multiple: int) -> np.ndarray:
    """``values (n, n_params)`` padded with copies of the valid ``reference`` vector up to a
    multiple of ``multiple`` rows (the padded rows' results are dropped by the caller)."""
    if not (isinstance(multiple, int) and multiple >= 1):
        raise ValueError(f"multiple must be an integer >= 1, got {multiple!r}")
    missing = -values.shape[0] % multiple
    if not missing:
        return values
    return np.concatenate([values, np.repeat(reference[None, :], missing, axis=0)])


def _shard_map(jax: Any) -> Callable[..., Any]:
    """``shard_map`` with its replication checks off (no collective runs inside, and some of
    the likelihood's primitives, a host callback among them, have no replication rule):
    ``jax.shard_map`` where JAX has it, its experimental home before."""
    public = getattr(jax, "shard_map", None)
    if public is not None:
        return partial(public, check_vma=False)
    from jax.experimental.shard_map import shard_map

    return partial(shard_map, check_rep=False)


@cache
def sharded_program(rows: Callable[[Any, int, Any], Any], devices: tuple) -> tuple[Any, Any]:
    """``(program, sharding)``: ``program(likelihood, vectors, width, memo_on)`` runs
    ``rows(likelihood, width, local_vectors)`` on each device's share of ``vectors`` (placed
    with ``sharding``), its output's rows split over the devices as the input's are. Static as
    the one-device program is: one compile per likelihood, chunk shape and device set."""
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices, dtype=object), (ROWS,))
    split = PartitionSpec(ROWS)

    def run(likelihood: Any, vectors: Any, width: int, memo_on: bool) -> Any:
        local = partial(rows, likelihood, width)
        return _shard_map(jax)(local, mesh=mesh, in_specs=split, out_specs=split)(vectors)

    return jax.jit(run, static_argnums=(0, 2, 3)), NamedSharding(mesh, split)

"""A ``vmap`` that runs a function's batch one member after another.

Two reasons to loop rather than batch: a batched kernel whose working set leaves the cache (the
border searches of :mod:`twinlens.inversion.border`), and jaxlib's CPU LAPACK kernels, whose
batches can deadlock XLA's thread pool (:mod:`twinlens.backend.jax_linalg`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twinlens.backend import jax_runtime

__all__ = ["one_member_at_a_time"]


def one_member_at_a_time(function: Callable[..., Any], on_gpu: str = "loop") -> Any:
    """``function`` of arrays, whose ``vmap`` loops over the batch with ``lax.map``.

    ``on_gpu="vmap"`` keeps the ordinary batching rule where JAX's default backend is not the
    CPU. The loop is not differentiable (a ``custom_vmap`` function has no transpose): hold its
    inputs with ``stop_gradient`` or give the caller a custom VJP."""
    jax = jax_runtime.load()
    lax = jax.lax
    looped = jax.custom_batching.custom_vmap(function)

    @looped.def_vmap
    def _rule(size: int, batched: Any, *args: Any) -> Any:
        flags = list(batched)
        if on_gpu == "vmap" and jax.default_backend() != "cpu":
            axes = [0 if b else None for b in flags]
            out = jax.vmap(function, in_axes=axes)(*args)
        else:
            members = tuple(a for a, b in zip(args, flags, strict=True) if b)

            def one(member: Any) -> Any:
                it = iter(member)
                return looped(*(next(it) if b else a for a, b in zip(args, flags, strict=True)))

            out = lax.map(one, members)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return looped

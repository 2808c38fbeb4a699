"""Backend names, the process default, and how a call picks its backend.

Three backends compute the same math:

``numba``
    compiled loops over points on the CPU (the default);
``jax``
    traced, jit- and vmap-able code for CPUs and GPUs;
``numpy``
    plain numpy and scipy: the reference the other two are held to, and the fallback where
    numba cannot run.

A call's backend is, in order: the ``backend=`` argument; JAX when any input is a JAX array
or tracer; the process default (:func:`set_backend`, else the ``TWINLENS_BACKEND``
environment variable, else ``numba``).
"""

from __future__ import annotations

from typing import Any

from twinlens.backend.concrete import any_jax
from twinlens.environment import env_choice

BACKENDS: tuple[str, ...] = ("numba", "jax", "numpy")
ENV_BACKEND = "TWINLENS_BACKEND"

_default: str | None = None


def check_backend(name: Any) -> str:
    """Return ``name`` if it is a backend name, else raise ValueError listing the choices."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    return name


def set_backend(name: str | None) -> None:
    """Set the process-wide default backend (``None`` restores the environment's choice)."""
    global _default
    _default = None if name is None else check_backend(name)


def get_backend() -> str:
    """The process default backend: :func:`set_backend`, else ``TWINLENS_BACKEND``, else numba."""
    if _default is not None:
        return _default
    # a bad value raises EnvironmentVariableError, which the command line shows as one line
    return env_choice(ENV_BACKEND, BACKENDS, "numba")


def resolve_backend(backend: str | None, *inputs: Any) -> str:
    """The backend for one call, given its ``backend=`` argument and its inputs."""
    if backend is not None:
        check_backend(backend)
        if backend != "jax" and any_jax(*inputs):
            raise TypeError(
                f"backend={backend!r} was asked for, but an input is a JAX array or tracer; "
                "pass backend='jax' (or leave backend unset) for JAX inputs"
            )
        return backend
    if any_jax(*inputs):
        return "jax"
    return get_backend()


def set_num_threads(n: int) -> None:
    """Threads used by numba's parallel kernels (at most ``NUMBA_NUM_THREADS``)."""
    from twinlens.backend import numba_runtime

    numba_runtime.set_num_threads(n)


def get_num_threads() -> int:
    """Threads numba's parallel kernels will use."""
    from twinlens.backend import numba_runtime

    return numba_runtime.get_num_threads()


def array_module(backend: str) -> Any:
    """``numpy`` for the numpy and numba backends, ``jax.numpy`` (loaded, configured) for JAX."""
    if check_backend(backend) == "jax":
        from twinlens.backend import jax_runtime

        return jax_runtime.load().numpy
    import numpy

    return numpy

"""JAX set-up, done the first time the JAX backend is asked for.

* float64 is switched on (``jax_enable_x64``) unless ``TWINLENS_JAX_X64=0`` opts into float32;
* ``TWINLENS_JAX_CACHE_DIR`` turns on JAX's persistent compilation cache in that folder (off by
  default; the test suite and ``twinlens validate`` turn it on), capped at
  ``TWINLENS_JAX_CACHE_MAX_MB`` megabytes (default 1024; the least recently used programs are
  dropped first; ``0`` for no cap). The cap needs the ``filelock`` package, which
  ``twinlens[jax]`` installs; without it the folder is not capped;
* every value-identity class is registered as a JAX pytree (see :mod:`twinlens.fields`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from twinlens.environment import env_number, env_switch
from twinlens.user_warnings import warn_user

INSTALL_HINT = "pip install 'twinlens[jax]' (or 'twinlens[gpu]' for NVIDIA GPUs)"

_loaded: ModuleType | None = None
_on_load: list[Callable[[ModuleType], None]] = []


def x64_requested() -> bool:
    """Whether JAX is to run in double precision (``TWINLENS_JAX_X64``, default on)."""
    return env_switch("TWINLENS_JAX_X64", True)


def on_load(hook: Callable[[ModuleType], None]) -> None:
    """Run ``hook(jax)`` when JAX is loaded (now, if it already is)."""
    if _loaded is not None:
        hook(_loaded)
    else:
        _on_load.append(hook)


def is_loaded() -> bool:
    """Whether JAX has been loaded and configured by :func:`load`."""
    return _loaded is not None


def load() -> ModuleType:
    """Import and configure jax once; raise ImportError naming the install command if absent."""
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        import jax
    except ImportError as err:
        raise ImportError(
            f"the JAX backend needs jax, which is not installed: {INSTALL_HINT}"
        ) from err
    if x64_requested():
        jax.config.update("jax_enable_x64", True)
    cache_dir = os.environ.get("TWINLENS_JAX_CACHE_DIR")
    if cache_dir:
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        cap = cache_cap_bytes()
        if cap is not None:
            _stamp_unstamped_programs(cache_dir)
            jax.config.update("jax_compilation_cache_max_size", cap)
    _loaded = jax
    while _on_load:
        _on_load.pop(0)(jax)
    return jax


DEFAULT_CACHE_MAX_MB = 1024


def cache_cap_bytes() -> int | None:
    """The on-disk program cache's cap in bytes (``TWINLENS_JAX_CACHE_MAX_MB``), or None for
    no cap: ``0``, or ``filelock`` missing (JAX's eviction locks the folder with it)."""
    megabytes = env_number(
        "TWINLENS_JAX_CACHE_MAX_MB", DEFAULT_CACHE_MAX_MB, 0.0, "a number of megabytes >= 0"
    )
    try:
        import filelock  # noqa: F401
    except ImportError:
        return None
    return int(megabytes * 2**20) if megabytes > 0 else None


def _stamp_unstamped_programs(cache_dir: str) -> None:
    """Give each program stored without a cap (JAX then keeps no access times) the oldest
    access time: JAX's eviction reads one per program and fails on a folder without them, and
    the old programs are the first to go."""
    from pathlib import Path

    folder = Path(cache_dir)
    if not folder.is_dir():
        return
    for program in folder.glob("*-cache"):
        stamp = program.with_name(program.name.removesuffix("-cache") + "-atime")
        if not stamp.exists():
            try:
                stamp.write_bytes((0).to_bytes(8, "little"))
            except OSError:  # a read-only folder: JAX then reads the programs, writes none
                return


_warned_float32 = False


def check_precision(values: Sequence[Any]) -> None:
    """Load JAX, and warn once if float32 JAX arrays arrive while float64 is on.

    Arrays created with ``jax.numpy`` *before* float64 was switched on are float32 (JAX's
    default), and the computation then runs in float32 whatever twinlens asks for. Create JAX
    arrays after the first twinlens JAX call, or call :func:`load` (or set
    ``JAX_ENABLE_X64=1``) before creating them.
    """
    global _warned_float32
    jax = load()
    if _warned_float32 or not x64_requested():
        return
    for v in values:
        if isinstance(v, jax.Array) and v.dtype in (jax.numpy.float32, jax.numpy.complex64):
            _warned_float32 = True
            warn_user(
                "a float32 JAX array was passed while twinlens runs JAX in float64, so this "
                "call computes in float32 (about 1e-7 relative). It was probably created before "
                "float64 was switched on: call twinlens.backend.jax_runtime.load() (or set "
                "JAX_ENABLE_X64=1) before creating JAX arrays",
                UserWarning,
            )
            return

"""numba set-up: import on first use, threads, and an on-disk cache safe for many processes.

Generated kernel modules are written as real files under the cache directory, so numba's own
file-based cache (``cache=True``) works for them: a cluster job that starts hundreds of
processes compiles each kernel once, not once per process.

Environment:

``TWINLENS_CACHE_DIR``
    root of twinlens' caches (default ``$XDG_CACHE_HOME/twinlens`` or ``~/.cache/twinlens``);
``TWINLENS_NUMBA_CACHE``
    ``0`` turns numba's on-disk cache off (kernels are then compiled in every process);
``NUMBA_NUM_THREADS``
    numba's own upper bound on threads; :func:`set_num_threads` chooses below it;
``TWINLENS_MALLOC``
    ``system`` leaves the C allocator as it is (see :func:`keep_freed_memory`);
``GOMP_SPINCOUNT``
    how long a waiting OpenMP thread spins before it sleeps (numba's ``omp`` threading layer):
    set to :data:`SPIN_COUNT` on import unless already set (see there).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from twinlens.environment import env_choice, env_switch
from twinlens.user_warnings import warn_user

if TYPE_CHECKING:
    import numpy as np

#: libgomp's spin before a waiting thread sleeps. Its default (300,000) keeps a core busy while
#: a thread waits; on a machine shared with other work a parallel call then waits for cores the
#: spinning threads hold, and two threads ran slower than one (docs/benchmarks.rst, "Point-
#: source likelihood on one thread and two"). A user's own setting is kept.
SPIN_COUNT = "10000"
os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)

_threads: int | None = None
_tmp_dir: str | None = None
_malloc_tuned = False
_umask_lock = threading.Lock()

#: glibc ``mallopt`` parameters: blocks above the mmap threshold are mapped fresh for each
#: allocation, and the heap top above the trim threshold is handed back at each free.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEEP_BYTES = 1 << 30


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks of up to 1 GiB for reuse instead of returning them to the
    system (Linux with glibc only; once per process; ``TWINLENS_MALLOC=system`` opts out).

    A likelihood evaluation allocates and frees arrays of about 10 MB (160,000 points times a
    batch chunk). By default glibc maps each one fresh and returns it at free, so every
    evaluation pays the page faults again; with freed memory kept, W5's batches ran faster and
    no longer varied with the allocation pattern. The cost is that the process keeps its peak
    heap. Returns whether the setting was applied."""
    global _malloc_tuned
    # the variable first: a bad value is reported even once the allocator is tuned
    if env_choice("TWINLENS_MALLOC", ("system",), "") == "system" or _malloc_tuned:
        return _malloc_tuned
    if not sys.platform.startswith("linux") or any(k.startswith("MALLOC_") for k in os.environ):
        return False  # not glibc, or the user tunes malloc already
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES) and libc.mallopt(
            _M_TRIM_THRESHOLD, 2 * _KEEP_BYTES
        )
    except (OSError, AttributeError):  # another C library
        return False
    _malloc_tuned = bool(ok)
    return _malloc_tuned


def load() -> ModuleType:
    """Import numba (once), keep freed memory for reuse (:func:`keep_freed_memory`) and apply
    the thread count chosen so far."""
    try:
        import numba
    except ImportError as err:  # pragma: no cover - numba is a core dependency
        raise ImportError(
            "the numba backend needs numba: pip install numba (or use backend='numpy')"
        ) from err
    keep_freed_memory()
    if _threads is not None:
        numba.set_num_threads(_threads)
    return numba


def set_num_threads(n: int) -> None:
    """Threads for numba's parallel kernels: an int from 1 to ``NUMBA_NUM_THREADS``."""
    global _threads
    numba = load()
    limit = numba.config.NUMBA_NUM_THREADS
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= limit:
        raise ValueError(f"num_threads must be an int from 1 to {limit} (NUMBA_NUM_THREADS)")
    _threads = n
    numba.set_num_threads(n)


def get_num_threads() -> int:
    """numba's thread count for the calling thread."""
    return load().get_num_threads()


def cache_enabled() -> bool:
    """Whether compiled kernels are cached on disk (``TWINLENS_NUMBA_CACHE``, default on)."""
    return env_switch("TWINLENS_NUMBA_CACHE", True)


def cache_root() -> Path:
    """Root of twinlens' on-disk caches."""
    env = os.environ.get("TWINLENS_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "twinlens"


def generated_dir() -> Path:
    """Folder holding generated kernel modules (and numba's cache files beside them)."""
    global _tmp_dir
    if not cache_enabled():
        if _tmp_dir is None:
            _tmp_dir = tempfile.mkdtemp(prefix="twinlens-numba-")
        return Path(_tmp_dir)
    numba = load()
    tag = f"numba-{numba.__version__}-py{sys.version_info.major}{sys.version_info.minor}"
    return cache_root() / tag


def import_generated(stem: str, source: str) -> ModuleType:
    """Write ``source`` as a module file named from its content, and import it.

    The file name carries a hash of the source, so a changed kernel never meets a stale cache.
    Writing is atomic (temporary file, then rename) and skipped when the file already exists,
    so concurrent processes sharing one cache directory never see a partial file.
    """
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"{stem}_{digest}"
    folder = generated_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        # mkstemp makes the file 0600; a group sharing the cache folder needs the umask's mode
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w") as fh:
            fh.write(source)
        if path.exists():
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    module_name = f"twinlens._generated.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    for value in vars(module).values():
        if getattr(getattr(value, "py_func", None), "__module__", None) == module_name:
            # the module's own jitted functions, not imported ones
            quiet_compiles(value)
            recover_damaged_cache(value)
    return module


def _umask() -> int:
    # Linux reports it without changing it; elsewhere os.umask can only be read by setting it
    # (set and restore under a lock, a moment in which other threads' new files get 022)
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def recover_damaged_cache(dispatcher: Any) -> Any:
    """Make ``dispatcher`` discard an unreadable on-disk cache entry and compile again, and
    return it.

    numba raises from a cache load when an index (``.nbi``) or data (``.nbc``) file is
    truncated or garbled (a full disk, a process killed while copying a cache folder), and
    then fails in every later process that shares the folder. Here such a load warns, removes
    the function's index (numba then sees no entry, compiles, and writes a fresh index and data
    file, each atomically), and returns nothing, which numba reads as "not cached".
    """
    cache = getattr(dispatcher, "_cache", None)
    if cache is None or getattr(cache, "_twinlens_recovers", False):
        return dispatcher
    load = cache.load_overload

    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return load(sig, target_context)
        except Exception as err:  # any unreadable entry is discarded alike
            index = Path(cache._cache_file._index_path)
            warn_user(
                f"twinlens: the numba cache entry of {dispatcher.__name__} in {index.parent} "
                f"could not be read ({type(err).__name__}: {err}); discarding it and compiling "
                "again",
                RuntimeWarning,
            )
            index.unlink(missing_ok=True)
            return None

    cache.load_overload = load_overload
    cache._twinlens_recovers = True
    return dispatcher


def quiet_compiles(dispatcher: Any) -> Any:
    """Silence numba's internal "pedantic" IR check (``NumbaIRAssumptionWarning``) whenever
    ``dispatcher`` compiles, and return it.

    Inlining at numba's IR level trips that check (see
    :func:`twinlens.kernels.compile.compile_quietly`). Filtering around one eager compile is
    not enough: numba compiles again, lazily, for every new argument type at a call (a
    read-only param array, a strided grid), which printed hundreds of lines on a cold cache.
    So the dispatcher's own ``compile``, which every such compile and cache load goes
    through, is wrapped. Other warnings, and the user's own numba functions, are untouched.
    """
    if getattr(dispatcher, "_twinlens_quiet", False):
        return dispatcher
    numba = load()
    from numba.core.compiler_lock import global_compiler_lock

    category = numba.core.errors.NumbaIRAssumptionWarning
    compile_ = dispatcher.compile

    def compile(sig: Any) -> Callable:
        # warnings' filters are process-wide: take numba's compiler lock (re-entrant, and
        # taken by compile anyway) first, so concurrent compiles cannot interleave them
        with global_compiler_lock, warnings.catch_warnings():
            warnings.simplefilter("ignore", category)
            return compile_(sig)

    dispatcher.compile = compile
    dispatcher._twinlens_quiet = True
    return dispatcher


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy), the one kind of per-point input a numba loop sees.

    numba compiles a loop again for each combination of read-only and writeable arguments.
    Inputs arrive as both (a grid's coordinates are read-only, a user's array is not), and a
    loop compiled for one and called with the other compiled a second time (seconds to a
    minute, cold); the loops only read their inputs, so every one is passed read-only."""
    view = a.view()
    view.flags.writeable = False
    return view

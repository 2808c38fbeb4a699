"""Cross-backend validation: every registered kernel, every available backend, one report.

Each kernel is evaluated over generated inputs (each special value of each parameter, random
parameter draws, per-point inputs with every special value and with points tied to the centre)
on every available backend, and each backend is compared with the numpy reference at the
kernel's tolerance.

The default check draws :data:`QUICK_RANDOM` random parameter sets per kernel beside the
special values; ``full=True`` draws :data:`FULL_RANDOM`. Most of a first run is compiling (each
kernel's numba loop, cached on disk afterwards, and its JAX program), which ``jobs`` spreads
over worker processes.
"""

from __future__ import annotations

import difflib
import importlib.util
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from typing import TextIO

import numpy as np

from twinlens.kernels.registry import Kernel, all_kernels, parameter_cases, sample_arguments
from twinlens.kernels.tolerance import compare_outputs
from twinlens.messages import shown

#: Random parameter draws per kernel in the default check and in the full one (``full=True``,
#: ``twinlens validate --full``); every special value of every parameter is checked in both.
QUICK_RANDOM = 2
FULL_RANDOM = 8
#: Worker processes a default ``twinlens validate`` starts at most (each holds its own
#: compiled programs, about a gigabyte at its peak).
MAX_JOBS = 4


@dataclass(frozen=True)
class Row:
    """One line of the report: a kernel, a backend against the reference."""

    kernel: str
    backends: str
    max_rel: float
    max_abs: float
    rtol: float
    atol: float
    passed: bool
    n_values: int
    error: str = ""


def available_backends() -> list[str]:
    """Backends whose packages are importable here (numpy always is)."""
    names = ["numpy"]
    for name in ("numba", "jax"):
        if importlib.util.find_spec(name) is not None:
            names.append(name)
    return names


def validate_kernel(
    kernel: Kernel,
    backends: list[str],
    seed: int = 0,
    n_points: int = 512,
    n_random: int = FULL_RANDOM,
) -> list[Row]:
    """Compare each backend in ``backends`` (other than numpy) with the numpy reference."""
    rng = np.random.default_rng(seed)
    cases = [
        sample_arguments(kernel, rng, n_points, c) for c in parameter_cases(kernel, rng, n_random)
    ]
    others = [b for b in backends if b != "numpy"]
    per_backend: dict[str, list] = {b: [] for b in others}
    outputs: dict[str, list[tuple]] = {b: [] for b in others}
    errors: dict[str, str] = {}
    for args in cases:
        ref = _as_tuple(kernel(*args, backend="numpy"))
        for b in others:
            if b in errors:
                continue
            try:
                out = _as_tuple(kernel(*args, backend=b))
            except Exception as err:  # reported as a failed row, never swallowed silently
                first_line = (str(err).strip().splitlines() or [""])[0]
                errors[b] = f"{type(err).__name__}: {first_line[:160]}"
                continue
            outputs[b].append(out)
            per_backend[b] += compare_outputs(out, ref, kernel.tolerance_for(args))
    if "numba" in others and "jax" in others:  # the headline pair, measured directly
        per_backend["numba vs jax"] = []
        if "numba" not in errors and "jax" not in errors:
            for args, nb, jx in zip(cases, outputs["numba"], outputs["jax"], strict=True):
                per_backend["numba vs jax"] += compare_outputs(nb, jx, kernel.tolerance_for(args))
        others = [*others, "numba vs jax"]
    rows = []
    for b in others:
        got = per_backend[b]
        rows.append(
            Row(
                kernel=kernel.name,
                backends=b if " vs " in b else f"{b} vs numpy",
                max_rel=max((a.max_rel for a in got), default=float("nan")),
                max_abs=max((a.max_abs for a in got), default=float("nan")),
                rtol=kernel.tol.rtol,
                atol=kernel.tol.atol,
                passed=b not in errors and bool(got) and all(a.passed for a in got),
                n_values=sum(a.n for a in got),
                error=errors.get(b, ""),
            )
        )
    return rows


def _release_jax_programs(limit: int = 20_000) -> None:
    # Each compiled XLA program holds memory mappings; validating every kernel compiles
    # hundreds, and a process past the kernel's mapping limit (vm.max_map_count, 65530 by
    # default) crashes in the next compile. Past ``limit`` mappings (Linux reports them), drop
    # the compiled programs: each kernel's are not needed again.
    if "jax" not in sys.modules:
        return
    try:
        with open("/proc/self/maps", "rb") as maps:
            count = sum(1 for _ in maps)
    except OSError:  # not Linux: no such limit to watch
        return
    if count > limit:
        sys.modules["jax"].clear_caches()


def _as_tuple(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


@dataclass(frozen=True)
class Step:
    """Progress after one kernel: ``done`` of ``total`` kernels, that kernel's name and rows,
    and the seconds since :func:`run` started."""

    done: int
    total: int
    kernel: str
    rows: tuple[Row, ...]
    elapsed: float


def select_kernels(names: Sequence[str] | None = None) -> list[Kernel]:
    """The registered kernels named in ``names`` (all when None), by name.

    A name is a kernel's full name (``isothermal.deflections``) or a family, the part before
    the dot (``isothermal``: every ``isothermal.*`` kernel). A name that matches nothing
    raises ``ValueError``, with the closest registered names."""
    kernels = all_kernels()
    if names is None:
        return kernels
    if isinstance(names, str):  # one name, not its letters
        names = [names]
    families = {k.name.split(".")[0] for k in kernels}
    unknown = [n for n in names if n not in families and n not in {k.name for k in kernels}]
    if unknown:
        known = sorted({k.name for k in kernels} | families)
        hints = [
            f"{n!r} (did you mean {', '.join(map(repr, close))}?)" if close else repr(n)
            for n in unknown
            for close in [difflib.get_close_matches(n, known, n=3)]
        ]
        raise ValueError(
            f"no kernel or kernel family named {', '.join(hints)}; families: "
            f"{', '.join(sorted(families))}"
        )
    wanted = set(names)
    return [k for k in kernels if k.name in wanted or k.name.split(".")[0] in wanted]


def worker_jax_cache() -> str | None:
    """The folder where worker processes keep their compiled JAX programs: the one
    ``TWINLENS_JAX_CACHE_DIR`` names, else ``jax`` in twinlens' cache folder; None when
    ``TWINLENS_NUMBA_CACHE=0`` turned twinlens' on-disk caches off.

    Without it a second run compiles every JAX program again (the numba loops are on disk
    already), about half of its time. A worker is a fresh process, so the setting stays in it;
    validating in the calling process (``jobs=1``) uses the folder only where the user's
    ``TWINLENS_JAX_CACHE_DIR`` says so."""
    from twinlens.backend import numba_runtime

    named = os.environ.get("TWINLENS_JAX_CACHE_DIR")
    if named:
        return named
    return str(numba_runtime.cache_root() / "jax") if numba_runtime.cache_enabled() else None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_jobs() -> int:
    """Worker processes for a default run: one per core this process may use, at most
    :data:`MAX_JOBS`."""
    return max(1, min(_cores(), MAX_JOBS))


def run(
    backends: list[str] | None = None,
    seed: int = 0,
    n_points: int = 512,
    *,
    kernels: Sequence[str] | None = None,
    progress: Callable[[Step], object] | None = None,
    full: bool = False,
    jobs: int = 1,
) -> list[Row]:
    """Validate the registered kernels (all, or those ``kernels`` names: see
    :func:`select_kernels`); returns the report rows, in the registry's order.

    ``full`` draws :data:`FULL_RANDOM` random parameter sets per kernel instead of
    :data:`QUICK_RANDOM` (the special values are checked either way). ``jobs`` above 1
    validates in that many worker processes, each kernel's numba loop and JAX program compiled
    in one of them; a kernel the workers do not know (registered in this process only) is
    validated here. The rows are the same for any ``jobs``.

    ``progress``, when given, is called after each kernel with a :class:`Step` (a first run
    takes minutes, compiling; :func:`print_progress` writes one line per step). With several
    jobs the steps come in the order the kernels finish."""
    backends = backends or available_backends()
    chosen = select_kernels(kernels)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive int, got {shown(jobs)}")
    n_random = FULL_RANDOM if full else QUICK_RANDOM
    start = time.perf_counter()
    done: dict[str, list[Row]] = {}

    def record(name: str, rows: list[Row]) -> None:
        done[name] = rows
        if progress is not None:
            elapsed = time.perf_counter() - start
            progress(Step(len(done), len(chosen), name, tuple(rows), elapsed))

    groups = _groups(chosen)
    if jobs > 1 and len(groups) > 1:
        _run_in_workers(groups, backends, seed, n_points, n_random, jobs, record)
    for kernel in chosen:  # everything, serially; what the workers did is skipped
        if kernel.name not in done:
            record(kernel.name, _validate_one(kernel, backends, seed, n_points, n_random))
    return [row for kernel in chosen for row in done[kernel.name]]


def _validate_one(
    kernel: Kernel, backends: list[str], seed: int, n_points: int, n_random: int
) -> list[Row]:
    usable = [b for b in backends if b in kernel.backends]
    missing = [b for b in backends if b not in kernel.backends]
    rows = validate_kernel(kernel, usable, seed=seed, n_points=n_points, n_random=n_random)
    _release_jax_programs()
    rows += [
        Row(kernel.name, f"{b} vs numpy", float("nan"), float("nan"), kernel.tol.rtol,
            kernel.tol.atol, False, 0, error=f"no {b} implementation")
        for b in missing
    ]  # fmt: skip
    return rows


def _groups(kernels: list[Kernel]) -> list[list[Kernel]]:
    """The kernels in groups that one worker validates together, largest group first.

    A group is a family's quantity (``multipole_ell_m3.deflections``, ``_closed`` and
    ``_near_round``): a blended kernel's numba implementation runs its exact forms' loops, and
    in one process those compile once, where two processes would compile them twice at the
    same time. The larger groups are the slower ones, so they start first."""
    by_key: dict[str, list[Kernel]] = {}
    for kernel in kernels:
        family, _, function = kernel.name.partition(".")
        by_key.setdefault(f"{family}.{function.split('_')[0]}", []).append(kernel)
    return sorted(by_key.values(), key=len, reverse=True)


def _run_in_workers(
    groups: list[list[Kernel]],
    backends: list[str],
    seed: int,
    n_points: int,
    n_random: int,
    jobs: int,
    record: Callable[[str, list[Row]], None],
) -> None:
    """Validate ``groups`` in ``jobs`` fresh processes, passing each kernel's rows to
    ``record`` as its group comes back. A kernel a worker does not know, and every kernel of a
    group whose worker died, is left to the caller."""
    # fresh interpreters, not forks: a fork of a process running JAX's or numba's threads
    # can deadlock
    context = multiprocessing.get_context("spawn")
    workers = min(jobs, len(groups))
    # the cores shared out: numba's parallel loops running more threads than cores wait on
    # each other (a small call most of all); a loop's values do not
    # depend on its thread count
    threads = max(1, _cores() // workers)
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(worker_jax_cache(), threads),
    ) as pool:
        pending = {
            pool.submit(_worker, [k.name for k in group], backends, seed, n_points, n_random)
            for group in groups
        }
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                try:
                    results = future.result()
                except BrokenProcessPool:
                    continue  # the caller validates this group in its own process
                for name, rows in results:
                    if rows is not None:
                        record(name, rows)


def _start_worker(jax_cache: str | None, threads: int) -> None:
    if jax_cache:  # read when the worker first loads JAX
        os.environ["TWINLENS_JAX_CACHE_DIR"] = jax_cache
    # OpenMP threads that wait for work sleep instead of spinning on a core another worker
    # compiles on (read when OpenMP starts, at the first parallel loop)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    from twinlens.backend import numba_runtime

    numba_runtime.set_num_threads(min(threads, numba_runtime.load().config.NUMBA_NUM_THREADS))


def _worker(
    names: list[str], backends: list[str], seed: int, n_points: int, n_random: int
) -> list[tuple[str, list[Row] | None]]:
    # runs in a worker process: the built-in kernels are registered on import
    known = {k.name: k for k in all_kernels()}
    return [
        (name, _validate_one(known[name], backends, seed, n_points, n_random))
        if name in known
        else (name, None)
        for name in names
    ]


def print_progress(stream: TextIO | None = None) -> Callable[[Step], None]:
    """A ``progress`` callback for :func:`run` that writes one flushed line per kernel to
    ``stream`` (default: standard error, so a ``--json`` report on standard output stays
    machine-readable)."""

    def write(step: Step) -> None:
        failed = sum(not r.passed for r in step.rows)
        verdict = f"{failed} FAILED" if failed else "pass"
        used = dict.fromkeys(b for r in step.rows for b in r.backends.split(" vs "))
        on = ", ".join(b for b in used if b != "numpy") or "numpy only"
        out = stream if stream is not None else sys.stderr
        print(
            f"validate: {step.done}/{step.total} kernels, {step.kernel} on {on}: {verdict}"
            f" ... {step.elapsed:.0f} s",
            file=out,
            flush=True,
        )

    return write


def format_table(rows: list[Row]) -> str:
    """A fixed-width table for people."""
    head = ("kernel", "backends", "max rel err", "max abs err", "rtol", "atol", "result")
    lines = [
        (
            r.kernel,
            r.backends,
            f"{r.max_rel:.2e}",
            f"{r.max_abs:.2e}",
            f"{r.rtol:.0e}",
            f"{r.atol:.0e}",
            "pass" if r.passed else f"FAIL {r.error}".strip(),
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(out)


def as_dicts(rows: list[Row]) -> list[dict]:
    """The rows as dictionaries (for JSON)."""
    return [asdict(r) for r in rows]

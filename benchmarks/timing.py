"""Shared timing helpers for the benchmarks: medians after warm-up, JAX compile time apart, CPU
time beside wall time, and the machine's load average on every JSON line."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any


def block(x: Any) -> Any:
    """Wait for JAX's asynchronous dispatch (no-op for numpy results)."""
    for leaf in x if isinstance(x, tuple) else (x,):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def first_call(fn: Callable[[], Any]) -> float:
    """Seconds for the first call (compile plus one run)."""
    t0 = time.perf_counter()
    block(fn())
    return time.perf_counter() - t0


def call_times(fn: Callable[[], Any], repeats: int = 7, warmup: int = 2) -> list[float]:
    """Seconds per call for ``repeats`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        block(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - t0)
    return times


def median_time(fn: Callable[[], Any], repeats: int = 7, warmup: int = 2) -> float:
    """Median seconds per call over ``repeats`` calls after ``warmup`` calls."""
    return statistics.median(call_times(fn, repeats, warmup))


def median_and_min_ms(fn: Callable[[], Any], repeats: int = 7, warmup: int = 2) -> dict:
    """``{"median_ms", "min_ms"}`` per call (the minimum shows how much of the median is load
    from other work on the machine)."""
    times = call_times(fn, repeats, warmup)
    return {"median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times)}


def measure(
    fn: Callable[[], Any], repeats: int = 7, warmup: int = 1, per_call: int = 1
) -> dict[str, Any]:
    """Wall and CPU time of ``fn`` after ``warmup`` calls, over ``repeats`` timed calls.

    Returns ``wall_median_ms`` and ``wall_min_ms`` (per call, divided by ``per_call`` when one
    call does ``per_call`` units of work), ``cpu_ms`` (``time.process_time`` of the whole
    process, every thread included, over the timed calls, per call: near ``wall`` times the
    threads in use on an idle machine, below it when other work takes the cores) and ``calls``.
    """
    for _ in range(warmup):
        block(fn())
    times = []
    cpu0 = time.process_time()
    for _ in range(repeats):
        t0 = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - t0)
    cpu = (time.process_time() - cpu0) / repeats
    scale = 1e3 / per_call
    return {
        "wall_median_ms": scale * statistics.median(times),
        "wall_min_ms": scale * min(times),
        "cpu_ms": scale * cpu,
        "calls": repeats,
    }


def compile_estimate(first_call_s: float, timed: dict[str, Any]) -> float:
    """JAX's compile (and trace) seconds: the first call less the fastest steady call (the
    median would carry more of the machine's load into the difference)."""
    return first_call_s - timed["wall_min_ms"] / 1e3


def threading_layer() -> str | None:
    """numba's threading layer (``omp``, ``tbb`` or ``workqueue``), once a parallel kernel has
    run in this process."""
    try:
        import numba

        return numba.threading_layer()
    except (ImportError, ValueError):
        return None


def repeats_for(seconds_per_call: float, budget_s: float, least: int = 3, most: int = 15) -> int:
    """Timed calls that fit in ``budget_s`` seconds, at least ``least`` and at most ``most``."""
    if seconds_per_call <= 0:
        return most
    return max(least, min(most, int(budget_s / seconds_per_call)))


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages (runnable processes; compare with the
    number of cores)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return []


def emit(**fields: Any) -> None:
    """Print one JSON line, with the machine's load average added (``loadavg``)."""
    fields.setdefault("loadavg", load_average())
    print(json.dumps(fields), flush=True)


def run_case_in_fresh_process(
    script: str,
    workload: str,
    case: str,
    quick: bool,
    env: dict | None = None,
    extra: list[str] | None = None,
) -> list[dict]:
    """Run ``script --case case`` in a new interpreter (no compiled program, thread pool or
    cache of one case helps another), print its JSON lines and return them; a failed case
    prints one line with the end of its error. ``extra`` arguments are passed on."""
    command = [sys.executable, script, "--case", case] + (["--quick"] if quick else [])
    command += extra or []
    environment = {**os.environ, **(env or {})}
    out = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    if out.returncode:
        emit(workload=workload, case=case, error=out.stderr.strip().splitlines()[-3:])
        return []
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    for line in lines:
        print(json.dumps(line), flush=True)
    return lines


def speedups(workload: str, lines: list[dict], key: str = "wall_median_ms") -> None:
    """Emit one line: for each of our lines of ``workload``, each peer's ``key`` (time per
    call or per evaluation) over ours; above 1, ours is faster."""
    timed = [ln for ln in lines if key in ln and ln.get("workload") == workload]
    ours = [ln for ln in timed if ln["code"] == "twinlens"]
    theirs = [ln for ln in timed if ln["code"] != "twinlens"]
    if not (ours and theirs):
        return
    table = {o["name"]: {t["name"]: round(t[key] / o[key], 3) for t in theirs} for o in ours}
    emit(workload=workload, case="speedup", speedup=table)


def cases_main(
    script: str,
    workload: str,
    cases: tuple[str, ...],
    run_case: Callable[[str, bool], None],
    summarise: Callable[[list[dict]], None],
    description: str,
) -> None:
    """The command line of a benchmark made of named cases: ``--case NAME`` runs one case in
    this process; otherwise each of ``--cases`` (default: all) runs in a fresh interpreter,
    then ``summarise(lines)`` and a line with the total time."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--case", help="run one case in this process")
    parser.add_argument("--cases", default=",".join(cases), help="comma-separated cases")
    args = parser.parse_args()
    if args.case:
        run_case(args.case, args.quick)
        return
    started = time.perf_counter()
    lines: list[dict] = []
    for case in args.cases.split(","):
        lines += run_case_in_fresh_process(script, workload, case, args.quick)
    summarise(lines)
    emit(workload=workload, case="total", seconds=time.perf_counter() - started)


def side_by_side_arguments(
    description: str, rounds: int, batch: int, batch_help: str
) -> argparse.ArgumentParser:
    """The options every side-by-side benchmark shares: ``--rounds``, ``--batch``,
    ``--no-peers`` and ``--no-jax``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds, help="alternating timing rounds")
    parser.add_argument("--batch", type=int, default=batch, help=batch_help)
    parser.add_argument("--no-peers", action="store_true", help="ours only")
    parser.add_argument("--no-jax", action="store_true", help="numba only")
    return parser


def row_head(row: dict, digits: int) -> str:
    """A table line's first columns: the line's name, its median and least ms per
    evaluation (``digits`` decimals) and its first call's seconds."""
    width = digits + 6
    return (
        f"{row['name']:28s} {row['ms_per_eval']:{width}.{digits}f} "
        f"{row['ms_per_eval_min']:{width}.{digits}f} {row['first_call_s']:8.2f}"
    )

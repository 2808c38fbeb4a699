"""Shared timing helpers for the benchmarks: medians after warm-up, JAX compile time apart."""

from __future__ import annotations

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


def emit(**fields: Any) -> None:
    """Print one JSON line."""
    print(json.dumps(fields), flush=True)


def run_case_in_fresh_process(
    script: str, workload: str, case: str, quick: bool, env: dict | None = None
) -> list[dict]:
    """Run ``script --case case`` in a new interpreter (no compiled program, thread pool or
    cache of one case helps another), print its JSON lines and return them; a failed case
    prints one line with the end of its error."""
    command = [sys.executable, script, "--case", case] + (["--quick"] if quick else [])
    environment = {**os.environ, **(env or {})}
    out = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    if out.returncode:
        emit(workload=workload, case=case, error=out.stderr.strip().splitlines()[-3:])
        return []
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    for line in lines:
        print(json.dumps(line), flush=True)
    return lines

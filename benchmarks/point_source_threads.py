"""The point-source likelihood on numba, one thread against two: the quasar example's objective
(image positions and time delays of a quad, no imaging), batches of vectors near the truth,
evaluated with ``numba.set_num_threads(1)`` and with every thread, alternately in one run.

    python benchmarks/point_source_threads.py [--rounds 5] [--batch 64 256]

Prints one JSON line per batch size and thread count: median and minimum milliseconds per
evaluation and evaluations per second; and per batch size the ratio of one thread's median to
every thread's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from twinlens.backend import numba_runtime
from twinlens.job.config import load_config
from twinlens.job.timedelay import write_quasar_example


def _vectors(objective: object, n: int) -> np.ndarray:
    """``n`` vectors scattered about the model's start (the truth) by 1e-3 of it."""
    start = np.asarray(objective.start, dtype=float)
    rng = np.random.default_rng(0)
    return start * (1.0 + 1e-3 * rng.normal(size=(n, start.size)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 256])
    args = parser.parse_args(argv)
    numba = numba_runtime.load()
    threads = numba.get_num_threads()
    with tempfile.TemporaryDirectory() as tmp:
        objective = load_config(write_quasar_example(Path(tmp))).objective("numba")
    for batch in args.batch:
        _run(objective, numba, threads, batch, args.rounds)
    return 0


def _run(objective: object, numba: object, threads: int, batch: int, rounds: int) -> None:
    vectors = _vectors(objective, batch)
    objective.log_likelihood(vectors)  # compiles
    times: dict[int, list[float]] = {1: [], threads: []}
    for _ in range(rounds):
        for n in times:
            numba.set_num_threads(n)
            t0 = time.perf_counter()
            objective.log_likelihood(vectors)
            times[n].append((time.perf_counter() - t0) / batch)
    numba.set_num_threads(threads)
    for n, per in times.items():
        line = {
            "batch": batch,
            "threads": n,
            "median_ms": 1e3 * statistics.median(per),
            "min_ms": 1e3 * min(per),
            "evaluations_per_s": 1.0 / statistics.median(per),
        }
        print(json.dumps(line), flush=True)
    ratio = statistics.median(times[1]) / statistics.median(times[threads])
    print(json.dumps({"batch": batch, "one_thread_over_all": ratio}), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())

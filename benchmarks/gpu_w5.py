"""W5 batch throughput on a GPU: evaluations per second and memory per evaluation.

W5 is :func:`workloads.w5_likelihood` (``--smoke``: the same model on 20 x 20 pixels with 2 x 2
sub-pixels).

For batches of 64 to 16,384 parameter vectors (float64), one JSON line each: the first call
(compile included), the steady-state time (median of repeats), evaluations per second, the
chunk size the library chose (its memory budget, down to a power of two), and XLA's memory
estimate for one chunk's program divided by its vectors. Stops starting new batches after
``--budget`` seconds (default 270). Run on the GPU machine:

    pip install -e '.[gpu]' && python benchmarks/gpu_w5.py

``--smoke`` runs a tiny version on any machine (to check the script, not to measure).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from timing import call_times, emit
from workloads import jax_chunks_seen, w5_likelihood

from twinlens import memo
from twinlens.backend import jax_runtime
from twinlens.likelihood.batched import _jax_batch, vmap_width

BUDGET_S = 270.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, any machine")
    parser.add_argument("--max-batch", type=int, default=16384)
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds")
    args = parser.parse_args()
    start = time.perf_counter()
    jax = jax_runtime.load()
    device = jax.devices()[0]
    like = w5_likelihood(20, 2) if args.smoke else w5_likelihood(100, 4)
    sizes = (
        [4, 8] if args.smoke else [n for n in (64, 256, 1024, 4096, 16384) if n <= args.max_batch]
    )
    emit(
        workload="W5 GPU",
        case="device",
        platform=device.platform,
        device=str(getattr(device, "device_kind", device)),
        x64=bool(jax.config.jax_enable_x64),
        vmap_width=vmap_width(),
        ray_traced_points=like.dataset.layout.n_points,
        n_params=like.n_params,
        cpus=os.cpu_count(),
    )
    rng = np.random.default_rng(0)
    for n in sizes:
        if time.perf_counter() - start > args.budget:
            emit(workload="W5 GPU", case="batch", batch=n, skipped="time budget")
            continue
        vectors = like.reference + 1e-4 * rng.normal(size=(n, like.n_params))
        t0 = time.perf_counter()
        with jax_chunks_seen() as chunks:  # the chunk the library chose for this batch
            values = like.batch(vectors, "jax")
        first = time.perf_counter() - t0
        chunk = max(chunks)
        steady = float(np.median(call_times(lambda v=vectors: like.batch(v, "jax"), 3, 0)))
        compiled = (
            _jax_batch()
            .lower(like, jax.numpy.zeros((chunk, like.n_params)), vmap_width(), memo.enabled())
            .compile()
        )
        analysis = compiled.memory_analysis()
        per_eval = None
        if analysis is not None:
            per_eval = (analysis.temp_size_in_bytes + analysis.output_size_in_bytes) / chunk
        stats = getattr(device, "memory_stats", lambda: None)() or {}
        emit(
            workload="W5 GPU",
            case="batch",
            batch=n,
            chunk=chunk,
            first_call_s=first,
            median_s=steady,
            evals_per_s=n / steady,
            memory_per_eval_mb=None if per_eval is None else per_eval / 2**20,
            peak_device_gb=stats.get("peak_bytes_in_use", 0) / 2**30,
            finite=int(np.isfinite(values).sum()),
        )


if __name__ == "__main__":
    main()

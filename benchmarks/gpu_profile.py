"""Where one W5 evaluation spends its time on a GPU: ours under ``jit`` and, where installed,
JAXtronomy's, side by side.

For each program, after warm-up calls: the wall time per call of the user's call
(``like(vector, "jax")``), of the compiled program alone on a device-resident vector, and, from
JAX's profiler trace of ``--calls`` calls, the device's busy time per call, the kernels launched
per call and the costliest kernels (device time per call). Then the same for a batch of
``--batch`` vectors (ours: ``like.batch``'s program; JAXtronomy: ``jit(vmap)``). One JSON line
per program.

    python benchmarks/gpu_profile.py            # on the GPU machine
    python benchmarks/gpu_profile.py --smoke    # any machine: checks the script, no device plane
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from timing import emit
from workloads import perturbed, w5_likelihood

from twinlens import memo
from twinlens.backend import jax_runtime


def per_call_us(call: Any, n: int) -> float:
    call()
    call()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - t0) / n * 1e6


def device_profile(jax: Any, call: Any, calls: int) -> dict:
    """Device busy time, kernel count and top kernels per call, from a profiler trace."""
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder):
            for _ in range(calls):
                call()
        files = list(Path(folder).rglob("*.xplane.pb"))
        if not files:
            return {"device_plane": "no trace written"}
        data = jax.profiler.ProfileData.from_file(str(files[0]))
        lines: dict[str, dict] = {}
        # device time and launches by name: per HLO op where XLA names them, else per kernel
        by_op: dict[bool, tuple[collections.Counter, collections.Counter]] = {
            True: (collections.Counter(), collections.Counter()),
            False: (collections.Counter(), collections.Counter()),
        }
        for plane in data.planes:
            if "gpu" not in plane.name.lower():
                continue
            for line in plane.lines:
                events = list(line.events)
                lines[f"{plane.name} | {line.name}"] = {
                    "us_per_call": sum(e.duration_ns for e in events) / calls / 1e3,
                    "events_per_call": len(events) / calls,
                }
                if line.name == "XLA Ops" or line.name.startswith("Stream"):
                    ops, counts = by_op[line.name == "XLA Ops"]
                    for e in events:
                        ops[e.name] += e.duration_ns
                        counts[e.name] += 1
    if not lines:
        return {"device_plane": "none (not a GPU run)"}
    ops, counts = by_op[True] if by_op[True][0] else by_op[False]
    top = [
        {"op": name[:80], "us_per_call": ns / calls / 1e3, "launches": counts[name] / calls}
        for name, ns in ops.most_common(15)
    ]
    return {"lines": lines, "top": top}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny W5, any machine")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="vectors in the batch profiled")
    parser.add_argument("--hlo-dir", help="write each program's optimised HLO here")
    args = parser.parse_args()
    jax = jax_runtime.load()
    like = w5_likelihood(20, 2) if args.smoke else w5_likelihood()
    vector = like.reference.copy()
    from twinlens.likelihood.batched import _jax_batch, _jax_single, vmap_width

    program = _jax_single()
    on_device = jax.device_put(vector)
    memo_on = memo.enabled()

    def compiled_only() -> Any:
        return jax.block_until_ready(program(like, on_device, memo_on))

    if args.hlo_dir:
        text = program.lower(like, on_device, memo_on).compile().as_text()
        Path(args.hlo_dir, "twinlens_w5.hlo.txt").write_text(text)
    emit(
        workload="W5 profile",
        name="twinlens jit",
        device=str(jax.devices()[0]),
        user_call_us=per_call_us(lambda: like(vector, "jax"), 200),
        program_us=per_call_us(compiled_only, 200),
        **device_profile(jax, compiled_only, args.calls),
    )
    n = args.batch
    host_vectors = perturbed(like, n)
    vectors = jax.device_put(host_vectors)
    small = jax.device_put(np.zeros(2))
    device = jax.devices()[0]
    emit(
        workload="W5 profile",
        name="call overheads",
        device_put_us=per_call_us(lambda: jax.block_until_ready(jax.device_put(vector)), 500),
        read_back_us=per_call_us(lambda: np.asarray(small + 1.0), 500),
        memory_stats_us=per_call_us(lambda: getattr(device, "memory_stats", lambda: None)(), 500),
        batch_user_call_us=per_call_us(lambda: like.batch(host_vectors, "jax"), 50),
    )

    def batch_only() -> Any:
        return jax.block_until_ready(_jax_batch()(like, vectors, vmap_width(), memo_on))

    emit(
        workload="W5 profile",
        name=f"twinlens jax batch {n}",
        program_us=per_call_us(batch_only, 50),
        **device_profile(jax, batch_only, args.calls),
    )
    try:
        from imaging_peers import jaxtronomy_w
        from peers import Skip

        peer = jaxtronomy_w(like)
    except (ImportError, Skip) as why:
        emit(workload="W5 profile", name="jaxtronomy jit", skipped=str(why))
        return
    if args.hlo_dir:
        Path(args.hlo_dir, "jaxtronomy_w5.hlo.txt").write_text(peer["hlo"]())
    emit(
        workload="W5 profile",
        name="jaxtronomy jit",
        program_us=per_call_us(peer["jit"], 200),
        **device_profile(jax, peer["jit"], args.calls),
    )
    n = args.batch
    peer["batch_compile"](n)
    emit(
        workload="W5 profile",
        name=f"jaxtronomy jit-vmap {n}",
        program_us=per_call_us(lambda: peer["batch"](n), 50),
        **device_profile(jax, lambda: peer["batch"](n), args.calls),
    )


if __name__ == "__main__":
    main()

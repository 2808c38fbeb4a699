"""How the time per call grows with the work: W3 deflections on 1e4, 1.6e5 and 1.6e6 points,
and W5 batches of 1, 8, 64 and 512 vectors, on numba (1 and 2 threads) and JAX.

    python benchmarks/scaling.py            # every case
    python benchmarks/scaling.py --quick    # fewer repeats (a few minutes on 2 cores)
    python benchmarks/scaling.py --cases W3:numba,W5:jax

Cases, each in a fresh interpreter:

* ``W3:numba`` / ``W3:jax``: the W3 SIE's deflections at the centres of 100 x 100, 400 x 400 and
  1265 x 1265 pixels over [-5, 5]" (10,000, 160,000 and 1,600,225 points); JAX under
  ``jax.jit`` with the profile's parameters traced (one program per size, its first call apart);
* ``W5:numba`` / ``W5:jax``: ``ImagingLikelihood.batch(vectors, backend)`` of the W5 likelihood
  (:func:`workloads.w5_likelihood`) for batches of 1, 8, 64 and 512 vectors near the truth (the
  library's own chunking: chunks of 8 for numba; for JAX the chunk its memory budget allows,
  ``chunk`` in the line, each chunk shape compiled on its first call, reported apart).

One JSON line per size, then one ``fit`` line per case from a linear fit
``time = overhead + size * per_unit`` over the sizes (the residuals weighted by each time, so
that the small sizes count as much as the large): ``overhead_ms``, the fixed cost of a call,
and ``per_point_ns`` (W3) or ``per_member_ms`` (W5), with the fit's largest relative residual.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
from timing import (
    compile_estimate,
    emit,
    first_call,
    measure,
    repeats_for,
    run_case_in_fresh_process,
    threading_layer,
)
from workloads import DEFLECTIONS, grid_points, jax_chunks_seen, perturbed, w5_likelihood

from twinlens.backend import jax_runtime

W3_SIDES = (100, 400, 1265)
W5_BATCHES = (1, 8, 64, 512)
CASES = ("W3:numba", "W3:jax", "W5:numba", "W5:jax")


def linear_fit(sizes: list[float], seconds: list[float]) -> dict:
    """``overhead`` (s) and ``per_unit`` (s) of ``seconds = overhead + per_unit * size``, least
    squares on relative residuals; ``max_rel_residual`` says how well a line fits."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    design = np.stack([np.ones_like(n), n], axis=-1) / t[:, None]
    (overhead, per_unit), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    fitted = overhead + per_unit * n
    return {
        "overhead": float(overhead),
        "per_unit": float(per_unit),
        "max_rel_residual": float(np.max(np.abs(fitted / t - 1.0))),
    }


def _budget(quick: bool) -> float:
    return 2.0 if quick else 15.0


def _threads() -> list[int]:
    from deflections import numba_threads

    return numba_threads()


def _timed(call: Any, quick: bool) -> tuple[float, dict]:
    first = first_call(call)
    once = first_call(call)
    least = 2 if quick else 3
    return first, measure(call, repeats_for(once, _budget(quick), least=least), warmup=0)


def _fit_line(workload: str, name: str, sizes: list, medians_ms: list, unit: str) -> None:
    fit = linear_fit(sizes, [m / 1e3 for m in medians_ms])
    scale = 1e9 if unit == "per_point_ns" else 1e3
    emit(
        workload=workload,
        case="fit",
        name=name,
        sizes=sizes,
        wall_median_ms=[round(m, 4) for m in medians_ms],
        overhead_ms=1e3 * fit["overhead"],
        **{unit: scale * fit["per_unit"]},
        max_rel_residual=fit["max_rel_residual"],
    )


def w3(backend: str, quick: bool) -> None:
    wl = DEFLECTIONS["W3"]
    profile = wl.profile()
    grids = {side: grid_points(side) for side in W3_SIDES}
    if backend == "numba":
        import numba

        for threads in _threads():
            numba.set_num_threads(threads)
            name = f"twinlens numba {threads}t"
            medians = []
            for xy in grids.values():
                first, timed = _timed(lambda xy=xy: profile.deflections(xy, backend="numba"), quick)
                medians.append(timed["wall_median_ms"])
                emit(
                    workload="W3",
                    name=name,
                    threads=threads,
                    layer=threading_layer(),
                    points=len(xy),
                    first_call_s=first,
                    **timed,
                )
            _fit_line("W3", name, [len(g) for g in grids.values()], medians, "per_point_ns")
        return
    jax = jax_runtime.load()
    build = wl.build
    fn = jax.jit(lambda p, xy: build(p).deflections(xy, backend="jax"))
    p = jax.numpy.asarray(wl.vector())
    medians = []
    for xy in grids.values():
        xj = jax.numpy.asarray(xy)
        first, timed = _timed(lambda xj=xj: fn(p, xj), quick)
        medians.append(timed["wall_median_ms"])
        emit(
            workload="W3",
            name="twinlens jax-jit",
            points=len(xy),
            first_call_s=first,
            compile_s=compile_estimate(first, timed),
            **timed,
        )
    _fit_line("W3", "twinlens jax-jit", [len(g) for g in grids.values()], medians, "per_point_ns")


def w5(backend: str, quick: bool) -> None:
    like = w5_likelihood()
    stacks = {n: perturbed(like, n, seed=n) for n in W5_BATCHES}
    if backend == "numba":
        import numba

        first_call(lambda: like.batch(stacks[1], "numba"))  # compile once, outside the sizes
        for threads in _threads():
            numba.set_num_threads(threads)
            name = f"twinlens numba {threads}t"
            medians = []
            for n, stack in stacks.items():
                first, timed = _timed(lambda s=stack: like.batch(s, "numba"), quick)
                medians.append(timed["wall_median_ms"])
                emit(
                    workload="W5",
                    name=name,
                    threads=threads,
                    layer=threading_layer(),
                    batch=n,
                    first_call_s=first,
                    ms_per_member=timed["wall_median_ms"] / n,
                    **timed,
                )
            _fit_line("W5", name, list(W5_BATCHES), medians, "per_member_ms")
        return
    jax_runtime.load()
    medians = []
    for n, stack in stacks.items():
        with jax_chunks_seen() as chunks:
            first, timed = _timed(lambda s=stack: like.batch(s, "jax"), quick)
        medians.append(timed["wall_median_ms"])
        emit(
            workload="W5",
            name="twinlens jax",
            batch=n,
            chunk=max(chunks, default=None),
            first_call_s=first,
            compile_s=compile_estimate(first, timed),
            ms_per_member=timed["wall_median_ms"] / n,
            **timed,
        )
    _fit_line("W5", "twinlens jax", list(W5_BATCHES), medians, "per_member_ms")


def run_case(case: str, quick: bool) -> None:
    workload, backend = case.split(":")
    if backend not in ("numba", "jax") or workload not in ("W3", "W5"):
        raise SystemExit(f"unknown case {case!r}; choose from {', '.join(CASES)}")
    (w3 if workload == "W3" else w5)(backend, quick)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--cases", default=",".join(CASES), help="e.g. W3:numba,W5:jax")
    parser.add_argument("--case", help="one case, in this process")
    args = parser.parse_args(argv)
    if args.case:
        run_case(args.case, args.quick)
        return
    for case in args.cases.split(","):
        run_case_in_fresh_process(__file__, case.split(":")[0], case, args.quick)


if __name__ == "__main__":
    main(sys.argv[1:])

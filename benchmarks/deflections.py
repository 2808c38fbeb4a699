"""W1-W4 of the design: deflection fields on 400 x 400 pixel centres over [-5, 5]", on every
backend and, where installed, on the peers, all in one run.

    python benchmarks/deflections.py                      # W1-W4, ours and the peers found
    python benchmarks/deflections.py --quick              # fewer repeats
    python benchmarks/deflections.py --workloads W3,W4    # a subset
    python benchmarks/deflections.py --no-peers           # ours only

The workloads are :data:`workloads.DEFLECTIONS`. Each case runs in a fresh interpreter (no
compiled program, thread pool or warm cache of one case helps another) and prints one JSON
line per measurement:

* ``twinlens numpy``;
* ``twinlens numba``, once with 1 thread and once with 2 (``numba.set_num_threads``; on a
  machine with more cores, with all of them too);
* ``twinlens jax-eager``: ``profile.deflections(xy, backend="jax")`` with constant parameters,
  no ``jit``;
* ``twinlens jax-jit``: ``jax.jit`` of a function that builds the profile from a traced
  parameter vector and returns its deflections: the JAX headline, since every JAX search traces
  its parameters. Its first call (trace, compile and one run) is reported apart;
* the peers of :mod:`peers` (lenstronomy numpy and EPL_NUMBA, JAXtronomy and herculens under
  ``jit`` with traced keyword arguments, autogalaxy), each with its largest relative difference
  from our deflections; a peer that is missing, or has no such profile, prints one line saying
  why.

The last line of each workload gives, for each of our lines, the peer's median time over ours
(``speedup``, > 1 when ours is faster), all measured in this run.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any

import numpy as np
from peers import DEFLECTION_PEERS, Skip, as_xy, deflection_peer, max_relative_difference
from timing import (
    compile_estimate,
    emit,
    first_call,
    measure,
    repeats_for,
    run_case_in_fresh_process,
    speedups,
    threading_layer,
)
from workloads import DEFLECTIONS, DeflectionWorkload, grid_points

from twinlens.backend import jax_runtime

OURS = ("numpy", "numba", "jax")


def numba_threads() -> list[int]:
    """1 and 2 threads, and every core when there are more (at most numba's pool)."""
    import numba

    most = numba.config.NUMBA_NUM_THREADS
    return sorted({n for n in (1, 2, most) if n <= most})


def _budget(quick: bool) -> float:
    """Seconds of timed calls per line."""
    return 3.0 if quick else 20.0


def _time(call: Any, quick: bool) -> tuple[float, dict]:
    """The first call apart (it compiles), then as many calls as fit in the budget."""
    first = first_call(call)
    once = first_call(call)
    return first, measure(call, repeats_for(once, _budget(quick)), warmup=0)


def _line(wl: DeflectionWorkload, code: str, variant: str, points: int, **fields: Any) -> None:
    threads = fields.get("threads")
    name = f"{code} {variant}" + (f" {threads}t" if threads else "")
    emit(workload=wl.name, name=name, code=code, variant=variant, points=points, **fields)


def run_ours(wl: DeflectionWorkload, backend: str, quick: bool) -> None:
    xy = grid_points()
    profile = wl.profile()
    if backend == "numpy":
        first, timed = _time(lambda: profile.deflections(xy, backend="numpy"), quick)
        _line(wl, "twinlens", "numpy", len(xy), first_call_s=first, **timed)
    elif backend == "numba":
        import numba

        call = lambda: profile.deflections(xy, backend="numba")  # noqa: E731
        first = first_call(call)  # compiles, or loads numba's on-disk cache
        for threads in numba_threads():
            numba.set_num_threads(threads)
            _, timed = _time(call, quick)
            _line(
                wl,
                "twinlens",
                "numba",
                len(xy),
                threads=threads,
                layer=threading_layer(),
                first_call_s=first,
                **timed,
            )
    elif backend == "jax":
        jax = jax_runtime.load()  # float64 on before any JAX array is made
        xj = jax.numpy.asarray(xy)
        first, timed = _time(lambda: profile.deflections(xj, backend="jax"), quick)
        _line(wl, "twinlens", "jax-eager", len(xy), first_call_s=first, **timed)

        build = wl.build
        fn = jax.jit(lambda p, xy: build(p).deflections(xy, backend="jax"))
        p = jax.numpy.asarray(wl.vector())
        first, timed = _time(lambda: fn(p, xj), quick)
        compile_s = compile_estimate(first, timed)
        _line(
            wl,
            "twinlens",
            "jax-jit",
            len(xy),
            traced=list(wl.names),
            first_call_s=first,
            compile_s=compile_s,
            **timed,
        )
    else:
        raise SystemExit(f"unknown backend {backend!r}; choose from {', '.join(OURS)}")


def run_peer(wl: DeflectionWorkload, code: str, variant: str, quick: bool) -> None:
    xy = grid_points()
    profile = wl.profile()
    if code in ("jaxtronomy", "herculens"):
        jax_runtime.load()  # float64 on before the peer makes any JAX array
    try:
        peer = deflection_peer(code, variant, profile, xy)
    except Skip as why:
        _line(wl, code, variant, len(xy), skipped=str(why))
        return
    call = peer["call"]
    first, timed = _time(call, quick)
    ours = np.asarray(profile.deflections(xy, backend="numba"))
    theirs = as_xy(call(), yx=peer["yx"])
    fields: dict[str, Any] = {"version": peer["version"], "profile": peer["profile"]}
    if variant == "jit":
        fields["compile_s"] = compile_estimate(first, timed)
    _line(
        wl,
        code,
        variant,
        len(xy),
        first_call_s=first,
        **fields,
        **timed,
        max_rel_diff_vs_twinlens=max_relative_difference(ours, theirs),
    )


def run_case(case: str, quick: bool) -> None:
    """``W3:twinlens:numba`` or ``W4:lenstronomy:EPL_NUMBA``: one case, in this process."""
    workload, code, variant = case.split(":")
    wl = DEFLECTIONS[workload]
    if code == "twinlens":
        run_ours(wl, variant, quick)
    else:
        run_peer(wl, code, variant, quick)


def main(argv: list[str] | None = None, default: tuple[str, ...] = tuple(DEFLECTIONS)) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (~3 s per line)")
    parser.add_argument("--workloads", default=",".join(default), help="e.g. W1,W3")
    parser.add_argument("--no-peers", action="store_true", help="ours only")
    parser.add_argument("--case", help="one case, in this process (W3:twinlens:numba)")
    args = parser.parse_args(argv)
    if args.case:
        run_case(args.case, args.quick)
        return
    script = __file__
    for workload in args.workloads.split(","):
        if workload not in DEFLECTIONS:
            raise SystemExit(f"unknown workload {workload!r}; choose from {', '.join(DEFLECTIONS)}")
        lines: list[dict] = []
        cases = [("twinlens", b) for b in OURS]
        if not args.no_peers:
            cases = list(DEFLECTION_PEERS) + cases
        for code, variant in cases:
            if code != "twinlens" and importlib.util.find_spec(code) is None:
                emit(workload=workload, name=f"{code} {variant}", skipped="not installed")
                continue
            case = f"{workload}:{code}:{variant}"
            lines += run_case_in_fresh_process(script, workload, case, args.quick)
        speedups(workload, lines)


if __name__ == "__main__":
    main(sys.argv[1:])

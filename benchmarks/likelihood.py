"""W5 and W6 of the design: the imaging log-likelihood, one evaluation and batches, on every
backend and, where installed, on the peers, all in one run.

    python benchmarks/likelihood.py                    # W5 and W6, ours and the peers found
    python benchmarks/likelihood.py --quick            # fewer repeats, batch 64 only
    python benchmarks/likelihood.py --workloads W5     # one workload
    python benchmarks/likelihood.py --no-peers         # ours only
    python benchmarks/likelihood.py --workloads W5sum  # W5's lens as a MassSum vs a tuple

The workloads are :func:`workloads.w5_likelihood` and :func:`workloads.w6_likelihood`
(:class:`twinlens.likelihood.ImagingLikelihood`, every free parameter in one vector). Each case runs
in a fresh interpreter (numba's and XLA's thread pools, and the state one package leaves in the
CPU, change another's speed) and prints one JSON line per measurement. Every call evaluates a
new vector (16 vectors near the truth, in turn):

* ``twinlens numpy`` and ``twinlens numba`` (1 and 2 threads): ``like(vector, backend)``;
* ``twinlens jax-eager``: the model at one vector, with constant parameters, evaluated op by op
  without ``jit`` (memo off: a constant model would otherwise be recalled whole);
* ``twinlens jax-jit``: ``like(vector, "jax")``, a ``jax.jit`` program with the vector traced
  (the JAX headline); its first call (trace, compile, one run) apart. The call copies the
  vector to the device and the value back, which on a GPU costs more than the evaluation;
* ``twinlens jax-jit device``: the same evaluation as a JAX search runs it, and as the
  JAXtronomy line is timed: ``jax.jit`` of the likelihood's traced function on a vector
  already on the device, blocked until done, the result left there;
* ``twinlens numba batch`` (1 and 2 threads) and ``twinlens jax batch``:
  ``like.batch(vectors, backend)`` for 64 vectors (and 1024 without ``--quick``), and
  ``twinlens jax device`` (a batch): ``jit(vmap)`` of the traced function on vectors already
  on the device, as the JAXtronomy batch line is timed;
* ``lenstronomy numpy``, ``jaxtronomy jit`` and ``jaxtronomy jit-vmap`` (a batch) where
  installed (see :mod:`imaging_peers`), each with its chi-squared at the truth against ours.

``W5sum`` (``--case W5sum:twinlens:numba``; variants ``numba``, ``jax``, ``numba-batch``,
``jax-batch``) times W5 with its lens mass as one :class:`~twinlens.mass.MassSum` (as
``convert.from_lenstronomy_list`` makes it) beside W5's tuple of profiles, in one process with
the calls interleaved, and gives the sum's time over the tuple's (``ratio``; JAX's compile
apart, in ``compile_s``).

Lines give the time per call and ``ms_per_eval`` (per vector: the call's time over its batch).
The last line of each workload gives, for each of our lines, each peer's ``ms_per_eval`` over
ours (``speedup``, > 1 when ours is faster), measured in this run.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import statistics
import sys
import time
from typing import Any

import numpy as np
from peers import Skip
from timing import (
    block,
    compile_estimate,
    emit,
    first_call,
    measure,
    repeats_for,
    run_case_in_fresh_process,
    speedups,
    threading_layer,
)
from workloads import IMAGING, jax_chunks_seen, perturbed, w5_sum_likelihood

from twinlens import memo
from twinlens.backend import jax_runtime
from twinlens.likelihood import ImagingLikelihood

OURS = ("numpy", "numba", "jax", "numba-batch", "jax-batch")
SUM_VARIANTS = ("numba", "jax", "numba-batch", "jax-batch")
PEERS = (("lenstronomy", "numpy"), ("jaxtronomy", "jit"), ("jaxtronomy", "jit-vmap"))
N_VECTORS = 16


def batch_sizes(quick: bool) -> tuple[int, ...]:
    return (64,) if quick else (64, 1024)


def _budget(quick: bool) -> float:
    return 3.0 if quick else 20.0


def _line(workload: str, code: str, variant: str, **fields: Any) -> None:
    threads, batch = fields.get("threads"), fields.get("batch")
    name = f"{code} {variant}" + (f" {threads}t" if threads else "")
    name += f" x{batch}" if batch else ""
    if "wall_median_ms" in fields:
        fields["ms_per_eval"] = fields["wall_median_ms"] / (batch or 1)
        fields["evals_per_s"] = 1e3 / fields["ms_per_eval"]
    emit(workload=workload, name=name, code=code, variant=variant, **fields)


def _time(call: Any, quick: bool, least: int = 3) -> tuple[float, dict]:
    """First call apart, then repeated calls within the budget."""
    first = first_call(call)
    once = first_call(call)
    return first, measure(call, repeats_for(once, _budget(quick), least=least), warmup=0)


def _memo() -> dict:
    """The memo's hits and JAX folds so far in this process."""
    stats = memo.stats()
    return {"enabled": memo.enabled(), "hits": stats["hits"], "jax_folds": stats["jax_folds"]}


def _numba_threads() -> list[int]:
    from deflections import numba_threads

    return numba_threads()


def run_ours(workload: str, variant: str, quick: bool) -> None:
    like = IMAGING[workload]()
    vectors = perturbed(like, N_VECTORS)
    turn = itertools.cycle(range(N_VECTORS))
    common = {
        "n_params": like.n_params,
        "ray_traced_points": like.dataset.layout.n_points,
    }
    if variant in ("numpy", "numba"):
        call = lambda: like(vectors[next(turn)], variant)  # noqa: E731
        first = first_call(call)  # numba: compiles or loads its cache; W6: fills the memo
        log_l = like(like.reference, variant)
        if variant == "numpy":
            timed = measure(call, repeats_for(first_call(call), _budget(quick)), warmup=0)
            _line(
                workload,
                "twinlens",
                variant,
                **common,
                first_call_s=first,
                **timed,
                log_l=log_l,
                memo=_memo(),
            )
            return
        import numba

        for threads in _numba_threads():
            numba.set_num_threads(threads)
            _, timed = _time(call, quick)
            _line(
                workload,
                "twinlens",
                "numba",
                threads=threads,
                layer=threading_layer(),
                **common,
                first_call_s=first,
                **timed,
                log_l=log_l,
                memo=_memo(),
            )
    elif variant == "jax":
        from twinlens.lensing.blurred import blurred_terms
        from twinlens.likelihood.imaging import solve_and_score

        jax_runtime.load()
        dataset = like.dataset
        instances = [like.instance(v) for v in vectors]

        def eager() -> Any:
            tracer = instances[next(turn)]
            return solve_and_score(blurred_terms(tracer, dataset, "jax"), dataset, "jax")[0]

        with memo.disabled():
            first, timed = _time(eager, quick)
        _line(
            workload,
            "twinlens",
            "jax-eager",
            **common,
            first_call_s=first,
            **timed,
            memo={"enabled": False},
        )
        call = lambda: like(vectors[next(turn)], "jax")  # noqa: E731
        first, timed = _time(call, quick)
        _line(
            workload,
            "twinlens",
            "jax-jit",
            **common,
            first_call_s=first,
            compile_s=compile_estimate(first, timed),
            **timed,
            log_l=like(like.reference, "jax"),
            memo=_memo(),
        )
        # as a JAX search runs it, and as JAXtronomy's jit line is timed: the vector already
        # on the device and the result left there (no copy either way)
        jax = jax_runtime.load()
        program = jax.jit(like.jax_log_likelihood)
        on_device = [jax.device_put(v) for v in vectors]
        call = lambda: program(on_device[next(turn)]).block_until_ready()  # noqa: E731
        first, timed = _time(call, quick)
        _line(
            workload,
            "twinlens",
            "jax-jit device",
            **common,
            first_call_s=first,
            compile_s=compile_estimate(first, timed),
            **timed,
        )
    elif variant in ("numba-batch", "jax-batch"):
        backend = variant.split("-")[0]
        for n in batch_sizes(quick):
            stack = perturbed(like, n, seed=n)
            call = lambda s=stack: like.batch(s, backend)  # noqa: E731
            fields = {**common, "batch": n}
            if backend == "jax":
                with jax_chunks_seen() as chunks:
                    first, timed = _time(call, quick, least=2)
                _line(
                    workload,
                    "twinlens",
                    "jax",
                    **fields,
                    chunk=max(chunks, default=None),
                    first_call_s=first,
                    compile_s=compile_estimate(first, timed),
                    **timed,
                )
                # as jaxtronomy jit-vmap is timed: jit(vmap) on vectors already on the device
                jax = jax_runtime.load()
                program = jax.jit(jax.vmap(like.jax_log_likelihood))
                on_device = jax.device_put(stack)
                call = lambda d=on_device, p=program: p(d).block_until_ready()  # noqa: E731
                first, timed = _time(call, quick, least=2)
                _line(
                    workload,
                    "twinlens",
                    "jax device",
                    **fields,
                    first_call_s=first,
                    compile_s=compile_estimate(first, timed),
                    **timed,
                )
                continue
            import numba

            first = first_call(call)
            for threads in _numba_threads():
                numba.set_num_threads(threads)
                _, timed = _time(call, quick, least=2)
                _line(
                    workload,
                    "twinlens",
                    "numba",
                    threads=threads,
                    layer=threading_layer(),
                    **fields,
                    first_call_s=first,
                    **timed,
                )
    else:
        raise SystemExit(f"unknown variant {variant!r}; choose from {', '.join(OURS)}")


def _interleaved(calls: dict[str, Any], quick: bool) -> dict[str, dict]:
    """Per name, the median and least ms per call of ``calls``, timed in alternating rounds
    (so that the machine's load falls on each alike)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(4 if quick else 12):
        for name, call in calls.items():
            for _ in range(5):
                t0 = time.perf_counter()
                block(call())
                times[name].append(time.perf_counter() - t0)
    return {
        name: {"wall_median_ms": 1e3 * statistics.median(t), "wall_min_ms": 1e3 * min(t)}
        for name, t in times.items()
    }


def run_sum(variant: str, quick: bool) -> None:
    """W5sum: W5 as a tuple of mass profiles and as one MassSum, side by side."""
    if variant not in SUM_VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; choose from {', '.join(SUM_VARIANTS)}")
    backend, _, batched = variant.partition("-")
    likes = {"tuple": IMAGING["W5"](), "sum": w5_sum_likelihood()}
    assert np.array_equal(likes["tuple"].reference, likes["sum"].reference)
    n = 64 if batched else None
    vectors = perturbed(likes["tuple"], n or N_VECTORS, seed=n or 0)
    calls: dict[str, Any] = {}
    for name, like in likes.items():
        turn = itertools.cycle(range(N_VECTORS))
        if n:
            calls[name] = lambda like=like: like.batch(vectors, backend)
        else:
            calls[name] = lambda like=like, turn=turn: like(vectors[next(turn)], backend)
    # one-time costs (JAX's start, the kernels' traces, numba's loading) paid before either
    # first call, on another program: W5 with one parameter less free
    tuple_like = likes["tuple"]
    warm = ImagingLikelihood(tuple_like.dataset, tuple_like.model, tuple_like.free[:-1])
    (warm.batch if n else warm)(vectors[..., :-1] if n else vectors[0, :-1], backend)
    first = {name: first_call(call) for name, call in calls.items()}
    timed = _interleaved(calls, quick)
    for name, like in likes.items():
        jax_compile = {"compile_s": compile_estimate(first[name], timed[name])}
        _line(
            "W5sum",
            "twinlens",
            f"{variant} {name}",
            batch=n,
            first_call_s=first[name],
            **(jax_compile if backend == "jax" else {}),
            **timed[name],
            log_l=float(np.sum(like(like.reference, backend))),
        )
    ratio = {k: timed["sum"][k] / timed["tuple"][k] for k in ("wall_median_ms", "wall_min_ms")}
    emit(workload="W5sum", case="ratio", variant=variant, ratio=ratio)


def run_peer(workload: str, code: str, variant: str, quick: bool) -> None:
    import imaging_peers

    like = IMAGING[workload]()
    ours_chi2 = -2.0 * like(like.reference, "numba") - like.dataset.noise_normalization
    try:
        if code == "lenstronomy":
            peer = imaging_peers.lenstronomy_w(like)
        else:
            peer = imaging_peers.jaxtronomy_w(like)
    except Skip as why:
        _line(workload, code, variant, skipped=str(why))
        return
    check = {
        "version": peer["version"],
        "chi2": peer["chi2"],
        "twinlens_chi2": ours_chi2,
        "chi2_rel_diff": imaging_peers.relative(peer["chi2"], ours_chi2),
    }
    if variant == "numpy":
        first, timed = _time(peer["evaluate"], quick)
        _line(workload, code, variant, first_call_s=first, **timed, **check)
    elif variant == "jit":
        first = peer["first_call_s"]
        timed = measure(peer["jit"], repeats_for(first_call(peer["jit"]), _budget(quick)), 0)
        _line(
            workload,
            code,
            variant,
            first_call_s=first,
            compile_s=compile_estimate(first, timed),
            **timed,
            **check,
        )
    elif variant == "jit-vmap":
        for n in batch_sizes(quick):
            compiled = peer["batch_compile"](n)
            need, have = compiled["memory_bytes"], imaging_peers.available_bytes()
            if need is not None and have is not None and need > have / 2:
                _line(
                    workload,
                    code,
                    variant,
                    batch=n,
                    skipped="memory",
                    xla_memory_gb=need / 2**30,
                    available_gb=have / 2**30,
                )
                continue
            t0 = time.perf_counter()
            peer["batch"](n)  # the program compiled above
            first = time.perf_counter() - t0 + compiled["compile_s"]
            timed = measure(lambda n=n: peer["batch"](n), 2 if quick else 5, warmup=0)
            _line(
                workload,
                code,
                variant,
                batch=n,
                first_call_s=first,
                compile_s=compiled["compile_s"],
                **timed,
            )
    else:
        raise SystemExit(f"unknown peer variant {variant!r}")


def run_case(case: str, quick: bool) -> None:
    """``W5:twinlens:numba`` or ``W5:jaxtronomy:jit``: one case, in this process."""
    workload, code, variant = case.split(":")
    if workload == "W5sum":
        run_sum(variant, quick)
    elif code == "twinlens":
        run_ours(workload, variant, quick)
    else:
        run_peer(workload, code, variant, quick)


def main(argv: list[str] | None = None, default: tuple[str, ...] = tuple(IMAGING)) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, batch 64 only")
    parser.add_argument("--workloads", default=",".join(default), help="e.g. W5")
    parser.add_argument("--no-peers", action="store_true", help="ours only")
    parser.add_argument("--case", help="one case, in this process (W5:twinlens:numba)")
    args = parser.parse_args(argv)
    if args.case:
        run_case(args.case, args.quick)
        return
    for workload in args.workloads.split(","):
        if workload == "W5sum":
            for variant in SUM_VARIANTS:
                run_case_in_fresh_process(
                    __file__, workload, f"W5sum:twinlens:{variant}", args.quick
                )
            continue
        if workload not in IMAGING:
            raise SystemExit(f"unknown workload {workload!r}; choose from {', '.join(IMAGING)}")
        lines: list[dict] = []
        cases = [("twinlens", v) for v in OURS]
        if not args.no_peers:
            cases = list(PEERS) + cases
        for code, variant in cases:
            if code != "twinlens" and importlib.util.find_spec(code) is None:
                emit(workload=workload, name=f"{code} {variant}", skipped="not installed")
                continue
            case = f"{workload}:{code}:{variant}"
            lines += run_case_in_fresh_process(__file__, workload, case, args.quick)
        speedups(workload, lines, "ms_per_eval")


if __name__ == "__main__":
    main(sys.argv[1:])

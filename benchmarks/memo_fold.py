"""W6: the memo and the JAX fold, memo on against memo off, in one run.

W6 (:func:`workloads.w6_likelihood`) is W5 (100 x 100 pixels at 0.05", 4 x 4 oversampling,
SIE + external shear, elliptical Sersic source, 21 x 21 Gaussian PSF, noise 0.05) with a lens
light of 30 fixed elliptical Gaussians (an MGE of a de Vaucouleurs profile, sigma 0.01"-5")
whose mass, with one free mass-to-light ratio, joins the SIE. Its fields (the 30-Gaussian
deflections, the lens-light image) are the memo's home case.

Each case runs in a fresh process (so that no program, compiled kernel or warm cache of one
case helps another) and prints one JSON line:

* ``jax-off`` / ``jax-on``: equations in the traced program (static, and as executed, a scan
  body counted once per step), first call (trace, compile and one run) and steady state of a
  batch of 16 and of one vector, the log-likelihoods, the Faddeeva-kernel calls per backend
  during the compiling call and during steady calls, and ``jax_folds``;
* ``jax-killswitch``: memo on in code, ``TWINLENS_MEMO=0`` in the environment (must match
  ``jax-off``);
* ``jax-free-centre``: the lens light's and the MGE mass's centres free, so their fields depend
  on traced values and fall through (``jax_folds`` 0, same log-likelihood);
* ``jax-free-part``: what the fold cannot remove. The equations and the compile time of three
  single-vector programs built in one process, memo off, memo on, and the free part alone (W6
  without the lens light and its mass: the SIE, shear and source with the same free values);
* ``numba-off`` / ``numba-on``: repeated evaluations of one vector and of batches, and the
  lens-light part alone (the MGE deflections and the lens-light image, through the tracer).

The last line gives the ratios. Run: ``cd benchmarks && python memo_fold.py [--quick]``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import time
from typing import Any

import numpy as np
from timing import block, call_times, emit, run_case_in_fresh_process
from workloads import W6_MGE_PATH, w6_likelihood

from twinlens import memo
from twinlens.backend.concrete import batched
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.likelihood import ImagingLikelihood
from twinlens.model import set_paths

BATCH = 16
MGE_PATH = W6_MGE_PATH
CENTRES = ("lenses[0].light[0].centre[0]", "lenses[0].light[0].centre[1]")
CENTRES += (f"{MGE_PATH}.centre[0]", f"{MGE_PATH}.centre[1]")


def w6(free_centre: bool = False) -> ImagingLikelihood:
    """The W6 likelihood (:func:`workloads.w6_likelihood`; its data simulated with the memo
    off, so every case fits one set), with the lens light's and its mass's centres free for the
    control that cannot fold."""
    return w6_likelihood(CENTRES if free_centre else ())


# -- witnesses ----------------------------------------------------------------------------------


class FaddeevaWitness:
    """Counts calls of the kernels that evaluate the Faddeeva function (the Gaussian and MGE
    deflections and hessians), by backend: a JAX call is one traced copy of the kernel, a numba
    call one evaluation on the CPU."""

    def __init__(self) -> None:
        from twinlens.kernels.registry import Kernel

        self.counts: collections.Counter = collections.Counter()
        original = Kernel.__call__
        witness = self

        def counting(kernel: Any, *args: Any, backend: str | None = None) -> Any:
            name = kernel.name
            if name.startswith(("gaussian.", "mge.")) and (
                ".deflections" in name or ".hessian" in name
            ):
                witness.counts[backend or "default"] += 1
            return original(kernel, *args, backend=backend)

        Kernel.__call__ = counting  # type: ignore[method-assign]

    def take(self) -> dict:
        out = dict(self.counts)
        self.counts.clear()
        return out


def count_equations(jaxpr: Any, executed: bool = False) -> int:
    """Equations of a jaxpr and its sub-jaxprs; with ``executed``, a scan body counts once per
    step (what runs per evaluation)."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        steps = eqn.params.get("length", 1) if executed and eqn.primitive.name == "scan" else 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                inner = getattr(inner, "jaxpr", inner) if not hasattr(inner, "eqns") else inner
                if hasattr(inner, "eqns"):
                    total += steps * count_equations(inner, executed)
    return total


# -- cases ------------------------------------------------------------------------------------


def _vectors(like: ImagingLikelihood) -> np.ndarray:
    """The same 16 vectors for every case (the free-centre control's centres stay at their
    values, so its log-likelihoods must equal memo off's)."""
    steps = np.zeros((BATCH, like.n_params))
    base = [i for i, p in enumerate(like.free) if p not in CENTRES]
    steps[:, base] = 1e-4 * np.random.default_rng(0).normal(size=(BATCH, len(base)))
    return like.reference + steps


def jax_case(case: str, repeats: int) -> None:
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    block(jax.jit(lambda a: a + 1.0)(1.0))  # start JAX before anything is timed
    witness = FaddeevaWitness()
    like = w6(free_centre=case == "jax-free-centre")
    vectors = _vectors(like)
    memo.clear()
    witness.take()
    switch = memo.disabled() if case == "jax-off" else contextlib.nullcontext()
    with switch:
        on = memo.enabled()
        t0 = time.perf_counter()
        first = like.batch(vectors, "jax")
        first_s = time.perf_counter() - t0
        compiling_calls = witness.take()
        folds = memo.stats()["jax_folds"]
        steady = call_times(lambda: like.batch(vectors, "jax"), repeats, warmup=1)
        steady_calls = witness.take()
        t0 = time.perf_counter()
        single = like(like.reference, "jax")
        single_first_s = time.perf_counter() - t0
        single_steady = call_times(lambda: like(like.reference, "jax"), repeats, warmup=1)
        jaxpr = jax.make_jaxpr(like.jax_log_likelihood)(like.reference).jaxpr
    emit(
        workload="W6",
        case=case,
        memo_enabled=on,
        eqns=count_equations(jaxpr),
        eqns_executed=count_equations(jaxpr, executed=True),
        batch=BATCH,
        batch_first_call_s=first_s,
        batch_steady_s=float(np.median(steady)),
        batch_compile_s=first_s - float(np.median(steady)),
        single_first_call_s=single_first_s,
        single_steady_ms=1e3 * float(np.median(single_steady)),
        single_compile_s=single_first_s - float(np.median(single_steady)),
        faddeeva_calls_compiling=compiling_calls,
        faddeeva_calls_steady=steady_calls,
        jax_folds=folds,
        log_l=float(single),
        log_l_batch=[float(v) for v in first],
    )


def numba_case(case: str, repeats: int) -> None:
    like = w6()
    vectors = _vectors(like)
    switch = memo.disabled() if case == "numba-off" else contextlib.nullcontext()
    layout = like.dataset.layout
    # the lens-light part alone, through the tracer's hook sites, with the ratio free (a batch
    # column of one, as the likelihood passes it)
    lens = like.model.lenses[0]
    part = Tracer(Galaxy(mass=lens.mass[2], light=lens.light))
    part = set_paths(part, {"lenses[0].mass[0].mass_to_light_ratio": batched([10.0])}, False)

    def lens_light_part() -> Any:
        deflections = part._deflections(layout.xs, layout.ys, "numba", grid=layout)
        return deflections, part._light_terms(layout.xs, layout.ys, "numba", grid=layout)

    memo.clear()
    with switch:
        t0 = time.perf_counter()
        value = like(like.reference, "numba")
        first_s = time.perf_counter() - t0
        single = call_times(lambda: like(like.reference, "numba"), repeats, warmup=1)
        batch = call_times(lambda: like.batch(vectors, "numba"), max(3, repeats // 3), warmup=1)
        part = call_times(lens_light_part, repeats, warmup=1)
        values = like.batch(vectors, "numba")
    emit(
        workload="W6",
        case=case,
        first_call_s=first_s,
        single_median_ms=1e3 * float(np.median(single)),
        single_min_ms=1e3 * min(single),
        batch=BATCH,
        batch_evals_per_s=BATCH / float(np.median(batch)),
        lens_light_part_median_ms=1e3 * float(np.median(part)),
        log_l=float(value),
        log_l_batch=[float(v) for v in values],
        memo=memo.stats(),
    )


def free_part_case(repeats: int) -> None:
    """Equations and compile seconds of W6 memo off, W6 memo on and W6's free part alone,
    interleaved ``repeats`` times (minimum compile kept): the fold's floor is the free part."""
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    like = w6()
    lens = like.model.lenses[0]
    free_model = Tracer(Galaxy(mass=lens.mass[:2]), like.model.sources)
    free = tuple(p for p in like.free if not p.startswith(MGE_PATH))
    alone = ImagingLikelihood(like.dataset, free_model, free)
    programs = {"memo_off": (like, False), "memo_on": (like, True), "free_part": (alone, True)}
    eqns: dict[str, int] = {}
    compile_s: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(max(2, repeats // 3)):
        for name, (likelihood, on) in programs.items():
            memo.clear()
            with contextlib.nullcontext() if on else memo.disabled():
                jaxpr = jax.make_jaxpr(likelihood.jax_log_likelihood)(likelihood.reference).jaxpr
                eqns[name] = count_equations(jaxpr)
                lowered = jax.jit(likelihood.jax_log_likelihood).lower(likelihood.reference)
                t0 = time.perf_counter()
                lowered.compile()
                compile_s[name].append(time.perf_counter() - t0)
    fixed = eqns["memo_off"] - eqns["free_part"]
    emit(
        workload="W6",
        case="jax-free-part",
        eqns=eqns,
        compile_s={k: min(v) for k, v in compile_s.items()},
        fixed_input_eqns=fixed,
        fixed_input_eqns_removed=(eqns["memo_off"] - eqns["memo_on"]) / fixed,
        eqns_left_beyond_free_part=eqns["memo_on"] - eqns["free_part"],
    )


CASES = (
    "jax-off",
    "jax-on",
    "jax-killswitch",
    "jax-free-centre",
    "jax-free-part",
    "numba-off",
    "numba-on",
)


def run_case(case: str, quick: bool) -> None:
    repeats = 3 if quick else 9
    if case == "jax-free-part":
        free_part_case(repeats)
    elif case.startswith("jax"):
        jax_case(case, repeats)
    elif case.startswith("numba"):
        numba_case(case, repeats)
    else:
        raise SystemExit(f"unknown case {case!r}; choose from {', '.join(CASES)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--case", help="run one case in this process")
    args = parser.parse_args()
    if args.case:
        run_case(args.case, args.quick)
        return
    lines = {}
    for case in CASES:
        env = {memo.ENV_SWITCH: "0"} if case == "jax-killswitch" else None
        for line in run_case_in_fresh_process(__file__, "W6", case, args.quick, env):
            lines[case] = line
    _ratios(lines)


def _relative(a: list, b: list) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / np.abs(b)))


def _ratios(lines: dict) -> None:
    out: dict[str, Any] = {}
    off, on = lines.get("jax-off"), lines.get("jax-on")
    if off and on:
        out["jax_eqns_change"] = on["eqns"] / off["eqns"] - 1
        out["jax_eqns_executed_change"] = on["eqns_executed"] / off["eqns_executed"] - 1
        out["jax_batch_first_call_off_over_on"] = (
            off["batch_first_call_s"] / on["batch_first_call_s"]
        )
        out["jax_batch_compile_off_over_on"] = off["batch_compile_s"] / on["batch_compile_s"]
        out["jax_single_compile_off_over_on"] = off["single_compile_s"] / on["single_compile_s"]
        out["jax_batch_steady_off_over_on"] = off["batch_steady_s"] / on["batch_steady_s"]
        out["jax_single_steady_off_over_on"] = off["single_steady_ms"] / on["single_steady_ms"]
        out["jax_log_l_on_vs_off_max_relative"] = _relative(
            on["log_l_batch"] + [on["log_l"]], off["log_l_batch"] + [off["log_l"]]
        )
    kill = lines.get("jax-killswitch")
    if off and kill:
        out["killswitch_equals_off"] = (
            kill["eqns"] == off["eqns"]
            and kill["jax_folds"] == 0
            and kill["log_l_batch"] == off["log_l_batch"]
        )
    free = lines.get("jax-free-centre")
    if off and free:
        out["free_centre_jax_folds"] = free["jax_folds"]
        out["free_centre_log_l_vs_off_max_relative"] = _relative(
            free["log_l_batch"], off["log_l_batch"]
        )
    n_off, n_on = lines.get("numba-off"), lines.get("numba-on")
    if n_off and n_on:
        out["numba_single_off_over_on"] = n_off["single_median_ms"] / n_on["single_median_ms"]
        out["numba_batch_on_over_off"] = n_on["batch_evals_per_s"] / n_off["batch_evals_per_s"]
        out["numba_lens_light_part_off_over_on"] = (
            n_off["lens_light_part_median_ms"] / n_on["lens_light_part_median_ms"]
        )
        out["numba_log_l_on_vs_off_max_relative"] = _relative(
            n_on["log_l_batch"] + [n_on["log_l"]], n_off["log_l_batch"] + [n_off["log_l"]]
        )
    if n_on and on:
        out["numba_vs_jax_log_l_max_relative"] = _relative(n_on["log_l_batch"], on["log_l_batch"])
    emit(workload="W6", case="ratios", **out)


if __name__ == "__main__":
    main()

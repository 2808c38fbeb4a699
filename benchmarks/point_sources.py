"""P1: image finding for 1,000 point sources behind an EPL + external shear lens, on numba and
JAX, against lenstronomy's LensEquationSolver, side by side in one run.

    python benchmarks/point_sources.py            # every case
    python benchmarks/point_sources.py --quick    # fewer repeats, fewer lenstronomy sources

The lens is W4's EPL (theta_E 1.2", slope 2.2, q 0.8, angle 30 deg) plus external shear
(0.03, -0.02); the 1,000 sources are drawn uniformly in a disc of radius 0.3" about the centre
(seed 0: quads and doubles). Each case runs in a fresh interpreter and prints one JSON line:

* ``twinlens numba batch``: ``ImageSolver().solve(tracer, sources)`` on all 1,000 sources at
  once, the grid mapped again in every call (as in a fit, where the lens changes each call);
* ``twinlens numba loop``: one call per source, the mapped grid reused (a user's loop);
* ``twinlens jax batch``: ``jax.jit`` of a function of the lens parameters (traced) and the
  sources, solved in ``lax.map`` steps of ``vmap`` over the solver's default width (32 sources
  on a CPU, 1024 on a GPU); compile time apart (case ``jax-batch-N``: steps of N sources);
* ``lenstronomy EPL`` and ``lenstronomy EPL_NUMBA``: ``image_position_from_source`` with its
  default settings, one call per source, on a subset of the sources (timed per source and
  scaled to 1,000), with the image-count agreement and largest position difference from ours.

The last line gives lenstronomy's time over ours (``speedup``, > 1 when ours is faster).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from timing import (
    cases_main,
    compile_estimate,
    emit,
    first_call,
    measure,
    repeats_for,
    speedups,
    threading_layer,
)

WORKLOAD = "P1"
N_SOURCES = 1000
CASES = ("numba-batch", "numba-loop", "jax-batch", "lenstronomy-EPL", "lenstronomy-EPL_NUMBA")
#: the lens parameters, in the order lens() takes them
LENS = {"einstein_radius": 1.2, "slope": 2.2, "q": 0.8, "angle": 30.0, "g1": 0.03, "g2": -0.02}


def lens(einstein_radius: Any, slope: Any, q: Any, angle: Any, g1: Any, g2: Any) -> Any:
    from twinlens import Galaxy, Tracer
    from twinlens.mass import ExternalShear, PowerLaw

    epl = PowerLaw.from_axis_ratio(
        centre=(0.0, 0.0), einstein_radius=einstein_radius, slope=slope, q=q, angle=angle
    )
    return Tracer(Galaxy((epl, ExternalShear(g1, g2))))


def sources(n: int = N_SOURCES) -> np.ndarray:
    rng = np.random.default_rng(0)
    r = 0.3 * np.sqrt(rng.uniform(size=n))
    t = rng.uniform(0, 2 * np.pi, n)
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=-1)


def _budget(quick: bool) -> float:
    return 4.0 if quick else 20.0


def _line(name: str, code: str, **fields: Any) -> None:
    emit(workload=WORKLOAD, name=name, code=code, sources=N_SOURCES, **fields)


def case_numba(quick: bool, loop: bool) -> None:
    from twinlens.lensing import lens_equation
    from twinlens.lensing.lens_equation import ImageSolver

    tracer, src, solver = lens(**LENS), sources(), ImageSolver()
    if loop:

        def call() -> Any:
            return [solver.solve(tracer, s) for s in src]

    else:

        def call() -> Any:
            lens_equation._MAPPED.clear()  # map the grid in every call, as for a new lens
            return solver.solve(tracer, src)

    first = first_call(call)
    once = first_call(call)
    timed = measure(call, repeats_for(once, _budget(quick)), warmup=0)
    counts = [int(im.n_images) for im in call()] if loop else np.asarray(call().n_images).tolist()
    _line(
        f"twinlens numba {'loop' if loop else 'batch'}",
        "twinlens",
        first_call_s=first,
        threads=_threads(),
        threading_layer=threading_layer(),
        images=np.bincount(counts).tolist(),
        **timed,
    )


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def case_jax(quick: bool, batch_size: int | None = None) -> None:
    from twinlens.backend import jax_runtime
    from twinlens.lensing.lens_equation import ImageSolver, jax_batch_size

    jax = jax_runtime.load()
    solver = ImageSolver() if batch_size is None else ImageSolver(batch_size=batch_size)
    src = jax.numpy.asarray(sources())
    values = jax.numpy.asarray(list(LENS.values()))

    @jax.jit
    def solve(params: Any, s: Any) -> Any:
        return solver.solve(lens(*params), s)

    def call() -> Any:
        out = solve(values, src)
        return out.positions

    first = first_call(call)
    once = first_call(call)
    timed = measure(call, repeats_for(once, _budget(quick)), warmup=0)
    counts = np.asarray(solve(values, src).n_images)
    _line(
        "twinlens jax batch",
        "twinlens",
        device=str(jax.devices()[0]),
        batch_size=jax_batch_size(solver),
        first_call_s=first,
        compile_s=compile_estimate(first, timed),
        images=np.bincount(counts).tolist(),
        **timed,
    )


def case_lenstronomy(quick: bool, variant: str) -> None:
    try:
        from lenstronomy.LensModel.lens_model import LensModel
        from lenstronomy.LensModel.Solver.lens_equation_solver import LensEquationSolver
    except ImportError:
        _line(f"lenstronomy {variant}", "lenstronomy", skipped="lenstronomy is not installed")
        return
    from twinlens import convert
    from twinlens.lensing.lens_equation import ImageSolver

    tracer = lens(**LENS)
    names, params = zip(*(convert.to_lenstronomy(p) for p in tracer.lenses[0].mass), strict=True)
    names = tuple(variant if n == "EPL" else n for n in names)
    peer = LensEquationSolver(LensModel(list(names)))
    n = 30 if quick else 200
    src = sources()[:n]

    def call() -> Any:
        return [peer.image_position_from_source(bx, by, list(params)) for bx, by in src]

    first = first_call(call)
    timed = measure(call, 1 if quick else 3, warmup=0, per_call=1)
    scale = N_SOURCES / n  # per 1,000 sources
    for key in ("wall_median_ms", "wall_min_ms", "cpu_ms"):
        timed[key] *= scale
    # agreement with ours on the same sources
    ours = ImageSolver().solve(tracer, src)
    same, worst = 0, 0.0
    for i, (x, y) in enumerate(call()):
        mine = ours.positions[i][ours.mask[i]]
        theirs = np.stack([x, y], axis=-1)
        if len(mine) == len(theirs):
            same += 1
            if len(mine):
                d = np.linalg.norm(mine[:, None] - theirs[None], axis=-1).min(axis=1)
                worst = max(worst, float(d.max()))
    _line(
        f"lenstronomy {variant}",
        "lenstronomy",
        timed_sources=n,
        first_call_s=first,
        same_count=f"{same}/{n}",
        max_position_difference=worst,
        **timed,
    )


def run_case(case: str, quick: bool) -> None:
    if case == "numba-batch":
        case_numba(quick, loop=False)
    elif case == "numba-loop":
        case_numba(quick, loop=True)
    elif case == "jax-batch":
        case_jax(quick)
    elif case.startswith("jax-batch-") and case.removeprefix("jax-batch-").isdigit():
        case_jax(quick, int(case.removeprefix("jax-batch-")))
    elif case.startswith("lenstronomy-"):
        case_lenstronomy(quick, case.split("-", 1)[1])
    else:
        raise SystemExit(f"unknown case {case!r}; choose from {', '.join(CASES)}")


def main() -> None:
    cases_main(
        __file__,
        WORKLOAD,
        CASES,
        run_case,
        lambda lines: speedups(WORKLOAD, lines),
        __doc__.splitlines()[0],
    )


if __name__ == "__main__":
    sys.exit(main())

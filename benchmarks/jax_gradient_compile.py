"""What a user's own JAX sampler pays for the time-delay example: the joint likelihood (imaging,
image-plane positions of a quad, delays) and its parts, each as ``jax.jit`` of the value and of
``jax.grad``, with tracing and lowering (``jit(f).lower(v)``) timed apart from XLA's compile
(``.compile()``), then the compiled program's steady time per call.

    python benchmarks/jax_gradient_compile.py                 # every part, value and gradient
    python benchmarks/jax_gradient_compile.py --parts joint --forms grad
    python benchmarks/jax_gradient_compile.py --quick         # the parts, not the whole

The parts: ``joint`` (the example's likelihood, ``like(v)`` on a JAX array), ``point_source``
(the point-source term alone: positions and delays), ``positions`` (the image-plane positional
chi^2 alone), ``solver`` (the image solver alone: a weighted sum of the image positions),
``delays`` (the delay chi^2 alone) and ``imaging`` (the imaging term alone, on the lens and
host parameters). One JSON line per part and form (value or gradient): ``lower_s``,
``compile_s``, ``median_ms`` and ``min_ms``. JAX's on-disk cache is off unless
``TWINLENS_JAX_CACHE_DIR`` is set; leave it unset to measure the compile.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from timing import emit, median_and_min_ms

from twinlens.backend import jax_runtime
from twinlens.job.config import load_config
from twinlens.job.timedelay import write_timedelay_example
from twinlens.likelihood.point_source import image_plane_chi_squared, time_delay_chi_squared

PARTS = ("joint", "point_source", "positions", "solver", "delays", "imaging")


def _parts(like: Any) -> dict[str, tuple[Callable[[Any], Any], np.ndarray]]:
    """Each part as a function of its own vector, with the vector it is timed at (the example's
    start, the truth)."""
    psl = like.point_source_likelihood
    start = like.reference

    def members(v: Any) -> tuple[Any, Any]:
        return like._members([v[i] for i in range(len(like.free))])

    def point_source(v: Any) -> Any:
        return psl.log_likelihood(*members(v), "jax")

    def positions(v: Any) -> Any:
        tracer, point = members(v)
        return image_plane_chi_squared(
            tracer, point, psl.data, psl.solver, "jax", psl.magnification_limit
        )

    def solver(v: Any) -> Any:
        # the image solver alone: a weighted sum of the image positions
        jnp = jax_runtime.load().numpy
        tracer, point = members(v)
        images = psl.solver.solve(tracer, jnp.stack(point.centre) * 1.0, "jax")
        weights = jnp.arange(1.0, 1.0 + images.positions.size).reshape(images.positions.shape)
        return jnp.sum(jnp.where(images.mask[:, None], images.positions, 0.0) * weights)

    def delays(v: Any) -> Any:
        return time_delay_chi_squared(*members(v), psl.data, "jax")

    imaging = like.imaging
    return {
        "joint": (like, start),
        "point_source": (point_source, start),
        "positions": (positions, start),
        "solver": (solver, start),
        "delays": (delays, start),
        "imaging": (imaging, imaging.reference),
    }


def _time(jax: Any, name: str, form: str, fn: Callable[[Any], Any], v: np.ndarray) -> np.ndarray:
    """One line: trace and lower, XLA's compile, then the steady calls; returns the result."""
    f = jax.jit(jax.grad(fn)) if form == "grad" else jax.jit(fn)
    x = jax.numpy.asarray(v)
    t0 = time.perf_counter()
    lowered = f.lower(x)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    timing = median_and_min_ms(lambda: compiled(x), repeats=7, warmup=1)
    out = np.asarray(compiled(x))
    emit(
        case="jax_gradient_compile",
        part=name,
        form=form,
        lower_s=t1 - t0,
        compile_s=t2 - t1,
        **timing,
        finite=bool(np.all(np.isfinite(out))),
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--quick", action="store_true", help="the parts only, not the joint")
    parser.add_argument("--forms", nargs="+", choices=("value", "grad"), default=["value", "grad"])
    parser.add_argument("--save", help="write each result to this .npz (to compare two trees)")
    args = parser.parse_args(argv)
    jax = jax_runtime.load()
    with tempfile.TemporaryDirectory() as tmp:
        like = load_config(write_timedelay_example(Path(tmp))).objective("jax").likelihood
    parts = _parts(like)
    names = [p for p in args.parts if not (args.quick and p == "joint")]
    results = {}
    for name in names:
        fn, v = parts[name]
        for form in args.forms:
            results[f"{name}_{form}"] = _time(jax, name, form, fn, v)
    if args.save:
        np.savez(args.save, **results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

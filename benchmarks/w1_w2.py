"""W1 and W2 of the design (elliptical Gaussian and 30-Gaussian MGE deflections on 400x400
points), on our three backends and, where installed, lenstronomy and autogalaxy, in one run.

    python benchmarks/w1_w2.py            # ours, plus peers found in this environment
    python benchmarks/w1_w2.py --quick    # fewer repeats

One JSON line per case: steady-state median seconds (after warm-up), JAX's first call (compile
plus one run) apart, and the ratio against lenstronomy measured in this same run.
"""

from __future__ import annotations

import argparse
import importlib.util

import numpy as np
from timing import emit, first_call, median_time

from twinlens import convert
from twinlens.backend import jax_runtime
from twinlens.mass import MGE, Gaussian

GRID = np.linspace(-5.0, 5.0, 400)
XY = np.stack(np.meshgrid(GRID, GRID), axis=-1).reshape(-1, 2)
WORKLOADS = {
    "W1": Gaussian.from_axis_ratio(q=0.7, angle=30.0, centre=(0.05, -0.02), sigma=0.5),
    "W2": MGE.from_axis_ratio(np.geomspace(0.01, 5.0, 30), np.ones(30), q=0.7, angle=30.0),
}


def _lenstronomy(profile):
    if importlib.util.find_spec("lenstronomy") is None:
        return None
    from lenstronomy.LensModel.lens_model import LensModel

    name, kwargs = convert.to_lenstronomy(profile)
    model = LensModel([name])
    x, y = XY[:, 0].copy(), XY[:, 1].copy()
    return lambda: model.alpha(x, y, [kwargs])


def _autogalaxy(profile):
    if importlib.util.find_spec("autogalaxy") is None or not isinstance(profile, Gaussian):
        return None
    import autogalaxy as ag

    name, kwargs = convert.to_autogalaxy(profile)
    mp = getattr(ag.mp, name)(**kwargs)
    grid = ag.Grid2DIrregular(values=XY[:, ::-1].copy())  # autogalaxy wants (y, x)
    return lambda: mp.deflections_yx_2d_from(grid=grid)


def main() -> None:
    jax_runtime.load()  # float64 on before any JAX array is made (they would be float32)
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    for workload, profile in WORKLOADS.items():
        peer = _lenstronomy(profile)
        base = median_time(peer, repeats=max(3, repeats // 2), warmup=1) if peer else None
        if base is not None:
            emit(workload=workload, code="lenstronomy", steady_s=base, points=len(XY))
        ag = _autogalaxy(profile)
        if ag is not None:
            t = median_time(ag, repeats=3, warmup=1)
            emit(
                workload=workload,
                code="autogalaxy",
                steady_s=t,
                vs_lenstronomy=base / t if base else None,
            )
        for backend in ("numpy", "numba", "jax"):
            xy = XY
            if backend == "jax":
                import jax.numpy as jnp

                xy = jnp.asarray(XY)

            def call(xy=xy, backend=backend, profile=profile):
                return profile.deflections(xy, backend=backend)

            first = first_call(call)
            steady = median_time(call, repeats=repeats)
            emit(
                workload=workload,
                code=f"twinlens-{backend}",
                first_call_s=first,
                steady_s=steady,
                speedup_vs_lenstronomy=(base / steady) if base else None,
            )


if __name__ == "__main__":
    main()

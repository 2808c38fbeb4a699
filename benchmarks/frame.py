"""Dispatch cost of the simplest kernel on the design's 400x400 grid (pixel centres), per backend.

    python benchmarks/frame.py

One JSON line per backend: first call (compile + run) and steady-state median, seconds.
"""

from __future__ import annotations

from timing import emit, first_call, median_time
from workloads import grid_points

from twinlens.kernels.geometry import TO_PROFILE_FRAME


def main() -> None:
    x, y = grid_points().T.copy()
    kernel = TO_PROFILE_FRAME
    for backend in ("numpy", "numba", "jax"):
        xs, ys = x, y
        if backend == "jax":
            from twinlens.backend import jax_runtime

            jnp = jax_runtime.load().numpy  # float64 on before the arrays are made

            xs, ys = jnp.asarray(x), jnp.asarray(y)

        def call(xs=xs, ys=ys, backend=backend):
            return kernel(xs, ys, 0.05, -0.02, 0.5236, backend=backend)

        first = first_call(call)
        steady = median_time(call)
        emit(case="frame_400x400", backend=backend, first_call_s=first, steady_s=steady)


if __name__ == "__main__":
    main()

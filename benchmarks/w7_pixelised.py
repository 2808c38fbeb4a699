"""W7: the pixelised-source log-evidence on the W5 data (100 x 100 pixels at 0.05", 4 x 4
sub-pixels, SIE + shear, 21 x 21 PSF) inside a 2.5" circular mask, with a Delaunay source of
about 1,000 vertices (a 36 x 36 overlay) and a 40 x 40 rectangular source.

Prints one JSON line per case: seconds per evaluation (median after warm-up) on numba and JAX,
JAX compile time apart, and with ``--vmap N`` a JAX vmap over N lens parameter sets. The peers
(autogalaxy) are not measured here yet.

    .venv/bin/python benchmarks/w7_pixelised.py [--quick] [--vmap 16] [--backends numba,jax]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace

# numba's OpenMP threads must not spin while Qhull locates points (see fit/pixelised/loops.py)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
from timing import block, call_times, first_call
from workloads import simulate_dataset, w5_lens_mass, w5_truth

from twinlens.fit.pixelised import Constant, Delaunay, Pixelization, Rectangular, log_evidence
from twinlens.fit.tracer import Galaxy, Tracer

MASK_RADIUS = 2.5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a 40 x 40 image, for a smoke run")
    parser.add_argument("--vmap", type=int, default=0, help="JAX vmap batch size (0: skip)")
    parser.add_argument("--backends", default="numba,jax")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    side = 40 if args.quick else 100
    data = simulate_dataset(w5_truth(), side=side)
    data = data.with_grid(data.grid.circular_mask(MASK_RADIUS))
    lens = Tracer(Galaxy(mass=w5_lens_mass()))
    meshes = {"delaunay": Delaunay((36, 36)), "rectangular": Rectangular((40, 40))}
    for name, mesh in meshes.items():
        pix = Pixelization(mesh, Constant(1.0))
        ref = None
        for backend in args.backends.split(","):
            row = {"case": f"w7_{name}", "backend": backend, "pixels": int(data.grid.used.sum())}
            fn = lambda b=backend, p=pix: log_evidence(lens, data, p, b)  # noqa: E731
            if backend == "jax":
                row["first_call_s"] = first_call(fn)
            times = call_times(fn, repeats=args.repeats, warmup=1)
            row["seconds"] = statistics.median(times)
            value = float(fn())
            row["log_evidence"] = value
            ref = value if ref is None else ref
            row["rel_diff_vs_first_backend"] = abs(value - ref) / abs(ref)
            print(json.dumps(row), flush=True)
        if args.vmap and "jax" in args.backends:
            from twinlens.backend import jax_runtime

            jax = jax_runtime.load()
            sie, shear = w5_lens_mass()

            def one(theta_e, lam, sie=sie, shear=shear, pix=pix):
                t = Tracer(Galaxy(mass=(replace(sie, einstein_radius=theta_e), shear)))
                return log_evidence(t, data, replace(pix, regularization=Constant(lam)), "jax")

            batched = jax.jit(jax.vmap(one))
            thetas = jax.numpy.asarray(1.2 + 1e-3 * np.linspace(-1, 1, args.vmap))
            lams = jax.numpy.asarray(np.logspace(-1, 1, args.vmap))
            t0 = time.perf_counter()
            block(batched(thetas, lams))
            compile_s = time.perf_counter() - t0
            times = call_times(lambda f=batched, a=thetas, b=lams: f(a, b), repeats=3, warmup=0)
            row = {
                "case": f"w7_{name}_vmap{args.vmap}",
                "backend": "jax",
                "first_call_s": compile_s,
                "seconds": statistics.median(times),
                "seconds_per_member": statistics.median(times) / args.vmap,
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

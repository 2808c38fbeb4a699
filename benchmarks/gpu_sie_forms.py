"""Is the SIE's arithmetic the cost of a W5 batch on a GPU? Two forms of the elliptical SIE
deflection side by side under ``jit(vmap)`` over a batch of traced parameter sets.

On an H200 the W5 batch's device time is one fused kernel (the ray tracing), and JAXtronomy's
program was as fast (``docs/benchmarks.rst``, "On a GPU"). Ours evaluates ``arctan(z) / z`` and
``arctanh(z) / z`` with one square root, a logarithm, two polynomials and three divisions
(:mod:`twinlens.kernels.inverse_trig`), chosen because numba vectorises it on a CPU. This script
times, per form, the compiled program on device-resident inputs, its compile time, and the
square roots, divisions and logarithms in its optimised HLO:

* ``twinlens``: :func:`twinlens.kernels.isothermal.deflections_elliptical` as the library runs
  it;
* ``jnp``: the same deflection with ``jnp.arctan`` and ``jnp.arctanh`` (``q < 1`` only), as
  JAXtronomy writes it.

The largest difference between the two, relative to ``|alpha|``, is printed after them. One
JSON line per form.

    python benchmarks/gpu_sie_forms.py            # on the GPU machine
    python benchmarks/gpu_sie_forms.py --smoke    # any machine: small sizes
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from timing import emit

from twinlens.backend import jax_runtime
from twinlens.kernels import isothermal
from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity
from twinlens.kernels.geometry import from_profile_frame, to_profile_frame


def twinlens(x: Any, y: Any, p: Any) -> Any:
    q, phi = axis_ratio_from_ellipticity(p[2], p[3])
    return isothermal.deflections_elliptical(x, y, p[0], p[1], q, phi, p[4], 0.0)


def jnp_library(x: Any, y: Any, p: Any) -> Any:
    jnp = jax_runtime.load().numpy
    q, phi = axis_ratio_from_ellipticity(p[2], p[3])
    eps = jnp.sqrt((1.0 - q) * (1.0 + q))
    amp = p[4] * jnp.sqrt(q)
    xp, yp = to_profile_frame(x, y, p[0], p[1], phi)
    psi = jnp.sqrt(jnp.maximum(q * q * xp * xp + yp * yp, isothermal.R2_FLOOR))
    ax = amp / eps * jnp.arctan(eps * xp / psi)
    ay = amp / eps * jnp.arctanh(eps * yp / psi)
    return from_profile_frame(ax, ay, phi)


def hlo_counts(compiled: Any) -> dict[str, int]:
    text = compiled.as_text()
    return {op: text.count(f" {op}(") for op in ("sqrt", "rsqrt", "divide", "atan2", "log")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small sizes, any machine")
    parser.add_argument("--points", type=int, default=160_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    n, b, calls = (4_000, 4, 3) if args.smoke else (args.points, args.batch, args.calls)
    jax = jax_runtime.load()
    rng = np.random.default_rng(0)
    x = jax.device_put(rng.uniform(-2.5, 2.5, n))
    y = jax.device_put(rng.uniform(-2.5, 2.5, n))
    # W3's SIE (theta_E 1.2, q 0.75) with each member's centre and ellipticity perturbed
    base = np.array([0.0, 0.0, 0.1429, 0.0, 1.2])
    params = jax.device_put(base + 0.01 * rng.standard_normal((b, 5)))
    outputs = {}
    for name, form in (("twinlens", twinlens), ("jnp", jnp_library)):
        program = jax.jit(jax.vmap(lambda p, f=form: f(x, y, p)))
        t0 = time.perf_counter()
        compiled = program.lower(params).compile()
        compile_s = time.perf_counter() - t0
        jax.block_until_ready(compiled(params))
        t0 = time.perf_counter()
        for _ in range(calls):
            out = compiled(params)
        jax.block_until_ready(out)
        per_call = (time.perf_counter() - t0) / calls
        outputs[name] = np.stack([np.asarray(o) for o in out])
        emit(
            workload="SIE forms",
            name=name,
            device=str(jax.devices()[0]),
            points=n,
            batch=b,
            compile_s=compile_s,
            ms_per_call=per_call * 1e3,
            ns_per_point=per_call / (n * b) * 1e9,
            hlo=hlo_counts(compiled),
        )
    ref = outputs["twinlens"]
    norm = np.hypot(ref[0], ref[1])
    diff = np.hypot(*(outputs["jnp"] - ref)) / norm
    emit(workload="SIE forms", case="jnp against twinlens", max_rel_diff=float(diff.max()))


if __name__ == "__main__":
    main()

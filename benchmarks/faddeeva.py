"""Throughput and accuracy of twinlens.special.wofz against scipy.special.wofz.

    python benchmarks/faddeeva.py              # throughput, 1e6 points per case
    python benchmarks/faddeeva.py --accuracy   # worst errors on dense grids and vs mpmath

Throughput: one JSON line per (points, implementation): scipy.special.wofz, our numba on one
thread and on all threads, our JAX under ``jit`` (steady state; compile time apart), each with
its ratio to scipy measured in the same run. Two point sets of 1e6 points in the upper half
plane: ``loguniform`` (|z| log-uniform on 1e-8 .. 1e8, angle uniform on 0 .. pi: mostly far
out, where scipy's continued fraction is cheap) and ``box`` (Re z uniform on -10 .. 10, Im z on
0 .. 10: where w varies and scipy works hardest).

Accuracy: relative error ``|w - w_ref| / |w_ref|`` of numba and JAX against scipy on a grid of
|z| log-spaced 1e-8 .. 1e8 times angles 0 .. pi plus lines at Im z = 0, 1e-300, 1e-100, 1e-12,
1e-6 and 1e-3, numba against JAX, and numba, JAX and scipy against mpmath (30 digits) near the
real axis, where the rational approximation is least accurate.
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.special as sc
from timing import emit, first_call, median_time

import twinlens
from twinlens.special import wofz

N_POINTS = 1_000_000


def point_sets(rng: np.random.Generator) -> dict[str, np.ndarray]:
    r = np.exp(rng.uniform(np.log(1e-8), np.log(1e8), N_POINTS))
    loguniform = r * np.exp(1j * rng.uniform(0.0, np.pi, N_POINTS))
    loguniform = loguniform.real + 1j * np.abs(loguniform.imag)
    box = rng.uniform(-10.0, 10.0, N_POINTS) + 1j * rng.uniform(0.0, 10.0, N_POINTS)
    return {"loguniform": loguniform, "box": box}


def throughput() -> None:
    import jax

    twinlens.backend.jax_runtime.load()
    all_threads = twinlens.get_num_threads()
    for name, z in point_sets(np.random.default_rng(0)).items():
        t_scipy = median_time(lambda z=z: sc.wofz(z))
        emit(case=f"wofz_{name}", impl="scipy.special.wofz", n=N_POINTS, steady_s=t_scipy,
             ns_per_point=1e9 * t_scipy / N_POINTS)  # fmt: skip
        for threads in sorted({1, all_threads}):
            twinlens.set_num_threads(threads)
            first = first_call(lambda z=z: wofz(z, backend="numba"))
            t = median_time(lambda z=z: wofz(z, backend="numba"))
            emit(case=f"wofz_{name}", impl="twinlens numba", threads=threads, n=N_POINTS,
                 first_call_s=first, steady_s=t, ns_per_point=1e9 * t / N_POINTS,
                 speedup_vs_scipy=t_scipy / t)  # fmt: skip
        twinlens.set_num_threads(all_threads)
        zj = jax.device_put(z)
        fn = jax.jit(lambda v: wofz(v))
        first = first_call(lambda zj=zj, fn=fn: fn(zj))
        t = median_time(lambda zj=zj, fn=fn: fn(zj))
        emit(case=f"wofz_{name}", impl="twinlens jax.jit", device=str(zj.devices().pop()),
             n=N_POINTS, compile_s=first - t, steady_s=t, ns_per_point=1e9 * t / N_POINTS,
             speedup_vs_scipy=t_scipy / t)  # fmt: skip


def _worst(err: np.ndarray, z: np.ndarray) -> dict:
    i = int(np.argmax(err))
    return {"max_rel": float(err[i]), "at": [float(z[i].real), float(z[i].imag)]}


def accuracy() -> None:
    import mpmath

    r = np.logspace(-8, 8, 4001)
    theta = np.linspace(0.0, np.pi, 1441)
    polar = (r[:, None] * np.exp(1j * theta[None, :])).ravel()
    x = np.concatenate([r, -r])
    lines = [x + 1j * y for y in (0.0, 1e-300, 1e-100, 1e-12, 1e-6, 1e-3)]
    z = np.concatenate([polar.real + 1j * np.abs(polar.imag), *lines])
    ref = sc.wofz(z)
    nb = wofz(z, backend="numba")
    jx = np.asarray(wofz(z, backend="jax"))
    emit(check="grid_vs_scipy", n=z.size, numba=_worst(np.abs(nb - ref) / np.abs(ref), z),
         jax=_worst(np.abs(jx - ref) / np.abs(ref), z))  # fmt: skip
    emit(check="grid_numba_vs_jax", n=z.size, **_worst(np.abs(nb - jx) / np.abs(jx), z))

    rng = np.random.default_rng(1)
    n = 3000
    near = rng.uniform(-30, 30, n) + 1j * np.exp(rng.uniform(np.log(1e-300), 0.0, n))
    general = np.exp(rng.uniform(np.log(1e-8), np.log(1e8), n)) * np.exp(
        1j * rng.uniform(0, np.pi, n)
    )
    zm = np.concatenate([near, general.real + 1j * np.abs(general.imag)])

    def mp_w(v: complex) -> complex:
        extra = int(2 * np.log10(max(abs(v), 1.0))) + 5  # exp(+-z**2) factors cancel
        with mpmath.workdps(30 + extra):
            vm = mpmath.mpc(v.real, v.imag)
            return complex(mpmath.exp(-vm * vm) * mpmath.erfc(-1j * vm))

    exact = np.array([mp_w(v) for v in zm])
    out = {
        "numba": wofz(zm, backend="numba"),
        "jax": np.asarray(wofz(zm, backend="jax")),
        "scipy": sc.wofz(zm),
    }
    emit(check="vs_mpmath_30_digits", n=zm.size,
         **{k: _worst(np.abs(v - exact) / np.abs(exact), zm) for k, v in out.items()})  # fmt: skip


if __name__ == "__main__":
    accuracy() if "--accuracy" in sys.argv[1:] else throughput()

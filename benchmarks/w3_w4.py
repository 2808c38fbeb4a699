"""W3 and W4 of the design (SIE and EPL deflections on 400x400 points), on our three backends
and, where installed, lenstronomy (numpy, and numba for the EPL), JAXtronomy and herculens (JAX,
jit), all timed in one run.

    python benchmarks/w3_w4.py            # ours, plus the peers found in this environment
    python benchmarks/w3_w4.py --quick    # fewer repeats

W3 is an SIE (theta_E 1.2", q 0.75, angle 20 deg, centre 0). W4 is an EPL (gamma 2.2,
theta_E 1.2", q 0.8, angle 0, centre 0). The points are a 400x400 grid over [-5, 5]" (no
point falls on the centre).

Each case prints one JSON line. It holds the steady-state median seconds (after warm-up) and
the first call apart (JAX compiles on its first call, numba on its first call in a new
process). Our lines also give the speed ratios against every peer measured in the same run and
the largest relative difference ``|ours - peer| / |peer|`` of the deflections, point by point,
against each peer. Peer lines give their difference from our numpy result. The SIEs of
lenstronomy, JAXtronomy and herculens are their NIEs with a 1e-10" core, so they differ from
the exact SIE by about 1e-10" / r relative: 6e-9 at this grid's innermost points (r = 0.018").
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import types
from functools import partial
from typing import Any

import numpy as np
from timing import emit, first_call, median_time

from twinlens import convert
from twinlens.backend import jax_runtime
from twinlens.mass import SIE, PowerLaw

GRID = np.linspace(-5.0, 5.0, 400)
XY = np.stack(np.meshgrid(GRID, GRID), axis=-1).reshape(-1, 2)
WORKLOADS = {
    "W3": SIE.from_axis_ratio(q=0.75, angle=20.0, einstein_radius=1.2),
    "W4": PowerLaw.from_axis_ratio(q=0.8, angle=0.0, einstein_radius=1.2, slope=2.2),
}


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _lenstronomy(name: str, kwargs: dict) -> Any:
    from lenstronomy.LensModel.lens_model import LensModel

    model = LensModel([name])
    x, y = XY[:, 0].copy(), XY[:, 1].copy()
    return lambda: model.alpha(x, y, [kwargs])


def _jaxtronomy(name: str, kwargs: dict) -> Any:
    import jax
    import jax.numpy as jnp
    from jaxtronomy.LensModel.lens_model import LensModel

    model = LensModel([name])
    x, y = jnp.asarray(XY[:, 0]), jnp.asarray(XY[:, 1])
    fn = jax.jit(lambda x, y, kw: model.alpha(x, y, [kw]))
    return lambda: fn(x, y, kwargs)


def _herculens_clip_shim() -> None:
    """herculens 0.3 calls ``jnp.clip(..., a_max=)``, which JAX 0.10 no longer accepts; give only
    its NIE module a ``clip`` that still takes those keywords."""
    import jax.numpy as jnp

    nie = importlib.import_module("herculens.MassModel.Profiles.nie")
    if getattr(nie.jnp, "_twinlens_shim", False):
        return

    def clip(a: Any, a_min: Any = None, a_max: Any = None, **kw: Any) -> Any:
        return jnp.clip(a, kw.get("min", a_min), kw.get("max", a_max))

    names = {n: getattr(jnp, n) for n in dir(jnp) if not n.startswith("__")}
    nie.jnp = types.SimpleNamespace(**(names | {"clip": clip, "_twinlens_shim": True}))


def _herculens(name: str, kwargs: dict) -> Any:
    import jax
    import jax.numpy as jnp

    _herculens_clip_shim()
    mass_model = importlib.import_module("herculens.MassModel.mass_model")
    model = mass_model.MassModel([name])
    x, y = jnp.asarray(XY[:, 0]), jnp.asarray(XY[:, 1])
    fn = jax.jit(lambda x, y, kw: model.alpha(x, y, [kw]))
    return lambda: fn(x, y, kwargs)


def _peers(name: str, kwargs: dict) -> list[tuple[str, Any]]:
    """(label, zero-argument callable returning (alpha_x, alpha_y)) for each installed peer."""
    peers = []
    if _installed("lenstronomy"):
        peers.append(("lenstronomy", _lenstronomy(name, kwargs)))
        if name == "EPL":
            peers.append(("lenstronomy-EPL_NUMBA", _lenstronomy("EPL_NUMBA", kwargs)))
    if _installed("jaxtronomy"):
        peers.append(("jaxtronomy-jit", _jaxtronomy(name, kwargs)))
    if _installed("herculens"):
        peers.append(("herculens-jit", _herculens(name, kwargs)))
    return peers


def _as_xy(result: Any) -> np.ndarray:
    if isinstance(result, tuple | list):
        return np.stack([np.asarray(r) for r in result], axis=-1)
    return np.asarray(result).T  # herculens returns one (2, N) array


def _max_rel_diff(ours: np.ndarray, ref: np.ndarray) -> float:
    err = np.linalg.norm(ours - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    return float(np.max(err))


def _rounded(d: dict[str, float]) -> dict[str, float]:
    return {k: float(f"{v:.3g}") for k, v in d.items() if math.isfinite(v)}


def main() -> None:
    jax_runtime.load()  # float64 on before any JAX array is made (they would be float32)
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    for workload, profile in WORKLOADS.items():
        name, kwargs = convert.to_lenstronomy(profile)
        reference = np.asarray(profile.deflections(XY, backend="numpy"))
        peer_times: dict[str, float] = {}
        peer_values: dict[str, np.ndarray] = {}
        for label, call in _peers(name, kwargs):
            first = first_call(call)
            steady = median_time(call, repeats=repeats, warmup=1)
            peer_times[label] = steady
            peer_values[label] = _as_xy(call())
            emit(
                workload=workload,
                code=label,
                first_call_s=first,
                steady_s=steady,
                points=len(XY),
                max_rel_diff_vs_twinlens_numpy=_max_rel_diff(peer_values[label], reference),
            )
        for backend in ("numpy", "numba", "jax", "jax-jit"):
            xy = XY
            if backend.startswith("jax"):
                import jax
                import jax.numpy as jnp

                xy = jnp.asarray(XY)

            def call(xy=xy, backend=backend, profile=profile):
                return profile.deflections(xy, backend=backend)

            if backend == "jax-jit":  # the whole call under one jit, as a JAX user runs it
                call = partial(jax.jit(lambda xy, p: p.deflections(xy)), xy, profile)

            first = first_call(call)
            steady = median_time(call, repeats=repeats)
            ours = np.asarray(call())
            emit(
                workload=workload,
                code=f"twinlens-{backend}",
                first_call_s=first,
                steady_s=steady,
                speedup_vs=_rounded({k: t / steady for k, t in peer_times.items()}),
                max_rel_diff_vs={k: _max_rel_diff(ours, v) for k, v in peer_values.items()},
            )


if __name__ == "__main__":
    main()

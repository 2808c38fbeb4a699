"""W9 of the design: one aperture velocity dispersion, ours against lenstronomy's ``Galkin``,
every line timed side by side in one process.

The workload (:func:`w9_case`): a spherical power law (``theta_E`` 1.2", ``gamma`` 2.1),
Hernquist light (``a`` 0.9"), Osipkov-Merritt anisotropy (``r_ani`` 1.5"), a circular aperture
of radius 1" and Gaussian seeing of FWHM 0.7", at ``z_d = 0.5``, ``z_s = 2``
(``tests/test_kinematics_peers.py``'s ``w9`` case).

Lines (each call a new ``r_ani``, 16 in turn near 1.5"; the batch 1,024 of them):

* ``twinlens numba``: :func:`~twinlens.kinematics.velocity_dispersion` on numba;
  ``twinlens numba rule``: the same on the aperture's radial rule, computed once
  (:func:`~twinlens.kinematics.radial_rule.aperture_rule`, as the cosmography likelihood
  does);
* ``twinlens jax-jit``: ``jax.jit`` of it as a function of ``(theta_E, gamma, a, r_ani,
  fwhm)``, the vector already on the device; ``twinlens jax vmap``: ``jax.jit(jax.vmap(...))``
  over the batch, per evaluation; ``twinlens jax value+grad``: ``jax.jit(jax.value_and_grad)``
  of the same function (all five derivatives);
* ``lenstronomy Galkin default``: ``Galkin.dispersion`` at its default numerics and 1,000
  draws; ``lenstronomy Galkin test``: at the settings of ``tests/test_kinematics_peers.py``
  (``interpol_grid_num`` 1,000, ``max_integrate`` 1e3, ``min_integrate`` 1e-5) with that test's
  8 x 5,000 draws in one call. Galkin is a Monte Carlo: its accuracy is the scatter of its
  values about ours (within about 3e-10), measured over the timed calls (``rms_rel``).

Every line's first call is apart (``first_call_s``; ``compile_s`` for JAX: that less the
fastest steady call). Then the lines are timed in alternating rounds, so that other work on
the machine falls on each alike; each gives the median and least ``ms_per_eval``. The
``speedup`` line gives each Galkin line's median over each of ours, ``grad_cost`` the JAX
value-and-gradient call over the value call, and ``goals`` the design's target: our numba call
at least 100 times faster than Galkin at the test's accuracy.

Run from the repository root with the package importable, in an environment with lenstronomy
(the peers' environment of ``docs/benchmarks.rst``)::

    python benchmarks/w9_kinematics.py [--rounds 5] [--batch 1024] [--no-peers] [--no-jax]
"""

from __future__ import annotations

import importlib.util
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from peers import version
from timing import (
    block,
    emit,
    load_average,
    row_head,
    side_by_side_arguments,
    threading_layer,
)

import twinlens.kinematics as K
from twinlens.cosmology import lens_distances
from twinlens.kinematics.dispersion import rule_dispersion
from twinlens.kinematics.radial_rule import aperture_rule

THETA_E, GAMMA, HERNQUIST_A, R_ANI, RADIUS, FWHM = 1.2, 2.1, 0.9, 1.5, 1.0, 0.7
Z_D, Z_S = 0.5, 2.0
N_VALUES = 16
#: seconds of calls per line in one round
ROUND_S = 0.3
#: Galkin's numerics and draws per call: its defaults, and the peers test's
GALKIN = {
    "lenstronomy Galkin default": (None, 1000),
    "lenstronomy Galkin test": (
        {"interpol_grid_num": 1000, "max_integrate": 1e3, "min_integrate": 1e-5},
        40000,
    ),
}
GOAL = ("twinlens numba", "lenstronomy Galkin test", 100.0)
Line = tuple[Callable[[], Any], int]


def w9_case(r_ani: Any = R_ANI, xp: Any = np) -> tuple:
    """W9's arguments to :func:`~twinlens.kinematics.velocity_dispersion` (``xp``: the
    module that makes the parameters, numpy or ``jax.numpy``)."""
    return (
        K.PowerLawMass(xp.asarray(THETA_E), xp.asarray(GAMMA)),
        K.Hernquist(xp.asarray(HERNQUIST_A)),
        K.OsipkovMerritt(r_ani),
        K.CircularAperture(RADIUS),
        lens_distances(Z_D, Z_S),
        K.GaussianSeeing(xp.asarray(FWHM)),
    )


def r_ani_values(n: int, seed: int = 0) -> np.ndarray:
    """``n`` anisotropy radii within 20% of W9's."""
    return R_ANI * (1.0 + 0.2 * np.random.default_rng(seed).uniform(-1.0, 1.0, n))


# -- lines -----------------------------------------------------------------------------------


def numba_line(values: np.ndarray) -> Line:
    turn = itertools.cycle(values)
    return (lambda: K.velocity_dispersion(*w9_case(float(next(turn))), backend="numba"), 1)


def numba_rule_line(values: np.ndarray) -> Line:
    """The same call on the aperture's radial rule, made once (what a likelihood does: its
    aperture and seeing are fixed)."""
    mass, light, _, aperture, distances, seeing = w9_case()
    rule = aperture_rule(aperture, seeing)
    turn = itertools.cycle(values)

    def call() -> Any:
        anisotropy = K.OsipkovMerritt(float(next(turn)))
        return rule_dispersion(rule, mass, light, anisotropy, distances, "numba")

    return call, 1


def jax_lines(values: np.ndarray, batch: np.ndarray) -> dict[str, Line]:
    """JAX's lines: ``jit``, ``vmap`` over ``r_ani`` and ``value_and_grad``, inputs on the
    device."""
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    jnp = jax.numpy

    def sigma(theta: Any) -> Any:
        theta_e, gamma, a, r_ani, fwhm = theta
        return K.velocity_dispersion(
            K.PowerLawMass(theta_e, gamma),
            K.Hernquist(a),
            K.OsipkovMerritt(r_ani),
            K.CircularAperture(RADIUS),
            lens_distances(Z_D, Z_S),
            K.GaussianSeeing(fwhm),
            backend="jax",
        )

    def vector(r_ani: float) -> Any:
        return jax.device_put(jnp.array([THETA_E, GAMMA, HERNQUIST_A, r_ani, FWHM]))

    on_device = [vector(float(v)) for v in values]
    stack = jax.device_put(jnp.stack([vector(float(v)) for v in batch]))
    turn = itertools.cycle(range(len(values)))
    value = jax.jit(sigma)
    both = jax.jit(jax.value_and_grad(sigma))
    vmapped = jax.jit(jax.vmap(sigma))
    return {
        "twinlens jax-jit": (lambda: value(on_device[next(turn)]), 1),
        "twinlens jax value+grad": (lambda: both(on_device[next(turn)]), 1),
        "twinlens jax vmap": (lambda: vmapped(stack), len(batch)),
    }


def galkin_lines(values: np.ndarray) -> dict[str, Line]:
    """Galkin's lines, lenstronomy's ``SPP``, ``HERNQUIST``, ``OM``, ``shell`` and Gaussian
    PSF with our distances."""
    from lenstronomy.GalKin.galkin import Galkin

    dist = lens_distances(Z_D, Z_S)
    cosmo = {"d_d": dist.d_d, "d_s": dist.d_s, "d_ds": dist.d_ds}
    model = {"mass_profile_list": ["SPP"], "light_profile_list": ["HERNQUIST"]}
    model["anisotropy_model"] = "OM"
    aperture = {"aperture_type": "shell", "r_in": 0.0, "r_out": RADIUS}
    aperture |= {"center_ra": 0.0, "center_dec": 0.0}
    psf = {"psf_type": "GAUSSIAN", "fwhm": FWHM}
    mass, light = [{"theta_E": THETA_E, "gamma": GAMMA}], [{"Rs": HERNQUIST_A, "amp": 1.0}]
    lines = {}
    for name, (numerics, draws) in GALKIN.items():
        galkin = Galkin(model, aperture, psf, cosmo, numerics)
        turn = itertools.cycle(values)

        def call(galkin: Any = galkin, draws: int = draws, turn: Any = turn) -> tuple:
            r_ani = float(next(turn))
            return r_ani, galkin.dispersion(mass, light, {"r_ani": r_ani}, draws)

        lines[name] = (call, 1)
    return lines


# -- timing ----------------------------------------------------------------------------------


def _timed_call(call: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = block(call())
    return time.perf_counter() - t0, out


def side_by_side(lines: dict[str, Line], rounds: int) -> tuple[list[dict], dict[str, list]]:
    """Each line's first call apart, then ``rounds`` rounds in which every line runs for about
    :data:`ROUND_S` seconds, its calls timed one by one; also the values the calls returned."""
    first, repeats = {}, {}
    for name, (call, _) in lines.items():
        first[name] = _timed_call(call)[0]
        once = min(_timed_call(call)[0] for _ in range(2))
        repeats[name] = max(1, round(ROUND_S / once))
    times: dict[str, list[float]] = {name: [] for name in lines}
    values: dict[str, list] = {name: [] for name in lines}
    for _ in range(rounds):
        for name, (call, _) in lines.items():
            for _ in range(repeats[name]):
                t, out = _timed_call(call)
                times[name].append(t)
                values[name].append(out)
    rows = []
    for name, (_, per_call) in lines.items():
        t = times[name]
        rows.append(
            {
                "name": name,
                "code": name.split()[0],
                "batch": per_call if per_call > 1 else None,
                "first_call_s": first[name],
                "compile_s": first[name] - min(t) if " jax" in name else None,
                "calls": len(t),
                "ms_per_eval": 1e3 * statistics.median(t) / per_call,
                "ms_per_eval_min": 1e3 * min(t) / per_call,
            }
        )
    return rows, values


def galkin_accuracy(values: dict[str, list]) -> dict[str, float]:
    """The rms relative difference of each Galkin line's values from ours (its calls return
    ``(r_ani, sigma)``)."""
    out = {}
    for name, got in values.items():
        if name.startswith("lenstronomy"):
            rel = [s / K.velocity_dispersion(*w9_case(r), backend="numba") - 1.0 for r, s in got]
            out[name] = float(np.sqrt(np.mean(np.square(rel))))
    return out


def speedups(rows: list[dict]) -> dict[str, dict[str, float]]:
    """For each of our lines, each Galkin line's median over ours, per evaluation."""
    ours = [r for r in rows if r["code"] == "twinlens"]
    theirs = [r for r in rows if r["code"] == "lenstronomy"]
    return {
        o["name"]: {t["name"]: t["ms_per_eval"] / o["ms_per_eval"] for t in theirs} for o in ours
    }


def table(rows: list[dict], ratios: dict[str, dict[str, float]], rms: dict[str, float]) -> str:
    """A plain-text summary: times, Galkin's accuracy, and the speed-ups over Galkin's lines."""
    head = f"{'line':28s} {'ms/eval':>10s} {'min':>10s} {'first s':>8s} {'rms rel':>9s}"
    lines = [head + "".join(f" {'x ' + n.split()[-1]:>10s}" for n in GALKIN)]
    for r in rows:
        acc = f"{rms[r['name']]:9.1e}" if r["name"] in rms else f"{'':9s}"
        ratio = ratios.get(r["name"], {})
        shown = "".join(f" {ratio[n]:10.1f}" if n in ratio else f" {'':10s}" for n in GALKIN)
        lines.append(f"{row_head(r, 4)} {acc}{shown}")
    return "\n".join(lines)


def main() -> None:
    title = __doc__.splitlines()[0]
    args = side_by_side_arguments(title, 5, 1024, "anisotropy radii per vmap").parse_args()
    values = r_ani_values(N_VALUES)
    lines: dict[str, Line] = {
        "twinlens numba": numba_line(values),
        "twinlens numba rule": numba_rule_line(values),
    }
    if not args.no_jax:
        lines |= jax_lines(values, r_ani_values(args.batch, seed=1))
    workload = {"workload": "W9", "load_average_start": load_average()}
    if not args.no_peers:
        if importlib.util.find_spec("lenstronomy") is None:
            emit(**workload, name="lenstronomy", skipped="not installed")
        else:
            np.random.seed(1)  # noqa: NPY002 (Galkin draws from numpy's global generator)
            lines = galkin_lines(values) | lines
            emit(**workload, case="check", version=version("lenstronomy"))
    rows, got = side_by_side(lines, args.rounds)
    rms = galkin_accuracy(got)
    for row in rows:
        emit(**workload, **row, rms_rel=rms.get(row["name"]))
    ratios = speedups(rows)
    ms = {r["name"]: r["ms_per_eval"] for r in rows}
    grad = ms.get("twinlens jax value+grad", np.nan) / ms.get("twinlens jax-jit", np.nan)
    ours, theirs, target = GOAL
    ratio = ratios.get(ours, {}).get(theirs)
    emit(
        workload="W9",
        case="speedup",
        speedup=ratios,
        grad_cost=grad,
        goals={"numba vs Galkin at the test's accuracy": {
            "target": target, "ratio": ratio, "met": None if ratio is None else ratio >= target}},
        numba_threads=numba.config.NUMBA_NUM_THREADS,
        numba_layer=threading_layer(),
        load_average_end=load_average(),
    )  # fmt: skip
    print(table(rows, ratios, rms), flush=True)
    print(f"JAX value+grad / value: {grad:.2f}", flush=True)


if __name__ == "__main__":
    main()

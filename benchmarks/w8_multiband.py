"""W8 of the design: the W5 lens seen in two bands, our multi-band log-likelihood against
lenstronomy's "multi-linear" one, every line timed side by side in one process.

The bands (:func:`w8_likelihood`):

* ``fine``: W5's dataset (100 x 100 pixels of 0.05", 4 x 4 sub-pixels, a 21 x 21 Gaussian PSF
  of FWHM 0.1", noise 0.05; :func:`workloads.simulate_dataset`);
* ``coarse``: 40 x 40 pixels of 0.13" (5.2" across, the fine band's 5"), 4 x 4 sub-pixels,
  an 11 x 11 Gaussian PSF of FWHM 0.25", noise 0.05, simulated (seed 2) with the source
  fainter (a colour).

The model is W5's (SIE + external shear, an elliptical Sersic source) with the source's
intensity solved linearly in each band (:class:`~twinlens.light.LinearSersic`, lenstronomy's
"multi-linear" mode); every other scalar (13) is free and shared by the bands
(:class:`~twinlens.likelihood.multiband.MultiBandLikelihood`). No mask, as W5.

Lines (each call evaluates a new vector, 16 near the truth in turn; the batches 64 of them):

* ``twinlens numba 1t`` (and ``2t``, numba's thread count where above 1): ``like(vector,
  "numba")``; ``twinlens numba batch``: ``like.batch(vectors, "numba")``;
* ``twinlens jax-jit``: ``like(vector, "jax")`` (one ``jax.jit`` program for both bands, the
  vector copied in and the value out); ``twinlens jax-jit device``: ``jax.jit`` of
  ``like.jax_log_likelihood`` on a vector already on the device, as a JAX search runs it;
* ``twinlens jax vmap``: ``jax.jit(jax.vmap(like.jax_log_likelihood))`` on the vectors
  already on the device; ``twinlens jax batch``: ``like.batch(vectors, "jax")``;
* ``lenstronomy MultiLinear``: ``MultiLinear.likelihood_data_given_model`` (the image
  likelihood of both bands, each band's amplitude solved) on keyword lists made beforehand;
  ``lenstronomy logL``: what its samplers call, ``FittingSequence``'s likelihood module's
  ``logL(args)`` (the arguments unpacked, bounds checked, then the same image likelihood).

lenstronomy gets the same data, noise maps, kernels and numerics (``imaging_peers.py``: pixel
``[i, j]`` at ``x = (j - (n - 1) / 2) s``, sub-pixels averaged then a true convolution), and our
model converted (:mod:`twinlens.convert`, its light amplitudes solved). The check line gives
both log-likelihoods at the truth on lenstronomy's scale (ours plus half the noise
normalisation) and their relative difference: lenstronomy's SIE carries a 1e-10" core.

Every line's first call is apart (``first_call_s``: numba's cache load, JAX's trace and
compile; ``compile_s`` is that less the fastest steady call). Then the lines are timed in
alternating rounds, so that other work on the machine falls on each alike; each gives the
median and least ``ms_per_eval`` (per vector: a batch's time over its size). The ``speedup``
line gives each lenstronomy line's median over each of ours (above 1, ours is faster), and
``goals`` the design's targets against lenstronomy's ``logL`` per call: our numba single call
(its faster thread count) at least 4 times faster, our JAX batch per evaluation (the faster
of ``vmap`` and ``batch``) at least 2 times.

Run from the repository root with the package importable, in an environment with lenstronomy
(the peers' environment of ``docs/benchmarks.rst``)::

    python benchmarks/w8_multiband.py [--rounds 8] [--batch 64] [--no-peers] [--no-jax]
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import imaging_peers
import numba
import numpy as np
from peers import version
from timing import block, emit, row_head, side_by_side_arguments, threading_layer
from workloads import (
    NOISE_SIGMA,
    SOURCE_INTENSITY,
    SUB_SIZE,
    perturbed,
    simulate_dataset,
    w5_lens_mass,
    w5_source,
    w5_truth,
)

from twinlens import convert, memo
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic
from twinlens.likelihood.multiband import MultiBandLikelihood
from twinlens.model import parameter_paths

NAMES = ("fine", "coarse")
COARSE_SIDE, COARSE_SCALE = 40, 0.13  # pixels, arcsec
COARSE_PSF_FWHM, COARSE_PSF_SIZE = 0.25, 11  # arcsec, pixels
#: the coarse band's source intensity over the fine band's (W5's)
COARSE_COLOUR = 0.6
COARSE_SEED = 2
N_VECTORS = 16
#: seconds of calls per line in one round
ROUND_S = 0.3
#: the design's targets: lenstronomy's logL per call over ours per evaluation, for the
#: fastest of our lines whose names match
GOALS = {
    "numba single call": (r"twinlens numba \d+t$", 4.0),
    "jax batch": (r"twinlens jax (vmap|batch)$", 2.0),
}
PEER_KEY = "lenstronomy logL"

# -- the workload ----------------------------------------------------------------------------


def _linear(model: Tracer) -> Tracer:
    """``model`` with its source's intensity solved (a linear Sersic of the same shape)."""
    s = model.sources[0].light[0]
    source = LinearSersic(s.centre, s.ell_comps, s.effective_radius, s.sersic_index)
    return Tracer(model.lenses[0], Galaxy(light=source))


def coarse_dataset() -> Imaging:
    """W5's lens and source, the source fainter, on 40 x 40 pixels of 0.13"."""
    source = replace(w5_source(), intensity=COARSE_COLOUR * SOURCE_INTENSITY)
    truth = Tracer(Galaxy(mass=w5_lens_mass()), Galaxy(light=source))
    grid = Grid2D.uniform(COARSE_SIDE, COARSE_SCALE, SUB_SIZE)
    psf = PSF.gaussian(COARSE_PSF_FWHM, COARSE_SCALE, COARSE_PSF_SIZE)
    with memo.disabled():  # the same data in every process, as simulate_dataset
        return simulate(
            truth, grid, psf, noise_sigma=NOISE_SIGMA, seed=COARSE_SEED, backend="numpy"
        )


def w8_likelihood() -> MultiBandLikelihood:
    """W8: W5's dataset and the coarse band, W5's model with the source's intensity solved
    in each band, every other scalar free and shared."""
    model = _linear(w5_truth())
    free = tuple(p for p in parameter_paths(model) if "origin" not in p)
    datasets = (simulate_dataset(w5_truth()), coarse_dataset())
    return MultiBandLikelihood(datasets, NAMES, model, free)


# -- lenstronomy -----------------------------------------------------------------------------


def _lenstronomy_kwargs(model: Tracer) -> dict[str, list[dict]]:
    """A model's keyword lists (the source's amplitude 1: the linear solver sets it)."""
    return {
        "kwargs_lens": [convert.to_lenstronomy(m)[1] for m in model.lenses[0].mass],
        "kwargs_source": [
            convert.light_to_lenstronomy(p.with_intensity(1.0))[1] for p in model.sources[0].light
        ],
    }


def _kwargs_params(truth: dict[str, list[dict]]) -> dict[str, list]:
    """``FittingSequence``'s parameters: every non-linear one free within +-1 of the truth,
    the shear's origin fixed at 0."""
    out = {}
    for key, group in (("lens_model", "kwargs_lens"), ("source_model", "kwargs_source")):
        init = [{k: v for k, v in kw.items() if k != "amp"} for kw in truth[group]]
        fixed = [{k: v for k, v in kw.items() if k in ("ra_0", "dec_0")} for kw in init]
        sigma = [{k: 0.1 for k in kw} for kw in init]
        lower = [{k: v - 1.0 for k, v in kw.items()} for kw in init]
        upper = [{k: v + 1.0 for k, v in kw.items()} for kw in init]
        out[key] = [init, sigma, fixed, lower, upper]
    return out


def lenstronomy_lines(like: MultiBandLikelihood, vectors: np.ndarray) -> tuple[dict, dict]:
    """lenstronomy's timed lines (``{name: (callable, 1)}``) and its check at the truth."""
    from lenstronomy.ImSim.MultiBand.multi_linear import MultiLinear
    from lenstronomy.Workflow.fitting_sequence import FittingSequence

    bands = []
    for band in like.bands:
        kernel = np.asarray(band.dataset.psf.kernel, dtype=float)
        kwargs_psf = {"psf_type": "PIXEL", "kernel_point_source": kernel}
        bands.append([imaging_peers._data_kwargs(band), kwargs_psf, imaging_peers._numerics()])
    names = [convert.to_lenstronomy(m)[0] for m in like.model.lenses[0].mass]
    kwargs_model = {"lens_model_list": names, "source_light_model_list": ["SERSIC_ELLIPSE"]}
    multi = MultiLinear(bands, kwargs_model)
    truth = _lenstronomy_kwargs(like.model)
    fitting = FittingSequence(
        {"multi_band_list": bands, "multi_band_type": "multi-linear"},
        kwargs_model,
        {"linear_solver": True},
        {"check_bounds": True},
        _kwargs_params(truth),
    )
    module, param = fitting.likelihood_class, fitting.param_class
    kwargs = [_lenstronomy_kwargs(like.bands[0].instance(v)) for v in vectors]
    args = [param.kwargs2args(**copy.deepcopy(k)) for k in kwargs]
    turn = {"multi": itertools.cycle(kwargs), "args": itertools.cycle(args)}

    def image() -> float:
        return float(multi.likelihood_data_given_model(**next(turn["multi"]))[0])

    def log_l() -> float:
        return float(module.logL(next(turn["args"])))

    ours = float(like(like.reference, "numba"))
    ours += 0.5 * sum(d.noise_normalization for d in like.datasets)
    theirs = float(multi.likelihood_data_given_model(**copy.deepcopy(truth))[0])
    check = {
        "version": version("lenstronomy"),
        "log_l_lenstronomy": theirs,
        "log_l_lenstronomy_logL": float(module.logL(param.kwargs2args(**copy.deepcopy(truth)))),
        "log_l_twinlens": ours,
        "rel_diff": imaging_peers.relative(ours, theirs),
    }
    return {"lenstronomy MultiLinear": (image, 1), PEER_KEY: (log_l, 1)}, check


# -- ours ------------------------------------------------------------------------------------


def _threads(threads: int, call: Callable[[], Any]) -> Any:
    """``call()`` on ``threads`` numba threads (the lines alternate, each with its own)."""
    numba.set_num_threads(threads)
    return call()


def ours_lines(
    like: MultiBandLikelihood, vectors: np.ndarray, stack: np.ndarray, with_jax: bool
) -> dict[str, tuple[Callable[[], Any], int]]:
    """Our timed lines: ``{name: (callable, evaluations per call)}``."""
    turn = itertools.cycle(range(len(vectors)))
    n = len(stack)
    lines: dict[str, tuple[Callable[[], Any], int]] = {}
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        single = partial(_threads, threads, lambda: like(vectors[next(turn)], "numba"))
        batch = partial(_threads, threads, lambda: like.batch(stack, "numba"))
        lines[f"twinlens numba {threads}t"] = (single, 1)
        lines[f"twinlens numba batch {threads}t"] = (batch, n)
    if not with_jax:
        return lines
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    program = jax.jit(like.jax_log_likelihood)
    on_device = [jax.device_put(v) for v in vectors]
    vmapped = jax.jit(jax.vmap(like.jax_log_likelihood))
    stack_on_device = jax.device_put(stack)
    lines |= {
        "twinlens jax-jit": (lambda: like(vectors[next(turn)], "jax"), 1),
        "twinlens jax-jit device": (lambda: program(on_device[next(turn)]), 1),
        "twinlens jax vmap": (lambda: vmapped(stack_on_device), n),
        "twinlens jax batch": (lambda: like.batch(stack, "jax"), n),
    }
    return lines


# -- timing ----------------------------------------------------------------------------------


def _timed_call(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    block(call())
    return time.perf_counter() - t0


def side_by_side(lines: dict[str, tuple[Callable[[], Any], int]], rounds: int) -> list[dict]:
    """Each line's first call apart, then ``rounds`` rounds in which every line runs for
    about :data:`ROUND_S` seconds, its calls timed one by one."""
    first, repeats = {}, {}
    for name, (call, _) in lines.items():
        first[name] = _timed_call(call)
        once = min(_timed_call(call) for _ in range(2))
        repeats[name] = max(1, round(ROUND_S / once))
    times: dict[str, list[float]] = {name: [] for name in lines}
    for _ in range(rounds):
        for name, (call, _) in lines.items():
            times[name] += [_timed_call(call) for _ in range(repeats[name])]
    out = []
    for name, (_, per_call) in lines.items():
        t = times[name]
        row = {
            "name": name,
            "code": name.split()[0],
            "batch": per_call if per_call > 1 else None,
            "first_call_s": first[name],
            # JAX's trace and compile: the first call less the fastest steady one
            "compile_s": first[name] - min(t) if " jax" in name else None,
            "calls": len(t),
            "wall_median_ms": 1e3 * statistics.median(t),
            "ms_per_eval": 1e3 * statistics.median(t) / per_call,
            "ms_per_eval_min": 1e3 * min(t) / per_call,
        }
        out.append(row)
    return out


def speedups(rows: list[dict]) -> dict[str, dict[str, float]]:
    """For each of our lines, each lenstronomy line's median over ours, per evaluation."""
    ours = [r for r in rows if r["code"] == "twinlens"]
    theirs = [r for r in rows if r["code"] == "lenstronomy"]
    return {
        o["name"]: {t["name"]: t["ms_per_eval"] / o["ms_per_eval"] for t in theirs} for o in ours
    }


def goals(ratios: dict[str, dict[str, float]]) -> dict[str, dict]:
    """The design's targets against lenstronomy's ``logL``: the best matching line's ratio
    and whether it meets the target."""
    out = {}
    for goal, (pattern, target) in GOALS.items():
        found = {
            n: r[PEER_KEY] for n, r in ratios.items() if re.match(pattern, n) and PEER_KEY in r
        }
        best = max(found, key=found.get, default=None)
        ratio = found.get(best)
        met = None if ratio is None else ratio >= target
        out[goal] = {"target": target, "line": best, "ratio": ratio, "met": met}
    return out


def table(rows: list[dict], ratios: dict[str, dict[str, float]]) -> str:
    """A plain-text summary of the rows and the speed-ups over lenstronomy's ``logL``."""
    lines = [f"{'line':28s} {'ms/eval':>9s} {'min':>9s} {'first s':>8s} {'x vs logL':>10s}"]
    for r in rows:
        ratio = ratios.get(r["name"], {}).get(PEER_KEY)
        shown = f"{ratio:10.2f}" if ratio is not None else f"{'':10s}"
        lines.append(f"{row_head(r, 3)} {shown}")
    return "\n".join(lines)


def main() -> None:
    title = __doc__.splitlines()[0]
    args = side_by_side_arguments(title, 8, 64, "vectors per batch").parse_args()
    like = w8_likelihood()
    vectors = perturbed(like, N_VECTORS)
    stack = perturbed(like, args.batch, seed=args.batch)
    lines = ours_lines(like, vectors, stack, not args.no_jax)
    workload = {
        "workload": "W8",
        "bands": {n: d.grid.shape for n, d in zip(NAMES, like.datasets, strict=True)},
        "n_params": like.n_params,
        "ray_traced_points": sum(d.layout.n_points for d in like.datasets),
    }
    if not args.no_peers:
        if importlib.util.find_spec("lenstronomy") is None:
            emit(**workload, name="lenstronomy", skipped="not installed")
        else:
            peer, check = lenstronomy_lines(like, vectors)
            emit(**workload, case="check", **check)
            lines = peer | lines
    rows = side_by_side(lines, args.rounds)
    for row in rows:
        emit(**workload, **row)
    stats = memo.stats()
    ratios = speedups(rows)
    emit(
        workload="W8",
        case="speedup",
        speedup=ratios,
        goals=goals(ratios),
        numba_threads=numba.config.NUMBA_NUM_THREADS,
        numba_layer=threading_layer(),
        memo={"enabled": memo.enabled(), "hits": stats["hits"], "jax_folds": stats["jax_folds"]},
    )
    print(table(rows, ratios), flush=True)


if __name__ == "__main__":
    main()

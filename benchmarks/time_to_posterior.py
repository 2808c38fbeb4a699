"""Time to posterior: the built-in example fitted end to end by twinlens and by lenstronomy.

The lens of ``twinlens fit --example`` (:mod:`twinlens.job.example`: SIE + external shear, a
lens light of fixed Sersic shape and a Sersic source, both intensities solved linearly; 13 free
parameters), fitted to the same simulated data (written once by ``example.write_example``)
with the same priors and nautilus settings (``n_live``, ``n_eff``, one network per bound,
nautilus's default batch of 100 and ``f_live`` 0.01, the same seed) by:

``twinlens-numba``, ``twinlens-jax``
    the fit job, ``run_fit(load_config(fit.toml, backend=...), plot=False)``, warm: the first
    batched likelihood call is timed first (``first_call_s``: numba's compile or cache load,
    JAX's trace and compile), then a run of the same job stopped at 400 evaluations warms
    whatever else compiles (``warmup_s``).
``lenstronomy``
    ``FittingSequence(...).fit_sequence([["Nautilus", {...}]])`` on the same data, noise map,
    PSF, mask (``image_likelihood_mask_list``) and numerics (pixel ``[i, j]`` at
    ``x = (j - 49.5) 0.05``, ``y = (i - 49.5) 0.05``; 2 x 2 sub-pixels averaged, then the PSF:
    see ``imaging_peers.py``): ``SIE`` + ``SHEAR`` (``ra_0 = dec_0 = 0``), a ``SERSIC_ELLIPSE``
    lens light of fixed shape and a ``SERSIC_ELLIPSE`` source, amplitudes solved by its linear
    solver. It models the whole frame (the mask picks the fitted pixels), ours the mask and
    the PSF's reach around it.
``autogalaxy``
    not run: it has no ray tracing (a lensed source needs PyAutoLens's ``Tracer``, which the
    ``bench`` extra does not install); its line says so.

Each fit runs in a fresh interpreter and prints one JSON line when done: ``wall_s`` (the whole
job: ours writes its result files too), ``search_s`` (sampling alone), ``cpu_s`` (the process's
CPU time over the job), ``n_evaluations``, ``ms_per_eval`` (``search_s`` per evaluation,
nautilus's own work included), ``likelihood_ms`` (the likelihood alone, per vector, on prior
draws: ours in one batch of 100, lenstronomy's one by one as its nautilus calls it),
``log_z``, ``log_z_err`` (``1 / sqrt(n_eff)``, lenstronomy's estimate, for every code: nautilus
gives none), ``log_z_matched`` (on our scale, below) and ``posterior`` (each parameter's
median and 68% half-width from the equal-weight samples, in our parameterisation). The
lenstronomy case first prints a ``truth`` line: both codes' chi-squared at the truth and their
difference. Then a ``speedup`` line (lenstronomy's figure over ours; above 1, ours is faster
or needs fewer) and a table.

Priors and evidence. lenstronomy's nautilus samples a uniform box (``kwargs_lower``/``upper``):
our Gaussian priors N(mu, sigma) (the lens and source centres) become ``mu +- 5 sigma`` plus
``kwargs_likelihood["prior_lens"]``/``["prior_source"]`` (``-(x - mu)^2 / (2 sigma^2)``), the
log-uniform one (the source's size) its box plus ``custom_logL_addition`` (``-log R_sersic``).
The posteriors are the same, but lenstronomy's sampler explores the wider box (0.9 nats more
prior volume per Gaussian parameter), which may cost it evaluations. Its log-likelihood is
``-chi^2 / 2``, ours ``-(chi^2 + sum log(2 pi sigma^2)) / 2`` over the mask, so ``log_z_matched
= log Z_lenstronomy - sum log(2 pi sigma^2) / 2 + 4 log(10 / sqrt(2 pi)) + log((R_hi - R_lo) /
ln(R_hi / R_lo))`` is on our scale. lenstronomy's Sersic takes ``b_n ~ 1.9992 n - 0.3271``, we
the exact ``b_n``: its ``R_sersic`` is converted to our ``effective_radius``
(``convert.light_from_lenstronomy``) for the truth and posterior; the two differ by ``(b_L /
b_n)^n`` (0.13% at ``n = 1.5``), and so do its size prior and ours (``evidence_offset_at_truth``
less ``evidence_offset``). Our intensities are non-negative least squares, lenstronomy's
unconstrained (``check_positive_flux = False``): both positive near the posterior.

Run from the repository root with the package importable, in an environment with lenstronomy
and nautilus (the peers' environment of ``docs/benchmarks.rst``), so that all codes run the
same nautilus::

    peers-venv/bin/python benchmarks/time_to_posterior.py [--quick] [--seed 1]
        [--only twinlens-numba,twinlens-jax,lenstronomy,autogalaxy] [--n-live N] [--n-eff N]

or from our environment, lenstronomy's case run by another interpreter::

    python benchmarks/time_to_posterior.py --peers-python peers-venv/bin/python

``--quick``: the example's quick settings (100 live points, 500 effective samples; else 150
and 1,000); ``--n-live``, ``--n-eff`` override them; ``--n-like-max N`` stops every search at N
evaluations (checks only: the fits are then unconverged); ``--output DIR`` keeps the data and
fits (default: a temporary folder, removed).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
from peers import Skip, require, version
from timing import emit

import twinlens
from twinlens import convert
from twinlens.job import example

CODES = ("twinlens-numba", "twinlens-jax", "lenstronomy", "autogalaxy")
PATHS = tuple(example.TRUTH)
#: half-width, in sigma, of lenstronomy's box for a Gaussian prior
GAUSSIAN_BOX = 5.0
#: likelihood evaluations of the warm-up run of our fit job
WARMUP_EVALS = 400
#: prior draws whose likelihood is timed apart from the search (``likelihood_ms``)
DRAWS = 100
#: the table's rows below the parameters, with their formats
COST_ROWS = "log_z_matched:.2f log_z_err:.3f n_evaluations:d search_s:.1f wall_s:.1f cpu_s:.1f "
COST_ROWS += "ms_per_eval:.2f likelihood_ms:.2f first_call_s:.2f warmup_s:.1f"
AUTOGALAXY = (
    "autogalaxy has no ray tracing: a lensed source needs PyAutoLens's Tracer (autolens), "
    "which the bench extra does not install"
)
#: our free parameters as lenstronomy's (group, index in the group, key)
LENSTRONOMY_KEYS: dict[str, tuple[str, int, str]] = {
    "lenses[0].mass[0].centre[0]": ("lens", 0, "center_x"),
    "lenses[0].mass[0].centre[1]": ("lens", 0, "center_y"),
    "lenses[0].mass[0].ell_comps[0]": ("lens", 0, "e1"),
    "lenses[0].mass[0].ell_comps[1]": ("lens", 0, "e2"),
    "lenses[0].mass[0].einstein_radius": ("lens", 0, "theta_E"),
    "lenses[0].mass[1].gamma_1": ("lens", 1, "gamma1"),
    "lenses[0].mass[1].gamma_2": ("lens", 1, "gamma2"),
    "sources[0].light[0].centre[0]": ("source", 0, "center_x"),
    "sources[0].light[0].centre[1]": ("source", 0, "center_y"),
    "sources[0].light[0].ell_comps[0]": ("source", 0, "e1"),
    "sources[0].light[0].ell_comps[1]": ("source", 0, "e2"),
    "sources[0].light[0].effective_radius": ("source", 0, "R_sersic"),
    "sources[0].light[0].sersic_index": ("source", 0, "n_sersic"),
}


def posterior_stats(columns: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Each parameter's median and 68% half-width (half the 16th-84th percentile range)."""
    out = {}
    for path in PATHS:
        lo, mid, hi = np.percentile(columns[path], [16.0, 50.0, 84.0])
        out[path] = [float(mid), float(0.5 * (hi - lo))]
    return out


def nautilus_record(n_eff: float, log_z: float) -> dict[str, float]:
    """``log_z``, ``log_z_err`` (``1 / sqrt(n_eff)``) and ``n_eff``."""
    return {"log_z": log_z, "log_z_err": 1.0 / math.sqrt(n_eff), "n_eff": n_eff}


# -- twinlens ---------------------------------------------------------------------------------


def likelihood_ms(evaluate: Callable[[np.ndarray], Any], vectors: np.ndarray) -> float:
    """Milliseconds per vector of ``evaluate(vectors)`` (the faster of two calls)."""
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        evaluate(vectors)
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times) / len(vectors)


def fresh_folder(data: Path, name: str) -> Path:
    """``data/name``, emptied: a fit job resumes from a checkpoint it finds there."""
    folder = data / name
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def read_samples(path: Path) -> dict[str, np.ndarray]:
    """``samples.csv`` of a fit job, by column name."""
    header = path.read_text().splitlines()[0].split(",")
    values = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {name: values[:, i] for i, name in enumerate(header)}


def run_twinlens(data: Path, backend: str) -> dict[str, Any]:
    """Our fit job on ``backend``: first call and warm-up timed apart, then the timed run."""
    from twinlens.job import run_fit
    from twinlens.job.config import load_config

    config = load_config(data / "fit.toml", backend=backend)
    objective = config.objective()
    batch = np.array(np.broadcast_to(objective.start, (100, objective.n_params)))
    t0 = time.perf_counter()
    objective.log_likelihood(batch)
    first_call_s = time.perf_counter() - t0
    cap = min(WARMUP_EVALS, config.search.get("n_like_max", WARMUP_EVALS))
    warm = dataclasses.replace(config, search={**config.search, "n_like_max": cap})
    t0 = time.perf_counter()
    run_fit(warm, output=fresh_folder(data, f"{backend}-warmup"), progress=False, plot=False)
    warmup_s = time.perf_counter() - t0
    unit = np.random.default_rng(0).random((DRAWS, objective.n_params))
    per_eval_ms = likelihood_ms(objective.log_likelihood, objective.from_unit(unit))
    out = fresh_folder(data, f"{backend}-fit")
    cpu0, t0 = time.process_time(), time.perf_counter()
    run_fit(config, output=out, progress=False, plot=False)
    wall_s, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    record = json.loads((out / "result.json").read_text())
    info = record["info"]
    n_like = int(record["n_evaluations"])
    line = {
        "code": "twinlens",
        "variant": backend,
        "name": f"twinlens-{backend}",
        "version": twinlens.__version__,
        "first_call_s": first_call_s,
        "warmup_s": warmup_s,
        "likelihood_ms": per_eval_ms,
        "wall_s": wall_s,
        "search_s": float(info["wall_time_s"]),
        "cpu_s": cpu_s,
        "n_evaluations": n_like,
        "ms_per_eval": 1e3 * float(info["wall_time_s"]) / n_like,
        "converged": bool(info["converged"]),
        **nautilus_record(float(info["n_eff"]), float(record["log_evidence"])),
        "posterior": posterior_stats(read_samples(out / "samples.csv")),
    }
    line["log_z_matched"] = line["log_z"]
    if backend == "numba":
        import numba

        line["threads"] = numba.get_num_threads()
    return line


# -- lenstronomy ------------------------------------------------------------------------------


def lenstronomy_truth() -> dict[str, list[dict]]:
    """The example's true model as lenstronomy's keyword lists (light amplitudes left as
    converted: the linear solver replaces them)."""
    tracer = example.example_tracer()
    lens, source = tracer.lenses[0], tracer.sources[0]
    return {
        "kwargs_lens": [convert.to_lenstronomy(m)[1] for m in lens.mass],
        "kwargs_source": [convert.light_to_lenstronomy(p)[1] for p in source.light],
        "kwargs_lens_light": [convert.light_to_lenstronomy(p)[1] for p in lens.light],
    }


def prior_box(path: str) -> tuple[float, float, str, list[float]]:
    """Our prior of ``path`` as lenstronomy's box ``(lower, upper)``, its kind and arguments."""
    kind, args = example.PRIORS[path]
    if kind == "gaussian":
        mu, sigma = args
        return mu - GAUSSIAN_BOX * sigma, mu + GAUSSIAN_BOX * sigma, kind, args
    if kind in ("uniform", "log_uniform"):
        return float(args[0]), float(args[1]), kind, args
    raise ValueError(f"no lenstronomy form of the {kind} prior of {path}")


def evidence_offset() -> float:
    """``log Z_ours - log Z_lenstronomy`` less the noise normalisation (module docstring)."""
    offset = 0.0
    for path in PATHS:
        lower, upper, kind, args = prior_box(path)
        if kind == "gaussian":
            offset += math.log((upper - lower) / (math.sqrt(2.0 * math.pi) * args[1]))
        elif kind == "log_uniform":
            offset += math.log((upper - lower) / math.log(upper / lower))
    return offset


def lenstronomy_params(truth: dict[str, list[dict]]) -> tuple[dict, dict]:
    """``kwargs_params`` (init, sigma, fixed, lower, upper per model) and the prior entries
    of ``kwargs_likelihood`` (``prior_lens``, ``prior_source``, ``custom_logL_addition``)."""
    groups = {"lens": truth["kwargs_lens"], "source": truth["kwargs_source"]}
    free: dict[str, list[dict]] = {g: [{} for _ in kw] for g, kw in groups.items()}
    lower = {g: [{} for _ in kw] for g, kw in groups.items()}
    upper = {g: [{} for _ in kw] for g, kw in groups.items()}
    gaussian: dict[str, list] = {"lens": [], "source": []}
    log_uniform: list[tuple[str, int, str]] = []
    for path, (group, index, key) in LENSTRONOMY_KEYS.items():
        lo, hi, kind, args = prior_box(path)
        free[group][index][key] = 0.1 * (hi - lo)
        lower[group][index][key], upper[group][index][key] = lo, hi
        if kind == "gaussian":
            gaussian[group].append([index, key, args[0], args[1]])
        elif kind == "log_uniform":
            log_uniform.append((group, index, key))

    def fixed(group: str) -> list[dict]:
        return [
            {k: v for k, v in kw.items() if k not in free[group][i] and k != "amp"}
            for i, kw in enumerate(groups[group])
        ]

    def params(group: str) -> list:
        return [groups[group], free[group], fixed(group), lower[group], upper[group]]

    lens_light = truth["kwargs_lens_light"]
    shape = [{k: v for k, v in kw.items() if k != "amp"} for kw in lens_light]
    empty = [{} for _ in lens_light]
    kwargs_params = {
        "lens_model": params("lens"),
        "source_model": params("source"),
        "lens_light_model": [lens_light, empty, shape, empty, empty],
    }

    def log_uniform_prior(**kwargs: Any) -> float:
        return -sum(math.log(kwargs[f"kwargs_{g}"][i][k]) for g, i, k in log_uniform)

    priors = {
        "prior_lens": gaussian["lens"],
        "prior_source": gaussian["source"],
        "custom_logL_addition": log_uniform_prior,
    }
    return kwargs_params, priors


def lenstronomy_setup(data: Path) -> dict[str, Any]:
    """``FittingSequence``'s arguments for our data (``kwargs_data_joint``, ``kwargs_model``,
    ``kwargs_constraints``, ``kwargs_likelihood``, ``kwargs_params``), the truth as keyword
    lists (``truth``) and our dataset (``dataset``)."""
    from twinlens.job.config import load_config

    config = load_config(data / "fit.toml", backend="numpy")
    ds = config.dataset
    grid = ds.grid
    (ny, nx), s = grid.shape, grid.pixel_scale
    kwargs_data = {
        "image_data": np.asarray(ds.data, dtype=float).reshape(ny, nx),
        "noise_map": np.asarray(ds.noise_map, dtype=float).reshape(ny, nx),
        "transform_pix2angle": np.array([[s, 0.0], [0.0, s]]),
        "ra_at_xy_0": grid.origin[0] - (nx - 1) / 2 * s,
        "dec_at_xy_0": grid.origin[1] - (ny - 1) / 2 * s,
    }
    kwargs_psf = {"psf_type": "PIXEL", "kernel_point_source": np.asarray(ds.psf.kernel, float)}
    numerics = {
        "supersampling_factor": int(grid.sub_size),
        "supersampling_convolution": False,
        "compute_mode": "regular",
    }
    truth = lenstronomy_truth()
    kwargs_params, priors = lenstronomy_params(truth)
    likelihood = {
        "check_bounds": True,
        "image_likelihood_mask_list": [np.asarray(grid.used, dtype=float)],
        **priors,
    }
    return {
        "kwargs_data_joint": {
            "multi_band_list": [[kwargs_data, kwargs_psf, numerics]],
            "multi_band_type": "single-band",
        },
        "kwargs_model": {
            "lens_model_list": ["SIE", "SHEAR"],
            "source_light_model_list": ["SERSIC_ELLIPSE"],
            "lens_light_model_list": ["SERSIC_ELLIPSE"],
        },
        "kwargs_constraints": {"linear_solver": True},
        "kwargs_likelihood": likelihood,
        "kwargs_params": kwargs_params,
        "truth": truth,
        "config": config,
    }


def our_values(kwargs_lens: list[dict], kwargs_source: list[dict]) -> dict[str, float]:
    """lenstronomy's keyword lists as our free parameters, by path (its ``R_sersic`` made our
    exact-``b_n`` ``effective_radius``)."""
    profiles = {
        "lenses[0].mass[0]": convert.from_lenstronomy("SIE", kwargs_lens[0]),
        "lenses[0].mass[1]": convert.from_lenstronomy("SHEAR", kwargs_lens[1]),
        "sources[0].light[0]": convert.light_from_lenstronomy("SERSIC_ELLIPSE", kwargs_source[0]),
    }
    out = {}
    for path in PATHS:
        owner, leaf = path.rsplit(".", 1)
        name, _, index = leaf.partition("[")
        value = getattr(profiles[owner], name)
        out[path] = float(value[int(index[:-1])] if index else value)
    return out


def truth_check(fitting: Any, setup: dict[str, Any]) -> dict[str, Any]:
    """Both codes' chi-squared and log-likelihood at the truth (lenstronomy's image term
    alone, and with its prior terms), and the evidence offset checked at that point."""
    param, like = fitting.param_class, fitting.likelihood_class
    args = param.kwargs2args(**setup["truth"])
    t0 = time.perf_counter()
    total = float(like.logL(args))
    first_call_s = time.perf_counter() - t0
    kwargs = param.args2kwargs(args)
    image = float(like.image_likelihood.logL(**kwargs)[0])
    ours = setup["config"].objective("numpy")
    values = our_values(kwargs["kwargs_lens"], kwargs["kwargs_source"])
    vector = np.array([[values[p] for p in ours.paths]])
    log_l = float(ours.log_likelihood(vector)[0])
    norm = float(setup["config"].dataset.noise_normalization)
    chi2_ours, chi2_theirs = -2.0 * log_l - norm, -2.0 * image
    log_box = -sum(math.log(prior_box(p)[1] - prior_box(p)[0]) for p in PATHS)
    at_truth = log_l + float(ours.log_prior(vector)[0]) - (total + log_box)
    return {
        "case": "truth",
        "chi2_twinlens": chi2_ours,
        "chi2_lenstronomy": chi2_theirs,
        "chi2_diff": chi2_theirs - chi2_ours,
        "log_l_twinlens": log_l,
        "log_l_lenstronomy": total,
        "log_l_lenstronomy_image": image,
        "noise_normalization": norm,
        "evidence_offset": evidence_offset() - 0.5 * norm,
        "evidence_offset_at_truth": at_truth,
        "lenstronomy_first_call_s": first_call_s,
    }


def capture_nautilus() -> dict[str, Any]:
    """Wrap lenstronomy's ``NautilusSampler.run`` to keep its nautilus sampler (for
    ``n_like`` and ``n_eff``) and the sampling's wall time."""
    from lenstronomy.Sampling.Samplers import nautilus_sampler

    seen: dict[str, Any] = {}
    original: Callable = nautilus_sampler.NautilusSampler.run

    def run(self: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = original(self, **kwargs)
        seen.update(sampler=self._sampler, search_s=time.perf_counter() - t0)
        return out

    nautilus_sampler.NautilusSampler.run = run
    return seen


def run_lenstronomy(data: Path, search: dict[str, Any]) -> dict[str, Any]:
    """lenstronomy's ``FittingSequence`` with its Nautilus fitting type on our data."""
    require("lenstronomy")
    from lenstronomy.Workflow.fitting_sequence import FittingSequence

    setup = lenstronomy_setup(data)
    seen = capture_nautilus()
    keys = ("kwargs_data_joint", "kwargs_model", "kwargs_constraints", "kwargs_likelihood")
    fitting = FittingSequence(*(setup[k] for k in keys), setup["kwargs_params"], verbose=False)
    check = truth_check(fitting, setup)
    emit(**check)
    param, like = fitting.param_class, fitting.likelihood_class  # each access builds one
    lower, upper = (np.asarray(b) for b in param.param_limits())
    unit = np.random.default_rng(0).random((DRAWS // 5, len(lower)))
    vectors = lower + unit * (upper - lower)
    per_eval_ms = likelihood_ms(lambda v: [like.logL(x) for x in v], vectors)
    wanted = ("n_live", "n_eff", "n_networks", "seed", "n_like_max")
    settings = {k: search[k] for k in wanted if k in search}
    settings |= {"prior_type": "uniform", "verbose": False}
    cpu0, t0 = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # its progress lines
        chain = fitting.fit_sequence([["Nautilus", settings]])
    wall_s, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    _, samples, _, _, log_z, _, _ = chain[0]
    sampler = seen["sampler"]
    columns: dict[str, list[float]] = {p: [] for p in PATHS}
    for sample in samples:
        kw = param.args2kwargs(sample)
        for path, value in our_values(kw["kwargs_lens"], kw["kwargs_source"]).items():
            columns[path].append(value)
    n_like = int(sampler.n_like)
    line = {
        "code": "lenstronomy",
        "variant": "numpy",
        "name": "lenstronomy",
        "version": version("lenstronomy"),
        "first_call_s": check["lenstronomy_first_call_s"],
        "likelihood_ms": per_eval_ms,
        "wall_s": wall_s,
        "search_s": seen["search_s"],
        "cpu_s": cpu_s,
        "n_evaluations": n_like,
        "ms_per_eval": 1e3 * seen["search_s"] / n_like,
        "converged": bool(sampler.explored and sampler.n_eff >= search["n_eff"]),
        **nautilus_record(float(sampler.n_eff), float(log_z)),
        "posterior": posterior_stats({p: np.array(v) for p, v in columns.items()}),
    }
    line["log_z_matched"] = line["log_z"] + check["evidence_offset"]
    return line


# -- the run ----------------------------------------------------------------------------------


def search_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ``[search]`` table every code's nautilus gets."""
    base = example.QUICK_SEARCH if args.quick else example.EXAMPLE_SEARCH
    search = {"name": "nautilus", **base, "seed": args.seed}
    for key in ("n_live", "n_eff", "n_like_max"):
        if getattr(args, key) is not None:
            search[key] = getattr(args, key)
    return search


def run_case(code: str, data: Path, search: dict[str, Any]) -> None:
    """One code's fit in this process: its JSON line (or why it was skipped)."""
    common = {"benchmark": "time_to_posterior", "search": search}
    common["nautilus"] = version("nautilus-sampler")
    try:
        if code == "lenstronomy":
            line = run_lenstronomy(data, search)
        elif code.startswith("twinlens-"):
            line = run_twinlens(data, code.removeprefix("twinlens-"))
        else:
            raise Skip(AUTOGALAXY if code == "autogalaxy" else f"unknown code {code}")
    except Skip as why:
        emit(name=code, skipped=str(why), **common)
        return
    emit(**line, **common)


def run_fresh(python: str, code: str, data: Path, search: dict[str, Any]) -> list[dict]:
    """:func:`run_case` in a new ``python`` interpreter; its JSON lines, printed as well (a
    failed case prints one line with the end of its error)."""
    command = [python, __file__, "--case", code, "--data", str(data)]
    command += ["--search", json.dumps(search)]
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    if out.returncode:
        emit(name=code, error=out.stderr.strip().splitlines()[-3:])
        return []
    lines = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    for line in lines:
        print(json.dumps(line), flush=True)
    return lines


def speedups(fits: list[dict]) -> dict[str, dict[str, float]]:
    """lenstronomy's ``search_s``, ``wall_s``, ``ms_per_eval`` and ``n_evaluations`` over each
    of ours (above 1, ours is faster or needs fewer)."""
    peer = next((f for f in fits if f["code"] == "lenstronomy"), None)
    if peer is None:
        return {}
    keys = ("search_s", "wall_s", "ms_per_eval", "likelihood_ms", "n_evaluations")
    return {
        f["name"]: {k: round(peer[k] / f[k], 3) for k in keys}
        for f in fits
        if f["code"] == "twinlens"
    }


def table(fits: list[dict], ratios: dict[str, dict[str, float]]) -> str:
    """The fits side by side: each parameter's median +- 68% half-width, then the costs."""
    names = [f["name"] for f in fits]
    rows = [["", "truth", *names]]
    for path in PATHS:
        cells = [f"{f['posterior'][path][0]:.4f} +- {f['posterior'][path][1]:.4f}" for f in fits]
        rows.append([path, f"{example.TRUTH[path]:.4f}", *cells])
    for key, fmt in (item.split(":") for item in COST_ROWS.split()):
        rows.append([key, "", *(format(f[key], fmt) if key in f else "" for f in fits)])
    for key in ("search_s", "ms_per_eval", "likelihood_ms", "n_evaluations"):
        label = f"lenstronomy / ours, {key}"
        rows.append([label, "", *(str(ratios.get(n, {}).get(key, "")) for n in names)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the example's quick settings")
    parser.add_argument("--only", default=",".join(CODES), help="comma-separated codes")
    parser.add_argument("--seed", type=int, default=1, help="nautilus's seed")
    parser.add_argument("--data-seed", type=int, default=1, help="the simulated noise's seed")
    parser.add_argument("--n-live", type=int, help="override n_live")
    parser.add_argument("--n-eff", type=int, help="override n_eff")
    parser.add_argument("--n-like-max", type=int, help="stop every search there (checks)")
    parser.add_argument("--output", help="keep the data and fits in this folder")
    parser.add_argument("--python", default=sys.executable, help="interpreter of our fits")
    parser.add_argument(
        "--peers-python", default=sys.executable, help="interpreter of lenstronomy's fit"
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--search", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.case:
        run_case(args.case, Path(args.data), json.loads(args.search))
        return
    codes = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = sorted(set(codes) - set(CODES))
    if unknown:
        raise SystemExit(f"unknown codes {unknown}; choose from {', '.join(CODES)}")
    search = search_settings(args)
    data = Path(args.output or tempfile.mkdtemp(prefix="time_to_posterior-")).resolve()
    example.write_example(data, seed=args.data_seed, search=search, overwrite=True)
    started, fits = time.perf_counter(), []
    try:
        for code in codes:
            python = args.peers_python if code == "lenstronomy" else args.python
            lines = run_fresh(python, code, data, search)
            fits += [ln for ln in lines if "posterior" in ln]
    finally:
        if not args.output:
            shutil.rmtree(data, ignore_errors=True)
    ratios = speedups(fits)
    if ratios:
        emit(benchmark="time_to_posterior", case="speedup", speedup=ratios)
    emit(benchmark="time_to_posterior", case="total", seconds=time.perf_counter() - started)
    if fits:
        print(table(fits, ratios), flush=True)


if __name__ == "__main__":
    main()

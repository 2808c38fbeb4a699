"""W5: the imaging log-likelihood, one evaluation and batches, twinlens against its peers.

100 x 100 pixels at 0.05", 4 x 4 oversampling, SIE + external shear lens, elliptical Sersic
source with its intensity solved linearly, 21 x 21 Gaussian PSF (FWHM 0.1"), noise 0.05.

With lenstronomy and JAXtronomy installed (``pip install lenstronomy jaxtronomy``), the data
are lenstronomy's simulation, both peers run in the same process, and the first line checks
that our chi-squared at the truth equals lenstronomy's (its log-likelihood is ``-chi^2 / 2``;
ours adds the noise normalisation). Without them only our cases run, on our own simulation.

Run: ``cd benchmarks && python w5.py [--quick]``. One JSON line per case; medians after
warm-up; compile (first-call) times apart from steady state.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from timing import block, emit

from twinlens import convert
from twinlens.batch import ImagingLikelihood
from twinlens.fit.imaging import Imaging, simulate
from twinlens.fit.psf import PSF
from twinlens.fit.tracer import Galaxy, Tracer
from twinlens.grids import Grid2D
from twinlens.light import LinearSersic
from twinlens.model import parameter_paths

N_PIX, PIXEL_SCALE, SUB_SIZE, NOISE, PSF_SIZE, PSF_FWHM = 100, 0.05, 4, 0.05, 21, 0.1


def _times(fn, repeats: int, warmup: int = 2) -> dict:
    for _ in range(warmup):
        block(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - t0)
    return {"median_ms": 1e3 * float(np.median(times)), "min_ms": 1e3 * min(times)}


def _peers():
    try:
        import jaxtronomy  # noqa: F401
        import lenstronomy  # noqa: F401
        import w5_peers
    except ImportError:
        return None
    import w5_peers

    return w5_peers


def our_model(truth: dict) -> Tracer:
    """The lenstronomy truth converted to twinlens, with the source intensity linear."""
    mass = convert.from_lenstronomy_list(truth["lens_models"], truth["kwargs_lens"])
    source = convert.light_from_lenstronomy(truth["source_models"][0], truth["kwargs_source"][0])
    linear = LinearSersic(
        source.centre, source.ell_comps, source.effective_radius, source.sersic_index
    )
    profiles = mass.profiles if hasattr(mass, "profiles") else (mass,)
    return Tracer(Galaxy(mass=profiles), Galaxy(light=linear))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no batch of 1024")
    args = parser.parse_args()
    repeats = 3 if args.quick else 15
    batches = (64,) if args.quick else (64, 1024)
    common = {"workload": "W5", "cpus": os.cpu_count()}
    peers = _peers()

    grid = Grid2D.uniform(N_PIX, PIXEL_SCALE, SUB_SIZE)
    if peers is not None:
        sim = peers.w5_simulate(seed=1)
        truth = {k: sim[k] for k in ("lens_models", "kwargs_lens", "source_models")}
        truth["kwargs_source"] = sim["kwargs_source"]
        dataset = Imaging(sim["data"], sim["noise_map"], PSF(sim["psf_kernel"]), grid)
    else:
        truth = {
            "lens_models": ["SIE", "SHEAR"],
            "kwargs_lens": [
                {"theta_E": 1.2, "e1": 0.1094, "e2": 0.0918, "center_x": 0.0, "center_y": 0.0},
                {"gamma1": 0.03, "gamma2": -0.02},
            ],
            "source_models": ["SERSIC_ELLIPSE"],
            "kwargs_source": [
                {
                    "amp": 57.0,
                    "R_sersic": 0.3,
                    "n_sersic": 1.5,
                    "e1": -0.088,
                    "e2": 0.153,
                    "center_x": 0.05,
                    "center_y": 0.1,
                }
            ],
        }
        psf = PSF.gaussian(PSF_FWHM, PIXEL_SCALE, PSF_SIZE)
        source = convert.light_from_lenstronomy("SERSIC_ELLIPSE", truth["kwargs_source"][0])
        parametric = Tracer(our_model(truth).lenses, Galaxy(light=source))
        dataset = simulate(parametric, grid, psf, noise_sigma=NOISE, seed=1)

    model = our_model(truth)
    free = tuple(p for p in parameter_paths(model) if "origin" not in p)
    like = ImagingLikelihood(dataset, model, free)
    v0 = like.reference
    rng = np.random.default_rng(0)

    # -- agreement with lenstronomy at the truth --------------------------------------------
    ours = {b: like(v0, b) for b in ("numpy", "numba", "jax")}
    chi2 = {b: -2 * v - dataset.noise_normalization for b, v in ours.items()}
    if peers is not None:
        inputs = (
            sim["data"],
            sim["noise_map"],
            sim["psf_kernel"],
            PIXEL_SCALE,
            SUB_SIZE,
            truth["lens_models"],
            truth["kwargs_lens"],
            truth["source_models"],
            truth["kwargs_source"],
        )
        ls = peers.lenstronomy_w5(*inputs)
        emit(
            **common,
            case="agreement",
            lenstronomy_chi2=ls["chi2"],
            **{f"twinlens_{b}_chi2": c for b, c in chi2.items()},
            max_relative_difference=max(abs(c / ls["chi2"] - 1) for c in chi2.values()),
        )
        t = _times(ls["evaluate"], repeats)
        emit(**common, case="lenstronomy", **t)
        ls_ms = t["median_ms"]
        jx = peers.jaxtronomy_w5(*inputs)
        t = _times(jx["jit"], repeats)
        emit(**common, case="jaxtronomy-jit", compile_s=jx["compile_s"], **t)
        jx_ms = t["median_ms"]
        jx_rate = {}
        for n in batches:
            compiled = jx["batch_compile"](n)
            t = _times(lambda n=n: jx["batch"](n), 5 if n == 64 else 3, warmup=1)
            jx_rate[n] = n / (t["median_ms"] / 1e3)
            emit(
                **common,
                case="jaxtronomy-jit(vmap)",
                batch=n,
                compile_s=compiled["compile_s"],
                evals_per_s=jx_rate[n],
                **t,
            )
    else:
        emit(
            **common,
            case="agreement",
            **{f"twinlens_{b}_chi2": c for b, c in chi2.items()},
            note="lenstronomy/jaxtronomy not installed: peers skipped",
        )

    # -- twinlens: one vector at a time -----------------------------------------------------
    results = {}
    for backend in ("numba", "jax"):
        t0 = time.perf_counter()
        like(v0 + 1e-4, backend)
        first = time.perf_counter() - t0
        t = _times(lambda b=backend: like(v0 + 1e-4 * rng.normal(size=v0.size), b), repeats)
        results[backend] = t["median_ms"]
        emit(
            **common,
            case=f"twinlens-{backend}-single",
            first_call_s=first,
            ray_traced_points=dataset.layout.n_points,
            **t,
        )

    # -- twinlens: batches -------------------------------------------------------------------
    rates = {}
    for backend in ("numba", "jax"):
        for n in batches:
            vectors = v0 + 1e-4 * rng.normal(size=(n, v0.size))
            t0 = time.perf_counter()
            like.batch(vectors, backend, chunk_size=n)
            first = time.perf_counter() - t0
            t = _times(
                lambda b=backend, v=vectors, n=n: like.batch(v, b, chunk_size=n),
                5 if n == 64 else 2,
                warmup=0,
            )
            rates[(backend, n)] = n / (t["median_ms"] / 1e3)
            emit(
                **common,
                case=f"twinlens-{backend}-batch",
                batch=n,
                first_call_s=first,
                evals_per_s=rates[(backend, n)],
                **t,
            )

    if peers is not None:
        emit(
            **common,
            case="ratios",
            numba_single_vs_lenstronomy=ls_ms / results["numba"],
            numba_single_vs_jaxtronomy_jit=jx_ms / results["numba"],
            jax_single_vs_jaxtronomy_jit=jx_ms / results["jax"],
            jax_batch64_vs_jaxtronomy_batch64=rates[("jax", 64)] / jx_rate[64],
            numba_batch64_vs_jaxtronomy_batch64=rates[("numba", 64)] / jx_rate[64],
        )


if __name__ == "__main__":
    main()

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
import dataclasses
import os
import time

import numpy as np
from timing import emit, median_and_min_ms, run_case_in_fresh_process

from twinlens import convert
from twinlens.batch import ImagingLikelihood
from twinlens.fit.imaging import Imaging, simulate
from twinlens.fit.psf import PSF
from twinlens.fit.tracer import Galaxy, Tracer
from twinlens.grids import Grid2D
from twinlens.light import LinearSersic
from twinlens.model import parameter_paths

N_PIX, PIXEL_SCALE, SUB_SIZE, NOISE, PSF_SIZE, PSF_FWHM = 100, 0.05, 4, 0.05, 21, 0.1


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


def _dataset_and_truth(peers):
    grid = Grid2D.uniform(N_PIX, PIXEL_SCALE, SUB_SIZE)
    if peers is not None:
        sim = peers.w5_simulate(seed=1)
        truth = {k: sim[k] for k in ("lens_models", "kwargs_lens", "source_models")}
        truth["kwargs_source"] = sim["kwargs_source"]
        return Imaging(sim["data"], sim["noise_map"], PSF(sim["psf_kernel"]), grid), truth, sim
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
    return simulate(truth_tracer(truth), grid, psf, noise_sigma=NOISE, seed=1), truth, None


def truth_tracer(truth: dict) -> Tracer:
    """The truth with a parametric source. lenstronomy's images are flux per pixel (surface
    brightness times the pixel area), ours surface brightness: the intensity is scaled by the
    pixel area so that both simulate the same data (peak about 1, noise 0.05)."""
    source = convert.light_from_lenstronomy("SERSIC_ELLIPSE", truth["kwargs_source"][0])
    source = dataclasses.replace(source, intensity=source.intensity * PIXEL_SCALE**2)
    return Tracer(our_model(truth).lenses, Galaxy(light=source))


def _peer_inputs(sim, truth):
    return (
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


def run_case(case: str, quick: bool) -> None:
    """One case, in this process (``main`` runs each case in a fresh process: numba's and
    XLA's thread pools and CPU state left by one package measurably change another's speed,
    e.g. lenstronomy ran 2.5x faster after an XLA program had run in the same process)."""
    repeats = 3 if quick else 15
    batches = (64,) if quick else (64, 1024)
    common = {"workload": "W5", "cpus": os.cpu_count(), "case": case}
    peers = _peers()
    dataset, truth, sim = _dataset_and_truth(peers)
    model = our_model(truth)
    free = tuple(p for p in parameter_paths(model) if "origin" not in p)
    like = ImagingLikelihood(dataset, model, free)
    v0 = like.reference
    rng = np.random.default_rng(0)

    if case == "agreement":
        chi2 = {
            b: -2 * like(v0, b) - dataset.noise_normalization for b in ("numpy", "numba", "jax")
        }
        fields = {f"twinlens_{b}_chi2": c for b, c in chi2.items()}
        if peers is not None:
            ls = peers.lenstronomy_w5(*_peer_inputs(sim, truth))
            fields["lenstronomy_chi2"] = ls["chi2"]
            fields["max_relative_difference"] = max(abs(c / ls["chi2"] - 1) for c in chi2.values())
        emit(**common, n_params=like.n_params, **fields)
    elif case == "lenstronomy":
        ls = peers.lenstronomy_w5(*_peer_inputs(sim, truth))
        emit(**common, **median_and_min_ms(ls["evaluate"], repeats))
    elif case == "jaxtronomy-jit":
        jx = peers.jaxtronomy_w5(*_peer_inputs(sim, truth))
        emit(**common, compile_s=jx["compile_s"], **median_and_min_ms(jx["jit"], repeats))
    elif case == "jaxtronomy-jit(vmap)":
        jx = peers.jaxtronomy_w5(*_peer_inputs(sim, truth))
        for n in batches:
            compiled = jx["batch_compile"](n)
            t = median_and_min_ms(lambda n=n: jx["batch"](n), 5 if n == 64 else 2, warmup=1)
            emit(
                **common,
                batch=n,
                compile_s=compiled["compile_s"],
                evals_per_s=n / (t["median_ms"] / 1e3),
                **t,
            )
    elif case.endswith("-single"):
        backend = case.split("-")[1]
        t0 = time.perf_counter()
        like(v0 + 1e-4, backend)
        first = time.perf_counter() - t0
        t = median_and_min_ms(lambda: like(v0 + 1e-4 * rng.normal(size=v0.size), backend), repeats)
        emit(**common, first_call_s=first, ray_traced_points=dataset.layout.n_points, **t)
    elif case.endswith("-batch"):
        backend = case.split("-")[1]
        for n in batches:
            vectors = v0 + 1e-4 * rng.normal(size=(n, v0.size))
            t0 = time.perf_counter()
            like.batch(vectors, backend)
            first = time.perf_counter() - t0
            t = median_and_min_ms(
                lambda v=vectors: like.batch(v, backend), 5 if n == 64 else 2, warmup=0
            )
            emit(**common, batch=n, first_call_s=first, evals_per_s=n / (t["median_ms"] / 1e3), **t)
    else:
        raise SystemExit(f"unknown case {case!r}")


OURS = (
    "agreement",
    "twinlens-numba-single",
    "twinlens-jax-single",
    "twinlens-numba-batch",
    "twinlens-jax-batch",
)
PEERS = ("lenstronomy", "jaxtronomy-jit", "jaxtronomy-jit(vmap)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no batch of 1024")
    parser.add_argument("--case", help="run one case in this process")
    args = parser.parse_args()
    if args.case:
        run_case(args.case, args.quick)
        return
    cases = (PEERS if _peers() is not None else ()) + OURS
    lines = []
    for case in cases:
        lines += run_case_in_fresh_process(__file__, "W5", case, args.quick)
    _ratios(lines)


def _ratios(lines: list[dict]) -> None:
    def get(case, key, batch=None):
        for line in lines:
            if line["case"] == case and line.get("batch") == batch and key in line:
                return line[key]
        return None

    ratios = {}
    pairs = {
        "numba_single_vs_lenstronomy": (
            ("lenstronomy", "median_ms"),
            ("twinlens-numba-single", "median_ms"),
        ),
        "numba_single_vs_jaxtronomy_jit": (
            ("jaxtronomy-jit", "median_ms"),
            ("twinlens-numba-single", "median_ms"),
        ),
        "jax_single_vs_jaxtronomy_jit": (
            ("jaxtronomy-jit", "median_ms"),
            ("twinlens-jax-single", "median_ms"),
        ),
    }
    for name, ((peer, key), (ours, key2)) in pairs.items():
        a, b = get(peer, key), get(ours, key2)
        if a and b:
            ratios[name] = a / b
    for backend in ("jax", "numba"):
        for n in (64, 1024):
            a = get("jaxtronomy-jit(vmap)", "evals_per_s", n)
            b = get(f"twinlens-{backend}-batch", "evals_per_s", n)
            if a and b:
                ratios[f"{backend}_batch{n}_vs_jaxtronomy_vmap{n}"] = b / a
    if ratios:
        emit(workload="W5", case="ratios", **ratios)


if __name__ == "__main__":
    main()

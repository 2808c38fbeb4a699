"""P2: what placing a lensed quasar's images at the model's positions costs a joint (imaging plus
point-source) log-likelihood, against placing them at the observed positions, on numba and JAX.

    python benchmarks/point_images.py            # every case
    python benchmarks/point_images.py --quick    # fewer repeats

The data are W5's grid (100 x 100 pixels of 0.05", 4 x 4 sub-pixels) holding a quad: an SIE
(theta_E 1", e = (0.15, -0.05)) plus external shear (0.04, -0.02), a Sersic host at the source
(0.02", 0.01") and its four images (fluxes 40, 25, 15, 10) seen through a Gaussian PSF of 4
pixels FWHM (21 x 21), noise 0.05. The model's host is a linear Sersic; seven parameters are
free (the SIE's Einstein radius and ellipticity, the shear, the source position), the positions
are scored in the source plane. Each case runs in a fresh interpreter and prints one JSON line:

* ``numba observed`` and ``numba model`` (1 and 2 threads): ``joint(vector, "numba")``, the
  images fixed at the observed positions, or at the model's (``imaging_positions = "model"``);
* ``numba observed batch`` and ``numba model batch`` (1 and 2 threads): ``joint.batch`` of 64
  vectors per call, as a sampler calls it (``ms_per_eval``: the call's time over 64);
* ``jax observed`` and ``jax model``: ``joint(vector, "jax")``, a ``jax.jit`` program of the
  vector; its first call (trace, compile, one run) apart.

Every call evaluates a new vector (16 near the truth, in turn). The last line gives, per
backend, the model placement's time over the observed one's.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from timing import cases_main, compile_estimate, emit, first_call, measure

WORKLOAD = "P2"
CASES = (
    "numba-observed",
    "numba-model",
    "numba-observed-batch",
    "numba-model-batch",
    "jax-observed",
    "jax-model",
)
BATCH = 64
BETA = (0.02, 0.01)
FLUXES = (40.0, 25.0, 15.0, 10.0)
FREE = (
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[0].ell_comps[0]",
    "lenses[0].mass[0].ell_comps[1]",
    "lenses[0].mass[1].gamma_1",
    "lenses[0].mass[1].gamma_2",
    "point_source.centre[0]",
    "point_source.centre[1]",
)


def joint(placed: str) -> Any:
    """The P2 joint likelihood, its images placed ``"observed"`` or ``"model"``."""
    from twinlens import Galaxy, Tracer
    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import Imaging, simulate
    from twinlens.imaging.point_images import PointImages
    from twinlens.imaging.psf import PSF
    from twinlens.lensing.lens_equation import ImageSolver
    from twinlens.light import LinearSersic, Sersic
    from twinlens.likelihood.joint import JointLikelihood
    from twinlens.likelihood.point_source import (
        PointSource,
        PointSourceData,
        PointSourceLikelihood,
    )
    from twinlens.mass import SIE, ExternalShear

    mass = (SIE((0.0, 0.0), (0.15, -0.05), 1.0), ExternalShear(0.04, -0.02))
    truth = Tracer(Galaxy(mass), Galaxy(light=Sersic(BETA, (0.1, 0.0), 0.2, 1.5, 2.0)))
    found = ImageSolver().solve(truth, np.array(BETA), "numpy")
    theta = np.asarray(found.positions)[np.asarray(found.mask)]
    grid = Grid2D.uniform(100, 0.05, sub_size=4)
    psf = PSF.gaussian(0.2, 0.05, 21)
    clean = simulate(truth, grid, psf, noise_sigma=0.05, seed=2)
    data = clean.data + np.tensordot(FLUXES, PointImages(theta).images(grid, psf), 1)
    dataset = Imaging(data, clean.noise_map, psf, grid)
    model = Tracer(Galaxy(mass), Galaxy(light=LinearSersic(BETA, (0.1, 0.0), 0.2, 1.5)))
    seen = PointSourceLikelihood(
        PointSourceData(theta, 0.005), "source", in_imaging=True, imaging_positions=placed
    )
    return JointLikelihood(dataset, model, PointSource(BETA), seen, FREE)


def run_case(case: str, quick: bool) -> None:
    backend, placed, *batch = case.split("-")
    like = joint(placed)
    rng = np.random.default_rng(0)
    vectors = like.reference + 1e-4 * rng.standard_normal((16, like.n_params))
    stack = like.reference + 1e-4 * rng.standard_normal((BATCH, like.n_params))
    turn = iter(range(1 << 30))

    def call() -> Any:
        if batch:
            return like.batch(stack, backend)
        return like(vectors[next(turn) % len(vectors)], backend)

    repeats = 10 if quick else 40
    if backend == "numba":
        import numba

        first = {"first_call_s": first_call(call)}  # compiling: the first thread count's
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            timed = measure(call, repeats)
            per = {"batch": BATCH, "ms_per_eval": timed["wall_median_ms"] / BATCH} if batch else {}
            emit(
                workload=WORKLOAD,
                name=f"{backend} {placed}{' batch' if batch else ''} {threads}t",
                backend=backend,
                placed=placed,
                threads=threads,
                **first,
                **timed,
                **per,
            )
            first = {}
    else:
        first = first_call(call)
        timed = measure(call, repeats)
        emit(
            workload=WORKLOAD,
            name=f"{backend} {placed}",
            backend=backend,
            placed=placed,
            first_call_s=first,
            compile_s=compile_estimate(first, timed),
            **timed,
        )


def model_over_observed(lines: list[dict]) -> None:
    """One line: each model-placement case's median time over the observed placement's."""
    ratios = {}
    for line in lines:
        if line.get("placed") == "model":
            key = line["name"].replace("model", "observed")
            base = next((x for x in lines if x.get("name") == key), None)
            if base is not None:
                ratios[line["name"]] = line["wall_median_ms"] / base["wall_median_ms"]
    emit(workload=WORKLOAD, case="model over observed", ratios=ratios)


def main() -> None:
    cases_main(__file__, WORKLOAD, CASES, run_case, model_over_observed, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())

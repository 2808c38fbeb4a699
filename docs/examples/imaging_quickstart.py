"""Simulate a lens, compute its log-likelihood on both backends, and evaluate a batch.

Run: ``python docs/examples/imaging_quickstart.py`` (a few seconds once numba has compiled).
"""

from __future__ import annotations

import tempfile

import numpy as np

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE, ExternalShear


def main(n_pix: int = 60) -> dict:
    # 1. a grid (0.05" pixels, 4 x 4 sub-pixels, a 1.6" circular mask) and a Gaussian PSF
    grid = Grid2D.uniform(n_pix, 0.05, sub_size=4).circular_mask(1.6)
    psf = PSF.gaussian(fwhm=0.1, pixel_scale=0.05, shape=11)

    # 2. the truth: an SIE plus shear, and an elliptical Sersic source
    lens = Galaxy(
        mass=(
            SIE.from_axis_ratio((0.0, 0.0), einstein_radius=1.2, q=0.75, angle=20.0),
            ExternalShear(gamma_1=0.03, gamma_2=-0.02),
        )
    )
    shape = dict(
        centre=(0.05, 0.1), ell_comps=(-0.09, 0.15), effective_radius=0.3, sersic_index=1.5
    )
    truth = Tracer(lens, Galaxy(light=Sersic(**shape, intensity=0.35)))
    dataset = simulate(truth, grid, psf, noise_sigma=0.05, seed=1)

    # 3. the model: the same, with the source intensity solved (linear)
    model = Tracer(lens, Galaxy(light=LinearSersic(**shape)))
    fits = {b: FitImaging(dataset, model, backend=b) for b in ("numba", "jax")}
    for backend, fit in fits.items():
        print(
            f"{backend:5s} log L = {float(fit.log_likelihood):.10f}, "
            f"intensity = {float(np.asarray(fit.intensities)[0]):.4f}"
        )

    # 4. a likelihood of parameter vectors: name the free parameters, evaluate a batch
    like = ImagingLikelihood(
        dataset,
        model,
        free=("lenses[0].mass[0].einstein_radius", "sources[0].light[0].effective_radius"),
    )
    vectors = np.array([[1.2, 0.3], [1.19, 0.31], [-1.0, 0.3]])  # the last is out of range
    batch = {b: like.batch(vectors, backend=b) for b in ("numba", "jax")}
    print("batch (numba):", batch["numba"])

    # 5. FITS files round trip
    with tempfile.TemporaryDirectory() as folder:
        paths = dataset.to_fits(folder)
        again = Imaging.from_fits(paths["data"], paths["noise_map"], paths["psf"], sub_size=4)
    return {"fits": fits, "batch": batch, "dataset": dataset, "again": again}


if __name__ == "__main__":
    main()

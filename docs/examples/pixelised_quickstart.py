"""Reconstruct an irregular lensed source on a Delaunay mesh and scan the regularisation."""

import numpy as np

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import Constant, Delaunay, FitPixelised, Pixelization
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import GaussianLight, Sersic
from twinlens.mass import SIE, ExternalShear

grid = Grid2D.uniform(60, 0.06, sub_size=2).circular_mask(1.6)
psf = PSF.gaussian(fwhm=0.1, pixel_scale=0.06, shape=11)
lens = Galaxy(mass=(SIE(ell_comps=(0.1, 0.05), einstein_radius=1.0), ExternalShear(0.02, -0.01)))
source = Galaxy(
    light=(
        Sersic(centre=(0.05, 0.02), effective_radius=0.25, sersic_index=1.2, intensity=0.6),
        GaussianLight(centre=(-0.18, 0.12), sigma=0.06, intensity=1.5),
        GaussianLight(centre=(0.2, -0.1), sigma=0.04, intensity=1.2),
    )
)
dataset = simulate(Tracer(lens, source), grid, psf, noise_sigma=0.03, seed=5)

lens_only = Tracer(lens)  # the source is now the pixelization
for lam in np.logspace(-1, 3, 5):
    pixelization = Pixelization(mesh=Delaunay(shape=(20, 20)), regularization=Constant(lam))
    fit = FitPixelised(dataset, lens_only, pixelization, backend="numba")  # or "jax", "numpy"
    chi2 = fit.chi_squared / dataset.mask_index.size
    print(f"lambda {lam:8.2f}   log evidence {fit.log_evidence:10.2f}   chi2/pixel {chi2:.3f}")

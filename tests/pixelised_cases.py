"""Small simulated lenses for the pixelised-source tests (shared by several modules)."""

from functools import cache

import numpy as np

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import GaussianLight, Sersic
from twinlens.mass import SIE, ExternalShear

LENS = (SIE(centre=(0.02, -0.01), ell_comps=(0.1, 0.05), einstein_radius=1.0),)


def irregular_source():
    """Two Gaussian clumps and a Sersic: an irregular source no single profile fits."""
    return Galaxy(
        light=(
            Sersic(
                centre=(0.05, 0.02),
                ell_comps=(0.15, -0.05),
                effective_radius=0.25,
                sersic_index=1.2,
                intensity=0.6,
            ),
            GaussianLight(centre=(-0.18, 0.12), sigma=0.06, intensity=1.5),
            GaussianLight(centre=(0.2, -0.1), sigma=0.04, intensity=1.2),
        )
    )


def lens_tracer(einstein_radius=1.0, shear=(0.0, 0.0)):
    mass = (
        SIE(centre=(0.02, -0.01), ell_comps=(0.1, 0.05), einstein_radius=einstein_radius),
        ExternalShear(gamma_1=shear[0], gamma_2=shear[1]),
    )
    return Tracer(Galaxy(mass=mass))


@cache
def small_dataset(n=24, pixel_scale=0.12, sub_size=2, radius=1.5, noise=0.05, seed=2):
    """An SIE-lensed irregular source on a small masked grid, with an asymmetric PSF."""
    grid = Grid2D.uniform(n, pixel_scale, sub_size=sub_size).circular_mask(radius)
    rng = np.random.default_rng(11)
    kernel = np.exp(-((np.arange(5)[:, None] - 2.0) ** 2 + (np.arange(5)[None, :] - 1.7) ** 2))
    kernel = kernel * (1.0 + 0.3 * rng.uniform(size=(5, 5)))  # not symmetric: tests orientation
    psf = PSF(kernel)
    tracer = Tracer(Galaxy(mass=LENS), irregular_source())
    return simulate(tracer, grid, psf, noise_sigma=noise, seed=seed)

"""Your own JAX sampler on a twinlens likelihood: blackjax's NUTS, with priors you write.

An ``ImagingLikelihood`` called with a JAX array runs on JAX and composes with ``jax.jit``,
``jax.grad`` and ``jax.vmap``, so any JAX sampler or optimiser can use it directly.

Run: ``python docs/examples/own_sampler.py`` (a minute on two cores; ``pip install
"twinlens[fit]"`` brings blackjax).
"""

from __future__ import annotations

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

from twinlens.backend import jax_runtime
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.mass import SIE, ExternalShear

jax_runtime.load()  # JAX in float64, as twinlens computes

FREE = ("lenses[0].mass[0].einstein_radius", "sources[0].light[0].effective_radius")
LOWER, UPPER = jnp.array([0.5, 0.05]), jnp.array([2.0, 1.0])  # uniform priors


def likelihood(n_pix: int = 40) -> ImagingLikelihood:
    """A simulated SIE-plus-shear lens and its likelihood in two free parameters."""
    grid = Grid2D.uniform(n_pix, 0.05, sub_size=2).circular_mask(1.0)
    psf = PSF.gaussian(fwhm=0.1, pixel_scale=0.05, shape=7)
    lens = Galaxy(mass=(SIE((0.0, 0.0), (0.1, 0.05), 0.8), ExternalShear(0.02, -0.01)))
    shape = dict(centre=(0.05, 0.0), ell_comps=(0.0, 0.1), effective_radius=0.2, sersic_index=1)
    truth = Tracer(lens, Galaxy(light=Sersic(**shape, intensity=1.0)))
    dataset = simulate(truth, grid, psf, noise_sigma=0.05, seed=1)
    model = Tracer(lens, Galaxy(light=LinearSersic(**shape)))
    return ImagingLikelihood(dataset, model, free=FREE)


def main(n_warmup: int = 200, n_samples: int = 500, n_pix: int = 40) -> np.ndarray:
    like = likelihood(n_pix)

    def log_density(v: jax.Array) -> jax.Array:
        inside = jnp.all((v > LOWER) & (v < UPPER))
        return jnp.where(inside, like(v), -jnp.inf)  # like(v): JAX in, JAX out

    key = jax.random.key(0)
    warmup = blackjax.window_adaptation(blackjax.nuts, log_density)
    (state, parameters), _ = warmup.run(key, jnp.asarray(like.reference), num_steps=n_warmup)
    step = jax.jit(blackjax.nuts(log_density, **parameters).step)
    samples = []
    for k in jax.random.split(key, n_samples):
        state, _ = step(k, state)
        samples.append(np.asarray(state.position))
    samples = np.array(samples)
    for name, column in zip(FREE, samples.T, strict=True):
        print(f"{name}: {column.mean():.5f} +- {column.std():.5f}")
    return samples


if __name__ == "__main__":
    main()

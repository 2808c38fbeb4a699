"""Images, magnifications and time delays of a lensed quasar (docs/point_sources.rst)."""

import numpy as np

from twinlens import Galaxy, ImageSolver, Tracer, cosmology, time_delays
from twinlens.mass import ExternalShear, PowerLaw

# 1. the lens: an elliptical power law and external shear
lens = Tracer(
    Galaxy(
        mass=(
            PowerLaw.from_axis_ratio(einstein_radius=1.2, slope=2.1, q=0.8, angle=30.0),
            ExternalShear(0.03, -0.02),
        )
    )
)
source = np.array([0.05, 0.02])  # arcsec

# 2. the images: positions (arcsec), signed magnifications and parities
solver = ImageSolver(window=3.0)  # search |x|, |y| <= 3"
images = solver.solve(lens, source)  # backend="numba" by default
xy, mu, parity = images.found()
print(f"{len(xy)} images:")
for (x, y), m, p in zip(xy, mu, parity, strict=True):
    print(f"  ({x:+.6f}, {y:+.6f})  mu = {m:+7.3f}  parity = {p:+.0f}")

# 3. the time-delay distance and the delays relative to the first image
distances = cosmology.lens_distances(z_lens=0.5, z_source=2.0)  # flat LCDM, H0 = 70, Om0 = 0.3
delays = time_delays(lens, xy, source, distances.d_dt)
print(f"D_dt = {distances.d_dt:.1f} Mpc; delays (days): {np.round(delays, 3)}")

# 4. many sources at once, on numba or JAX (the same padded result)
sources = np.random.default_rng(0).uniform(-0.2, 0.2, (1000, 2))
batch = solver.solve(lens, sources)
print("image counts:", np.bincount(batch.n_images))

"""Multi-plane lensing: a main lens and a small galaxy behind it, imaged and solved."""

import numpy as np

from twinlens import Galaxy, ImageSolver, MultiPlaneTracer
from twinlens.light import Sersic
from twinlens.mass import SIE, SIS, ExternalShear

main = Galaxy(
    mass=(SIE.from_axis_ratio(einstein_radius=1.0, q=0.8, angle=20.0), ExternalShear(0.03, 0.0)),
    light=Sersic(effective_radius=0.6, intensity=0.5),
    redshift=0.5,
)
# a satellite further away, at z = 1: its rays are already bent by the main lens
satellite = Galaxy(mass=SIS(centre=(1.5, 0.8), einstein_radius=0.2), redshift=1.0)
source = Galaxy(light=Sersic(centre=(0.1, 0.05), effective_radius=0.15, intensity=4.0))

# flat LambdaCDM, H0 = 70, Omega_m = 0.3 by default; pass cosmology=... for another
tracer = MultiPlaneTracer((main, satellite), source, z_source=2.0)
print("beta_12 =", round(float(tracer.ratios[1, 0]), 6))

images = ImageSolver(window=2.5).solve(tracer, np.array([0.1, 0.05]))
positions, magnifications, parities = images.found()
print(f"{len(positions)} images:")
for (x, y), mu in zip(positions, magnifications, strict=True):
    print(f"  ({x:+.6f}, {y:+.6f})  mu = {mu:+7.3f}")

# the image of lens light and lensed source, as for a single-plane Tracer
xy = np.stack(np.meshgrid(np.linspace(-2, 2, 5), np.linspace(-2, 2, 5)), axis=-1)
print("image shape:", tracer.image(xy).shape)

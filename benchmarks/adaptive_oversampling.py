"""Adaptive oversampling on W5: ray-traced points against log-likelihood accuracy.

The data are W5's lens and source (:func:`workloads.w5_truth`) simulated with 16 x 16
sub-pixels (so the data themselves are converged); the log-likelihood of the same model, at its
true parameters, is evaluated on the same pixels with uniform n x n sub-pixels, and with
:meth:`Grid2D.adaptive_to_tolerance` layouts chosen from the true image at several tolerances.
Each line gives the points per evaluation and the log-likelihood's distance from the 8 x 8 and
the 16 x 16 references.

Run: ``cd benchmarks && python adaptive_oversampling.py``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from timing import emit
from workloads import IMAGE_SIDE, NOISE_SIGMA, PIXEL_SCALE, SEED, w5_psf, w5_truth

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.likelihood.imaging import FitImaging


def main() -> None:
    model = image_truth = w5_truth()
    grid = Grid2D.uniform(IMAGE_SIDE, PIXEL_SCALE, 1)
    data = simulate(
        image_truth, replace(grid, sub_size=16), w5_psf(), noise_sigma=NOISE_SIGMA, seed=SEED
    )

    def log_l(g: Grid2D) -> tuple[float, int]:
        d = data.with_grid(g)
        return float(FitImaging(d, model, "numba").log_likelihood), d.layout.n_points

    ref8, _ = log_l(replace(grid, sub_size=8))
    ref16, _ = log_l(replace(grid, sub_size=16))
    common = {"workload": "W5 adaptive oversampling", "pixels": grid.n_pixels}
    uniform4 = None
    for n in (1, 2, 4, 8, 16):
        value, points = log_l(replace(grid, sub_size=n))
        uniform4 = points if n == 4 else uniform4
        emit(
            **common,
            case=f"uniform {n}x{n}",
            points=points,
            minus_8x8=value - ref8,
            minus_16x16=value - ref16,
        )
    for tol in (3e-5, 1e-5, 3e-6, 1e-6):
        g = grid.adaptive_to_tolerance(lambda xy: image_truth.image(xy, backend="numba"), tol)
        value, points = log_l(g)
        rules, counts = np.unique(g.sub_size_map, return_counts=True)
        emit(
            **common,
            case="adaptive",
            tolerance=tol,
            points=points,
            fewer_points_than_uniform_4x4=uniform4 / points,
            minus_8x8=value - ref8,
            minus_16x16=value - ref16,
            pixels_per_rule={int(r): int(c) for r, c in zip(rules, counts, strict=True)},
        )


if __name__ == "__main__":
    main()

"""A simulated irregular source (a Sersic and two Gaussian clumps, lensed by an SIE) is
reconstructed on a Delaunay mesh: residuals consistent with the noise, and an evidence whose
maximum over the regularisation coefficient is interior and close to the coefficient that best
recovers the true source (known here, so the check is independent of the evidence)."""

from functools import cache

import numpy as np
from pixelised_cases import LENS, irregular_source

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import Constant, Delaunay, FitPixelised, Pixelization
from twinlens.lensing.tracer import Galaxy, Tracer

LAMBDAS = np.logspace(-2, 4, 13)


@cache
def _scan():
    grid = Grid2D.uniform(44, 0.07, sub_size=2).circular_mask(1.5)
    source = irregular_source()
    data = simulate(
        Tracer(Galaxy(mass=LENS), source),
        grid,
        PSF.gaussian(0.1, 0.07, 7),
        noise_sigma=0.03,
        seed=5,
    )
    lens = Tracer(Galaxy(mass=LENS))
    rows = []
    for lam in LAMBDAS:
        fit = FitPixelised(data, lens, Pixelization(Delaunay((16, 16)), Constant(lam)), "numba")
        vertices = np.asarray(fit.source_vertices)
        true = sum(np.asarray(p.image(vertices, backend="numpy")) for p in source.light)
        error = np.sqrt(np.mean((fit.reconstruction - true) ** 2))
        rows.append((fit.log_evidence, fit.chi_squared / data.mask_index.size, error, fit))
    return rows


def test_evidence_has_an_interior_maximum_near_the_best_reconstruction():
    rows = _scan()
    evidence = np.array([r[0] for r in rows])
    error = np.array([r[2] for r in rows])
    best = int(np.argmax(evidence))
    assert 0 < best < len(LAMBDAS) - 1, evidence
    # the evidence and the true-source error need not pick the same lambda; within 1.5 dex,
    # and the evidence's choice recovers the source within twice the scan's best error
    best_error = int(np.argmin(error))
    assert abs(np.log10(LAMBDAS[best] / LAMBDAS[best_error])) <= 1.5
    assert error[best] <= 2.0 * error[best_error]


def test_residuals_at_the_evidence_maximum_are_consistent_with_noise():
    rows = _scan()
    best = int(np.argmax([r[0] for r in rows]))
    chi2_per_pixel = rows[best][1]
    # chi^2 = N - (effective number of source parameters) at the optimum, so a little below 1
    assert 0.75 < chi2_per_pixel < 1.15
    residuals = rows[best][3].normalized_residual_map
    residuals = residuals[np.isfinite(residuals)]
    assert abs(np.mean(residuals)) < 0.1
    # underfitting (lambda far too large) leaves structure: chi^2 grows well above 1
    assert rows[-1][1] > 1.5


def test_docs_quickstart_runs(capsys):
    import runpy
    from pathlib import Path

    example = Path(__file__).parents[1] / "docs" / "examples" / "pixelised_quickstart.py"
    runpy.run_path(str(example), run_name="__main__")
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 5
    evidence = [float(line.split()[4]) for line in lines]
    assert np.argmax(evidence) not in (0, len(evidence) - 1)  # an interior maximum over lambda

"""Positivity (``Pixelization(..., positive=True)``): the source pixels solved by non-negative
least squares, against scipy's NNLS on the equivalent stacked least-squares problem built
independently (the dense reference of test_pixelised_evidence), on every backend."""

import numpy as np
import pytest
from pixelised_cases import lens_tracer, small_dataset
from scipy.optimize import nnls
from test_pixelised_evidence import EPS, _reg_structure, reference_columns

from twinlens.inversion import Constant, Delaunay, FitPixelised, Pixelization, log_evidence

MESH = Delaunay((7, 7))


def test_positive_solution_matches_scipy_nnls():
    dataset = small_dataset()
    tracer = lens_tracer(shear=(0.03, -0.02))
    reg = Constant(0.3)
    fit = FitPixelised(dataset, tracer, Pixelization(MESH, reg, positive=True), "numpy")
    free = FitPixelised(dataset, tracer, Pixelization(MESH, reg), "numpy")
    points, vertices = np.asarray(fit.source_plane_points), np.asarray(fit.source_vertices)
    used = dataset.grid.used
    b = reference_columns(dataset, MESH, points, vertices)
    sigma = dataset.noise_map[used]
    d = dataset.data[used]
    r = reg.coefficient * _reg_structure(reg, MESH, vertices) + EPS * np.eye(len(vertices))
    # min ||B~ s - d~||^2 + s^T R s = min ||[B~; U] s - [d~; 0]||^2 with R = U^T U, s >= 0
    u = np.linalg.cholesky(r).T
    stacked = np.concatenate([b / sigma[:, None], u])
    s, _ = nnls(stacked, np.concatenate([d / sigma, np.zeros(len(u))]), maxiter=10_000)
    assert np.any(free.reconstruction < -1e-6)  # the constraint binds on this problem
    assert np.all(fit.reconstruction >= 0) and np.sum(fit.reconstruction == 0) > 0
    np.testing.assert_allclose(fit.reconstruction, s, atol=1e-8 * np.abs(s).max())
    chi2 = np.sum(((d - b @ s) / sigma) ** 2)
    assert fit.chi_squared == pytest.approx(chi2, rel=1e-9)
    assert fit.terms.regularization_term == pytest.approx(s @ r @ s, rel=1e-8)
    # the determinants do not depend on the solution
    assert fit.terms.log_det_curvature_reg == pytest.approx(free.terms.log_det_curvature_reg)
    assert fit.log_evidence < free.log_evidence  # a constrained optimum fits worse


def test_positive_backends_agree_and_jax_differentiates():
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    dataset = small_dataset()

    def f(theta, lam, backend="jax"):
        pix = Pixelization(MESH, Constant(lam), positive=True)
        return log_evidence(lens_tracer(theta, (0.02, 0.0)), dataset, pix, backend)

    ref = f(1.01, 0.3, "numpy")
    assert f(1.01, 0.3, "numba") == pytest.approx(ref, rel=1e-10)
    assert float(f(1.01, 0.3)) == pytest.approx(ref, rel=1e-10)
    g = jax.grad(f, argnums=(0, 1))(1.01, 0.3)
    assert np.all(np.isfinite(g))
    h = 1e-6
    fd = (f(1.01 + h, 0.3, "numpy") - f(1.01 - h, 0.3, "numpy")) / (2 * h)
    assert float(g[0]) == pytest.approx(fd, rel=1e-5)


def test_positive_must_be_a_bool():
    with pytest.raises(ValueError, match=r"Pixelization\.positive must be True or False"):
        Pixelization(MESH, Constant(1.0), positive=1)

"""Bad input to a pixelised fit: a clear error at construction, or -inf with a logged reason
inside a likelihood, never NaN."""

import logging
import math

import numpy as np
import pytest
from pixelised_cases import lens_tracer, small_dataset

from twinlens.inversion import (
    AdaptiveBrightness,
    Constant,
    Curvature,
    Delaunay,
    FitPixelised,
    Pixelization,
    Rectangular,
    log_evidence,
)
from twinlens.inversion.solve import solve
from twinlens.inversion.triangulation import STATUS_DEGENERATE, STATUS_EMPTY, topology


def test_coincident_vertices_are_refused_at_construction():
    vertices = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match=r"Delaunay.image_vertices must be distinct"):
        Delaunay(image_vertices=vertices)
    with pytest.raises(ValueError, match=r"Delaunay.image_vertices must be at least 3"):
        Delaunay(image_vertices=[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])  # collinear


@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf])
def test_lambda_out_of_range_is_refused_at_construction(value):
    with pytest.raises(ValueError, match=r"Constant.coefficient must be .*> 0"):
        Constant(value)
    with pytest.raises(ValueError, match=r"Curvature.coefficient"):
        Curvature(value)


def test_traced_lambda_out_of_range_gives_minus_inf_and_finite_gradient():
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    dataset = small_dataset()

    def f(lam):
        return log_evidence(
            lens_tracer(), dataset, Pixelization(Rectangular((6, 6)), Constant(lam))
        )

    jitted = jax.jit(f)
    assert float(jitted(-1.0)) == -math.inf
    assert float(jitted(0.0)) == -math.inf
    assert np.isfinite(float(jitted(1.0)))
    assert float(jax.grad(jitted)(-1.0)) == 0.0


def test_configuration_errors_name_the_parameter():
    dataset = small_dataset()
    with pytest.raises(ValueError, match=r"Rectangular.shape"):
        Rectangular((2, 10))
    with pytest.raises(ValueError, match=r"Delaunay.shape"):
        Delaunay((1, 5))
    with pytest.raises(ValueError, match=r"Curvature regularisation needs a Rectangular mesh"):
        Pixelization(Delaunay((5, 5)), Curvature(1.0))
    with pytest.raises(ValueError, match=r"AdaptiveBrightness.pixel_weights"):
        AdaptiveBrightness(1.0, np.array([1.0, -1.0]))
    pix = Pixelization(Rectangular((5, 5)), AdaptiveBrightness(1.0, np.ones(7)))
    with pytest.raises(ValueError, match=r"has 7 values but the mesh has 25"):
        log_evidence(lens_tracer(), dataset, pix, "numpy")
    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import Imaging

    diagonal = np.zeros((24, 24), dtype=bool)
    diagonal[10, 10] = diagonal[11, 11] = True  # the 2 x 2 overlay puts 2 points in the mask
    grid = Grid2D((24, 24), 0.12, mask=diagonal, sub_size=2)
    tiny = Imaging(dataset.data, dataset.noise_map, dataset.psf, grid)
    with pytest.raises(ValueError, match=r"Delaunay.shape=\(2, 2\) places 2 vertices"):
        FitPixelised(tiny, lens_tracer(), Pixelization(Delaunay((2, 2)), Constant(1.0)))
    from twinlens.lensing.tracer import Galaxy, Tracer
    from twinlens.light import Sersic

    with_light = Tracer(Galaxy(light=Sersic()))
    with pytest.raises(ValueError, match=r"lens mass only"):
        FitPixelised(dataset, with_light, Pixelization(Rectangular((5, 5)), Constant(1.0)))


def test_no_traced_sub_pixel_inside_the_mesh(caplog):
    vertices = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    points = np.array([[5.0, 5.0], [6.0, 5.0]])
    with caplog.at_level(logging.WARNING, logger="twinlens.inversion"):
        top = topology(vertices, points)
    assert top.status == STATUS_EMPTY
    assert "no traced sub-pixel" in caplog.text
    assert topology(np.zeros((3, 2)), points).status == STATUS_DEGENERATE


def test_collapsed_source_plane_gives_minus_inf_on_every_backend(caplog):
    """A lens that sends every ray to one point (a point mass is not that; a deflection equal to
    the position is): here an external convergence of exactly 1 (mass sheet), so the mesh
    has no area."""
    from twinlens.lensing.tracer import Galaxy, Tracer
    from twinlens.mass import MassSheet

    dataset = small_dataset()
    sheet = Tracer(Galaxy(mass=MassSheet(kappa=1.0)))
    for mesh in (Rectangular((5, 5)), Delaunay((8, 8))):
        pix = Pixelization(mesh, Constant(1.0))
        for backend in ("numpy", "numba", "jax"):
            with caplog.at_level(logging.WARNING, logger="twinlens.inversion"):
                value = float(log_evidence(sheet, dataset, pix, backend))
            assert value == -math.inf, (mesh, backend)
    assert "log-evidence is -inf" in caplog.text


def test_singular_matrix_gives_minus_inf_not_nan(caplog):
    b = np.ones((4, 2))
    data = np.ones(4)
    noise = np.ones(4)
    singular = np.array([[1.0, 1.0], [1.0, 1.0]]) * -1.0  # not positive definite
    with caplog.at_level(logging.WARNING, logger="twinlens.inversion"):
        terms = solve(b, data, noise, singular)
    assert terms.log_evidence == -math.inf
    assert "not positive definite" in caplog.text
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    jterms = solve(
        jnp.asarray(b), jnp.asarray(data), jnp.asarray(noise), jnp.asarray(singular), jnp
    )
    assert float(jterms.log_evidence) == -math.inf

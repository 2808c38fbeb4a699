"""The sparse curvature matrix of the numba backend against a dense product computed
independently: the mapping matrix summed sub-pixel by sub-pixel in plain Python, each column
blurred by ``scipy.signal.convolve2d``, then ``F = B^T C^-1 B`` by BLAS."""

import numpy as np
import pytest
from pixelised_cases import lens_tracer, small_dataset
from scipy.signal import convolve2d

from twinlens.imaging.dataset import Imaging
from twinlens.inversion import Delaunay, Rectangular
from twinlens.inversion import pixelization as pixfit
from twinlens.inversion.border import relocate
from twinlens.inversion.mapping import MaskedLayout, sparse_blurred


def _dataset():
    base = small_dataset()
    rng = np.random.default_rng(5)
    # non-uniform noise, so the weighting by 1 / sigma is tested per pixel
    noise = base.noise_map * (1.0 + rng.uniform(size=base.noise_map.shape))
    return Imaging(base.data, noise, base.psf, base.grid)


def _mesh_mapping(dataset, mesh):
    prob = pixfit._problem(dataset, mesh)
    layout = prob.masked.layout
    tracer = lens_tracer(0.98, (0.03, -0.02))
    points = pixfit._traced(tracer, layout.xs, layout.ys, "numpy", layout, np)
    border = points[prob.border]
    points = relocate(points, border, np)
    vertices = None
    if prob.image_vertices is not None:
        iv = prob.image_vertices
        vertices = relocate(
            pixfit._traced(tracer, iv[:, 0], iv[:, 1], "numpy", None, np), border, np
        )
    return mesh.mapping(points, vertices, np)


def _dense_reference(dataset, mapping):
    masked = MaskedLayout(dataset)
    ny, nx = dataset.grid.shape
    n_source = mapping.n_pixels
    image = np.zeros((n_source, ny * nx))
    pixel = dataset.mask_index[masked.sub_pixel]  # flat image pixel of each sub-pixel
    for k in range(mapping.indices.shape[0]):
        for j in range(mapping.indices.shape[1]):
            image[mapping.indices[k, j], pixel[k]] += masked.sub_weight[k] * mapping.weights[k, j]
    blurred = np.empty((dataset.mask_index.size, n_source))
    for s in range(n_source):
        full = convolve2d(image[s].reshape(ny, nx), dataset.psf.kernel, mode="same")
        blurred[:, s] = full.reshape(-1)[dataset.mask_index]
    return blurred / masked.noise[:, None], masked


@pytest.mark.parametrize("mesh", [Rectangular((7, 8)), Delaunay((9, 9))], ids=["rect", "delaunay"])
def test_sparse_curvature_equals_the_dense_product(mesh):
    dataset = _dataset()
    mapping = _mesh_mapping(dataset, mesh)
    bw, masked = _dense_reference(dataset, mapping)
    sparse = sparse_blurred(
        mapping.indices, mapping.weights, mapping.n_pixels, masked, 1.0 / masked.noise
    )
    f_dense = bw.T @ bw
    f_sparse = sparse.curvature()
    # 1e-12 of the largest entry: the same sums in another order (measured ~1e-15)
    scale = np.abs(f_dense).max()
    np.testing.assert_allclose(f_sparse, f_dense, rtol=0, atol=1e-12 * scale)
    assert np.array_equal(f_sparse, f_sparse.T)
    x = np.random.default_rng(1).normal(size=bw.shape[0])
    s = np.random.default_rng(2).normal(size=bw.shape[1])
    np.testing.assert_allclose(sparse.transpose_times(x), bw.T @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sparse.times(s), bw @ s, rtol=1e-12, atol=1e-12)
    # the sparsity is real: fewer stored entries than the dense matrix has
    assert sparse.vals.size < bw.size

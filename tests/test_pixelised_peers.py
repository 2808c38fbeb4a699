"""The pixelised log-evidence against autoarray's (the inversion library of autogalaxy and
autolens), on the same data, mapping and regularisation (``tox -e peers``).

What is made identical, and why at that level: autoarray's Delaunay mapper, given our traced
sub-pixels and vertices, maps the sub-pixels that fall outside the convex hull of the vertices
differently from ours (we project them onto the nearest hull edge), so about one row in seven
of its mapping matrix differs by construction. The comparison therefore feeds autoarray our
unblurred mapping matrix, and lets autoarray do everything after it on its own: the PSF
blurring of the matrix (real-space convolution), the data vector and curvature matrix, the
constant regularisation matrix from its own Delaunay neighbours of the same vertices (its
coefficient is the square root of our ``lambda``), the solve (positivity off) and every term
of the evidence. Agreement goal 1e-8 relative; measured ~1e-11.
"""

import math

import numpy as np
import pytest
from pixelised_cases import lens_tracer, small_dataset

from twinlens.inversion import Constant, Delaunay, FitPixelised, Pixelization
from twinlens.inversion import pixelization as pixfit
from twinlens.inversion.mapping import mapping_matrix

pytestmark = pytest.mark.peers


def _autoarray_log_evidence(dataset, fit, pixelization):
    aa = pytest.importorskip("autoarray")
    from autoarray.fit import fit_util
    from autoarray.inversion.mock.mock_mapper import MockMapper

    prob = pixfit._problem(dataset, pixelization.mesh)
    masked = prob.masked
    grid = dataset.grid
    ny, nx = grid.shape
    ps = grid.pixel_scale
    # autoarray's arrays start at the top row; ours at the bottom
    mask = aa.Mask2D(mask=np.flipud(~grid.used), pixel_scales=(ps, ps))
    rc = np.argwhere(~np.asarray(mask))
    pos = masked.image_to_mask[(ny - 1 - rc[:, 0]) * nx + rc[:, 1]]
    points = np.asarray(fit.source_plane_points)
    vertices = np.asarray(fit.source_vertices)
    subs = np.concatenate(
        [masked.order[masked.starts[p] : masked.starts[p + 1]] for p in pos]
    )  # sub-pixels grouped by autoarray's pixel order
    f = masked.layout.levels[0][0]
    pixel_yx = np.stack([grid.y.reshape(-1), grid.x.reshape(-1)], -1)
    data_grid = aa.Grid2D(
        values=pixel_yx[dataset.mask_index][pos],
        mask=mask,
        over_sample_size=f,
        over_sampled=aa.Grid2DIrregular(values=points[subs][:, ::-1].copy()),
    )
    kernel = aa.Array2D.no_mask(values=np.flipud(dataset.psf.kernel).copy(), pixel_scales=ps)
    imaging = aa.Imaging(
        data=aa.Array2D(values=np.flipud(dataset.data).copy(), mask=mask),
        noise_map=aa.Array2D(values=np.flipud(dataset.noise_map).copy(), mask=mask),
        psf=aa.Convolver(kernel=kernel, use_fft=False),
        over_sample_size_pixelization=f,
        use_normalized_psf=False,
    )
    mesh = aa.mesh.Delaunay(pixels=vertices.shape[0])
    interpolator = mesh.interpolator_from(
        source_plane_data_grid=data_grid,
        source_plane_mesh_grid=aa.Grid2DIrregular(values=vertices[:, ::-1].copy()),
        border_relocator=None,
    )
    mapper = aa.Mapper(interpolator=interpolator)
    ours = pixelization.mesh.mapping(points, vertices, np)
    m = mapping_matrix(
        ours.indices,
        ours.weights,
        masked.sub_pixel,
        masked.sub_weight,
        masked.data.size,
        ours.n_pixels,
    )
    regularization = aa.reg.Constant(coefficient=math.sqrt(pixelization.regularization.coefficient))
    mock = MockMapper(
        mapping_matrix=m[pos],
        regularization=regularization,
        mesh_geometry=mapper.mesh_geometry,
        interpolator=interpolator,
    )
    inv = aa.Inversion(
        dataset=imaging,
        linear_obj_list=[mock],
        settings=aa.Settings(use_positive_only_solver=False),
    )
    model = np.asarray(inv.mapped_reconstructed_operated_data.array)
    data, noise = np.asarray(imaging.data.array), np.asarray(imaging.noise_map.array)
    chi2 = float(np.sum(((data - model) / noise) ** 2))
    return fit_util.log_evidence_from(
        chi_squared=chi2,
        regularization_term=inv.regularization_term,
        log_curvature_regularization_term=inv.log_det_curvature_reg_matrix_term,
        log_regularization_term=inv.log_det_regularization_matrix_term,
        noise_normalization=float(np.sum(np.log(2 * np.pi * noise**2))),
    )


@pytest.mark.parametrize("lam", [0.3, 1.5, 20.0])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_log_evidence_matches_autoarray(backend, lam):
    dataset = small_dataset()
    tracer = lens_tracer(0.98, (0.03, -0.02))
    pix = Pixelization(Delaunay((10, 10)), Constant(lam))
    fit = FitPixelised(dataset, tracer, pix, backend)
    theirs = _autoarray_log_evidence(dataset, fit, pix)
    # goal 1e-8 relative (the issue); measured ~1e-11
    assert float(fit.log_evidence) == pytest.approx(theirs, rel=1e-8)

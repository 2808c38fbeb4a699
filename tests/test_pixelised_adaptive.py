"""The magnification-adaptive rectangular mesh (RectangularAdaptDensity): its edges put equal
numbers of traced sub-pixels in each column and row of cells, its bilinear weights reproduce
bilinear functions on any edge spacing, and it is configured and refused as documented.
(Its evidence against the dense reference, and across backends with gradients, is in
test_pixelised_evidence and test_pixelised_backends.)"""

import tomllib

import numpy as np
import pytest
from pixelised_cases import lens_tracer, small_dataset

from twinlens.inversion import (
    Constant,
    FitPixelised,
    Pixelization,
    Rectangular,
    RectangularAdaptDensity,
)
from twinlens.inversion.interpolation import lattice_weights
from twinlens.inversion.meshes import quantile_edges


def _cell_counts(values, edges):
    """Points per cell ``[e_j, e_j+1)`` (the last cell closed), by counting, not by index."""
    counts = []
    for j in range(len(edges) - 1):
        upper = values <= edges[j + 1] if j == len(edges) - 2 else values < edges[j + 1]
        counts.append(int(np.sum((values >= edges[j]) & upper)))
    return np.array(counts)


def test_each_column_and_row_of_cells_holds_equal_numbers_of_sub_pixels():
    dataset = small_dataset()
    tracer = lens_tracer(shear=(0.03, -0.02))
    spread = {}
    for mesh in (RectangularAdaptDensity((7, 10)), Rectangular((7, 10))):
        fit = FitPixelised(dataset, tracer, Pixelization(mesh, Constant(1.0)), "numpy")
        points = np.asarray(fit.source_plane_points)
        vertices = np.asarray(fit.source_vertices)
        cx = _cell_counts(points[:, 0], vertices[:10, 0])
        cy = _cell_counts(points[:, 1], vertices[::10, 1])
        n = len(points)
        assert cx.sum() == n and cy.sum() == n
        spread[type(mesh)] = (np.abs(cx - n / 9).max(), np.abs(cy - n / 6).max())
    # quantile edges: each count within 2 of n / (cells) (the quantile's position is
    # fractional; relocated points can tie on the border). The uniform lattice, by contrast,
    # leaves hundreds more in its central cells: the check can fail.
    assert max(spread[RectangularAdaptDensity]) <= 2
    assert min(spread[Rectangular]) > 50


def test_adaptive_lattice_is_finer_where_the_lens_magnifies():
    """The smallest cells sit near the caustic region's centre of traced points, the largest at
    the edges, unlike the uniform lattice's equal cells."""
    dataset = small_dataset()
    fit = FitPixelised(
        dataset, lens_tracer(), Pixelization(RectangularAdaptDensity((9, 9)), Constant(1.0))
    )
    widths = np.diff(np.asarray(fit.source_vertices)[:9, 0])
    assert widths.max() > 3 * widths.min()
    assert np.argmin(widths) not in (0, len(widths) - 1)


def test_uniform_fraction_one_is_the_uniform_lattice():
    dataset = small_dataset()
    tracer = lens_tracer(0.98, (0.01, 0.02))
    uniform = FitPixelised(dataset, tracer, Pixelization(Rectangular((8, 9)), Constant(0.5)))
    blended = FitPixelised(
        dataset, tracer, Pixelization(RectangularAdaptDensity((8, 9), 1.0), Constant(0.5))
    )
    np.testing.assert_allclose(blended.source_vertices, uniform.source_vertices, atol=1e-14)
    # two formulas for the same weights: rounding only
    assert blended.log_evidence == pytest.approx(uniform.log_evidence, rel=1e-12)
    halfway = FitPixelised(
        dataset, tracer, Pixelization(RectangularAdaptDensity((8, 9), 0.5), Constant(0.5))
    )
    assert abs(halfway.log_evidence - uniform.log_evidence) > 1.0


def test_lattice_weights_reproduce_bilinear_functions_on_uneven_edges():
    rng = np.random.default_rng(3)
    x_edges = np.array([-1.0, -0.7, -0.65, -0.65, 0.2, 1.3])  # a zero-width cell included
    y_edges = np.array([-0.5, 0.1, 0.15, 0.9])
    points = np.column_stack([rng.uniform(-1, 1.3, 500), rng.uniform(-0.5, 0.9, 500)])
    points[:4] = [[-0.65, 0.1], [-1.0, -0.5], [1.3, 0.9], [-0.65, 0.9]]  # on edges and corners
    indices, weights = lattice_weights(points, x_edges, y_edges)
    vx = np.tile(x_edges, len(y_edges))
    vy = np.repeat(y_edges, len(x_edges))

    def f(x, y):
        return 0.3 + 1.7 * x - 0.4 * y + 2.1 * x * y

    assert np.all(weights >= 0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-15)
    got = np.sum(weights * f(vx, vy)[indices], axis=1)
    np.testing.assert_allclose(got, f(points[:, 0], points[:, 1]), atol=1e-13)
    # no point reads the zero-width cell's left column as its cell
    assert not np.any(indices[:, 0] % len(x_edges) == 2)


def test_source_on_grid_follows_the_uneven_lattice():
    from scipy.interpolate import RegularGridInterpolator

    from twinlens.inversion.source import source_on_grid

    fit = FitPixelised(
        small_dataset(), lens_tracer(), Pixelization(RectangularAdaptDensity((8, 9)), Constant(1.0))
    )
    image, scale, centre = source_on_grid(fit, n=40)
    v = np.asarray(fit.source_vertices)
    gx, gy = v[:9, 0], v[::9, 1]
    axis = (np.arange(40) - 19.5) * scale
    xs, ys = np.meshgrid(centre[0] + axis, centre[1] + axis)
    s = np.asarray(fit.reconstruction).reshape(8, 9)
    ref = RegularGridInterpolator((gy, gx), s, bounds_error=False, fill_value=np.nan)(
        np.stack([ys, xs], axis=-1)
    )
    np.testing.assert_array_equal(np.isnan(image), np.isnan(ref))
    np.testing.assert_allclose(image, ref, atol=1e-12 * np.abs(s).max())


def test_quantile_edges_match_numpy():
    values = np.random.default_rng(5).normal(size=1001)
    np.testing.assert_allclose(
        quantile_edges(values, 7), np.quantile(values, np.linspace(0, 1, 7)), atol=1e-15
    )


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True, "half"])
def test_uniform_fraction_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match=r"uniform_fraction must be a number in \[0, 1\]"):
        RectangularAdaptDensity((5, 5), bad)


def test_shape_is_checked_and_value_identity_holds():
    with pytest.raises(ValueError, match=r"^RectangularAdaptDensity\.shape must be"):
        RectangularAdaptDensity((2, 5))
    with pytest.raises(ValueError, match=r"^Rectangular\.shape must be"):
        Rectangular((2, 5))
    a = RectangularAdaptDensity((5, 6), 0)
    assert a == RectangularAdaptDensity((5, 6), 0.0) and hash(a) == hash(
        RectangularAdaptDensity((5, 6), 0.0)
    )
    assert a != Rectangular((5, 6))
    assert a != RectangularAdaptDensity((5, 6), 0.1)


TOML = """
[dataset]
data = "data.fits"
noise_map = "noise_map.fits"
psf = "psf.fits"

[[lens]]
[[lens.mass]]
type = "SIE"
centre = [0.0, 0.0]
ell_comps = [0.1, 0.05]
einstein_radius = {uniform = [0.5, 1.5], start = 1.0}

[[source]]
[[source.light]]
type = "Pixelization"
mesh = {type = "RectangularAdaptDensity", shape = [12, 14], uniform_fraction = 0.2}
regularization = {type = "Curvature", coefficient = 3.0}
"""


def test_config_reads_the_adaptive_mesh():
    from twinlens.job.config import ConfigError, parse_config

    config = parse_config(tomllib.loads(TOML), read_data=False)
    pix = config.model.tracer.sources[0].pixelization
    assert pix.mesh == RectangularAdaptDensity((12, 14), 0.2)
    bad = TOML.replace("uniform_fraction = 0.2", "uniform_fraction = 2.0")
    with pytest.raises(ConfigError, match=r"mesh \(RectangularAdaptDensity\): .*uniform_fraction"):
        parse_config(tomllib.loads(bad), read_data=False)
    bad = TOML.replace("uniform_fraction = 0.2", 'uniform_fraction = "a"')
    with pytest.raises(ConfigError, match=r"mesh\.uniform_fraction = \"a\": expected a number"):
        parse_config(tomllib.loads(bad), read_data=False)
    bad = TOML.replace('"RectangularAdaptDensity"', '"Rectangular"')
    with pytest.raises(ConfigError, match=r"mesh\.uniform_fraction: a Rectangular mesh has no"):
        parse_config(tomllib.loads(bad), read_data=False)


def _weighted_quantiles(values, weights, n):
    """Independent reference: each value owns an interval of the cumulative weight as long as
    its weight; quantile j is the weighted mean of the values over the window of width
    ``W / n_values`` starting at ``j / (n - 1) (W - W / n_values)``, from the overlap of each
    interval with the window; the end quantiles are the minimum and the maximum."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    upper = np.cumsum(w)
    lower = upper - w
    total = upper[-1]
    h = total / len(v)
    out = [v[0]]
    for p in np.linspace(0.0, 1.0, n)[1:-1]:
        a = p * (total - h)
        overlap = np.clip(np.minimum(upper, a + h) - np.maximum(lower, a), 0.0, None)
        out.append(np.sum(v * overlap) / np.sum(overlap))
    return np.array([*out, v[-1]])


def _oversampled_dataset(adaptive):
    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import simulate
    from twinlens.imaging.psf import PSF
    from twinlens.lensing.tracer import Galaxy, Tracer
    from twinlens.light import GaussianLight

    grid = Grid2D.uniform(24, 0.12, sub_size=4).circular_mask(1.5)
    if adaptive:  # 4 x 4 sub-pixels near the lens centre only, 1 elsewhere
        grid = grid.adaptive_radial(((0.0, 0.0),), (0.6,), (4,), outer_sub_size=1)
    source = Galaxy(light=(GaussianLight(centre=(0.05, 0.0), sigma=0.2, intensity=1.0),))
    truth = Tracer(lens_tracer().lenses[0], source)
    return simulate(truth, grid, PSF.gaussian(0.15, 0.12, 5), noise_sigma=0.05, seed=1)


def test_adaptive_edges_are_area_weighted_quantiles_on_an_oversampled_grid():
    from twinlens.inversion.mapping import MaskedLayout

    dataset = _oversampled_dataset(adaptive=True)
    layout = MaskedLayout(dataset).layout
    assert len(layout.levels) == 2  # two sizes of sub-pixel: the case that matters
    # each sub-pixel's area, in pixels: 1 / f^2 for f x f sub-pixels, in the layout's order
    area = np.concatenate([np.full(count * f * f, 1.0 / f**2) for f, count in layout.levels])
    mesh = RectangularAdaptDensity((7, 8))
    fit = FitPixelised(dataset, lens_tracer(), Pixelization(mesh, Constant(1.0)), "numpy")
    points = np.asarray(fit.source_plane_points)
    vertices = np.asarray(fit.source_vertices)
    expect_x = _weighted_quantiles(points[:, 0], area, 8)
    expect_y = _weighted_quantiles(points[:, 1], area, 7)
    # two formulas (overlaps against a difference of cumulative sums): rounding only
    np.testing.assert_allclose(vertices[:8, 0], expect_x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(vertices[::8, 1], expect_y, rtol=0, atol=1e-12)
    # the point of the weights: the same lens and mask, uniformly oversampled, places nearly
    # the same inner edges (the area is the same), whereas counting sub-pixels pulls them
    # towards the densely oversampled centre (the end edges are the traced extent, which the
    # sub-pixels' positions set). Measured: 0.3 % of the width weighted, 8 % unweighted
    uniform = FitPixelised(
        _oversampled_dataset(adaptive=False), lens_tracer(), Pixelization(mesh, Constant(1.0))
    )
    reference = np.asarray(uniform.source_vertices)[:8, 0]
    width = reference[-1] - reference[0]
    unweighted = quantile_edges(points[:, 0], 8)
    assert np.abs(vertices[1:7, 0] - reference[1:-1]).max() < 0.01 * width
    assert np.abs(unweighted[1:-1] - reference[1:-1]).max() > 0.04 * width
    # every backend places the same edges
    for backend in ("numba", "jax"):
        other = FitPixelised(dataset, lens_tracer(), Pixelization(mesh, Constant(1.0)), backend)
        np.testing.assert_allclose(np.asarray(other.source_vertices), vertices, atol=1e-12)
        assert float(other.log_evidence) == pytest.approx(fit.log_evidence, rel=1e-10)


def test_weighted_quantiles_reduce_to_numpy_for_equal_weights_and_are_continuous():
    values = np.random.default_rng(7).normal(size=301)
    weights = np.random.default_rng(8).uniform(0.2, 1.0, size=301)
    np.testing.assert_allclose(
        quantile_edges(values, 6, np, weights), _weighted_quantiles(values, weights, 6), atol=1e-13
    )
    # continuous where two values of different weights swap order
    i, j = 3, 4
    for gap in (1e-9, -1e-9):
        moved = values.copy()
        moved[j] = moved[i] + gap
        np.testing.assert_allclose(
            quantile_edges(moved, 9, np, weights),
            quantile_edges(np.where(np.arange(301) == j, values[i], values), 9, np, weights),
            atol=1e-8,
        )


def test_rectangular_edges_are_uniform_and_both_lattices_share_one_mapping():
    points = np.random.default_rng(4).normal(size=(500, 2)) * [0.4, 0.2]
    x_edges, y_edges = Rectangular((5, 7)).edges(points)
    np.testing.assert_allclose(x_edges, np.linspace(points[:, 0].min(), points[:, 0].max(), 7))
    np.testing.assert_allclose(y_edges, np.linspace(points[:, 1].min(), points[:, 1].max(), 5))
    # one mapping: the adaptive mesh differs only in its edges
    assert RectangularAdaptDensity.mapping is Rectangular.mapping
    assert RectangularAdaptDensity.edges is not Rectangular.edges

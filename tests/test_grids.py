"""Pixel grids: coordinates, masks, the sub-pixel layout and binning, adaptive oversampling.

Every expected value is independent of the code under test: the documented closed form of the
pixel centres, per-pixel loops, closed forms of the midpoint rule's discrete means, and the
exact pixel integral of a Gaussian from ``erf``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf

from twinlens.backend import jax_runtime
from twinlens.grids import Grid2D, Grid2DIrregular, SubPixelLayout, bin_to_pixels

EPS = np.finfo(float).eps


def centre_closed_form(i, j, shape, scale, origin):
    """The module docstring: x grows with the column j, y with the row i."""
    ny, nx = shape
    return (origin[0] + (j - (nx - 1) / 2.0) * scale, origin[1] + (i - (ny - 1) / 2.0) * scale)


def scatter(layout, values, shape):
    """Binned values placed into an image via ``layout.pixels``; unused pixels are NaN."""
    img = np.full(shape, np.nan)
    img.reshape(-1)[layout.pixels] = values
    return img


def factor_of_each_binned_pixel(layout):
    """The sub-pixel factor of each binned value, from ``layout.levels`` (level after level)."""
    return np.concatenate([np.full(count, f) for f, count in layout.levels])


# -- coordinates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "origin"),
    [((5, 7), (0.0, 0.0)), ((4, 6), (0.3, -1.25)), ((1, 1), (2.0, 3.0)), ((6, 3), (-0.5, 0.0))],
)
def test_pixel_centres_follow_the_documented_closed_form(shape, origin):
    scale = 0.05
    g = Grid2D(shape, scale, origin)
    assert g.x.shape == g.y.shape == shape
    for i in range(shape[0]):
        for j in range(shape[1]):
            xc, yc = centre_closed_form(i, j, shape, scale, origin)
            # one multiply and one add per coordinate: a few ulps of the largest magnitude
            tol = 8 * EPS * (abs(xc) + abs(yc) + max(shape) * scale + 1.0)
            assert abs(g.x[i, j] - xc) <= tol
            assert abs(g.y[i, j] - yc) <= tol
    # orientation stated independently of the formula: x increases along a row, y down a column
    assert np.all(np.diff(g.x, axis=1) > 0) and np.all(np.diff(g.x, axis=0) == 0)
    assert np.all(np.diff(g.y, axis=0) > 0) and np.all(np.diff(g.y, axis=1) == 0)


@pytest.mark.parametrize("shape", [(5, 7), (4, 6)])
def test_pixel_centres_are_symmetric_about_the_origin(shape):
    # odd side: a pixel sits on the origin; even side: the origin falls on a pixel edge.
    # Either way the centres are symmetric, so they average exactly to the origin.
    origin = (0.25, -0.5)
    g = Grid2D(shape, 0.1, origin)
    # mean of up to 42 values of size ~0.6: rounding below 1e-14
    assert abs(g.x.mean() - origin[0]) < 1e-14
    assert abs(g.y.mean() - origin[1]) < 1e-14
    # spacing is the pixel scale (a difference of two rounded values: a few ulps of ~0.6)
    np.testing.assert_allclose(np.diff(g.x[0]), 0.1, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.diff(g.y[:, 0]), 0.1, rtol=0, atol=1e-15)
    ny, nx = shape
    assert bool(np.any(np.abs(g.x[0] - origin[0]) < 1e-15)) is (nx % 2 == 1)
    assert bool(np.any(np.abs(g.y[:, 0] - origin[1]) < 1e-15)) is (ny % 2 == 1)


def test_xy_stacks_x_then_y():
    g = Grid2D((3, 4), 0.2, (1.0, 2.0))
    xy = g.xy
    assert xy.shape == (3, 4, 2)
    np.testing.assert_array_equal(xy[..., 0], g.x)  # exact: a copy
    np.testing.assert_array_equal(xy[..., 1], g.y)


def test_uniform_accepts_one_integer_for_a_square():
    g = Grid2D.uniform(5, 0.1, sub_size=3, origin=(0.5, 0.0))
    assert g.shape == (5, 5) and g.sub_size == 3 and g.origin == (0.5, 0.0) and g.mask is None
    assert g == Grid2D((5, 5), 0.1, (0.5, 0.0), None, 3)
    assert Grid2D.uniform((np.int64(3), 4), 0.1).shape == (3, 4)
    assert g.n_pixels == 25
    assert g.used.shape == (5, 5) and g.used.all()


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"shape": (3,)}, "Grid2D.shape"),
        ({"shape": (0, 3)}, "Grid2D.shape"),
        ({"shape": (3.0, 3)}, "Grid2D.shape"),
        ({"pixel_scale": 0.0}, "Grid2D.pixel_scale"),
        ({"pixel_scale": -0.1}, "Grid2D.pixel_scale"),
        ({"pixel_scale": math.inf}, "Grid2D.pixel_scale"),
        ({"pixel_scale": math.nan}, "Grid2D.pixel_scale"),
        ({"origin": (0.0, math.nan)}, "Grid2D.origin"),
        ({"origin": (0.0,)}, "Grid2D.origin"),
        ({"mask": np.ones((3, 4), dtype=int)}, "Grid2D.mask"),
        ({"mask": np.ones((4, 3), dtype=bool)}, "Grid2D.mask"),
        ({"mask": np.zeros((3, 4), dtype=bool)}, "selects no pixel"),
        ({"sub_size": 0}, "Grid2D.sub_size"),
        ({"sub_size": 65}, "Grid2D.sub_size"),
        ({"sub_size": 2.0}, "Grid2D.sub_size"),
        ({"sub_size": np.ones((4, 3), dtype=int)}, "Grid2D.sub_size"),
        ({"sub_size": np.ones((3, 4))}, "Grid2D.sub_size"),
        ({"sub_size": np.zeros((3, 4), dtype=int)}, "Grid2D.sub_size"),
        ({"sub_size": np.full((3, 4), 65)}, "Grid2D.sub_size"),
    ],
)
def test_bad_fields_raise_naming_the_field(kwargs, field):
    args = {"shape": (3, 4), "pixel_scale": 0.1, **kwargs}
    with pytest.raises(ValueError, match=field):
        Grid2D(**args)


def test_factor_limits_are_inclusive():
    assert Grid2D((2, 2), 0.1, sub_size=64).sub_size == 64
    assert Grid2D((2, 2), 0.1, sub_size=np.full((2, 2), 64)).sub_size_map.max() == 64


# -- masks ---------------------------------------------------------------------------------------


def _guard_no_centre_on_a_boundary(shape, scale, origin, centre, radii):
    """A centre within rounding of a mask radius could go either way; the test data avoid it."""
    for i in range(shape[0]):
        for j in range(shape[1]):
            x, y = centre_closed_form(i, j, shape, scale, origin)
            d = math.hypot(x - centre[0], y - centre[1])
            assert all(abs(d - r) > 1e-9 for r in radii)


@pytest.mark.parametrize(
    ("shape", "origin", "centre", "radius"),
    [((9, 9), (0.0, 0.0), (0.0, 0.0), 0.27), ((8, 11), (0.1, -0.2), (0.23, -0.31), 0.33)],
)
def test_circular_mask_matches_a_per_pixel_computation(shape, origin, centre, radius):
    scale = 0.1
    _guard_no_centre_on_a_boundary(shape, scale, origin, centre, [radius])
    g = Grid2D(shape, scale, origin).circular_mask(radius, centre)
    expected = np.zeros(shape, dtype=bool)
    for i in range(shape[0]):
        for j in range(shape[1]):
            x, y = centre_closed_form(i, j, shape, scale, origin)
            expected[i, j] = math.hypot(x - centre[0], y - centre[1]) <= radius
    assert expected.any() and not expected.all()  # the case discriminates
    np.testing.assert_array_equal(g.mask, expected)
    np.testing.assert_array_equal(g.used, expected)


def test_annular_mask_matches_a_per_pixel_computation():
    shape, scale, origin, centre = (12, 10), 0.1, (0.05, 0.0), (0.12, -0.07)
    inner, outer = 0.15, 0.42
    _guard_no_centre_on_a_boundary(shape, scale, origin, centre, [inner, outer])
    g = Grid2D(shape, scale, origin, sub_size=2).annular_mask(inner, outer, centre)
    expected = np.zeros(shape, dtype=bool)
    for i in range(shape[0]):
        for j in range(shape[1]):
            x, y = centre_closed_form(i, j, shape, scale, origin)
            d = math.hypot(x - centre[0], y - centre[1])
            expected[i, j] = inner <= d <= outer
    disc = np.zeros(shape, dtype=bool)
    for i in range(shape[0]):
        for j in range(shape[1]):
            x, y = centre_closed_form(i, j, shape, scale, origin)
            disc[i, j] = math.hypot(x - centre[0], y - centre[1]) <= inner
    assert disc.any()  # the hole removes pixels, so the inner edge is exercised
    np.testing.assert_array_equal(g.mask, expected)
    assert g.sub_size == 2  # a mask keeps the oversampling


def test_annular_mask_with_zero_inner_radius_is_the_disc():
    g = Grid2D.uniform(9, 0.1)
    np.testing.assert_array_equal(g.annular_mask(0.0, 0.27).mask, g.circular_mask(0.27).mask)


@pytest.mark.parametrize("radius", [0.0, -0.1, math.nan])
def test_circular_mask_needs_a_positive_radius(radius):
    with pytest.raises(ValueError, match="radius must be > 0"):
        Grid2D.uniform(5, 0.1).circular_mask(radius)


@pytest.mark.parametrize(("inner", "outer"), [(0.3, 0.3), (0.4, 0.3), (-0.1, 0.3)])
def test_annular_mask_needs_ordered_radii(inner, outer):
    with pytest.raises(ValueError, match="inner_radius < outer_radius"):
        Grid2D.uniform(5, 0.1).annular_mask(inner, outer)


def test_a_mask_that_selects_nothing_raises():
    g = Grid2D.uniform(5, 0.1)
    with pytest.raises(ValueError, match="selects no pixel"):
        g.circular_mask(0.05, centre=(10.0, 10.0))  # far off the image
    with pytest.raises(ValueError, match="selects no pixel"):
        g.annular_mask(1.0, 2.0)  # every centre is within 0.29 of the origin


def test_mask_given_as_a_nested_list_is_stored_as_an_array():
    rows = [[True, False, True], [False, True, True]]
    g = Grid2D((2, 3), 0.1, mask=rows)
    assert isinstance(g.mask, np.ndarray) and g.mask.dtype == np.bool_
    assert g == Grid2D((2, 3), 0.1, mask=np.array(rows))
    np.testing.assert_array_equal(g.layout().pixels, [0, 2, 4, 5])  # row-major flat indices


def test_editing_the_passed_mask_changes_neither_grid_nor_key():
    mask = np.ones((3, 3), dtype=bool)
    g = Grid2D((3, 3), 0.1, mask=mask)
    key_before = hash(g)
    mask[1, 1] = False
    assert g.mask.all() and hash(g) == key_before
    assert g == Grid2D.uniform(3, 0.1).circular_mask(10.0)


# -- layout: counts, geometry and the discrete means ---------------------------------------------


def masked_adaptive_grid():
    """7 x 8 grid, annular mask, four factors placed by hand (independent of adaptive_radial)."""
    shape = (7, 8)
    sub = np.ones(shape, dtype=np.int64)
    sub[2:5, 3:6] = 5
    sub[3, 5] = 8
    sub[0, :] = 2
    sub[:, 0] = 3
    # pixel centres lie 0.1 * sqrt(odd^2 + even^2) from the image centre (0.1, -0.3): the
    # radii 0.15 and 0.75 are >= 0.04 from every one of them, so no pixel is a rounding call
    return Grid2D(shape, 0.2, (0.1, -0.3), sub_size=sub).annular_mask(
        0.15, 0.75, centre=(0.1, -0.3)
    )


@pytest.mark.parametrize(
    "grid",
    [
        Grid2D.uniform((4, 5), 0.1),
        Grid2D.uniform((4, 5), 0.1, sub_size=3),
        Grid2D.uniform((6, 6), 0.1, sub_size=4).circular_mask(0.2),
        masked_adaptive_grid(),
    ],
    ids=["f1", "f3", "f4-masked", "adaptive-masked"],
)
def test_layout_counts_and_geometry(grid):
    lay = grid.layout()
    assert isinstance(lay, SubPixelLayout)
    used = grid.used
    f_map = grid.sub_size_map
    # number of points = sum over used pixels of f^2, and n_pixels = number of used pixels
    assert lay.n_points == grid.n_points == int((f_map[used] ** 2).sum())
    assert lay.points.shape == (lay.n_points, 2)
    assert sorted(lay.pixels.tolist()) == np.flatnonzero(used).tolist()
    # levels: one per distinct factor among the used pixels, counting them
    assert dict(lay.levels) == {
        int(f): int(np.sum(used & (f_map == f))) for f in np.unique(f_map[used])
    }
    # each level's pixels have that level's factor
    np.testing.assert_array_equal(f_map.reshape(-1)[lay.pixels], factor_of_each_binned_pixel(lay))
    # every sub-pixel lies strictly inside its own pixel, on an f x f lattice of step s/f
    s = grid.pixel_scale
    start = 0
    for pix, f in zip(lay.pixels, factor_of_each_binned_pixel(lay), strict=True):
        i, j = divmod(int(pix), grid.shape[1])
        xc, yc = centre_closed_form(i, j, grid.shape, s, grid.origin)
        pts = lay.points[start : start + f * f]
        start += f * f
        dx, dy = pts[:, 0] - xc, pts[:, 1] - yc
        # sub-pixel centres are at least s/(2f) from the pixel edge (>= s/128); rounding ~1e-16
        assert np.all(np.abs(dx) < s / 2) and np.all(np.abs(dy) < s / 2)
        # f distinct x offsets and f distinct y offsets, every pairing present once
        ux, uy = np.unique(np.round(dx / s * 2 * f, 9)), np.unique(np.round(dy / s * 2 * f, 9))
        # in units of s/(2f) the midpoint offsets are the odd integers -(f-1), ..., f-1
        np.testing.assert_array_equal(ux, np.arange(-(f - 1), f, 2))
        np.testing.assert_array_equal(uy, np.arange(-(f - 1), f, 2))
        assert len({(round(a, 12), round(b, 12)) for a, b in zip(dx, dy, strict=True)}) == f * f
    assert start == lay.n_points


def test_sub_pixel_means_of_polynomials_match_closed_forms():
    """Closed forms of the discrete (midpoint-rule) means over one pixel's f x f sub-pixels.

    Sub-pixel offsets are o_k = s (2k + 1 - f) / (2f), k = 0..f-1 (the centres of f equal
    slices of [-s/2, s/2]); they are symmetric about 0, so mean(o) = 0 and, per axis,

        mean(o^2) = s^2 / (4 f^2) * (1/f) sum_k (2k + 1 - f)^2
                  = s^2 / (4 f^2) * (f^2 - 1) / 3          [sum of (2k+1-f)^2 = f (f^2 - 1) / 3]
                  = s^2 (1 - 1/f^2) / 12.

    Each x offset is paired with every y offset, so over the f x f points
        mean(a + b x + c y) = a + b x_c + c y_c,
        mean(x^2)           = x_c^2 + s^2 (1 - 1/f^2) / 12,
        mean(x y)           = x_c y_c   (mean(o_x o_y) = mean(o_x) mean(o_y) = 0).
    """
    grid = masked_adaptive_grid()
    lay = grid.layout()
    x, y = lay.points[:, 0], lay.points[:, 1]
    s = grid.pixel_scale
    f_map = grid.sub_size_map.astype(float)
    used = grid.used
    assert len(lay.levels) >= 4  # several levels are exercised

    lin = scatter(lay, bin_to_pixels(0.7 - 1.3 * x + 2.1 * y, lay), grid.shape)
    sq = scatter(lay, bin_to_pixels(x * x, lay), grid.shape)
    cross = scatter(lay, bin_to_pixels(x * y, lay), grid.shape)

    # the pixel centres come from the closed form, not from grid.x / grid.y
    ii, jj = np.indices(grid.shape)
    xc, yc = centre_closed_form(ii, jj, grid.shape, s, grid.origin)
    # values are O(1), means over <= 64 terms: rounding <= ~64 eps ~ 1.4e-14; 1e-13 is margin,
    # while a missing s^2(1-1/f^2)/12 term (>= 2.5e-3 here) or a misplaced pixel is far larger
    atol = 1e-13
    np.testing.assert_allclose(lin[used], (0.7 - 1.3 * xc + 2.1 * yc)[used], rtol=0, atol=atol)
    np.testing.assert_allclose(
        sq[used], (xc**2 + s**2 * (1 - 1 / f_map**2) / 12)[used], rtol=0, atol=atol
    )
    np.testing.assert_allclose(cross[used], (xc * yc)[used], rtol=0, atol=atol)
    assert np.all(np.isnan(sq[~used]))  # nothing binned into unused pixels


def test_binned_values_follow_layout_pixels_order():
    # a value that identifies its pixel: binned[k] must be the index layout.pixels[k]
    grid = masked_adaptive_grid()
    lay = grid.layout()
    s, (ny, nx), (ox, oy) = grid.pixel_scale, grid.shape, grid.origin
    # invert the centre formula: column and row from a point (exact for sub-pixel means, which
    # equal the centre; round() absorbs rounding ~1e-15)
    col = (lay.points[:, 0] - ox) / s + (nx - 1) / 2
    row = (lay.points[:, 1] - oy) / s + (ny - 1) / 2
    flat_index = bin_to_pixels(row * nx + col, lay)
    np.testing.assert_array_equal(np.round(flat_index).astype(int), lay.pixels)
    np.testing.assert_allclose(flat_index, lay.pixels, rtol=0, atol=1e-9)  # rounding only


def test_layout_over_chosen_pixels():
    grid = Grid2D.uniform((4, 4), 0.1, sub_size=2).circular_mask(0.1)
    chosen = np.zeros((4, 4), dtype=bool)
    chosen[0, 0] = chosen[3, 2] = True  # outside the mask: a layout may cover any pixels
    lay = grid.layout(chosen)
    np.testing.assert_array_equal(lay.pixels, [0, 14])
    assert lay.levels == ((2, 2),) and lay.n_points == 8
    # default = the used pixels, and an explicit all-used request is the same layout
    assert grid.layout(grid.used) == grid.layout()


def test_bin_to_pixels_passes_leading_batch_axes():
    grid = masked_adaptive_grid()
    lay = grid.layout()
    x, y = lay.points[:, 0], lay.points[:, 1]
    batch = np.stack([np.stack([x + a * y, a * x * x]) for a in (0.5, -1.0, 2.0)])  # (3, 2, P)
    out = bin_to_pixels(batch, lay)
    assert out.shape == (3, 2, lay.pixels.size)
    for k in range(3):
        for m in range(2):
            np.testing.assert_array_equal(out[k, m], bin_to_pixels(batch[k, m], lay))


def test_bin_to_pixels_single_level_is_a_plain_mean():
    lay = Grid2D.uniform((2, 3), 1.0, sub_size=2).layout()
    values = np.arange(24.0)  # pixel p owns values 4p .. 4p+3 (pixel after pixel)
    # mean of 4p, 4p+1, 4p+2, 4p+3 = 4p + 1.5, exactly representable
    np.testing.assert_array_equal(bin_to_pixels(values, lay), 4 * np.arange(6) + 1.5)


def test_bin_to_pixels_on_jax_matches_numpy():
    jax = jax_runtime.load()
    jnp = jax.numpy
    grid = masked_adaptive_grid()
    lay = grid.layout()
    values = np.sin(3 * lay.points[:, 0]) * np.cos(2 * lay.points[:, 1])
    values = np.stack([values, 2 * values])
    out = bin_to_pixels(jnp.asarray(values), lay, xp=jnp)
    assert out.dtype == jnp.float64  # x64 is on (jax_runtime.load)
    # both are means of the same <= 64 float64 values, possibly summed in another order
    np.testing.assert_allclose(np.asarray(out), bin_to_pixels(values, lay), rtol=0, atol=1e-14)
    # the closed form again, through the JAX path: mean of x is the pixel centre
    xs = bin_to_pixels(jnp.asarray(lay.points[:, 0]), lay, xp=jnp)
    ii, jj = np.divmod(lay.pixels, grid.shape[1])
    xc, _ = centre_closed_form(ii, jj, grid.shape, grid.pixel_scale, grid.origin)
    np.testing.assert_allclose(np.asarray(xs), xc, rtol=0, atol=1e-14)  # O(1) values, rounding


# -- adaptive oversampling -----------------------------------------------------------------------


def test_adaptive_radial_assigns_factors_inside_out_by_nearest_centre():
    shape, scale, origin = (15, 17), 0.1, (0.0, 0.05)
    centres = ((0.03, 0.02), (-0.42, 0.31))
    radii, sizes, outer = (0.12, 0.25, 0.5), (16, 8, 4), 2
    _guard_no_centre_on_a_boundary(shape, scale, origin, centres[0], radii)
    _guard_no_centre_on_a_boundary(shape, scale, origin, centres[1], radii)
    g = (
        Grid2D(shape, scale, origin)
        .circular_mask(0.6)
        .adaptive_radial(centres, radii, sizes, outer)
    )
    expected = np.empty(shape, dtype=int)
    for i in range(shape[0]):
        for j in range(shape[1]):
            x, y = centre_closed_form(i, j, shape, scale, origin)
            d = min(math.hypot(x - cx, y - cy) for cx, cy in centres)
            expected[i, j] = next((f for r, f in zip(radii, sizes, strict=True) if d <= r), outer)
    assert set(np.unique(expected)) == {16, 8, 4, 2}  # every band is populated
    np.testing.assert_array_equal(g.sub_size_map, expected)
    assert g.sub_size_map.dtype.kind == "i"
    np.testing.assert_array_equal(g.mask, Grid2D(shape, scale, origin).circular_mask(0.6).mask)
    # the layout over the masked pixels counts f^2 per used pixel
    assert g.n_points == int((expected[g.used] ** 2).sum())


@pytest.mark.parametrize(
    ("radii", "sizes", "outer", "match"),
    [
        ((0.2, 0.1), (4, 2), 1, "radii must increase"),
        ((0.2, 0.2), (4, 2), 1, "radii must increase"),
        ((0.1, 0.2), (4,), 1, "one entry each"),
        ((), (), 1, "one entry each"),
        ((0.1,), (0,), 1, "sub size"),
        ((0.1,), (65,), 1, "sub size"),
        ((0.1,), (2.0,), 1, "sub size"),
        ((0.1,), (2,), 0, "sub size"),
    ],
)
def test_adaptive_radial_rejects_bad_arguments(radii, sizes, outer, match):
    with pytest.raises(ValueError, match=match):
        Grid2D.uniform(5, 0.1).adaptive_radial(((0.0, 0.0),), radii, sizes, outer)


def gaussian_pixel_average(xc, yc, s, sigma):
    """Exact mean of exp(-(x^2 + y^2) / (2 sigma^2)) over the square pixel of side s at (xc, yc).

    The integrand separates; int_a^b exp(-x^2 / (2 sigma^2)) dx
    = sigma sqrt(pi / 2) [erf(b / (sigma sqrt 2)) - erf(a / (sigma sqrt 2))]."""
    c = sigma * math.sqrt(2.0)

    def one_axis(u):
        return sigma * math.sqrt(math.pi / 2) * (erf((u + s / 2) / c) - erf((u - s / 2) / c))

    return one_axis(xc) * one_axis(yc) / s**2


def round_gaussian(sigma):
    return lambda xy: np.exp(-(xy[..., 0] ** 2 + xy[..., 1] ** 2) / (2 * sigma**2))


def test_adaptive_to_tolerance_reaches_the_exact_pixel_integral_with_few_points():
    shape, s, sigma, tol = (21, 21), 0.1, 0.1, 1e-3  # FWHM 2.4 pixels: sharply peaked
    g = Grid2D.uniform(shape, s).adaptive_to_tolerance(round_gaussian(sigma), tol)
    lay = g.layout()
    got = scatter(lay, bin_to_pixels(round_gaussian(sigma)(lay.points), lay), shape)
    ii, jj = np.indices(shape)
    xc, yc = centre_closed_form(ii, jj, shape, s, (0.0, 0.0))
    exact = gaussian_pixel_average(xc, yc, s, sigma)
    # Bound: a pixel keeps a cheaper rule only within tol of the reference (8 x 8 sub-pixels),
    # whose own error is h^2 |f''| / (24 * 64) ~< 1e-4 here; so every pixel is within
    # tol + 1e-4 < 2 tol of the exact average.
    assert np.max(np.abs(got - exact)) < 2 * tol
    # the test can fail: without oversampling the peak pixels are off by far more than 2 tol
    plain = round_gaussian(sigma)(np.stack([xc, yc], axis=-1))
    assert np.max(np.abs(plain - exact)) > 10 * tol
    # far fewer points than uniform oversampling by the reference (8^2 per pixel)...
    assert g.n_points < 8**2 * g.n_pixels / 20
    # ...but more than none: the peak was oversampled, and the flat wings were not
    assert g.n_points > g.n_pixels
    assert g.sub_size_map[10, 10] != 1 and g.sub_size_map[0, 0] == 1


def _rule_average(f, xc, yc, s, n):
    """A pixel average by ``n x n`` equal sub-pixels, or ``-n x -n`` Gauss-Legendre nodes."""
    if n > 0:
        o, w = (np.arange(n) + 0.5) * s / n - s / 2, np.full(n, 1.0 / n)
    else:  # nodes on [-1, 1] from numpy, mapped to the pixel; weights sum to 2 there
        nodes, weights = np.polynomial.legendre.leggauss(-n)
        o, w = nodes * s / 2, weights / 2
    xs, ys = np.meshgrid(xc + o, yc + o)
    return float(np.sum(f(np.stack([xs, ys], axis=-1)) * np.outer(w, w)))


def test_adaptive_to_tolerance_follows_its_rule_per_pixel():
    """A second implementation of the documented rule: per pixel, the first rule (in the
    order given) whose average differs from the last (reference) rule's by less than the
    tolerance; the reference otherwise."""
    shape, s, origin, sigma, tol = (7, 9), 0.1, (0.02, -0.03), 0.07, 2e-3
    sizes = (1, -2, 4, 8)
    f = round_gaussian(sigma)
    g0 = Grid2D(shape, s, origin).circular_mask(0.3)
    g = g0.adaptive_to_tolerance(f, tol, sub_sizes=(1, -2, 4, -2, 8))  # repeats are dropped
    expected = np.empty(shape, dtype=int)
    for i in range(shape[0]):
        for j in range(shape[1]):
            xc, yc = centre_closed_form(i, j, shape, s, origin)
            avgs = [_rule_average(f, xc, yc, s, n) for n in sizes]
            diffs = np.abs(np.array(avgs[:-1]) - avgs[-1])
            # guard: no decision within rounding of the tolerance
            assert np.all(np.abs(diffs - tol) > 1e-12)
            expected[i, j] = next((n for n, d in zip(sizes, diffs, strict=False) if d < tol), 8)
    assert len(np.unique(expected)) >= 3  # several factors chosen
    np.testing.assert_array_equal(g.sub_size_map, expected)
    np.testing.assert_array_equal(g.mask, g0.mask)  # the mask is kept (chosen over all pixels)


def test_gauss_legendre_nodes_average_a_cubic_exactly():
    # the pixel average of x^3 + x^2 y over [xc - s/2, xc + s/2] x [yc - s/2, yc + s/2], by
    # integrating term by term: <x^3> = xc^3 + xc s^2 / 4, <x^2> = xc^2 + s^2 / 12, <y> = yc
    shape, s = (3, 4), 0.2
    g = Grid2D.uniform(shape, s, sub_size=-2)
    lay = g.layout()
    assert lay.n_points == 4 * g.n_pixels
    f = lambda xy: xy[..., 0] ** 3 + xy[..., 0] ** 2 * xy[..., 1]  # noqa: E731
    got = scatter(lay, bin_to_pixels(f(lay.points), lay), shape)
    xc, yc = g.x, g.y
    exact = xc**3 + xc * s**2 / 4 + (xc**2 + s**2 / 12) * yc
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-15)  # degree 3 <= 2n - 1: exact
    # the test can fail: 2 x 2 equal sub-pixels miss the x^2 moment by s^2 / 16
    mid = Grid2D.uniform(shape, s, sub_size=2).layout()
    assert np.max(np.abs(scatter(mid, bin_to_pixels(f(mid.points), mid), shape) - exact)) > 1e-4


def test_adaptive_to_tolerance_on_a_linear_image_needs_no_oversampling():
    # every factor's sub-pixel mean of a linear function is the centre value (see the closed
    # forms above), so all differences are rounding (~1e-16) and every pixel gets factor 1
    g = Grid2D.uniform((6, 5), 0.3).adaptive_to_tolerance(
        lambda xy: 1.0 + 0.5 * xy[..., 0] - 2.0 * xy[..., 1], 1e-12
    )
    np.testing.assert_array_equal(g.sub_size_map, np.ones((6, 5), dtype=int))
    assert g.n_points == 30


@pytest.mark.parametrize(
    ("tol", "sizes", "match"),
    [
        (0.0, (1, 2), "tolerance must be > 0"),
        (-1e-3, (1, 2), "tolerance must be > 0"),
        (math.nan, (1, 2), "tolerance must be > 0"),
        (1e-3, (1, 0), "sub size"),
        (1e-3, (1, 128), "sub size"),
    ],
)
def test_adaptive_to_tolerance_rejects_bad_arguments(tol, sizes, match):
    with pytest.raises(ValueError, match=match):
        Grid2D.uniform(3, 0.1).adaptive_to_tolerance(round_gaussian(0.1), tol, sizes)


# -- value identity ------------------------------------------------------------------------------


def test_equal_grids_hash_equal_and_differences_are_seen():
    a = Grid2D.uniform((6, 7), 0.1, sub_size=2).circular_mask(0.25)
    b = Grid2D.uniform((6, 7), 0.1, sub_size=2).circular_mask(0.25)
    assert a is not b and a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != Grid2D.uniform((6, 7), 0.1, sub_size=2).circular_mask(0.15)  # different mask
    assert a != Grid2D.uniform((6, 7), 0.1, sub_size=2)  # no mask
    assert a != Grid2D.uniform((6, 7), 0.1, sub_size=3).circular_mask(0.25)
    assert a != Grid2D.uniform((6, 7), 0.1, sub_size=2, origin=(0.0, 1e-9)).circular_mask(0.25)
    assert a != Grid2D.uniform((7, 6), 0.1, sub_size=2).circular_mask(0.25)
    # an array of equal factors is a different (adaptive) grid from the integer, but two equal
    # arrays agree
    m1 = Grid2D.uniform(4, 0.1, sub_size=np.full((4, 4), 2))
    m2 = Grid2D.uniform(4, 0.1, sub_size=np.full((4, 4), 2))
    assert m1 == m2 and hash(m1) == hash(m2)
    m2b = Grid2D.uniform(4, 0.1, sub_size=np.where(np.eye(4, dtype=bool), 3, 2))
    assert m1 != m2b
    # equal grids have equal layouts
    assert a.layout() == b.layout()


def test_grids_have_no_jax_leaves_and_survive_jit_as_arguments():
    jax = jax_runtime.load()
    g = Grid2D.uniform((4, 5), 0.1, sub_size=np.full((4, 5), 2)).circular_mask(0.2)
    assert jax.tree_util.tree_leaves(g) == []
    assert jax.tree_util.tree_leaves(Grid2DIrregular([[0.0, 1.0]])) == []
    leaves, tree = jax.tree_util.tree_flatten(g)
    assert jax.tree_util.tree_unflatten(tree, leaves) == g
    # equal grids give equal tree structures (one compiled program), different masks do not
    g2 = Grid2D.uniform((4, 5), 0.1, sub_size=np.full((4, 5), 2)).circular_mask(0.2)
    assert jax.tree_util.tree_structure(g2) == tree
    g3 = Grid2D.uniform((4, 5), 0.1, sub_size=np.full((4, 5), 2)).circular_mask(0.3)
    assert jax.tree_util.tree_structure(g3) != tree


# -- irregular grids -----------------------------------------------------------------------------


def test_irregular_grid_stores_a_float_array():
    g = Grid2DIrregular([[0, 1], [2, 3]])
    assert g.xy.dtype == np.float64 and g.xy.shape == (2, 2)
    np.testing.assert_array_equal(g.xy, [[0.0, 1.0], [2.0, 3.0]])
    assert g == Grid2DIrregular(np.array([[0.0, 1.0], [2.0, 3.0]]))
    assert g != Grid2DIrregular([[0.0, 1.0], [2.0, 3.5]])
    with pytest.raises(ValueError):  # read-only: the stored positions cannot be edited
        g.xy[0, 0] = 5.0


@pytest.mark.parametrize(
    ("xy", "match"),
    [
        ([0.0, 1.0], "shape"),
        ([[0.0, 1.0, 2.0]], "shape"),
        (np.zeros((2, 2, 2)), "shape"),
        ([[0.0, math.nan]], "finite"),
        ([[math.inf, 0.0]], "finite"),
    ],
)
def test_irregular_grid_validation(xy, match):
    with pytest.raises(ValueError, match=match):
        Grid2DIrregular(xy)


def test_pixel_coordinates_invert_the_pixel_centres():
    grid = Grid2D.uniform((5, 7), 0.1, origin=(0.3, -0.2))
    row, col = grid.pixel_coordinates(grid.x, grid.y)
    rows, cols = np.indices(grid.shape)
    np.testing.assert_allclose(row, rows, atol=1e-12)
    np.testing.assert_allclose(col, cols, atol=1e-12)

"""The log-evidence of a pixelised source against an independent dense computation.

The reference rebuilds every matrix by brute force with other algorithms: each column of the
mapping matrix is the image of one unit source pixel, interpolated by scipy
(``RegularGridInterpolator``, ``LinearNDInterpolator`` and a hand-written projection onto the
hull outside it), averaged to pixels by reshaping, blurred by ``scipy.signal.convolve2d``;
regularisation matrices are summed from explicit neighbour loops (scipy's
``vertex_neighbor_vertices`` for the Delaunay mesh); the solution uses ``np.linalg.solve`` and
the log-determinants ``np.linalg.slogdet``. Only the traced, relocated positions come from the
production path (the relocation is tested separately, against a loop)."""

import math

import numpy as np
import pytest
from pixelised_cases import lens_tracer, small_dataset
from scipy.interpolate import LinearNDInterpolator, RegularGridInterpolator
from scipy.signal import convolve2d
from scipy.spatial import ConvexHull
from scipy.spatial import Delaunay as ScipyDelaunay

from twinlens.inversion import (
    AdaptiveBrightness,
    Constant,
    Curvature,
    Delaunay,
    FitPixelised,
    Pixelization,
    Rectangular,
    RectangularAdaptDensity,
)
from twinlens.inversion.border import NEIGHBOURS, border_mask, relocate

EPS = 1e-8  # the regularisation matrix's diagonal term (autolens' convention)


def _hull_value(point, vertices, values, hull):
    """The value at the hull point nearest to ``point`` (linear along the nearest edge)."""
    best = (math.inf, 0.0)
    for i, j in hull:
        a, b = vertices[i], vertices[j]
        d = b - a
        t = min(max(np.dot(point - a, d) / np.dot(d, d), 0.0), 1.0)
        gap = np.linalg.norm(point - (a + t * d))
        if gap < best[0]:
            best = (gap, (1 - t) * values[i] + t * values[j])
    return best[1]


def _interpolator(mesh, vertices, points):
    if isinstance(mesh, Rectangular):
        ny, nx = mesh.shape
        vx = np.unique(vertices[:, 0])
        vy = np.unique(vertices[:, 1])
        assert vx.size == nx and vy.size == ny

        def interp(values):  # values (n_src, m): m functions at once
            f = RegularGridInterpolator((vy, vx), values.reshape(ny, nx, -1), method="linear")
            return f(np.column_stack([points[:, 1], points[:, 0]]))

        return interp
    hull = ConvexHull(vertices).simplices

    def interp(values):  # values (n_src, m): m functions at once
        out = LinearNDInterpolator(vertices, values)(points)
        for k in np.flatnonzero(np.isnan(out[:, 0])):
            out[k] = _hull_value(points[k], vertices, values, hull)
        return out

    return interp


def _neighbours(mesh, vertices):
    if isinstance(mesh, Rectangular):
        ny, nx = mesh.shape
        pairs = []
        for i in range(ny):
            for j in range(nx):
                if j + 1 < nx:
                    pairs.append((i * nx + j, i * nx + j + 1))
                if i + 1 < ny:
                    pairs.append((i * nx + j, (i + 1) * nx + j))
        return pairs
    indptr, indices = ScipyDelaunay(vertices).vertex_neighbor_vertices
    return [
        (i, j) for i in range(len(vertices)) for j in indices[indptr[i] : indptr[i + 1]] if i < j
    ]


def _reg_structure(reg, mesh, vertices):
    n = len(vertices)
    h = np.zeros((n, n))
    if isinstance(reg, Curvature):
        ny, nx = mesh.shape
        lines = [[i * nx + j for j in range(nx)] for i in range(ny)]
        lines += [[i * nx + j for i in range(ny)] for j in range(nx)]
        for line in lines:
            for a, b, c in zip(line, line[1:], line[2:], strict=False):
                d = np.zeros(n)
                d[[a, b, c]] = [1.0, -2.0, 1.0]
                h += np.outer(d, d)
        return h
    w = reg.pixel_weights if isinstance(reg, AdaptiveBrightness) else np.ones(n)
    for i, j in _neighbours(mesh, vertices):
        d = np.zeros(n)
        d[i], d[j] = 1.0, -1.0
        h += 0.5 * (w[i] + w[j]) * np.outer(d, d)
    return h


def reference_columns(dataset, mesh, points, vertices):
    """The blurred mapping matrix ``(n_mask, n_source)``, column by column."""
    grid = dataset.grid
    used = grid.used
    f = grid.sub_size
    n_src = len(vertices)
    interp = _interpolator(mesh, vertices, points)
    kernel = dataset.psf.kernel
    columns = []
    unit_images = interp(np.eye(n_src))  # (n_points, n_src): the image of each unit pixel
    for s in range(n_src):
        per_pixel = unit_images[:, s].reshape(-1, f * f).mean(axis=1)
        image = np.zeros(grid.shape)
        image[used] = per_pixel
        columns.append(convolve2d(image, kernel, mode="same")[used])
    return np.array(columns).T


def reference_terms(dataset, mesh, reg, points, vertices):
    used = dataset.grid.used
    n_src = len(vertices)
    b = reference_columns(dataset, mesh, points, vertices)
    d = dataset.data[used]
    sigma = dataset.noise_map[used]
    bw = b / sigma[:, None]
    curvature = bw.T @ bw
    vector = bw.T @ (d / sigma)
    r = reg.coefficient * _reg_structure(reg, mesh, vertices) + EPS * np.eye(n_src)
    s = np.linalg.solve(curvature + r, vector)
    chi2 = np.sum(((d - b @ s) / sigma) ** 2)
    sign_a, log_det_a = np.linalg.slogdet(curvature + r)
    sign_r, log_det_r = np.linalg.slogdet(r)
    assert sign_a > 0 and sign_r > 0
    norm = np.sum(np.log(2 * np.pi * sigma**2))
    log_e = -0.5 * (chi2 + s @ r @ s + log_det_a - log_det_r + norm)
    return {
        "chi2": chi2,
        "reg": s @ r @ s,
        "ld_a": log_det_a,
        "ld_r": log_det_r,
        "log_e": log_e,
        "s": s,
    }


CASES = [
    ("rect-constant", Rectangular((7, 8)), lambda n: Constant(0.7)),
    ("rect-curvature", Rectangular((7, 8)), lambda n: Curvature(0.3)),
    ("rect-adapt-constant", RectangularAdaptDensity((7, 8)), lambda n: Constant(0.7)),
    ("rect-adapt-curvature", RectangularAdaptDensity((7, 8), 0.25), lambda n: Curvature(0.3)),
    ("delaunay-constant", Delaunay((9, 9)), lambda n: Constant(2.5)),
    (
        "delaunay-adaptive",
        Delaunay((9, 9)),
        lambda n: AdaptiveBrightness(1.3, np.random.default_rng(1).uniform(0.1, 3.0, n)),
    ),
]


@pytest.mark.parametrize(("name", "mesh", "make_reg"), CASES, ids=[c[0] for c in CASES])
def test_evidence_matches_dense_reference(name, mesh, make_reg):
    dataset = small_dataset()
    tracer = lens_tracer(shear=(0.03, -0.02))
    probe = FitPixelised(dataset, tracer, Pixelization(mesh, Constant(1.0)), "numpy")
    n_src = len(probe.source_vertices)
    reg = make_reg(n_src)
    fit = FitPixelised(dataset, tracer, Pixelization(mesh, reg), "numpy")
    points, vertices = np.asarray(fit.source_plane_points), np.asarray(fit.source_vertices)
    if isinstance(mesh, RectangularAdaptDensity):
        # the lattice's axes, independently: numpy's quantiles blended with the uniform edges
        u = mesh.uniform_fraction
        for axis, n, got in ((0, 8, vertices[:8, 0]), (1, 7, vertices[::8, 1])):
            q = np.quantile(points[:, axis], np.linspace(0, 1, n))
            uniform = np.linspace(points[:, axis].min(), points[:, axis].max(), n)
            np.testing.assert_allclose(got, (1 - u) * q + u * uniform, rtol=0, atol=1e-14)
    ref = reference_terms(dataset, mesh, reg, points, vertices)
    terms = fit.terms
    # R = lambda H + 1e-8 I has eigenvalues of 1e-8 on H's null space (constant, or for
    # curvature linear, sources), known only to ~1e-16 * |R| absolute: ln det R, and so the
    # evidence, carries ~1e-7 absolute of rounding whatever the algorithm (Cholesky here, LU in
    # the reference). Hence 1e-10 relative with a 1e-6 absolute floor; every other term 1e-10.
    assert terms.chi_squared == pytest.approx(ref["chi2"], rel=1e-10)
    assert terms.regularization_term == pytest.approx(ref["reg"], rel=1e-8, abs=1e-9)
    assert terms.log_det_curvature_reg == pytest.approx(ref["ld_a"], rel=1e-10)
    assert terms.log_det_regularization == pytest.approx(ref["ld_r"], rel=1e-10, abs=1e-6)
    assert fit.log_evidence == pytest.approx(ref["log_e"], rel=1e-10, abs=1e-6)
    np.testing.assert_allclose(
        terms.reconstruction, ref["s"], rtol=1e-6, atol=1e-9 * np.abs(ref["s"]).max()
    )


def test_regularization_term_is_the_sum_of_squared_differences():
    dataset = small_dataset()
    fit = FitPixelised(
        dataset, lens_tracer(), Pixelization(Rectangular((6, 6)), Constant(2.0)), "numpy"
    )
    s = fit.reconstruction
    grid = s.reshape(6, 6)
    gradient = np.sum(np.diff(grid, axis=0) ** 2) + np.sum(np.diff(grid, axis=1) ** 2)
    assert fit.terms.regularization_term == pytest.approx(
        2.0 * gradient + EPS * np.sum(s * s), rel=1e-12
    )


def _relocate_loop(points, border):
    origin = border.mean(axis=0)
    rb = np.linalg.norm(border - origin, axis=1)
    out = points.copy()
    for k, p in enumerate(points):
        r = np.linalg.norm(p - origin)
        if r > rb.min():
            nearest = np.argmin(np.sum((border - p) ** 2, axis=1))
            if r > rb[nearest]:
                out[k] = origin + (p - origin) * rb[nearest] / r
    return out


def _smooth_loop(points, border, k=4):
    """The smooth rule as the module states it: the radii of the k nearest border points,
    weighted 1 - d^2 / h^2 with h the distance to the (k + 1)-th."""
    origin = border.mean(axis=0)
    rb = np.linalg.norm(border - origin, axis=1)
    out = points.copy()
    for j, p in enumerate(points):
        d2 = np.sum((border - p) ** 2, axis=1)
        order = np.argsort(d2, kind="stable")[: k + 1]
        w = 1.0 - d2[order] / d2[order[-1]]
        radius = np.sum(w * rb[order]) / np.sum(w)
        r = np.linalg.norm(p - origin)
        if r > radius:
            out[j] = origin + (p - origin) * radius / r
    return out


RULES = {"nearest": (_relocate_loop, "relocate_loop"), "smooth": (_smooth_loop, None)}


def _compiled_relocation(rule, points, border):
    from twinlens.inversion import loops

    ox, oy = np.empty(len(points)), np.empty(len(points))
    columns = (points[:, 0].copy(), points[:, 1].copy(), border[:, 0].copy(), border[:, 1].copy())
    if rule == "nearest":
        loops.compiled().relocate_loop(*columns, ox, oy)
    else:
        m = min(NEIGHBOURS + 1, len(border))
        loops.compiled().relocate_smooth_loop(*columns, m, ox, oy)
    return np.column_stack([ox, oy])


@pytest.mark.parametrize("rule", list(RULES))
def test_border_and_relocation(rule):
    from twinlens.grids import Grid2D

    annulus = Grid2D.uniform(20, 0.1).annular_mask(0.3, 0.8).used
    edge = border_mask(annulus)
    assert edge.any()
    ys, xs = np.nonzero(edge)
    r = np.hypot(xs - 9.5, ys - 9.5) * 0.1
    assert r.min() > 0.6  # the outer ring only, not the hole's edge
    rng = np.random.default_rng(4)
    angle = np.linspace(0, 2 * np.pi, 60, endpoint=False)
    border = np.column_stack([np.cos(angle) * (1 + 0.2 * np.sin(3 * angle)), np.sin(angle)]) + 0.1
    points = rng.normal(0, 0.9, (3000, 2))
    reference = RULES[rule][0]
    ref = reference(points, border)
    # the smooth rule sums five weights, in an order of its own per backend: a few roundings
    atol = 1e-14 if rule == "nearest" else 1e-15 * 8
    np.testing.assert_allclose(relocate(points, border, np, rule), ref, rtol=0, atol=atol)
    np.testing.assert_allclose(_compiled_relocation(rule, points, border), ref, rtol=0, atol=atol)
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    np.testing.assert_allclose(
        relocate(jnp.asarray(points), jnp.asarray(border), jnp, rule), ref, atol=atol
    )
    moved = np.any(ref != points, axis=1)
    assert 0 < moved.sum() < len(points)
    # under vmap (its batching rule loops over the members) and grad, member by member
    jax = jax_runtime.load()
    shifted = border * 1.1
    batched = jax.vmap(lambda p, b: relocate(p, b, jnp, rule))(
        jnp.stack([points, points]), jnp.stack([border, shifted])
    )
    np.testing.assert_allclose(batched[0], ref, atol=atol)
    np.testing.assert_allclose(batched[1], reference(points, shifted), atol=atol)
    one = jax.vmap(lambda b: relocate(jnp.asarray(points), b, jnp, rule))(jnp.stack([border]))
    np.testing.assert_allclose(one[0], ref, atol=atol)

    def total(scale):
        moved = jax.vmap(lambda s: relocate(jnp.asarray(points), border * s, jnp, rule))(scale)
        return jnp.sum(moved)

    # moved points sit on the scaled border radius: d/ds of the sum is finite and nonzero
    grad = jax.grad(total)(jnp.asarray([1.0, 1.1]))
    assert np.all(np.isfinite(grad)) and np.all(grad != 0)


def test_relocation_breaks_a_tie_for_the_nearest_border_point_alike_on_every_backend():
    from twinlens.backend import jax_runtime

    # (1.5, 1.5) is sqrt(2.5) from border points 0 and 1 (exactly, in binary): the first wins,
    # as numpy's argmin in the loop; their radii (2 and 1) move the point to different places
    border = np.array([[2.0, 0.0], [0.0, 1.0], [-2.0, 0.0], [0.0, -1.0]])
    points = np.array([[1.5, 1.5], [0.5, 0.2]])
    ref = _relocate_loop(points, border)
    np.testing.assert_allclose(np.hypot(*ref[0]), 2.0, rtol=1e-15)
    np.testing.assert_array_equal(relocate(points, border, np, "nearest"), ref)
    jnp = jax_runtime.load().numpy
    np.testing.assert_array_equal(
        relocate(jnp.asarray(points), jnp.asarray(border), jnp, "nearest"), ref
    )
    np.testing.assert_array_equal(_compiled_relocation("nearest", points, border), ref)


def test_smooth_relocation_is_continuous_where_the_nearest_border_point_changes():
    """A point moving past the place where two border points of different radii are equally
    near: the nearest rule's relocated point jumps by their radii's difference, the smooth
    rule's moves by about the point's own step, on every backend."""
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    angle = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    radius = 1.0 + 0.05 * (np.arange(40) % 2)  # a staircase-like border: radii alternate
    border = np.column_stack([np.cos(angle), np.sin(angle)]) * radius[:, None]
    # points on a circle of radius 1.1 from border point 0's direction to point 1's: the
    # nearest border point changes from 0 to 1 on the way
    t = np.linspace(0.0, 2 * np.pi / 40, 2001)
    points = 1.1 * np.column_stack([np.cos(t), np.sin(t)])
    step = np.hypot(*np.diff(points, axis=0).T).max()
    nearest = relocate(points, border, np, "nearest")
    assert np.hypot(*np.diff(nearest, axis=0).T).max() > 0.04  # the jump
    for moved in (
        relocate(points, border, np, "smooth"),
        _compiled_relocation("smooth", points, border),
        np.asarray(relocate(jnp.asarray(points), jnp.asarray(border), jnp, "smooth")),
    ):
        np.testing.assert_allclose(moved, _smooth_loop(points, border), rtol=0, atol=1e-14)
        assert np.hypot(*np.diff(moved, axis=0).T).max() < 2 * step


def test_relocation_rule_is_checked():
    with pytest.raises(ValueError, match="relocation rule"):
        relocate(np.zeros((2, 2)), np.ones((3, 2)), np, "closest")
    with pytest.raises(ValueError, match=r"Pixelization\.relocation"):
        Pixelization(Rectangular((5, 5)), Constant(1.0), relocation="closest")


@pytest.mark.parametrize("n", [5, 255, 1001])
def test_gram_from_its_upper_blocks_is_the_full_product(n):
    from twinlens.backend import jax_runtime
    from twinlens.inversion.solve import GRAM_MIN_BLOCK, gram

    jnp = jax_runtime.load().numpy
    rows = np.random.default_rng(n).normal(size=(n, 37))
    ref = np.einsum("ik,jk->ij", rows, rows)  # a second route to the same sums
    for blocks in (1, 3, 8):
        got = np.asarray(gram(jnp.asarray(rows), jnp, blocks))
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
        if blocks > 1 and n >= 2 * GRAM_MIN_BLOCK:  # split: symmetric by construction
            np.testing.assert_array_equal(got, got.T)


@pytest.mark.parametrize("curvature", [False, True], ids=["constant", "curvature"])
@pytest.mark.parametrize("shape", [(3, 4), (4, 5)])
@pytest.mark.parametrize("lam", [1e-3, 0.7, 1e4])
def test_lattice_log_det_is_the_exact_determinant(shape, lam, curvature):
    """ln det(lambda H + EPSILON I) of constant and curvature regularisation on a rectangular
    mesh, from H's eigenvalues, against mpmath's determinant of the matrix built exactly (H's
    integer entries; a float64 matrix would already have lost EPSILON's digits on the
    diagonal)."""
    import mpmath

    from twinlens.inversion.meshes import _lattice
    from twinlens.inversion.regularization import (
        EPSILON,
        curvature_matrix,
        gradient_matrix,
        lattice_curvature_eigenvalues,
        lattice_laplacian_eigenvalues,
        lattice_log_det,
    )

    n = shape[0] * shape[1]
    edges, stencils = _lattice(shape)
    if curvature:
        h, mu = curvature_matrix(n, stencils), lattice_curvature_eigenvalues(shape)
    else:
        h, mu = gradient_matrix(n, edges, np.ones(len(edges))), lattice_laplacian_eigenvalues(shape)
    # the eigenvalues, against a second algorithm on the integer matrix
    np.testing.assert_allclose(np.sort(mu), np.linalg.eigvalsh(h), rtol=0, atol=1e-12)
    with mpmath.workdps(60):
        exact = mpmath.matrix(n, n)
        for i in range(n):
            for j in range(n):
                exact[i, j] = mpmath.mpf(lam) * int(h[i, j]) + (
                    mpmath.mpf(EPSILON) if i == j else 0
                )
        reference = float(mpmath.log(mpmath.det(exact)))
    got = lattice_log_det(shape, lam, curvature=curvature)
    assert got == pytest.approx(reference, rel=1e-14, abs=1e-13)


def test_nearest_index_does_not_depend_on_the_minimum_being_recomputed_bit_for_bit():
    """XLA may compute the distances again to compare them with their minimum, with other
    rounding: rows where no distance equals the minimum take the lowest index within a few
    roundings of it, not the last index (which moved such a point by the wrong border
    point)."""
    from twinlens.backend import jax_runtime
    from twinlens.inversion.border import lowest_index_at_min

    jnp = jax_runtime.load().numpy
    d2 = np.array([[4.0, 1.0, 3.0, 1.0], [2.0, 5.0, 0.5, 9.0], [np.nan] * 4])
    index = jnp.arange(4)
    exact = np.min(d2, axis=1, keepdims=True)  # NaN for the NaN row
    got = lowest_index_at_min(jnp.asarray(d2), jnp.asarray(exact), index)
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 3])  # ties: the lowest; NaN: last
    off = exact * (1.0 - 2.0**-52)  # a minimum one rounding below every distance of rows 0, 1
    got = lowest_index_at_min(jnp.asarray(d2), jnp.asarray(off), index)
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 3])

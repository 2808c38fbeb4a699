"""Interpolation weights of the pixelised meshes, against exact properties: barycentric weights
sum to 1 and reproduce linear functions, bilinear weights reproduce bilinear functions, the
hull-edge extension is continuous, and JAX derivatives stay finite on vertices and edges."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial import Delaunay as ScipyDelaunay

from twinlens.inversion.interpolation import (
    barycentric_point,
    delaunay_weights,
    lattice_weights,
)
from twinlens.inversion.triangulation import topology

coords = st.floats(-3.0, 3.0, allow_nan=False)


def _area2(a, b, c):
    return (b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1])


@given(
    st.lists(coords, min_size=6, max_size=6), coords, coords, st.sampled_from(["free", "a", "ab"])
)
def test_barycentric_reproduces_linear_functions(tri, x, y, where):
    a, b, c = np.array(tri).reshape(3, 2)
    if abs(_area2(a, b, c)) < 1e-3:
        return  # degenerate triangles are refused before weights are taken
    if where == "a":  # exactly on a vertex
        x, y = a
    elif where == "ab":  # exactly on an edge's midpoint
        x, y = (a + b) / 2
    la, lb, lc = barycentric_point(x, y, *a, *b, *c)
    assert la + lb + lc == pytest.approx(1.0, abs=1e-12)
    # any linear function f = p + q x + r y, at a random-looking set of coefficients
    for p, q, r in ((0.3, -1.7, 2.2), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)):

        def f(v, p=p, q=q, r=r):
            return p + q * v[0] + r * v[1]

        scale = 1.0 + abs(p) + 3.0 * (abs(q) + abs(r))
        assert la * f(a) + lb * f(b) + lc * f(c) == pytest.approx(
            f((x, y)), abs=1e-11 * scale * (1.0 + 10.0 / abs(_area2(a, b, c)))
        )
    if where == "a":
        assert (la, lb, lc) == pytest.approx((1.0, 0.0, 0.0), abs=1e-12)


def test_bilinear_reproduces_bilinear_functions():
    rng = np.random.default_rng(3)
    shape = (7, 9)
    extent = (-1.2, 0.8, -0.5, 1.5)
    ny, nx = shape
    vx = np.linspace(extent[0], extent[1], nx)
    vy = np.linspace(extent[2], extent[3], ny)
    xx, yy = np.meshgrid(vx, vy)  # row i is y, column j is x: pixel i * nx + j

    def f(x, y):
        return 0.4 - 1.3 * x + 2.1 * y + 0.7 * x * y

    values = f(xx, yy).reshape(-1)
    pts = np.column_stack([rng.uniform(-1.2, 0.8, 500), rng.uniform(-0.5, 1.5, 500)])
    # and points exactly on vertices, on cell edges, and on the extent's corners
    pts = np.vstack([pts, [[vx[3], vy[2]], [vx[0], vy[0]], [vx[-1], vy[-1]], [0.1, vy[4]]]])
    idx, w = lattice_weights(pts, vx, vy)
    assert np.all(w >= -1e-15)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose((w * values[idx]).sum(axis=1), f(pts[:, 0], pts[:, 1]), atol=1e-13)


def test_delaunay_weights_reproduce_linear_functions_and_extend_continuously():
    rng = np.random.default_rng(5)
    vertices = rng.uniform(-1, 1, (60, 2))
    pts = rng.uniform(-1.3, 1.3, (2000, 2))
    pts = np.vstack([pts, vertices[:5]])  # exactly on vertices
    top = topology(vertices, pts)
    w = delaunay_weights(pts, vertices, top.corners, top.inside)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(w >= -1e-12)

    def f(v):
        return 0.5 + 1.5 * v[..., 0] - 0.8 * v[..., 1]

    values = f(vertices)
    est = (w * values[top.corners]).sum(axis=1)
    inside = top.inside
    np.testing.assert_allclose(est[inside], f(pts[inside]), atol=1e-12)
    # a different algorithm (scipy's own barycentric transform) agrees inside the hull
    tri = ScipyDelaunay(vertices)
    simplex = tri.find_simplex(pts[inside])
    trans = tri.transform[simplex]
    bary = np.einsum("nij,nj->ni", trans[:, :2], pts[inside] - trans[:, 2])
    bary = np.column_stack([bary, 1 - bary.sum(axis=1)])
    ref = (bary * values[tri.simplices[simplex]]).sum(axis=1)
    np.testing.assert_allclose(est[inside], ref, atol=1e-12)
    # outside the hull: the value of the nearest hull point, linear along the hull edge, so a
    # point just outside an edge takes (almost) the value just inside it
    hull = tri.convex_hull[0]
    mid = vertices[hull].mean(axis=0)
    normal = np.array(
        [-(vertices[hull[1]] - vertices[hull[0]])[1], (vertices[hull[1]] - vertices[hull[0]])[0]]
    )
    normal /= np.linalg.norm(normal)
    if tri.find_simplex(mid + 1e-3 * normal) >= 0:
        normal = -normal
    probe = np.array([mid - 1e-9 * normal, mid + 1e-9 * normal, mid + 0.2 * normal])
    tp = topology(vertices, probe)
    assert tp.inside.tolist() == [True, False, False]
    wp = delaunay_weights(probe, vertices, tp.corners, tp.inside)
    vp = (wp * values[tp.corners]).sum(axis=1)
    assert vp[0] == pytest.approx(vp[1], abs=1e-8)
    assert vp[2] == pytest.approx(f(mid), abs=1e-12)  # projected onto the edge's midpoint


def test_jax_weights_have_finite_derivatives_on_vertices_and_edges():
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    jnp = jax.numpy
    vertices = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    pts = jnp.array([[0.0, 0.0], [0.5, 0.0], [0.5, 0.5], [1.0, 1.0], [2.0, 2.0], [0.25, 0.25]])
    top = topology(np.asarray(vertices), np.asarray(pts))

    def total(v, p):
        w = delaunay_weights(p, v, jnp.asarray(top.corners), jnp.asarray(top.inside), jnp)
        values = jnp.array([0.3, -1.0, 2.0, 0.7])
        return jnp.sum(w * values[jnp.asarray(top.corners)] ** 2)

    gv, gp = jax.grad(total, argnums=(0, 1))(vertices, pts)
    assert np.all(np.isfinite(gv)) and np.all(np.isfinite(gp))

    def bil(p):
        edges = jnp.linspace(0.0, 1.0, 3)
        idx, w = lattice_weights(p, edges, edges, jnp)
        return jnp.sum(w * jnp.arange(9.0)[idx] ** 2)

    grid_pts = jnp.array([[0.0, 0.0], [0.5, 0.5], [1.0, 1.0], [0.5, 0.25]])
    assert np.all(np.isfinite(jax.grad(bil)(grid_pts)))

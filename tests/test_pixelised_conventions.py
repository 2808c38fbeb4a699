"""autoarray's conventions as options (twinlens.inversion.conventions): the vertices' placement,
the ellipse relocation and the nearest vertex outside the hull, each checked against an
independent statement of its rule, across numpy, numba and JAX, and in a fit configuration.
(autoarray's own numbers: tests/test_pixelised_autoarray.py, ``tox -e peers``.)"""

import tomllib

import numpy as np
import pytest
from pixelised_cases import lens_tracer, small_dataset

from twinlens.grids import Grid2D
from twinlens.inversion import (
    Constant,
    Delaunay,
    FitPixelised,
    Pixelization,
    Rectangular,
    log_evidence,
)
from twinlens.inversion.border import border_mask
from twinlens.inversion.conventions import (
    cell_centre_points,
    ellipse_from_border,
    relocate_onto_ellipse,
    straight_line_border,
)
from twinlens.inversion.interpolation import delaunay_weights
from twinlens.inversion.triangulation import topology


def _jax():
    from twinlens.backend import jax_runtime

    return jax_runtime.load()


AUTOARRAY = {"placement": "cell_centres", "outside_hull": "nearest_vertex"}
OPTIONS = {
    "placement": (Delaunay((10, 10), placement="cell_centres"), "smooth"),
    "outside-hull": (Delaunay((10, 10), outside_hull="nearest_vertex"), "smooth"),
    "ellipse-delaunay": (Delaunay((10, 10)), "ellipse"),
    "ellipse-rectangular": (Rectangular((8, 9)), "ellipse"),
    "all-three": (Delaunay((10, 10), **AUTOARRAY), "ellipse"),
}


# -- the rules, stated independently ---------------------------------------------------------


def test_cell_centres_are_the_cells_of_the_mask_box():
    # an 8 x 10 image of 0.5" pixels (x from -2.25 to 2.25, y from -1.75 to 1.75), masked to
    # an off-centre box with its outer edges at x -0.5 to 2.0 and y -1.5 to 0.5, less the
    # pixel centred on (0.75, -0.25)
    used = np.zeros((8, 10), dtype=bool)
    used[1:5, 4:9] = True
    used[3, 6] = False
    grid = Grid2D((8, 10), 0.5, mask=used)
    points = cell_centre_points(grid, (2, 5))
    # 5 cells of 0.5" across: x = -0.25, 0.25, ..., 1.75; 2 of 1" up: y = 0 (the top row,
    # first) and -1, both on pixel edges, where a point belongs to the pixel below it
    # (autoarray's rounding): (0.75, 0) to the removed pixel
    expected = [(x, 0.0) for x in (-0.25, 0.25, 1.25, 1.75)]
    expected += [(x, -1.0) for x in (-0.25, 0.25, 0.75, 1.25, 1.75)]
    np.testing.assert_allclose(points, np.array(expected), rtol=0, atol=1e-15)
    # ours: k / 6 of the box's 2.5" across, k / 3 of its 2" up
    inset = Delaunay((2, 5)).image_plane_vertices(grid)
    np.testing.assert_allclose(np.unique(inset[:, 0]), -0.5 + 2.5 * np.arange(1, 6) / 6)
    np.testing.assert_allclose(np.unique(inset[:, 1]), -1.5 + 2.0 * np.arange(1, 3) / 3)


def test_straight_line_border_is_the_outer_edge_of_a_disc_and_skips_an_annulus_hole():
    grid = Grid2D.uniform((24, 24), 0.12).circular_mask(1.3)
    np.testing.assert_array_equal(straight_line_border(grid.used), border_mask(grid.used))
    ring = Grid2D.uniform((24, 24), 0.12).annular_mask(0.5, 1.3)
    edge = straight_line_border(ring.used)
    r = np.hypot(ring.x, ring.y)
    assert edge.any() and not edge[r < 0.9].any()
    # a notch: a pixel at the bottom of a one-pixel slot reaches the edge up the slot
    used = np.ones((5, 5), dtype=bool)
    used[3:, 2] = False
    edge = straight_line_border(used)
    assert edge[2, 2] and not edge[2, 1] and edge[0, :].all()


def test_ellipse_fit_recovers_a_rotated_ellipse_and_relocates_onto_it():
    t = np.linspace(0.0, 2.0 * np.pi, 200, endpoint=False)
    a, b, phi, x0, y0 = 1.3, 0.7, 0.4, 0.2, -0.1
    c, s = np.cos(phi), np.sin(phi)
    border = np.stack(
        [x0 + a * c * np.cos(t) - b * s * np.sin(t), y0 + a * s * np.cos(t) + b * c * np.sin(t)],
        axis=-1,
    )
    fx, fy, fa, fb, fc, fs = ellipse_from_border(border)
    assert (fx, fy) == pytest.approx((x0, y0), abs=1e-12)
    assert (fa, fb) == pytest.approx((a, b), abs=1e-4)  # the largest extent of 200 samples
    assert abs(fc * c + fs * s) == pytest.approx(1.0, abs=1e-12)  # the same axis (+-)
    rng = np.random.default_rng(3)
    points = rng.uniform(-3.0, 3.0, (500, 2))
    moved = relocate_onto_ellipse(points, (fx, fy, fa, fb, fc, fs))
    dx, dy = points[:, 0] - fx, points[:, 1] - fy
    q = ((fc * dx + fs * dy) / fa) ** 2 + ((-fs * dx + fc * dy) / fb) ** 2
    np.testing.assert_array_equal(moved[q <= 1], points[q <= 1])
    mx, my = moved[q > 1, 0] - fx, moved[q > 1, 1] - fy
    q_moved = ((fc * mx + fs * my) / fa) ** 2 + ((-fs * mx + fc * my) / fb) ** 2
    np.testing.assert_allclose(q_moved, 1.0, atol=1e-12)
    # moved towards the centre: the same direction, a smaller radius
    np.testing.assert_allclose(np.arctan2(my, mx), np.arctan2(dy[q > 1], dx[q > 1]), atol=1e-12)


def test_nearest_vertex_outside_the_hull_reads_one_vertex():
    rng = np.random.default_rng(5)
    vertices = rng.uniform(-1.0, 1.0, (30, 2))
    points = rng.uniform(-1.6, 1.6, (400, 2))
    top = topology(vertices, points, outside_hull="nearest_vertex")
    edge = topology(vertices, points)
    np.testing.assert_array_equal(top.inside, edge.inside)
    assert (~top.inside).sum() > 50
    out = ~top.inside
    d2 = np.sum((points[out, None, :] - vertices[None, :, :]) ** 2, axis=-1)
    np.testing.assert_array_equal(top.corners[out, 0], np.argmin(d2, axis=1))
    assert np.all(top.corners[out] == top.corners[out, :1])
    np.testing.assert_array_equal(top.corners[top.inside], edge.corners[edge.inside])
    w = delaunay_weights(points, vertices, top.corners, top.inside)
    np.testing.assert_array_equal(w[out], np.tile([1.0, 0.0, 0.0], (out.sum(), 1)))


# -- the options in an evaluation ------------------------------------------------------------


@pytest.mark.parametrize("name", list(OPTIONS))
def test_options_agree_across_backends_and_move_the_evidence(name):
    mesh, relocation = OPTIONS[name]
    dataset = small_dataset()
    tracer = lens_tracer(einstein_radius=0.97, shear=(0.02, 0.01))
    pix = Pixelization(mesh, Constant(1.5), relocation=relocation)
    ref = FitPixelised(dataset, tracer, pix, "numpy")
    for backend in ("numba", "jax"):
        fit = FitPixelised(dataset, tracer, pix, backend)
        # 1e-10 relative, as for the defaults (tests/test_pixelised_backends.py); measured
        # ~1e-15: the same arithmetic
        assert float(fit.log_evidence) == pytest.approx(ref.log_evidence, rel=1e-10)
        assert float(fit.chi_squared) == pytest.approx(ref.chi_squared, rel=1e-10)
        np.testing.assert_allclose(
            np.asarray(fit.reconstruction), ref.reconstruction, rtol=1e-7, atol=1e-10
        )
        np.testing.assert_allclose(
            np.asarray(fit.source_plane_points), ref.source_plane_points, rtol=0, atol=1e-12
        )
    default = Rectangular((8, 9)) if isinstance(mesh, Rectangular) else Delaunay((10, 10))
    base = FitPixelised(dataset, tracer, Pixelization(default, Constant(1.5)), "numpy")
    # the option takes effect, far beyond the backends' agreement (measured 1.2 to 281)
    assert abs(ref.log_evidence - base.log_evidence) > 1e-4 * abs(base.log_evidence)


@pytest.mark.parametrize(
    "mesh", [Delaunay((10, 10)), Rectangular((8, 9))], ids=["delaunay", "rectangular"]
)
def test_jax_gradients_with_the_ellipse_match_finite_differences(mesh):
    jax = _jax()
    dataset = small_dataset()
    theta0, lam0 = 1.01, 1.3

    def f(theta_e, lam, backend="jax"):
        pix = Pixelization(mesh, Constant(lam), relocation="ellipse")
        return log_evidence(lens_tracer(theta_e, (0.02, 0.0)), dataset, pix, backend)

    g_theta, g_lam = jax.grad(f, argnums=(0, 1))(theta0, lam0)
    h = 1e-3 * lam0
    fd_lam = (
        -f(theta0, lam0 + 2 * h, "numpy")
        + 8 * f(theta0, lam0 + h, "numpy")
        - 8 * f(theta0, lam0 - h, "numpy")
        + f(theta0, lam0 - 2 * h, "numpy")
    ) / (12 * h)
    assert float(g_lam) == pytest.approx(fd_lam, rel=1e-4, abs=1e-4)
    # piecewise smooth in the lens (the ellipse's extremal border points, the triangulation):
    # a small step that stays on one piece
    h = 1e-6
    fd_theta = (f(theta0 + h, lam0, "numpy") - f(theta0 - h, lam0, "numpy")) / (2 * h)
    assert float(g_theta) == pytest.approx(fd_theta, rel=1e-5)


def test_jax_gradient_of_the_ellipse_is_finite_on_a_round_border():
    """A border with no principal axis (equal spreads, no correlation: the fit's angle is
    arbitrary) still gives a finite derivative, the exact one."""
    jax = _jax()
    jnp = jax.numpy
    # spreads equal exactly, at every scale
    border = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    points = jnp.asarray([[2.0, 0.3], [0.1, 0.2], [-1.5, -1.5]])

    def f(scale):
        ellipse = ellipse_from_border(scale * jnp.asarray(border), jnp)
        return jnp.sum(relocate_onto_ellipse(points * scale, ellipse, jnp) ** 2)

    g = float(jax.grad(f)(1.0))
    # everything scales with the border: f(s) = s^2 f(1)
    assert g == pytest.approx(2.0 * float(f(1.0)), rel=1e-12)


def test_jax_vmap_with_all_three_matches_a_loop():
    jax = _jax()
    jnp = jax.numpy
    dataset = small_dataset()
    mesh = Delaunay((10, 10), **AUTOARRAY)

    def f(theta_e, lam, backend="jax"):
        pix = Pixelization(mesh, Constant(lam), relocation="ellipse")
        return log_evidence(lens_tracer(theta_e), dataset, pix, backend)

    thetas, lams = np.array([0.95, 1.0, 1.04]), np.array([0.3, 1.0, 4.0])
    batched = jax.vmap(f)(jnp.asarray(thetas), jnp.asarray(lams))
    loop = [f(t, lam, "numpy") for t, lam in zip(thetas, lams, strict=True)]
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-10)


# -- construction and configuration ----------------------------------------------------------


def test_bad_options_are_refused_with_their_names():
    with pytest.raises(ValueError, match=r"Delaunay.placement must be one of 'inset', 'cell_"):
        Delaunay((5, 5), placement="centres")
    with pytest.raises(ValueError, match=r"Delaunay.outside_hull must be one of 'hull_edge'"):
        Delaunay((5, 5), outside_hull=None)
    with pytest.raises(ValueError, match=r"relocation must be one of .*'nearest', 'ellipse'"):
        Pixelization(Delaunay((5, 5)), Constant(1.0), relocation="radial")
    vertices = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"does not apply to image_vertices"):
        Delaunay(image_vertices=vertices, placement="cell_centres")
    # the defaults are ours, and the options are part of the value identity
    assert Delaunay((5, 5)) == Delaunay((5, 5), placement="inset", outside_hull="hull_edge")
    assert Delaunay((5, 5)) != Delaunay((5, 5), outside_hull="nearest_vertex")
    pix = Pixelization(Delaunay((5, 5)), Constant(1.0))
    assert pix == Pixelization(Delaunay((5, 5)), Constant(1.0), relocation="smooth")
    assert pix != Pixelization(Delaunay((5, 5)), Constant(1.0), relocation="ellipse")


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
relocation = "ellipse"
mesh = {type = "Delaunay", shape = [12, 12], placement = "cell_centres", \
outside_hull = "nearest_vertex"}
regularization = {type = "Constant", coefficient = 3.0}
"""


def _parse(text):
    from twinlens.job.config import parse_config

    return parse_config(tomllib.loads(text), read_data=False)


def test_config_reads_the_options_and_names_a_bad_one():
    from twinlens.job.config import ConfigError

    pix = _parse(TOML).model.tracer.sources[0].pixelization
    assert pix.relocation == "ellipse"
    assert pix.mesh == Delaunay((12, 12), **AUTOARRAY)
    for old, new, message in (
        (
            '"ellipse"',
            '"elipse"',
            r'source\[0\]\.light\[0\]\.relocation = "elipse": expected one of '
            r"'smooth', 'nearest', 'ellipse' \(did you mean \"ellipse\"\?\)",
        ),
        (
            'placement = "cell_centres"',
            'placement = "centres"',
            r"mesh\.placement = \"centres\": expected one of 'inset', 'cell_centres'",
        ),
        (
            'outside_hull = "nearest_vertex"',
            "outside_hull = 1",
            r"mesh\.outside_hull = 1: expected one of 'hull_edge', 'nearest_vertex'",
        ),
        (
            'type = "Delaunay", shape = [12, 12]',
            'type = "Rectangular", shape = [12, 12]',
            r"mesh\.placement: a Rectangular mesh has no setting 'placement'",
        ),
        (
            "shape = [12, 12]",
            'n_vertices = 50, brightness = "data"',
            r"mesh\.placement: places an overlay grid's points",
        ),
    ):
        bad = TOML.replace(old, new)
        assert bad != TOML
        with pytest.raises(ConfigError, match=message):
            _parse(bad)

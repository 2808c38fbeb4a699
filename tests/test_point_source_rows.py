"""The point-source term of a batch of rows on numba (a chunk of rows as one batch of lenses,
solved together) against the same rows one by one: the same images, the same -inf for rows out
of range or whose images are not found, the same chi^2; across chunk boundaries. Also the
pieces: the image solver on a batch of lenses, and the power law's batched kernels."""

import numpy as np
import pytest

from twinlens import Galaxy, Tracer
from twinlens.backend.concrete import batched
from twinlens.kernels import power_law
from twinlens.lensing import lens_equation_loops as loops
from twinlens.lensing.lens_equation import ImageSolver
from twinlens.lensing.lens_equation_steps import _lens_deflections
from twinlens.likelihood import joint as joint_module
from twinlens.likelihood.batched import batch_of_models
from twinlens.likelihood.joint import JointLikelihood
from twinlens.likelihood.point_source import PointSource, PointSourceData, PointSourceLikelihood
from twinlens.mass import ExternalShear, PowerLaw

SOLVER = ImageSolver(window=2.5, cells=61)
#: the rows' chi^2 as row by row: the same kernels on the same points, so equal to rounding
#: (in practice bit for bit); 1e-12 leaves room for a compiler's vectorised loop
RTOL = 1e-12
LENS_PATHS = (
    "lenses[0].mass[0].ell_comps[0]",
    "lenses[0].mass[0].ell_comps[1]",
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[0].slope",
    "lenses[0].mass[1].gamma_1",
    "lenses[0].mass[1].gamma_2",
)
POINT_PATHS = ("point_source.centre[0]", "point_source.centre[1]")


def _lens(e1: float = 0.1, e2: float = 0.05, slope: float = 2.1) -> Tracer:
    epl = PowerLaw((0.01, -0.02), (e1, e2), 1.2, slope)
    return Tracer(Galaxy(mass=(epl, ExternalShear(0.03, -0.02))))


def _data(lens: Tracer, beta: tuple, n_images: int, fluxes: bool = False, **terms: object):
    positions, mu, _ = ImageSolver(window=2.5, cells=201).solve(lens, beta, "numpy").found()
    assert len(positions) == n_images
    rng = np.random.default_rng(3)
    observed = positions + rng.normal(0.0, 0.003, positions.shape)
    if fluxes:
        terms = {**terms, "fluxes": 1.5 * np.abs(mu), "flux_sigma": 0.1}
    return PointSourceData(observed, 0.003, **terms)


def _quad(kind: str = "image") -> JointLikelihood:
    lens = _lens()
    data = _data(lens, (0.05, 0.03), 4, delays=[10.0, 3.0, -1.0], delay_sigma=[0.5, 0.4, 0.3])
    point = PointSource((0.051, 0.031), 1.4, 3100.0)
    like = PointSourceLikelihood(data, kind, SOLVER)
    free = (*LENS_PATHS, *POINT_PATHS, "point_source.time_delay_distance")
    return JointLikelihood(None, lens, point, like, free)


def _double() -> JointLikelihood:
    lens = _lens(0.05, -0.03, 2.0)
    data = _data(lens, (0.3, -0.2), 2, fluxes=True)
    like = PointSourceLikelihood(data, "image", SOLVER)
    point = PointSource((0.3, -0.2), 1.5, 3000.0)
    free = (*LENS_PATHS[2:4], *POINT_PATHS, "point_source.flux")
    return JointLikelihood(None, lens, point, like, free)


def _rows(joint: JointLikelihood, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    start = joint.reference
    return start * (1.0 + 1e-3 * rng.normal(size=(n, start.size)))


def _one_by_one(joint: JointLikelihood, rows: np.ndarray) -> np.ndarray:
    """Each row on its own: its tracer and point source as plain numbers, -inf when the
    parameters are out of range."""
    out = []
    for v in rows:
        try:
            tracer, point = joint.instances(v)
        except ValueError:
            out.append(-np.inf)
            continue
        like = joint.point_source_likelihood
        out.append(float(like.log_likelihood(tracer, point, "numba")))
    return np.array(out)


def _check(joint: JointLikelihood, rows: np.ndarray) -> np.ndarray:
    got = joint.batch(rows, "numba")
    want = _one_by_one(joint, rows)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=RTOL)
    assert np.all(got[~np.isfinite(want)] == -np.inf)
    return got


def _set(rows: np.ndarray, joint: JointLikelihood, i: int, path: str, value: float) -> None:
    rows[i, joint.free.index(path)] = value


@pytest.mark.parametrize("chunk", [64, 5, 3])
def test_a_quad_rows_out_of_range_and_rows_without_the_images(monkeypatch, chunk):
    # eleven rows: in chunks of 5 the last is one row; of 3, -inf rows fall in every chunk
    monkeypatch.setattr(joint_module, "_CHUNK_ROWS", chunk)
    joint = _quad()
    rows = _rows(joint, 11, 1)
    _set(rows, joint, 1, "lenses[0].mass[0].einstein_radius", -1.0)  # out of range
    _set(rows, joint, 4, "lenses[0].mass[0].ell_comps[0]", 1.2)  # |e| >= 1
    _set(rows, joint, 5, "point_source.time_delay_distance", -3.0)
    rows[6, 0] = np.nan
    _set(rows, joint, 7, "point_source.centre[0]", 0.9)  # far off the caustic: fewer images
    _set(rows, joint, 9, "point_source.centre[1]", -2.4)  # outside the window
    got = _check(joint, rows)
    bad = [1, 4, 5, 6, 7, 9]
    assert np.all(got[bad] == -np.inf)
    assert np.all(np.isfinite(np.delete(got, bad)))
    assert joint(rows[0], "numba") == got[0] and joint(rows[1], "numba") == -np.inf


def test_a_double_with_fluxes_and_a_source_that_makes_a_quad():
    joint = _double()
    rows = _rows(joint, 9, 2)
    _set(rows, joint, 2, "point_source.centre[0]", 0.05)  # still a double, far from the data
    _set(rows, joint, 3, "point_source.centre[0]", 0.01)  # behind the lens: four images
    _set(rows, joint, 3, "point_source.centre[1]", -0.02)
    _set(rows, joint, 5, "point_source.flux", -1.0)
    got = _check(joint, rows)
    assert np.all(got[[3, 5]] == -np.inf) and np.isfinite(got[2]) and got[2] < got[0]


def test_the_source_plane_term_and_rows_that_move_only_the_source():
    joint = _quad("source")
    _check(joint, _rows(joint, 5, 3))
    # only the point source free: one lens, a batch of sources
    lens_fixed = JointLikelihood(
        None, joint.model, joint.point_source, _quad().point_source_likelihood, POINT_PATHS
    )
    rows = _rows(lens_fixed, 6, 4)
    rows[2, 0] = 1.7
    got = _check(lens_fixed, rows)
    assert got[2] == -np.inf and np.isfinite(got[0])


def test_the_image_solver_on_a_batch_of_lenses_equals_lens_by_lens():
    joint = _quad()
    rows = _rows(joint, 6, 5)
    _set(rows, joint, 3, "point_source.centre[0]", 0.9)  # a double
    _, (tracer, point) = batch_of_models(joint._members, rows, joint.reference)
    sources = np.stack([np.ravel(point.centre[0]), np.ravel(point.centre[1])], axis=-1)
    for backend in ("numba", "numpy"):
        images = SOLVER.solve(tracer, sources, backend)
        assert images.positions.shape == (6, SOLVER.max_images, 2)
        for i, v in enumerate(rows):
            lens, source = joint.instances(v)
            one = SOLVER.solve(lens, np.array(source.centre), backend)
            for field, value in zip(images._fields, one, strict=True):
                np.testing.assert_array_equal(getattr(images, field)[i], value, err_msg=field)
        assert list(images.n_images) == [4, 4, 4, 2, 4, 4]
    with pytest.raises(ValueError, match="one per lens"):
        SOLVER.solve(tracer, np.zeros((4, 2)), "numba")


@pytest.mark.parametrize("cells", [61, 64, 9])
def test_the_blocks_boxes_of_a_batch_of_lenses_are_those_of_each_lens(cells):
    # over each block's vertices once, against every slot's three (blocks cut at the edge)
    solver = ImageSolver(window=2.5, cells=cells)
    joint = _quad()
    rows = _rows(joint, 3, 8)
    _, (tracer, _point) = batch_of_models(joint._members, rows, joint.reference)
    v = solver.vertices()
    ax, ay = _lens_deflections(tracer, v[:, 0], v[:, 1], "numba")
    mx, my = np.ascontiguousarray(v[:, 0] - ax), np.ascontiguousarray(v[:, 1] - ay)
    mx[1, 5] = np.nan  # never taken, as in the slots' pass
    boxes = np.empty((3, solver.triangles().shape[0], 4))
    loops.compiled().block_boxes_rows(mx, my, cells, 8, boxes)
    pad, safe, _ = solver._layout
    for i in range(3):
        tri, one = np.empty((*safe.shape[:2], 6)), np.empty((safe.shape[0], 4))
        loops.compiled().map_blocks(mx[i], my[i], safe, pad, tri, one)
        np.testing.assert_array_equal(boxes[i], one)


@pytest.mark.parametrize("shared", [True, False])
def test_the_power_laws_batched_kernels_equal_member_by_member(shared):
    # members with series of different lengths (round, mildly and very elliptical, slopes)
    e1 = np.array([0.0, 0.1, -0.6, 0.3, 0.05])
    e2 = np.array([0.0, 0.05, 0.3, -0.2, 0.0])
    slope = np.array([2.0, 2.1, 1.5, 2.6, 1.9])
    theta_e = np.array([1.2, 1.0, 0.7, 1.5, 2.0])
    cx, cy = np.array([0.0, 0.01, -0.1, 0.2, 0.0]), np.array([0.0, -0.02, 0.1, 0.0, 0.3])
    rng = np.random.default_rng(6)
    shape = (300,) if shared else (5, 300)
    x, y = rng.normal(size=shape), rng.normal(size=shape)
    x[..., 0], y[..., 0] = 0.0, 0.0  # the first member's centre
    params = (cx, cy, e1, e2, theta_e, slope)
    for kernel in (power_law.DEFLECTIONS, power_law.HESSIAN, power_law.POTENTIAL):
        out = kernel(x, y, *(batched(p) for p in params), backend="numba")
        out = out if isinstance(out, tuple) else (out,)
        for b in range(5):
            xb, yb = (x, y) if shared else (x[b], y[b])
            one = kernel(xb, yb, *(p[b] for p in params), backend="numba")
            for got, want in zip(out, one if isinstance(one, tuple) else (one,), strict=True):
                np.testing.assert_array_equal(got[b], want, err_msg=kernel.name)
    coef, n_terms = power_law.series_coefficient_rows(e1, e2, slope)
    for b in range(5):
        want = power_law.series_coefficients(e1[b], e2[b], slope[b])
        np.testing.assert_array_equal(coef[b, : n_terms[b]], want)
        assert not coef[b, n_terms[b] :].any()


@pytest.mark.parametrize("given", [None, "500"])
def test_openmp_spin_is_bounded_unless_set(given) -> None:
    """twinlens bounds libgomp's spin (GOMP_SPINCOUNT) before numba's threads start, and keeps
    a value the user set."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    if given is not None:
        env["GOMP_SPINCOUNT"] = given
    code = "import os, twinlens.kernels.compile; print(os.environ['GOMP_SPINCOUNT'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    from twinlens.backend.numba_runtime import SPIN_COUNT

    assert out.stdout.strip() == (SPIN_COUNT if given is None else given), out.stderr


def test_chunk_size_sets_the_rows_per_batch(monkeypatch):
    """``batch(..., chunk_size=n)`` scores the point-source term ``n`` rows at a time (the
    chunks seen by the batch builder), with the same numbers; a bad value is named."""
    joint = _quad()
    rows = _rows(joint, 7, 2)
    default = joint.batch(rows, "numba")
    seen: list[int] = []
    build = joint_module.batch_of_models

    def counting(members, chunk, reference):
        seen.append(len(chunk))
        return build(members, chunk, reference)

    monkeypatch.setattr(joint_module, "batch_of_models", counting)
    np.testing.assert_array_equal(joint.batch(rows, "numba", chunk_size=3), default)
    assert seen == [3, 3, 1]
    with pytest.raises(ValueError, match="chunk_size must be an integer >= 1"):
        joint.batch(rows, "numba", chunk_size=0)

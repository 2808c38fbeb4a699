"""The looped linear algebra of JAX programs: values, derivatives and batching against numpy and
JAX's own kernels, and the batched-LAPACK deadlock it exists to avoid."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

jax_runtime = pytest.importorskip("twinlens.backend.jax_runtime")
pytest.importorskip("jax")


def _jax():
    return jax_runtime.load()


def _system(p, jnp, k):
    """A symmetric positive definite ``a`` and a right-hand side, smooth in ``p``."""
    rng = np.random.default_rng(0)
    m = jnp.asarray(rng.normal(size=(7, 7)))
    c = jnp.asarray(rng.normal(size=(7, max(k, 1))))
    a = (m * p[0]) @ (m * p[1]).T + (1.0 + p[2]) * jnp.eye(7)
    b = c * p[1] + p[0]
    return a, (b[:, 0] if k == 1 else b[:, :k])


@pytest.mark.parametrize("k", [0, 1, 3])
def test_values_match_numpy(k):
    from twinlens.backend.jax_linalg import spd_log_det_solve

    jnp = _jax().numpy
    a, b = _system(jnp.array([1.1, 0.9, 0.3]), jnp, k)
    log_det, x, ok = spd_log_det_solve(a, b)
    assert bool(ok)
    np.testing.assert_allclose(float(log_det), np.linalg.slogdet(np.asarray(a))[1], rtol=1e-13)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(np.asarray(a), np.asarray(b)))


def _objectives(jax, k):
    from twinlens.backend.jax_linalg import spd_log_det_solve

    jnp = jax.numpy
    weights = jnp.arange(1.0, 7.0 * max(k, 1) + 1).reshape(7, -1)[:, :k] if k != 1 else 1.0

    def ours(p):
        a, b = _system(p, jnp, k)
        log_det, x, _ = spd_log_det_solve(a, b)
        return 0.7 * log_det + jnp.sum(weights * x * x)

    def native(p):
        a, b = _system(p, jnp, k)
        factor = jnp.linalg.cholesky(a)
        x = jax.scipy.linalg.cho_solve((factor, True), b)
        return 1.4 * jnp.sum(jnp.log(jnp.diag(factor))) + jnp.sum(weights * x * x)

    return ours, native


@pytest.mark.parametrize("k", [0, 1, 3])
def test_gradient_matches_jax_kernels_and_finite_differences(k):
    jax = _jax()
    jnp = jax.numpy
    ours, native = _objectives(jax, k)
    p = jnp.array([1.1, 0.9, 0.3])
    grad = np.asarray(jax.grad(ours)(p))
    np.testing.assert_allclose(grad, np.asarray(jax.grad(native)(p)), rtol=1e-11, atol=1e-12)
    h = 1e-6
    central = [(float(ours(p + h * e)) - float(ours(p - h * e))) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(grad, central, rtol=1e-6)


def test_vmap_of_value_and_gradient_matches_a_loop():
    jax = _jax()
    jnp = jax.numpy
    ours, native = _objectives(jax, 3)
    points = jnp.array([[1.1, 0.9, 0.3], [1.0, 1.2, 0.1], [0.8, 0.7, 2.0]])
    values, grads = jax.jit(jax.vmap(jax.value_and_grad(ours)))(points)
    for i, p in enumerate(points):
        np.testing.assert_allclose(float(values[i]), float(native(p)), rtol=1e-13)
        np.testing.assert_allclose(np.asarray(grads[i]), jax.grad(native)(p), rtol=1e-11)
    # a batch of batches: the loops nest
    nested = jax.vmap(jax.vmap(ours))(jnp.stack([points, points[::-1]]))
    np.testing.assert_allclose(np.asarray(nested[1]), np.asarray(values)[::-1], rtol=1e-13)


def test_a_matrix_that_is_not_positive_definite_says_so_with_finite_stand_ins():
    from twinlens.backend.jax_linalg import spd_log_det_solve

    jax = _jax()
    jnp = jax.numpy
    p = jnp.array([1.1, 0.9, -60.0])  # the shift makes a indefinite
    a, b = _system(p, jnp, 3)
    log_det, x, ok = spd_log_det_solve(a, b)
    assert not bool(ok)
    assert float(log_det) == 0.0 and np.all(np.asarray(x) == 0.0)

    def guarded(q):
        log_det, x, ok = spd_log_det_solve(*_system(q, jnp, 3))
        return jnp.where(ok, log_det + jnp.sum(x), -jnp.inf)

    assert float(guarded(p)) == -np.inf
    assert np.all(np.asarray(jax.grad(guarded)(p)) == 0.0)


# Before the loops, this vmap left both threads of XLA's 2-thread CPU pool inside jaxlib's
# batched Cholesky, each waiting for the other (it hung on its first call). Run in a child
# process so that a regression fails here instead of stalling the suite.
_VMAPPED_INVERSION = """
    import os
    import sys
    if hasattr(os, "sched_setaffinity"):  # a pool of two threads, as on a 2-core machine
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
    sys.path.insert(0, {tests!r})
    import numpy as np
    from pixelised_cases import lens_tracer, small_dataset
    from twinlens.backend import jax_runtime
    from twinlens.inversion import Constant, Delaunay, Pixelization, log_evidence

    jax = jax_runtime.load()
    mesh = Delaunay((10, 10), placement="cell_centres", outside_hull="nearest_vertex")

    def f(theta_e, lam):
        pix = Pixelization(mesh, Constant(lam), relocation="ellipse")
        return log_evidence(lens_tracer(theta_e), small_dataset(), pix, "jax")

    values = jax.vmap(f)(jax.numpy.array([0.95, 1.0, 1.04]), jax.numpy.array([0.3, 1.0, 4.0]))
    assert np.all(np.isfinite(np.asarray(values)))
    print("finished")
"""


def test_a_vmapped_inversion_on_a_two_thread_pool_finishes():
    script = textwrap.dedent(_VMAPPED_INVERSION).format(tests=str(Path(__file__).parent))
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=180
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a vmapped pixelised inversion hung (batched LAPACK on the CPU pool)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "finished" in done.stdout


def test_the_cotangent_formula_on_numpy_against_finite_differences():
    """The backward pass's formula alone, with numpy and scipy: the directional derivative
    of ``g_ld ln det a + g_x . a^-1 b`` along symmetric ``da`` and along ``db``."""
    from scipy.linalg import cho_solve

    from twinlens.backend.jax_linalg import log_det_solve_cotangents

    rng = np.random.default_rng(3)
    m = rng.normal(size=(5, 5))
    a, b, g_x = m @ m.T + 5 * np.eye(5), rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    factor = np.linalg.cholesky(a)
    x = np.linalg.solve(a, b)
    g_a, g_b = log_det_solve_cotangents(
        factor, x, 0.7, g_x, lambda f, r: cho_solve((f, True), r), np
    )

    def objective(a, b):
        return 0.7 * np.linalg.slogdet(a)[1] + np.sum(g_x * np.linalg.solve(a, b))

    d = rng.normal(size=(5, 5))
    da, db, h = d + d.T, rng.normal(size=(5, 2)), 1e-6
    along_a = (objective(a + h * da, b) - objective(a - h * da, b)) / (2 * h)
    along_b = (objective(a, b + h * db) - objective(a, b - h * db)) / (2 * h)
    assert np.sum(g_a * da) == pytest.approx(along_a, rel=1e-7)
    assert np.sum(g_b * db) == pytest.approx(along_b, rel=1e-7)

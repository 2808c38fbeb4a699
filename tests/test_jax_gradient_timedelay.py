"""JAX gradients of what the time-delay example fits: the power law's kernels with a traced
ellipticity and slope, the image solver's images, and the example's joint likelihood (imaging,
image-plane positions of a quad, delays), as a user's own sampler (NUTS) differentiates it.

References are independent of the JAX path: values from numba, first derivatives as central
finite differences of numba's values, second derivatives as central differences of numba's
deflections (the potential's first derivatives) and numba's hessian kernel.

The JAX gradient of the example's likelihood once compiled for minutes: reverse mode ran back
through the power law's unrolled series and the image solver's Newton steps. The series'
derivatives are now summed forward in closed form (``twinlens.kernels.power_law_series``) and
the solved images carry the implicit function theorem's derivatives; the slow test holds the
compile time.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from jax_loaded import jax_or_skip
from xla_compile import USER_OPTIONS

from twinlens.kernels import power_law as pl
from twinlens.lensing.lens_equation import ImageSolver
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.mass import ExternalShear, PowerLaw

X = np.array([1.1, -0.7, 0.3, -0.25, 0.05])
Y = np.array([0.2, 0.6, -1.2, 0.9, -0.4])
#: (centre_x, e1, e2, einstein_radius, slope): near round (the series unrolled) and flat (a
#: series longer than the unrolled sums: their scan)
PARAMS = {"round": (0.02, 0.1, 0.05, 1.2, 2.05), "flat": (-0.03, 0.6, 0.3, 1.1, 1.7)}
#: weights of the kernels' outputs in one scalar: deflections, hessian, potential
WEIGHTS = np.linspace(0.5, 1.5, 6 * X.size).reshape(6, X.size)


def _kernels(p, backend, x=X, y=Y):
    """Every output of the three series kernels at ``(x, y)``, ``(6, n)``."""
    cx, e1, e2, theta_e, slope = (p[i] for i in range(5))
    args = (x, y, cx, 0.01, e1, e2, theta_e, slope)
    outputs = (
        *pl.DEFLECTIONS(*args, backend=backend),
        *pl.HESSIAN(*args, backend=backend),
        pl.POTENTIAL(*args, backend=backend),
    )
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.stack(outputs)
    return np.stack([np.asarray(o, dtype=float) for o in outputs])


def _central(f, v, h):
    steps = np.eye(v.size) * h
    return np.array([(f(v + e) - f(v - e)) / (2 * h) for e in steps]).T


@pytest.mark.parametrize("shape", PARAMS)
def test_power_law_series_gradients_match_central_differences(shape):
    jax = jax_or_skip()
    p = np.array(PARAMS[shape])
    value = jax.jit(lambda q: _kernels(q, "jax"))(jax.numpy.asarray(p))
    np.testing.assert_allclose(value, _kernels(p, "numba"), rtol=1e-12, atol=1e-14)
    jacobian = jax.jit(jax.jacrev(lambda q: _kernels(q, "jax")))(jax.numpy.asarray(p))
    reference = _central(lambda q: _kernels(q, "numba").ravel(), p, 1e-6)
    np.testing.assert_allclose(
        np.asarray(jacobian).reshape(-1, p.size), reference, rtol=2e-6, atol=1e-8
    )
    # the scalar a sampler differentiates, in reverse and in forward mode alike
    scalar = lambda q: (_kernels(q, "jax") * WEIGHTS).sum()  # noqa: E731
    grad = jax.jit(jax.grad(scalar))(jax.numpy.asarray(p))
    forward = jax.jit(jax.jacfwd(scalar))(jax.numpy.asarray(p))
    np.testing.assert_allclose(grad, forward, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(grad, (WEIGHTS[..., None] * jacobian).sum((0, 1)), rtol=1e-12)


@pytest.mark.parametrize("shape", PARAMS)
def test_power_law_second_derivatives_match_numba(shape):
    """The potential's hessian in the position is numba's hessian kernel; its mixed
    derivative in the position and the slope is a central difference of numba's deflection."""
    jax = jax_or_skip()
    jnp = jax.numpy
    p = np.array(PARAMS[shape])

    def psi(position_and_slope):
        x, y, slope = position_and_slope
        q = jnp.asarray([*p[:4], slope])
        return _kernels(q, "jax", x[None], y[None])[5, 0]

    at = jnp.asarray([X[0], Y[0], p[4]])
    second = np.asarray(jax.jit(jax.hessian(psi))(at))
    hxx, hxy, hyy = _kernels(p, "numba", X[:1], Y[:1])[2:5, 0]
    np.testing.assert_allclose(second[:2, :2], [[hxx, hxy], [hxy, hyy]], rtol=1e-11)

    def alpha(slope):
        return _kernels(np.array([*p[:4], slope]), "numba", X[:1], Y[:1])[:2, 0]

    h = 1e-5
    mixed = (alpha(p[4] + h) - alpha(p[4] - h)) / (2 * h)
    np.testing.assert_allclose(second[:2, 2], mixed, rtol=1e-7)


LENS_PATHS = ("einstein_radius", "e1", "slope", "gamma_1", "beta_x")


def _solve(v, backend):
    """The images of the source behind an EPL + shear with ``v`` =
    ``(einstein_radius, e1, slope, gamma_1, beta_x)``: positions ``(5, 2)`` and mask."""
    lens = PowerLaw((0.0, 0.0), (v[1], 0.05), v[0], v[2])
    tracer = Tracer(Galaxy(mass=(lens, ExternalShear(v[3], -0.02))), Galaxy())
    solver = ImageSolver(window=2.5, cells=101)
    if backend == "jax":
        import jax.numpy as jnp

        source = jnp.stack([v[4], jnp.asarray(0.03)])
    else:
        source = np.array([v[4], 0.03])
    images = solver.solve(tracer, source, backend)
    return images.positions, images.mask


def test_the_solved_images_carry_the_implicit_function_theorems_derivatives():
    """d(image positions)/d(lens, source) on JAX against central differences of numba's
    solved images (the quad's order is the grid's, the same at each step)."""
    jax = jax_or_skip()
    v = np.array([1.2, 0.1, 2.05, 0.03, 0.04])
    positions, mask = _solve(v, "numba")
    assert np.asarray(mask).sum() == 4
    got = jax.jit(lambda q: _solve(q, "jax")[0])(jax.numpy.asarray(v))
    np.testing.assert_allclose(got, positions, rtol=0, atol=1e-12)
    jacobian = np.asarray(jax.jit(jax.jacrev(lambda q: _solve(q, "jax")[0]))(jax.numpy.asarray(v)))
    reference = _central(lambda q: np.asarray(_solve(q, "numba")[0]).ravel(), v, 1e-6)
    np.testing.assert_allclose(jacobian.reshape(-1, v.size), reference, rtol=1e-6, atol=1e-8)


def test_the_solved_images_second_derivatives_are_the_theorems_too():
    """Second derivatives in the Einstein radius and the source position against central
    second differences of numba's solved images."""
    jax = jax_or_skip()
    v = np.array([1.2, 0.1, 2.05, 0.03, 0.04])
    pick = [0, 4]  # einstein_radius, beta_x

    def positions(q, backend):
        if backend == "jax":
            return _solve(jax.numpy.asarray(v).at[jax.numpy.asarray(pick)].set(q), backend)[0]
        full = v.copy()
        full[pick] = q
        return np.asarray(_solve(full, backend)[0])

    at = np.array(v[pick])
    second = jax.jit(jax.hessian(lambda q: positions(q, "jax")))(jax.numpy.asarray(at))
    h = 3e-5
    f = lambda q: positions(q, "numba")  # noqa: E731
    e0, e1 = np.array([h, 0.0]), np.array([0.0, h])
    reference = np.empty((5, 2, 2, 2))
    for i, e in enumerate((e0, e1)):
        reference[..., i, i] = (f(at + e) - 2 * f(at) + f(at - e)) / h**2
    mixed = (f(at + e0 + e1) - f(at + e0 - e1) - f(at - e0 + e1) + f(at - e0 - e1)) / (4 * h * h)
    reference[..., 0, 1] = reference[..., 1, 0] = mixed
    np.testing.assert_allclose(second, reference, rtol=3e-5, atol=3e-6)


# -- the example's likelihood ------------------------------------------------------------------


@pytest.fixture(scope="module")
def timedelay_likelihood(tmp_path_factory):
    from twinlens.job.config import load_config
    from twinlens.job.timedelay import write_timedelay_example

    path = write_timedelay_example(tmp_path_factory.mktemp("timedelay"))
    return load_config(path).objective("numba").likelihood


def _vector(like):
    """Off the example's truth by a little in every parameter (each gradient sizeable)."""
    offsets = np.linspace(-1.0, 1.0, like.n_params) * 2e-3
    return like.reference + offsets * np.maximum(np.abs(like.reference), 0.05)


def test_the_timedelay_likelihood_gradient_matches_central_differences(timedelay_likelihood):
    jax = jax_or_skip()
    like = timedelay_likelihood
    v = _vector(like)
    value = like(v, "numba")
    assert np.isfinite(value)
    x = jax.numpy.asarray(v)
    assert float(jax.jit(like)(x)) == pytest.approx(value, rel=1e-12)
    grad = np.asarray(jax.jit(jax.grad(like))(x))
    h = 1e-6 * np.maximum(np.abs(v), 1e-2)
    steps = np.diag(h)
    reference = np.array(
        [
            (like(v + e, "numba") - like(v - e, "numba")) / (2 * s)
            for e, s in zip(steps, h, strict=True)
        ]
    )
    np.testing.assert_allclose(grad, reference, rtol=1e-6)  # every component sizeable


@pytest.mark.slow
def test_the_timedelay_gradient_compiles_in_a_small_multiple_of_the_value(timedelay_likelihood):
    """As a user's program is compiled (XLA's default options, no program from the disk
    cache). Reverse mode through the series and the solver's steps took many times longer."""
    jax = jax_or_skip()
    like = timedelay_likelihood
    x = jax.numpy.asarray(_vector(like))
    seconds = {}
    cache = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        for name, fn in (("value", like), ("grad", jax.grad(like))):
            lowered = jax.jit(fn).lower(x)
            t0 = time.perf_counter()
            lowered.compile(USER_OPTIONS)
            seconds[name] = time.perf_counter() - t0
    finally:
        jax.config.update("jax_enable_compilation_cache", cache)
    assert seconds["grad"] < 6 * seconds["value"], seconds

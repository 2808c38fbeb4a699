"""The Faddeeva function w(z) = exp(-z**2) erfc(-iz): op, kernel and twinlens.special.wofz.

References are independent of our code: mpmath at 30 digits (which also checks scipy itself),
scipy.special.wofz, and closed forms (erfcx on the imaginary axis, exp and Dawson's function on
the real axis, the derivative w' = -2 z w + 2i / sqrt(pi)).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.special as sc
from xla_compile import user_compiled

import twinlens.kernels.faddeeva as faddeeva  # registers faddeeva.wofz
from twinlens.backend import jax_runtime
from twinlens.kernels import ops, registry
from twinlens.kernels.registry import sample_arguments
from twinlens.kernels.tolerance import compare
from twinlens.special import wofz

EPS = np.finfo(float).eps
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# Points where algorithms for w fail: z = 0, tiny |z|, on and just above the real axis (Re w =
# exp(-x**2) far below |w|) where region boundaries of other algorithms sit (x ~ 3.9 .. 9.5)
# and where exp(-x**2) underflows (x ~ 26.6 .. 27.5), near the imaginary axis (Im w ~ x), the
# diagonal, and far out to |z| = 1e8.
HARD_POINTS = np.array(
    [
        0,
        1e-300j,
        1e-300,
        1e-8,
        1e-8j,
        1e-8 + 1e-8j,
        1e-12 + 1j,
        1e-10 + 5j,
        0.08826025172084684 + 5.0381881700064435j,
        0.5,
        1 + 1j,
        -2 + 0.1j,
        3.9,
        3.9 + 1e-300j,
        4.158475404482287 + 8e-78j,
        5 + 5j,
        5 + 1e-10j,
        -5.5 + 1e-12j,
        6.2,
        8.884953778280048 + 9.77e-158j,
        8.850795929369523 + 1e-300j,
        9.5 + 1e-3j,
        0.3 + 7j,
        20 + 0.5j,
        26.6 + 1e-300j,
        27.5,
        30 + 1e-100j,
        1e3 + 1e-300j,
        -1e4 + 1e4j,
        3e7 + 1j,
        1e-8 + 1e8j,
        1e8,
        -1e8 + 1e-300j,
        1e8 * np.exp(1j * np.pi / 3),
    ],
    dtype=complex,
)


def _mp_wofz(z: complex, dps: int = 30) -> complex:
    """w(z) to ``dps`` significant digits: exp(-z**2) and erfc(-iz) are of size exp(+-|z|**2),
    so the working precision carries log10(|z|**2) extra digits for the product."""
    extra = int(2 * np.log10(max(abs(z), 1.0))) + 5
    with mpmath.workdps(dps + extra):
        zm = mpmath.mpc(z.real, z.imag)
        return complex(mpmath.exp(-zm * zm) * mpmath.erfc(-1j * zm))


def _rel(a, b) -> np.ndarray:
    return np.abs(np.asarray(a) - b) / np.abs(b)


def _random_upper(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` points: |z| log-uniform on [1e-8, 1e8], angle uniform on [0, pi], a third of them
    within 1e-300 .. 1e-3 of the real axis."""
    r = np.exp(rng.uniform(np.log(1e-8), np.log(1e8), n))
    z = r * np.exp(1j * rng.uniform(0.0, np.pi, n))
    near = rng.random(n) < 1 / 3
    z[near] = z[near].real + 1j * np.exp(rng.uniform(np.log(1e-300), np.log(1e-3), near.sum()))
    return z


def _grid(n_r: int, n_angle: int) -> np.ndarray:
    """Dense grid of the closed upper half plane: |z| log-spaced 1e-8 .. 1e8 times angles 0 .. pi
    (both axes included), plus lines at Im z = 1e-300, 1e-100, 1e-12, 1e-6 over |Re z| log-spaced
    1e-8 .. 1e8."""
    r = np.logspace(-8, 8, n_r)
    theta = np.linspace(0.0, np.pi, n_angle)
    polar = (r[:, None] * np.exp(1j * theta[None, :])).ravel()
    polar = polar.real + 1j * np.abs(polar.imag)  # cos/sin rounding: keep Im z >= 0
    x = np.concatenate([r, -r])
    lines = [x + 1j * y for y in (0.0, 1e-300, 1e-100, 1e-12, 1e-6)]
    return np.concatenate([polar, *lines])


# ---------------------------------------------------------------------------- the reference


@pytest.fixture(scope="module")
def mp_points() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2024)
    z = np.concatenate([HARD_POINTS, _random_upper(rng, 150)])
    return z, np.array([_mp_wofz(v) for v in z])


def test_scipy_reference_is_accurate_against_mpmath(mp_points):
    z, ref = mp_points
    err = _rel(sc.wofz(z), ref)
    assert err.max() <= 1e-13, (z[np.argmax(err)], err.max())


def test_mpmath_reference_is_converged_at_30_digits():
    for z in HARD_POINTS[::3]:
        ref = _mp_wofz(z, 45)
        assert abs(_mp_wofz(z, 30) - ref) <= 2 * EPS * abs(ref)  # the final rounding


# ----------------------------------------------------------------------------- the accuracy


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_accuracy_against_mpmath(mp_points, backend):
    z, ref = mp_points
    err = _rel(np.asarray(wofz(z, backend=backend)), ref)
    assert err.max() <= 1e-14, (z[np.argmax(err)], err.max())


def test_one_source_on_numpy_arrays_matches_mpmath(mp_points):
    z, ref = mp_points
    with np.errstate(all="ignore"):
        err = _rel(faddeeva.wofz_point(z), ref)
    assert err.max() <= 1e-14, (z[np.argmax(err)], err.max())


def _grid_errors(z: np.ndarray) -> dict[str, np.ndarray]:
    ref = sc.wofz(z)
    nb = wofz(z, backend="numba")
    jx = np.asarray(wofz(z, backend="jax"))
    return {"numba": _rel(nb, ref), "jax": _rel(jx, ref), "numba vs jax": _rel(nb, jx)}


def _check_grid(z: np.ndarray) -> None:
    errors = _grid_errors(z)
    for name, limit in (("numba", 1e-13), ("jax", 1e-13), ("numba vs jax", 1e-14)):
        err = errors[name]
        assert np.all(np.isfinite(err)), name
        assert err.max() <= limit, (name, z[np.argmax(err)], err.max())


def test_dense_grid_against_scipy():
    _check_grid(_grid(161, 91))


@pytest.mark.slow
def test_very_dense_grid_against_scipy():
    _check_grid(_grid(2001, 721))
    _check_grid(_random_upper(np.random.default_rng(7), 2_000_000))


def test_grid_check_catches_a_perturbed_coefficient(monkeypatch):
    """The grid is dense enough to see a change of 1e-13 relative in w: one coefficient off by
    1e-12 (on numpy arrays the point function reads the module's coefficients at call time)."""
    z = _grid(81, 31)
    ref = sc.wofz(z)
    with np.errstate(all="ignore"):
        assert _rel(faddeeva.wofz_point(z), ref).max() <= 1e-13
        monkeypatch.setattr(faddeeva, "_U3", faddeeva._U3 + 1e-12)
        assert _rel(faddeeva.wofz_point(z), ref).max() > 1e-13


def test_closed_forms_on_the_axes():
    y = np.concatenate([[0.0, 1e-300, 1e-8], np.logspace(-6, 8, 400)])
    # imaginary axis: w(iy) = erfcx(y), real
    for backend in ("numba", "jax"):
        w = np.asarray(wofz(1j * y, backend=backend))
        assert np.max(_rel(w.real, sc.erfcx(y))) <= 1e-14
        np.testing.assert_array_equal(w.imag, 0.0)
    # real axis: w(x) = exp(-x**2) + 2i F(x) / sqrt(pi), F Dawson's function; both parts
    # measured against |w|, which is what the algorithm guarantees
    x = np.concatenate([[0.0, 1e-300, 1e-8], np.logspace(-6, 8, 400)])
    ref = np.exp(-(x**2)) + 1j * TWO_OVER_SQRT_PI * sc.dawsn(x)
    for backend in ("numba", "jax"):
        w = np.asarray(wofz(x, backend=backend))
        assert np.max(_rel(w, ref)) <= 1e-13
    assert wofz(0.0, backend="numba") == pytest.approx(1.0, rel=2 * EPS, abs=0)
    assert complex(wofz(np.complex128(0), backend="jax")) == pytest.approx(1.0, rel=2 * EPS, abs=0)


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_mirror_symmetry_is_exact(backend):
    """w(-conj z) = conj w(z): the algorithm is sign-symmetric operation by operation."""
    z = _random_upper(np.random.default_rng(3), 2000)
    w = np.asarray(wofz(z, backend=backend))
    wm = np.asarray(wofz(-np.conj(z), backend=backend))
    np.testing.assert_array_equal(wm, np.conj(w))


def test_infinite_and_huge_arguments_in_the_upper_half_plane():
    z = np.array([complex(np.inf, 0), complex(-np.inf, 0), complex(0, np.inf), 1e300, 1e300j])
    for backend in ("numba", "jax"):
        w = np.asarray(wofz(z, backend=backend))
        assert np.all(np.isfinite(w)) and np.all(np.abs(w) < 1e-299)
    nans = np.array([complex(np.nan, 1.0), complex(1.0, np.nan), complex(np.nan, -1.0)])
    for backend in ("numba", "jax"):
        assert np.all(np.isnan(np.asarray(wofz(nans, backend=backend))))


# ------------------------------------------------------------------------ below the real axis


def test_below_the_axis_is_the_reflection_to_its_conditioning():
    """w(z) = 2 exp(-z**2) - w(-z): the error is rounding times the size of the terms and the
    conditioning of exp(-z**2) (its argument carries |z|**2 eps), near the zeros of w too."""
    rng = np.random.default_rng(11)
    z = -_random_upper(rng, 60)
    z = z[np.abs(z) < 20]  # keep 2 exp(-z**2) finite: |z|**2 < ~709
    z = np.concatenate([z, [-1e-300j, -1j, 1.99146 - 1.35481j, -2.69149 - 2.17704j, 3 - 0.5j]])
    ref = np.array([_mp_wofz(v) for v in z])
    scale = np.abs(2 * np.exp(-(z**2))) + np.abs(sc.wofz(-z))
    bound = 8 * EPS * (1 + 2 * np.abs(z) ** 2) * scale
    for backend in ("numba", "jax"):
        w = np.asarray(wofz(z, backend=backend))
        assert np.all(np.abs(w - ref) <= bound), backend
    assert np.all(np.abs(sc.wofz(z) - ref) <= bound)  # scipy reflects the same way


def test_below_the_axis_overflows_like_scipy():
    z = np.array([-30j, 1 - 30j, 0.7 - 27j, 0.5 - 26j, 30 - 30j, 1e8 - 1e8j, 27 - 1j])
    ref = sc.wofz(z)
    for backend in ("numba", "jax"):
        w = np.asarray(wofz(z, backend=backend))
        for part in ("real", "imag"):
            a, b = getattr(w, part), getattr(ref, part)
            assert np.array_equal(np.isinf(a), np.isinf(b)), (backend, part, a, b)
            assert np.array_equal(np.sign(a[np.isinf(a)]), np.sign(b[np.isinf(b)]))
        finite = np.isfinite(ref)
        assert np.max(_rel(w[finite], ref[finite])) <= 1e-11
    assert np.asarray(wofz(-30j, backend="numba")).imag == 0.0  # w is real on the imaginary axis


# -------------------------------------------------------------------------- JAX derivatives


def _dw_ref(z):
    return -2 * z * sc.wofz(z) + 1j * TWO_OVER_SQRT_PI


def test_jax_gradients_match_the_derivative_and_finite_differences():
    jax = jax_runtime.load()
    jnp = jax.numpy
    pts = np.array([0, 1e-300j, 0.5 + 0.5j, 3.9 + 1e-12j, -6 + 2j, 0.1 + 9j, 40 + 1j, 1e8 + 1j])
    pts = np.concatenate([pts, [1.5 - 0.7j, -2 - 1j]])  # below the axis too

    def part(fn):
        return lambda x, y: fn(wofz(jnp.asarray(x) + 1j * jnp.asarray(y)))

    grads = {
        name: jax.jit(jax.vmap(jax.grad(part(fn), argnums=(0, 1))))
        for name, fn in (("re", jnp.real), ("im", jnp.imag))
    }
    gx_re, gy_re = (np.asarray(g) for g in grads["re"](pts.real, pts.imag))
    gx_im, gy_im = (np.asarray(g) for g in grads["im"](pts.real, pts.imag))
    dw = _dw_ref(pts)
    # holomorphic: d/dx = w', d/dy = i w'
    scale = 2 * np.abs(pts * sc.wofz(pts)) + TWO_OVER_SQRT_PI  # size of the formula's terms
    for got, want in (
        (gx_re, dw.real),
        (gx_im, dw.imag),
        (gy_re, (1j * dw).real),
        (gy_im, (1j * dw).imag),
    ):
        assert np.all(np.isfinite(got))
        assert np.all(np.abs(got - want) <= 1e-13 * scale)
    # central differences of scipy away from the extremes, h ~ 1e-5 |z|
    sel = (np.abs(pts) > 0.1) & (np.abs(pts) < 100)
    z = pts[sel]
    h = 1e-5 * np.abs(z)
    fd_x = (sc.wofz(z + h) - sc.wofz(z - h)) / (2 * h)
    fd_y = (sc.wofz(z + 1j * h) - sc.wofz(z - 1j * h)) / (2 * h)
    np.testing.assert_allclose(gx_re[sel] + 1j * gx_im[sel], fd_x, rtol=1e-7)
    np.testing.assert_allclose(gy_re[sel] + 1j * gy_im[sel], fd_y, rtol=1e-7)


def test_jax_derivative_at_zero_and_second_derivative():
    jax = jax_runtime.load()
    jnp = jax.numpy
    d_im = jax.grad(lambda x: jnp.imag(wofz(x + 0j)))(0.0)
    d_re = jax.grad(lambda x: jnp.real(wofz(x + 0j)))(0.0)
    assert float(d_im) == pytest.approx(TWO_OVER_SQRT_PI, rel=1e-15)
    assert float(d_re) == 0.0
    # w'' = -2 w - 2 z w' (the custom JVP differentiates again through itself)
    z = 0.7 + 0.4j
    second = jax.grad(jax.grad(lambda x: jnp.real(wofz(x + 0.4j))))(0.7)
    want = (-2 * sc.wofz(z) - 2 * z * _dw_ref(z)).real
    assert float(second) == pytest.approx(want, rel=1e-13)


def test_jax_jit_vmap_and_shapes():
    jax = jax_runtime.load()
    jnp = jax.numpy
    z = _random_upper(np.random.default_rng(5), 60).reshape(3, 4, 5)
    direct = wofz(jnp.asarray(z))
    assert direct.shape == (3, 4, 5) and direct.dtype == jnp.complex128
    mapped = jax.vmap(jax.jit(lambda v: wofz(v)))(jnp.asarray(z))
    np.testing.assert_array_equal(np.asarray(mapped), np.asarray(direct))
    assert np.max(_rel(np.asarray(direct), sc.wofz(z))) <= 1e-13
    real_in = wofz(jnp.asarray([0.5, 2.0]))  # real input means Im z = 0
    assert np.max(_rel(np.asarray(real_in), sc.wofz([0.5, 2.0]))) <= 1e-13


# --------------------------------------------------------------- the op, kernel and wrapper


def test_op_inside_numba_jax_and_numpy():
    import numba

    ops.register_numba_overloads()
    jax = jax_runtime.load()

    def twice(z):
        return 2.0 * faddeeva.wofz(z)

    z = 1.3 + 0.2j
    ref = 2.0 * sc.wofz(z)
    assert abs(numba.njit(twice)(z) - ref) <= 1e-14 * abs(ref)
    assert abs(complex(jax.jit(twice)(jax.numpy.asarray(z))) - ref) <= 1e-14 * abs(ref)
    assert twice(np.asarray(z)) == ref  # numpy arrays: scipy itself


def test_upper_half_plane_op_equals_wofz_and_scipy(mp_points):
    # wofz_upper is wofz without the reflection below the axis: bit for bit the same values on
    # numba and JAX for Im z >= 0, and within the accuracy bound of mpmath
    import numba

    ops.register_numba_overloads()
    jax = jax_runtime.load()
    z, ref = mp_points
    x, y = np.ascontiguousarray(z.real), np.ascontiguousarray(z.imag)

    @numba.njit
    def both(x, y):
        upper = np.empty((2, x.size))
        full = np.empty((2, x.size))
        for i in range(x.size):
            upper[0, i], upper[1, i] = faddeeva.wofz_upper(x[i], y[i])
            w = faddeeva.wofz(complex(x[i], y[i]))
            full[0, i], full[1, i] = w.real, w.imag
        return upper, full

    upper, full = both(x, y)
    np.testing.assert_array_equal(upper, full)
    # compiled as a user's programs are: under the test run's XLA flags the two programs'
    # codegen differs and the values may differ in the last bit (xla_compile.py)
    jr, ji = user_compiled(faddeeva.wofz_upper, x, y)(x, y)
    jz = jax.numpy.asarray(z)
    jw = np.asarray(user_compiled(faddeeva.wofz, jz)(jz))
    np.testing.assert_array_equal(np.asarray(jr), jw.real)
    np.testing.assert_array_equal(np.asarray(ji), jw.imag)
    assert np.max(_rel(upper[0] + 1j * upper[1], ref)) <= 1e-13
    nr, ni = faddeeva.wofz_upper(x, y)  # numpy: scipy
    assert np.array_equal(nr + 1j * ni, sc.wofz(z))


def test_upper_half_plane_op_jax_derivative_is_w_prime():
    jax = jax_runtime.load()
    pts = np.array([0.0, 1e-300j, 0.5 + 0.5j, 3.9 + 1e-12j, -6 + 2j, 0.1 + 9j, 40 + 1j])
    jac = jax.jit(jax.vmap(jax.jacrev(lambda x, y: faddeeva.wofz_upper(x, y), argnums=(0, 1))))
    (drx, dry), (dix, diy) = (tuple(np.asarray(d) for d in row) for row in jac(pts.real, pts.imag))
    dw = _dw_ref(pts)
    scale = 2 * np.abs(pts * sc.wofz(pts)) + TWO_OVER_SQRT_PI
    # holomorphic: d/dx = w', d/dy = i w'
    for got, want in ((drx, dw.real), (dix, dw.imag), (dry, -dw.imag), (diy, dw.real)):
        assert np.all(np.abs(got - want) <= 1e-13 * scale)


def test_kernel_is_registered_and_agrees_across_backends():
    kernel = registry.get("faddeeva.wofz")
    assert kernel.point is faddeeva.wofz_parts
    rng = np.random.default_rng(0)
    for _ in range(3):
        args = sample_arguments(kernel, rng, 400)
        ref = kernel(*args, backend="numpy")
        np.testing.assert_array_equal(ref[0] + 1j * ref[1], sc.wofz(args[0] + 1j * args[1]))
        for backend in ("numba", "jax"):
            out = kernel(*args, backend=backend)
            for o, r in zip(out, ref, strict=True):
                assert compare(np.asarray(o), r, kernel.tol).passed, backend


def test_wrapper_shapes_dtypes_and_backend_choice():
    jax = jax_runtime.load()
    z = np.array([[0.2 + 1j, 3.0], [1e-300j, -1.0 - 0.5j]])
    for backend in ("numpy", "numba"):
        w = wofz(z, backend=backend)
        assert isinstance(w, np.ndarray) and w.shape == (2, 2) and w.dtype == np.complex128
        s = wofz(1.0 + 1j, backend=backend)
        assert isinstance(s, np.complexfloating)
    assert wofz(2, backend="numba") == pytest.approx(sc.wofz(2.0), rel=1e-14)
    assert isinstance(wofz(jax.numpy.asarray(z)), jax.Array)  # JAX input selects JAX
    with pytest.raises(TypeError, match="backend='jax'"):
        wofz(jax.numpy.asarray(z), backend="numba")
    with pytest.raises(ValueError, match="unknown backend"):
        wofz(z, backend="cupy")
    with pytest.raises(TypeError, match="numbers"):
        wofz(np.array(["a"]), backend="numba")
    assert wofz(np.zeros((0, 3)), backend="numba").shape == (0, 3)

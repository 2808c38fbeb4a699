"""The op vocabulary behaves the same on numpy arrays, JAX arrays and inside numba."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from twinlens.backend import jax_runtime
from twinlens.kernels import ops

ARGS = {1: (0.37,), 2: (0.37, -1.3), 3: (True, 0.37, -1.3)}
COMPLEX_OK = {"sqrt", "exp", "log", "sin", "cos", "real", "imag", "conj"}


def _arity(op):
    return len(inspect.signature(op._numba_impl).parameters)


@pytest.mark.parametrize("op", ops.OPS, ids=lambda o: o.__name__)
def test_op_agrees_across_backends(op):
    import numba

    ops.register_numba_overloads()
    jax = jax_runtime.load()
    args = ARGS[_arity(op)]
    if op.__name__ in {"arctanh", "log", "log1p"}:
        args = (0.37,)
    src = "def call({a}):\n    return OP({a})\n".format(
        a=", ".join(f"a{i}" for i in range(len(args)))
    )
    namespace = {"OP": op}
    exec(src, namespace)
    in_numba = numba.njit(namespace["call"])(*args)
    in_numpy = op(*[np.asarray(a) for a in args])
    in_jax = op(*[jax.numpy.asarray(a) for a in args])
    np.testing.assert_allclose(in_numba, in_numpy, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(in_jax), in_numpy, rtol=2e-15)


@pytest.mark.parametrize("name", sorted(COMPLEX_OK))
def test_complex_ops_in_numba(name):
    import numba

    ops.register_numba_overloads()
    op = getattr(ops, name)
    namespace = {"OP": op}
    exec("def call(z):\n    return OP(z)\n", namespace)
    z = 0.3 - 1.2j
    np.testing.assert_allclose(numba.njit(namespace["call"])(z), op(np.asarray(z)), rtol=1e-15)


def _numba_vectorised(op):
    """A numba loop applying ``op`` (as kernels do: inlined into a loop over points)."""
    from twinlens.backend import numba_runtime

    numba = numba_runtime.load()
    ops.register_numba_overloads()

    @numba.njit(error_model="numpy")
    def loop(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = op(x[i])
        return out

    return loop


def test_numba_vectorised_exp_is_within_one_ulp_of_libm_and_exact_at_specials():
    import mpmath

    rng = np.random.default_rng(12)
    x = np.concatenate(
        [
            rng.uniform(-708.0, 709.7, 100_000),  # normal results
            rng.uniform(-2.0, 2.0, 100_000),
            [0.0, -0.0, 1e-300, -1e-300, 709.78, -708.39, 1.0, -1.0, 0.5 * np.log(2.0)],
        ]
    )
    got = _numba_vectorised(ops.exp_vectorised)(x)
    # ulp-scale agreement with numpy (itself within 1 ulp of the exact value)
    np.testing.assert_allclose(got, np.exp(x), rtol=2.3e-16, atol=0)
    # and against 30-digit mpmath on a sample: at most 1 ulp (2.2e-16 relative)
    for v in x[::2000]:
        exact = float(mpmath.exp(mpmath.mpf(float(v))))
        assert abs(got[x == v][0] - exact) <= 2.3e-16 * exact
    specials = np.array([np.nan, np.inf, -np.inf, 710.0, 1e300, -746.0, -1e300, -745.0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(
            _numba_vectorised(ops.exp_vectorised)(specials), np.exp(specials)
        )
    # subnormal results (below 2.2e-308) keep their leading digits
    tiny = np.linspace(-744.0, -709.0, 101)
    np.testing.assert_allclose(
        _numba_vectorised(ops.exp_vectorised)(tiny), np.exp(tiny), rtol=1e-13
    )


def test_numba_vectorised_log_is_within_one_ulp_of_libm_and_exact_at_specials():
    rng = np.random.default_rng(13)
    x = np.concatenate(
        [
            np.exp(rng.uniform(-700.0, 700.0, 100_000)),
            rng.uniform(0.5, 2.0, 100_000),
            1.0 + rng.uniform(-1e-9, 1e-9, 1000),  # log near 1: relative accuracy of the result
            [1.0, 2.0, 0.5, np.sqrt(2.0), 5e-324, 1e-310, 2.2250738585072014e-308, 1e308],
        ]
    )
    got = _numba_vectorised(ops.log_vectorised)(x)
    expected = np.log(x)
    np.testing.assert_allclose(got, expected, rtol=2.3e-16, atol=0)
    specials = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(
            _numba_vectorised(ops.log_vectorised)(specials), np.log(specials)
        )


def test_make_op_refuses_an_unknown_inline_mode():
    with pytest.raises(ValueError, match=r"make_op\('twice'\): inline must be True, False or 'ir'"):
        ops.make_op("twice", np.negative, "jax.numpy.negative", lambda x: -x, inline="IR")
    assert "twice" not in [op.__name__ for op in ops._ALL_OPS]

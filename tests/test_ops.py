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

"""The generic agreement test: every registered kernel, every backend, against numpy.

A kernel registered later is tested here without a new test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import kernel_arguments

from twinlens.backend import BACKENDS
from twinlens.kernels import all_kernels
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.registry import Kernel, register, unregister
from twinlens.kernels.tolerance import Tolerance, compare, compare_outputs

KERNELS = all_kernels()


def _outputs(kernel, args, backend):
    out = kernel(*args, backend=backend)
    return tuple(np.asarray(o) for o in (out if isinstance(out, tuple) else (out,)))


def test_registry_is_not_empty():
    assert len(KERNELS) >= 4


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_every_kernel_has_every_backend(kernel):
    assert kernel.backends == BACKENDS, (
        f"{kernel.name} lacks {set(BACKENDS) - set(kernel.backends)}"
    )


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@given(data=st.data())
def test_backends_agree_with_numpy_reference(kernel, data):
    args = data.draw(kernel_arguments(kernel))
    ref = _outputs(kernel, args, "numpy")
    for backend in ("numba", "jax"):
        out = _outputs(kernel, args, backend)
        assert [o.shape for o in out] == [r.shape for r in ref]
        for name, agreement in zip(
            kernel.outputs, compare_outputs(out, ref, kernel.tolerance_for(args)), strict=True
        ):
            assert agreement.passed, (kernel.name, backend, name, agreement)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_outputs_broadcast_like_inputs(kernel):
    rng = np.random.default_rng(1)
    shape = (3, 4)
    args = [a.domain.uniform(rng, 12).reshape(shape) for a in kernel.inputs]
    args += [p.draw(rng) for p in kernel.params]
    for backend in BACKENDS:
        for o in _outputs(kernel, args, backend):
            assert o.shape == shape


def _scaled_sum(x, y, a):
    return a * (x + y)


def test_agreement_check_can_fail():
    """A kernel whose numba implementation is off by one part in 1e9 must be caught."""
    kernel = Kernel(
        name="test.off_by_1e-9",
        point=_scaled_sum,
        inputs=(Arg("x", Domain(-1, 1)), Arg("y", Domain(-1, 1))),
        params=(Arg("a", Domain(0.5, 2.0)),),
        outputs=("s",),
        tol=Tolerance(rtol=1e-12, atol=1e-15),
        impls={"numba": lambda x, y, a: ((1 + 1e-9) * a * (x + y),)},
    )
    register(kernel)
    try:
        args = [np.array([0.3, -0.7]), np.array([0.2, 0.1]), 1.5]
        ref = _outputs(kernel, args, "numpy")[0]
        assert compare(_outputs(kernel, args, "jax")[0], ref, kernel.tol).passed
        assert not compare(_outputs(kernel, args, "numba")[0], ref, kernel.tol).passed
    finally:
        unregister(kernel.name)


def test_kernel_missing_a_backend_is_reported():
    kernel = Kernel(
        name="test.numpy_only",
        point=None,
        inputs=(Arg("x", Domain(-1, 1)),),
        params=(),
        outputs=("x",),
        impls={"numpy": lambda x: (x,)},
    )
    assert kernel.backends == ("numpy",)
    with pytest.raises(NotImplementedError, match="no numba implementation"):
        kernel(np.ones(2), backend="numba")


def test_wrong_argument_count_names_the_signature():
    kernel = KERNELS[0]
    with pytest.raises(TypeError, match=kernel.name):
        kernel(np.ones(2), backend="numpy")

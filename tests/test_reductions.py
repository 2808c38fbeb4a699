"""take_min / take_max: the same values as min / max, and a derivative that reaches one
element (JAX's own divides by a count of equal elements, which can be 0 after XLA recomputes
them with other rounding)."""

from __future__ import annotations

import numpy as np
import pytest
from jax_loaded import jax_or_skip

from twinlens.backend.reductions import take_max, take_min

VALUES = np.array([[3.0, -1.0, 2.0], [0.5, 0.5, -4.0], [7.0, 7.0, 7.0], [-2.0, 9.0, 1.0]])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_values_equal_numpy_min_and_max(axis):
    np.testing.assert_array_equal(take_min(VALUES, axis, np), VALUES.min(axis=axis))
    np.testing.assert_array_equal(take_max(VALUES, axis, np), VALUES.max(axis=axis))
    jax = jax_or_skip()
    jnp = jax.numpy
    np.testing.assert_array_equal(take_min(jnp.asarray(VALUES), axis, jnp), VALUES.min(axis))
    np.testing.assert_array_equal(take_max(jnp.asarray(VALUES), axis, jnp), VALUES.max(axis))


def test_derivative_is_one_at_the_first_extreme_element():
    jax = jax_or_skip()
    jnp = jax.numpy
    grad = np.asarray(jax.grad(lambda v: jnp.sum(take_max(v, 1, jnp)))(jnp.asarray(VALUES)))
    expected = np.zeros_like(VALUES)
    expected[np.arange(4), VALUES.argmax(axis=1)] = 1.0  # ties: the first, not a share
    np.testing.assert_array_equal(grad, expected)
    grad = np.asarray(jax.grad(lambda v: jnp.sum(take_min(v, 0, jnp)))(jnp.asarray(VALUES)))
    expected = np.zeros_like(VALUES)
    expected[VALUES.argmin(axis=0), np.arange(3)] = 1.0
    np.testing.assert_array_equal(grad, expected)

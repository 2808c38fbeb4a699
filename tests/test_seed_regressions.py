"""Every failure measured in the source document, shown impossible, plus compile counts.

The compile count is the number of times JAX traces the function: a Python side effect in the
traced body runs once per compilation and never on a cache hit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from twinlens.backend import jax_runtime
from twinlens.fields import ValueIdentity, static_field

jax = jax_runtime.load()
jnp = jax.numpy


@dataclass(frozen=True, eq=False)
class Power(ValueIdentity):
    """A toy profile: scale * x**power."""

    scale: float = 1.0
    power: int = static_field(default=2)

    def apply(self, x):
        return self.scale * x**self.power


@dataclass(frozen=True, eq=False)
class HalfPower(Power):
    """A variant: same fields, different math."""

    def apply(self, x):
        return 0.5 * super().apply(x)


X = jnp.arange(1.0, 4.0)


def _counted(static: bool):
    traces = []

    def f(profile, x):
        traces.append(1)
        return profile.apply(x)

    jitted = jax.jit(f, static_argnums=0) if static else jax.jit(f)
    return jitted, traces


# -- the dataclasses.replace miscompile ------------------------------------------------------


def test_replace_cannot_smuggle_math_under_an_equal_key():
    base = Power(2.0)
    with pytest.raises(TypeError):
        dataclasses.replace(base, apply=lambda x: 0.5 * base.apply(x))  # methods are not fields


@pytest.mark.parametrize("static", [True, False])
def test_replace_with_new_values_gets_its_own_answer(static):
    f, _ = _counted(static)
    base = Power(2.0)
    derived = dataclasses.replace(base, scale=0.5)
    assert derived != base
    np.testing.assert_allclose(f(base, X), 2.0 * X**2)
    np.testing.assert_allclose(f(derived, X), 0.5 * X**2)


# -- subclass variants -----------------------------------------------------------------------


@pytest.mark.parametrize("static", [True, False])
def test_subclass_variant_never_equals_its_base_nor_shares_its_program(static):
    f, _ = _counted(static)
    assert HalfPower(2.0) != Power(2.0)
    np.testing.assert_allclose(f(Power(2.0), X), 2.0 * X**2)
    np.testing.assert_allclose(f(HalfPower(2.0), X), 1.0 * X**2)


# -- a parameter outside the fields ------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class HiddenScale(ValueIdentity):
    offset: float = 0.0

    def __init__(self, scale):  # the broken spelling: scale is not a field
        object.__setattr__(self, "offset", 0.0)
        object.__setattr__(self, "scale", scale)

    def apply(self, x):
        return self.scale * x**2 + self.offset


def test_hand_written_init_parameter_is_refused():
    a, b = HiddenScale(2.0), HiddenScale(3.0)
    with pytest.raises(TypeError, match=r"stores \['scale'\] outside its dataclass fields"):
        _ = a == b
    with pytest.raises(TypeError, match="outside its dataclass fields"):
        hash(a)


@pytest.mark.parametrize("static", [True, False])
def test_hand_written_init_cannot_be_served_anothers_program(static):
    f, _ = _counted(static)
    # jit reports an unhashable static argument as ValueError, chaining our TypeError
    with pytest.raises((TypeError, ValueError)) as info:
        f(HiddenScale(2.0), X)
    err = info.value
    messages = [str(err), str(err.__cause__), str(err.__context__)]
    assert any("outside its dataclass fields" in m for m in messages)


def test_missing_dataclass_decorator_is_refused():
    class Undecorated(Power):  # annotated but not a dataclass: extra is invisible to __init__
        extra: float = 1.0

    with pytest.raises(TypeError, match="not decorated with @dataclass"):
        Undecorated(2.0)


def test_eq_true_dataclass_is_refused():
    @dataclass(frozen=True)
    class GeneratedEq(ValueIdentity):
        scale: float = 1.0

    with pytest.raises(TypeError, match="eq=False"):
        GeneratedEq(1.0)


def test_mutable_dataclass_is_refused():
    @dataclass(eq=False)
    class Mutable(ValueIdentity):
        scale: float = 1.0

    with pytest.raises(TypeError, match="frozen"):
        Mutable(1.0)


def test_post_init_that_skips_super_is_caught():
    @dataclass(frozen=True, eq=False)
    class ForgetsSuper(ValueIdentity):
        values: object = None

        def __post_init__(self):  # forgot super().__post_init__()
            pass

    with pytest.raises(TypeError, match=r"super\(\).__post_init__"):
        hash(ForgetsSuper(np.ones(2)))


@dataclass(frozen=True, eq=False)
class ScaleTwo(ValueIdentity):
    scale = 2.0  # a bare class attribute, not a field

    def apply(self, x):
        return self.scale * x**2


@dataclass(frozen=True, eq=False)
class ScaleThree(ScaleTwo):
    scale = 3.0


@pytest.mark.parametrize("static", [True, False])
def test_class_attribute_parameter_is_safe_by_type(static):
    f, _ = _counted(static)
    assert ScaleTwo() != ScaleThree()
    np.testing.assert_allclose(f(ScaleTwo(), X), 2.0 * X**2)
    np.testing.assert_allclose(f(ScaleThree(), X), 3.0 * X**2)


# -- compile counts --------------------------------------------------------------------------


def test_pytree_argument_compiles_once_over_five_rebuilds():
    f, traces = _counted(static=False)
    for _ in range(5):
        f(Power(2.0), X)
    assert len(traces) == 1
    # a new value of a leaf reuses the program and still gets its own answer
    np.testing.assert_allclose(f(Power(7.0), X), 7.0 * X**2)
    assert len(traces) == 1


def test_static_argument_compiles_once_over_five_rebuilds():
    f, traces = _counted(static=True)
    for _ in range(5):
        f(Power(2.0), X)
    assert len(traces) == 1
    np.testing.assert_allclose(f(Power(7.0), X), 7.0 * X**2)  # a new value is a new program
    assert len(traces) == 2


@pytest.mark.parametrize("static", [True, False])
def test_one_compile_per_distinct_static_configuration(static):
    f, traces = _counted(static)
    for power in (1, 2, 3, 2, 1, 3):
        np.testing.assert_allclose(f(Power(1.5, power=power), X), 1.5 * X**power)
    assert len(traces) == 3


def test_free_parameter_can_be_a_tracer():
    grad = jax.grad(lambda s: Power(s).apply(X).sum())(2.0)
    np.testing.assert_allclose(grad, float(jnp.sum(X**2)))
    batched = jax.vmap(lambda p: p.apply(X))(Power(jnp.array([1.0, 2.0])))
    np.testing.assert_allclose(batched, np.stack([X**2, 2 * X**2]))


def test_hashing_an_object_with_a_tracer_explains_itself():
    def f(s):
        hash(Power(s))
        return s

    with pytest.raises(TypeError, match="tracer"):
        jax.jit(f)(1.0)

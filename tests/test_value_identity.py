"""Value identity: equality and hash from type plus field values, and the guard."""

from __future__ import annotations

import dataclasses
import functools
import pickle
from dataclasses import dataclass

import numpy as np
import pytest

from twinlens.fields import (
    ValueIdentity,
    combine_static,
    partition_static,
    result_digest,
    schedule_field,
    static_field,
    value_digest,
    value_key,
)


@dataclass(frozen=True, eq=False)
class Toy(ValueIdentity):
    scale: object = 1.0
    centre: tuple = (0.0, 0.0)
    power: int = static_field(default=2)

    @functools.cached_property
    def doubled(self):
        return 2 * self.scale


def test_rebuilt_objects_are_equal_and_hash_equal():
    a, b = Toy(2.0, (0.1, 0.2)), Toy(2.0, (0.1, 0.2))
    assert a is not b and a == b and hash(a) == hash(b)
    assert len({a, b}) == 1


def test_different_values_differ():
    assert Toy(2.0) != Toy(3.0)
    assert Toy(2.0, power=3) != Toy(2.0)


def test_key_exactness_next_float_up():
    assert Toy(1.0) != Toy(float(np.nextafter(1.0, 2.0)))


def test_int_and_float_are_different_keys():
    assert Toy(1) != Toy(1.0)


def test_float32_and_float64_differ():
    assert Toy(np.float32(1.0)) != Toy(1.0)
    assert Toy(np.array([1.0], np.float32)) != Toy(np.array([1.0]))


def test_numpy_float64_scalar_is_canonicalised():
    t = Toy(np.float64(0.5))
    assert type(t.scale) is float and t == Toy(0.5) and hash(t) == hash(Toy(0.5))


def test_list_and_tuple_are_one_key():
    a, b = Toy(centre=[1, 2]), Toy(centre=(1, 2))
    assert a.centre == (1, 2) and a == b and hash(a) == hash(b)


def test_bool_and_int8_arrays_neither_equal_nor_hash_confused():
    a = Toy(np.array([1, 0], dtype=bool))
    b = Toy(np.array([1, 0], dtype=np.int8))
    assert a != b
    # equal objects must hash equal; unequal ones may collide, but these keys must differ
    assert value_key(a.scale) != value_key(b.scale)


def test_arrays_by_shape_dtype_and_bytes():
    assert Toy(np.zeros(4)) == Toy(np.zeros(4))
    assert Toy(np.zeros(4)) != Toy(np.zeros((2, 2)))
    assert Toy(np.arange(4.0)) != Toy(np.arange(4.0)[::-1])


def test_caller_mutation_cannot_change_a_built_key():
    arr = np.array([1.0, 2.0])
    t = Toy(arr)
    h = hash(t)
    arr[0] = 99.0
    assert t.scale[0] == 1.0
    assert hash(t) == h and t == Toy(np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        t.scale[0] = 5.0  # stored copy is read-only


def test_nan_rule_nan_equals_nan_and_zeros_are_signed():
    assert Toy(float("nan")) == Toy(float("nan"))
    assert hash(Toy(float("nan"))) == hash(Toy(np.float64("nan")))
    assert Toy(np.array([np.nan])) == Toy(np.array([np.nan]))
    assert Toy(0.0) != Toy(-0.0)


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Toy().scale = 2.0  # type: ignore[misc]


def test_cached_property_is_allowed():
    t = Toy(3.0)
    assert t.doubled == 6.0
    assert hash(t) == hash(Toy(3.0)) and t == Toy(3.0)


@pytest.mark.parametrize("bad", [lambda x: x, functools.partial(max, 1), print])
def test_callable_field_refused_with_reason(bad):
    with pytest.raises(TypeError, match="hash by identity"):
        Toy(bad)


def test_dict_field_refused():
    with pytest.raises(TypeError, match="tuple"):
        Toy({"a": 1})


def test_nested_value_identity_and_types_allowed():
    assert Toy(Toy(2.0)) == Toy(Toy(2.0))
    assert Toy(Toy(2.0)) != Toy(Toy(3.0))
    assert Toy(float) == Toy(float) and Toy(float) != Toy(int)


def test_eq_with_other_types():
    assert Toy() != 1.0 and Toy() != (1.0, (0.0, 0.0), 2)


def test_pickle_round_trip_keeps_identity_and_read_only_arrays():
    t = Toy(np.arange(3.0), (1.0, 2.0))
    u = pickle.loads(pickle.dumps(t))
    assert u == t and hash(u) == hash(t)
    assert not u.scale.flags.writeable


def test_partition_static_round_trip():
    mask = np.array([True, False])
    data = (np.arange(3.0), (mask, 4, "name"), [2.5, None], np.array([0, 2]))
    leaves, skeleton = partition_static(data)
    # float arrays, floats and integer index arrays are leaves; bool masks, ints, str, None static
    assert len(leaves) == 3
    assert leaves[0] is data[0] and leaves[1] == 2.5 and leaves[2] is data[3]
    rebuilt = combine_static(leaves, skeleton)
    assert isinstance(rebuilt[2], list)
    np.testing.assert_array_equal(rebuilt[1][0], mask)
    assert rebuilt[1][1:] == (4, "name") and rebuilt[2][1] is None
    # the skeleton hashes by value
    _, skeleton2 = partition_static((np.zeros(3), (mask.copy(), 4, "name"), [1.0, None], data[3]))
    assert skeleton == skeleton2 and hash(skeleton) == hash(skeleton2)
    _, skeleton3 = partition_static((np.zeros(3), (~mask, 4, "name"), [1.0, None], data[3]))
    assert skeleton != skeleton3


@dataclass(frozen=True, eq=False)
class Scheduled(ValueIdentity):
    inner: Toy = Toy()
    chunk: int | None = schedule_field(default=None)


def test_a_schedule_field_is_identity_but_not_result():
    base = Scheduled(Toy(scale=2.0))
    wide = Scheduled(Toy(scale=2.0), chunk=64)
    assert base != wide and hash(base) != hash(wide)  # another program
    assert result_digest(wide) == result_digest(base) == value_digest(base)  # same results
    assert value_digest(wide) != value_digest(base)
    # nested: a schedule field inside a tuple inside another object is keyed at its default
    outer = (Toy(scale=(1.0, wide)),)
    assert result_digest(outer) == value_digest((Toy(scale=(1.0, base)),))
    # any other field still changes the digest
    assert result_digest(Scheduled(Toy(scale=3.0), chunk=64)) != result_digest(base)

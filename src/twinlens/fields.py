"""Value identity: objects that compare and hash by their fields.

JAX caches compiled programs on the hash and equality of static arguments and of pytree
auxiliary data. If a profile hashed by identity, every rebuilt-but-identical profile would
recompile; if two differently parameterised profiles compared equal, one would be served the
other's program. :class:`ValueIdentity` makes both impossible::

    @dataclass(frozen=True, eq=False)
    class Plummer(ValueIdentity):
        scale: float
        centre: tuple[float, float] = (0.0, 0.0)
        n_terms: int = static_field(default=8)

Rules, all enforced:

* the key is ``type(self)`` plus the field values, so a subclass variant never equals its base;
* arrays enter the key by dtype, shape and bytes, and are stored as read-only copies that no
  one can make writeable again (:func:`frozen_array`), so neither a caller editing the array
  it passed in nor one editing the stored array changes the object or its key;
* lists become tuples (``[1, 2]`` and ``(1, 2)`` give one key); numpy float64, int64, bool and
  complex128 scalars become the Python scalar of the same value;
* floats are keyed by bit pattern: ``1.0`` and the next float up differ, ``0.0`` and ``-0.0``
  differ, and every NaN equals every other NaN (a NaN field is one value, not "unequal to
  itself"), so ``__eq__`` and ``__hash__`` always agree;
* Python ints and floats are different keys (``1`` vs ``1.0``), as are float32 and float64;
* callables are refused (they hash by identity and would silently defeat the compile cache),
  except classes and other value-identity objects; dicts are refused (use a tuple of pairs);
* a guard, run when the key is first built, raises for a parameter stored outside the fields
  (a hand-written ``__init__``), a class that declares fields but lacks ``@dataclass``, a
  dataclass that is not ``frozen=True, eq=False``, and a subclass ``__post_init__`` that did
  not call ``super().__post_init__()``. Values cached by ``functools.cached_property`` are
  allowed.

The classes are also JAX pytrees, registered when JAX is first used: fields are leaves (so a
free parameter can be a tracer) except those declared with :func:`static_field`, which go in
the auxiliary data and hash by value.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import inspect
import sys
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from twinlens.backend import jax_runtime
from twinlens.backend.concrete import is_jax_array, is_tracer

__all__ = [
    "ValueIdentity",
    "combine_static",
    "frozen_array",
    "key_digest",
    "partition_static",
    "result_digest",
    "schedule_field",
    "static_field",
    "value_digest",
    "value_key",
]

_KEY_ATTR = "_twinlens_key"
_PY_SCALAR_DTYPES = {
    np.dtype(np.float64),
    np.dtype(np.int64),
    np.dtype(np.bool_),
    np.dtype(np.complex128),
}


def schedule_field(**kwargs: Any) -> Any:
    """A :func:`static_field` that sets how work is split (a batch size), not what is computed:
    part of the value identity (it selects the compiled program), but keyed at its default by
    :func:`result_digest`. It needs a default."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["schedule"] = True
    return static_field(metadata=metadata, **kwargs)


def static_field(**kwargs: Any) -> Any:
    """A dataclass field kept in the pytree's static (auxiliary) data instead of as a leaf.

    Use it for configuration that selects code rather than values fed to it: term counts,
    switches, names, host boolean masks.
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


# --------------------------------------------------------------------------------------------
# canonical values and keys


def _is_frozen(arr: np.ndarray) -> bool:
    base: object = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return type(base) is bytes and not arr.flags.writeable and arr.flags.c_contiguous


def frozen_array(arr: np.ndarray) -> np.ndarray:
    """A C-ordered copy of ``arr`` (same dtype, shape and subclass) that cannot be made
    writeable again: its memory belongs to an immutable ``bytes`` object, so numpy refuses
    ``setflags(write=True)`` on it, on its views and on their bases. (A read-only array that
    owns its memory, or a view of one, can be switched back with ``setflags`` on it or on its
    ``base``.) A C-contiguous array already frozen this way is returned as it is."""
    if _is_frozen(arr):
        return arr
    out = np.frombuffer(arr.tobytes(), dtype=arr.dtype).reshape(arr.shape)
    return out if type(arr) is np.ndarray else out.view(type(arr))  # a Batched column stays one


def canonical(value: Any, name: str = "value") -> Any:
    """The stored form of a field value: frozen array copies, tuples for lists."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"{name}: object arrays have no value identity; use a numeric dtype")
        return frozen_array(value)
    if isinstance(value, np.generic) and value.dtype in _PY_SCALAR_DTYPES:
        return value.item()
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v, f"{name}[{i}]") for i, v in enumerate(value))
    if isinstance(value, (dict, set)) or (
        callable(value) and not isinstance(value, (type, ValueIdentity)) and not is_jax_array(value)
    ):
        value_key(value, name)  # raises with the reason
    return value


def _array_key(arr: np.ndarray) -> tuple:
    return ("ndarray", arr.dtype.str, arr.shape, np.ascontiguousarray(arr).tobytes())


def _float_key(tag: str, value: Any) -> tuple:
    if value != value:  # every NaN is one value
        return (tag, "nan")
    return (tag, np.asarray(value).tobytes())


def value_key(value: Any, name: str = "value") -> Any:
    """A hashable key that is equal for two values exactly when they are the same value.

    Raises TypeError, naming ``name``, for values without a value identity (tracers, callables,
    dicts, unhashable objects).
    """
    if value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, enum.Enum):
        return ("enum", type(value), value.value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return _float_key("float", value)
    if isinstance(value, complex):
        return ("complex", _float_key("re", value.real), _float_key("im", value.imag))
    if isinstance(value, np.ndarray):
        return _array_key(value)
    if isinstance(value, np.generic):  # numpy scalars other than the canonical Python ones
        if value.dtype.kind == "f":
            return _float_key(value.dtype.str, value)
        return (value.dtype.str, value.tobytes())
    if isinstance(value, tuple):
        return ("tuple", tuple(value_key(v, f"{name}[{i}]") for i, v in enumerate(value)))
    if isinstance(value, frozenset):
        return ("frozenset", frozenset(value_key(v, name) for v in value))
    if isinstance(value, ValueIdentity):
        return ("object", value._value_key())
    if isinstance(value, type):
        return ("type", value)
    if is_tracer(value):
        raise TypeError(
            f"{name} holds a JAX tracer; an object with traced fields has no value identity. "
            "Pass such objects to jit as pytree arguments, not as static arguments"
        )
    if is_jax_array(value):
        return _array_key(np.asarray(value))
    if isinstance(value, (dict, list, set)):
        raise TypeError(
            f"{name} is a {type(value).__name__}, which is mutable; use a tuple "
            "(of (name, value) pairs for a mapping)"
        )
    if callable(value):
        raise TypeError(
            f"{name} is a callable ({value!r}); functions hash by identity, so every rebuilt "
            "object would recompile. Parameterise by data, or make the behaviour a method of "
            "a subclass"
        )
    cls = type(value)
    if (
        cls.__hash__ is not None
        and cls.__hash__ is not object.__hash__
        and (cls.__eq__ is not object.__eq__)
    ):
        return ("hashable", cls, value)
    raise TypeError(
        f"{name} has type {cls.__name__}, which does not compare by value; use numbers, "
        "strings, tuples, numpy arrays or value-identity objects"
    )


#: The module each moved class lived in when digests were first written into users' files
#: (checkpoint records, finished results' fingerprints): a digest names a class by that first
#: home, so that moving code between modules never makes a user's run look changed.
_FIRST_HOMES = {
    "twinlens.imaging.dataset": "twinlens.fit.imaging",
    "twinlens.imaging.fits_io": "twinlens.fit.fits_io",
    "twinlens.imaging.noise": "twinlens.fit.noise",
    "twinlens.imaging.point_images": "twinlens.fit.point_images",
    "twinlens.imaging.psf": "twinlens.fit.psf",
    "twinlens.inversion": "twinlens.fit.pixelised",
    "twinlens.inversion.border": "twinlens.fit.pixelised.border",
    "twinlens.inversion.image_mesh": "twinlens.fit.pixelised.image_mesh",
    "twinlens.inversion.interpolation": "twinlens.fit.pixelised.interpolation",
    "twinlens.inversion.loops": "twinlens.fit.pixelised.loops",
    "twinlens.inversion.mapping": "twinlens.fit.pixelised.mapping",
    "twinlens.inversion.meshes": "twinlens.fit.pixelised.meshes",
    "twinlens.inversion.nnls": "twinlens.fit.nnls",
    "twinlens.inversion.pixelization": "twinlens.fit.pixelised.fit",
    "twinlens.inversion.regularization": "twinlens.fit.pixelised.regularization",
    "twinlens.inversion.solve": "twinlens.fit.pixelised.inversion",
    "twinlens.inversion.source": "twinlens.fit.pixelised.source",
    "twinlens.inversion.triangulation": "twinlens.fit.pixelised.triangulation",
    "twinlens.lensing.fused": "twinlens.fit.fused",
    "twinlens.lensing.lens_equation": "twinlens.fit.lens_equation",
    "twinlens.lensing.lens_equation_loops": "twinlens.fit.lens_equation_loops",
    "twinlens.lensing.multiplane": "twinlens.fit.multiplane",
    "twinlens.lensing.point_sources": "twinlens.fit.point_sources",
    "twinlens.lensing.tracer": "twinlens.fit.tracer",
    "twinlens.likelihood.batched": "twinlens.batch.likelihood",
    "twinlens.likelihood.imaging": "twinlens.fit.likelihood",
    "twinlens.likelihood.joint": "twinlens.batch.joint",
    "twinlens.likelihood.point_source": "twinlens.fit.point_source_likelihood",
}


def _class_text(cls: type) -> str:
    """A class as digests name it: ``repr`` with its first home's module (see above)."""
    module = _FIRST_HOMES.get(cls.__module__, cls.__module__)
    return f"<class '{module}.{cls.__qualname__}'>"


def _feed(hasher: Any, key: Any) -> None:
    """Feed a value key (nested tuples ending in bytes and small reprs) to ``hasher``."""
    if isinstance(key, tuple):
        hasher.update(b"(%d" % len(key))
        for item in key:
            _feed(hasher, item)
        hasher.update(b")")
    elif isinstance(key, bytes):
        hasher.update(b"b%d:" % len(key))
        hasher.update(key)
    else:
        text = (_class_text(key) if isinstance(key, type) else repr(key)).encode()
        hasher.update(b"r%d:" % len(text))
        hasher.update(text)


def key_digest(key: Any, size: int = 16) -> bytes:
    """A digest of a value key (see :func:`value_key`) that is the same in every process
    (unlike ``hash``, which Python salts per process for strings), so a file written by one
    run can say what it was computed from."""
    hasher = hashlib.blake2b(digest_size=size)
    _feed(hasher, key)
    return hasher.digest()


def value_digest(value: Any, name: str = "value", size: int = 16) -> bytes:
    """:func:`key_digest` of ``value``'s value key: equal values give equal digests."""
    return key_digest(value_key(value, name), size)


def result_digest(value: Any, name: str = "value", size: int = 16) -> bytes:
    """:func:`value_digest` with every schedule field (:func:`schedule_field`) keyed at its
    default: a digest of what ``value`` computes, not of how its work is split, so that a
    checkpoint can say what its results came from and a run with another batch size (another
    machine, another default) still resumes it. Equal to :func:`value_digest` when every
    schedule field holds its default."""
    return key_digest(_result_key(value, name), size)


def _result_key(value: Any, name: str) -> Any:
    if isinstance(value, ValueIdentity):
        cls = type(value)
        parts = []
        for f in dataclasses.fields(value):
            field_name = f"{cls.__name__}.{f.name}"
            if f.metadata.get("schedule"):
                parts.append((f.name, value_key(f.default, field_name)))
            else:
                parts.append((f.name, _result_key(getattr(value, f.name), field_name)))
        return ("object", (cls, tuple(parts)))  # the layout of ValueIdentity._value_key
    if isinstance(value, tuple):
        return ("tuple", tuple(_result_key(v, f"{name}[{i}]") for i, v in enumerate(value)))
    return value_key(value, name)


# --------------------------------------------------------------------------------------------
# the mixin


class ValueIdentity:
    """Mixin for ``@dataclass(frozen=True, eq=False)`` classes: equality and hash by value.

    See the module documentation for the rules. Subclasses that define ``__post_init__`` must
    call ``super().__post_init__()`` first.
    """

    _value_identity_classes: ClassVar[list[type]] = []
    if TYPE_CHECKING:  # every subclass is a dataclass: dataclasses.fields and replace accept it
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ValueIdentity._value_identity_classes.append(cls)
        if jax_runtime.is_loaded():
            _register_pytree(cls, jax_runtime.load())

    def __post_init__(self) -> None:
        _check_class(type(self))
        self._canonicalise_fields()

    def _canonicalise_fields(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            stored = canonical(value, f"{type(self).__name__}.{f.name}")
            if stored is not value:
                object.__setattr__(self, f.name, stored)

    # -- identity ----------------------------------------------------------------------------

    def _value_key(self) -> tuple:
        key = self.__dict__.get(_KEY_ATTR)
        if key is None:
            _check_parameters_are_fields(self)
            cls = type(self)
            key = (
                cls,
                tuple(
                    (f.name, value_key(getattr(self, f.name), f"{cls.__name__}.{f.name}"))
                    for f in dataclasses.fields(self)
                ),
            )
            object.__setattr__(self, _KEY_ATTR, key)
        return key

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, ValueIdentity):
            return NotImplemented
        if type(other) is not type(self):
            return False
        return self._value_key() == other._value_key()

    def __hash__(self) -> int:
        return hash(self._value_key())

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop(_KEY_ATTR, None)  # rebuilt on demand after unpickling
        return state

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self._canonicalise_fields()  # unpickled arrays come back writeable


def _own_annotations(cls: type) -> dict:
    ann = inspect.get_annotations(cls)
    return {k: v for k, v in ann.items() if not str(v).startswith(("ClassVar", "typing.ClassVar"))}


_checked_classes: set[type] = set()


def _check_class(cls: type) -> None:
    """Raise unless ``cls`` is a frozen, eq=False dataclass all the way down (cached)."""
    if cls in _checked_classes:
        return
    name = cls.__name__
    for klass in cls.__mro__:
        if klass is ValueIdentity or not issubclass(klass, ValueIdentity):
            continue
        if _own_annotations(klass) and "__dataclass_fields__" not in klass.__dict__:
            raise TypeError(
                f"{klass.__name__} declares fields but is not decorated with "
                "@dataclass(frozen=True, eq=False); its fields would be invisible to its identity"
            )
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{name} must be decorated with @dataclass(frozen=True, eq=False)")
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"{name} must be a frozen dataclass: @dataclass(frozen=True, eq=False)")
    if cls.__eq__ is not ValueIdentity.__eq__ or cls.__hash__ is not ValueIdentity.__hash__:
        raise TypeError(
            f"{name} replaces value equality; declare it @dataclass(frozen=True, eq=False) and "
            "define neither __eq__ nor __hash__"
        )
    _checked_classes.add(cls)


def _check_parameters_are_fields(obj: ValueIdentity) -> None:
    """Raise if ``obj`` keeps a parameter where its key cannot see it."""
    cls = type(obj)
    _check_class(cls)
    field_names = {f.name for f in dataclasses.fields(obj)}
    cached = {
        attr
        for klass in cls.__mro__
        for attr, v in vars(klass).items()
        if isinstance(v, functools.cached_property)
    }
    stray = set(obj.__dict__) - field_names - cached - {_KEY_ATTR}
    if stray:
        raise TypeError(
            f"{cls.__name__} stores {sorted(stray)} outside its dataclass fields (a hand-written "
            "__init__?); objects with different values there would share one identity and one "
            "compiled program. Declare them as fields"
        )
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, list) or (isinstance(value, np.ndarray) and value.flags.writeable):
            raise TypeError(
                f"{cls.__name__}.{f.name} was not canonicalised: a __post_init__ in "
                f"{cls.__name__} must call super().__post_init__() first"
            )


# --------------------------------------------------------------------------------------------
# JAX pytrees


class _Static:
    """Wraps a static value so that pytree auxiliary data hashes and compares by value."""

    __slots__ = ("key", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.key = value_key(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Static) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Static({self.value!r})"


def _leaf_and_static_names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    fields = dataclasses.fields(cls)
    static = tuple(f.name for f in fields if f.metadata.get("static"))
    leaves = tuple(f.name for f in fields if not f.metadata.get("static"))
    return leaves, static


def _register_pytree(cls: type, jax: Any) -> None:
    def flatten(obj: Any) -> tuple[tuple, tuple]:
        _check_parameters_are_fields(obj)
        leaves, static = _leaf_and_static_names(type(obj))
        children = tuple(getattr(obj, n) for n in leaves)
        aux = tuple((n, _Static(getattr(obj, n))) for n in static)
        return children, aux

    def unflatten(aux: tuple, children: tuple) -> Any:
        obj: Any = object.__new__(cls)
        leaves, _ = _leaf_and_static_names(cls)
        for n, v in zip(leaves, children, strict=True):
            object.__setattr__(obj, n, v)
        for n, s in aux:
            object.__setattr__(obj, n, s.value)
        return obj

    try:
        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
    except ValueError:  # already registered
        pass


def _register_all(jax: Any) -> None:
    for cls in list(ValueIdentity._value_identity_classes):
        _register_pytree(cls, jax)


jax_runtime.on_load(_register_all)
if "jax" in sys.modules:  # the user imported jax first: make our classes usable with it at once
    _register_all(sys.modules["jax"])


# --------------------------------------------------------------------------------------------
# plain data tuples


def _is_static_value(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype == np.bool_
    return x is None or isinstance(x, (bool, int, str))


def partition_static(data: Any) -> tuple[list, Any]:
    """Split nested tuples/lists into traced leaves and a hashable static skeleton.

    Host numpy boolean arrays (masks), Python ints, bools, strings and None are static; every
    other value (float arrays, integer index arrays, floats, JAX arrays) is a leaf.
    :func:`combine_static` inverts it.
    """
    leaves: list = []

    def walk(x: Any) -> Any:
        if isinstance(x, (tuple, list)):
            return ("seq", isinstance(x, list), tuple(walk(v) for v in x))
        if _is_static_value(x):
            return ("static", _Static(canonical(x)))
        leaves.append(x)
        return ("leaf",)

    return leaves, walk(data)


def combine_static(leaves: list | tuple, skeleton: Any) -> Any:
    """Rebuild the data that :func:`partition_static` split."""
    it = iter(leaves)

    def build(node: Any) -> Any:
        kind = node[0]
        if kind == "seq":
            items = [build(child) for child in node[2]]
            return items if node[1] else tuple(items)
        if kind == "static":
            return node[1].value
        return next(it)

    return build(skeleton)

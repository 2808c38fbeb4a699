"""Bad parameter values and read-only fields (issue 14, items 2 and 4).

Every mass and light constructor is fed non-numeric, boolean, complex, extreme and subnormal
values, one field at a time on a valid profile: each either raises a TypeError or ValueError
that names the field, or builds a profile whose every quantity is finite (the documented
ranges are in :mod:`twinlens.profiles.checks`). Values that are no real number, not finite, or
beyond ``MAX_MAGNITUDE`` must always raise. Then each reproducer of the issue, and the
read-only guarantees: stored arrays (fields and memo recalls) cannot be made writeable again.

Finiteness is checked on the numpy backend, which runs the same per-point math as numba (one
source per kernel) without a compile per new type; the reproducers that the issue saw on numba
run there too.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from profile_values import ALL, C, E, profile_classes

import twinlens.light as light
import twinlens.mass as mass
from twinlens import memo
from twinlens.backend import jax_runtime
from twinlens.backend.concrete import batched
from twinlens.profiles.checks import MAX_MAGNITUDE, collect_validity

#: One valid profile per constructor, away from every boundary; the multipoles at the even and
#: odd orders this test probed before the shared values (whose orders are odd) existed.
BASE = {
    **ALL,
    "EllipticalMultipole": dataclasses.replace(ALL["EllipticalMultipole"], m=4),
    "Multipole": dataclasses.replace(ALL["Multipole"], m=3),
}

#: Points near the centre, at a few arcsec and far outside (none exactly on a centre).
XY = np.array([[0.3, -0.7], [1.5, 2.0], [-4.0, 0.1], [0.021, -0.03], [40.0, -25.0]])

#: Values that are never a real number.
NOT_NUMBERS = [
    None,
    "2.0",
    "",
    b"1",
    True,
    False,
    np.bool_(True),
    np.array(False),
    1j,
    2.0 + 0j,
    complex(math.nan, 0.0),
    np.complex128(1.0),
    np.array(1.0 + 0j),
    np.array([1.0 + 1j]),
    np.array("1.0"),
    np.array(None, dtype=object),
    object(),
    Fraction(1, 2),
    Decimal("1.5"),
    [],
    {"value": 1.0},
    {1.0},
]
#: Real numbers at and beyond the edges: overflow, subnormals, the ranges' own ends.
EXTREMES = [
    1e308,
    -1e308,
    math.inf,
    -math.inf,
    math.nan,
    1e-320,
    -1e-320,
    5e-324,
    2.2250738585072014e-308,
    MAX_MAGNITUDE,
    -MAX_MAGNITUDE,
    1.0000000000000002e100,
    1e30,
    1.0000000000000002e30,
    1e-30,
    9.999999999999999e-31,
    1e-40,
    1e40,
    0.0,
    -0.0,
    1.0 - 1e-16,
    1.0 - 1e-6,
    3.0 - 1e-16,
    1e4,
    10**400,
    -(10**400),
    2**63,
    np.float32(3e38),
    np.int64(-7),
]


def _never_valid(value) -> bool:
    """True for values every numeric field must refuse."""
    if isinstance(value, (bool, np.bool_, complex, str, bytes)) or value is None:
        return True
    if isinstance(value, (int, np.integer)):
        return abs(int(value)) > MAX_MAGNITUDE
    if isinstance(value, (float, np.floating)):
        return not abs(float(value)) <= MAX_MAGNITUDE  # NaN included
    return True  # arrays, containers, other objects: no scalar number


bad_values = st.one_of(
    st.sampled_from(NOT_NUMBERS),
    st.sampled_from(EXTREMES),
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.complex_numbers(),
)


def _profiles() -> list[str]:
    return sorted(profile_classes())


def test_every_constructor_has_a_base_profile():
    assert profile_classes() == set(BASE)


def _finite(profile) -> bool:
    if isinstance(profile, mass.MassProfile):
        out = [
            profile.deflections(XY, "numpy"),
            profile.convergence(XY, "numpy"),
            profile.potential(XY, "numpy"),
            profile.hessian(XY, "numpy"),
        ]
    else:
        out = [profile.image(XY, "numpy")]
    return all(np.all(np.isfinite(np.asarray(o))) for o in out)


@st.composite
def replacements(draw, base):
    """``(field, replacement, must_fail)``: one field of ``base`` given a bad value (the whole
    field, or one entry of a pair or an array)."""
    field = draw(st.sampled_from(dataclasses.fields(base)))
    current = getattr(base, field.name)
    value = draw(bad_values)
    whole = draw(st.booleans())
    if field.name == "profiles":  # MassSum: no number is a mass profile
        return field.name, (value if whole else (value,)), True
    if isinstance(current, int) and field.metadata.get("static"):  # an order or a term count
        must_fail = not isinstance(value, (int, np.integer)) or isinstance(value, bool)
        return field.name, value, must_fail
    if isinstance(current, (tuple, np.ndarray)) and not whole:
        entries = list(current)
        entries[draw(st.integers(0, len(entries) - 1))] = value
        return field.name, tuple(entries), _never_valid(value)
    return field.name, value, _never_valid(value) or isinstance(current, (tuple, np.ndarray))


@pytest.mark.parametrize("name", sorted(BASE))
@given(data=st.data())
def test_a_bad_value_raises_naming_the_field_or_gives_finite_results(name, data):
    base = BASE[name]
    field, replacement, must_fail = data.draw(replacements(base))
    qualified = f"{name}.{field}"
    try:
        with np.errstate(all="ignore"):
            profile = dataclasses.replace(base, **{field: replacement})
    except (TypeError, ValueError) as err:
        assert qualified in str(err), f"{replacement!r}: {err}"
        return
    assert not must_fail, f"{qualified}={replacement!r} was accepted"
    with np.errstate(all="ignore"):
        assert _finite(profile), f"{qualified}={replacement!r} gives non-finite results"


# -- the reproducers (item 2) ------------------------------------------------------------


def test_none_is_refused_naming_the_parameter():
    # was [[nan, nan]] on numba, with no error
    with pytest.raises(TypeError, match=r"SIS\.einstein_radius must be a real number > 0"):
        mass.SIS(einstein_radius=None)


def test_a_string_is_refused_naming_the_parameter():
    # was computed on numba and refused on JAX
    with pytest.raises(TypeError, match=r"SIS\.einstein_radius .* got '2\.0' \(of type str\)"):
        mass.SIS(einstein_radius="2.0")


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: mass.SIS(einstein_radius=True), r"SIS\.einstein_radius"),
        (lambda: mass.SIE(ell_comps=(False, 0.1)), r"SIE\.ell_comps"),
        (lambda: light.Sersic(intensity=np.bool_(True)), r"Sersic\.intensity"),
        (lambda: mass.MGE((True, 0.5), (1.0, 1.0)), r"MGE\.sigmas\[0\]"),
        (lambda: mass.MGE(np.array([True]), np.array([1.0])), r"MGE\.sigmas"),
    ],
)
def test_booleans_are_not_numbers(build, name):
    with pytest.raises(TypeError, match=name + r".* \(a boolean|of boolean dtype\)"):
        build()


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: mass.SIS(einstein_radius=1.0 + 0j), r"SIS\.einstein_radius"),
        (lambda: mass.PowerLaw(slope=np.complex128(2.0)), r"PowerLaw\.slope"),
        (lambda: mass.SIE(centre=(0.0, 1j)), r"SIE\.centre"),
        (lambda: mass.MGE((0.1, 0.2 + 0j), (1.0, 1.0)), r"MGE\.sigmas\[1\]"),
        (lambda: light.MGELight(np.array([0.1 + 0j]), np.array([1.0])), r"MGELight\.sigmas"),
    ],
)
def test_complex_values_are_refused_naming_the_parameter(build, name):
    with pytest.raises(TypeError, match=name + r" must be a real number"):
        build()


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: mass.SIS(einstein_radius=1e308), r"SIS\.einstein_radius must be > 0"),
        (lambda: mass.ExternalShear(gamma_1=1e308), r"ExternalShear\.gamma_1 must be finite"),
        (lambda: light.Sersic(intensity=-1e308), r"Sersic\.intensity must be finite"),
        (lambda: mass.SIS(centre=(10**400, 0.0)), r"SIS\.centre must be finite"),
    ],
)
def test_overflowing_values_are_refused(build, name):
    with pytest.raises(ValueError, match=name):
        build()


def test_an_ellipticity_a_rounding_error_below_one_is_refused():
    # |e| = 1 - 1e-16 (q ~ 5e-17) gave an infinite potential
    with pytest.raises(ValueError, match=r"SIE\.ell_comps must satisfy .* q >= 5e-07"):
        mass.SIE(ell_comps=(1.0 - 1e-16, 0.0))
    with pytest.raises(ValueError, match=r"Gaussian\.ell_comps"):
        mass.Gaussian(ell_comps=(0.0, -(1.0 - 1e-8)))
    # the smallest axis ratio accepted directly converts to an accepted ellipticity
    p = mass.Gaussian.from_axis_ratio(q=1e-6, angle=30.0)
    with np.errstate(all="ignore"):
        assert _finite(p)
    with pytest.raises(ValueError, match=r"axis ratio q must be in \(0, 1\], at least 1e-06"):
        mass.SIE.from_axis_ratio(q=1e-7)


def test_a_huge_sersic_index_is_refused_at_construction():
    # was accepted, and failed at evaluation with a message about MGE intensities
    with pytest.raises(ValueError, match=r"SersicMass\.sersic_index must be in \[0\.5, 10\]"):
        mass.SersicMass(sersic_index=1e4)


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: mass.NFW(scale_radius=1e-320), r"NFW\.scale_radius"),
        (lambda: mass.GNFW(r_s=1e-320), r"GNFW\.r_s"),
        (lambda: mass.Gaussian(sigma=5e-324), r"Gaussian\.sigma"),
        (lambda: mass.NIE(core_radius=1e-320), r"NIE\.core_radius"),
    ],
)
def test_subnormal_scales_are_refused_with_the_range(build, name):
    # were accepted, and failed (or gave NaN) only at evaluation
    with pytest.raises(ValueError, match=name + r" must be .* \[1e-30, 1e\+30\]"):
        build()


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: mass.Multipole(m=10**400), r"Multipole\.m must be an integer >= 1 and <= 100"),
        (lambda: mass.NFW(ell_comps=E, n_gaussians=10**6), r"NFW\.n_gaussians must be an int"),
        (lambda: mass.MassSum(profiles=1.0), r"MassSum\.profiles must be a tuple"),
    ],
)
def test_static_counts_and_parts_are_bounded(build, name):
    with pytest.raises(ValueError, match=name):
        build()


@pytest.mark.parametrize("backend", ["numba", "numpy", "jax"])
def test_complex_coordinates_are_refused(backend):
    # numba and numpy dropped the imaginary part with no word
    xy = np.array([[0.5 + 0.5j, 0.2], [1.0, -0.3]])
    with pytest.raises(TypeError, match=r"xy must hold real numbers .* complex128"):
        mass.SIS().deflections(xy, backend)
    with pytest.raises(TypeError, match=r"xy must hold real numbers"):
        light.Sersic().image(xy, backend)


def test_traced_and_batched_parameters_still_pass():
    jax = jax_runtime.load()
    jnp = jax.numpy
    xy = jnp.asarray(XY[:2])
    traced = jax.jit(lambda t: mass.SIE(C, E, t).deflections(xy))(0.8)
    np.testing.assert_allclose(traced, mass.SIE(C, E, 0.8).deflections(XY[:2], "numpy"))
    with pytest.raises(TypeError, match=r"SIS\.einstein_radius .*of complex dtype"):
        jax.jit(lambda t: mass.SIS(C, t).deflections(xy))(jnp.complex128(1.0))
    # a batch records each member's validity instead of raising
    with collect_validity() as conditions:
        mass.SIS(C, batched([0.8, -1.0, 1e-320, 1e308]))
    assert np.asarray(conditions).reshape(-1).tolist() == [True, False, False, False]


# -- read-only fields and recalls (item 4) -------------------------------------------------------


def _cannot_thaw(arr: np.ndarray) -> None:
    """No route back to a writeable array: the array, its views, its bases."""
    assert not arr.flags.writeable
    routes = [arr, arr[...], arr.view()]
    base = arr.base
    while isinstance(base, np.ndarray):
        routes.append(base)
        base = base.base
    for a in routes:
        with pytest.raises(ValueError):
            a.setflags(write=True)


def _array_fields(profile):
    return [
        f.name
        for f in dataclasses.fields(profile)
        if isinstance(getattr(profile, f.name), np.ndarray)
    ]


@pytest.mark.parametrize("name", sorted(n for n in BASE if _array_fields(BASE[n])))
def test_array_fields_cannot_be_made_writeable(name):
    profile = dataclasses.replace(BASE[name])
    key = hash(profile)
    for field in _array_fields(profile):
        _cannot_thaw(getattr(profile, field))
    assert hash(profile) == key
    assert profile == BASE[name]


def test_edits_after_a_jit_compile_are_impossible():
    # the probe: thaw m.sigmas, edit it, and a jit cache keyed on the old hash served the old
    # program (82% wrong)
    jax = jax_runtime.load()
    m = mass.MGE(np.array([0.2, 0.5]), np.array([1.0, 0.5]))
    f = jax.jit(lambda p, xy: p.deflections(xy), static_argnums=0)
    before = np.asarray(f(m, XY))
    with pytest.raises(ValueError):
        m.sigmas.setflags(write=True)
    with pytest.raises(ValueError):
        m.sigmas[0] = 3.0
    assert np.array_equal(np.asarray(f(m, XY)), before)
    assert m == mass.MGE(np.array([0.2, 0.5]), np.array([1.0, 0.5]))


def test_frozen_fields_survive_pickling_and_batches():
    m = mass.MGE(np.array([0.2, 0.5]), np.array([1.0, 0.5]))
    again = pickle.loads(pickle.dumps(m))
    assert again == m and hash(again) == hash(m)
    _cannot_thaw(again.sigmas)
    col = mass.SIS(C, batched([0.8, 1.0])).einstein_radius
    assert type(col).__name__ == "Batched"
    _cannot_thaw(col)


@pytest.fixture
def _fresh_memo(monkeypatch):
    monkeypatch.delenv(memo.ENV_SWITCH, raising=False)
    memo.clear()
    yield
    memo.clear()


@pytest.mark.usefixtures("_fresh_memo")
@pytest.mark.parametrize("quantity", ["deflections", "image"])
def test_a_level_1_recall_cannot_be_thawed(quantity):
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-1, 1, 50), rng.uniform(-1, 1, 50)
    if quantity == "image":
        profile = light.Sersic(C, E, 0.3, 2.5, 1.0)
        evaluate = lambda p, x, y, b: p._image(x, y, b)  # noqa: E731
    else:
        profile = mass.SIE(C, E, 0.8)
        evaluate = lambda p, x, y, b: p._deflections(x, y, b)  # noqa: E731
    first = memo.recall(profile, quantity, x, y, "numba", evaluate)
    assert first.level == 1
    _cannot_thaw(first.stored)
    value = first.value("numba")
    for part in value if isinstance(value, tuple) else (value,):
        _cannot_thaw(part)
    again = memo.recall(profile, quantity, x, y, "numba", evaluate)
    assert again.stored.tobytes() == first.stored.tobytes()
    assert memo.stats()["hits"] == 1

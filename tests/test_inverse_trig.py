"""arctan(z)/z and arctanh(z)/z against 30-digit mpmath, with their derivatives."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from twinlens.backend import BACKENDS, jax_runtime
from twinlens.kernels import inverse_trig, registry
from twinlens.kernels.inverse_trig import ATANH_SWITCH, arctan_ratio, arctanh_ratio

jax = jax_runtime.load()

Z_ATAN = np.concatenate([np.linspace(-30, 30, 601), np.geomspace(1e-300, 1e-3, 30), [1e3]])
Z_ATANH = np.concatenate(
    [
        np.linspace(-0.99995, 0.99995, 601),
        np.geomspace(1e-300, 1e-3, 30),
        np.nextafter(ATANH_SWITCH, [0.0, 1.0]),  # both sides of the switch to the logarithm
        [ATANH_SWITCH, -ATANH_SWITCH, 1.0 - 1e-12],
    ]
)


def _mp(fn, z):
    with mp.workdps(30):
        return np.array([float(fn(mp.mpf(v)) / mp.mpf(v)) if v else 1.0 for v in z])


@pytest.mark.parametrize("backend", BACKENDS)
def test_values_against_mpmath(backend):
    ref = _mp(mp.atan, Z_ATAN)
    out = registry.get("inverse_trig.arctan_ratio")(Z_ATAN, backend=backend)
    assert np.max(np.abs(np.asarray(out) / ref - 1)) < 1e-15  # a few ulp
    ref = _mp(mp.atanh, Z_ATANH)
    out = registry.get("inverse_trig.arctanh_ratio")(Z_ATANH, backend=backend)
    assert np.max(np.abs(np.asarray(out) / ref - 1)) < 1e-15


def test_derivatives_are_smooth_through_zero():
    # d/dz [arctan(z)/z] = 1/(z (1 + z^2)) - arctan(z)/z^2, -> 0 at z = 0 (odd); likewise arctanh
    for fn, mp_fn, z in (
        (arctan_ratio, mp.atan, np.array([0.0, 1e-12, 1e-4, 0.3, -2.0, 40.0])),
        (arctanh_ratio, mp.atanh, np.array([0.0, 1e-12, 0.3, 0.5, -0.5 - 1e-12, -0.9, 0.999])),
    ):
        grad = np.asarray(jax.vmap(jax.grad(fn))(jax.numpy.asarray(z)))
        with mp.workdps(30):
            ref = [
                float(mp.diff(lambda t, f=mp_fn: f(t) / t if t else mp.mpf(1), mp.mpf(v)))
                if v
                else 0.0
                for v in z
            ]
        np.testing.assert_allclose(grad, ref, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    ("coefficients", "fn", "upper"),
    [(inverse_trig._ATAN, mp.atan, 1), (inverse_trig._ATANH, mp.atanh, 0.25)],
    ids=["arctan", "arctanh"],
)
def test_polynomials_are_the_stated_fits(coefficients, fn, upper):
    """The coefficients are mpmath's Chebyshev fit of fn(sqrt(x)) / sqrt(x) on [0, upper], and
    that fit is within 1e-17 of the function (a tenth of an ulp of values near 1)."""
    with mp.workdps(40):

        def f(x):
            return fn(mp.sqrt(x)) / mp.sqrt(x) if x else mp.mpf(1)

        poly, err = mp.chebyfit(f, [0, upper], len(coefficients), error=True, asc=True)
    assert err < 1e-17
    np.testing.assert_allclose(coefficients, [float(c) for c in poly], rtol=1e-12)

"""The first kernels against independent facts: closed forms, inverses, invariants."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from twinlens.backend import BACKENDS
from twinlens.kernels import ellipticity, geometry

finite = st.floats(-10, 10, allow_nan=False, allow_subnormal=False)
angle = st.floats(-np.pi, np.pi, allow_nan=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quarter_turn_closed_form(backend):
    frame = geometry.to_profile_frame.__name__
    from twinlens.kernels import get

    xr, yr = get(f"geometry.{frame}")(np.array([1.5]), np.array([0.5]), 0.5, 0.5, np.pi / 2,
                                      backend=backend)  # fmt: skip
    # the major axis along +y: sky (+1, 0) from the centre is at angle -90 deg in the frame
    np.testing.assert_allclose([float(xr[0]), float(yr[0])], [0.0, -1.0], atol=1e-15)


@given(finite, finite, finite, finite, angle)
def test_frame_round_trip_and_norm(x, y, cx, cy, phi):
    xr, yr = geometry.to_profile_frame(np.array([x]), np.array([y]), cx, cy, phi)
    assert np.hypot(xr, yr)[0] == pytest.approx(np.hypot(x - cx, y - cy), rel=1e-14, abs=1e-14)
    bx, by = geometry.from_profile_frame(xr, yr, phi)
    assert bx[0] + cx == pytest.approx(x, abs=1e-13)
    assert by[0] + cy == pytest.approx(y, abs=1e-13)


def test_frame_against_mpmath():
    mpmath.mp.dps = 40
    x, y, cx, cy, phi = 3.7, -1.25, 0.05, -0.02, 0.5235987755982988
    xr, yr = geometry.to_profile_frame(x, y, cx, cy, phi)
    c, s = mpmath.cos(phi), mpmath.sin(phi)
    exact_x = c * (mpmath.mpf(x) - cx) + s * (mpmath.mpf(y) - cy)
    exact_y = c * (mpmath.mpf(y) - cy) - s * (mpmath.mpf(x) - cx)
    assert float(xr) == pytest.approx(float(exact_x), rel=1e-15)
    assert float(yr) == pytest.approx(float(exact_y), rel=1e-15)


def test_ellipticity_convention_closed_form():
    # q = 0.5 along x: f = 1/3; rotated by 45 deg all ellipticity moves to e2
    e1, e2 = ellipticity.ellipticity_from_axis_ratio(0.5, 0.0)
    assert (float(e1), float(e2)) == (pytest.approx(1 / 3, rel=1e-15), 0.0)
    e1, e2 = ellipticity.ellipticity_from_axis_ratio(0.5, np.pi / 4)
    assert float(e1) == pytest.approx(0.0, abs=1e-16)
    assert float(e2) == pytest.approx(1 / 3, rel=1e-15)


@given(st.floats(0.05, 1.0), st.floats(-np.pi / 2 + 1e-9, np.pi / 2))
def test_ellipticity_round_trip(q, phi):
    e1, e2 = ellipticity.ellipticity_from_axis_ratio(q, phi)
    q2, phi2 = ellipticity.axis_ratio_from_ellipticity(e1, e2)
    assert float(q2) == pytest.approx(q, rel=1e-14)
    if q < 1 - 1e-6:  # the angle is meaningless for a round profile
        # angles are defined modulo pi
        d = (float(phi2) - phi + np.pi / 2) % np.pi - np.pi / 2
        assert abs(d) < 1e-9 / (1 - q)


def test_round_profile_has_zero_angle_and_signed_zero_is_one_angle():
    q, phi = ellipticity.axis_ratio_from_ellipticity(0.0, 0.0)
    assert (float(q), float(phi)) == (1.0, 0.0)
    _, phi_pos = ellipticity.axis_ratio_from_ellipticity(-0.3, 0.0)
    _, phi_neg = ellipticity.axis_ratio_from_ellipticity(-0.3, -0.0)
    assert float(phi_pos) == float(phi_neg) == pytest.approx(np.pi / 2)

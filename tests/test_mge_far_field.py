"""The MGE's elliptical deflections on numba, whose far components are summed as one series
(:mod:`twinlens.kernels.mge_far_field`), against independent references."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from references import gaussian_deflection

from twinlens.kernels import mge, mge_far_field
from twinlens.kernels.ellipticity import ellipticity_from_axis_ratio
from twinlens.mass import MGE


def _series_error(r2_values, n_terms):
    # worst |series - w| / |w| over |z|^2 in r2_values, arg z in [0, pi] (mpmath's w at 30 digits)
    coef = mge_far_field.series_coefficients(n_terms)  # c_n / sqrt(pi)
    worst = 0.0
    with mp.workdps(30):
        for r2 in r2_values:
            for angle in np.linspace(0.0, np.pi, 41):
                z = np.sqrt(r2) * np.exp(1j * angle)
                series = 1j / z * sum(c / z ** (2 * n) for n, c in enumerate(coef))
                zm = mp.mpc(z.real, z.imag)
                exact = complex(mp.exp(-(zm**2)) * mp.erfc(-1j * zm))
                worst = max(worst, abs(series - exact) / abs(exact))
    return worst


def test_the_asymptotic_series_holds_where_it_is_used():
    far = mge_far_field.FAR_Z2
    r2 = [far, 1.1 * far, 2 * far, 10 * far, 1e4]
    assert _series_error(r2, mge_far_field.N_SERIES) < 2e-15  # Weideman's own: 2e-15
    # and the check can fail: half the terms leave 3e-11 at |z|^2 = 64
    assert _series_error([far], mge_far_field.N_SERIES // 2) > 1e-12


SIGMAS = np.geomspace(0.004, 6.0, 10)
KAPPAS = np.linspace(1.5, 0.2, 10)
Q, PHI, CENTRE = 0.6, 0.7, (0.1, -0.2)
E1, E2 = (float(e) for e in ellipticity_from_axis_ratio(Q, PHI))


def _n_far(x, y):
    # each point's number of far components (the rule of _deflections_block, restated)
    one_m_q2 = 1.0 - Q * Q
    p = np.sqrt(Q) / np.sqrt(2.0 * one_m_q2)
    dx, dy = x - CENTRE[0], y - CENTRE[1]
    a = np.cos(PHI) * dx + np.sin(PHI) * dy
    b = np.cos(PHI) * dy - np.sin(PHI) * dx
    zeta2 = p * p * (a * a + b * b)
    damp2 = p * p * (one_m_q2 * a * a + (1 / Q**2 - 1) * b * b)
    bound = np.minimum(zeta2 / mge_far_field.FAR_Z2, damp2 / mge_far_field.DAMP_CUT)
    return (SIGMAS[None, :] ** 2 <= bound[:, None]).sum(axis=1)


def _shajib_mpmath(x, y, sigma, kappa0):
    # one component by Shajib (2019), eq. 4.12-4.15, in mpmath at 30 digits (w through erfc)
    with mp.workdps(30):
        q, phi = mp.mpf(Q), mp.mpf(PHI)
        dx, dy = mp.mpf(x) - CENTRE[0], mp.mpf(y) - CENTRE[1]
        xp = mp.cos(phi) * dx + mp.sin(phi) * dy
        yp = mp.cos(phi) * dy - mp.sin(phi) * dx
        p = mp.sqrt(q) / (mp.sqrt(2 * (1 - q * q)) * sigma)
        z1 = mp.mpc(p * xp, p * abs(yp))
        z2 = mp.mpc(q * p * xp, p * abs(yp) / q)
        w1, w2 = (mp.exp(-(z**2)) * mp.erfc(-1j * z) for z in (z1, z2))
        damp = mp.exp(-((p * xp) ** 2) * (1 - q * q) - (p * yp) ** 2 * (1 / q**2 - 1))
        pref = kappa0 * sigma * mp.sqrt(q) * mp.sqrt(2 * mp.pi / (1 - q * q))
        ax = pref * (w1.imag - damp * w2.imag)
        ay = pref * (w1.real - damp * w2.real) * (1 if yp >= 0 else -1)
        return mp.cos(phi) * ax - mp.sin(phi) * ay, mp.sin(phi) * ax + mp.cos(phi) * ay


def test_deflections_match_each_component_at_30_digits():
    # points from the centre to where every component is far, on and off the axes
    radii = [0.0, 1e-3, 0.05, 0.3, 1.0, 3.0, 9.0, 40.0, 300.0]
    angles = [0.0, PHI, PHI + np.pi / 2, 2.0]
    x = np.array([CENTRE[0] + r * np.cos(t) for r in radii for t in angles])
    y = np.array([CENTRE[1] + r * np.sin(t) for r in radii for t in angles])
    counts = _n_far(x, y)
    assert counts.min() == 0 and counts.max() == len(SIGMAS)
    assert np.any((counts > 0) & (counts < len(SIGMAS)))
    profile = MGE(SIGMAS, KAPPAS, CENTRE, (E1, E2))
    got = np.asarray(profile.deflections(np.stack([x, y], axis=-1), backend="numba"))
    ref = np.array(
        [
            [
                float(sum(v))
                for v in zip(
                    *(_shajib_mpmath(xi, yi, s, k) for s, k in zip(SIGMAS, KAPPAS, strict=True)),
                    strict=True,
                )
            ]
            for xi, yi in zip(x, y, strict=True)
        ]
    )
    norm = np.hypot(ref[:, 0], ref[:, 1])
    err = np.hypot(*(got - ref).T)
    # relative to |alpha|, with a floor of 1e-14 of the deflection scale sum kappa sigma at the
    # centre (alpha -> 0 there, where Shajib's two terms cancel)
    assert np.all(err <= 1e-13 * norm + 1e-14 * np.sum(KAPPAS * SIGMAS))
    # the homoeoid integral (an independent formula) at two points, one with far components
    assert counts[27] > 0
    for i in (9, 27):
        hom = np.sum(
            [
                gaussian_deflection(x[i] - CENTRE[0], y[i] - CENTRE[1], E1, E2, s, k)
                for s, k in zip(SIGMAS, KAPPAS, strict=True)
            ],
            axis=0,
        )
        assert np.hypot(*(got[i] - hom)) <= 1e-12 * np.hypot(*hom)


def _generic(x, y, q, phi, sigmas, kappas, cx=0.0, cy=0.0):
    # every component by Shajib's two Faddeeva terms: the registry's numpy path
    return mge.DEFLECTIONS_ELLIPTICAL(x, y, cx, cy, q, phi, sigmas, kappas, backend="numpy")


@pytest.mark.parametrize("q", [0.05, 0.5, 0.97])
def test_extreme_inputs_agree_with_every_component_by_faddeeva(q):
    sigmas = np.array([1e-30, 1e-3, 0.2, 5.0, 1e3, 1e30])
    kappas = np.array([1.0, -0.5, 2.0, 1.0, 0.3, 1e-5])
    r = np.array([0.0, 1e-200, 1e-12, 1e-3, 0.1, 2.0, 50.0, 1e5, 1e40, 1e250])
    x = np.ascontiguousarray(np.concatenate([r, -0.6 * r, 0.0 * r]))
    y = np.ascontiguousarray(np.concatenate([0.0 * r, 0.8 * r, -r]))
    got = mge.DEFLECTIONS_ELLIPTICAL(x, y, 0.0, 0.0, q, 0.3, sigmas, kappas, backend="numba")
    ref = _generic(x, y, q, 0.3, sigmas, kappas)
    assert np.all(np.isfinite(got))
    norm = np.hypot(*ref)
    err = np.hypot(got[0] - ref[0], got[1] - ref[1])
    # the per-component loop has Weideman's 2e-15 in every term, and cancels near the centre
    assert np.all(err <= 1e-13 * norm + 1e-14 * np.sum(np.abs(kappas) * sigmas) * (norm > 0))
    assert np.all(got[0][(x == 0) & (y == 0)] == 0.0)


def test_nan_in_gives_nan_out():
    x = np.array([np.nan, 1.0, 0.5])
    y = np.array([0.0, np.nan, 0.5])
    ax, ay = mge.DEFLECTIONS_ELLIPTICAL(x, y, 0.0, 0.0, 0.7, 0.2, SIGMAS, KAPPAS, backend="numba")
    assert np.isnan(ax[:2]).all() and np.isnan(ay[:2]).all() and np.isfinite([ax[2], ay[2]]).all()


def test_a_point_does_not_depend_on_its_neighbours():
    # each point's far components, damping test and sum order are its own: the same point gives
    # the same bits alone, shuffled, or in another block and run
    rng = np.random.default_rng(7)
    x = rng.uniform(-8.0, 8.0, 3000)
    y = rng.uniform(-8.0, 8.0, 3000)
    x[:50] *= 1e-3  # runs that mix near and far components
    args = (0.1, -0.2, Q, PHI, SIGMAS, KAPPAS)
    whole = mge.DEFLECTIONS_ELLIPTICAL(x, y, *args, backend="numba")
    order = rng.permutation(x.size)
    shuffled = mge.DEFLECTIONS_ELLIPTICAL(x[order], y[order], *args, backend="numba")
    for w, s in zip(whole, shuffled, strict=True):
        assert np.array_equal(w[order], s)
    for i in (0, 17, 1234, 2999):
        alone = mge.DEFLECTIONS_ELLIPTICAL(x[i : i + 1], y[i : i + 1], *args, backend="numba")
        assert alone[0][0] == whole[0][i] and alone[1][0] == whole[1][i]


def test_components_in_any_order_and_a_batch():
    x = np.linspace(-3.0, 3.0, 700)
    y = np.linspace(2.0, -2.5, 700)
    args = (0.0, 0.0, Q, PHI)
    sorted_ = mge.DEFLECTIONS_ELLIPTICAL(x, y, *args, SIGMAS, KAPPAS, backend="numba")
    order = np.array([3, 9, 0, 5, 1, 8, 2, 7, 4, 6])
    mixed = mge.DEFLECTIONS_ELLIPTICAL(x, y, *args, SIGMAS[order], KAPPAS[order], backend="numba")
    for a, b in zip(sorted_, mixed, strict=True):
        assert np.array_equal(a, b)  # sorted by sigma before anything is summed
    # a batch of two members, (n_batch, K) components: each member as alone
    sig2 = np.stack([SIGMAS, 2 * SIGMAS])
    kap2 = np.stack([KAPPAS, KAPPAS[::-1]])
    for backend in ("numba", "numpy"):
        batch = mge.DEFLECTIONS_ELLIPTICAL(x, y, *args, sig2, kap2, backend=backend)
        for b in range(2):
            alone = mge.DEFLECTIONS_ELLIPTICAL(x, y, *args, sig2[b], kap2[b], backend=backend)
            assert np.array_equal(batch[0][b], alone[0]) and np.array_equal(batch[1][b], alone[1])

"""Sersic, gNFW and cored-NFW mass profiles built on Gaussian decompositions, against direct
numerical integration of their exact convergence."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from twinlens.backend import jax_runtime
from twinlens.kernels import radial
from twinlens.mass import GNFW, CoredNFW, SersicMass
from twinlens.profiles import decomposed

RADII = np.array([0.01, 0.1, 0.5, 1.0, 3.0, 10.0, 20.0])  # in scale radii


def _deflection_3d(density, R):
    # alpha(R) = M_cyl(R) / (pi R), the mass in the cylinder of radius R being that of the
    # sphere plus the outer shells' share: (4 / R) int r^2 rho(r) (1 - sqrt(1 - R^2/r^2)_+) dr
    def shell(r, outer):
        w = 1.0 - np.sqrt(1.0 - (R / r) ** 2) if outer else 1.0
        return r * r * float(density(r)) * w

    opts = {"limit": 400, "epsabs": 0, "epsrel": 1e-11}
    inner = quad(shell, 0, R, args=(False,), **opts)[0]
    outer = quad(shell, R, np.inf, args=(True,), **opts)[0]
    return 4 / R * (inner + outer)


def _spherical_deflection(kappa, R):
    # alpha(R) = (2 / R) int_0^R R' kappa(R') dR'
    return 2 / R * quad(lambda r: r * kappa(r), 0, R, limit=400, epsabs=0, epsrel=1e-11)[0]


def _check(profile, deflection, scale, backend="numba"):
    radii = RADII * scale
    xy = np.stack([radii, np.zeros_like(radii)], axis=-1)
    alpha = np.asarray(profile.deflections(xy, backend=backend))[:, 0]
    ref = np.array([deflection(r) for r in radii])
    np.testing.assert_allclose(alpha, ref, rtol=1e-6)  # the target over 0.01-20 scales


@pytest.mark.parametrize("n", [1.0, 2.0, 4.0, 6.0])
def test_sersic_deflections_match_direct_integration(n):
    p = SersicMass(effective_radius=1.3, sersic_index=n, intensity=0.4, mass_to_light_ratio=2.0)
    kappa = lambda r: 0.8 * float(radial.sersic_convergence(r, 1.0, 1.3, n))  # noqa: E731
    _check(p, lambda R: _spherical_deflection(kappa, R), 1.3)


@pytest.mark.parametrize("gamma", [0.5, 1.0, 1.5, 2.2])
def test_gnfw_deflections_match_direct_integration(gamma):
    p = GNFW(rho_s=0.3, r_s=2.0, gamma=gamma)
    _check(p, lambda R: _deflection_3d(lambda r: radial.gnfw_density(r, 0.3, 2.0, gamma), R), 2.0)


def test_cored_nfw_deflections_match_direct_integration():
    p = CoredNFW(rho_s=0.3, r_s=2.0, r_c=0.4)
    density = lambda r: radial.cored_nfw_density(r, 0.3, 2.0, 0.4)  # noqa: E731
    _check(p, lambda R: _deflection_3d(density, R), 2.0)


def test_elliptical_sersic_against_the_homoeoid_integral():
    # alpha = int_0^1 kappa(sqrt(u theta.P^-1 theta)) P^-1 theta / sqrt(det P) du, by quadrature
    q, phi = 0.6, 0.3
    p = SersicMass.from_axis_ratio(
        q=q, angle=np.degrees(phi), effective_radius=1.0, sersic_index=3.0
    )
    e = (1 - q) / (1 + q)
    e1, e2 = e * np.cos(2 * phi), e * np.sin(2 * phi)
    ee = e1 * e1 + e2 * e2
    n_mat = np.array([[1 + ee + 2 * e1, 2 * e2], [2 * e2, 1 + ee - 2 * e1]]) / (1 - ee)

    def reference(theta):
        def f(u, i):
            pm = np.eye(2) + u * (n_mat - np.eye(2))
            v = np.linalg.solve(pm, theta)
            kap = float(radial.sersic_convergence(np.sqrt(u * theta @ v), 1.0, 1.0, 3.0))
            return kap * v[i] / np.sqrt(np.linalg.det(pm))

        return [quad(f, 0, 1, args=(i,), limit=400, epsabs=0, epsrel=1e-11)[0] for i in (0, 1)]

    points = np.array([[0.05, 0.02], [0.7, -0.4], [2.0, 1.5], [-6.0, 4.0]])
    ref = np.array([reference(t) for t in points])
    out = np.asarray(p.deflections(points, backend="numba"))
    err = np.linalg.norm(out - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.all(err < 1e-6), err


def test_backends_agree_and_decomposition_is_cached():
    p = SersicMass.from_axis_ratio(q=0.8, angle=20.0, sersic_index=2.5)
    p.mge()
    hits = decomposed._unit_decomposition.cache_info().hits
    SersicMass.from_axis_ratio(q=0.8, angle=20.0, sersic_index=2.5).mge()
    assert decomposed._unit_decomposition.cache_info().hits == hits + 1
    grid = np.random.default_rng(3).uniform(-3, 3, (50, 2))
    ref = p.deflections(grid, backend="numpy")
    for b in ("numba", "jax"):
        np.testing.assert_allclose(p.deflections(grid, backend=b), ref, rtol=1e-12, atol=1e-15)


def test_free_sersic_index_and_slope_have_finite_correct_gradients():
    jax = jax_runtime.load()
    xy = np.array([[0.7, 0.2]])

    def alpha_sersic(n):
        return SersicMass(sersic_index=n, effective_radius=1.0).deflections(xy)[0, 0]

    def alpha_gnfw(g):
        return GNFW(gamma=g, r_s=2.0, rho_s=0.2, ell_comps=(0.1, 0.0)).deflections(xy)[0, 0]

    for f, x0 in ((alpha_sersic, 3.0), (alpha_gnfw, 1.3)):
        grad = float(jax.grad(f)(x0))
        eps = 1e-5
        fd = (float(f(x0 + eps)) - float(f(x0 - eps))) / (2 * eps)
        assert np.isfinite(grad) and grad == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (SersicMass, {"sersic_index": 0.3}, r"SersicMass.sersic_index must be in \[0.5, 10\]"),
        (SersicMass, {"effective_radius": 0.0}, r"SersicMass.effective_radius must be > 0"),
        (GNFW, {"gamma": 3.0}, r"GNFW.gamma must be in \[0, 3\)"),
        (CoredNFW, {"r_c": -1.0}, r"CoredNFW.r_c must be > 0"),
    ],
)
def test_bad_parameters_are_named(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)

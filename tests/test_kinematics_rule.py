"""Radial rules of fixed apertures (:mod:`twinlens.kinematics.radial_rule`) against the
two-dimensional rules of :func:`~twinlens.kinematics.velocity_dispersion` (a second
algorithm), and the slit's closed-form window against angles sampled densely."""

from __future__ import annotations

import numpy as np
import pytest

import twinlens.kinematics as K
from twinlens.cosmology import lens_distances
from twinlens.kinematics.dispersion import _aperture_nodes, _weighted, rule_dispersion
from twinlens.kinematics.radial_rule import _slit_fraction, aperture_rule

DISTANCES = lens_distances(0.5, 2.0)
APERTURES = [K.Slit(1.0, 0.8), K.Slit(0.5, 2.0), K.CircularAperture(0.75), K.Annulus(0.4, 0.9)]
SEEINGS = [None, K.GaussianSeeing(0.2), K.GaussianSeeing(0.7), K.MoffatSeeing(0.7, 2.5)]
ANISOTROPIES = [K.Isotropic(), K.OsipkovMerritt(0.3), K.ConstantBeta(0.3)]


@pytest.mark.parametrize("aperture", APERTURES, ids=repr)
@pytest.mark.parametrize("seeing", SEEINGS, ids=repr)
@pytest.mark.parametrize("anisotropy", ANISOTROPIES, ids=repr)
def test_rule_equals_the_two_dimensional_rule(aperture, seeing, anisotropy) -> None:
    mass, light = K.PowerLawMass(1.1, 1.9), K.Hernquist(0.6)
    want = K.velocity_dispersion(mass, light, anisotropy, aperture, DISTANCES, seeing, "numpy")
    rule = aperture_rule(aperture, seeing)
    got = rule_dispersion(rule, mass, light, anisotropy, DISTANCES, "numpy")
    assert got == pytest.approx(want, rel=1e-11)
    assert rule_dispersion(rule, mass, light, anisotropy, DISTANCES, "numba") == pytest.approx(
        got, rel=1e-12
    )
    if isinstance(aperture, K.Slit):  # the point of the rule: far fewer radii
        two_d = _aperture_nodes(aperture, seeing, np)[0].size
        assert rule[0].size * 10 < two_d


@pytest.mark.parametrize(
    ("mass", "light"),
    [
        (K.MassSum((K.PowerLawMass(0.9, 2.0), K.NFWMass(0.1, 6.0))), K.Hernquist(0.6)),
        (K.PowerLawMass(1.1, 2.2), K.SersicLight(0.9, 4.0)),
        (K.PowerLawMass(1.1, 1.7), K.Hernquist(0.2)),
        (K.PowerLawMass(1.1, 2.4), K.Hernquist(3.0)),
    ],
    ids=["stars+halo", "sersic", "shallow-compact", "steep-wide"],
)
def test_rule_on_the_general_sums_and_extreme_profiles(mass, light) -> None:
    """The rule's fewer line-of-sight nodes (RULE_N_Y) against the two-dimensional rule's
    160, on the general path (a sum of masses, Sersic light) and on compact and wide light.
    A de Vaucouleurs cusp (n = 4, its smallest Gaussians far inside the central panels) is
    where the two aperture rules differ most: 4e-10, the same with 96 nodes or 160."""
    aperture, seeing = K.Slit(1.0, 0.81), K.GaussianSeeing(0.7)
    tolerance = 1e-9 if isinstance(light, K.SersicLight) else 1e-11
    rule = aperture_rule(aperture, seeing)
    for anisotropy in (K.OsipkovMerritt(0.5), K.ConstantBeta(-0.3)):
        want = K.velocity_dispersion(mass, light, anisotropy, aperture, DISTANCES, seeing)
        got = rule_dispersion(rule, mass, light, anisotropy, DISTANCES, "numpy")
        assert got == pytest.approx(want, rel=tolerance)
        radii, weights = rule  # the line of sight alone: 96 nodes against 160, same rule
        full = _weighted(radii, weights, mass, light, anisotropy, DISTANCES, "numpy", 160)
        assert got == pytest.approx(full, rel=1e-12)


def test_rule_weights_integrate_the_window() -> None:
    """Without seeing the weights sum to the aperture's area; with it, to the area too (the
    seeing moves light, it does not make any)."""
    for seeing in (None, K.GaussianSeeing(0.5), K.MoffatSeeing(0.5, 3.0)):
        _, w = aperture_rule(K.Slit(1.0, 0.8), seeing)
        assert w.sum() == pytest.approx(0.8, rel=1e-9)
        _, w = aperture_rule(K.CircularAperture(0.75), seeing)
        assert w.sum() == pytest.approx(np.pi * 0.75**2, rel=1e-9)


def test_slit_fraction_against_dense_angles() -> None:
    a, b = 0.4, 0.5
    radii = np.array([0.1, 0.4, 0.45, 0.5, 0.55, 0.6, 0.64, 0.7])
    phi = (np.arange(400_000) + 0.5) / 400_000 * 2 * np.pi
    for r in radii:
        inside = (np.abs(r * np.cos(phi)) <= b) & (np.abs(r * np.sin(phi)) <= a)
        assert _slit_fraction(np.array([r]), a, b)[0] == pytest.approx(inside.mean(), abs=2e-5)


def test_rule_is_differentiable_on_jax() -> None:
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    rule = aperture_rule(K.Slit(1.0, 0.8), K.GaussianSeeing(0.7))
    light = K.Hernquist(0.6)

    def sigma(r_ani):
        return rule_dispersion(rule, K.PowerLawMass(1.1, 1.9), light, K.OsipkovMerritt(r_ani),
                               DISTANCES, "jax")  # fmt: skip

    grad = float(jax.grad(sigma)(0.8))
    step = 1e-6
    up = rule_dispersion(rule, K.PowerLawMass(1.1, 1.9), light, K.OsipkovMerritt(0.8 + step),
                         DISTANCES, "numpy")  # fmt: skip
    down = rule_dispersion(rule, K.PowerLawMass(1.1, 1.9), light, K.OsipkovMerritt(0.8 - step),
                           DISTANCES, "numpy")  # fmt: skip
    assert grad == pytest.approx((up - down) / (2 * step), rel=1e-6)


def test_annulus_is_the_difference_of_two_discs() -> None:
    """The light-weighted sums of a ring are its outer disc's less its inner disc's (the
    dispersion of the ring from the two discs' sums, each its own rule)."""
    from twinlens.kinematics.dispersion import projected_dispersion

    mass, light, aniso = K.PowerLawMass(1.1, 1.9), K.Hernquist(0.6), K.OsipkovMerritt(0.8)
    seeing = K.GaussianSeeing(0.6)
    sums = []
    for radius in (0.4, 0.9):
        r, w = aperture_rule(K.CircularAperture(radius), seeing)
        s2i, inten = projected_dispersion(r, mass, light, aniso, DISTANCES, "numpy")
        sums.append((np.sum(w * s2i), np.sum(w * inten)))
    want = np.sqrt((sums[1][0] - sums[0][0]) / (sums[1][1] - sums[0][1]))
    got = K.velocity_dispersion(mass, light, aniso, K.Annulus(0.4, 0.9), DISTANCES, seeing)
    assert got == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="r_in must be below r_out"):
        K.Annulus(1.0, 0.5)

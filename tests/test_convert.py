"""Converters to and from lenstronomy and autogalaxy parameters, checked against those
packages' documented conventions written out here (neither package is needed)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from twinlens import convert
from twinlens.mass import MGE, Gaussian

XY = np.random.default_rng(5).uniform(-3, 3, (40, 2))


def _lenstronomy_kappa(xy, amp, sigma, e1, e2, cx, cy):
    # lenstronomy GAUSSIAN_ELLIPSE_KAPPA: amp / (2 pi sigma^2) exp(-(q x'^2 + y'^2/q) / 2 sigma^2)
    phi = np.arctan2(e2, e1) / 2
    e = np.hypot(e1, e2)
    q = (1 - e) / (1 + e)
    dx, dy = xy[:, 0] - cx, xy[:, 1] - cy
    xp = np.cos(phi) * dx + np.sin(phi) * dy
    yp = -np.sin(phi) * dx + np.cos(phi) * dy
    return amp / (2 * np.pi * sigma**2) * np.exp(-(q * xp**2 + yp**2 / q) / (2 * sigma**2))


def _autogalaxy_kappa(xy, centre, ell_comps, intensity, sigma, ml):
    # autogalaxy Gaussian: (y, x) centre, ell_comps = (f sin 2phi, f cos 2phi), and
    # kappa = ml * intensity * exp(-(q^2 x'^2 + y'^2) / (2 sigma^2))
    phi = np.arctan2(ell_comps[0], ell_comps[1]) / 2
    f = np.hypot(*ell_comps)
    q = (1 - f) / (1 + f)
    dx, dy = xy[:, 0] - centre[1], xy[:, 1] - centre[0]
    xp = np.cos(phi) * dx + np.sin(phi) * dy
    yp = -np.sin(phi) * dx + np.cos(phi) * dy
    return ml * intensity * np.exp(-(q**2 * xp**2 + yp**2) / (2 * sigma**2))


LENSTRONOMY = {"amp": 2.0, "sigma": 0.5, "e1": 0.1, "e2": -0.05, "center_x": 0.2, "center_y": -0.1}


def test_from_lenstronomy_gaussian_matches_its_convergence():
    g = convert.from_lenstronomy("GAUSSIAN_ELLIPSE_KAPPA", LENSTRONOMY)
    ref = _lenstronomy_kappa(XY, *LENSTRONOMY.values())
    np.testing.assert_allclose(g.convergence(XY, backend="numpy"), ref, rtol=1e-13)


def test_lenstronomy_round_trips():
    g = convert.from_lenstronomy("GAUSSIAN_ELLIPSE_KAPPA", LENSTRONOMY)
    name, kwargs = convert.to_lenstronomy(g)
    assert name == "GAUSSIAN_ELLIPSE_KAPPA"
    assert kwargs == pytest.approx(LENSTRONOMY, rel=1e-15)
    mge_kwargs = {
        "amp": [1.0, 2.0, 0.5],
        "sigma": [0.1, 0.5, 2.0],
        "e1": 0.2,
        "e2": 0.1,
        "center_x": 0.0,
        "center_y": 0.3,
    }
    m = convert.from_lenstronomy("MULTI_GAUSSIAN_ELLIPSE_KAPPA", {**mge_kwargs, "scale_factor": 2})
    ref = sum(
        _lenstronomy_kappa(XY, 2 * a, s, 0.2, 0.1, 0.0, 0.3)
        for a, s in zip(mge_kwargs["amp"], mge_kwargs["sigma"], strict=True)
    )
    np.testing.assert_allclose(m.convergence(XY, backend="numpy"), ref, rtol=1e-13)
    name, back = convert.to_lenstronomy(m)
    assert name == "MULTI_GAUSSIAN_ELLIPSE_KAPPA"
    np.testing.assert_allclose(back["amp"], 2 * np.array(mge_kwargs["amp"]), rtol=1e-14)


def test_autogalaxy_convention_and_round_trip():
    ag = {
        "centre": (0.1, -0.3),
        "ell_comps": (0.15, -0.05),
        "intensity": 0.7,
        "sigma": 0.4,
        "mass_to_light_ratio": 3.0,
    }
    g = convert.from_autogalaxy("Gaussian", ag)
    assert g.centre == (-0.3, 0.1)
    np.testing.assert_allclose(
        g.convergence(XY, backend="numpy"), _autogalaxy_kappa(XY, *ag.values()), rtol=1e-13
    )
    name, back = convert.to_autogalaxy(g)
    assert name == "Gaussian"
    for key, value in ag.items():
        assert back[key] == pytest.approx(value, rel=1e-14), key


def test_unknown_names_and_missing_keys_explain_themselves():
    with pytest.raises(ValueError, match="supported: GAUSSIAN_ELLIPSE_KAPPA"):
        convert.from_lenstronomy("SIS", {"theta_E": 1.0})
    with pytest.raises(KeyError, match="missing sigma"):
        convert.from_lenstronomy("GAUSSIAN_ELLIPSE_KAPPA", {"amp": 1, "e1": 0, "e2": 0})
    with pytest.raises(ValueError, match="no converter to autogalaxy for MGE"):
        convert.to_autogalaxy(MGE([1.0], [1.0]))
    assert isinstance(convert.from_autogalaxy("Gaussian", {}), Gaussian)


def test_worked_example_in_the_docstring_runs():
    result = doctest.testmod(convert, verbose=False)
    assert result.attempted >= 3 and result.failed == 0


def test_bad_inputs_are_named_before_any_conversion():
    with pytest.raises(ValueError, match="autogalaxy Gaussian: ell_comps must satisfy"):
        convert.from_autogalaxy("Gaussian", {"ell_comps": (0.0, 1.2)})
    with pytest.raises(ValueError, match="GAUSSIAN_ELLIPSE_KAPPA: sigma must be > 0"):
        convert.from_lenstronomy(
            "GAUSSIAN_ELLIPSE_KAPPA", {"amp": 1.0, "sigma": 0.0, "e1": 0.0, "e2": 0.0}
        )

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
        convert.from_lenstronomy("SIS_TRUNCATED", {"theta_E": 1.0})
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


# -- analytic profiles: each peer convention restated as a formula ---------------------------


def _frame(xy, cx, cy, phi):
    dx, dy = xy[:, 0] - cx, xy[:, 1] - cy
    return np.cos(phi) * dx + np.sin(phi) * dy, -np.sin(phi) * dx + np.cos(phi) * dy


E1, E2, CX, CY = 0.12, -0.07, 0.1, -0.2
Q = (1 - np.hypot(E1, E2)) / (1 + np.hypot(E1, E2))
PHI = np.arctan2(E2, E1) / 2
XP, YP = _frame(XY, CX, CY, PHI)
R_INT = np.sqrt(Q * XP**2 + YP**2 / Q)  # lenstronomy's (and our) intermediate-axis radius
ETA = np.sqrt(XP**2 + YP**2 / Q**2)  # autogalaxy's major-axis radius
R = np.hypot(XY[:, 0] - CX, XY[:, 1] - CY)
ANGLE = np.arctan2(XY[:, 1] - CY, XY[:, 0] - CX)
L_ELL = {"e1": E1, "e2": E2, "center_x": CX, "center_y": CY}

LENSTRONOMY_KAPPA = [
    ("SIS", {"theta_E": 1.3, "center_x": CX, "center_y": CY}, 1.3 / (2 * R)),
    ("SIE", {"theta_E": 1.3, **L_ELL}, 1.3 / (2 * R_INT)),
    ("NIE", {"theta_E": 1.3, "s_scale": 0.2, **L_ELL}, 1.3 / (2 * np.sqrt(R_INT**2 + 0.04))),
    ("EPL", {"theta_E": 1.3, "gamma": 2.3, **L_ELL}, (3 - 2.3) / 2 * (1.3 / R_INT) ** 1.3),
    ("EPL_NUMBA", {"theta_E": 1.3, "gamma": 1.7, **L_ELL}, (3 - 1.7) / 2 * (1.3 / R_INT) ** 0.7),
    ("CONVERGENCE", {"kappa": 0.2, "ra_0": CX, "dec_0": CY}, np.full(len(XY), 0.2)),
    (
        "MULTIPOLE",
        {"m": 3, "a_m": 0.05, "phi_m": 0.4, "center_x": CX, "center_y": CY, "r_E": 1.1},
        0.05 * np.cos(3 * (ANGLE - 0.4)) / (2 * R),
    ),
    (
        "MULTIPOLE_ELL",
        {"m": 4, "a_m": 0.05, "phi_m": 0.4, "q": 0.7, "center_x": CX, "center_y": CY, "r_E": 1.1},
        0.05
        * np.cos(4 * (np.arctan2(XY[:, 1] - CY, 0.7 * (XY[:, 0] - CX)) - 0.4))
        / (2 * np.sqrt(0.7 * (XY[:, 0] - CX) ** 2 + (XY[:, 1] - CY) ** 2 / 0.7)),
    ),
]


@pytest.mark.parametrize(("name", "kwargs", "kappa"), LENSTRONOMY_KAPPA, ids=lambda v: str(v)[:12])
def test_lenstronomy_conventions_and_round_trip(name, kwargs, kappa):
    profile = convert.from_lenstronomy(name, kwargs)
    np.testing.assert_allclose(profile.convergence(XY, backend="numpy"), kappa, rtol=1e-13)
    back_name, back = convert.to_lenstronomy(profile)
    assert back_name == {"EPL_NUMBA": "EPL"}.get(name, name)
    assert convert.from_lenstronomy(back_name, back) == profile


def test_lenstronomy_nfw_alpha_rs_is_the_deflection_at_rs():
    nfw = convert.from_lenstronomy("NFW", {"Rs": 2.0, "alpha_Rs": 0.8, "center_x": 0.3})
    ring = np.array([[0.3 + 2.0, 0.0], [0.3, -2.0]])
    np.testing.assert_allclose(np.linalg.norm(nfw.deflections(ring), axis=-1), 0.8, rtol=1e-13)
    assert convert.to_lenstronomy(nfw) == (
        "NFW",
        {"Rs": 2.0, "alpha_Rs": pytest.approx(0.8), "center_x": 0.3, "center_y": 0.0},
    )
    cse = convert.from_lenstronomy("NFW_ELLIPSE_CSE", {"Rs": 2.0, "alpha_Rs": 0.8, **L_ELL})
    assert cse.ell_comps == (E1, E2) and cse.scale_radius == 2.0
    assert convert.to_lenstronomy(cse)[0] == "NFW_ELLIPSE_CSE"


def test_lenstronomy_point_mass_and_shear():
    pm = convert.from_lenstronomy("POINT_MASS", {"theta_E": 0.7, "center_x": CX, "center_y": CY})
    d = XY - np.array([CX, CY])
    np.testing.assert_allclose(pm.deflections(XY), 0.49 * d / R[:, None] ** 2, rtol=1e-13)
    shear = convert.from_lenstronomy("SHEAR", {"gamma1": 0.05, "gamma2": -0.02})
    np.testing.assert_allclose(shear.hessian(XY[:1])[0], [[0.05, -0.02], [-0.02, -0.05]])
    polar = convert.from_lenstronomy("SHEAR_GAMMA_PSI", {"gamma_ext": 0.1, "psi_ext": 0.3})
    assert (polar.gamma_1, polar.gamma_2) == pytest.approx((0.1 * np.cos(0.6), 0.1 * np.sin(0.6)))
    assert convert.to_lenstronomy(shear)[1]["gamma2"] == -0.02


@pytest.mark.parametrize("name", ["EPL_MULTIPOLE_M1M3M4", "EPL_MULTIPOLE_M1M3M4_ELL"])
def test_lenstronomy_epl_with_multipoles(name):
    kw = {"theta_E": 1.2, "gamma": 2.1, **L_ELL, "a1_a": 0.01, "delta_phi_m1": 0.2,
          "a3_a": 0.02, "delta_phi_m3": -0.1, "a4_a": 0.03, "delta_phi_m4": 0.5}  # fmt: skip
    total = convert.from_lenstronomy(name, kw)
    kappa = (3 - 2.1) / 2 * (1.2 / R_INT) ** 1.1
    for m in (1, 3, 4):
        phi_m = PHI + kw[f"delta_phi_m{m}"]
        if name.endswith("_ELL"):  # lenstronomy 1.14: reference ellipse along +x
            dx, dy = XY[:, 0] - CX, XY[:, 1] - CY
            rr = np.sqrt(Q * dx**2 + dy**2 / Q)
            ang = np.arctan2(dy, Q * dx)
            kappa = kappa + kw[f"a{m}_a"] * 1.2 * np.cos(m * (ang - phi_m)) / (2 * rr)
        else:
            a_m = kw[f"a{m}_a"] * 1.2 / np.sqrt(Q)
            kappa = kappa + a_m * np.cos(m * (ANGLE - phi_m)) / (2 * R)
    np.testing.assert_allclose(total.convergence(XY, backend="numpy"), kappa, rtol=1e-12)
    names, kwargs = convert.to_lenstronomy_list(total)
    assert names[0] == "EPL" and len(names) == 4
    assert convert.from_lenstronomy_list(names, kwargs) == total


AG_ELL = {"centre": (CY, CX), "ell_comps": (E2, E1)}
AUTOGALAXY_KAPPA = [
    ("IsothermalSph", {"centre": (CY, CX), "einstein_radius": 1.3}, 1.3 / (2 * R)),
    ("Isothermal", {**AG_ELL, "einstein_radius": 1.3}, 1.3 / ((1 + Q) * ETA)),
    (
        "IsothermalCore",
        {**AG_ELL, "einstein_radius": 1.3, "core_radius": 0.2},
        1.3 / (1 + Q) / np.sqrt(0.04 + ETA**2),
    ),
    (
        "PowerLaw",
        {**AG_ELL, "einstein_radius": 1.3, "slope": 2.2},
        (3 - 2.2) / (1 + Q) * (1.3 / ETA) ** 1.2,
    ),
    ("MassSheet", {"centre": (CY, CX), "kappa": 0.1}, np.full(len(XY), 0.1)),
    (
        "PowerLawMultipole",
        {
            "m": 4,
            "centre": (CY, CX),
            "einstein_radius": 1.1,
            "slope": 2.0,
            "multipole_comps": (0.03 * np.sin(4 * 0.3), 0.03 * np.cos(4 * 0.3)),
        },
        0.03 / 2 * (1.1 / R) * np.cos(4 * (ANGLE - 0.3)),
    ),
]


@pytest.mark.parametrize(("name", "kwargs", "kappa"), AUTOGALAXY_KAPPA, ids=lambda v: str(v)[:12])
def test_autogalaxy_conventions_and_round_trip(name, kwargs, kappa):
    profile = convert.from_autogalaxy(name, kwargs)
    np.testing.assert_allclose(profile.convergence(XY, backend="numpy"), kappa, rtol=1e-12)
    back_name, back = convert.to_autogalaxy(profile)
    assert back_name == name
    for key, value in kwargs.items():
        np.testing.assert_allclose(back[key], value, rtol=1e-13, atol=1e-15, err_msg=key)


def test_autogalaxy_nfw_scale_radius_is_major_axis():
    nfw = convert.from_autogalaxy("NFW", {**AG_ELL, "kappa_s": 0.1, "scale_radius": 2.0})
    assert nfw.scale_radius == pytest.approx(2.0 * np.sqrt(Q), rel=1e-15)
    assert convert.to_autogalaxy(nfw)[1]["scale_radius"] == pytest.approx(2.0, rel=1e-15)
    assert convert.to_autogalaxy(convert.from_autogalaxy("NFWSph", {"kappa_s": 0.1}))[0] == "NFWSph"


def test_conversions_that_cannot_be_exact_say_so():
    from twinlens.mass import EllipticalMultipole, ExternalShear, MassSum, Multipole

    with pytest.raises(ValueError, match="reference ellipse along"):
        convert.to_lenstronomy(EllipticalMultipole(m=3, amplitude=0.1, reference_angle=10.0))
    with pytest.raises(ValueError, match="use to_lenstronomy_list"):
        convert.to_lenstronomy(MassSum((Multipole(),)))
    with pytest.raises(ValueError, match="has no origin"):
        convert.to_autogalaxy(ExternalShear(gamma_1=0.1, origin=(1.0, 0.0)))
    with pytest.raises(ValueError, match="m >= 2"):
        convert.from_autogalaxy("PowerLawMultipole", {"m": 1, "multipole_comps": (0.1, 0.0)})
    with pytest.raises(ValueError, match="2 lens model names but 1"):
        convert.from_lenstronomy_list(["SIS", "SIS"], [{"theta_E": 1.0}])

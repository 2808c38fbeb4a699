"""COOLEST export and import (twinlens.export).

The round trips check that a tracer survives JSON; the convention checks evaluate the written
file with COOLEST's own profile code (``coolest.api.profiles``) and with COOLEST's documented
formulas written out here, reading the JSON with the ``json`` module, so that a wrong angle,
axis or radius convention in both directions of our converter cannot cancel out."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.special import gammaincinv

pytest.importorskip("coolest")

from coolest.api.profiles import light as coolest_light
from coolest.api.profiles import mass as coolest_mass

from twinlens.export import from_coolest, to_coolest
from twinlens.lensing.multiplane import MultiPlaneTracer
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import (
    CoreSersic,
    Exponential,
    GaussianLight,
    LinearExponential,
    LinearSersic,
    MGELight,
    Sersic,
)
from twinlens.mass import (
    NFW,
    NIE,
    SIE,
    SIS,
    ExternalShear,
    MassSheet,
    MassSum,
    PowerLaw,
)

XY = np.random.default_rng(11).uniform(-2.5, 2.5, (400, 2))


def _ell(q, theta_deg):
    """(e1, e2) for axis ratio q and major axis theta_deg counter-clockwise from +x."""
    f = (1 - q) / (1 + q)
    t = math.radians(2 * theta_deg)
    return (f * math.cos(t), f * math.sin(t))


# ellipticities: random ones, round ones, and angles at and near COOLEST's fold (phi = 90,
# i.e. our theta = 0) and near ours (theta = +-90, COOLEST's phi = 0); -0.0 sits on the cut
_RNG = np.random.default_rng(3)
ELLIPTICITIES = [
    *[tuple(_RNG.uniform(-0.4, 0.4, 2)) for _ in range(4)],
    (0.0, 0.0),
    (0.2, 1e-13),
    (0.2, -1e-13),
    (0.2, -0.0),
    (-0.2, 0.0),
    (-0.2, -0.0),
    (-0.2, 1e-13),
    (-0.2, -1e-13),
    _ell(0.6, 89.9999999),
    _ell(0.6, -89.9999999),
    _ell(0.6, 45.0),
]


def _tracer(ell, ell_light, ell_source):
    lens = Galaxy(
        (
            PowerLaw(centre=(0.05, -0.1), ell_comps=ell, einstein_radius=1.1, slope=2.15),
            ExternalShear(gamma_1=ell_light[0] / 5, gamma_2=ell_light[1] / 5),
        ),
        (
            Sersic(
                centre=(0.05, -0.1),
                ell_comps=ell_light,
                effective_radius=0.9,
                sersic_index=3.5,
                intensity=1.7,
            ),
        ),
    )
    satellite = Galaxy(
        (SIE(centre=(1.2, 0.7), ell_comps=ell_source, einstein_radius=0.15), SIS((-1.0, 0.4), 0.1)),
        (Exponential(centre=(1.2, 0.7), ell_comps=ell, effective_radius=0.3, intensity=0.4),),
    )
    source = Galaxy(
        light=(
            Sersic(
                centre=(0.1, 0.05),
                ell_comps=ell_source,
                effective_radius=0.2,
                sersic_index=1.3,
                intensity=4.0,
            ),
            Exponential(centre=(0.15, 0.0), ell_comps=ell, effective_radius=0.35, intensity=0.8),
        )
    )
    return Tracer((lens, satellite), source)


def _assert_same_fields(a, b, xy=XY):
    for quantity in ("deflections", "image"):
        va = np.asarray(getattr(a, quantity)(xy, backend="numpy"))
        vb = np.asarray(getattr(b, quantity)(xy, backend="numpy"))
        np.testing.assert_allclose(vb, va, rtol=1e-10, atol=1e-10 * np.abs(va).max())


def _export(tracer, tmp_path, name="model.json", **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing here deserves a warning
        return to_coolest(tracer, tmp_path / name, **kwargs)


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("ell", ELLIPTICITIES)
def test_round_trip_same_deflections_and_images(tmp_path, ell):
    k = ELLIPTICITIES.index(ell)
    tracer = _tracer(ell, ELLIPTICITIES[(k + 3) % len(ELLIPTICITIES)], ELLIPTICITIES[k - 1])
    back = from_coolest(_export(tracer, tmp_path))
    _assert_same_fields(tracer, back)
    # the same galaxies and classes (an SIS and the Exponentials come back as such)
    assert [[type(p) for p in g.mass] for g in back.lenses] == [
        [type(p) for p in g.mass] for g in tracer.lenses
    ]
    assert [[type(p) for p in g.light] for g in (*back.lenses, *back.sources)] == [
        [type(p) for p in g.light] for g in (*tracer.lenses, *tracer.sources)
    ]


def test_round_trip_mass_sum_sheet_and_linear_profiles(tmp_path):
    mass = MassSum((SIE(ell_comps=(0.1, 0.2), einstein_radius=1.0), ExternalShear(0.02, 0.01)))
    tracer = Tracer(
        Galaxy((mass, MassSheet(kappa=-0.05)), LinearSersic(ell_comps=(0.1, 0.0))),
        Galaxy(light=(LinearExponential(effective_radius=0.2), LinearSersic(sersic_index=0.7))),
    )
    with pytest.warns(UserWarning, match=r"I_eff is written null.*sources\[0\]\.light\[1\]"):
        path = to_coolest(tracer, tmp_path / "m.json")
    back = from_coolest(path)
    _assert_same_fields(tracer, back)  # linear profiles: unit-intensity images
    assert [type(p) for p in back.lenses[0].mass] == [SIE, ExternalShear, MassSheet]
    assert [type(p) for p in back.sources[0].light] == [LinearExponential, LinearSersic]
    doc = json.loads(path.read_text())
    sersic = doc["lensing_entities"][0]["light_model"][0]["parameters"]
    assert sersic["I_eff"]["point_estimate"]["value"] is None


def test_mock_mode_round_trip(tmp_path):
    tracer = _tracer((0.1, -0.1), (0.05, 0.0), (0.0, -0.2))
    path = _export(tracer, tmp_path, mode="MOCK")
    doc = json.loads(path.read_text())
    assert doc["mode"] == "MOCK"
    assert "posterior_stats" not in doc["lensing_entities"][0]["mass_model"][0]["parameters"]["q"]
    _assert_same_fields(tracer, from_coolest(path))


def test_point_estimates_are_plain_numbers_and_entities_named(tmp_path):
    path = _export(
        _tracer((0.1, 0.0), (0.0, 0.1), (0.2, 0.1)),
        tmp_path,
        lens_redshift=0.3,
        source_redshift=1.7,
    )
    doc = json.loads(path.read_text())
    assert doc["mode"] == "MAP"
    names = [(e["type"], e["name"], e["redshift"]) for e in doc["lensing_entities"]]
    assert names == [
        ("Galaxy", "lens 0", 0.3),
        ("MassField", "lens 0 ExternalShear", 0.3),
        ("Galaxy", "lens 1", 0.3),
        ("Galaxy", "source 0", 1.7),
    ]
    sis = doc["lensing_entities"][2]["mass_model"][1]["parameters"]
    assert (sis["q"]["point_estimate"]["value"], sis["q"]["fixed"]) == (1.0, True)
    back = from_coolest(path)  # one lens plane: a Tracer, each galaxy at its redshift
    assert type(back) is Tracer
    assert [g.redshift for g in (*back.lenses, *back.sources)] == [0.3, 0.3, 1.7]
    for entity in doc["lensing_entities"]:
        for model in ("mass_model", "light_model"):
            for profile in entity.get(model, []):
                for param in profile["parameters"].values():
                    assert type(param["point_estimate"]["value"]) is float


def test_galaxy_redshifts_are_written_and_a_disagreeing_argument_refused(tmp_path):
    base = _tracer((0.1, 0.0), (0.0, 0.1), (0.2, 0.1))
    lens, satellite = base.lenses
    # a multi-plane configuration: each galaxy carries its own redshift
    tracer = Tracer(
        (Galaxy(lens.mass, lens.light, redshift=0.4), Galaxy(satellite.mass, redshift=0.9)),
        Galaxy(light=base.sources[0].light, redshift=2.1),
    )
    doc = json.loads(_export(tracer, tmp_path).read_text())
    names = [(e["name"], e["redshift"]) for e in doc["lensing_entities"]]
    assert names == [
        ("lens 0", 0.4),
        ("lens 0 ExternalShear", 0.4),
        ("lens 1", 0.9),
        ("source 0", 2.1),
    ]
    # the argument agreeing with every lens is accepted; one that disagrees names both
    path = _export(tracer, tmp_path, "same.json", source_redshift=2.1)
    # read back: the redshifts, on the class written (a single-plane tracer ignores them)
    back = from_coolest(path)
    assert type(back) is Tracer
    assert [g.redshift for g in (*back.lenses, *back.sources)] == [0.4, 0.9, 2.1]
    _assert_same_fields(tracer, back)


def test_multi_plane_tracer_round_trip_keeps_planes_and_cosmology(tmp_path):
    from astropy.cosmology import FlatLambdaCDM

    base = _tracer((0.1, 0.0), (0.0, 0.1), (0.2, 0.1))
    lens, satellite = base.lenses
    lenses = (Galaxy(lens.mass, lens.light, redshift=0.4), Galaxy(satellite.mass, redshift=0.9))
    cosmology = FlatLambdaCDM(H0=65.0, Om0=0.25)
    tracer = MultiPlaneTracer(lenses, base.sources, z_source=2.1, cosmology=cosmology)
    doc = json.loads(_export(tracer, tmp_path).read_text())
    assert doc["cosmology"]["H0"] == 65.0 and doc["cosmology"]["Om0"] == 0.25
    back = from_coolest(tmp_path / "model.json")
    assert isinstance(back, MultiPlaneTracer)
    assert (back.plane_redshifts, back.z_source, back.h0) == ((0.4, 0.9), 2.1, 65.0)
    assert back.cosmology == tracer.cosmology
    _assert_same_fields(tracer, back)
    # the cosmology matters: the default one bends the rays through the planes otherwise
    default = MultiPlaneTracer(lenses, base.sources, z_source=2.1)
    assert not np.allclose(default.deflections(XY, "numpy"), back.deflections(XY, "numpy"))
    with pytest.raises(ValueError, match=r"z_source is 2\.1: give it once"):
        to_coolest(tracer, tmp_path / "bad.json", source_redshift=1.5)
    ratios = MultiPlaneTracer(
        lenses, base.sources, z_source=2.1, distance_ratios=np.asarray(tracer.ratios)
    )
    with pytest.raises(ValueError, match="distance_ratios has no cosmology"):
        to_coolest(ratios, tmp_path / "ratios.json")
    with pytest.raises(ValueError, match=r"lenses\[1\].redshift is 0.9 but lens_redshift=0.4"):
        to_coolest(tracer, tmp_path / "bad.json", lens_redshift=0.4)


# -- conventions, checked independently -----------------------------------------------------


def _profiles(path):
    """[(model, COOLEST type, {name: point estimate})] from the raw JSON."""
    doc = json.loads(path.read_text())
    out = []
    for entity in doc["lensing_entities"]:
        for model in ("mass", "light"):
            for profile in entity.get(f"{model}_model", []):
                values = {k: v["point_estimate"]["value"] for k, v in profile["parameters"].items()}
                out.append((model, profile["type"], entity["name"], values))
    return out


def _coolest_deflections(path, x, y):
    """The summed deflection of every mass profile, from COOLEST's own code."""
    ax, ay = np.zeros_like(x), np.zeros_like(y)
    for model, kind, _, p in _profiles(path):
        if model != "mass":
            continue
        if kind in ("SIE", "PEMD"):
            dx, dy = coolest_mass.PEMD().deflection(
                x,
                y,
                gamma=p.get("gamma", 2.0),
                **{k: p[k] for k in ("theta_E", "q", "phi", "center_x", "center_y")},
            )
        else:
            dx, dy = getattr(coolest_mass, kind)().deflection(x, y, **p)
        ax, ay = ax + dx, ay + dy
    return ax, ay


def _coolest_image(path, x, y):
    """Lens light at (x, y) plus source light at the ray's origin, from COOLEST's code."""
    ax, ay = _coolest_deflections(path, x, y)
    sersic = coolest_light.Sersic()
    total = np.zeros_like(x)
    for model, _, name, p in _profiles(path):
        if model == "light":
            bx, by = (x - ax, y - ay) if name.startswith("source") else (x, y)
            total = total + sersic.evaluate_surface_brightness(bx, by, **p)
    return total


@pytest.mark.parametrize("ell", ELLIPTICITIES)
def test_exported_model_evaluated_by_coolest_matches(tmp_path, ell):
    k = ELLIPTICITIES.index(ell)
    tracer = _tracer(ell, ELLIPTICITIES[(k + 5) % len(ELLIPTICITIES)], ELLIPTICITIES[k - 2])
    path = _export(tracer, tmp_path)
    x, y = XY[:, 0], XY[:, 1]
    ours = tracer.deflections(XY, backend="numpy")
    theirs = np.stack(_coolest_deflections(path, x, y), axis=-1)
    # COOLEST's PEMD is the same Tessore & Metcalf series: both agree to ~1e-15
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-10 * np.abs(ours).max())
    image = tracer.image(XY, backend="numpy")
    np.testing.assert_allclose(
        _coolest_image(path, x, y), image, rtol=1e-10, atol=1e-10 * image.max()
    )


@pytest.mark.parametrize("slope", [1.4, 2.0, 2.6])
@pytest.mark.parametrize("ell", ELLIPTICITIES[:5] + ELLIPTICITIES[-3:])
def test_convergence_against_coolest_pemd(tmp_path, ell, slope):
    profile = PowerLaw(centre=(0.3, -0.2), ell_comps=ell, einstein_radius=0.8, slope=slope)
    path = _export(Tracer(Galaxy(profile)), tmp_path)
    ((_, kind, _, p),) = _profiles(path)
    assert kind == "PEMD"
    theirs = coolest_mass.PEMD().convergence(XY[:, 0], XY[:, 1], **p)
    np.testing.assert_allclose(theirs, profile.convergence(XY, backend="numpy"), rtol=1e-12)


def _documented_frame(x, y, p):
    """COOLEST docs: phi counter-clockwise from +y, the major axis along x at phi = -90."""
    a = math.radians(p["phi"] + 90.0)  # the major axis, counter-clockwise from +x
    dx, dy = x - p["center_x"], y - p["center_y"]
    xp = math.cos(a) * dx + math.sin(a) * dy
    yp = -math.sin(a) * dx + math.cos(a) * dy
    return np.sqrt(p["q"] * xp**2 + yp**2 / p["q"])  # the intermediate-axis radius


@pytest.mark.parametrize("ell", ELLIPTICITIES)
def test_documented_formulas_written_out(tmp_path, ell):
    """SIE, PEMD and Sersic as printed in COOLEST's documentation, in plain numpy."""
    sie = SIE(centre=(0.2, 0.1), ell_comps=ell, einstein_radius=1.3)
    pl = PowerLaw(centre=(-0.1, 0.0), ell_comps=ell, einstein_radius=0.9, slope=2.3)
    sersics = [
        Sersic(centre=(0.1, -0.3), ell_comps=ell, effective_radius=r, sersic_index=n, intensity=2.0)
        for r, n in ((0.7, 0.5), (0.4, 1.0), (1.1, 4.0), (0.9, 8.5))
    ]
    path = _export(Tracer(Galaxy((sie, pl), tuple(sersics))), tmp_path)
    x, y = XY[:, 0], XY[:, 1]
    written = _profiles(path)
    (_, _, _, p), (_, _, _, pp) = written[:2]
    kappa_sie = p["theta_E"] / (2 * _documented_frame(x, y, p))
    np.testing.assert_allclose(kappa_sie, sie.convergence(XY, backend="numpy"), rtol=1e-12)
    g = pp["gamma"]
    kappa_pl = (3 - g) / 2 * (pp["theta_E"] / _documented_frame(x, y, pp)) ** (g - 1)
    np.testing.assert_allclose(kappa_pl, pl.convergence(XY, backend="numpy"), rtol=1e-12)
    for (_, kind, _, s), ours in zip(written[2:], sersics, strict=True):
        assert kind == "Sersic"
        b = 1.9992 * s["n"] - 0.3271
        radius = _documented_frame(x, y, s)
        light = s["I_eff"] * np.exp(-b * ((radius / s["theta_eff"]) ** (1 / s["n"]) - 1))
        np.testing.assert_allclose(light, ours.image(XY, backend="numpy"), rtol=1e-11)


def test_position_angle_geometry(tmp_path):
    """phi = 0 puts the major axis along +y, phi = 45 towards the upper left."""
    for theta, phi in ((90.0, 0.0), (135.0, 45.0), (0.0, 90.0), (45.0, -45.0)):
        sie = SIE(ell_comps=_ell(0.5, theta), einstein_radius=1.0)
        path = _export(Tracer(Galaxy(sie)), tmp_path)
        ((_, _, _, p),) = _profiles(path)
        assert p["phi"] == pytest.approx(phi, abs=1e-12)
        axis = math.radians(phi + 90)  # the direction along which the convergence falls slowest
        along = np.array([[math.cos(axis), math.sin(axis)]])
        across = np.array([[-math.sin(axis), math.cos(axis)]])
        assert sie.convergence(along) > sie.convergence(across)


def test_shear_against_coolest_and_lenstronomy_angle(tmp_path):
    shear = ExternalShear.from_magnitude_angle(0.07, 30.0)  # lenstronomy psi_ext = 30 degrees
    path = _export(Tracer(Galaxy(shear)), tmp_path)
    ((_, kind, _, p),) = _profiles(path)
    assert kind == "ExternalShear"
    assert p["gamma_ext"] == pytest.approx(0.07, rel=1e-14)
    assert p["phi_ext"] == pytest.approx(-60.0, rel=1e-12)  # 30 + 90, folded
    dx, dy = coolest_mass.ExternalShear().deflection(XY[:, 0], XY[:, 1], **p)
    np.testing.assert_allclose(
        np.stack([dx, dy], -1), shear.deflections(XY, backend="numpy"), rtol=1e-12, atol=1e-15
    )


# -- posterior statistics ---------------------------------------------------------------------


def _param(path, entity, model, index, name):
    doc = json.loads(path.read_text())
    return doc["lensing_entities"][entity][f"{model}_model"][index]["parameters"][name]


def _stats(param):
    s = param["posterior_stats"]
    return s["median"], s["percentile_16th"], s["percentile_84th"], s["mean"]


def _expected(values):
    return (np.median(values), *np.percentile(values, [16, 84]), np.mean(values))


def test_posterior_samples_converted_then_summarised(tmp_path):
    rng = np.random.default_rng(7)
    n = 4001
    # major axis angle scattered about our theta = 0, i.e. COOLEST's fold at phi = +-90
    theta = rng.normal(0.3, 2.0, n)
    q = rng.uniform(0.6, 0.8, n)
    e = np.array([_ell(a, b) for a, b in zip(q, theta, strict=True)])
    radius = rng.normal(0.5, 0.02, n)
    index = rng.uniform(1.5, 2.5, n)
    g1, g2 = rng.normal(-0.05, 0.002, n), rng.normal(1e-3, 0.004, n)  # psi near 90 degrees
    tracer = Tracer(
        Galaxy((SIE(ell_comps=tuple(e[0]), einstein_radius=1.0), ExternalShear(g1[0], g2[0]))),
        Galaxy(light=Sersic(effective_radius=radius[0], sersic_index=index[0])),
    )
    samples = {
        "lenses[0].mass[0].ell_comps[0]": e[:, 0],
        "lenses[0].mass[0].ell_comps[1]": e[:, 1],
        "lenses[0].mass[0].einstein_radius": rng.normal(1.0, 0.01, n),
        "lenses[0].mass[1].gamma_1": g1,
        "lenses[0].mass[1].gamma_2": g2,
        "sources[0].light[0].effective_radius": radius,
        "sources[0].light[0].sersic_index": index,
    }
    path = _export(tracer, tmp_path, posterior=samples)

    # independently: COOLEST's phi is our angle + 90 degrees; unwrapped here by construction
    phi = theta + 90.0
    expected = np.array(_expected(phi))
    expected -= 180.0 * (expected[0] > 90.0)  # the median folded into (-90, 90]
    got = _stats(_param(path, 0, "mass", 0, "phi"))
    np.testing.assert_allclose(got, expected, atol=1e-9)
    assert got[2] - got[1] < 10.0  # one piece, not split across the fold
    np.testing.assert_allclose(_stats(_param(path, 0, "mass", 0, "q")), _expected(q), rtol=1e-12)
    np.testing.assert_allclose(
        _stats(_param(path, 0, "mass", 0, "theta_E")),
        _expected(samples["lenses[0].mass[0].einstein_radius"]),
        rtol=1e-14,
    )
    psi = np.degrees(np.arctan2(g2, g1)) / 2  # about +-90: phi_ext about 0
    phi_ext = np.where(psi > 0, psi - 90.0, psi + 90.0)
    np.testing.assert_allclose(
        _stats(_param(path, 1, "mass", 0, "phi_ext")), _expected(phi_ext), atol=1e-9
    )
    b_c, b_n = 1.9992 * index - 0.3271, gammaincinv(2 * index, 0.5)
    np.testing.assert_allclose(
        _stats(_param(path, 2, "light", 0, "theta_eff")),
        _expected(radius * (b_c / b_n) ** index),
        rtol=1e-12,
    )
    # the intensity is fixed (1), but I_eff = intensity exp(b_n - b) follows the index
    np.testing.assert_allclose(
        _stats(_param(path, 2, "light", 0, "I_eff")), _expected(np.exp(b_n - b_c)), rtol=1e-12
    )
    assert _stats(_param(path, 0, "mass", 0, "center_x")) == (None,) * 4  # not in the posterior


def test_posterior_summaries(tmp_path):
    tracer = Tracer(
        Galaxy(SIE(ell_comps=(0.1, 0.0), einstein_radius=1.0)),
        Galaxy(light=Sersic(effective_radius=0.5, sersic_index=2.0, intensity=3.0)),
    )
    posterior = {
        "lenses[0].mass[0].einstein_radius": (1.0, 0.98, 1.03, 1.001),
        "sources[0].light[0].effective_radius": (0.5, 0.45, 0.56, 0.505),
        "lenses[0].mass[0].ell_comps[0]": (0.1, 0.08, 0.12, 0.1),
    }
    with pytest.warns(UserWarning, match=r"lenses\[0\]\.mass\[0\] \(SIE\) q .*give samples"):
        path = to_coolest(tracer, tmp_path / "m.json", posterior=posterior)
    assert _stats(_param(path, 0, "mass", 0, "theta_E")) == (1.0, 0.98, 1.03, 1.001)
    factor = (1.9992 * 2 - 0.3271) / gammaincinv(4.0, 0.5)  # theta_eff = R (b / b_n)^n
    np.testing.assert_allclose(
        _stats(_param(path, 1, "light", 0, "theta_eff")),
        np.array([0.5, 0.45, 0.56, 0.505]) * factor**2,
        rtol=1e-13,
    )
    assert _stats(_param(path, 0, "mass", 0, "q")) == (None,) * 4


def test_posterior_errors(tmp_path):
    tracer = Tracer(Galaxy(SIE(einstein_radius=1.0, ell_comps=(0.1, 0.0))))
    out = tmp_path / "m.json"
    with pytest.raises(KeyError, match="names no parameter"):
        to_coolest(tracer, out, posterior={"lenses[0].mass[0].slope": np.ones(3)})
    with pytest.raises(ValueError, match="one array length"):
        to_coolest(
            tracer,
            out,
            posterior={
                "lenses[0].mass[0].einstein_radius": np.ones(3),
                "lenses[0].mass[0].centre[0]": np.zeros(4),
            },
        )
    with pytest.raises(ValueError, match="p16 <= median <= p84"):
        to_coolest(tracer, out, posterior={"lenses[0].mass[0].einstein_radius": (1, 2, 3, 1)})
    with pytest.raises(ValueError, match="not a scalar parameter"):
        to_coolest(tracer, out, posterior={"lenses[0].mass[0]": np.ones(3)})
    with pytest.raises(ValueError, match="MAP"):
        to_coolest(tracer, out, mode="MOCK", posterior={"lenses[0].mass[0].centre[0]": (0,) * 4})


# -- priors -----------------------------------------------------------------------------------


def test_priors_written_with_their_types(tmp_path):
    from coolest.template.json import JSONSerializer

    from twinlens.model import GaussianPrior, LogUniformPrior, TruncatedGaussianPrior, UniformPrior

    n = 2.0
    tracer = Tracer(
        Galaxy((SIE((0.01, 0.02), (0.1, 0.05), 1.0), ExternalShear(0.03, -0.01))),
        Galaxy(light=Sersic((0.1, 0.0), (0.0, 0.1), 0.4, n, 3.0)),
    )
    priors = {
        "lenses[0].mass[0].centre[0]": GaussianPrior(0.0, 0.1),
        "lenses[0].mass[0].centre[1]": TruncatedGaussianPrior(0.0, 0.1, -0.3, 0.3),
        "lenses[0].mass[0].ell_comps[0]": UniformPrior(-0.4, 0.4),
        "lenses[0].mass[0].einstein_radius": UniformPrior(0.5, 2.0),
        "lenses[0].mass[1].gamma_1": UniformPrior(-0.1, 0.1),
        "sources[0].light[0].centre[0]": LogUniformPrior(0.01, 1.0),
        "sources[0].light[0].effective_radius": UniformPrior(0.1, 1.0),
        "sources[0].light[0].intensity": GaussianPrior(3.0, 0.5),
    }
    path = _export(tracer, tmp_path, priors=priors)

    def prior(entity, model, name):
        return _param(path, entity, model, 0, name)["prior"]

    assert prior(0, "mass", "center_x") == {"type": "GaussianPrior", "mean": 0.0, "width": 0.1}
    assert prior(0, "mass", "theta_E") == {
        "type": "UniformPrior",
        "min_value": 0.5,
        "max_value": 2.0,
    }
    # COOLEST's Sersic has b = 1.9992 n - 0.3271 where ours has the exact b_n: theta_eff and
    # I_eff are our radius and intensity scaled, and so are their priors
    b_c, b_n = 1.9992 * n - 0.3271, gammaincinv(2 * n, 0.5)
    radius, amplitude = (b_c / b_n) ** n, math.exp(b_n - b_c)
    theta_eff = prior(2, "light", "theta_eff")
    assert theta_eff["type"] == "UniformPrior"
    np.testing.assert_allclose(
        [theta_eff["min_value"], theta_eff["max_value"]], [0.1 * radius, radius], rtol=1e-12
    )
    i_eff = prior(2, "light", "I_eff")
    assert i_eff["type"] == "GaussianPrior"
    np.testing.assert_allclose(
        [i_eff["mean"], i_eff["width"]], [3.0 * amplitude, 0.5 * amplitude], rtol=1e-12
    )
    # no COOLEST equivalent: type null, and the description says which prior and why
    no_kind = {
        (0, "mass", "center_y"): ("TruncatedGaussianPrior", "centre[1]", "has no"),
        (2, "light", "center_x"): ("LogUniformPrior", "centre[0]", "has no"),
        (0, "mass", "q"): ("UniformPrior(lower=-0.4", "ell_comps[0]", "induced on q"),
        (0, "mass", "phi"): ("UniformPrior(lower=-0.4", "ell_comps[0]", "induced on phi"),
        (1, "mass", "gamma_ext"): ("UniformPrior(lower=-0.1", "gamma_1", "induced on gamma_ext"),
    }
    for (entity, model, name), words in no_kind.items():
        p = prior(entity, model, name)
        assert p["type"] is None, name
        assert all(w in p["description"] for w in words), (name, p["description"])
    # no prior: held fixed by the fit (and marked so)
    assert prior(2, "light", "n") == {"type": None}
    assert _param(path, 2, "light", 0, "n")["fixed"] is True
    assert _param(path, 0, "mass", 0, "theta_E")["fixed"] is False

    # COOLEST's reader takes every prior, and ours still reads the model
    serializer = JSONSerializer(str(path.with_suffix("")), check_external_files=False)
    document = serializer.load_simple(str(path), as_object=True, validate=False)
    read = document.lensing_entities[0].mass_model[0].parameters
    assert type(read["theta_E"].prior).__name__ == "UniformPrior"
    assert (read["theta_E"].prior.min_value, read["theta_E"].prior.max_value) == (0.5, 2.0)
    assert read["q"].prior.type is None
    _assert_same_fields(tracer, from_coolest(path))


def test_prior_errors_and_unused_priors(tmp_path):
    from twinlens.model import UniformPrior

    lens = Galaxy((SIE(einstein_radius=1.0), ExternalShear(0.01, 0.0)))
    tracer = Tracer(lens, Galaxy(light=Sersic()))
    out = tmp_path / "m.json"
    with pytest.raises(KeyError, match="names no parameter"):
        to_coolest(tracer, out, priors={"lenses[0].mass[0].slope": UniformPrior()})
    with pytest.raises(TypeError, match="twinlens prior"):
        to_coolest(tracer, out, priors={"lenses[0].mass[0].einstein_radius": (0.5, 2.0)})
    # COOLEST's shear has no origin: a prior on ours has nowhere to go
    with pytest.warns(UserWarning, match=r"priors on parameters .*mass\[1\]\.origin\[0\]"):
        to_coolest(tracer, out, priors={"lenses[0].mass[1].origin[0]": UniformPrior(-1, 1)})


# -- datasets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(20, 20), (16, 22)])
def test_dataset_written_as_fits(tmp_path, shape):
    from coolest.template.json import JSONSerializer

    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import simulate
    from twinlens.imaging.fits_io import read_image
    from twinlens.imaging.psf import PSF

    tracer = _tracer((0.1, 0.05), (0.0, 0.1), (0.1, -0.1))
    yy, xx = np.mgrid[-2:3, -2:3]
    psf = PSF(np.exp(-(xx**2 + yy**2) / 2.0))
    grid = Grid2D.uniform(shape, 0.15, origin=(0.1, -0.05)).circular_mask(1.2, (0.1, -0.05))
    dataset = simulate(tracer, grid, psf, noise_sigma=0.01, seed=1)
    path = _export(tracer, tmp_path, dataset=dataset)
    data, scale = read_image(tmp_path / "model_data.fits")
    np.testing.assert_array_equal(data, dataset.data)
    assert scale == 0.15
    mask, _ = read_image(tmp_path / "model_mask.fits")
    np.testing.assert_array_equal(mask, grid.mask.astype(float))
    doc = json.loads(path.read_text())
    pixels = doc["observation"]["pixels"]
    ny, nx = shape
    assert (pixels["num_pix_x"], pixels["num_pix_y"]) == (nx, ny)
    np.testing.assert_allclose(pixels["field_of_view_x"], [0.1 - nx * 0.075, 0.1 + nx * 0.075])
    np.testing.assert_allclose(pixels["field_of_view_y"], [-0.05 - ny * 0.075, -0.05 + ny * 0.075])
    assert doc["instrument"]["pixel_size"] == 0.15
    assert doc["instrument"]["psf"]["type"] == "PixelatedPSF"
    assert doc["observation"]["noise"]["type"] == "NoiseMap"
    # COOLEST's own reader accepts the file, with its consistency checks. It reads a FITS
    # array's shape as (num_pix_x, num_pix_y), transposed from the (ny, nx) its plots and
    # coordinates use, so its FITS-file check refuses non-square images (a COOLEST bug)
    square = shape[0] == shape[1]
    serializer = JSONSerializer(str(path.with_suffix("")), check_external_files=square)
    loaded = serializer.load_simple(str(path), validate=True)
    np.testing.assert_array_equal(
        loaded.observation.pixels.get_pixels(directory=str(tmp_path)), dataset.data
    )
    _assert_same_fields(tracer, from_coolest(path))


def test_without_dataset_the_file_validates(tmp_path):
    from coolest.template.json import JSONSerializer

    path = _export(_tracer((0.1, 0.0), (0.0, 0.0), (0.0, 0.1)), tmp_path)
    # check_external_files=False: COOLEST's reader otherwise wants a FITS file for the data
    JSONSerializer(str(path.with_suffix("")), check_external_files=False).load_simple(
        str(path), validate=True
    )
    assert "placeholder" in json.loads(path.read_text())["meta"]["twinlens"]["observation"]


# -- files written by others ------------------------------------------------------------------


def _foreign_file(tmp_path, lens_z=0.5, field_z=0.5):
    from coolest.template.json import JSONSerializer
    from coolest.template.lazy import (
        CoordinatesOrigin,
        Instrument,
        LensingEntityList,
        LightModel,
        MassField,
        MassModel,
        Observation,
    )
    from coolest.template.lazy import (
        Galaxy as CGalaxy,
    )
    from coolest.template.standard import COOLEST

    def set_values(profile, **values):
        for k, v in values.items():
            profile.parameters[k].set_point_estimate(v)

    lens = CGalaxy("main", lens_z, light_model=LightModel("Sersic"), mass_model=MassModel("SIE"))
    set_values(lens.mass_model[0], theta_E=1.2, q=0.7, phi=-80.0, center_x=0.0, center_y=0.1)
    set_values(
        lens.light_model[0],
        I_eff=2.0,
        theta_eff=0.8,
        n=4.0,
        q=0.8,
        phi=-75.0,
        center_x=0.0,
        center_y=0.1,
    )
    shear = MassField("shear", field_z, mass_model=MassModel("ExternalShear"))
    set_values(shear.mass_model[0], gamma_ext=0.04, phi_ext=20.0)
    companion = CGalaxy("companion light", 0.5, light_model=LightModel("Sersic"))
    set_values(
        companion.light_model[0],
        I_eff=0.5,
        theta_eff=0.2,
        n=1.0,
        q=1.0,
        phi=0.0,
        center_x=1.5,
        center_y=-0.5,
    )
    source = CGalaxy("source", 2.0, light_model=LightModel("Sersic"))
    set_values(
        source.light_model[0],
        I_eff=6.0,
        theta_eff=0.1,
        n=1.5,
        q=0.5,
        phi=89.9,
        center_x=0.05,
        center_y=0.0,
    )
    entities = LensingEntityList(lens, shear, companion, source)
    doc = COOLEST("MAP", CoordinatesOrigin(), entities, Observation(), Instrument(0.05))
    path = tmp_path / "foreign.json"
    JSONSerializer(str(path.with_suffix("")), obj=doc, check_external_files=False).dump_simple()
    return path


def test_foreign_file_read_and_checked_with_coolest_code(tmp_path):
    path = _foreign_file(tmp_path)
    tracer = from_coolest(path)
    assert [len(g.mass) for g in tracer.lenses] == [1, 1, 0]  # main, shear, companion light
    assert [type(p) for g in tracer.sources for p in g.light] == [Sersic]
    x, y = XY[:, 0], XY[:, 1]
    ours = tracer.deflections(XY, backend="numpy")
    np.testing.assert_allclose(
        np.stack(_coolest_deflections(path, x, y), -1), ours, atol=1e-10 * np.abs(ours).max()
    )
    image = tracer.image(XY, backend="numpy")
    # the companion (light only, at the lenses' redshift) is seen directly: not lensed
    theirs = _coolest_image(path, x, y)
    np.testing.assert_allclose(theirs, image, rtol=1e-10, atol=1e-10 * image.max())


def test_foreign_file_with_two_lens_planes_reads_as_multi_plane(tmp_path):
    tracer = from_coolest(_foreign_file(tmp_path, field_z=0.8))
    assert isinstance(tracer, MultiPlaneTracer)
    assert (tracer.plane_redshifts, tracer.z_source) == ((0.5, 0.8), 2.0)
    # the same profiles read on one plane (checked against COOLEST's code above), put on
    # their planes by hand: the shear behind the main lens deflects the deflected rays
    (tmp_path / "one").mkdir()
    main, shear, companion = from_coolest(_foreign_file(tmp_path / "one")).lenses
    expected = MultiPlaneTracer(
        (main, Galaxy(shear.mass, redshift=0.8), companion), tracer.sources, z_source=2.0
    )
    _assert_same_fields(expected, tracer)
    single = Tracer((main, shear, companion), tracer.sources)
    assert not np.allclose(single.deflections(XY, "numpy"), tracer.deflections(XY, "numpy"))


def test_several_lens_planes_need_a_source_redshift(tmp_path):
    lens = _tracer((0.1, 0.0), (0.0, 0.1), (0.2, 0.1)).lenses
    tracer = Tracer(
        (Galaxy(lens[0].mass, redshift=0.4), Galaxy(lens[1].mass, redshift=0.9)),
        Galaxy(light=Sersic()),
    )
    path = _export(tracer, tmp_path)
    assert type(from_coolest(path)) is Tracer  # written as a single-plane tracer
    # without the record of the class (another writer's file), the planes make it multi-plane
    doc = json.loads(path.read_text())
    del doc["meta"]["twinlens"]["tracer"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"several redshifts \[0.4, 0.9\].*source redshifts"):
        from_coolest(path)


def test_foreign_profiles_without_equivalent(tmp_path):
    from coolest.template.json import JSONSerializer
    from coolest.template.lazy import (
        CoordinatesOrigin,
        Instrument,
        LensingEntityList,
        LightModel,
        MassModel,
        Observation,
    )
    from coolest.template.lazy import (
        Galaxy as CGalaxy,
    )
    from coolest.template.standard import COOLEST

    def write(name, galaxy):
        doc = COOLEST(
            "MAP", CoordinatesOrigin(), LensingEntityList(galaxy), Observation(), Instrument(0.05)
        )
        path = tmp_path / f"{name}.json"
        JSONSerializer(str(path.with_suffix("")), obj=doc, check_external_files=False).dump_simple()
        return path

    nfw = write("nfw", CGalaxy("halo", 0.5, mass_model=MassModel("NFW")))
    with pytest.raises(ValueError, match="COOLEST's NFW mass profile"):
        from_coolest(nfw)
    shapelets = write("shapelets", CGalaxy("src", 2.0, light_model=LightModel("Shapelets")))
    with pytest.warns(UserWarning, match=r"Shapelets"):
        assert from_coolest(shapelets).sources == ()
    with pytest.raises(ValueError, match="COOLEST's Shapelets light profile"):
        from_coolest(shapelets, unsupported_light="raise")


# -- clear errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "profile, name",
    [
        (NFW(kappa_s=0.1, scale_radius=5.0), "NFW"),
        (NIE(ell_comps=(0.1, 0.0), core_radius=0.1), "NIE"),
    ],
)
def test_unsupported_mass_profile_is_named(tmp_path, profile, name):
    tracer = Tracer((Galaxy(SIS()), Galaxy(MassSum((SIS(), profile)))))
    with pytest.raises(ValueError, match=rf"lenses\[1\]\.mass\[0\]\.profiles\[1\] is a {name}"):
        to_coolest(tracer, tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


def test_unsupported_light_skipped_with_warning_or_refused(tmp_path):
    tracer = Tracer(
        Galaxy(SIS(), (GaussianLight(sigma=0.3), Sersic())),
        Galaxy(light=(MGELight([0.1, 0.2], [1.0, 2.0]), CoreSersic())),
    )
    match = r"lenses\[0\]\.light\[0\] \(GaussianLight\).*sources\[0\]\.light\[1\] \(CoreSersic\)"
    with pytest.warns(UserWarning, match=match):
        path = to_coolest(tracer, tmp_path / "m.json")
    skipped = json.loads(path.read_text())["meta"]["twinlens"]["skipped_light_profiles"]
    assert skipped == {
        "lenses[0].light[0]": "GaussianLight",
        "sources[0].light[0]": "MGELight",
        "sources[0].light[1]": "CoreSersic",
    }
    back = from_coolest(path)
    assert [type(p) for p in back.lenses[0].light] == [Sersic]
    with pytest.raises(ValueError, match=r"lenses\[0\]\.light\[0\] is a GaussianLight"):
        to_coolest(tracer, tmp_path / "m2.json", unsupported_light="raise")


@pytest.mark.parametrize(
    "profile, match",
    [
        (ExternalShear(0.01, 0.0, origin=(0.1, 0.0)), "origin fixed at"),
        (MassSheet(kappa=0.1, centre=(0.0, 0.2)), "origin fixed at"),
    ],
)
def test_shear_and_sheet_must_sit_at_the_origin(tmp_path, profile, match):
    with pytest.raises(ValueError, match=match):
        to_coolest(Tracer(Galaxy(profile)), tmp_path / "m.json")


@pytest.mark.parametrize(
    "light, match",
    [
        (Sersic(sersic_index=0.3), r"parameter n would be 0\.3, outside its range \[0\.5, 10"),
        (Sersic(intensity=-1.0), r"I_eff would be -\d"),
    ],
)
def test_values_outside_coolest_ranges(tmp_path, light, match):
    with pytest.raises(ValueError, match=match):
        to_coolest(Tracer(Galaxy(light=light)), tmp_path / "m.json")


def test_bad_paths(tmp_path):
    tracer = Tracer(Galaxy(SIS()))
    with pytest.raises(ValueError, match=r"\.json"):
        to_coolest(tracer, tmp_path / "model.txt")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        to_coolest(tracer, tmp_path / "missing" / "model.json")
    with pytest.raises(FileNotFoundError, match="no COOLEST file"):
        from_coolest(tmp_path / "absent.json")
    with pytest.raises(ValueError, match=r"\.json"):
        from_coolest(tmp_path / "model.fits")
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(ValueError, match="not a readable COOLEST file"):
        from_coolest(tmp_path / "other.json")
    with pytest.raises(TypeError, match="Tracer"):
        to_coolest(Galaxy(SIS()), tmp_path / "m.json")
    with pytest.raises(ValueError, match="mode"):
        to_coolest(tracer, tmp_path / "m.json", mode="DOC")


def test_missing_coolest_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "coolest", None)
    with pytest.raises(ImportError, match=r'pip install "twinlens\[fit\]"'):
        to_coolest(Tracer(Galaxy(SIS())), tmp_path / "m.json")
    with pytest.raises(ImportError, match=r'pip install "twinlens\[fit\]"'):
        from_coolest(tmp_path / "m.json")


def test_importing_twinlens_does_not_import_coolest():
    code = "import sys, twinlens, twinlens.export; print('coolest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- pixelised sources -----------------------------------------------------------------------


@pytest.mark.parametrize("mesh_kind", ["delaunay", "rectangular"])
def test_pixelised_source_is_written_as_coolest_interpolates_it(tmp_path, mesh_kind):
    from coolest.api.profiles.light import IrregularGrid
    from coolest.template.json import JSONSerializer

    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import simulate
    from twinlens.imaging.psf import PSF
    from twinlens.inversion import Constant, Delaunay, Pixelization, Rectangular
    from twinlens.inversion.source import source_on_grid
    from twinlens.likelihood.imaging import FitImaging

    mass = (SIE((0.02, -0.01), (0.1, 0.05), 1.0), ExternalShear(0.02, -0.01))
    grid = Grid2D.uniform(24, 0.1, sub_size=2).circular_mask(1.1)
    psf = PSF.gaussian(fwhm=0.15, pixel_scale=0.1, shape=5)
    truth = Tracer(Galaxy(mass=mass), Galaxy(light=Sersic((0.05, 0.02), (0.1, -0.1), 0.25, 1.2)))
    data = simulate(truth, grid, psf, noise_sigma=0.03, seed=4, backend="numpy")
    # square: COOLEST's file check reads a FITS shape as (nx, ny) (see the module docstring)
    mesh = Delaunay((8, 8)) if mesh_kind == "delaunay" else Rectangular((11, 11))
    tracer = Tracer(Galaxy(mass=mass), Galaxy(light=Pixelization(mesh, Constant(3.0))))
    fit = FitImaging(data, tracer, "numpy")
    with pytest.raises(ValueError, match=r"sources\[0\].pixelization is a pixelised source"):
        to_coolest(tracer, tmp_path / "missing.json")
    path = to_coolest(tracer, tmp_path / "pix.json", dataset=data, reconstruction=fit.pixelised)
    # read back by COOLEST's own code, its FITS file checked and loaded
    document = JSONSerializer(str(path.with_suffix(""))).load_simple(
        str(path), as_object=True, validate=True
    )
    (profile,) = document.lensing_entities[-1].light_model
    pixels = profile.parameters["pixels"]
    # our reconstruction as our mesh interpolates it, against COOLEST's linear interpolation
    image, scale, centre = source_on_grid(fit.pixelised.inversion, 40)
    axis = (np.arange(40) - 19.5) * scale
    x, y = np.meshgrid(centre[0] + axis, centre[1] + axis)
    if mesh_kind == "delaunay":
        assert profile.type == "IrregularGrid"
        xs, ys, zs = pixels.get_xyz(directory=str(tmp_path))
        theirs = IrregularGrid(
            pixels.field_of_view_x, pixels.field_of_view_y, pixels.num_pix, "linear"
        ).evaluate_surface_brightness(x, y, xs, ys, zs)
    else:
        assert profile.type == "PixelatedRegularGrid"
        assert (pixels.num_pix_x, pixels.num_pix_y) == (11, 11)
        # COOLEST's regular grid: pixel centres half a pixel inside its field of view,
        # interpolated linearly (its own evaluation needs scikit-image; scipy's is the same)
        from scipy.interpolate import RegularGridInterpolator

        (x0, x1), (y0, y1) = pixels.field_of_view_x, pixels.field_of_view_y
        cx = x0 + (np.arange(11) + 0.5) * (x1 - x0) / 11
        cy = y0 + (np.arange(11) + 0.5) * (y1 - y0) / 11
        values = pixels.get_pixels(directory=str(tmp_path))  # rows: y
        theirs = RegularGridInterpolator((cy, cx), values, bounds_error=False)((y, x))
    inside = np.isfinite(image) & np.isfinite(theirs)
    assert inside.mean() > 0.5
    np.testing.assert_allclose(theirs[inside], image[inside], rtol=1e-9, atol=1e-12)

"""Our deflections against lenstronomy's, computed in the test (``tox -e peers``).

Both are closed forms through the Faddeeva function (lenstronomy with scipy's), so they must
agree to 1e-12 relative on the design's W1 and W2 workloads.
"""

from __future__ import annotations

import numpy as np
import pytest

from twinlens import convert
from twinlens.mass import MGE, Gaussian

pytestmark = pytest.mark.peers

GRID = np.linspace(-5, 5, 100)
XY = np.stack(np.meshgrid(GRID, GRID), axis=-1).reshape(-1, 2)
W1 = Gaussian.from_axis_ratio(q=0.7, angle=30.0, centre=(0.05, -0.02), sigma=0.5, intensity=1.0)
W2 = MGE.from_axis_ratio(np.geomspace(0.01, 5.0, 30), np.ones(30), q=0.7, angle=30.0)


@pytest.mark.parametrize(("label", "profile"), [("W1", W1), ("W2", W2)])
@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_deflections_match_lenstronomy(label, profile, backend):
    from lenstronomy.LensModel.lens_model import LensModel  # installed by tox -e peers

    name, kwargs = convert.to_lenstronomy(profile)
    model = LensModel([name])
    ax, ay = model.alpha(XY[:, 0], XY[:, 1], [kwargs])
    ref = np.stack([ax, ay], axis=-1)
    ours = np.asarray(profile.deflections(XY, backend=backend))
    err = np.linalg.norm(ours - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert np.max(err) < 1e-12, (label, float(np.max(err)))


# -- analytic profiles -----------------------------------------------------------------------

ELL = {"e1": 0.12, "e2": -0.07, "center_x": 0.05, "center_y": -0.02}
M1M3M4 = {"theta_E": 1.2, "gamma": 2.1, **ELL, "a1_a": 0.01, "delta_phi_m1": 0.2, "a3_a": 0.02,
          "delta_phi_m3": -0.1, "a4_a": 0.03, "delta_phi_m4": 0.5}  # fmt: skip
# (lenstronomy name, kwargs, tolerance, why): 1e-12 where both sides are closed forms
ANALYTIC = [
    ("SIS", {"theta_E": 1.2, "center_x": 0.05}, 1e-12, "closed form"),
    ("NIE", {"theta_E": 1.2, "s_scale": 0.1, **ELL}, 1e-12, "closed form"),
    ("EPL", {"theta_E": 1.2, "gamma": 2.2, **ELL}, 1e-12, "series summed to convergence"),
    ("EPL", {"theta_E": 1.2, "gamma": 1.5, **ELL}, 1e-12, "series summed to convergence"),
    ("EPL_NUMBA", {"theta_E": 1.2, "gamma": 2.6, **ELL}, 1e-12, "series"),
    ("NFW", {"Rs": 1.5, "alpha_Rs": 0.6, "center_x": 0.05}, 1e-12, "closed form"),
    ("POINT_MASS", {"theta_E": 0.8, "center_y": 0.3}, 1e-12, "closed form"),
    ("SHEAR", {"gamma1": 0.05, "gamma2": -0.03, "ra_0": 0.1, "dec_0": 0.2}, 1e-12, "exact"),
    ("CONVERGENCE", {"kappa": 0.1, "ra_0": 0.1, "dec_0": 0.2}, 1e-12, "exact"),
    ("MULTIPOLE", {"m": 1, "a_m": 0.05, "phi_m": 0.3, "r_E": 1.2}, 1e-12, "closed form"),
    ("MULTIPOLE", {"m": 3, "a_m": 0.05, "phi_m": 0.3, "r_E": 1.2}, 1e-12, "closed form"),
    ("MULTIPOLE", {"m": 4, "a_m": 0.05, "phi_m": -0.3, "r_E": 1.2}, 1e-12, "closed form"),
    ("EPL_MULTIPOLE_M1M3M4", M1M3M4, 1e-12, "closed forms"),
    # lenstronomy's SIE is its NIE with a 1e-10" core: ~1e-8 at the innermost points
    ("SIE", {"theta_E": 1.2, **ELL}, 1e-7, "lenstronomy adds a 1e-10 core"),
    # lenstronomy's elliptical NFW is a cored-steep-ellipsoid fit good to ~5e-6
    ("NFW_ELLIPSE_CSE", {"Rs": 1.5, "alpha_Rs": 0.6, **ELL}, 2e-5, "lenstronomy's CSE fit"),
]


@pytest.mark.parametrize(("name", "kwargs", "tol", "why"), ANALYTIC, ids=lambda v: str(v)[:14])
@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_analytic_deflections_match_lenstronomy(name, kwargs, tol, why, backend):
    from lenstronomy.LensModel.lens_model import LensModel

    profile = convert.from_lenstronomy(name, kwargs)
    ax, ay = LensModel([name]).alpha(XY[:, 0], XY[:, 1], [kwargs])
    ref = np.stack([ax, ay], axis=-1)
    ours = np.asarray(profile.deflections(XY, backend=backend))
    scale = np.maximum(np.linalg.norm(ref, axis=-1), 1e-3 * np.max(np.abs(ref)))
    err = np.linalg.norm(ours - ref, axis=-1) / scale
    assert np.max(err) < tol, (name, why, float(np.max(err)))


def test_sie_matches_lenstronomy_epl_at_slope_2():
    from lenstronomy.LensModel.lens_model import LensModel

    kwargs = {"theta_E": 1.2, "gamma": 2.0, **ELL}
    ax, ay = LensModel(["EPL"]).alpha(XY[:, 0], XY[:, 1], [kwargs])
    sie = convert.from_lenstronomy("SIE", {"theta_E": 1.2, **ELL})
    err = np.linalg.norm(sie.deflections(XY) - np.stack([ax, ay], -1), axis=-1)
    assert np.max(err / np.hypot(ax, ay)) < 1e-12


@pytest.mark.parametrize("m", [1, 3, 4])
def test_elliptical_multipole_matches_lenstronomy_up_to_its_uniform_deflection(m):
    # lenstronomy's MULTIPOLE_ELL potential carries a first angular harmonic that ours does not:
    # a uniform deflection a_m (A cos(m phi_m), B sin(m phi_m)) (a gauge: it moves the source
    # plane rigidly and changes no image, magnification or time-delay difference)
    from lenstronomy.LensModel.lens_model import LensModel

    from twinlens.kernels.multipole import lenstronomy_gauge

    kwargs = {"m": m, "a_m": 0.05, "phi_m": 0.3, "q": 0.7, "center_x": 0.05, "r_E": 1.2}
    ax, ay = LensModel(["MULTIPOLE_ELL"]).alpha(XY[:, 0], XY[:, 1], [kwargs])
    gauge_a, gauge_b = lenstronomy_gauge(m, 0.7)
    offset = 0.05 * np.array([gauge_a * np.cos(m * 0.3), gauge_b * np.sin(m * 0.3)])
    ours = np.asarray(convert.from_lenstronomy("MULTIPOLE_ELL", kwargs).deflections(XY)) + offset
    ref = np.stack([ax, ay], axis=-1)
    assert np.max(np.abs(ours - ref)) < 1e-12 * np.max(np.abs(ref))


# -- light profiles and the imaging likelihood -------------------------------------------------

LIGHT = [
    ("SERSIC", {"amp": 3.0, "R_sersic": 0.4, "n_sersic": 2.5, "center_x": 0.1, "center_y": 0.0}),
    ("SERSIC_ELLIPSE", {"amp": 2.0, "R_sersic": 0.3, "n_sersic": 1.5, **ELL}),
    (
        "CORE_SERSIC",
        {
            "amp": 1.5,
            "R_sersic": 0.8,
            "Rb": 0.1,
            "n_sersic": 4.0,
            "gamma": 0.3,
            "alpha": 3.0,
            **ELL,
        },
    ),
]


@pytest.mark.parametrize(("name", "kwargs"), LIGHT)
@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_light_matches_lenstronomy(name, kwargs, backend):
    from lenstronomy.LightModel.light_model import LightModel

    profile = convert.light_from_lenstronomy(name, kwargs)
    assert convert.light_to_lenstronomy(profile)[1] == pytest.approx(
        {**kwargs, **({} if name != "SERSIC" else {"e1": 0.0, "e2": 0.0})}, rel=1e-13
    )
    rng = np.random.default_rng(8)
    xy = rng.uniform(-3, 3, size=(4000, 2))
    centre = np.array([kwargs["center_x"], kwargs["center_y"]])
    xy = xy[np.hypot(*(xy - centre).T) > 1e-3]  # lenstronomy floors R at 1e-4"
    ref = LightModel([name]).surface_brightness(xy[:, 0], xy[:, 1], [kwargs])
    ours = np.asarray(profile.image(xy, backend=backend))
    # the exact b_n absorbed into R_eff and the intensity: same function, rounding apart
    np.testing.assert_allclose(ours, ref, rtol=1e-11, atol=1e-14 * np.max(ref))


def _image_fit(data, noise, kernel, scale, sub, lens_models, source_models):
    from lenstronomy.Data.imaging_data import ImageData
    from lenstronomy.Data.psf import PSF as LensPSF
    from lenstronomy.ImSim.image_linear_solve import ImageLinearFit
    from lenstronomy.LensModel.lens_model import LensModel
    from lenstronomy.LightModel.light_model import LightModel

    ny, nx = data.shape
    image_data = ImageData(
        image_data=data,
        noise_map=noise,
        transform_pix2angle=np.diag([scale, scale]),
        ra_at_xy_0=-(nx - 1) / 2 * scale,
        dec_at_xy_0=-(ny - 1) / 2 * scale,
    )
    numerics = {"supersampling_factor": sub, "supersampling_convolution": False}
    return ImageLinearFit(
        image_data,
        LensPSF(psf_type="PIXEL", kernel_point_source=kernel),
        lens_model_class=LensModel(lens_models),
        source_model_class=LightModel(source_models),
        kwargs_numerics=numerics,
    )


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_imaging_chi_squared_matches_lenstronomy(backend):
    """W5 in miniature: an EPL at slope 2 (lenstronomy's SIE carries a 1e-10" core) plus shear,
    a Sersic source solved linearly, an asymmetric PSF; lenstronomy's log-likelihood is
    -chi^2 / 2 with a given noise map."""
    from twinlens.grids import Grid2D
    from twinlens.imaging.dataset import Imaging
    from twinlens.imaging.psf import PSF
    from twinlens.lensing.tracer import Galaxy, Tracer
    from twinlens.light import LinearSersic
    from twinlens.likelihood.imaging import FitImaging

    shape, scale, sub = (40, 40), 0.05, 3  # lenstronomy's linear solve needs a square image
    rng = np.random.default_rng(9)
    kernel = np.exp(-rng.random((7, 9)) * 4)
    kernel /= kernel.sum()
    lens_models = ["EPL", "SHEAR"]
    kwargs_lens = [{"theta_E": 0.7, "gamma": 2.0, **ELL}, {"gamma1": 0.03, "gamma2": -0.02}]
    kwargs_source = [
        {
            "amp": 30.0,
            "R_sersic": 0.2,
            "n_sersic": 1.5,
            "e1": -0.1,
            "e2": 0.15,
            "center_x": 0.05,
            "center_y": 0.05,
        }
    ]
    noise = 0.05 * (1 + rng.random(shape))
    fit = _image_fit(np.zeros(shape), noise, kernel, scale, sub, lens_models, ["SERSIC_ELLIPSE"])
    clean = fit.image(kwargs_lens, kwargs_source)
    data = clean + noise * rng.standard_normal(shape)
    fit = _image_fit(data, noise, kernel, scale, sub, lens_models, ["SERSIC_ELLIPSE"])
    log_l_lenstronomy = fit.likelihood_data_given_model(kwargs_lens, kwargs_source)[0]

    mass = convert.from_lenstronomy_list(lens_models, kwargs_lens)
    source = convert.light_from_lenstronomy("SERSIC_ELLIPSE", kwargs_source[0])
    linear = LinearSersic(
        source.centre, source.ell_comps, source.effective_radius, source.sersic_index
    )
    tracer = Tracer(Galaxy(mass=mass.profiles), Galaxy(light=linear))
    dataset = Imaging(data, noise, PSF(kernel), Grid2D.uniform(shape, scale, sub))
    ours = FitImaging(dataset, tracer, backend)
    # the same model (lenstronomy's image is ours times the pixel area, absorbed by the solved
    # intensity): chi-squared agrees to the 1e-10
    assert float(ours.chi_squared) == pytest.approx(-2 * log_l_lenstronomy, rel=1e-10)
    # lenstronomy's data are flux per pixel: the solved surface brightness is the true
    # intensity times the pixel area, within the noise (1%)
    assert float(ours.intensities[0]) == pytest.approx(source.intensity * scale**2, rel=1e-2)

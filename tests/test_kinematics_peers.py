"""Our velocity dispersions against lenstronomy's ``Galkin`` (``tox -e peers``).

The same spherical Jeans set-ups in both: lenstronomy's ``SPP`` (``theta_E``, ``gamma``: the
mean convergence inside ``theta_E`` is 1, ``rho ~ r^-gamma``, as our
:class:`~twinlens.kinematics.PowerLawMass`), its ``HERNQUIST`` light (``Rs`` our ``a``), its
``isotropic``, ``const`` and ``OM`` anisotropy, its ``shell`` (``r_in = 0``: our circle) and
``slit`` apertures and its Gaussian PSF, with our ``D_d``, ``D_s`` and ``D_ds`` as its
``kwargs_cosmo``.

Ours is exact to about 1e-13 (``tests/test_kinematics.py``, against mpmath); what is compared
here is Galkin's accuracy, in two parts:

* **The projected profile** ``sigma_los(R)`` (Galkin's ``I_R_sigma2_and_IR``, deterministic):
  a midpoint sum in ``log r`` whose error falls as one over ``interpol_grid_num``, about 5e-4
  at its defaults (200 points, ``max_integrate`` 100, ``min_integrate`` 1e-4), 2e-5 at 4,000
  points (``max_integrate`` 1e4, ``min_integrate`` 1e-6), 1e-5 at 8,000. Asserted: below 5e-5
  at 4,000 points, and smaller than at 1,000 (Galkin converges towards ours).
* **The aperture average** (``Galkin.dispersion``): a Monte Carlo over light drawn in 3D,
  projected, displaced by the seeing and kept when it lands in the aperture. Its scatter is
  about ``0.17 / sqrt(draws)`` relative, far above the profile's error once
  ``interpol_grid_num`` is 1,000 (``max_integrate`` 1e3, ``min_integrate`` 1e-5): reaching
  1e-4 would take about three million draws. Here 8 seeded batches of 5,000 draws (0.05%
  standard error); asserted: within four standard errors of the batch mean, plus 2e-4 for
  the profile.
"""

from __future__ import annotations

import numpy as np
import pytest

import twinlens.kinematics as K
from twinlens.cosmology import lens_distances

pytestmark = pytest.mark.peers


@pytest.fixture(autouse=True)
def _needs_lenstronomy() -> None:
    # in the test, not at import: the default run deselects these instead of skipping them
    pytest.importorskip("lenstronomy")


DIST = lens_distances(0.5, 2.0)
COSMO = {"d_d": DIST.d_d, "d_s": DIST.d_s, "d_ds": DIST.d_ds}
RADII = np.array([0.05, 0.3, 1.0, 2.0])
#: Galkin's numerics for the profile: coarse and converged
COARSE = {"interpol_grid_num": 1000, "max_integrate": 1e3, "min_integrate": 1e-5}
FINE = {"interpol_grid_num": 4000, "max_integrate": 1e4, "min_integrate": 1e-6}
#: for the aperture: the profile well below the Monte Carlo's scatter
MONTE_CARLO = COARSE
BATCHES, DRAWS = 8, 5000


def _galkin(anisotropy: str, kwargs_aperture: dict, fwhm: float, numerics: dict):
    from lenstronomy.GalKin.galkin import Galkin  # installed by tox -e peers

    kwargs_model = {
        "mass_profile_list": ["SPP"],
        "light_profile_list": ["HERNQUIST"],
        "anisotropy_model": anisotropy,
    }
    kwargs_psf = {"psf_type": "GAUSSIAN", "fwhm": fwhm}
    return Galkin(kwargs_model, kwargs_aperture, kwargs_psf, COSMO, dict(numerics))


def _shell(radius: float) -> dict:
    return {"aperture_type": "shell", "r_in": 0.0, "r_out": radius, "center_ra": 0.0,
            "center_dec": 0.0}  # fmt: skip


def _slit(length: float, width: float) -> dict:
    return {"aperture_type": "slit", "length": length, "width": width, "center_ra": 0.0,
            "center_dec": 0.0, "angle": 0.0}  # fmt: skip


# (ours, lenstronomy's name and keywords, theta_E, gamma, Hernquist a)
PROFILES = {
    "isotropic": (K.Isotropic(), "isotropic", {}, 1.1, 1.9, 0.7),
    "om": (K.OsipkovMerritt(1.5), "OM", {"r_ani": 1.5}, 1.2, 2.1, 0.9),
    "const+": (K.ConstantBeta(0.3), "const", {"beta": 0.3}, 1.1, 2.2, 0.7),
    "const-": (K.ConstantBeta(-0.4), "const", {"beta": -0.4}, 1.0, 2.0, 0.5),
}


def _galkin_profile(name: str, numerics: dict) -> np.ndarray:
    _, model, kwargs_anis, theta_e, gamma, a = PROFILES[name]
    galkin = _galkin(model, _shell(1.0), 0.7, numerics)
    s2i, i = galkin.numerics.I_R_sigma2_and_IR(
        RADII, [{"theta_E": theta_e, "gamma": gamma}], [{"Rs": a, "amp": 1.0}], kwargs_anis
    )
    return np.sqrt(s2i / i) / 1000.0  # m/s to km/s


@pytest.mark.parametrize("name", list(PROFILES))
def test_projected_dispersion_converges_to_galkin(name):
    anisotropy, _, _, theta_e, gamma, a = PROFILES[name]
    s2i, i = K.projected_dispersion(
        RADII, K.PowerLawMass(theta_e, gamma), K.Hernquist(a), anisotropy, DIST, "numba"
    )
    ours = np.sqrt(s2i / i)
    coarse = np.max(np.abs(_galkin_profile(name, COARSE) / ours - 1.0))
    fine = np.max(np.abs(_galkin_profile(name, FINE) / ours - 1.0))
    assert fine < 5e-5, (name, fine)
    assert fine < coarse, (name, fine, coarse)


# (ours: anisotropy, aperture; lenstronomy: model, anisotropy keywords, aperture; theta_E,
# gamma, Hernquist a, seeing FWHM)
APERTURES = {
    "w9": (K.OsipkovMerritt(1.5), K.CircularAperture(1.0), "OM", {"r_ani": 1.5}, _shell(1.0),
           1.2, 2.1, 0.9, 0.7),
    "isotropic-slit": (K.Isotropic(), K.Slit(1.0, 0.8), "isotropic", {}, _slit(1.0, 0.8),
                       1.1, 1.9, 0.7, 0.5),
    "const-circle": (K.ConstantBeta(0.3), K.CircularAperture(0.75), "const", {"beta": 0.3},
                     _shell(0.75), 1.0, 2.2, 1.2, 0.9),
}  # fmt: skip


@pytest.mark.parametrize("name", list(APERTURES))
def test_aperture_dispersion_within_galkin_scatter(name):
    anis, aperture, model, kwargs_anis, kwargs_ap, theta_e, gamma, a, fwhm = APERTURES[name]
    ours = K.velocity_dispersion(
        K.PowerLawMass(theta_e, gamma),
        K.Hernquist(a),
        anis,
        aperture,
        DIST,
        seeing=K.GaussianSeeing(fwhm),
        backend="numba",
    )
    galkin = _galkin(model, kwargs_ap, fwhm, MONTE_CARLO)
    kwargs = ([{"theta_E": theta_e, "gamma": gamma}], [{"Rs": a, "amp": 1.0}], kwargs_anis)
    # Galkin draws from numpy's global generator
    state = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(sorted(APERTURES).index(name) + 1)  # noqa: NPY002
        batches = np.array(
            [galkin.dispersion(*kwargs, sampling_number=DRAWS) for _ in range(BATCHES)]
        )
    finally:
        np.random.set_state(state)  # noqa: NPY002
    mean = batches.mean()
    stderr = batches.std(ddof=1) / np.sqrt(BATCHES) / mean
    diff = abs(mean / ours - 1.0)
    assert diff < 4.0 * stderr + 2e-4, (name, ours, mean, diff, stderr)


# --- jampy ----------------------------------------------------------------------------------


@pytest.fixture
def jam_sph_proj():
    return pytest.importorskip("jampy.sph.jam_sph_proj").jam_sph_proj


#: an MGE of light (peak surface brightness, sigma arcsec) and of mass (peak convergence);
#: jampy's line of sight stops at R + 3 max(sigma_lum), so a faint widest Gaussian sets that
#: reach at 16 widths of the others (with a bright one, its tail costs jampy about 1e-3)
JAM_LIGHT = (np.array([3.0, 1.0, 1e-9]), np.array([0.2, 0.8, 5.0]))
JAM_MASS = (np.array([2.0, 0.6, 0.1]), np.array([0.15, 0.7, 3.0]))
JAM_G = 0.004301  # jampy's G, (km/s)^2 pc / Msun: it cancels against Sigma_crit's


@pytest.mark.parametrize("r_ani", [None, 1.0])
def test_projected_dispersion_matches_jampy(jam_sph_proj, r_ani):
    """jampy's spherical ``jam_sph_proj`` (no PSF, no pixels: the second moment at the radii
    themselves) on the same MGEs: its surface densities are our convergences times
    ``Sigma_crit = c^2 D_s / (4 pi G D_d D_ds)`` in Msun/pc^2 with jampy's ``G``, so ``G``
    cancels. jampy's 1D quadrature runs at ``epsrel`` 1e-8; agreement measured: below 2.3e-9,
    asserted 1e-7 relative."""
    c_km_s = 299_792.458
    pc = 1e6  # parsecs in a megaparsec
    sigma_crit = c_km_s**2 * DIST.d_s / (4 * np.pi * JAM_G * DIST.d_d * DIST.d_ds * pc)
    radii = np.array([0.1, 0.5, 1.0, 2.0])
    (lum, sl), (kap, sm) = JAM_LIGHT, JAM_MASS
    jam = jam_sph_proj(
        lum, sl, kap * sigma_crit, sm, 0.0, DIST.d_d, radii, beta=np.zeros(3),
        rani=r_ani, epsrel=1e-8, plot=False, quiet=True,
    )  # fmt: skip
    anisotropy = K.Isotropic() if r_ani is None else K.OsipkovMerritt(r_ani)
    light = K.GaussianLight(2 * np.pi * lum * sl**2, sl)
    s2i, i = K.projected_dispersion(radii, K.GaussianMass(kap, sm), light, anisotropy, DIST)
    ours = np.sqrt(s2i / i)
    np.testing.assert_allclose(jam.model, ours, rtol=1e-7)

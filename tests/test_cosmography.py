"""Time-delay cosmography: flat LambdaCDM distances, the likelihood of delays and dispersions
with ``H0``, ``Omega_m``, ``lambda_int`` and ``kappa_ext``, on numba, numpy and JAX.

References: astropy's ``FlatLambdaCDM`` distances; the joint likelihood evaluated with
``D_dt = lambda_int (1 - kappa_ext) D_dt(astropy)`` plus a chi^2 written out here from
:func:`~twinlens.kinematics.velocity_dispersion`; the mass-sheet degeneracy itself (delays
alone are unchanged when ``H0`` and ``lambda_int`` scale together); finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from astropy.cosmology import FlatLambdaCDM

import twinlens.kinematics as K
from twinlens import memo
from twinlens.cosmology import flat_lcdm_distances, lens_distances
from twinlens.job.timedelay import POSITION_SIGMA, simulated_point_source, timedelay_tracer
from twinlens.likelihood.cosmography import (
    Cosmography,
    CosmographyLikelihood,
    VelocityDispersionData,
)
from twinlens.likelihood.joint import JointLikelihood
from twinlens.likelihood.point_source import PointSource, PointSourceData, PointSourceLikelihood
from twinlens.model import Model, UniformPrior

Z_LENS, Z_SOURCE = 0.5, 2.0
FREE = (
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[0].slope",
    "point_source.centre[0]",
    "cosmography.h0",
    "cosmography.omega_m",
    "cosmography.lambda_int",
    "cosmography.kappa_ext",
    "kinematics.r_ani",
)
H0, OM, LAM, KAP, RANI = 3, 4, 5, 6, 7  # their columns


@pytest.fixture(scope="module")
def parts() -> dict:
    with memo.disabled():
        point = simulated_point_source(1)
    data = PointSourceData(
        point["positions"], POSITION_SIGMA, point["delays"], point["delay_sigma"]
    )
    kin = VelocityDispersionData(
        sigma=(265.0, 250.0),
        error=(8.0, 9.0),
        apertures=(K.CircularAperture(0.5), K.CircularAperture(1.0)),
        light=K.Hernquist(0.5),
    )
    return {
        "tracer": timedelay_tracer(),
        "source": PointSource(centre=(0.04, 0.03)),
        "psl": PointSourceLikelihood(data, positions="source"),
        "kin": kin,
        "cosmo": Cosmography(70.0, 0.3, 1.0, 0.0, z_lens=Z_LENS, z_source=Z_SOURCE),
    }


def _likelihood(parts: dict, kinematics: bool = True, free: tuple = FREE) -> CosmographyLikelihood:
    kin = parts["kin"] if kinematics else None
    aniso = K.OsipkovMerritt(1.0) if kinematics else None
    if not kinematics:
        free = tuple(p for p in free if not p.startswith("kinematics."))
    return CosmographyLikelihood(
        None, parts["tracer"], parts["source"], parts["psl"], parts["cosmo"], kin, aniso, free
    )


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo = np.array([1.15, 1.95, 0.03, 55.0, 0.2, 0.8, -0.05, 0.5])
    hi = np.array([1.25, 2.15, 0.05, 85.0, 0.4, 1.2, 0.05, 3.0])
    return lo + (hi - lo) * rng.random((n, lo.size))


# -- distances -------------------------------------------------------------------------------


@pytest.mark.parametrize(("h0", "om", "zl", "zs"), [(70, 0.3, 0.5, 2.0), (55, 0.1, 0.2, 4.5)])
def test_distances_equal_astropy(h0: float, om: float, zl: float, zs: float) -> None:
    want = lens_distances(zl, zs, FlatLambdaCDM(H0=h0, Om0=om))
    got = flat_lcdm_distances(zl, zs, h0, om)
    np.testing.assert_allclose(got, (want.d_d, want.d_s, want.d_ds), rtol=1e-12)


def test_distances_broadcast_and_differentiate() -> None:
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    h0, om = np.array([60.0, 75.0]), np.array([0.25, 0.35])
    batch = np.stack(flat_lcdm_distances(0.5, 2.0, h0, om))
    for i in range(2):
        one = np.array(flat_lcdm_distances(0.5, 2.0, h0[i], om[i]))
        np.testing.assert_allclose(batch[:, i], one, rtol=1e-14)
    jnp = jax.numpy
    d_s = lambda h, m: flat_lcdm_distances(0.5, 2.0, h, m, jnp)[1]  # noqa: E731
    grad_h, grad_m = jax.grad(d_s, argnums=(0, 1))(70.0, 0.3)
    # every distance is c / H0 times a function of Omega_m
    assert float(grad_h) == pytest.approx(-float(d_s(70.0, 0.3)) / 70.0, rel=1e-12)
    step = 1e-6
    fd = [lens_distances(0.5, 2.0, FlatLambdaCDM(H0=70.0, Om0=0.3 + s)).d_s for s in (step, -step)]
    assert float(grad_m) == pytest.approx((fd[0] - fd[1]) / (2 * step), rel=1e-7)


# -- the likelihood against its parts ----------------------------------------------------------


def test_equals_joint_at_scaled_distance_plus_dispersion_chi2(parts: dict) -> None:
    like = _likelihood(parts)
    ps = PointSource(centre=(0.04, 0.03), time_delay_distance=5000.0)
    inner = (*FREE[:3], "point_source.time_delay_distance")
    joint = JointLikelihood(None, parts["tracer"], ps, parts["psl"], inner)
    kin = parts["kin"]
    vectors = _vectors(5)
    got = like.batch(vectors, "numpy")
    for v, g in zip(vectors, got, strict=True):
        cosmo = FlatLambdaCDM(H0=v[H0], Om0=v[OM])
        lam = v[LAM] * (1.0 - v[KAP])
        d = lens_distances(Z_LENS, Z_SOURCE, cosmo)
        want = joint(np.array([*v[:3], lam * d.d_dt]), "numpy")
        mass = K.PowerLawMass(v[0], v[1])
        model = [
            K.velocity_dispersion(mass, kin.light, K.OsipkovMerritt(v[RANI]), a, d, None, "numpy")
            for a in kin.apertures
        ]
        r = (np.array(kin.sigma) - np.sqrt(lam) * np.array(model)) / np.array([8.0, 9.0])
        assert g == pytest.approx(want - 0.5 * np.sum(r * r), rel=1e-10)


def test_delays_alone_cannot_tell_h0_from_lambda_int(parts: dict) -> None:
    """The mass-sheet degeneracy: ``H0 -> s H0`` with ``lambda_int -> s lambda_int`` leaves
    ``lambda D_dt`` and so the delays' likelihood unchanged; the dispersion breaks it."""
    v = _vectors(1, seed=3)[0]
    scaled = v.copy()
    scaled[H0] *= 1.2
    scaled[LAM] *= 1.2
    blind = _likelihood(parts, kinematics=False)
    w, ws = np.delete(v, RANI), np.delete(scaled, RANI)
    assert blind(ws, "numpy") == pytest.approx(blind(w, "numpy"), rel=1e-11)
    seeing = _likelihood(parts)
    assert abs(seeing(scaled, "numpy") - seeing(v, "numpy")) > 1.0


def test_backends_agree(parts: dict) -> None:
    from twinlens.backend import jax_runtime

    like = _likelihood(parts)
    vectors = _vectors(4, seed=1)
    ref = like.batch(vectors, "numpy")
    np.testing.assert_allclose(like.batch(vectors, "numba"), ref, rtol=1e-10)
    np.testing.assert_allclose(like.batch(vectors, "jax"), ref, rtol=1e-10)
    jnp = jax_runtime.load().numpy
    assert float(like(jnp.asarray(vectors[0]))) == pytest.approx(ref[0], rel=1e-10)


def test_gradient_matches_finite_differences(parts: dict) -> None:
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    like = _likelihood(parts)
    v = _vectors(1, seed=2)[0]
    grad = np.asarray(jax.grad(lambda x: like(x))(jax.numpy.asarray(v)))
    for j in (H0, OM, LAM, KAP, RANI):
        step = 1e-6 * max(abs(v[j]), 1.0)
        up, down = v.copy(), v.copy()
        up[j] += step
        down[j] -= step
        fd = (like(up, "numpy") - like(down, "numpy")) / (2 * step)
        assert grad[j] == pytest.approx(fd, rel=1e-5, abs=1e-6), FREE[j]


@pytest.mark.parametrize(
    ("column", "value"),
    [(H0, -5.0), (OM, 1.5), (LAM, 0.0), (KAP, 1.2), (RANI, -1.0), (H0, np.nan)],
)
def test_out_of_range_is_minus_inf(parts: dict, column: int, value: float) -> None:
    like = _likelihood(parts)
    vectors = _vectors(3, seed=4)
    vectors[1, column] = value
    for backend in ("numba", "jax"):
        out = like.batch(vectors, backend)
        assert out[1] == -np.inf, backend
        assert np.all(np.isfinite(out[[0, 2]])), backend


# -- mistakes, named -----------------------------------------------------------------------------


def test_clear_errors(parts: dict) -> None:
    with pytest.raises(ValueError, match=r"time_delay_distance.*cannot be free"):
        _likelihood(parts, free=(*FREE, "point_source.time_delay_distance"))
    with pytest.raises(ValueError, match="come together"):
        CosmographyLikelihood(
            None,
            parts["tracer"],
            parts["source"],
            parts["psl"],
            parts["cosmo"],
            parts["kin"],
            None,
            FREE[:-1],
        )
    no_delays = PointSourceLikelihood(
        PointSourceData(parts["psl"].data.positions, 0.003), positions="source"
    )
    with pytest.raises(ValueError, match="no delays"):
        CosmographyLikelihood(
            None, parts["tracer"], parts["source"], no_delays, parts["cosmo"], free=FREE[:3]
        )
    with pytest.raises(ValueError, match="names an object of type ExternalShear"):
        bad = VelocityDispersionData(
            260.0, 8.0, apertures=K.Slit(1.0, 0.8), light=K.Hernquist(), mass="lenses[0].mass[1]"
        )
        CosmographyLikelihood(
            None, parts["tracer"], parts["source"], parts["psl"], parts["cosmo"], bad,
            K.OsipkovMerritt(1.0), FREE,
        )  # fmt: skip
    with pytest.raises(ValueError, match="not scalar parameters"):
        _likelihood(parts, free=(*FREE, "cosmography.w0"))
    with pytest.raises(ValueError, match="h0 must be > 0"):
        Cosmography(h0=-70.0)
    with pytest.raises(ValueError, match="kappa_ext"):
        Cosmography(kappa_ext=1.0)
    with pytest.raises(ValueError, match="z_lens must be > 0"):
        Cosmography(z_lens=0.0)
    with pytest.raises(ValueError, match="2 CircularAperture, Annulus or Slit"):
        VelocityDispersionData((250.0, 260.0), 5.0, apertures=K.Slit(1.0, 0.8), light=K.Hernquist())
    with pytest.raises(ValueError, match="positive definite"):
        VelocityDispersionData(
            (250.0, 260.0),
            covariance=[[1.0, 2.0], [2.0, 1.0]],
            apertures=(K.Slit(1.0, 0.8), K.Slit(1.0, 0.8)),
            light=K.Hernquist(),
        )
    with pytest.raises(ValueError, match="error or covariance"):
        VelocityDispersionData(250.0, apertures=K.Slit(1.0, 0.8), light=K.Hernquist())


def test_model_holds_the_parts(parts: dict) -> None:
    priors = {
        "lenses[0].mass[0].einstein_radius": UniformPrior(1.0, 1.4),
        "cosmography.h0": UniformPrior(40.0, 100.0),
        "kinematics.r_ani": UniformPrior(0.2, 5.0),
    }
    model = Model(
        parts["tracer"],
        priors,
        parts["source"],
        cosmography=parts["cosmo"],
        kinematics=K.OsipkovMerritt(1.0),
    )
    np.testing.assert_array_equal(model.start, [1.2, 70.0, 1.0])
    assert model.tracer_paths == ("lenses[0].mass[0].einstein_radius",)
    assert model.part_instance("cosmography", [1.1, 65.0, 2.0]).h0 == 65.0
    assert model.part_instance("kinematics", [1.1, 65.0, 2.0]).r_ani == 2.0
    assert model.instance([1.1, 65.0, 2.0]).lenses[0].mass[0].einstein_radius == 1.1
    other = Model(
        parts["tracer"],
        priors,
        parts["source"],
        cosmography=Cosmography(z_lens=0.6),
        kinematics=K.OsipkovMerritt(1.0),
    )
    assert other.fixed_key() != model.fixed_key()  # the redshifts are part of the model
    with pytest.raises(TypeError, match=r"Model\.kinematics"):
        Model(parts["tracer"], priors, parts["source"], kinematics=K.Hernquist())


# -- a prior given by samples (kappa_ext) --------------------------------------------------------


def test_sampled_prior_is_a_distribution() -> None:
    """Its CDF and inverse CDF are each other's inverses, its density integrates to 1 and is
    the CDF's derivative, its draws follow the samples, and it runs on JAX."""
    from twinlens.backend import jax_runtime
    from twinlens.model import SampledPrior

    rng = np.random.default_rng(5)
    samples = rng.gamma(4.0, 0.01, 4000) - 0.02  # a skewed kappa_ext
    prior = SampledPrior.from_samples(samples)
    u = np.linspace(0.001, 0.999, 201)
    x = prior.from_unit(u)
    np.testing.assert_allclose(prior.to_unit(x), u, atol=1e-12)
    grid = np.linspace(*prior.support, 200_001)
    density = np.exp(prior.log_density(grid))
    assert np.trapezoid(density, grid) == pytest.approx(1.0, abs=1e-3)
    mid = 0.5 * (grid[1:] + grid[:-1])
    slope = np.diff(prior.to_unit(grid)) / np.diff(grid)
    bin_of = np.searchsorted(prior.edges, grid, side="right")
    within = bin_of[1:] == bin_of[:-1]  # cells inside one bin (the CDF bends at the edges)
    want = np.exp(prior.log_density(mid))
    np.testing.assert_allclose(slope[within], want[within], rtol=1e-6)
    draws = prior.from_unit(rng.random(20_000))
    for q in (0.1, 0.5, 0.9):  # against the samples themselves
        assert np.quantile(draws, q) == pytest.approx(np.quantile(samples, q), abs=2e-3)
    jnp = jax_runtime.load().numpy
    np.testing.assert_allclose(np.asarray(prior.from_unit(jnp.asarray(u), jnp)), x, rtol=1e-14)
    assert prior.log_density(prior.support[1] + 1e-9) == -np.inf
    with pytest.raises(ValueError, match="at least 20"):
        SampledPrior.from_samples([0.1, 0.2])


def test_composite_mass_is_the_sum_of_its_parts() -> None:
    """A lens of a power law and an NFW: the Jeans model takes their sum
    (:class:`~twinlens.kinematics.MassSum`), the same as the kinematics module's own."""
    from twinlens.lensing.tracer import Galaxy, Tracer
    from twinlens.mass import NFW, PowerLaw

    tracer = Tracer(
        Galaxy(
            mass=(
                PowerLaw((0.0, 0.0), (0.05, 0.0), 1.0, 2.1),
                NFW((0.0, 0.0), (0.0, 0.0), 0.1, 6.0),
            )
        ),
        Galaxy(),
    )
    kin = VelocityDispersionData(
        250.0, 8.0, apertures=K.CircularAperture(0.8), light=K.Hernquist(0.6),
        mass=("lenses[0].mass[0]", "lenses[0].mass[1]"),
    )  # fmt: skip
    cosmo = Cosmography(70.0, 0.3, 0.9, 0.05, z_lens=Z_LENS, z_source=Z_SOURCE)
    got = kin.predicted(tracer, cosmo, K.Isotropic(), "numpy")[0]
    mass = K.MassSum((K.PowerLawMass(1.0, 2.1), K.NFWMass(0.1, 6.0)))
    d = lens_distances(Z_LENS, Z_SOURCE, FlatLambdaCDM(H0=70.0, Om0=0.3))
    aperture = K.CircularAperture(0.8)
    want = K.velocity_dispersion(mass, K.Hernquist(0.6), K.Isotropic(), aperture, d, None, "numpy")
    assert got == pytest.approx(np.sqrt(0.9 * 0.95) * want, rel=1e-10)


def test_each_lens_profile_maps_to_its_spherical_mass() -> None:
    """A point mass, an isothermal profile (slope 2) and an NFW become the kinematics' own;
    a profile without a mass scale is named."""
    from twinlens.lensing.tracer import Galaxy, Tracer
    from twinlens.mass import NFW, SIE, ExternalShear, PointMass

    profiles = (
        PointMass((0.0, 0.0), 0.3),
        SIE((0.0, 0.0), (0.1, 0.0), 1.1),
        NFW((0.0, 0.0), (0.0, 0.0), 0.12, 5.0),
        ExternalShear(0.01, 0.0),
    )
    tracer = Tracer(Galaxy(mass=profiles), Galaxy())
    kin = VelocityDispersionData(
        250.0, 8.0, apertures=K.CircularAperture(0.8), light=K.Hernquist(0.6),
        mass=("lenses[0].mass[0]", "lenses[0].mass[1]", "lenses[0].mass[2]"),
    )  # fmt: skip
    masses = kin.model_mass(tracer).masses
    assert masses == (K.PointMass(0.3), K.PowerLawMass(1.1, 2.0), K.NFWMass(0.12, 5.0))
    with pytest.raises(ValueError, match="ExternalShear"):
        VelocityDispersionData(
            250.0, 8.0, apertures=K.CircularAperture(0.8), light=K.Hernquist(0.6),
            mass="lenses[0].mass[3]",
        ).model_mass(tracer)  # fmt: skip

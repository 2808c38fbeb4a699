"""The contributor guide's example works as the guide says."""

from __future__ import annotations

import importlib
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import scipy.integrate

from twinlens.backend import jax_runtime
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.job.config import ConfigError, parse_config
from twinlens.job.example import config_text
from twinlens.lensing.fused import _plan
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.validate import validate_kernel

sys.path.insert(0, str(Path(__file__).parents[1] / "docs" / "examples"))
plummer = importlib.import_module("plummer")
Plummer = plummer.Plummer
BACKENDS = ["numpy", "numba", "jax"]
XY = np.array([[1.1, -0.2], [0.1, 0.8], [0.1, -0.2], [-2.0, 3.0], [0.4, 0.5]])


@pytest.mark.parametrize("quantity", sorted(plummer.KERNELS))
def test_example_kernels_validate_on_every_backend(quantity):
    rows = validate_kernel(plummer.KERNELS[quantity], BACKENDS, n_points=64, n_random=3)
    assert rows and all(r.passed for r in rows), rows


@pytest.mark.parametrize("backend", BACKENDS)
def test_example_profile_matches_closed_forms(backend):
    p = Plummer(centre=(0.1, -0.2), einstein_radius=1.2, core_radius=0.3)
    alpha = np.asarray(p.deflections(XY, backend=backend))
    # on the axes through the centre, r = 1: alpha = theta_E^2 r / (r^2 + a^2)
    assert alpha[0, 0] == pytest.approx(1.44 / 1.09, rel=1e-14)
    assert alpha[1, 1] == pytest.approx(1.44 / 1.09, rel=1e-14)
    np.testing.assert_array_equal(alpha[2], [0.0, 0.0])
    kappa = np.asarray(p.convergence(XY, backend=backend))
    assert kappa[2] == pytest.approx(1.44 / 0.09, rel=1e-14)  # theta_E^2 / a^2 at the centre
    assert kappa[0] == pytest.approx(1.44 * 0.09 / 1.09**2, rel=1e-14)
    psi = np.asarray(p.potential(XY, backend=backend))
    assert psi[2] == 0.0
    assert psi[0] == pytest.approx(0.72 * np.log(1.09 / 0.09), rel=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_example_profile_is_self_consistent(backend):
    """Poisson's equation (kappa is half the hessian's trace), and the deflection and hessian
    as central differences of the potential and the deflection."""
    p = Plummer(centre=(0.1, -0.2), einstein_radius=0.9, core_radius=0.5)
    kappa = np.asarray(p.convergence(XY, backend=backend))
    h = np.asarray(p.hessian(XY, backend=backend))
    np.testing.assert_allclose(0.5 * (h[:, 0, 0] + h[:, 1, 1]), kappa, rtol=1e-13)
    step = 1e-5
    for axis in (0, 1):
        shift = np.zeros(2)
        shift[axis] = step
        up, down = XY + shift, XY - shift
        d_psi = (p.potential(up, backend=backend) - p.potential(down, backend=backend)) / (2 * step)
        np.testing.assert_allclose(
            d_psi, np.asarray(p.deflections(XY, backend=backend))[:, axis], rtol=1e-8
        )
        d_alpha = (
            np.asarray(p.deflections(up, backend=backend))
            - np.asarray(p.deflections(down, backend=backend))
        ) / (2 * step)
        np.testing.assert_allclose(d_alpha, h[:, :, axis], rtol=1e-7, atol=1e-9)


def test_example_mass_inside_a_radius_by_quadrature():
    """Gauss's law: the convergence integrated over a disc is the deflection at its edge times
    its radius (both kernels of the example, against each other and the closed form)."""
    p = Plummer(einstein_radius=1.3, core_radius=0.4)
    for radius in (0.1, 0.4, 2.5):
        inside, _ = scipy.integrate.quad(
            lambda r: 2 * np.pi * r * float(p.convergence(np.array([r, 0.0]), backend="numpy")),
            0.0,
            radius,
            epsabs=0,
            epsrel=1e-13,
        )
        edge = float(p.deflections(np.array([radius, 0.0]), backend="numpy")[0])
        assert inside / np.pi == pytest.approx(edge * radius, rel=1e-11)
        assert inside == pytest.approx(np.pi * 1.69 * radius**2 / (radius**2 + 0.16), rel=1e-11)


def test_example_profile_guards_identity_and_gradient():
    with pytest.raises(ValueError, match="core_radius must be > 0"):
        Plummer(core_radius=0.0)
    with pytest.raises(ValueError, match="einstein_radius must be > 0"):
        Plummer(einstein_radius=-1.0)
    assert Plummer((0.0, 0.0), 1.0, 0.2) == Plummer(einstein_radius=1.0, core_radius=0.2)
    jax = jax_runtime.load()

    def alpha_x(a):
        return Plummer(core_radius=a).deflections(np.array([[1.0, 0.0]]))[0, 0]

    # d/da [1 / (1 + a^2)] = -2a / (1 + a^2)^2
    assert float(jax.grad(alpha_x)(0.5)) == pytest.approx(-1.0 / 1.25**2, rel=1e-13)


def _lens_and_data():
    grid = Grid2D.uniform(24, 0.1, sub_size=2).circular_mask(1.1)
    psf = PSF.gaussian(fwhm=0.15, pixel_scale=0.1, shape=7)
    lens = Galaxy(mass=Plummer(centre=(0.02, -0.03), einstein_radius=1.0, core_radius=0.2))
    shape = dict(centre=(0.05, 0.1), ell_comps=(-0.1, 0.1), effective_radius=0.3, sersic_index=1.5)
    truth = Tracer(lens, Galaxy(light=Sersic(**shape, intensity=0.5)))
    dataset = simulate(truth, grid, psf, noise_sigma=0.05, seed=3)
    return lens, shape, truth, dataset


def test_example_profile_in_a_tracer_and_the_fused_loop():
    lens, _, truth, _ = _lens_and_data()
    # the fused numba loop plans the Plummer deflection like any built-in profile
    steps = _plan(list(lens.mass), [], list(truth.sources[0].light))
    assert steps is not None and steps[0][1].kernel is plummer.DEFLECTIONS
    xy = np.random.default_rng(0).uniform(-1.5, 1.5, (500, 2))
    fused = np.asarray(truth.image(xy, backend="numba"))
    # the profile-by-profile path: deflect, trace, shine, by hand
    beta = xy - np.asarray(lens.mass[0].deflections(xy, backend="numpy"))
    by_hand = np.asarray(truth.sources[0].light[0].image(beta, backend="numpy"))
    np.testing.assert_allclose(fused, by_hand, rtol=1e-13, atol=1e-15)


def test_example_profile_in_an_imaging_likelihood_on_both_backends():
    lens, shape, _, dataset = _lens_and_data()
    model = Tracer(lens, Galaxy(light=LinearSersic(**shape)))
    like = ImagingLikelihood(
        dataset,
        model,
        free=("lenses[0].mass[0].einstein_radius", "lenses[0].mass[0].core_radius"),
    )
    vectors = np.array([[1.0, 0.2], [0.95, 0.25], [1.0, -0.1]])  # the last is out of range
    numba, jax = (like.batch(vectors, backend=b) for b in ("numba", "jax"))
    np.testing.assert_allclose(numba[:2], jax[:2], rtol=1e-10)
    assert numba[0] > numba[1]  # the truth fits better than a shifted lens
    assert numba[2] == -np.inf and jax[2] == -np.inf


def _plummer_toml(mass_type: str = "plummer:Plummer") -> dict:
    text = config_text({"name": "nautilus", "n_live": 50}, "numba")
    sie = text.index('type = "SIE"')
    end = text.index("[[lens.mass]]", sie)
    plummer_table = (
        f'type = "{mass_type}"\n'
        "centre = [0.0, 0.0]\n"
        "einstein_radius = {uniform = [0.5, 2.0]}\n"
        "core_radius = {log_uniform = [0.01, 1.0]}\n"
    )
    return tomllib.loads(text[:sie] + plummer_table + text[end:])


def test_example_profile_in_the_fit_configuration():
    config = parse_config(_plummer_toml(), read_data=False)
    paths = config.model.paths
    assert "lenses[0].mass[0].core_radius" in paths
    assert "lenses[0].mass[0].einstein_radius" in paths
    tracer = config.model.instance(config.model.start)
    assert isinstance(tracer.lenses[0].mass[0], Plummer)


@pytest.mark.parametrize(
    ("mass_type", "message"),
    [
        ("no_such_module:Plummer", "cannot import module 'no_such_module'"),
        ("plummer:Nothing", "has no mass profile class 'Nothing'"),
        ("plummer:Kernel", "has no mass profile class 'Kernel'"),
    ],
)
def test_own_profile_errors_name_the_entry(mass_type, message):
    with pytest.raises(ConfigError, match=message) as err:
        parse_config(_plummer_toml(mass_type), read_data=False)
    assert "lens[0].mass[0].type" in str(err.value)


def test_imaging_quickstart_runs_and_backends_agree():
    quickstart = importlib.import_module("imaging_quickstart")
    out = quickstart.main(n_pix=30)
    numba_fit, jax_fit = out["fits"]["numba"], out["fits"]["jax"]
    assert float(numba_fit.log_likelihood) == pytest.approx(
        float(jax_fit.log_likelihood), rel=1e-10
    )
    # the simulated source intensity is recovered within the noise
    assert float(np.asarray(numba_fit.intensities)[0]) == pytest.approx(0.35, rel=0.05)
    np.testing.assert_allclose(out["batch"]["numba"], out["batch"]["jax"], rtol=1e-10)
    assert out["batch"]["numba"][2] == -np.inf  # a negative Einstein radius
    assert out["batch"]["numba"][0] == pytest.approx(float(numba_fit.log_likelihood), rel=1e-12)
    # the FITS round trip keeps the data exactly and reads the pixel scale from the header
    again, dataset = out["again"], out["dataset"]
    np.testing.assert_array_equal(again.data, dataset.data)
    assert again.grid.pixel_scale == dataset.grid.pixel_scale


def test_the_example_imports_only_twinlens_extend_and_the_public_api():
    import ast

    import twinlens

    source = Path(plummer.__file__).read_text()
    public = {"twinlens", "twinlens.extend", "twinlens.mass", "twinlens.light"}
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    ours = {m for m in imported if m.split(".")[0] == "twinlens"}
    assert ours and ours <= public, ours - public
    # every name the extension surface offers is there
    import twinlens.extend as extend

    assert all(hasattr(extend, n) for n in extend.__all__)
    assert extend.MassProfile is twinlens.mass.MassProfile

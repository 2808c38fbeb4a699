# ruff: noqa: E501 (the configuration error cases read best one per line)
"""A pixelised source in the product: Galaxy/Tracer, FitImaging, ImagingLikelihood, the fit
configuration, plots and FITS output (issue 18, item 5).

Every route is checked against a second path: ``log_evidence`` called directly on a mass-only
tracer (and, with lens light, on data from which the lens light was subtracted by the
parametric FitImaging), a dense numpy inverse for the error map, the mesh's own vertex values
for the FITS image."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest

from twinlens.grids import Grid2D
from twinlens.imaging import fits_io
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import (
    Constant,
    Curvature,
    Delaunay,
    FitPixelised,
    Pixelization,
    Rectangular,
    RectangularAdaptDensity,
    log_evidence,
)
from twinlens.inversion.source import (
    _host_matrices,
    reconstruction_errors,
    source_on_grid,
)
from twinlens.job.config import ConfigError, parse_config
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import GaussianLight, LinearSersic, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE, ExternalShear

MASS = (SIE((0.02, -0.01), (0.1, 0.05), 1.0), ExternalShear(0.02, -0.01))
LENS_LIGHT = Sersic((0.0, 0.0), (0.05, 0.03), 0.8, 2.0, 0.3)
SOURCE = (
    Sersic((0.05, 0.02), (0.1, -0.15), 0.25, 1.2, 0.6),
    GaussianLight(centre=(-0.18, 0.12), sigma=0.06, intensity=1.5),
    GaussianLight(centre=(0.2, -0.1), sigma=0.04, intensity=1.2),
)
FREE = (
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[1].gamma_1",
    "sources[0].pixelization.regularization.coefficient",
)


@pytest.fixture(scope="module")
def dataset() -> Imaging:
    grid = Grid2D.uniform(30, 0.1, sub_size=2).circular_mask(1.4)
    psf = PSF.gaussian(fwhm=0.15, pixel_scale=0.1, shape=5)
    truth = Tracer(Galaxy(mass=MASS, light=LENS_LIGHT), Galaxy(light=SOURCE))
    return simulate(truth, grid, psf, noise_sigma=0.03, seed=3, backend="numpy")


@pytest.fixture(scope="module")
def source_only() -> Imaging:
    grid = Grid2D.uniform(30, 0.1, sub_size=2).circular_mask(1.4)
    psf = PSF.gaussian(fwhm=0.15, pixel_scale=0.1, shape=5)
    truth = Tracer(Galaxy(mass=MASS), Galaxy(light=SOURCE))
    return simulate(truth, grid, psf, noise_sigma=0.03, seed=4, backend="numpy")


def pix(mesh=None, lam=3.0):
    return Pixelization(mesh or Delaunay((10, 10)), Constant(lam))


def rel(a, b):
    return abs(float(a) - float(b)) / max(abs(float(b)), 1e-300)


# -- Galaxy and Tracer ---------------------------------------------------------------------


def test_galaxy_light_pixelization_is_the_pixelization_field():
    p = pix()
    a, b = Galaxy(light=p), Galaxy(pixelization=p)
    assert a == b and hash(a) == hash(b)
    assert a.light == () and a.pixelization is p
    assert Tracer((), a).pixelizations == [p]
    with pytest.raises(ValueError, match="one Pixelization"):
        Galaxy(light=(p, pix(lam=2.0)))
    with pytest.raises(TypeError, match=r"Galaxy\.pixelization must be a Pixelization"):
        Galaxy(pixelization=Constant(1.0))
    with pytest.raises(ValueError, match="no image of its own until it is fitted"):
        Tracer(Galaxy(mass=MASS), a).image(np.zeros((3, 2)))
    grid, psf = Grid2D.uniform(10, 0.1), PSF.gaussian(fwhm=0.15, pixel_scale=0.1, shape=5)
    with pytest.raises(ValueError, match="no image of its own until it is fitted"):
        simulate(Tracer(Galaxy(mass=MASS), a), grid, psf, noise_sigma=0.1, backend="numpy")


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize(
    "mesh", [Delaunay((10, 10)), Rectangular((9, 9))], ids=["delaunay", "rect"]
)
def test_fit_imaging_is_the_evidence_of_the_inversion(source_only, backend, mesh):
    p = Pixelization(mesh, Constant(2.5))
    fit = FitImaging(source_only, Tracer(Galaxy(mass=MASS), Galaxy(light=p)), backend)
    direct = log_evidence(Tracer(Galaxy(mass=MASS)), source_only, p, backend)
    assert math.isfinite(direct)
    # the same computation through two entry points: rounding only
    assert rel(fit.log_likelihood, direct) < 1e-12
    assert fit.intensities.shape == (0,)
    chi2 = np.nansum(fit.normalized_residual_map**2)
    assert rel(chi2, fit.chi_squared) < 1e-10  # the model image is the one scored


def test_fixed_lens_light_is_subtracted_before_the_inversion(dataset):
    p = pix()
    tracer = Tracer(Galaxy(mass=MASS, light=LENS_LIGHT), Galaxy(light=p))
    fit = FitImaging(dataset, tracer, "numba")
    # second path: the lens light's model image from the parametric fit, subtracted by hand
    light_model = FitImaging(dataset, Tracer(Galaxy(light=LENS_LIGHT)), "numpy").model_image
    data = np.where(dataset.grid.used, dataset.data - np.nan_to_num(light_model), dataset.data)
    subtracted = Imaging(data, dataset.noise_map, dataset.psf, dataset.grid)
    direct = log_evidence(Tracer(Galaxy(mass=MASS)), subtracted, p, "numpy")
    assert rel(fit.log_likelihood, direct) < 1e-10
    # the model image holds the lens light too; leaving it out misfits the data badly
    without = FitImaging(dataset, Tracer(Galaxy(mass=MASS), Galaxy(light=p)), "numba")
    assert float(without.chi_squared) > 3 * float(fit.chi_squared)
    assert rel(np.nansum(fit.normalized_residual_map**2), fit.chi_squared) < 1e-10


def test_what_cannot_go_with_a_pixelised_source_is_refused(dataset):
    p = pix()
    src = Galaxy(light=p)
    cases = [
        (
            Tracer(Galaxy(mass=MASS), Galaxy(light=SOURCE[0], pixelization=p)),
            r"sources\[0\]\.light",
        ),
        (Tracer(Galaxy(mass=MASS), (src, Galaxy(light=SOURCE[1]))), r"sources\[1\]\.light"),
        (Tracer(Galaxy(mass=MASS, pixelization=p), src), r"lenses\[0\]\.pixelization"),
        (Tracer(Galaxy(mass=MASS), (src, Galaxy(light=pix(lam=2.0)))), r"sources\[1\]\.pixel"),
    ]
    for tracer, match in cases:
        with pytest.raises(ValueError, match=match):
            FitImaging(dataset, tracer, "numpy")
    free = ImagingLikelihood  # free lens light cannot be subtracted once
    tracer = Tracer(Galaxy(mass=MASS, light=LENS_LIGHT), src)
    with pytest.raises(ValueError, match=r"lenses\[0\]\.light\[0\]\.intensity.*fixed"):
        free(dataset, tracer, ("lenses[0].light[0].intensity",))


def test_linear_lens_light_with_free_parameters_in_a_likelihood(dataset):
    """A linear lens light is solved with the source at every call, so its other parameters
    may be free: numba and JAX batches agree with FitImaging."""
    tracer = Tracer(
        Galaxy(mass=MASS, light=LinearSersic(effective_radius=0.8, sersic_index=2.0)),
        Galaxy(light=pix()),
    )
    like = ImagingLikelihood(
        dataset,
        tracer,
        ("lenses[0].light[0].effective_radius", "lenses[0].mass[0].einstein_radius"),
    )
    vectors = np.array([[0.8, 1.0], [0.7, 1.02]])
    numba = like.batch(vectors, "numba")
    jax_values = np.asarray(like.batch(vectors, "jax"))
    for v, a, b in zip(vectors, numba, jax_values, strict=True):
        fit = FitImaging(dataset, like.instance(v), "numpy")
        assert np.size(fit.intensities) == 1
        assert rel(a, fit.log_likelihood) < 1e-10 and rel(b, fit.log_likelihood) < 1e-10


def test_memory_estimate_counts_the_jointly_solved_lens_light(dataset):
    """Each linear lens-light column joins the source pixels' mapping matrix and the dense
    solve: the estimate per evaluation grows by at least those columns' bytes."""
    free = ("lenses[0].mass[0].einstein_radius",)
    alone = ImagingLikelihood(dataset, Tracer(Galaxy(mass=MASS), Galaxy(light=pix())), free)
    joint = Tracer(
        Galaxy(mass=MASS, light=LinearSersic(effective_radius=0.8, sersic_index=2.0)),
        Galaxy(light=pix()),
    )
    with_light = ImagingLikelihood(dataset, joint, free)
    assert joint.n_linear == 1
    column = 8 * dataset.mask_index.size  # one float64 per masked-in pixel
    assert with_light.bytes_per_evaluation() - alone.bytes_per_evaluation() >= column


# -- ImagingLikelihood on both backends ------------------------------------------------------


def test_imaging_likelihood_numba_and_jax_agree(dataset):
    tracer = Tracer(Galaxy(mass=MASS, light=LENS_LIGHT), Galaxy(light=pix()))
    like = ImagingLikelihood(dataset, tracer, FREE)
    vectors = np.array(
        [
            [1.0, 0.02, 3.0],
            [1.03, 0.0, 30.0],
            [0.97, 0.04, 0.3],
            [1.0, 0.02, -1.0],  # lambda <= 0: -inf, never NaN or an exception
        ]
    )
    numba = like.batch(vectors, "numba")
    jax = like.batch(vectors, "jax")
    assert np.isneginf(numba[3]) and np.isneginf(jax[3])
    # same mesh and matrices on both backends; 1e-10 is the agreement target
    np.testing.assert_allclose(jax[:3], numba[:3], rtol=1e-10)
    # and the single-vector path is the FitImaging route
    fit = FitImaging(dataset, like.instance(vectors[1]), "numpy")
    assert rel(like(vectors[1], "numba"), fit.log_likelihood) < 1e-12
    assert rel(like(vectors[1], "jax"), fit.log_likelihood) < 1e-10


# -- error map and FITS ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "mesh",
    [Delaunay((10, 10)), Rectangular((9, 9)), RectangularAdaptDensity((9, 9))],
    ids=["delaunay", "rect", "rect-adapt"],
)
def test_error_map_and_source_grid(source_only, mesh):
    fit = FitPixelised(source_only, Tracer(Galaxy(mass=MASS)), Pixelization(mesh, Constant(2.0)))
    _, _, system, vector = _host_matrices(fit)
    # the rebuilt matrices give the fit's own source (a second path to the solve)
    s = np.linalg.solve(system, vector)
    np.testing.assert_allclose(s, fit.reconstruction, rtol=1e-8, atol=1e-10 * np.abs(s).max())
    errors = reconstruction_errors(fit)
    dense = np.sqrt(np.diag(np.linalg.inv(system)))
    np.testing.assert_allclose(errors, dense, rtol=1e-8)
    assert np.all(errors > 0)
    image, scale, centre = source_on_grid(fit, n=64)
    v = np.asarray(fit.source_vertices)
    assert image.shape == (64, 64)
    assert scale == pytest.approx(np.max(v.max(0) - v.min(0)) / 64, rel=1e-12)
    assert centre == pytest.approx(tuple(0.5 * (v.max(0) + v.min(0))), rel=1e-12)
    inside = np.isfinite(image)
    assert inside.mean() > 0.3
    # linear interpolation stays within the values it interpolates
    r = np.asarray(fit.reconstruction)
    assert image[inside].max() <= r.max() + 1e-12 and image[inside].min() >= r.min() - 1e-12


def test_plot_and_fits_written(tmp_path, dataset):
    from twinlens.job.pixelised import plot_pixelised_fit, write_source_fits

    for mesh in (Delaunay((10, 10)), Rectangular((9, 9))):
        tracer = Tracer(Galaxy(mass=MASS, light=LENS_LIGHT), Galaxy(light=pix(mesh)))
        fit = FitImaging(dataset, tracer, "numpy")
        png = plot_pixelised_fit(fit, tmp_path / "fit.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
        files = write_source_fits(fit, tmp_path, n=50)
        image, scale = fits_io.read_image(files["source"])
        expected, grid_scale, _ = source_on_grid(fit.pixelised.inversion, 50)
        assert image.shape == (50, 50) and scale == pytest.approx(grid_scale, rel=1e-15)
        np.testing.assert_array_equal(image, expected)
        errors, _ = fits_io.read_image(files["source_errors"])
        assert errors.shape == (50, 50) and np.nanmin(errors) > 0


# -- the fit configuration -------------------------------------------------------------------

TOML = """
[dataset]
data = "data.fits"
noise_map = "noise_map.fits"
psf = "psf.fits"

[[lens]]
[[lens.light]]
type = "Sersic"
centre = [0.0, 0.0]
ell_comps = [0.05, 0.03]
effective_radius = 0.8
sersic_index = 2.0
intensity = 0.3
[[lens.mass]]
type = "SIE"
centre = [0.02, -0.01]
ell_comps = [0.1, 0.05]
einstein_radius = {uniform = [0.8, 1.2]}
[[lens.mass]]
type = "ExternalShear"
gamma_1 = 0.02
gamma_2 = -0.01

[[source]]
[[source.light]]
type = "Pixelization"
mesh = {type = "Delaunay", shape = [10, 10]}
regularization = {type = "Constant", coefficient = {log_uniform = [0.01, 100.0], start = 3.0}}
"""


def test_config_round_trip(dataset):
    config = parse_config(tomllib.loads(TOML), read_data=False)
    model = config.model
    assert model.paths == (
        "lenses[0].mass[0].einstein_radius",
        "sources[0].pixelization.regularization.coefficient",
    )
    assert model.labels[-1] == r"\lambda^{\rm S0pix}"
    galaxy = model.tracer.sources[0]
    assert galaxy.pixelization == Pixelization(Delaunay((10, 10)), Constant(3.0))
    assert galaxy.light == ()
    from twinlens.search import Objective

    objective = Objective.build(model, dataset, "numba")
    value = objective.log_likelihood(np.array([[1.0, 3.0]]))[0]
    tracer = Tracer(Galaxy(mass=MASS, light=LENS_LIGHT), Galaxy(light=pix()))
    assert rel(value, FitImaging(dataset, tracer, "numpy").log_likelihood) < 1e-12
    rect = TOML.replace(
        'mesh = {type = "Delaunay", shape = [10, 10]}',
        'mesh = {type = "Rectangular", shape = [8, 9]}',
    ).replace('type = "Constant"', 'type = "Curvature"')
    galaxy = parse_config(tomllib.loads(rect), read_data=False).model.tracer.sources[0]
    assert galaxy.pixelization == Pixelization(Rectangular((8, 9)), Curvature(3.0))


MESH = 'mesh = {type = "Delaunay", shape = [10, 10]}'
REG = (
    'regularization = {type = "Constant", coefficient = {log_uniform = [0.01, 100.0], start = 3.0}}'
)


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        (MESH, 'mesh = {type = "Voronoi", shape = [10, 10]}', r'source\[0\]\.light\[0\]\.mesh\.type = "Voronoi": unknown mesh'),
        (MESH, 'mesh = {type = "Delaunay", shape = [1, 10]}', r"source\[0\]\.light\[0\]\.mesh \(Delaunay\): Delaunay\.shape"),
        (MESH, 'mesh = {type = "Delaunay", shape = [10.5, 10]}', r"source\[0\]\.light\[0\]\.mesh\.shape = \[10\.5, 10\]"),
        (MESH, 'mesh = {type = "Delaunay", shap = [10, 10]}', r"mesh\.shap: .*did you mean \"shape\""),
        (MESH, "", r"source\[0\]\.light\[0\]: Pixelization needs mesh"),
        (REG, "", r"Pixelization needs regularization"),
        (REG, 'regularization = {type = "Constant", coefficient = -1.0}', r"regularization\.coefficient = -1\.0: .*coefficient"),
        (REG, 'regularization = {type = "Curvature", coefficient = 1.0}', r'regularization\.type = "Curvature": .*Rectangular'),
        (REG, 'regularization = {type = "Smooth", coefficient = 1.0}', r'regularization\.type = "Smooth": unknown regularization'),
        (REG, 'regularization = {type = "Constant", coeff = 1.0}', r"regularization\.coeff: .*did you mean \"coefficient\""),
        (MESH, MESH + "\nextra = 1", r"Pixelization has no entry 'extra'; its entries are mesh, regularization, positive and relocation"),
        (MESH, MESH + "\npositiv = true", r"Pixelization has no entry 'positiv'.*did you mean \"positive\""),
        (MESH, MESH + "\npositive = 1", r"source\[0\]\.light\[0\]\.positive = 1: expected true or false"),
        (MESH, MESH + '\npositive = "yes"', r'source\[0\]\.light\[0\]\.positive = "yes": expected true or false'),
        (MESH, MESH + '\nrelocation = "smoth"', r'source\[0\]\.light\[0\]\.relocation = "smoth": expected one of .*did you mean "smooth"'),
        (MESH, MESH + "\nrelocation = 1", r"source\[0\]\.light\[0\]\.relocation = 1: expected one of 'smooth', 'nearest'"),
        ("intensity = 0.3", "intensity = {uniform = [0.1, 0.5]}", r"lens\[0\]\.light\[0\]\.intensity: lens light beside a pixelised source must have fixed"),
        ("[[source.light]]\ntype = \"Pixelization\"", "[[source.light]]\ntype = \"GaussianLight\"\nsigma = 0.1\nintensity = 1.0\n[[source.light]]\ntype = \"Pixelization\"", r"source\[0\]\.light: light profiles in the same galaxy"),
    ],
)  # fmt: skip
def test_config_errors_name_the_key(old, new, match):
    text = TOML.replace(old, new, 1)
    assert text != TOML
    with pytest.raises(ConfigError, match=match):
        parse_config(tomllib.loads(text), read_data=False)


@pytest.mark.parametrize("flag", [True, False])
def test_config_positive_is_passed_on(flag):
    text = TOML.replace(MESH, MESH + f"\npositive = {'true' if flag else 'false'}", 1)
    assert text != TOML
    galaxy = parse_config(tomllib.loads(text), read_data=False).model.tracer.sources[0]
    assert galaxy.pixelization.positive is flag
    assert galaxy.pixelization == Pixelization(Delaunay((10, 10)), Constant(3.0), positive=flag)
    # left out, the default: unconstrained
    default = parse_config(tomllib.loads(TOML), read_data=False).model.tracer.sources[0]
    assert default.pixelization.positive is False


@pytest.mark.parametrize("rule", ["smooth", "nearest"])
def test_config_relocation_is_passed_on(rule):
    text = TOML.replace(MESH, MESH + f'\nrelocation = "{rule}"', 1)
    galaxy = parse_config(tomllib.loads(text), read_data=False).model.tracer.sources[0]
    assert galaxy.pixelization.relocation == rule
    assert galaxy.pixelization == Pixelization(Delaunay((10, 10)), Constant(3.0), relocation=rule)
    # left out, the default: the smooth rule
    default = parse_config(tomllib.loads(TOML), read_data=False).model.tracer.sources[0]
    assert default.pixelization.relocation == "smooth"


def test_config_linear_lens_light_may_have_free_parameters():
    text = TOML.replace(
        'type = "Sersic"\ncentre = [0.0, 0.0]\nell_comps = [0.05, 0.03]\neffective_radius = 0.8\nsersic_index = 2.0\nintensity = 0.3',
        'type = "LinearSersic"\neffective_radius = {uniform = [0.5, 1.2]}',
    )  # fmt: skip
    assert text != TOML
    model = parse_config(tomllib.loads(text), read_data=False).model
    assert "lenses[0].light[0].effective_radius" in model.paths


def test_config_pixelization_in_a_lens_is_refused():
    text = TOML.replace("[[lens.mass]]\ntype = \"SIE\"", "[[lens.light]]\ntype = \"Pixelization\"\n" + MESH + "\n" + REG + "\n[[lens.mass]]\ntype = \"SIE\"", 1)  # fmt: skip
    with pytest.raises(
        ConfigError, match=r'lens\[0\]\.light\[1\]\.type = "Pixelization": .*source'
    ):
        parse_config(tomllib.loads(text), read_data=False)


def _kmeans_toml(tmp_path, dataset, mesh: str) -> str:
    for name, image in (("data", dataset.data), ("noise_map", dataset.noise_map)):
        fits_io.write_image(tmp_path / f"{name}.fits", image, 0.1, overwrite=True)
    fits_io.write_image(tmp_path / "psf.fits", dataset.psf.kernel, 0.1, overwrite=True)
    text = TOML.replace(MESH, mesh, 1).replace(
        'psf = "psf.fits"', 'psf = "psf.fits"\nsub_size = 2\nmask_radius = 1.4', 1
    )
    assert MESH not in text
    return text


def test_config_kmeans_mesh_clusters_on_the_data_or_an_image(tmp_path, dataset):
    from twinlens.inversion import kmeans_vertices

    text = _kmeans_toml(
        tmp_path, dataset, 'mesh = {type = "Delaunay", n_vertices = 40, brightness = "data"}'
    )
    config = parse_config(tomllib.loads(text), tmp_path)
    mesh = config.model.tracer.sources[0].pixelization.mesh
    # the vertices the documented function gives on the data read from the files
    expected = kmeans_vertices(config.dataset.grid, config.dataset.data, 40)
    np.testing.assert_array_equal(mesh.image_vertices, expected)
    assert config.dataset.grid.shape == dataset.grid.shape
    # a brightness image of one's own (a previous fit's model), with the weighting settings
    model = FitImaging(dataset, Tracer(Galaxy(mass=MASS), Galaxy(light=SOURCE)), "numpy")
    fits_io.write_image(tmp_path / "model.fits", model.model_image, 0.1, overwrite=True)
    text = _kmeans_toml(
        tmp_path,
        dataset,
        'mesh = {type = "Delaunay", n_vertices = 30, brightness = "model.fits", '
        "weight_floor = 0.2, weight_power = 2.0}",
    )
    mesh = parse_config(tomllib.loads(text), tmp_path).model.tracer.sources[0].pixelization.mesh
    expected = kmeans_vertices(
        config.dataset.grid, model.model_image, 30, weight_floor=0.2, weight_power=2.0
    )
    np.testing.assert_array_equal(mesh.image_vertices, expected)
    assert len(mesh.image_vertices) == 30
    # checked without the data (a catalogue's first pass): the file must exist, no clustering
    checked = parse_config(tomllib.loads(text), tmp_path, read_data=False)
    assert checked.model.tracer.sources[0].pixelization.mesh.image_vertices is None


@pytest.mark.parametrize(
    ("mesh", "match"),
    [
        ('{type = "Delaunay", n_vertices = 40, shape = [5, 5], brightness = "data"}', r"mesh: give shape .* or n_vertices .*, not both"),
        ('{type = "Delaunay", n_vertices = 2, brightness = "data"}', r"mesh\.n_vertices = 2: expected a whole number >= 3"),
        ('{type = "Delaunay", n_vertices = 40}', r"mesh\.brightness is missing"),
        ('{type = "Delaunay", shape = [5, 5], brightness = "data"}', r"mesh\.brightness: a k-means setting; give n_vertices"),
        ('{type = "Delaunay", n_vertices = 40, brightness = "nope.fits"}', r'^source\[0\]\.light\[0\]\.mesh\.brightness = "nope\.fits": no such file'),
        ('{type = "Delaunay", n_vertices = 40, brightness = "psf.fits"}', r"an image of shape \(5, 5\), but the data's grid is \(30, 30\)"),
        ('{type = "Delaunay", n_vertices = 40, brightness = "data", weight_floor = 2.0}', r"mesh\.weight_floor = 2\.0: expected a number in \[0\.0, 1\.0\]"),
    ],
)  # fmt: skip
def test_config_kmeans_mistakes_name_the_key(tmp_path, dataset, mesh, match):
    text = _kmeans_toml(tmp_path, dataset, f"mesh = {mesh}")
    with pytest.raises(ConfigError, match=match):
        parse_config(tomllib.loads(text), tmp_path)

"""The fit job: configuration files, the example, the results folder and the command line.

A short fit runs here on a small problem; the full example (``twinlens fit --example``) is
marked slow (``tox -e slow``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from twinlens import cli
from twinlens.grids import Grid2D
from twinlens.imaging import fits_io
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.job import example, run_fit
from twinlens.job.config import ConfigError, load_config, parse_config
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.mass import SIE
from twinlens.model import GaussianPrior, LogUniformPrior, UniformPrior

THETA_E, R_EFF = 0.9, 0.25


def _small_dataset(directory: Path) -> None:
    """A 30 x 30 lens (SIE + Sersic source), little noise, written as FITS files."""
    truth = Tracer(
        Galaxy(mass=SIE((0.0, 0.0), (0.1, 0.0), THETA_E)),
        Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), R_EFF, 1.0, 2.0)),
    )
    grid = Grid2D.uniform(30, 0.08, 1)
    psf = PSF.gaussian(0.12, 0.08, 5)
    data = simulate(truth, grid, psf, noise_sigma=0.02, seed=3)
    fits_io.write_image(directory / "data.fits", data.data, 0.08)
    fits_io.write_image(directory / "noise_map.fits", data.noise_map, 0.08)
    fits_io.write_image(directory / "psf.fits", psf.kernel, 0.08)


SMALL = """
title = "small test lens"
backend = "{backend}"
output = "out_{backend}"

[dataset]
data = "data.fits"
noise_map = "noise_map.fits"
psf = "psf.fits"
sub_size = 1

[search]
name = "nautilus"
n_live = 60
n_eff = 400
seed = 2

[[lens]]
[[lens.mass]]
type = "SIE"
centre = [0.0, 0.0]
ell_comps = [0.1, 0.0]
einstein_radius = {{uniform = [0.5, 1.5]}}

[[source]]
[[source.light]]
type = "LinearSersic"
centre = [0.05, 0.0]
ell_comps = [0.0, 0.1]
effective_radius = {{log_uniform = [0.05, 1.0], start = 0.3}}
sersic_index = 1.0
"""


def test_config_reads_priors_starts_and_the_dataset(tmp_path):
    _small_dataset(tmp_path)
    (tmp_path / "fit.toml").write_text(SMALL.format(backend="numba"))
    config = load_config(tmp_path / "fit.toml")
    assert config.model.paths == (
        "lenses[0].mass[0].einstein_radius",
        "sources[0].light[0].effective_radius",
    )
    priors = dict(config.model.priors)
    assert priors["lenses[0].mass[0].einstein_radius"] == UniformPrior(0.5, 1.5)
    assert priors["sources[0].light[0].effective_radius"] == LogUniformPrior(0.05, 1.0)
    np.testing.assert_allclose(config.model.start, [1.0, 0.3])  # prior median; start
    assert config.dataset.data.shape == (30, 30) and config.dataset.grid.pixel_scale == 0.08
    assert config.search == {"name": "nautilus", "n_live": 60, "n_eff": 400, "seed": 2}
    assert config.output == tmp_path / "out_numba"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.replace('type = "SIE"', 'type = "SIEE"'), r"lens\[0\]\.mass\[0\]\.type"),
        (lambda s: s.replace("{uniform = [0.5, 1.5]}", "{uniform = [1.5, 0.5]}"), "lower < upper"),
        (lambda s: s.replace("start = 0.3", "start = 3.0"), "outside"),
        (lambda s: s.replace("{uniform = [0.5, 1.5]}", "{normal = [1, 1]}"), "exactly one of"),
        (lambda s: s.replace('data = "data.fits"', 'data = "nope.fits"'), "no such file"),
        (lambda s: s + "\n[extra]\n", "unknown sections"),
        (lambda s: s.replace('backend = "numba"', 'backend = "cuda"'), "unknown backend"),
        (lambda s: s.replace("sersic_index = 1.0", "sersic_index = 40.0"), "sersic_index"),
    ],
)
def test_config_mistakes_name_the_entry(tmp_path, change, message):
    _small_dataset(tmp_path)
    (tmp_path / "fit.toml").write_text(change(SMALL.format(backend="numba")))
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path / "fit.toml")


def test_the_example_configuration_is_the_truth_with_priors(tmp_path):
    path = example.write_example(tmp_path, search={"name": "nautilus", "n_live": 50})
    config = load_config(path)
    assert config.model.paths == tuple(example.TRUTH)
    truth = np.array([example.TRUTH[p] for p in config.model.paths])
    for (_, prior), value in zip(config.model.priors, truth, strict=True):
        assert np.isfinite(prior.log_density(value))  # every truth inside its prior
    masses = [type(m).__name__ for m in config.model.tracer.lenses[0].mass]
    assert masses == ["SIE", "ExternalShear"]  # no mass-to-light ridge in the example
    # the simulated data are the example tracer's image: the truth fits them to the noise
    tracer = config.model.instance(truth)
    from twinlens.likelihood.imaging import FitImaging

    fit = FitImaging(config.dataset, tracer, "numba")
    n = config.dataset.mask_index.size
    assert abs(float(fit.chi_squared) - n) < 5 * np.sqrt(2 * n)
    with pytest.raises(FileExistsError):
        example.write_example(tmp_path)


def test_a_short_fit_writes_every_result_and_recovers_the_lens(tmp_path):
    _small_dataset(tmp_path)
    (tmp_path / "fit.toml").write_text(SMALL.format(backend="numba"))
    assert cli.main(["fit", str(tmp_path / "fit.toml"), "--quiet"]) == 0
    out = tmp_path / "out_numba"
    for name in (
        "summary.txt",
        "result.json",
        "samples.csv",
        "model.fits",
        "residuals.fits",
        "normalized_residuals.fits",
        "source.fits",
        "fit.png",
        "lens.png",
        "corner.png",
        "coolest.json",
        "nautilus.hdf5",
    ):
        assert (out / name).is_file(), name
    record = json.loads((out / "result.json").read_text())
    theta = record["parameters"]["lenses[0].mass[0].einstein_radius"]
    sigma = 0.5 * (theta["upper_68"] - theta["lower_68"])
    assert abs(theta["median"] - THETA_E) < max(3 * sigma, 1e-3)
    assert abs(theta["median"] / THETA_E - 1) < 0.01
    assert record["log_evidence"] is not None and record["n_samples"] > 50
    best = record["max_likelihood_model"]  # every scalar, fixed and solved ones included
    assert best["lenses[0].mass[0].ell_comps[0]"] == 0.1
    assert best["sources[0].light[0].intensity"] > 0
    derived = record["derived"]["einstein_radius"]  # one SIE: its radius, as closely
    assert abs(derived["median"] - theta["median"]) < 0.02
    samples = np.loadtxt(out / "samples.csv", delimiter=",", skiprows=1)
    assert samples.shape == (record["n_samples"], 3)
    model, _ = fits_io.read_image(out / "model.fits")
    assert model.shape == (30, 30)
    # the fit's own priors reach the COOLEST file (the configuration's uniform [0.5, 1.5])
    coolest = json.loads((out / "coolest.json").read_text())
    lens_mass = coolest["lensing_entities"][0]["mass_model"][0]["parameters"]
    assert lens_mass["theta_E"]["prior"] == {
        "type": "UniformPrior",
        "min_value": 0.5,
        "max_value": 1.5,
    }


@pytest.mark.slow
def test_numba_and_jax_give_the_same_posterior(tmp_path):
    _small_dataset(tmp_path)
    medians = {}
    for backend in ("numba", "jax"):
        (tmp_path / "fit.toml").write_text(SMALL.format(backend=backend))
        run_fit(load_config(tmp_path / "fit.toml"), progress=False, plot=False)
        record = json.loads((tmp_path / f"out_{backend}" / "result.json").read_text())
        medians[backend] = record["parameters"]
    for path, numba in medians["numba"].items():
        jax = medians["jax"][path]
        sigma = 0.5 * (numba["upper_68"] - numba["lower_68"])
        assert abs(numba["median"] - jax["median"]) < sigma, path


@pytest.mark.slow
def test_the_example_fit_recovers_the_einstein_radius(tmp_path):
    # the lens's Einstein radius is that of its total mass: the SIE's own radius trades off
    # against the stellar mass-to-light ratio, which the image cannot tell apart
    assert cli.main(["fit", "--example", "--output", str(tmp_path), "--quiet"]) == 0
    record = json.loads((tmp_path / "fit_output" / "result.json").read_text())
    theta = record["derived"]["einstein_radius"]
    sigma = 0.5 * (theta["upper_68"] - theta["lower_68"])
    truth = example.example_tracer().einstein_radius()
    assert abs(theta["median"] / truth - 1) < 0.01
    assert abs(theta["median"] - truth) < 3 * sigma


def test_simulate_command_writes_a_fittable_folder(tmp_path, capsys):
    assert cli.main(["simulate", str(tmp_path / "lens")]) == 0
    assert "twinlens fit" in capsys.readouterr().out
    config = load_config(tmp_path / "lens" / "fit.toml")
    assert config.model.n_params == len(example.TRUTH)
    assert cli.main(["simulate", str(tmp_path / "lens")]) == 2  # exists: refused, nothing lost
    assert "--overwrite" in capsys.readouterr().err


def test_parse_config_needs_data_lens_source_and_a_free_parameter(tmp_path):
    lens = [{"mass": [{"type": "SIS"}]}]
    with pytest.raises(ConfigError, match=r"nothing to fit: give a \[dataset\]"):
        parse_config({"lens": lens}, tmp_path)
    files = {"data": "d.fits", "noise_map": "n.fits", "psf": "p.fits"}  # checked, not read
    with pytest.raises(ConfigError, match=r"at least one \[\[lens\]\] and one \[\[source\]\]"):
        parse_config({"lens": lens, "dataset": files}, tmp_path, read_data=False)
    with pytest.raises(ConfigError, match="no free parameter"):
        parse_config(
            {
                "lens": [{"mass": [{"type": "SIS", "einstein_radius": 1.0}]}],
                "source": [{"light": [{"type": "LinearSersic"}]}],
                "dataset": files,
            },
            tmp_path,
            read_data=False,
        )
    assert GaussianPrior(0.0, 1.0).median == 0.0


@pytest.mark.slow
def test_a_map_fit_on_jax_writes_its_results(tmp_path):
    _small_dataset(tmp_path)
    text = SMALL.format(backend="jax").replace(
        'name = "nautilus"\nn_live = 60\nn_eff = 400', 'name = "map"\nn_starts = 4\nn_steps = 200'
    )
    (tmp_path / "fit.toml").write_text(text)
    files = run_fit(load_config(tmp_path / "fit.toml"), progress=False)
    assert "corner_plot" not in files  # one point: no corner plot
    record = json.loads(files["json"].read_text())
    theta = record["parameters"]["lenses[0].mass[0].einstein_radius"]["median"]
    assert abs(theta / THETA_E - 1) < 0.01

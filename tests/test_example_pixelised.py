"""The pixelised variant of the built-in example, end to end (slow: a few minutes on 2 cores).

``twinlens fit --example pixelised --quick`` simulates an irregular source behind an SIE plus
shear and fits it in two stages scored by the evidence: a Delaunay pixelisation with one
regularisation coefficient, then an adaptive-density lattice whose regularisation adapts to the
first stage's source. The truths are independent of the fit: the simulated lens's parameters
and its effective Einstein radius."""

from __future__ import annotations

import json

import numpy as np
import pytest

from twinlens import cli
from twinlens.imaging import fits_io
from twinlens.job import example


def test_example_configuration_reads_and_scores(tmp_path):
    """Fast: the written fit.toml parses into a pixelised model whose likelihood is finite at
    the truth, and higher there than at a lens 5% too large."""
    from twinlens.job.config import load_config
    from twinlens.search import Objective

    path = example.write_pixelised_example(tmp_path, search={"name": "nautilus", "n_live": 50})
    assert load_config(path).adapt.config == tmp_path / "stage1.toml"
    config = load_config(tmp_path / "stage1.toml")
    assert config.model.tracer.sources[0].pixelization is not None
    assert config.model.paths[-1] == "sources[0].pixelization.regularization.coefficient"
    objective = Objective.build(config.model, config.dataset, "numba")
    truth = np.array([example.PIXELISED_TRUTH.get(p, 1.0) for p in config.model.paths])
    wrong = truth.copy()
    wrong[config.model.paths.index("lenses[0].mass[0].einstein_radius")] *= 1.05
    values = objective.log_likelihood(np.stack([truth, wrong]))
    assert np.all(np.isfinite(values)) and values[0] > values[1] + 100


@pytest.mark.slow
def test_pixelised_example_recovers_the_einstein_radius(tmp_path):
    out = tmp_path / "ex"
    args = ["fit", "--example", "pixelised", "--quick", "--output", str(out), "--quiet"]
    assert cli.main(args) == 0
    folder = out / "fit_output"
    record = json.loads((folder / "result.json").read_text())
    assert record["adapted_from"]["config"] == str(out / "stage1.toml")
    # every lens parameter's truth inside its 95% interval (the equal-weight samples')
    header = (folder / "samples.csv").read_text().splitlines()[0].split(",")
    samples = np.loadtxt(folder / "samples.csv", delimiter=",", skiprows=1)
    for path, truth in example.PIXELISED_TRUTH.items():
        if path not in header:
            continue  # fixed (the lens centre)
        lo, hi = np.percentile(samples[:, header.index(path)], [2.5, 97.5])
        assert lo < truth < hi, (path, truth, lo, hi)
    theta = record["derived"]["einstein_radius"]
    truth = example.pixelised_example_tracer().einstein_radius()
    sigma = 0.5 * (theta["upper_68"] - theta["lower_68"])
    # the posterior's 68% half-width; 3 of them allow for the mesh's discretisation bias
    assert abs(theta["median"] - truth) < 3 * sigma, (theta, truth)
    for name in ("fit.png", "lens.png", "corner.png", "source.fits", "source_errors.fits"):
        assert (folder / name).stat().st_size > 0
    image, scale = fits_io.read_image(folder / "source.fits")
    assert image.shape == (100, 100) and scale is not None and 0.005 < scale < 0.05
    assert record["chi_squared"] / record["n_pixels"] < 1.3
    # the reconstruction reaches the COOLEST file as an irregular grid of the mesh's vertices
    coolest = json.loads((folder / "coolest.json").read_text())
    (source,) = coolest["lensing_entities"][-1]["light_model"]
    assert source["type"] == "IrregularGrid"
    assert (
        folder / coolest["meta"]["twinlens"]["pixelised_sources"]["sources[0].pixelization"]
    ).stat().st_size > 0
    # and its regularisation, lambda with the posterior result.json gives it
    (regularization,) = coolest["regularizations"]
    assert regularization["applied_to_profile_id"] == source["id"]
    lam = regularization["parameters"]["lambda"]["posterior_stats"]
    own = record["parameters"]["sources[0].pixelization.regularization.coefficient"]
    # the same samples' statistics, computed by two percentile routines: equal to rounding
    assert lam["median"] == pytest.approx(own["median"], rel=1e-12)
    assert lam["percentile_16th"] == pytest.approx(own["lower_68"], rel=1e-12)


def test_written_data_are_the_simulated_dataset(tmp_path):
    """The FITS files the example writes hold simulate_example_dataset's image and noise map
    (what benchmarks/pixelised_bias.py fits without the files): one simulation, two readers."""
    example.write_pixelised_example(tmp_path, seed=3)
    data, _ = fits_io.read_image(tmp_path / "data.fits")
    noise, _ = fits_io.read_image(tmp_path / "noise_map.fits")
    direct = example.simulate_example_dataset(
        example.pixelised_example_tracer(), example.PIXELISED_IMAGING, seed=3
    )
    np.testing.assert_array_equal(data, direct.data)
    np.testing.assert_array_equal(noise, direct.noise_map)
    assert direct.grid.pixel_scale == example.PIX_PIXEL_SCALE
    assert direct.data.shape == (example.PIX_N_PIX, example.PIX_N_PIX)

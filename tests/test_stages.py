"""Staged fits (twinlens.job.stages): a pixelised fit whose AdaptiveBrightness weights come
from an earlier fit of the same data, run first, reused only while it is up to date, and
redone (with the second stage) when the user changes it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from twinlens import inversion
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.psf import PSF
from twinlens.job import example, run_fit
from twinlens.job.config import ConfigError, load_config
from twinlens.job.stages import lensed_source_image
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE
from twinlens.model.paths import get_path, set_paths

#: a short chain: these tests check the wiring, not the posterior
TINY = {"name": "emcee", "n_walkers": 12, "n_steps": 30, "seed": 1}


def _example(folder: Path) -> Path:
    return example.write_pixelised_example(folder, search=TINY)


def _replace_line(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


REG = 'regularization = {type = "AdaptiveBrightness", coefficient = {log_uniform = [0.01, 100.0]}'


@pytest.mark.parametrize(
    ("regularization", "says"),
    [
        (f'{REG}, adapt = "missing.toml"}}', "no such file"),
        (f"{REG}, adapt = 3}}", "expected the path of an earlier fit's configuration"),
        (f"{REG}}}", "not neither"),
        (f'{REG}, adapt = "stage1.toml", pixel_weights = [1.0, 2.0]}}', "not both"),
        (
            'regularization = {type = "Constant", coefficient = 1.0, adapt = "stage1.toml"}',
            'use type = "AdaptiveBrightness"',
        ),
    ],
)
def test_a_wrong_adapt_entry_is_named(tmp_path, regularization, says):
    path = _example(tmp_path)
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("regularization")]
    path.write_text("\n".join([*lines, regularization]) + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "source[0].light[0].regularization" in str(err.value) and says in str(err.value)


def test_an_unresolved_stage_has_no_objective(tmp_path):
    """Until run_fit has stage 1's weights, the stand-in regularisation cannot be fitted."""
    config = load_config(_example(tmp_path))
    assert config.adapt is not None and config.adapt.config == (tmp_path / "stage1.toml")
    with pytest.raises(ConfigError, match="run it with twinlens fit"):
        config.objective()


def test_stages_that_adapt_in_a_circle_are_refused(tmp_path):
    path = _example(tmp_path)
    stage1 = tmp_path / "stage1.toml"
    _replace_line(
        stage1,
        'regularization = {type = "Constant", coefficient = {log_uniform = [0.01, 100.0]}}',
        f'{REG}, adapt = "fit.toml"}}',
    )
    with pytest.raises(ConfigError, match="adapt in a circle"):
        run_fit(load_config(path), progress=False, plot=False)
    assert not (tmp_path / "stage1_output").exists()


def test_the_adapt_image_of_a_parametric_fit_is_its_lensed_source():
    """A second route: with fixed intensities the blurred model is linear in the light, so the
    whole model less the lens light's own model is the lensed source."""
    grid = Grid2D.uniform(24, 0.1, 2)
    psf = PSF.gaussian(0.15, 0.1, 5)
    data = Imaging(np.zeros((24, 24)), np.ones((24, 24)), psf, grid)
    lens_light = Sersic((0.0, 0.0), (0.05, 0.0), 0.4, 2.0, 3.0)
    mass = SIE((0.0, 0.0), (0.1, 0.0), 0.8)
    source = Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), 0.2, 1.0, 1.0))
    whole = Tracer(Galaxy(mass=mass, light=lens_light), source)
    lens_only = Tracer(Galaxy(mass=mass, light=lens_light), Galaxy(light=()))
    image = lensed_source_image(FitImaging(data, whole, "numpy"))
    expected = FitImaging(data, whole, "numpy").model_image
    expected = expected - FitImaging(data, lens_only, "numpy").model_image
    np.testing.assert_allclose(image, expected, rtol=1e-12, atol=1e-14)
    assert image.max() > 0.1  # the source is there


def _result(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text())


def test_a_staged_fit_runs_its_first_stage_and_redoes_both_when_it_changes(tmp_path, capsys):
    path = _example(tmp_path)
    run_fit(load_config(path), plot=False)
    first, second = _result(tmp_path / "stage1_output"), _result(tmp_path / "fit_output")
    said = capsys.readouterr().out
    assert "stage 1: fitting" in said and "stage 2:" in said
    assert second["adapted_from"]["config"] == str(tmp_path / "stage1.toml")
    assert second["adapted_from"]["stage_1_max_log_likelihood"] == first["max_log_likelihood"]

    # the weights are those adaptive_pixelization makes at stage 1's best lens
    config = load_config(path)
    stage1 = load_config(tmp_path / "stage1.toml")
    best = np.array([first["parameters"][p]["max_likelihood"] for p in stage1.model.paths])
    at_first = set_paths(config.model.tracer, second["adapted_from"]["lens"])
    previous = FitImaging(stage1.dataset, stage1.model.instance(best), "numpy")
    expected = inversion.adaptive_pixelization(
        FitImaging(config.dataset, at_first, "numba").pixelised.inversion,
        get_path(config.model.tracer, "sources[0].pixelization").mesh,
        inversion.adapt_image(previous.pixelised.inversion),
        unit_coefficient=True,
    )
    lens = {p: v for p, v in first["max_likelihood_model"].items() if p.startswith("lenses[")}
    assert second["adapted_from"]["lens"] == lens
    from twinlens.job.stages import resolve_stages

    adapted = resolve_stages(config, progress=True)
    made = get_path(adapted.model.tracer, "sources[0].pixelization.regularization")
    np.testing.assert_array_equal(made.pixel_weights, expected.regularization.pixel_weights)
    assert type(made).__name__ == "AdaptiveBrightness"
    # lambda = 1 is the tuned regularisation, and the search starts there
    assert made.coefficient == 1.0 and adapted.model.start[-1] == 1.0
    tuned = expected.regularization.pixel_weights
    assert second["adapted_from"]["tuned_strengths"] == [tuned.min(), tuned.max()]
    assert "holds the finished fit" in capsys.readouterr().out  # up to date: reused

    # the user narrows a prior of stage 1: it is fitted again, and so is stage 2
    _replace_line(
        tmp_path / "stage1.toml",
        "einstein_radius = {uniform = [0.7, 1.4]}",
        "einstein_radius = {uniform = [0.8, 1.3]}",
    )
    run_fit(load_config(path), plot=False)
    said = capsys.readouterr().out
    assert said.count("held a finished fit of another definition") == 2, said
    assert len(list(tmp_path.glob("stage1_output.stale-*"))) == 1
    assert len(list(tmp_path.glob("fit_output.stale-*"))) == 1
    again = _result(tmp_path / "stage1_output")
    assert again["max_log_likelihood"] != first["max_log_likelihood"]
    adapted = _result(tmp_path / "fit_output")["adapted_from"]
    assert adapted["stage_1_max_log_likelihood"] == again["max_log_likelihood"]


def test_adaptive_pixelization_keeps_the_first_fits_relocation(tmp_path):
    path = _example(tmp_path)
    stage1 = load_config(tmp_path / "stage1.toml")
    tracer = stage1.model.tracer
    pix = get_path(tracer, "sources[0].pixelization")
    nearest = dataclasses.replace(pix, relocation="nearest")
    tracer = set_paths(tracer, {"sources[0].pixelization": nearest})
    fit = FitImaging(stage1.dataset, tracer, "numba").pixelised.inversion
    made = inversion.adaptive_pixelization(fit, inversion.Rectangular((8, 8)), tune=False)
    assert made.relocation == "nearest" and made.positive == pix.positive
    assert path.exists()


def test_a_mistake_in_the_first_stage_names_its_file(tmp_path):
    path = _example(tmp_path)
    _replace_line(tmp_path / "stage1.toml", 'data = "data.fits"', 'data = "missing.fits"')
    with pytest.raises(ConfigError) as err:
        run_fit(load_config(path), progress=False, plot=False)
    assert "stage1.toml" in str(err.value) and "missing.fits" in str(err.value)

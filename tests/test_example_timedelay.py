"""The time-delay (H0) example, end to end (slow: a few minutes on 2 cores), and a fast check
that its fit.toml parses and scores.

``twinlens fit --example timedelay --quick`` simulates a lensed quasar behind an EPL + shear
lens at D_dt of flat LambdaCDM with H0 = 70, fits its imaging, positions and delays, and reports
H0. The truth (70) is independent of the fit."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from twinlens import cli
from twinlens.job import timedelay


def test_timedelay_configuration_reads_and_scores(tmp_path):
    """Fast: the written fit.toml parses into a model with a point source, and its likelihood
    is finite at the truth and lower at a D_dt 10% off."""
    from twinlens.job.config import load_config
    from twinlens.search import Objective

    path = timedelay.write_timedelay_example(tmp_path, search={"name": "nautilus", "n_live": 50})
    config = load_config(path)
    assert config.point_source is not None
    assert config.point_source.likelihood.data.n_images == 4
    assert len(config.point_source.likelihood.data.delays) == 3
    assert "point_source.time_delay_distance" in config.model.paths
    objective = Objective.build(
        config.model, config.dataset, "numba", config.point_source.likelihood
    )
    truths = {
        **timedelay.TIMEDELAY_TRUTH,
        "point_source.time_delay_distance": timedelay.true_time_delay_distance(),
    }
    truth = np.array([truths[p] for p in config.model.paths])
    wrong = truth.copy()
    wrong[config.model.paths.index("point_source.time_delay_distance")] *= 1.1
    values = objective.log_likelihood(np.stack([truth, wrong]))
    assert np.all(np.isfinite(values)) and values[0] > values[1] + 10
    # H0 back from the true D_dt
    np.testing.assert_allclose(config.point_source.h0(truths[config.model.paths[-1]]), 70.0)


@pytest.mark.slow
def test_timedelay_example_recovers_h0(tmp_path):
    out = tmp_path / "ex"
    args = ["fit", "--example", "timedelay", "--quick", "--output", str(out), "--quiet"]
    assert cli.main(args) == 0
    folder = out / "fit_output"
    record = json.loads((folder / "result.json").read_text())
    h0 = record["derived"]["h0"]
    sigma = 0.5 * (h0["upper_68"] - h0["lower_68"])
    assert 0 < sigma < 10, h0
    assert abs(h0["median"] - 70.0) < 3 * sigma, h0
    assert "H0 = " in (folder / "summary.txt").read_text()
    for name in ("fit.png", "point_source.png", "corner.png"):
        assert (folder / name).stat().st_size > 0


# -- the quasar example: positions and delays without imaging --------------------------------


def _quasar_truth(paths):
    truths = {
        **timedelay.TIMEDELAY_TRUTH,
        "point_source.time_delay_distance": timedelay.true_time_delay_distance(),
    }
    return np.array([truths[p] for p in paths])


def test_quasar_configuration_has_no_imaging_and_scores_the_point_source_alone(tmp_path):
    from twinlens.job.config import load_config
    from twinlens.likelihood.point_source import PointSource
    from twinlens.search import Objective

    path = timedelay.write_quasar_example(tmp_path, search={"name": "nautilus", "n_live": 50})
    config = load_config(path)
    assert config.dataset is None and config.model.tracer.sources == ()
    assert not any(".light" in p for p in config.model.paths)
    objective = Objective.build(config.model, None, "numba", config.point_source.likelihood)
    truth = _quasar_truth(config.model.paths)
    # the objective is the point-source likelihood of the true lens and source, nothing else
    tracer = timedelay.timedelay_tracer()
    source = PointSource(
        (
            timedelay.TIMEDELAY_TRUTH["point_source.centre[0]"],
            timedelay.TIMEDELAY_TRUTH["point_source.centre[1]"],
        ),
        time_delay_distance=timedelay.true_time_delay_distance(),
    )
    expected = config.point_source.likelihood.log_likelihood(tracer, source, "numpy")
    assert objective.log_likelihood(truth[None, :])[0] == pytest.approx(float(expected), rel=1e-10)
    assert "point source" in objective.fingerprint() and "data" not in objective.fingerprint()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda t: (
                t + '[[source]]\n[[source.light]]\ntype = "Sersic"\n'
                "intensity = {uniform = [0.1, 2.0]}\n"
            ),
            r"source\[0\].light\[0\].intensity is free",
        ),
        (lambda t: t.replace("[point_source]", "[no_such]"), "unknown sections no_such"),
        (
            lambda t: t.split("[[lens]]")[0] + t[t.index("[point_source]") :],
            r"at least one \[\[lens\]\]$",
        ),
    ],
)
def test_quasar_configuration_mistakes_are_named(tmp_path, change, message):
    import tomllib

    from twinlens.job.config import ConfigError, parse_config

    text = timedelay.write_quasar_example(tmp_path).read_text()
    with pytest.raises(ConfigError, match=message):
        parse_config(tomllib.loads(change(text)), tmp_path)


def test_a_point_source_fit_without_imaging_writes_its_results(tmp_path):
    """The job end to end on a short nautilus run: summary with D_dt and H0, the
    point-source plot, COOLEST, and no imaging products."""
    from twinlens.job import run_fit
    from twinlens.job.config import load_config

    search = {"name": "nautilus", "n_live": 40, "n_like_max": 400, "seed": 2}
    config = load_config(timedelay.write_quasar_example(tmp_path, search=search))
    files = run_fit(config, output=tmp_path / "out", progress=False)
    assert {"summary", "json", "samples", "point_source_plot", "lens_plot", "coolest"} <= set(files)
    assert not {"model", "residuals", "fit_plot"} & set(files)
    record = json.loads(files["json"].read_text())
    assert record["chi_squared"] is None and record["n_pixels"] is None
    assert record["derived"]["h0"]["median"] > 0
    summary = files["summary"].read_text()
    assert "D_dt = " in summary and "H0 = " in summary and "chi^2" not in summary


@pytest.mark.slow
def test_quasar_example_recovers_h0(tmp_path):
    out = tmp_path / "ex"
    args = ["fit", "--example", "quasar", "--quick", "--output", str(out), "--quiet"]
    assert cli.main(args) == 0
    record = json.loads((out / "fit_output" / "result.json").read_text())
    h0 = record["derived"]["h0"]
    sigma = 0.5 * (h0["upper_68"] - h0["lower_68"])
    assert 0 < sigma < 10, h0
    assert abs(h0["median"] - 70.0) < 3 * sigma, h0


# -- a multi-plane lens in the configuration, H0 from its delays -----------------------------

TWO_PLANES = """
[[lens]]
redshift = 0.5
[[lens.mass]]
type = "PowerLaw"
centre = [0.0, 0.0]
ell_comps = [{{uniform = [-0.3, 0.3]}}, 0.05]
einstein_radius = 1.2
slope = 2.05
[[lens.mass]]
type = "ExternalShear"
gamma_1 = 0.03
gamma_2 = -0.02

[[lens]]
redshift = 0.9
[[lens.mass]]
type = "SIS"
centre = [1.6, 0.4]
einstein_radius = 0.15

[point_source]
positions = {positions}
position_sigma = 0.003
delays = {delays}
delay_sigma = 0.25
position_likelihood = "source"
centre = [{{uniform = [-0.2, 0.2]}}, {{uniform = [-0.2, 0.2]}}]
h0 = {{uniform = [40.0, 100.0]}}
z_source = 2.0
"""


def _two_plane_truth():
    from twinlens.lensing.lens_equation import ImageSolver
    from twinlens.lensing.multiplane import MultiPlaneTracer
    from twinlens.mass import SIS, ExternalShear, PowerLaw

    main = PowerLaw((0.0, 0.0), (0.1, 0.05), 1.2, 2.05)
    tracer = MultiPlaneTracer(
        (
            timedelay.Galaxy(mass=(main, ExternalShear(0.03, -0.02)), redshift=0.5),
            timedelay.Galaxy(mass=SIS((1.6, 0.4), 0.15), redshift=0.9),
        ),
        z_source=2.0,
    )
    beta = np.array([0.03, -0.02])  # inside the two-plane lens's inner caustic: a quad
    positions = ImageSolver(window=3.0, cells=301).solve(tracer, beta, "numpy").found()[0]
    delays = tracer.time_delays(positions, beta, "numpy")[1:]  # the default H0 = 70
    return tracer, positions, delays


def test_multi_plane_configuration_samples_h0(tmp_path):
    import tomllib

    from twinlens.job.config import parse_config
    from twinlens.lensing.multiplane import MultiPlaneTracer
    from twinlens.search import Objective

    _, positions, delays = _two_plane_truth()
    assert len(positions) == 4
    text = TWO_PLANES.format(
        positions=[[float(v) for v in p] for p in positions], delays=[float(d) for d in delays]
    )
    config = parse_config(tomllib.loads(text), tmp_path)
    tracer = config.model.tracer
    assert isinstance(tracer, MultiPlaneTracer)
    assert (tracer.plane_redshifts, tracer.z_source, tracer.h0) == ((0.5, 0.9), 2.0, 70.0)
    assert config.model.paths[-1] == "point_source.h0"
    objective = Objective.build(config.model, None, "numba", config.point_source.likelihood)
    at = np.array([[0.1, 0.03, -0.02, h] for h in (70.0, 63.0, 77.0)])
    values = objective.log_likelihood(at)
    # at the truth the model is exact; 10% off in H0 moves every delay by 10%
    assert values[0] == pytest.approx(0.0, abs=1e-12)
    expected = -0.5 * np.sum((delays - delays * 70.0 / 63.0) ** 2) / 0.25**2
    assert values[1] == pytest.approx(expected, rel=1e-9)


H0_PRIOR = "h0 = {uniform = [40.0, 100.0]}"


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        (H0_PRIOR, "time_delay_distance = 3000.0", "time_delay_distance: not used with a multi"),
        ("z_source = 2.0", "z_source = 2.0\nz_lens = 0.5", "z_lens: not used with a multi-plane"),
        ("z_source = 2.0", "", "a multi-plane lens needs one source redshift"),
        (H0_PRIOR, "", r"\[point_source\]\.h0 is missing: a multi-plane lens's delays"),
        ("redshift = 0.9\n", "", r"lens\[1\]\.redshift is missing: give every .*given: \[0\.5\]"),
        (
            "redshift = 0.9",
            "redshift = -1.0",
            r"lens\[1\]\.redshift = -1\.0: expected a number in \[0, 1000\)",
        ),
        ("redshift = 0.9", "redshift = 2.5", r"lens\[1\]\.redshift must be in \[0, z_source\)"),
    ],
)
def test_multi_plane_configuration_mistakes_are_named(tmp_path, old, new, match):
    import tomllib

    from twinlens.job.config import ConfigError, parse_config

    text = TWO_PLANES.format(positions=[[1.0, 0.0], [-1.0, 0.0]], delays=[1.0])
    assert old.replace("{", "{{").replace("}", "}}") in TWO_PLANES or old in text
    with pytest.raises(ConfigError, match=match):
        parse_config(tomllib.loads(text.replace(old, new, 1)), tmp_path)


def test_the_point_source_alone_may_hold_every_free_parameter(tmp_path):
    import tomllib

    from twinlens.job.config import parse_config

    _, positions, delays = _two_plane_truth()
    text = TWO_PLANES.format(
        positions=[[float(v) for v in p] for p in positions], delays=[float(d) for d in delays]
    ).replace("ell_comps = [{uniform = [-0.3, 0.3]}, 0.05]", "ell_comps = [0.1, 0.05]")
    config = parse_config(tomllib.loads(text), tmp_path)  # a fixed lens
    assert config.model.paths == (
        "point_source.centre[0]",
        "point_source.centre[1]",
        "point_source.h0",
    )


def test_h0_is_for_a_multi_plane_lens(tmp_path):
    import tomllib

    from twinlens.job.config import ConfigError, parse_config

    text = timedelay.write_quasar_example(tmp_path).read_text()
    text = text.replace("time_delay_distance = ", "h0 = 70.0\ntime_delay_distance = ", 1)
    with pytest.raises(ConfigError, match=r"\[point_source\]\.h0: for a multi-plane lens"):
        parse_config(tomllib.loads(text), tmp_path)


def test_a_multi_plane_fit_reports_the_sampled_h0(tmp_path):
    import tomllib

    from twinlens.job import run_fit
    from twinlens.job.config import parse_config

    _, positions, delays = _two_plane_truth()
    text = TWO_PLANES.format(
        positions=[[float(v) for v in p] for p in positions], delays=[float(d) for d in delays]
    )
    text += '\n[search]\nname = "nautilus"\nn_live = 40\nn_like_max = 400\nseed = 3\n'
    config = parse_config(tomllib.loads(text), tmp_path)
    files = run_fit(config, output=tmp_path / "out", progress=False)
    record = json.loads(files["json"].read_text())
    h0 = record["derived"]["h0"]
    column = np.loadtxt(files["samples"], delimiter=",", skiprows=1, ndmin=2)[:, 3]
    assert h0["median"] == pytest.approx(np.median(column), rel=1e-12)  # the sampled H0
    assert "H0 = " in files["summary"].read_text()
    entities = json.loads(files["coolest"].read_text())["lensing_entities"]
    assert sorted({e["redshift"] for e in entities}) == [0.5, 0.9]


def test_magnification_limit_reaches_the_likelihood_and_is_checked(tmp_path):
    import tomllib

    from twinlens.job.config import ConfigError, parse_config

    text = timedelay.write_quasar_example(tmp_path).read_text()
    limited = text.replace(
        'position_likelihood = "image"', 'position_likelihood = "image"\nmagnification_limit = 0.05'
    )
    config = parse_config(tomllib.loads(limited), tmp_path)
    assert config.point_source.likelihood.magnification_limit == 0.05
    assert parse_config(tomllib.loads(text), tmp_path).point_source.likelihood == (
        dataclasses.replace(config.point_source.likelihood, magnification_limit=0.0)
    )
    negative = limited.replace("magnification_limit = 0.05", "magnification_limit = -1.0")
    with pytest.raises(ConfigError, match=r"magnification_limit = -1\.0: expected a number >= 0"):
        parse_config(tomllib.loads(negative), tmp_path)
    source = limited.replace('position_likelihood = "image"', 'position_likelihood = "source"')
    with pytest.raises(
        ConfigError, match=r'magnification_limit: counts model images, for .*"image"'
    ):
        parse_config(tomllib.loads(source), tmp_path)


def test_galaxy_redshifts_serve_as_z_lens_and_z_source_for_h0(tmp_path):
    import tomllib

    from twinlens.job.config import ConfigError, parse_config

    text = timedelay.write_quasar_example(tmp_path).read_text()
    reference = parse_config(tomllib.loads(text), tmp_path).point_source
    assert (reference.z_lens, reference.z_source) == (0.5, 2.0)
    # z_lens from the [[lens]] table instead of [point_source]
    moved = text.replace("z_lens = 0.5", "").replace("[[lens]]\n", "[[lens]]\nredshift = 0.5\n", 1)
    config = parse_config(tomllib.loads(moved), tmp_path)
    assert (config.point_source.z_lens, config.point_source.z_source) == (0.5, 2.0)
    assert config.point_source.h0(3000.0) == pytest.approx(reference.h0(3000.0), rel=1e-15)
    clash = text.replace("[[lens]]\n", "[[lens]]\nredshift = 0.6\n", 1)
    with pytest.raises(ConfigError, match=r"z_lens = 0\.5 but the \[\[lens\]\] redshift is 0\.6"):
        parse_config(tomllib.loads(clash), tmp_path)
    alone = text.replace("z_lens = 0.5", "")
    with pytest.raises(ConfigError, match=r"\[point_source\]\.z_lens is missing: give both"):
        parse_config(tomllib.loads(alone), tmp_path)


def test_in_imaging_models_the_observed_images_in_the_imaging(tmp_path):
    import tomllib

    from twinlens.imaging.point_images import PointImages
    from twinlens.job.config import ConfigError, parse_config
    from twinlens.likelihood.imaging import FitImaging
    from twinlens.search.base import Objective

    text = timedelay.write_timedelay_example(tmp_path / "td").read_text()
    seen = text.replace(
        'position_likelihood = "image"', 'position_likelihood = "image"\nin_imaging = true'
    )
    config = parse_config(tomllib.loads(seen), tmp_path / "td")
    likelihood = config.point_source.likelihood
    assert likelihood.in_imaging
    assert likelihood.point_images == PointImages(likelihood.data.positions)
    # refused or warned about when the likelihood is built, not inside the search
    with pytest.warns(RuntimeWarning, match="undersampled"):  # the example's 1.5-pixel FWHM
        objective = Objective.build(config.model, config.dataset, "numpy", likelihood)
    assert objective.likelihood.imaging.point_images == likelihood.point_images
    # a checkpoint of the run without the images is not this run's
    unseen = dataclasses.replace(likelihood, in_imaging=False)
    before = Objective.build(config.model, config.dataset, "numpy", unseen).fingerprint()
    assert objective.fingerprint()["point source"] != before["point source"]
    # the solver's batch size splits the work, it does not change it: a checkpoint resumes
    # with another one (another machine's default), but not with another grid
    solver = likelihood.solver
    with pytest.warns(RuntimeWarning, match="undersampled"):  # each build is told
        for batch_size in (8, 1024):
            other = dataclasses.replace(
                likelihood, solver=dataclasses.replace(solver, batch_size=batch_size)
            )
            assert other != likelihood  # another compiled program
            built = Objective.build(config.model, config.dataset, "numpy", other).fingerprint()
            assert built == objective.fingerprint()
        finer = dataclasses.replace(
            likelihood, solver=dataclasses.replace(solver, cells=solver.cells + 2)
        )
        built = Objective.build(config.model, config.dataset, "numpy", finer).fingerprint()
        assert built["point source"] != objective.fingerprint()["point source"]
    # the imaging term is the fit with the point images: its fluxes are solved (this data has
    # none, the quasar's images taken as subtracted, so they come out near zero)
    start = config.model.instance(config.model.start)
    with pytest.warns(RuntimeWarning, match="undersampled"):  # each fit is told
        with_points = FitImaging(config.dataset, start, "numpy", likelihood.point_images)
    assert with_points.point_image_fluxes.shape == (4,)
    assert float(with_points.chi_squared) <= float(
        FitImaging(config.dataset, start, "numpy").chi_squared
    )
    with pytest.raises(ConfigError, match=r"in_imaging = 1: expected true or false"):
        parse_config(
            tomllib.loads(seen.replace("in_imaging = true", "in_imaging = 1")), tmp_path / "td"
        )
    alone = timedelay.write_quasar_example(tmp_path / "q").read_text()
    alone = alone.replace(
        'position_likelihood = "image"', 'position_likelihood = "image"\nin_imaging = true'
    )
    with pytest.raises(ConfigError, match=r"in_imaging = true, but there is no \[dataset\]"):
        parse_config(tomllib.loads(alone), tmp_path / "q")

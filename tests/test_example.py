"""The built-in example (``twinlens fit --example``): its configuration, its COOLEST export, and
(slow) a whole fit whose posterior holds every true value."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy import stats

from twinlens import cli
from twinlens.job import example
from twinlens.job.config import load_config
from twinlens.light import LinearSersic
from twinlens.likelihood.imaging import FitImaging


def test_the_example_configuration_builds_with_the_truth_inside_wide_priors(tmp_path):
    path = example.write_example(tmp_path, search={"name": "nautilus", "n_live": 50})
    config = load_config(path)
    assert config.model.paths == tuple(example.TRUTH)
    assert 10 <= config.model.n_params <= 13
    truth = np.array([example.TRUTH[p] for p in config.model.paths])
    for (path_, prior), value in zip(config.model.priors, truth, strict=True):
        assert np.isfinite(prior.log_density(value)), path_  # every truth inside its prior
        lo, hi = (float(prior.from_unit(np.array(u))) for u in (0.05, 0.95))
        assert hi - lo > 0.09, path_  # wide: 90% of the prior spans more than 0.09
    # the lens light was fitted beforehand: fixed shape, intensity solved with the source's
    lens_light = config.model.tracer.lenses[0].light[0]
    assert isinstance(lens_light, LinearSersic)
    assert not any(p.startswith("lenses[0].light") for p in config.model.paths)
    # the data are the example tracer's image: the truth fits them to the noise, and the
    # solved intensities are the true ones
    fit = FitImaging(config.dataset, config.model.instance(truth), "numpy")
    n = config.dataset.mask_index.size
    assert abs(float(fit.chi_squared) - n) < 5 * np.sqrt(2 * n)
    np.testing.assert_allclose(
        np.asarray(fit.intensities),
        [example.LENS_INTENSITY, example.SOURCE_INTENSITY],
        rtol=0.05,
    )
    with pytest.raises(FileExistsError):
        example.write_example(tmp_path)


def test_the_example_model_is_written_to_coolest(tmp_path):
    from twinlens.export import from_coolest, to_coolest

    path = example.write_example(tmp_path, search={"name": "nautilus", "n_live": 50})
    config = load_config(path)
    truth = [example.TRUTH[p] for p in config.model.paths]
    solved = FitImaging(config.dataset, config.model.instance(truth), "numpy").solved_tracer
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no profile may be left out
        out = to_coolest(
            solved, tmp_path / "coolest.json", dataset=config.dataset, priors=config.model.priors
        )
    document = json.loads(out.read_text())
    kinds = [
        (entity["name"], profile["type"])
        for entity in document["lensing_entities"]
        for model in ("mass_model", "light_model")
        for profile in entity.get(model) or []
    ]
    assert sorted(kinds) == sorted(
        [
            ("lens 0", "SIE"),
            ("lens 0", "Sersic"),
            ("lens 0 ExternalShear", "ExternalShear"),
            ("source 0", "Sersic"),
        ]
    )
    back = from_coolest(out)
    xy = np.random.default_rng(0).uniform(-2, 2, (200, 2))
    np.testing.assert_allclose(
        back.deflections(xy, backend="numpy"), solved.deflections(xy, backend="numpy"), rtol=1e-9
    )


def test_corner_axes_hold_truths_far_from_the_samples():
    from twinlens.job import plots
    from twinlens.model import latex_label

    paths = list(example.TRUTH)
    truth = np.array([example.TRUTH[p] for p in paths])
    rng = np.random.default_rng(5)
    samples = truth + 0.01 * rng.normal(size=(3000, len(paths)))
    samples[:, 4] += 0.5  # the Einstein radius's posterior 50 sigma from its truth
    samples[:, 7] -= 0.3
    labels = tuple(latex_label(p) for p in paths)  # what the results pass
    fig = plots.corner_figure(samples, labels, truth)
    try:
        k = len(paths)
        axes = np.asarray(fig.axes).reshape(k, k)
        assert max(fig.get_size_inches()) <= 12.0
        for i, path in enumerate(paths):
            for ax in axes[i:, i]:  # the column of parameter i: its x-axis
                lo, hi = ax.get_xlim()
                assert lo <= truth[i] <= hi, path
                assert lo <= np.percentile(samples[:, i], 0.1), path
                assert np.percentile(samples[:, i], 99.9) <= hi, path
            for ax in axes[i, :i]:  # the row of parameter i: its y-axis
                lo, hi = ax.get_ylim()
                assert lo <= truth[i] <= hi, path
        # short labels: the Einstein radius's symbol with its unit, the source's index n
        assert "θE" in axes[-1, 4].get_xlabel() and '["]' in axes[-1, 4].get_xlabel()
        assert axes[-1, -1].get_xlabel().split()[-1] == "n"
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_corner_labels_from_latex_labels_paths_or_neither():
    from twinlens.job import plots
    from twinlens.model import latex_label

    paths = [
        "lenses[0].mass[0].centre[1]",
        "lenses[1].mass[2].profiles[1].ell_comps[0]",
        "lenses[0].mass[1].origin[0]",
        "sources[0].light[0].effective_radius",
        "lenses[0].mass[0].mass_to_light_ratio",
        "lenses[0].mass[0].kappa",
    ]
    # each parameter's symbol (every one differs here, so no qualifier), with its unit
    expected = ['y ["]', "e1", 'x0 ["]', 'Reff ["]', "Υ", "κ"]
    latex = [latex_label(p) for p in paths]
    assert plots.corner_labels(latex) == expected
    assert plots.corner_labels(["a", "b"], paths[:2]) == expected[:2]
    assert plots.corner_labels([r"\alpha"]) == [r"$\alpha$"]  # not a parameter's: as LaTeX


@pytest.mark.slow
def test_the_example_fit_holds_every_truth(tmp_path):
    assert cli.main(["fit", "--example", "--output", str(tmp_path), "--quiet"]) == 0
    out = tmp_path / "fit_output"
    assert (out / "coolest.json").is_file()
    with open(out / "samples.csv") as f:
        names = f.readline().strip().split(",")[:-1]
    samples = np.loadtxt(out / "samples.csv", delimiter=",", skiprows=1)[:, :-1]
    truth = np.array([example.TRUTH[p] for p in names])
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    outside = [p for p, t, a, b in zip(names, truth, lo, hi, strict=True) if not a <= t <= b]
    assert not outside, outside
    # jointly: the truth's Mahalanobis distance from the posterior is a draw of chi^2 with
    # one degree of freedom per parameter when the posterior is right (and near Gaussian)
    delta = truth - samples.mean(axis=0)
    d2 = float(delta @ np.linalg.solve(np.cov(samples, rowvar=False), delta))
    assert stats.chi2.sf(d2, len(names)) > 1e-3, d2

"""The time-delay (H0) example, end to end (slow: a few minutes on 2 cores), and a fast check
that its fit.toml parses and scores.

``twinlens fit --example timedelay --quick`` simulates a lensed quasar behind an EPL + shear
lens at D_dt of flat LambdaCDM with H0 = 70, fits its imaging, positions and delays, and reports
H0. The truth (70) is independent of the fit."""

from __future__ import annotations

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

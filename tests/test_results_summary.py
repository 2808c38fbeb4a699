"""The summary says what is known: no evidence error it does not have, no interval for a
point estimate, percentiles called percentiles, and a warning when a run did not converge or
the best fit is far from the noise."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from twinlens.job import example
from twinlens.job.config import load_config
from twinlens.job.results import write_results
from twinlens.job.summary import (
    is_point_estimate,
    summary_table,
    summary_text,
    summary_warnings,
)
from twinlens.search import SearchResult

PATHS = ("lenses[0].mass[0].einstein_radius", "sources[0].light[0].effective_radius")


def _result(
    name: str = "nautilus",
    n: int = 500,
    info: dict | None = None,
    log_evidence: float | None = None,
    log_evidence_error: float | None = None,
    samples: np.ndarray | None = None,
) -> SearchResult:
    if samples is None:
        rng = np.random.default_rng(4)
        samples = np.array([1.2, 0.3]) + np.array([0.01, 0.02]) * rng.standard_normal((n, 2))
    return SearchResult(
        name=name,
        paths=PATHS,
        samples=samples,
        log_likelihood=np.zeros(len(samples)),
        max_likelihood=samples[0],
        max_log_likelihood=-10.0,
        log_evidence=log_evidence,
        log_evidence_error=log_evidence_error,
        n_evaluations=1000,
        seed=0,
        info={} if info is None else info,
    )


def _warning_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("WARNING")]


def test_an_evidence_without_an_error_shows_none():
    text = summary_text(_result(log_evidence=123.456, log_evidence_error=None))
    assert "123.456" in text
    assert "+-" not in text and "+/-" not in text
    assert "no error estimate" in text
    with_error = summary_text(_result(log_evidence=123.456, log_evidence_error=0.25))
    assert "123.456 +- 0.250" in with_error
    assert "not given" in summary_text(_result(name="emcee"))


@pytest.mark.parametrize("name", ["map", "nautilus"])
def test_a_point_estimate_has_no_interval_columns(name):
    point = np.array([[1.1, 0.31]])
    result = _result(name=name, samples=point)
    assert is_point_estimate(result)
    table = summary_table(None, result)
    for column in ("median", "16th", "84th", "sigma", "68%", "max like"):
        assert column not in table
    assert "1.10000" in table and "0.31000" in table
    text = summary_text(result)
    assert "no uncertainties" in text
    assert "68%" not in text and "sigma" not in text
    if name == "map":
        assert "maximum-posterior point estimate" in text


def test_a_map_result_is_a_point_estimate_by_name():
    assert is_point_estimate(_result(name="map", samples=np.array([[1.0, 0.3]])))
    assert not is_point_estimate(_result(name="emcee"))


def test_the_interval_columns_are_the_16th_and_84th_percentiles():
    # 101 evenly spaced values: median 50, 16th percentile 16, 84th 84 (not +-34 "sigma")
    values = np.linspace(0.0, 100.0, 101)
    result = _result(samples=np.column_stack([values, values[::-1]]))
    table = summary_table(None, result)
    header, first = table.splitlines()[:2]
    assert "sigma" not in header and "16th" in header and "84th" in header
    numbers = [float(v) for v in first.split()[1:]]
    assert numbers[:3] == [50.0, 16.0, 84.0]
    assert "68% interval (16th to 84th percentile)" in summary_text(result)


def test_an_unreliable_emcee_chain_is_flagged_at_the_top():
    info = {
        "autocorrelation_reliable": False,
        "autocorrelation_time": np.array([40.0, 55.0]),
        "n_steps": 1000,
        "discarded_steps": 300,
    }
    text = summary_text(_result(name="emcee", info=info))
    assert text.startswith("WARNING: ")
    (line,) = _warning_lines(text)
    assert "emcee" in line and "autocorrelation" in line and "55" in line
    fine = dict(info, autocorrelation_reliable=True)
    assert not _warning_lines(summary_text(_result(name="emcee", info=fine)))


def test_an_unconverged_nautilus_run_is_flagged():
    text = summary_text(_result(info={"converged": False}, log_evidence=5.0))
    assert text.startswith("WARNING: ")
    assert "nautilus" in _warning_lines(text)[0]
    assert not summary_warnings(_result(info={"converged": True}, log_evidence=5.0))


def test_nuts_divergences_and_disagreeing_chains_are_flagged():
    assert len(summary_warnings(_result(name="nuts", info={"n_divergent": 3}))) == 1
    assert len(summary_warnings(_result(name="nuts", info={"r_hat": np.array([1.0, 1.2])}))) == 1
    calm = {"n_divergent": 0, "r_hat": np.array([1.001, 1.002])}
    assert summary_warnings(_result(name="nuts", info=calm)) == []


@pytest.mark.parametrize(
    ("sigmas", "flagged"),
    [(0.0, False), (3.0, False), (-10.0, False), (6.0, True), (100.0, True)],
)
def test_a_chi_squared_far_above_the_pixel_count_is_flagged(sigmas, flagged):
    # chi^2 of a fit to the noise: mean n, standard deviation sqrt(2 n); flagged beyond 5
    n = 5000
    chi2 = n + sigmas * math.sqrt(2 * n)
    text = summary_text(_result(info={"converged": True}), chi_squared=chi2, n_pixels=n)
    assert bool(_warning_lines(text)) is flagged
    if flagged:
        assert "chi^2" in _warning_lines(text)[0]


def test_a_consistent_result_has_no_warning():
    text = summary_text(
        _result(info={"converged": True}, log_evidence=1.0),
        chi_squared=5010.0,
        n_pixels=5000,
        einstein_radius={"median": 1.2, "lower_68": 1.19, "upper_68": 1.21, "n_samples": 200},
    )
    assert "WARNING" not in text
    assert "1.19000 to 1.21000" in text


# -- through write_results, on the example ------------------------------------------------


@pytest.fixture(scope="module")
def example_config(tmp_path_factory):
    folder = tmp_path_factory.mktemp("example")
    path = example.write_example(folder, search={"name": "nautilus", "n_live": 50, "seed": 1})
    return load_config(path)


def _near_truth(config, name: str, n: int, info: dict) -> SearchResult:
    truth = np.array([example.TRUTH[p] for p in config.model.paths])
    rng = np.random.default_rng(1)
    samples = truth + 1e-4 * rng.standard_normal((n, truth.size))
    return SearchResult(
        name=name,
        paths=config.model.paths,
        samples=samples,
        log_likelihood=np.zeros(n),
        max_likelihood=samples[0],  # as for map, whose one sample is its optimum
        max_log_likelihood=0.0,
        log_evidence=None,
        log_evidence_error=None,
        n_evaluations=n,
        seed=0,
        info=info,
    )


def test_write_results_records_the_warnings(example_config, tmp_path, capsys):
    # the truth fits the simulated data to the noise: only the chain's warning remains
    info = {
        "autocorrelation_reliable": False,
        "autocorrelation_time": np.array([80.0, np.nan]),
        "weighted_samples": np.zeros((2000, 3)),  # too big for result.json
    }
    result = _near_truth(example_config, "emcee", 40, info)
    files = write_results(example_config, result, tmp_path / "out", plot=False, progress=True)
    assert "Einstein radius" in capsys.readouterr().out  # a line before the slow step
    summary = files["summary"].read_text()
    record = json.loads(files["json"].read_text())
    assert summary.startswith("WARNING: ") and len(_warning_lines(summary)) == 1
    assert len(record["warnings"]) == 1 and "autocorrelation" in record["warnings"][0]
    # the diagnostics behind the warning are in the record, NaN as null; big arrays are not
    assert record["info"]["autocorrelation_time"] == [80.0, None]
    assert record["info"]["autocorrelation_reliable"] is False
    assert "weighted_samples" not in record["info"]
    assert record["search_settings"]["name"] == "nautilus"
    assert "n_eff" in record["search_settings"]  # the defaults, recorded too

    calm = _near_truth(example_config, "nautilus", 40, {"converged": True})
    files = write_results(example_config, calm, tmp_path / "calm", plot=False)
    assert "WARNING" not in files["summary"].read_text()
    assert json.loads(files["json"].read_text())["warnings"] == []


def test_write_results_of_a_point_estimate_has_no_interval(example_config, tmp_path):
    result = _near_truth(example_config, "map", 1, {})
    files = write_results(example_config, result, tmp_path / "map", plot=False)
    record = json.loads(files["json"].read_text())
    assert record["point_estimate"] is True
    for entry in record["parameters"].values():
        assert entry["lower_68"] is None and entry["upper_68"] is None
        assert entry["median"] == entry["max_likelihood"]
    derived = record["derived"]["einstein_radius"]
    assert derived["lower_68"] is None and derived["median"] > 0
    summary = files["summary"].read_text()
    assert "point estimate" in summary and "16th" not in summary

"""The corner plot reads at a glance: short labels (a parameter's symbol, qualified only as far
as the model needs), each listed in summary.txt beside its full path; and contours drawn from a
density estimate, so that corner never finds "too few points to create valid contours" on the
few hundred samples of a quick nested-sampling run."""

from __future__ import annotations

import json
import logging
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinlens.job import example, plots
from twinlens.job.config import load_config
from twinlens.job.results import write_results
from twinlens.model import latex_label
from twinlens.model.labels import SYMBOLS, axis_labels, short_labels
from twinlens.search import SearchResult

#: at most this many characters on an axis, unit included, for the models of the examples
SHORT = 14

#: the pixelised example's free parameters: the longest names of the built-in fits
PIXELISED_PATHS = (
    "lenses[0].mass[0].ell_comps[0]",
    "lenses[0].mass[0].ell_comps[1]",
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[1].gamma_1",
    "lenses[0].mass[1].gamma_2",
    "sources[0].pixelization.regularization.coefficient",
)

CONTOUR_WARNING = "Too few points to create valid contours"


# -- labels ------------------------------------------------------------------------------------


def test_a_parameter_alone_of_its_kind_is_its_symbol():
    labels = short_labels(PIXELISED_PATHS)
    assert labels == ["e1", "e2", "θE", "γ1", "γ2", "λ"]  # docs/fitting.rst's table of symbols


def test_qualifiers_tell_apart_what_shares_a_symbol():
    paths = [
        "lenses[0].mass[0].ell_comps[0]",
        "lenses[0].mass[0].einstein_radius",
        "lenses[0].light[0].ell_comps[0]",
        "sources[0].light[0].ell_comps[0]",
        "sources[0].light[0].effective_radius",
        "sources[0].light[1].sersic_index",
        "sources[0].light[2].sersic_index",
    ]
    # the lens mass by its component, the source by its galaxy, the lens light by both (its
    # component alone, light0, would read as the source's too); a component's parameters
    # share their qualifiers
    assert short_labels(paths) == [
        "mass0 e1",
        "mass0 θE",
        "lens0 light0 e1",
        "src0 e1",
        "src0 Reff",
        "src0 light1 n",
        "src0 light2 n",
    ]
    assert axis_labels(paths)[1] == 'mass0 θE ["]'  # the unit of readable_label


def test_a_bands_own_parameter_ends_with_its_band():
    paths = [
        "sources[0].light[0].effective_radius",
        "band.F160W.sources[0].light[0].effective_radius",
        "band.F814W.sources[0].pixelization.regularization.coefficient",
    ]
    assert short_labels(paths) == ["Reff", "Reff F160W", "λ F814W"]


def test_a_path_of_another_shape_keeps_its_full_name():
    paths = ["lenses[0].mass[0].einstein_radius", "lenses[0].shape.thing"]
    assert short_labels(paths) == ["θE", "lens[0].shape.thing"]


_UNIVERSE = [
    f"{galaxy}.{component}.{field}"
    for galaxy in ("lenses[0]", "lenses[1]", "sources[0]", "sources[1]")
    for component in ("mass[0]", "mass[1]", "light[0]", "light[1]", "mass[0].profiles[1]")
    for field in ("einstein_radius", "ell_comps[0]", "centre[1]", "effective_radius", "kappa")
] + [
    "point_source.centre[0]",
    "point_source.h0",
    "sources[0].pixelization.regularization.coefficient",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_UNIVERSE), min_size=1, max_size=14, unique=True))
def test_labels_are_distinct_and_end_with_the_symbol(paths):
    labels = short_labels(paths)
    assert len(set(labels)) == len(labels)
    for path, label in zip(paths, labels, strict=True):
        field = path.rsplit(".", 1)[1]
        assert label.split(" ")[-1] == SYMBOLS.get(field, SYMBOLS.get(field.split("[")[0]))
        assert len(label.split(" ")) <= 4  # each of galaxy, component and part at most once


def test_the_summary_lists_each_short_label_beside_its_path(tmp_path):
    """A fit of long names: its corner plot's axes hold short labels, each of which
    summary.txt names with its parameter's full path (and result.json records)."""
    config = load_config(example.write_example(tmp_path / "ex", search={"name": "nautilus"}))
    paths = config.model.paths
    assert max(len(p) for p in paths) > 30
    result = _fake_result(paths, np.array([example.TRUTH[p] for p in paths]))
    files = write_results(config, result, tmp_path / "out")
    shown = _axis_labels_drawn(result, config)
    assert max(len(label) for label in shown) <= SHORT
    summary = files["summary"].read_text(encoding="utf-8")
    legend = summary.split("corner.png's labels:\n", 1)[1].splitlines()
    for label, path in zip(shown, paths, strict=True):
        assert re.fullmatch(rf"\s+{re.escape(label)}\s+{re.escape(path)}", legend.pop(0))
    record = json.loads(files["json"].read_text())
    assert [record["parameters"][p]["short_label"] for p in paths] == shown
    assert (tmp_path / "out" / "corner.png").stat().st_size > 0


def _axis_labels_drawn(result: SearchResult, config) -> list[str]:
    fig = plots.corner_figure(result.samples, config.model.labels, paths=config.model.paths)
    try:
        k = len(config.model.paths)
        axes = np.asarray(fig.axes).reshape(k, k)
        return [axes[-1, i].get_xlabel() for i in range(k)]
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def _fake_result(paths, centre, n: int = 300, weighted=None) -> SearchResult:
    rng = np.random.default_rng(8)
    samples = centre + 0.01 * rng.standard_normal((n, len(paths)))
    info = {"converged": True}
    if weighted is not None:
        info |= {"weighted_samples": weighted[0], "log_weights": np.log(weighted[1])}
    return SearchResult(
        name="nautilus",
        paths=paths,
        samples=samples,
        log_likelihood=np.zeros(n),
        max_likelihood=samples[0],
        max_log_likelihood=-1.0,
        log_evidence=-5.0,
        log_evidence_error=None,
        n_evaluations=1000,
        seed=0,
        info=info,
    )


# -- contours ----------------------------------------------------------------------------------


def _correlated(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws of the pixelised example's kind of posterior (6 parameters, two pairs
    strongly correlated), and its mean."""
    mean = np.array([0.10, 0.068, 1.001, 0.020, -0.0015, 1.65])
    sigma = np.array([0.004, 0.003, 0.0008, 0.0025, 0.0018, 0.2])
    corr = np.eye(6)
    corr[0, 3] = corr[3, 0] = 0.9
    corr[1, 4] = corr[4, 1] = 0.95
    cov = corr * np.outer(sigma, sigma)
    return rng.multivariate_normal(mean, cov, size=n), mean


#: truths 6 sigma from the posterior in two parameters, as in the quick pixelised example:
#: the axes reach them, and the posterior fills a few of corner's default bins
def _truths(mean: np.ndarray) -> np.ndarray:
    return mean + np.array([0.0, -0.018, -0.001, 0.0, -0.0085, np.nan])


def _contour_warnings(draw) -> list[str]:
    """What ``draw()`` logs and warns about contours, with every warning an error."""
    messages: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    catch = Catch(level=logging.WARNING)
    root = logging.getLogger()
    root.addHandler(catch)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fig = draw()
    finally:
        root.removeHandler(catch)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return [m for m in messages if "contour" in m.lower()]


def test_the_contours_of_few_samples_need_no_warning():
    """180 equal-weight samples (the quick pixelised run's count) warned with corner's own
    20 x 20 histograms; the density estimate draws their contours without a word."""
    import corner

    samples, mean = _correlated(180, np.random.default_rng(11))
    truths = _truths(mean)
    ranges = plots._ranges(samples, None, truths)
    plain = _contour_warnings(lambda: corner.corner(samples, range=ranges, truths=truths))
    assert CONTOUR_WARNING in plain  # the test set is one that warned
    labels = [latex_label(p) for p in PIXELISED_PATHS]
    ours = _contour_warnings(lambda: plots.corner_figure(samples, labels, truths))
    assert ours == []


def test_a_weighted_posterior_with_tiny_weights_needs_no_warning():
    """Nautilus's weighted points: most far out with tiny weights (its exploration), a few
    hundred effective samples; their contours too are drawn without a warning."""
    rng = np.random.default_rng(12)
    target, mean = _correlated(400, rng)
    broad = mean + 40 * (target - mean)[rng.integers(0, 400, 4000)]  # the prior's reach
    points = np.vstack([target, broad])
    weights = np.concatenate([np.ones(400), np.full(4000, 1e-9)])
    labels = [latex_label(p) for p in PIXELISED_PATHS]
    equal = target[rng.random(400) < 0.5]  # the thinned draw the summary reads

    def draw():
        return plots.corner_figure(
            equal, labels, _truths(mean), paths=PIXELISED_PATHS, weighted=(points, weights)
        )

    assert _contour_warnings(draw) == []


def test_bins_follow_the_posterior_width_and_smoothing_the_sample_size():
    samples, _ = _correlated(2000, np.random.default_rng(13))
    ranges = plots._ranges(samples, None, None)
    bins, smooth, smooth1d = plots.density_settings(samples, None, ranges)
    lo, hi = np.percentile(samples, [16, 84], axis=0)
    width = np.array([b - a for a, b in ranges]) / np.array(bins)
    # the 68% interval spans 2 BINS_PER_SIGMA bins, to the rounding of a whole bin count
    np.testing.assert_allclose((hi - lo) / width, 2 * plots.BINS_PER_SIGMA, rtol=0.1)
    # Scott's bandwidths: n^(-1/6) and n^(-1/5) sigma (2-D, 1-D), in bins of sigma / 4
    per_bin = np.min(0.5 * (hi - lo) / width)
    assert smooth == pytest.approx(per_bin * 2000 ** (-1 / 6))
    assert smooth1d == pytest.approx(per_bin * 2000 ** (-1 / 5))
    # weights count by their effective sample size: half of them zero is half the points
    weights = np.tile([1.0, 0.0], 1000)
    _, weighted, _ = plots.density_settings(samples, weights, ranges)
    _, half, _ = plots.density_settings(samples[::2], None, ranges)
    assert weighted == pytest.approx(half, rel=0.05)

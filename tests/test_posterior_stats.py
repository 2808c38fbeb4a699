"""Posterior summaries against independent references: numpy's percentiles of repeated or
unweighted samples, hand-computed order statistics, and a Gaussian's closed forms."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from twinlens import posterior_stats as ps

RNG = np.random.default_rng(20240611)


# -- percentiles and medians -----------------------------------------------------------------


def test_unweighted_percentiles_interpolate_between_order_statistics():
    # sorted (1, 2, 3, 4): the p-th percentile sits at position 3 p / 100, linearly interpolated
    x = np.array([4.0, 1.0, 3.0, 2.0])
    assert ps.percentile(x, 25.0) == pytest.approx(1.75, abs=1e-15)
    assert ps.percentile(x, 50.0) == pytest.approx(2.5, abs=1e-15)
    np.testing.assert_allclose(ps.percentile(x, [0.0, 100.0, 90.0]), [1.0, 4.0, 3.7], atol=1e-15)
    assert ps.median(x) == 2.5
    assert ps.median(np.array([3.0, 1.0, 2.0])) == 2.0
    assert ps.mean(x) == 2.5


def test_unweighted_percentiles_match_numpy_on_random_samples():
    x = RNG.normal(size=1001)
    q = [2.5, 16.0, 50.0, 84.0, 97.5]
    np.testing.assert_allclose(ps.percentile(x, q), np.percentile(x, q), rtol=0, atol=0)
    assert ps.median(x) == np.median(x)


def test_weighted_percentile_by_hand():
    # weights 1, 1, 2 of total 4: cumulative 1, 2, 4; the smallest sample reaching q% of 4
    x, w = [3.0, 1.0, 2.0], [2.0, 1.0, 1.0]
    assert ps.percentile(x, 25.0, weights=w) == 1.0
    assert ps.percentile(x, 30.0, weights=w) == 2.0
    assert ps.percentile(x, 50.0, weights=w) == 2.0
    assert ps.percentile(x, 51.0, weights=w) == 3.0
    assert ps.percentile(x, 0.0, weights=w) == 1.0
    assert ps.percentile(x, 100.0, weights=w) == 3.0
    assert ps.mean(x, weights=w) == pytest.approx((2 * 3.0 + 1.0 + 2.0) / 4.0, rel=1e-15)


def test_integer_weights_count_as_repeated_samples():
    x = RNG.normal(size=40)
    w = RNG.integers(1, 5, size=40)
    w[-1] += 97 - w.sum()  # total 97: no percentile below falls exactly on a step
    assert w.sum() == 97 and w.min() >= 1
    repeated = np.repeat(x, w)
    q = np.array([1.0, 16.0, 33.3, 50.0, 84.0, 99.0])
    expected = np.percentile(repeated, q, method="inverted_cdf")
    np.testing.assert_array_equal(ps.percentile(x, q, weights=w), expected)
    assert ps.median(x, weights=w) == np.percentile(repeated, 50.0, method="inverted_cdf")
    assert ps.mean(x, weights=w) == pytest.approx(np.mean(repeated), rel=1e-13)
    # weights in another normalisation give the same percentiles
    np.testing.assert_array_equal(ps.percentile(x, q, weights=w * 0.0371), expected)
    lower, upper = ps.central_interval(x, level=0.5, weights=w)
    assert (lower, upper) == tuple(np.percentile(repeated, [25.0, 75.0], method="inverted_cdf"))


def test_equal_weights_are_numpys_inverted_cdf_and_zero_weights_are_ignored():
    x = RNG.uniform(size=53)
    q = [5.0, 16.0, 50.0, 84.0, 95.0]
    expected = np.percentile(x, q, method="inverted_cdf")
    np.testing.assert_array_equal(ps.percentile(x, q, weights=np.full(53, 2.5)), expected)
    # zero-weight samples (here the smallest and largest of all) change nothing
    padded = np.concatenate([[-10.0], x, [10.0]])
    weights = np.concatenate([[0.0], np.ones(53), [0.0]])
    np.testing.assert_array_equal(ps.percentile(padded, q, weights=weights), expected)
    assert ps.percentile(padded, 0.0, weights=weights) == x.min()
    assert ps.percentile(padded, 100.0, weights=weights) == x.max()


# -- a Gaussian posterior: closed forms ------------------------------------------------------

MU, SIGMA = 1.3, 0.7
GAUSS = NormalDist(MU, SIGMA)


def test_gaussian_weighted_grid_matches_closed_form_quantiles():
    # a fine grid weighted by the (unnormalised) density: percentiles to about the grid step
    x = np.linspace(MU - 9 * SIGMA, MU + 9 * SIGMA, 180_001)
    w = np.exp(-0.5 * ((x - MU) / SIGMA) ** 2)
    step = x[1] - x[0]
    for q in (2.5, 16.0, 50.0, 84.0, 97.5):
        assert ps.percentile(x, q, weights=w) == pytest.approx(GAUSS.inv_cdf(q / 100), abs=2 * step)
    s = ps.summarise(x, weights=w)
    assert s.median == pytest.approx(MU, abs=2 * step)
    assert s.lower == pytest.approx(GAUSS.inv_cdf(0.16), abs=2 * step)
    assert s.upper == pytest.approx(GAUSS.inv_cdf(0.84), abs=2 * step)
    assert s.mean == pytest.approx(MU, abs=1e-9)
    # the central interval holding erf(1 / sqrt 2) of the mass is mu -+ sigma
    lower, upper = ps.central_interval(x, level=math.erf(1 / math.sqrt(2)), weights=w)
    assert lower == pytest.approx(MU - SIGMA, abs=2 * step)
    assert upper == pytest.approx(MU + SIGMA, abs=2 * step)


def test_gaussian_samples_match_closed_form_within_sampling_error():
    n = 200_000
    x = RNG.normal(MU, SIGMA, size=n)
    s = ps.summarise(x)
    # standard error of the p-quantile: sqrt(p (1 - p) / n) / density there (< 0.004 here)
    assert s.median == pytest.approx(MU, abs=0.01)
    assert s.lower == pytest.approx(MU - 0.994458 * SIGMA, abs=0.015)
    assert s.upper == pytest.approx(MU + 0.994458 * SIGMA, abs=0.015)
    assert s.mean == pytest.approx(MU, abs=0.01)
    lower, upper = ps.central_interval(x, level=0.95)
    assert lower == pytest.approx(GAUSS.inv_cdf(0.025), abs=0.02)
    assert upper == pytest.approx(GAUSS.inv_cdf(0.975), abs=0.02)


# -- angles ----------------------------------------------------------------------------------


def test_fold_angle():
    given = [-90.0, 90.0, 270.0, 181.0, -91.0, 0.0, 45.0, -450.0]
    np.testing.assert_allclose(
        ps.fold_angle(given), [90.0, 90.0, 90.0, 1.0, 89.0, 0.0, 45.0, 90.0], atol=1e-12
    )
    np.testing.assert_allclose(
        ps.fold_angle([-180.0, 180.0, 190.0, 540.0], period=360.0),
        [180.0, 180.0, -170.0, 180.0],
        atol=1e-12,
    )


def test_circular_mean_by_hand():
    # axes at 85 and -85 degrees (= 95) average to the axis at 90, not to 0
    assert float(ps.fold_angle(ps.circular_mean([85.0, -85.0]))) == pytest.approx(90.0, abs=1e-9)
    assert ps.circular_mean([0.0, 60.0]) == pytest.approx(30.0, abs=1e-12)
    # directions 350 and 10 average to 0; weights 1 and 3 on 0 and 90 to atan(3)
    assert ps.circular_mean([350.0, 10.0], period=360.0) == pytest.approx(0.0, abs=1e-12)
    expected = math.degrees(math.atan(3.0))
    assert ps.circular_mean([0.0, 90.0], [1.0, 3.0], period=360.0) == pytest.approx(expected)
    # as axes, 0 and 90 weighted 1 and 3: doubled angles 0 and 180 leave the vector (-2, 0)
    assert abs(ps.circular_mean([0.0, 90.0], [1.0, 3.0])) == pytest.approx(90.0)


def test_unwrap_angle_keeps_each_angle_modulo_the_period():
    x = RNG.uniform(-400.0, 400.0, size=100)
    out = ps.unwrap_angle(x, 80.0)
    assert np.all((out >= -10.0) & (out < 170.0))
    np.testing.assert_allclose(np.mod(out - x + 1.0, 180.0), 1.0, atol=1e-9)


@pytest.mark.parametrize("centre", [88.0, 91.0, -89.5, 10.0])
def test_angle_summary_equals_the_unfolded_samples_summary(centre):
    # samples drawn without folding are the reference; the summary sees them folded
    truth = centre + 1.5 * RNG.normal(size=5001)
    folded = ps.fold_angle(truth)
    s = ps.summarise(folded, angle=True)
    shift = 180.0 * round((float(ps.fold_angle(np.median(truth))) - np.median(truth)) / 180.0)
    expected = (
        np.median(truth) + shift,
        np.percentile(truth, 16.0) + shift,
        np.percentile(truth, 84.0) + shift,
        np.mean(truth) + shift,
    )
    np.testing.assert_allclose(tuple(s), expected, atol=1e-9)
    assert -90.0 < s.median <= 90.0
    assert s.upper - s.lower == pytest.approx(2 * 0.994458 * 1.5, rel=0.05)


def test_weighted_angle_summary_equals_the_repeated_unfolded_samples():
    truth = 89.0 + 1.0 * RNG.normal(size=300)
    w = RNG.integers(1, 4, size=300)
    w[-1] += 701 - w.sum()  # total 701 avoids percentiles on a step
    repeated = np.repeat(truth, w)
    s = ps.summarise(ps.fold_angle(truth), weights=w, angle=True)
    median = np.percentile(repeated, 50.0, method="inverted_cdf")
    shift = 180.0 * round((float(ps.fold_angle(median)) - median) / 180.0)
    expected = (
        median + shift,
        np.percentile(repeated, 16.0, method="inverted_cdf") + shift,
        np.percentile(repeated, 84.0, method="inverted_cdf") + shift,
        np.mean(repeated) + shift,
    )
    np.testing.assert_allclose(tuple(s), expected, atol=1e-9)


def test_summary_percentiles_are_a_parameter():
    x = RNG.normal(size=999)
    s = ps.summarise(x, percentiles=(2.5, 97.5))
    assert (s.lower, s.upper) == tuple(np.percentile(x, [2.5, 97.5]))


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ps.percentile([], 50.0), "non-empty 1-D"),
        (lambda: ps.percentile(np.ones((2, 2)), 50.0), "non-empty 1-D"),
        (lambda: ps.percentile([1.0, 2.0], 101.0), r"in \[0, 100\]"),
        (lambda: ps.percentile([1.0, 2.0], 50.0, weights=[1.0]), "shape"),
        (lambda: ps.percentile([1.0, 2.0], 50.0, weights=[1.0, -1.0]), ">= 0"),
        (lambda: ps.percentile([1.0, 2.0], 50.0, weights=[1.0, np.nan]), "finite"),
        (lambda: ps.median([1.0, 2.0], weights=[0.0, 0.0]), "not all be 0"),
        (lambda: ps.mean([1.0, 2.0], weights=[0.0, 0.0]), "not all be 0"),
        (lambda: ps.central_interval([1.0, 2.0], level=1.0), r"level must be in \(0, 1\)"),
    ],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_module_example_runs():
    import doctest

    result = doctest.testmod(ps, verbose=False)
    assert result.attempted >= 3 and result.failed == 0

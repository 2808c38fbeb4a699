"""Noise models: the statistics of the added noise against the variance formula, seeding,
and input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twinlens.imaging.noise import add_noise, gaussian_noise

N_SIDE = 1000  # 1e6 pixels: standard errors ~1e-3 of the quantities tested
# 5 standard errors: the seed is fixed, so the test is deterministic; a 5-sigma margin means
# a correct implementation passes for essentially any seed (two-sided p ~ 6e-7), so changing
# numpy's generator or the seed will not make it flaky.
N_SIGMA = 5.0


def test_poisson_plus_gaussian_matches_the_variance_formula():
    rate, sky, t, rms = 3.0, 1.0, 2.0, 0.5  # e-/s, e-/s, s, e-/s
    image = np.full((N_SIDE, N_SIDE), rate)
    data, noise_map = add_noise(
        image, exposure_time=t, background_sky=sky, background_rms=rms, seed=1
    )
    residual = (data - image).ravel()
    n = residual.size

    variance = (rate + sky) / t + rms**2  # 2.25
    np.testing.assert_allclose(noise_map, math.sqrt(variance), rtol=1e-15)

    # Standard errors. The mean: sigma / sqrt(n). The sample variance: sqrt((k4 + 2 sigma^4)
    # / n), with k4 the fourth cumulant; a Poisson count of mean lam has every cumulant lam,
    # so counts / t has k4 = lam / t^4 (the Gaussian part adds none).
    lam = (rate + sky) * t
    se_mean = math.sqrt(variance / n)
    se_var = math.sqrt((lam / t**4 + 2 * variance**2) / n)  # ~3.3e-3
    assert abs(residual.mean()) < N_SIGMA * se_mean
    assert abs(residual.var(ddof=1) - variance) < N_SIGMA * se_var

    # The check has power: each plausible wrong formula gives a variance at least 0.25 away,
    # > 75 standard errors (15 tolerances), e.g. ignoring exposure_time gives
    # (3 + 1) / 1 + 0.25 = 4.25, and would fail the assertion above by a wide margin.
    wrong = {
        "exposure_time ignored": (rate + sky) + rms**2,
        "multiplied by exposure_time": (rate + sky) * t + rms**2,
        "sky not in the Poisson mean": rate / t + rms**2,
        "background_rms dropped": (rate + sky) / t,
        "background_rms used as a variance": (rate + sky) / t + rms,
    }
    for name, value in wrong.items():
        assert abs(value - variance) > 10 * N_SIGMA * se_var, name
    # A sky that is not subtracted again would shift the mean by 1.0 = 670 standard errors.
    assert sky > 10 * N_SIGMA * se_mean


def test_standardised_residuals_on_a_varied_image():
    # Rates from 0 to ~60 e-/s: the noise map must follow the image pixel by pixel.
    y, x = np.mgrid[:N_SIDE, :N_SIDE] / N_SIDE
    image = 10 * x + 50 * np.exp(-((x - 0.5) ** 2 + (y - 0.4) ** 2) / 0.02)
    data, noise_map = add_noise(
        image, exposure_time=300.0, background_sky=0.2, background_rms=0.01, seed=2
    )
    np.testing.assert_allclose(noise_map, np.sqrt((image + 0.2) / 300.0 + 0.01**2), rtol=1e-15)
    z = ((data - image) / noise_map).ravel()
    n = z.size
    assert abs(z.mean()) < N_SIGMA / math.sqrt(n)
    # Standard error of var(z) estimated from the sample: std(z^2) / sqrt(n) (~1.4e-3).
    assert abs(z.var() - 1) < N_SIGMA * (z**2).std() / math.sqrt(n)


def test_without_gaussian_noise_the_counts_are_integers():
    image = np.random.default_rng(3).uniform(0, 5, (50, 40))
    sky, t = 0.7, 40.0
    data, _ = add_noise(image, exposure_time=t, background_sky=sky, seed=4)
    counts = (data + sky) * t
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    assert counts.min() >= 0


def test_zero_expectation_gives_no_noise():
    image = np.zeros((3, 4))
    data, noise_map = add_noise(image, exposure_time=10.0, seed=0)
    np.testing.assert_array_equal(data, 0.0)
    np.testing.assert_array_equal(noise_map, 0.0)


def test_negative_pixels_are_allowed_when_the_sky_covers_them():
    image = np.array([[-0.3, 1.0], [0.0, 2.0]])
    data, noise_map = add_noise(image, exposure_time=5.0, background_sky=0.5, seed=0)
    assert np.all(np.isfinite(data)) and np.all(noise_map > 0)
    with pytest.raises(ValueError, match=r"image.*-0\.3"):
        add_noise(image, exposure_time=5.0, background_sky=0.2, seed=0)


def test_seeding():
    image = np.random.default_rng(5).uniform(0, 3, (30, 30))
    kw = {"exposure_time": 100.0, "background_sky": 0.1, "background_rms": 0.05}
    a = add_noise(image, seed=7, **kw)
    b = add_noise(image, seed=7, **kw)
    c = add_noise(image, seed=8, **kw)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    np.testing.assert_array_equal(a[1], c[1])  # the noise map does not depend on the draw
    # A Generator is used as is, so two generators seeded alike give the same image.
    d = add_noise(image, seed=np.random.default_rng(7), **kw)
    np.testing.assert_array_equal(a[0], d[0])

    g1 = gaussian_noise(image, 0.1, seed=7)
    g2 = gaussian_noise(image, 0.1, seed=7)
    g3 = gaussian_noise(image, 0.1, seed=8)
    np.testing.assert_array_equal(g1[0], g2[0])
    assert not np.array_equal(g1[0], g3[0])


def test_gaussian_noise_statistics():
    image = np.random.default_rng(6).uniform(-1, 1, (N_SIDE, N_SIDE))
    sigma = 0.3
    data, noise_map = gaussian_noise(image, sigma, seed=9)
    np.testing.assert_array_equal(noise_map, np.full(image.shape, sigma))
    residual = (data - image).ravel()
    n = residual.size
    assert abs(residual.mean()) < N_SIGMA * sigma / math.sqrt(n)
    # Gaussian: the sample variance has standard error sigma^2 sqrt(2 / n).
    assert abs(residual.var(ddof=1) - sigma**2) < N_SIGMA * sigma**2 * math.sqrt(2 / n)


GOOD = {"exposure_time": 10.0, "background_sky": 0.1, "background_rms": 0.01}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("exposure_time", 0.0),
        ("exposure_time", -1.0),
        ("exposure_time", np.inf),
        ("exposure_time", np.nan),
        ("exposure_time", "10"),
        ("exposure_time", None),
        ("exposure_time", True),
        ("exposure_time", np.array([1.0, 2.0])),
        ("background_sky", -0.1),
        ("background_sky", np.nan),
        ("background_sky", np.inf),
        ("background_rms", -0.01),
        ("background_rms", np.nan),
        ("background_rms", np.inf),
    ],
)
def test_add_noise_rejects_bad_parameters(name, value):
    with pytest.raises(ValueError, match=name):
        add_noise(np.ones((4, 4)), seed=0, **{**GOOD, name: value})


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_images_are_rejected(bad):
    image = np.ones((4, 4))
    image[2, 1] = bad
    with pytest.raises(ValueError, match=r"image .*\(2, 1\)"):
        add_noise(image, seed=0, **GOOD)
    with pytest.raises(ValueError, match="image"):
        gaussian_noise(image, 0.1, seed=0)


@pytest.mark.parametrize("sigma", [0.0, -0.1, np.nan, np.inf])
def test_gaussian_noise_rejects_bad_sigma(sigma):
    with pytest.raises(ValueError, match="noise_sigma"):
        gaussian_noise(np.ones((4, 4)), sigma, seed=0)

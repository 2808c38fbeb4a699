"""PSF construction and image convolution (direct and FFT, numpy and jax.numpy).

References are independent of twinlens: scipy.signal.convolve2d and scipy.ndimage.convolve
(second algorithms), the documented sum written as a literal loop, the closed-form sampled
Gaussian, and flux conservation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage, signal

from twinlens.backend import jax_runtime
from twinlens.imaging.psf import (
    DIRECT_MAX_TAPS,
    FWHM_PER_SIGMA,
    PSF,
    SEPARABLE_MAX_TAPS,
    convolve,
    separable_factors,
)

METHODS = ("direct", "fft", "separable")


def random_kernel(rng, shape, method, low=0.1, high=1.0):
    """Positive random weights of ``shape``; for ``separable`` an outer product of a random
    column and row (the kernels that method takes), else a general kernel of full rank."""
    if method == "separable":
        return np.outer(rng.uniform(low, high, shape[0]), rng.uniform(low, high, shape[1]))
    return rng.uniform(low, high, size=shape)


def rounding_atol(image, kernel):
    """Allowed difference between two correct convolutions, from rounding alone.

    Each output pixel is a sum of at most ky * kx products with a unit-sum, non-negative kernel,
    so its magnitude is <= max|image| and a direct sum's rounding is <= ky * kx * eps of that.
    An FFT's round-off is ~eps * log2(N) * max|image| * sqrt(N) at worst for these sizes
    (N < 10^3 points). 1e-12 * max|image| covers both with margin; any indexing, flip or
    centring error changes outputs by O(max|image|)."""
    return 1e-12 * max(1.0, float(np.max(np.abs(image))))


def literal_convolution(image, kernel):
    """The module's documented definition, term by term: zero outside the image,
    out[i, j] = sum_ab kernel[a, b] * image[i - a + cy, j - b + cx]."""
    ny, nx = image.shape
    ky, kx = kernel.shape
    cy, cx = ky // 2, kx // 2
    out = np.zeros_like(image, dtype=float)
    for i in range(ny):
        for j in range(nx):
            total = 0.0
            for a in range(ky):
                for b in range(kx):
                    p, q = i - a + cy, j - b + cx
                    if 0 <= p < ny and 0 <= q < nx:
                        total += kernel[a, b] * image[p, q]
            out[i, j] = total
    return out


# -- construction ----------------------------------------------------------------------------


def test_kernel_is_normalised_to_unit_sum_and_stored_as_float():
    raw = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]])  # integer input, sum 16
    psf = PSF(raw)
    assert psf.kernel.dtype == np.float64
    # dividing by 16 (a power of two) is exact
    np.testing.assert_array_equal(psf.kernel, raw / 16.0)
    assert psf.kernel.sum() == 1.0
    assert not psf.kernel.flags.writeable


def test_normalisation_keeps_the_shape_of_an_arbitrary_kernel():
    rng = np.random.default_rng(1)
    raw = rng.uniform(0.0, 3.0, size=(5, 3))
    psf = PSF(raw)
    # sum of 15 O(1) numbers: relative rounding ~15 eps
    assert abs(psf.kernel.sum() - 1.0) < 1e-14
    np.testing.assert_allclose(psf.kernel * raw.sum(), raw, rtol=1e-14, atol=0)  # one division


def test_editing_the_input_does_not_change_the_psf():
    raw = np.ones((3, 3))
    psf = PSF(raw)
    raw[1, 1] = 100.0
    np.testing.assert_array_equal(psf.kernel, np.full((3, 3), 1 / 9))


@pytest.mark.parametrize("shape", [(2, 3), (3, 4), (4, 4), (0, 3)])
def test_kernel_needs_odd_sides(shape):
    with pytest.raises(ValueError, match="odd side lengths"):
        PSF(np.ones(shape))


@pytest.mark.parametrize("kernel", [np.ones(3), np.ones((3, 3, 3)), 1.0])
def test_kernel_must_be_two_dimensional(kernel):
    with pytest.raises(ValueError, match="2-D"):
        PSF(kernel)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_kernel_must_be_finite(bad):
    k = np.ones((3, 3))
    k[0, 2] = bad
    with pytest.raises(ValueError, match="finite"):
        PSF(k)


@pytest.mark.parametrize(
    "kernel",
    [np.zeros((3, 3)), -np.ones((3, 3)), np.array([[1.0, -2.0, 0.5]])],
    ids=["zero", "negative", "negative-sum"],
)
def test_kernel_needs_a_positive_sum(kernel):
    with pytest.raises(ValueError, match="positive sum"):
        PSF(kernel)


def test_a_kernel_with_negative_lobes_but_positive_sum_is_accepted():
    k = np.array([[-0.1, 1.2, -0.1]])
    # the float sum of these decimals is 1 to an ulp or two, so normalising changes ~1 ulp
    np.testing.assert_allclose(PSF(k).kernel, k, rtol=1e-15, atol=0)


def test_normalize_false_requires_a_unit_sum():
    k = np.full((3, 3), 1 / 9)
    psf = PSF(k, normalize=False)
    np.testing.assert_array_equal(psf.kernel, k)  # untouched
    # the documented tolerance is 1e-10 on the sum
    PSF(k * (1 + 5e-11), normalize=False)
    with pytest.raises(ValueError, match="sum to 1"):
        PSF(k * (1 + 2e-10), normalize=False)
    with pytest.raises(ValueError, match="sum to 1"):
        PSF(np.ones((3, 3)), normalize=False)


def test_method_must_be_known():
    with pytest.raises(ValueError, match=r"PSF\.method"):
        PSF(np.ones((3, 3)), method="spectral")


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((7, 7), "direct"),  # exactly DIRECT_MAX_TAPS = 49 entries
        ((1, 49), "direct"),
        ((5, 9), "direct"),  # 45
        ((7, 9), "fft"),  # 63
        ((1, 51), "fft"),
        ((9, 9), "fft"),
        ((1, 1), "separable"),  # any single row or column is an outer product (2 taps)
    ],
)
def test_auto_switches_at_direct_max_taps(shape, expected):
    assert DIRECT_MAX_TAPS == 49  # the cases above are written for this threshold
    general = np.random.default_rng(1).uniform(0.1, 1.0, size=shape)  # not an outer product
    assert PSF(general).resolved_method == expected
    for m in METHODS:
        assert PSF(np.ones(shape), method=m).resolved_method == m


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((21, 21), "separable"),  # 42 taps in the two passes
        ((1, 47), "separable"),  # exactly SEPARABLE_MAX_TAPS = 48
        ((25, 25), "fft"),  # 50
        ((3, 3), "separable"),
    ],
)
def test_auto_prefers_the_separable_form_for_outer_products(shape, expected):
    assert SEPARABLE_MAX_TAPS == 48  # the cases above are written for this threshold
    rng = np.random.default_rng(2)
    assert PSF(random_kernel(rng, shape, "separable")).resolved_method == expected
    # a round Gaussian is an outer product to rounding
    assert PSF.gaussian(0.1, 0.05, 21).resolved_method == "separable"


def test_separable_factors_rebuild_the_kernel_and_other_kernels_are_refused():
    rng = np.random.default_rng(4)
    psf = PSF(random_kernel(rng, (7, 5), "separable"))
    column, row = separable_factors(psf)
    np.testing.assert_allclose(np.outer(column, row), psf.kernel, rtol=1e-14, atol=0)
    assert column.sum() > 0 and row.sum() > 0
    general = random_kernel(rng, (7, 5), "fft")
    assert separable_factors(PSF(general)) is None
    with pytest.raises(ValueError, match=r"'separable' needs a kernel that is an outer product"):
        PSF(general, method="separable")
    # an elliptical, rotated Gaussian is not separable: auto leaves it to the FFT
    y, x = np.mgrid[-10:11, -10:11]
    u, v = 0.8 * x + 0.6 * y, -0.6 * x + 0.8 * y
    assert PSF(np.exp(-(u**2 / 8.0 + v**2 / 3.0))).resolved_method == "fft"


def test_gaussian_is_the_closed_form_sampled_gaussian():
    fwhm, scale, shape = 0.4, 0.1, (9, 13)
    psf = PSF.gaussian(fwhm, scale, shape)
    assert psf.kernel.shape == (9, 13)
    sigma = fwhm / (2 * math.sqrt(2 * math.log(2)))
    assert abs(FWHM_PER_SIGMA * sigma - fwhm) < 1e-15
    expected = np.empty(shape)
    for i in range(shape[0]):
        for j in range(shape[1]):
            y, x = (i - 4) * scale, (j - 6) * scale
            expected[i, j] = math.exp(-(x * x + y * y) / (2 * sigma * sigma))
    expected /= expected.sum()
    # exp and a normalisation of O(100) terms: relative rounding ~1e-14
    np.testing.assert_allclose(psf.kernel, expected, rtol=1e-13, atol=0)
    # the definition of the FWHM, independent of the formula above: 2 pixels (= fwhm / 2) from
    # the centre the profile is exactly half its peak (rounding in exp and log: ~1e-15)
    c = psf.kernel[4, 6]
    assert abs(psf.kernel[4, 8] / c - 0.5) < 1e-14
    assert abs(psf.kernel[2, 6] / c - 0.5) < 1e-14
    # symmetric under both flips (x and y treated alike), peak in the middle
    np.testing.assert_allclose(psf.kernel, psf.kernel[::-1, ::-1], rtol=1e-15, atol=0)
    assert np.unravel_index(np.argmax(psf.kernel), shape) == (4, 6)


def test_gaussian_accepts_one_integer_and_passes_options():
    psf = PSF.gaussian(0.3, 0.1, 5, method="fft")
    assert psf.kernel.shape == (5, 5) and psf.method == "fft"
    assert PSF.gaussian(0.3, 0.1).kernel.shape == (21, 21)  # documented default


@pytest.mark.parametrize(
    ("fwhm", "scale", "match"),
    [(0.0, 0.1, "fwhm and pixel_scale"), (0.3, -0.1, "fwhm and pixel_scale")],
)
def test_gaussian_rejects_non_positive_sizes(fwhm, scale, match):
    with pytest.raises(ValueError, match=match):
        PSF.gaussian(fwhm, scale, 5)


def test_gaussian_needs_an_odd_shape():
    with pytest.raises(ValueError, match="odd side lengths"):
        PSF.gaussian(0.3, 0.1, 6)


def test_psfs_compare_by_value():
    a, b = PSF.gaussian(0.3, 0.1, 5), PSF.gaussian(0.3, 0.1, 5)
    assert a == b and hash(a) == hash(b)
    # the stored kernel is the normalised one: a scaled input gives an equal PSF (normalising
    # k and 2k divides by an exactly doubled sum, so the results are bit-identical)
    assert PSF(np.ones((3, 3))) == PSF(2 * np.ones((3, 3)))
    assert a != PSF.gaussian(0.31, 0.1, 5)
    assert a != PSF.gaussian(0.3, 0.1, 5, method="fft")


def test_psf_has_no_jax_leaves():
    jax = jax_runtime.load()
    assert jax.tree_util.tree_leaves(PSF.gaussian(0.3, 0.1, 5)) == []


# -- convolution: geometry -------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kshape", [(3, 3), (5, 3), (1, 7), (9, 9)])
def test_a_centred_delta_reproduces_the_kernel(method, kshape):
    rng = np.random.default_rng(sum(kshape))
    psf = PSF(random_kernel(rng, kshape, method), method=method)
    ny, nx = 15, 17
    image = np.zeros((ny, nx))
    image[7, 8] = 1.0
    out = psf.convolve(image)
    ky, kx = kshape
    expected = np.zeros((ny, nx))
    expected[7 - ky // 2 : 7 + ky // 2 + 1, 8 - kx // 2 : 8 + kx // 2 + 1] = psf.kernel
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-15)  # 1 x kernel + rounding


@pytest.mark.parametrize("method", METHODS)
def test_orientation_is_convolution_not_correlation(method):
    # kernel[a, b] with a > cy (below centre in the array) and b > cx: a point source at (i0, j0)
    # lands at (i0 + a - cy, j0 + b - cx) under convolution, at (i0 - a + cy, j0 - b + cx)
    # under correlation. Asymmetric weights tell every offset apart.
    k = np.zeros((5, 5))
    expected = np.zeros((11, 12))
    if method == "separable":  # an outer product: rows 1 and 4 of the kernel, columns 2 and 3
        k[np.ix_([1, 4], [2, 3])] = np.outer([0.4, 0.6], [0.5, 0.5])
        expected[np.ix_([4, 7], [6, 7])] = 2.0 * np.outer([0.4, 0.6], [0.5, 0.5])
    else:
        k[2, 2] = 0.5
        k[4, 3] = 0.3  # two rows down, one column right of the centre
        k[1, 2] = 0.2  # one row up
        expected[5, 6] = 2.0 * 0.5
        expected[7, 7] = 2.0 * 0.3
        expected[4, 6] = 2.0 * 0.2
    psf = PSF(k, method=method)
    image = np.zeros((11, 12))
    image[5, 6] = 2.0
    out = psf.convolve(image)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-15)  # exact weights + rounding
    # the same statement, by scipy's convolution
    np.testing.assert_allclose(
        out, signal.convolve2d(image, psf.kernel, mode="same"), rtol=0, atol=1e-15
    )


@pytest.mark.parametrize("method", METHODS)
def test_a_shift_kernel_moves_the_image(method):
    k = np.zeros((3, 3))
    k[1, 2] = 1.0  # convolution with this kernel: out[i, j] = image[i, j - 1]
    rng = np.random.default_rng(7)
    image = rng.normal(size=(6, 8))
    out = PSF(k, method=method).convolve(image)
    expected = np.zeros_like(image)
    expected[:, 1:] = image[:, :-1]  # moved one column right; zero comes in from the left
    np.testing.assert_allclose(out, expected, rtol=0, atol=rounding_atol(image, k))


# -- convolution: agreement with independent algorithms -------------------------------------

SIZES = [
    ((9, 11), (3, 5)),
    ((12, 10), (1, 7)),
    ((16, 13), (7, 7)),
    ((20, 18), (9, 11)),  # FFT under auto
    ((4, 3), (7, 9)),  # image smaller than the kernel
    ((1, 1), (3, 3)),
    ((2, 5), (5, 1)),
    ((6, 6), (1, 1)),
]


@pytest.mark.parametrize(("ishape", "kshape"), SIZES)
def test_direct_and_fft_match_scipy(ishape, kshape):
    rng = np.random.default_rng(hash((ishape, kshape)) % 2**32)
    image = rng.normal(size=ishape) * 3.0
    raw = rng.uniform(0.05, 1.0, size=kshape)
    psf_auto = PSF(raw)
    kernel = raw / raw.sum()
    ref = signal.convolve2d(image, kernel, mode="same")
    ref_nd = ndimage.convolve(image, kernel, mode="constant", cval=0.0)
    atol = rounding_atol(image, kernel)
    np.testing.assert_allclose(ref_nd, ref, rtol=0, atol=atol)  # the two references agree
    for method in ("direct", "fft", "auto"):
        out = PSF(raw, method=method).convolve(image)
        assert out.shape == ishape
        np.testing.assert_allclose(out, ref, rtol=0, atol=atol)
    # the module-level function is the method
    np.testing.assert_array_equal(convolve(image, psf_auto), psf_auto.convolve(image))
    # an outer product, by every method
    outer = random_kernel(rng, kshape, "separable", 0.05)
    ref = signal.convolve2d(image, outer / outer.sum(), mode="same")
    for method in (*METHODS, "auto"):
        out = PSF(outer, method=method).convolve(image)
        np.testing.assert_allclose(out, ref, rtol=0, atol=atol)


@pytest.mark.parametrize("method", METHODS)
def test_matches_the_literal_documented_sum(method):
    rng = np.random.default_rng(3)
    image = rng.normal(size=(5, 7))
    kernel = random_kernel(rng, (3, 5), method)
    psf = PSF(kernel, method=method)
    ref = literal_convolution(image, psf.kernel)
    np.testing.assert_allclose(psf.convolve(image), ref, rtol=0, atol=rounding_atol(image, kernel))


@pytest.mark.parametrize("method", METHODS)
def test_signed_kernels_and_images(method):
    # negative lobes in the kernel (positive sum) exercise the weights beyond a blur
    rng = np.random.default_rng(11)
    if method == "separable":  # dominant centres: a positive total
        column, row = rng.normal(size=5), rng.normal(size=7)
        column[2], row[3] = abs(column).sum(), abs(row).sum()
        raw = np.outer(column, row)
    else:
        raw = rng.normal(size=(5, 7))
        raw[2, 3] = abs(raw).sum()  # dominant centre, positive total
    image = rng.normal(size=(10, 9))
    psf = PSF(raw, method=method)
    ref = signal.convolve2d(image, psf.kernel, mode="same")
    # kernel weights are no longer bounded by 1 in sum of magnitudes: scale the bound by it
    atol = rounding_atol(image, raw) * float(np.abs(psf.kernel).sum())
    np.testing.assert_allclose(psf.convolve(image), ref, rtol=0, atol=atol)


@pytest.mark.parametrize("method", METHODS)
def test_leading_batch_axes(method):
    rng = np.random.default_rng(5)
    images = rng.normal(size=(2, 3, 8, 9))
    psf = PSF(random_kernel(rng, (5, 3), method), method=method)
    out = psf.convolve(images)
    assert out.shape == images.shape
    for a in range(2):
        for b in range(3):
            ref = signal.convolve2d(images[a, b], psf.kernel, mode="same")
            np.testing.assert_allclose(
                out[a, b], ref, rtol=0, atol=rounding_atol(images[a, b], psf.kernel)
            )


@pytest.mark.parametrize("method", METHODS)
def test_flux_is_conserved_away_from_the_edges(method):
    rng = np.random.default_rng(9)
    image = np.zeros((30, 32))
    image[10:20, 12:21] = rng.uniform(0.0, 5.0, size=(10, 9))  # >= 5 pixels from every edge
    psf = PSF(random_kernel(rng, (9, 7), method), method=method)  # reaches 4 and 3 pixels
    out = psf.convolve(image)
    # a unit-sum kernel moves flux without loss when none leaves the image: sum(out) =
    # sum(kernel) * sum(image). 90 pixels of O(1): relative rounding well under 1e-13
    assert abs(out.sum() - image.sum()) < 1e-13 * image.sum()
    # ...and the spread light stays within the support grown by the kernel's half-widths
    # (zero to FFT round-off elsewhere)
    outside = np.ones_like(image, dtype=bool)
    outside[10 - 4 : 20 + 4, 12 - 3 : 21 + 3] = False
    assert np.max(np.abs(out[outside])) < 1e-12
    # while light spread up to the edge leaks out (the zero boundary): the test discriminates
    edge = np.zeros((30, 32))
    edge[0, 0] = 1.0
    assert psf.convolve(edge).sum() < 0.9


# -- jax.numpy -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jnp():
    return jax_runtime.load().numpy  # turns on float64 (TWINLENS_JAX_X64 defaults to on)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("ishape", "kshape"),
    [((2, 7, 8), (3, 5)), ((4, 3), (7, 9)), ((170, 12), (5, 3))],  # 170: JAX separable by FFT
)
def test_jax_matches_numpy(jnp, method, ishape, kshape):
    rng = np.random.default_rng(13)
    image = rng.normal(size=ishape)
    psf = PSF(random_kernel(rng, kshape, method), method=method)
    out = psf.convolve(jnp.asarray(image), xp=jnp)
    assert out.shape == ishape
    assert out.dtype == jnp.float64
    # both are float64; they may sum or transform in a different order: rounding only
    np.testing.assert_allclose(
        np.asarray(out), psf.convolve(image), rtol=0, atol=rounding_atol(image, psf.kernel)
    )
    # and against scipy, slice by slice
    flat = image.reshape(-1, *ishape[-2:])
    ref = np.stack([signal.convolve2d(im, psf.kernel, mode="same") for im in flat])
    np.testing.assert_allclose(
        np.asarray(out).reshape(ref.shape), ref, rtol=0, atol=rounding_atol(image, psf.kernel)
    )


def test_jax_convolution_under_jit_with_the_psf_as_an_argument(jnp):
    jax = jax_runtime.load()
    rng = np.random.default_rng(17)
    image = rng.normal(size=(6, 7))
    psf = PSF.gaussian(0.25, 0.1, 9, method="fft")

    @jax.jit
    def run(p, im):
        return p.convolve(im, xp=jnp)

    out = run(psf, jnp.asarray(image))
    ref = signal.convolve2d(image, psf.kernel, mode="same")
    np.testing.assert_allclose(np.asarray(out), ref, rtol=0, atol=rounding_atol(image, psf.kernel))

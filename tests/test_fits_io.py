"""FITS reading and writing: bit-exact round trips, pixel scales from every kind of header,
and clear errors instead of silent loss."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest
from astropy.io import fits

from twinlens.imaging.fits_io import read_image, write_image


def _awkward_image() -> np.ndarray:
    # Non-square, with values whose bits a lossy path would change: NaN, +-inf, -0.0, a
    # subnormal, the largest float, and values with full 53-bit mantissas.
    image = np.random.default_rng(0).normal(size=(7, 5)) * 1e3
    image[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 5e-324]
    image[1, 0] = np.finfo(np.float64).max
    return image


def _write_header(path, cards: dict, data=None) -> None:
    data = np.zeros((4, 6)) if data is None else data
    fits.PrimaryHDU(data=data, header=fits.Header(list(cards.items()))).writeto(path)


def test_round_trip_is_bit_exact(tmp_path):
    image = _awkward_image()
    path = tmp_path / "image.fits"
    write_image(path, image, pixel_scale=0.05)
    data, scale = read_image(path)
    assert data.dtype == np.float64 and data.dtype.isnative
    assert data.shape == image.shape
    np.testing.assert_array_equal(data.view(np.uint64), image.view(np.uint64))
    assert scale == 0.05  # PIXSCALE is read first and stores the float exactly


def test_written_cdelt_agrees_with_pixscale(tmp_path):
    path = tmp_path / "image.fits"
    write_image(path, np.ones((3, 3)), pixel_scale=0.031)
    with fits.open(path, mode="update") as hdul:
        header = hdul[0].header
        # Header floats are text of at most 20 characters: 16 significant digits here.
        assert header["CDELT1"] == header["CDELT2"] == pytest.approx(0.031 / 3600, rel=1e-15)
        del header["PIXSCALE"]
    _, scale = read_image(path)
    assert scale == pytest.approx(0.031, rel=1e-14)


def test_rows_are_written_as_is(tmp_path):
    # Row 0 of the array is the first FITS row (the bottom row in ds9): no flip either way.
    image = np.arange(12.0).reshape(3, 4)
    path = tmp_path / "rows.fits"
    write_image(path, image)
    np.testing.assert_array_equal(fits.getdata(path), image)
    np.testing.assert_array_equal(read_image(path)[0], image)


def test_pixscale_keyword(tmp_path):
    path = tmp_path / "a.fits"
    _write_header(path, {"PIXSCALE": 0.1})
    assert read_image(path)[1] == 0.1


def test_cdelt_in_degrees(tmp_path):
    path = tmp_path / "a.fits"
    # RA increases to the left, so CDELT1 is usually negative; the scale is its magnitude.
    _write_header(path, {"CDELT1": -0.04 / 3600, "CDELT2": 0.04 / 3600})
    assert read_image(path)[1] == pytest.approx(0.04, rel=1e-14)


def test_cdelt_in_other_units_and_with_pc(tmp_path):
    path = tmp_path / "arcsec.fits"
    _write_header(path, {"CDELT1": 0.2, "CDELT2": 0.2, "CUNIT1": "arcsec", "CUNIT2": "arcsec"})
    assert read_image(path)[1] == pytest.approx(0.2, rel=1e-14)
    # A rotation in PC leaves the scale alone.
    c, s = math.cos(0.3), math.sin(0.3)
    path = tmp_path / "pc.fits"
    pc = {"PC1_1": c, "PC1_2": -s, "PC2_1": s, "PC2_2": c}
    _write_header(path, {"CDELT1": 1e-5, "CDELT2": 1e-5, **pc})
    assert read_image(path)[1] == pytest.approx(0.036, rel=1e-12)


def test_rotated_cd_matrix(tmp_path):
    step = 0.08 / 3600
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    cd = {"CD1_1": -step * c, "CD1_2": step * s, "CD2_1": step * s, "CD2_2": step * c}
    path = tmp_path / "cd.fits"
    _write_header(path, cd)
    assert read_image(path)[1] == pytest.approx(0.08, rel=1e-12)
    # Only the off-diagonal elements (a 90 degree rotation): the others default to 0.
    path = tmp_path / "cd90.fits"
    _write_header(path, {"CD1_2": -step, "CD2_1": step})
    assert read_image(path)[1] == pytest.approx(0.08, rel=1e-12)


def test_cd_matrix_takes_precedence_over_cdelt(tmp_path):
    # Some writers leave CDELTi = 1 next to a CD matrix; the FITS WCS rule ignores CDELTi then.
    path = tmp_path / "both.fits"
    step = 0.05 / 3600
    _write_header(path, {"CDELT1": 1.0, "CDELT2": 1.0, "CD1_1": -step, "CD2_2": step})
    assert read_image(path)[1] == pytest.approx(0.05, rel=1e-12)


def test_no_scale_gives_none(tmp_path):
    path = tmp_path / "plain.fits"
    fits.PrimaryHDU(data=np.ones((2, 3), dtype=np.float32)).writeto(path)
    data, scale = read_image(path)
    assert scale is None
    assert data.dtype == np.float64
    np.testing.assert_array_equal(data, np.ones((2, 3)))


def test_non_square_pixels_raise_naming_both_scales(tmp_path):
    path = tmp_path / "rect.fits"
    _write_header(path, {"CDELT1": 0.05 / 3600, "CDELT2": 0.06 / 3600})
    with pytest.raises(ValueError, match="non-square") as info:
        read_image(path)
    assert "0.05" in str(info.value) and "0.06" in str(info.value)
    # Within 1e-6 relative is square (rounding in a header must not be an error).
    path = tmp_path / "nearly.fits"
    _write_header(path, {"CDELT1": 0.05 / 3600, "CDELT2": 0.05 * (1 + 1e-7) / 3600})
    assert read_image(path)[1] == pytest.approx(0.05, rel=1e-6)


@pytest.mark.parametrize(
    ("cards", "match"),
    [
        ({"CDELT1": 1e-5}, "CDELT2"),
        ({"CDELT1": 1e-5, "CDELT2": 1e-5, "CUNIT1": "m"}, "CUNIT1"),
        ({"PIXSCALE": -0.1}, "PIXSCALE"),
        ({"PIXSCALE": 0.0}, "PIXSCALE"),
        ({"CD1_1": 0.0, "CD2_2": 1e-5}, "zero pixel scale"),
    ],
)
def test_bad_scale_headers_raise(tmp_path, cards, match):
    path = tmp_path / "bad.fits"
    _write_header(path, cards)
    with pytest.raises(ValueError, match=match):
        read_image(path)


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.fits"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        read_image(path)


def test_hdu_selection_and_hdus_without_images(tmp_path):
    path = tmp_path / "mef.fits"
    image = np.arange(6.0).reshape(2, 3)
    cube = fits.ImageHDU(data=np.zeros((2, 3, 4)), name="CUBE")
    sci = fits.ImageHDU(data=image, name="SCI")
    sci.header["PIXSCALE"] = 0.04
    fits.HDUList([fits.PrimaryHDU(), sci, cube]).writeto(path)

    with pytest.raises(ValueError, match=r"HDU 0 .*shape is None"):
        read_image(path)
    with pytest.raises(ValueError, match=r"HDU 'CUBE' .*\(2, 3, 4\)"):
        read_image(path, hdu="CUBE")
    with pytest.raises(ValueError, match="no HDU 7"):
        read_image(path, hdu=7)
    with pytest.raises(ValueError, match="no HDU 'ERR'"):
        read_image(path, hdu="ERR")
    for hdu in (1, "SCI", "sci"):
        data, scale = read_image(path, hdu=hdu)
        np.testing.assert_array_equal(data, image)
        assert scale == 0.04


def test_overwrite_is_refused_unless_asked(tmp_path):
    path = tmp_path / "keep.fits"
    write_image(path, np.ones((2, 2)))
    with pytest.raises(FileExistsError, match=re.escape(str(path))):
        write_image(path, np.zeros((2, 2)))
    np.testing.assert_array_equal(read_image(path)[0], np.ones((2, 2)))  # untouched
    write_image(path, np.zeros((2, 2)), overwrite=True)
    np.testing.assert_array_equal(read_image(path)[0], np.zeros((2, 2)))


def test_extra_header_keywords(tmp_path):
    path = tmp_path / "hdr.fits"
    write_image(path, np.ones((2, 2)), header={"OBJECT": "lens", "EXPTIME": (600.0, "[s]")})
    header = fits.getheader(path)
    assert header["OBJECT"] == "lens"
    assert header["EXPTIME"] == 600.0
    assert header.comments["EXPTIME"] == "[s]"
    assert read_image(path)[1] is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"array": np.ones(4)}, "array must be 2-D"),
        ({"array": np.ones((2, 2, 2))}, "array must be 2-D"),
        ({"pixel_scale": 0.0}, "pixel_scale"),
        ({"pixel_scale": -0.05}, "pixel_scale"),
        ({"pixel_scale": np.nan}, "pixel_scale"),
        ({"header": {"NAXIS1": 3}}, "NAXIS1"),
        ({"header": {"BITPIX": 16}}, "BITPIX"),
        ({"pixel_scale": 0.05, "header": {"CDELT1": 1.0}}, "CDELT1"),
    ],
)
def test_write_rejects_bad_input(tmp_path, kwargs, match):
    path = tmp_path / "bad.fits"
    with pytest.raises(ValueError, match=match):
        write_image(path, **{"array": np.ones((2, 2)), **kwargs})
    assert not path.exists()


def test_import_does_not_load_astropy():
    code = (
        "import sys, twinlens, twinlens.imaging.fits_io, twinlens.imaging.noise; "
        "assert 'astropy' not in sys.modules, 'astropy imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

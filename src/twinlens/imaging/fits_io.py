"""Read and write 2-D images as FITS files, with the pixel scale in arcseconds.

astropy is imported inside the functions, so ``import twinlens`` (and importing this module)
does not load it.

Row order: arrays are written and read as they are, with no flip. Row 0 of the array is the
first row of the FITS data, which ds9 and most FITS viewers draw at the bottom of the image;
``array[i, j]`` is FITS pixel ``(x=j+1, y=i+1)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from twinlens.messages import shown

__all__ = ["read_image", "write_image"]

# Arcseconds per unit of CUNITi. The FITS WCS default, when CUNITi is absent, is degrees.
_ARCSEC_PER_UNIT = {
    "deg": 3600.0,
    "degree": 3600.0,
    "degrees": 3600.0,
    "arcmin": 60.0,
    "arcsec": 1.0,
    "mas": 1e-3,
    "rad": 180.0 / math.pi * 3600.0,
}

# Relative difference between the x and y pixel scales above which the pixels are not square.
_SQUARE_RTOL = 1e-6

# Keywords that write_image sets itself, or that describe the data layout: a caller's header
# may not set them, since either the data or the caller's value would be lost.
_STRUCTURAL = {"SIMPLE", "BITPIX", "NAXIS", "NAXIS1", "NAXIS2", "EXTEND", "BSCALE", "BZERO"}
_SCALE_KEYS = {"PIXSCALE", "CDELT1", "CDELT2", "CUNIT1", "CUNIT2"}
_SCALE_KEYS |= {f"CD{i}_{j}" for i in (1, 2) for j in (1, 2)}
_SCALE_KEYS |= {f"PC{i}_{j}" for i in (1, 2) for j in (1, 2)}


def read_image(path: str | os.PathLike[str], hdu: int | str = 0) -> tuple[np.ndarray, float | None]:
    """Read a 2-D image and its pixel scale from a FITS file.

    Parameters
    ----------
    path : str or path-like
        The FITS file.
    hdu : int or str, default 0
        Index of the HDU (0 is the primary HDU) or its ``EXTNAME`` (case-insensitive).

    Returns
    -------
    data : ndarray of float64, shape (ny, nx)
        The image, in native byte order, as stored (no flip; see the module docstring), with
        ``BSCALE``/``BZERO`` applied. Non-finite values (NaN, inf) are returned as they are:
        they usually mark bad pixels, which a mask should exclude.
    pixel_scale : float or None
        Pixel side in arcsec, or None if the header gives no scale. Looked for, in order:

        1. ``PIXSCALE``, in arcsec;
        2. a ``CDi_j`` matrix (missing elements are 0), if the header has no ``PCi_j``: the
           scale of axis j is ``hypot(CD1_j, CD2_j)``, so a rotated matrix gives the pixel
           side. As in the FITS WCS standard (and wcslib), ``CDELTi`` is then ignored;
        3. ``CDELT1`` and ``CDELT2``, times the column lengths of ``PCi_j`` if present.

        CD and CDELT values are in ``CUNITi`` (deg when absent; deg, arcmin, arcsec, mas and
        rad are understood) and are converted to arcsec; signs are dropped.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the HDU does not exist or holds no 2-D data; if the pixel scales of x and y differ
        by more than 1e-6 relative (the pixels are not square); if a scale keyword is not a
        positive finite number, a CUNIT is not an angle, or only one of CDELT1/CDELT2 is given.
    """
    from astropy.io import fits

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"FITS file not found: {path!r}")
    # memmap=False: read everything now, so no array keeps the file open after return.
    with fits.open(path, memmap=False) as hdul:
        try:
            selected = hdul[hdu]
        except (IndexError, KeyError):
            available = ", ".join(
                f"{i} ({h.name!r}, shape {getattr(h, 'shape', None)})" for i, h in enumerate(hdul)
            )
            raise ValueError(f"{path!r} has no HDU {hdu!r}; it has HDUs {available}") from None
        data = selected.data
        shape = None if data is None else data.shape
        if shape is None or len(shape) != 2:
            hint = " (for multi-extension files, try hdu=1 or the EXTNAME)" if shape is None else ""
            raise ValueError(
                f"HDU {hdu!r} of {path!r} holds no 2-D image: its data shape is {shape}{hint}"
            )
        # np.array copies into native-endian float64 (FITS is big-endian).
        image = np.array(data, dtype=np.float64)
        scale = _pixel_scale(selected.header, f"HDU {hdu!r} of {path!r}")
    return image, scale


def write_image(
    path: str | os.PathLike[str],
    array: np.ndarray,
    pixel_scale: float | None = None,
    overwrite: bool = False,
    header: Mapping[str, Any] | None = None,
) -> None:
    """Write a 2-D image to a FITS file, as a float64 primary HDU.

    Parameters
    ----------
    path : str or path-like
        The file to create.
    array : array_like, shape (ny, nx)
        The image, written as is (no flip; see the module docstring) as float64, so that
        :func:`read_image` returns it bit for bit. Non-finite values are written as they are.
    pixel_scale : float, optional
        Pixel side in arcsec. When given, the header gets ``PIXSCALE`` (arcsec) and
        ``CDELT1 = CDELT2 = pixel_scale / 3600`` with ``CUNIT1 = CUNIT2 = 'deg'``. No
        ``CTYPE``/``CRVAL`` is written: this records the scale, not a sky position. Header
        values are stored as text with up to 16 significant digits, so a scale that needs 17
        comes back within ~1e-16 relative (0.05 comes back exactly).
    overwrite : bool, default False
        Replace ``path`` if it exists. Otherwise an existing file is an error.
    header : mapping, optional
        Extra keywords, ``{key: value}`` or ``{key: (value, comment)}``. Keys that describe
        the data layout (``BITPIX``, ``NAXIS*``, ``BSCALE``, ...) are refused, and so are the
        scale keywords (``PIXSCALE``, ``CDELT*``, ``CUNIT*``, ``CD*_*``, ``PC*_*``) when
        ``pixel_scale`` is given.

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    ValueError
        If ``array`` is not 2-D, ``pixel_scale`` is not a positive finite number, or
        ``header`` sets a refused keyword.
    """
    from astropy.io import fits

    path = os.fspath(path)
    data = np.asarray(array, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"array must be 2-D, shape (ny, nx); got shape {data.shape}")
    if pixel_scale is not None:
        pixel_scale = _positive_finite("pixel_scale", pixel_scale, "arcsec")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path!r} exists; pass overwrite=True to replace it")

    hdr = fits.Header()
    for key, value in (header or {}).items():
        upper = key.upper()
        if upper in _STRUCTURAL or upper.startswith("NAXIS"):
            raise ValueError(f"header may not set {key!r}: it describes the data layout")
        if pixel_scale is not None and upper in _SCALE_KEYS:
            raise ValueError(
                f"header sets {key!r} and pixel_scale is given; set the scale one way only"
            )
        hdr[key] = value
    if pixel_scale is not None:
        hdr["PIXSCALE"] = (pixel_scale, "[arcsec] pixel side")
        for axis in (1, 2):
            hdr[f"CDELT{axis}"] = (pixel_scale / 3600.0, "[deg] pixel side")
            hdr[f"CUNIT{axis}"] = "deg"
    fits.PrimaryHDU(data=data, header=hdr).writeto(path, overwrite=overwrite)


def _positive_finite(name: str, value: Any, unit: str) -> float:
    message = f"{name} must be a positive finite number ({unit}); got {shown(value)}"
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if not (math.isfinite(number) and number > 0):
        raise ValueError(message)
    return number


def _arcsec_per_unit(header: Any, axis: int, where: str) -> float:
    unit = str(header.get(f"CUNIT{axis}", "deg")).strip()
    try:
        return _ARCSEC_PER_UNIT[unit.lower()]
    except KeyError:
        raise ValueError(
            f"CUNIT{axis} = {unit!r} in {where} is not an angle unit "
            f"(expected one of {sorted(_ARCSEC_PER_UNIT)})"
        ) from None


def _number(header: Any, key: str, where: str, default: float | None = None) -> float:
    value = header.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} = {value!r} in {where} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{key} = {value!r} in {where} is not finite")
    return number


def _pixel_scale(header: Any, where: str) -> float | None:
    """Pixel side in arcsec from a FITS header, or None; see :func:`read_image`."""
    if "PIXSCALE" in header:
        return _positive_finite(f"PIXSCALE in {where}", header["PIXSCALE"], "arcsec")

    cd_keys = [f"CD{i}_{j}" for i in (1, 2) for j in (1, 2)]
    pc_keys = [f"PC{i}_{j}" for i in (1, 2) for j in (1, 2)]
    has_cd = any(k in header for k in cd_keys)
    has_pc = any(k in header for k in pc_keys)
    has_cdelt = "CDELT1" in header or "CDELT2" in header

    if has_cd and not has_pc:
        # Matrix elements default to 0 once any CD keyword is present (FITS WCS paper I).
        cd = {k: _number(header, k, where, 0.0) for k in cd_keys}
        scales = [
            math.hypot(cd[f"CD1_{j}"], cd[f"CD2_{j}"]) * _arcsec_per_unit(header, j, where)
            for j in (1, 2)
        ]
        source = "CD matrix"
    elif has_cdelt:
        missing = [k for k in ("CDELT1", "CDELT2") if k not in header]
        if missing:
            raise ValueError(f"{where} gives one of CDELT1/CDELT2 but not {missing[0]}")
        # PC defaults to the identity; its column j stretches axis j.
        pc = {
            f"PC{i}_{j}": _number(header, f"PC{i}_{j}", where, 1.0 if i == j else 0.0)
            for i in (1, 2)
            for j in (1, 2)
        }
        scales = [
            abs(_number(header, f"CDELT{j}", where))
            * math.hypot(pc[f"PC1_{j}"], pc[f"PC2_{j}"])
            * _arcsec_per_unit(header, j, where)
            for j in (1, 2)
        ]
        source = "CDELT1/CDELT2"
    else:
        return None

    sx, sy = scales
    if not (sx > 0 and sy > 0):
        raise ValueError(f"{source} in {where} gives a zero pixel scale: x {sx}, y {sy} arcsec")
    if abs(sx - sy) > _SQUARE_RTOL * max(sx, sy):
        raise ValueError(
            f"{source} in {where} gives non-square pixels: x scale {sx:.10g} arcsec, "
            f"y scale {sy:.10g} arcsec (differ by more than {_SQUARE_RTOL:g} relative)"
        )
    return 0.5 * (sx + sy)

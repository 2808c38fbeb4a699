"""The FITS files written next to a COOLEST JSON file: the observation (data, noise map,
PSF, mask) and a pixelised source's reconstruction; and that source's regularisation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinlens.coolest.profiles import _copy, _Export, _grid_type

# without a dataset: COOLEST requires a positive pixel size even when there are no pixels
_PLACEHOLDER_PIXEL_SIZE = 1.0


def _observation(lazy: Any, dataset: Any, out: Path) -> tuple[Any, Any, Any, dict[str, Any]]:
    """``(observation, instrument, likelihoods, metadata)``, writing FITS files by ``out``."""
    if dataset is None:
        note = (
            "no dataset was given: the observation has no pixels, and the instrument's "
            f"pixel_size ({_PLACEHOLDER_PIXEL_SIZE}) is a placeholder"
        )
        instrument = lazy.Instrument(pixel_size=_PLACEHOLDER_PIXEL_SIZE)
        return lazy.Observation(), instrument, None, {"observation": note}
    from twinlens.imaging import fits_io
    from twinlens.imaging.dataset import Imaging

    if not isinstance(dataset, Imaging):
        raise TypeError(f"dataset must be an Imaging, got {type(dataset).__name__}")
    grid = dataset.grid
    scale = float(grid.pixel_scale)
    files: dict[str, str] = {}

    def pixels(name: str, array: np.ndarray, centre: tuple[float, float]) -> Any:
        file = f"{out.stem}_{name}.fits"
        fits_io.write_image(out.parent / file, array, scale, overwrite=True)
        files[name] = file
        ny, nx = array.shape
        return lazy.PixelatedRegularGrid(
            file,
            field_of_view_x=(centre[0] - nx * scale / 2.0, centre[0] + nx * scale / 2.0),
            field_of_view_y=(centre[1] - ny * scale / 2.0, centre[1] + ny * scale / 2.0),
            num_pix_x=nx,
            num_pix_y=ny,
            check_fits_file=False,
        )

    origin = (float(grid.origin[0]), float(grid.origin[1]))
    observation = lazy.Observation(
        pixels=pixels("data", dataset.data, origin),
        noise=lazy.NoiseMap(noise_map=pixels("noise_map", dataset.noise_map, origin)),
    )
    psf = lazy.PixelatedPSF(
        pixels=pixels("psf", dataset.psf.kernel, (0.0, 0.0)),
        description="twinlens PSF kernel at the data's pixel scale, normalised to unit sum",
    )
    likelihoods = None
    if grid.mask is not None:
        mask = pixels("mask", np.asarray(grid.mask, dtype=float), origin)
        likelihoods = lazy.DataLikelihoodList(lazy.ImagingDataLikelihood(mask=mask))
    instrument = lazy.Instrument(pixel_size=scale, psf=psf)
    meta = {"fits_files": files, "sub_size": _sub_size_note(grid.sub_size)}
    return observation, instrument, likelihoods, meta


def _sub_size_note(sub_size: Any) -> Any:
    if isinstance(sub_size, np.ndarray):
        return "adaptive (per pixel)"
    return int(sub_size)


def _fill_grid(profile: Any, export: _Export, reconstruction: Any, out: Path) -> str:
    """Write a pixelised source's values as a FITS file by ``out`` and point ``profile``'s
    ``pixels`` at it; returns the file's name."""
    reconstruction = getattr(reconstruction, "inversion", reconstruction)  # a FitImaging's
    vertices = np.asarray(reconstruction.source_vertices, dtype=float)
    values = np.asarray(reconstruction.reconstruction, dtype=float)
    mesh = reconstruction.pixelization.mesh
    if _grid_type(reconstruction.pixelization) != export.ctype or len(values) != len(vertices):
        raise ValueError(
            f"reconstruction is of a {type(mesh).__name__} mesh with {len(vertices)} vertices, "
            f"not of {export.path} ({type(export.profile.mesh).__name__})"
        )
    file = f"{out.stem}_{export.path.replace('[', '_').replace('].', '_')}.fits"
    pixels = profile.parameters["pixels"]
    if export.ctype == "PixelatedRegularGrid":
        from twinlens.imaging import fits_io

        ny, nx = mesh.shape
        xs, ys = vertices[:, 0].reshape(ny, nx)[0], vertices[:, 1].reshape(ny, nx)[:, 0]
        dx, dy = (xs[-1] - xs[0]) / (nx - 1), (ys[-1] - ys[0]) / (ny - 1)
        fits_io.write_image(out.parent / file, values.reshape(ny, nx), None, overwrite=True)
        pixels.set_grid(
            file,
            field_of_view_x=(float(xs[0] - dx / 2), float(xs[-1] + dx / 2)),
            field_of_view_y=(float(ys[0] - dy / 2), float(ys[-1] + dy / 2)),
            num_pix_x=nx,
            num_pix_y=ny,
            check_fits_file=False,
        )
    else:
        from astropy.io import fits

        xyz = zip("xyz", (*vertices.T, values), strict=True)
        columns = [fits.Column(name, "D", array=a) for name, a in xyz]
        fits.BinTableHDU.from_columns(columns).writeto(out.parent / file, overwrite=True)
        pixels.set_grid(
            file,
            field_of_view_x=(float(vertices[:, 0].min()), float(vertices[:, 0].max())),
            field_of_view_y=(float(vertices[:, 1].min()), float(vertices[:, 1].max())),
            num_pix=len(values),
            check_fits_file=False,
        )
    return file


#: our regularisation schemes as COOLEST's regularization types: the same prior on the
#: source's pixels. COOLEST has no brightness-adaptive scheme: AdaptiveBrightness is
#: "DefaultForPixelated" (the modelling code's own), named in the metadata.
_REGULARIZATION_TYPES = {"Constant": "PixelGradient", "Curvature": "PixelCurvature"}
_OWN = "DefaultForPixelated"

#: what lambda means in every scheme, for the metadata (COOLEST does not fix a convention)
_LAMBDA = "the source's prior is exp(-lambda s^T H s / 2); H: "
_H = {
    "Constant": "sum over neighbour pairs of (s_i - s_j)^2",
    "Curvature": "sum over three consecutive pixels of a row or column of (s_l - 2 s_m + s_r)^2",
    "AdaptiveBrightness": "sum over neighbour pairs of (w_i + w_j) / 2 (s_i - s_j)^2, w "
    "per-pixel weights from a previous reconstruction (not written)",
}


def _regularization(
    c: Any, profile: Any, export: _Export, index: int
) -> tuple[Any, _Export, dict[str, Any]]:
    """COOLEST's regularization of the pixelised source ``export`` (written as ``profile``),
    the export of its ``lambda`` (our coefficient) for the caller to fill as a profile's
    parameter, and its metadata entry.

    COOLEST's API defines the regularization types and their ``lambda`` hyper-parameter but
    (0.1.11) neither their list's ids nor the document's field: the id follows its profiles'
    pattern, ``"{index}-regularization-{type}"``, and its parameter's ``"{id}-lambda"``."""
    scheme = export.profile.regularization
    name = type(scheme).__name__
    ctype = _REGULARIZATION_TYPES.get(name, _OWN)
    regularization = getattr(c.regularizations, ctype)(applied_to_profile_id=profile.id)
    regularization.id = f"{index}-regularization-{ctype}"
    regularization.parameters["lambda"].id = f"{regularization.id}-lambda"
    path = f"{export.path}.regularization"
    params = (_copy("lambda", f"{path}.coefficient"),)
    own = _Export(path, scheme, ctype, export.model, False, params)
    meta = {
        "path": path,
        "type": name,
        "lambda": _LAMBDA + _H.get(name, f"the {name} scheme's"),
        "positive": bool(export.profile.positive),
    }
    return regularization, own, meta

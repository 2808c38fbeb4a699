"""A pixelised source inside a :class:`~twinlens.lensing.tracer.Tracer`: what
:class:`~twinlens.likelihood.imaging.FitImaging`,
:class:`~twinlens.likelihood.ImagingLikelihood`, the fit configuration and the plots use.

A source galaxy holds a :class:`~twinlens.inversion.Pixelization` in its ``pixelization``
field (``Galaxy(light=Pixelization(...))`` is moved there). A tracer with one is scored by the
Bayesian log-evidence of the inversion (:func:`~twinlens.inversion.log_evidence`), which
is then the likelihood a search maximises; the regularisation coefficient is a parameter
(``sources[i].pixelization.regularization.coefficient``) like any other.

What may stand beside the pixelised source:

* lens mass, any;
* lens light of **fixed** parameters (parametric profiles, intensities given): its blurred
  image is subtracted from the data once, before the inversion;
* lens light with **linear** profiles (intensities solved): the lens light is then evaluated
  at every call and its linear profiles' intensities are solved jointly with the source
  pixels (:mod:`~twinlens.inversion.solve`), so its other parameters may be free too.
  Free lens-light parameters without a linear profile are refused (that light is subtracted
  once): make one of its profiles linear;
* nothing else in the source plane: one pixelised source galaxy, with no light profiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.backend.concrete import is_batched, is_tracer
from twinlens.imaging.dataset import Imaging
from twinlens.inversion.meshes import Delaunay, Rectangular
from twinlens.inversion.pixelization import FitPixelised, Pixelization
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.messages import shown
from twinlens.profiles.base import _numbers

__all__ = [
    "PixelisedParts",
    "PixelisedSourceFit",
    "pixelised_parts",
    "reconstruction_errors",
    "source_on_grid",
    "subtract_lens_light",
]


@dataclass(frozen=True)
class PixelisedParts:
    """A tracer with a pixelised source, split into what the inversion needs.

    Attributes
    ----------
    mass : Tracer
        The lens galaxies' mass only.
    lens_light : Tracer or None
        The lens galaxies' light only, None when there is none: of fixed parameters
        (subtracted from the data once), or with linear profiles (solved with the source, see
        :func:`joint_lens_light`).
    pixelization : Pixelization
    path : str
        Where the pixelization sits, e.g. ``"sources[0].pixelization"``.
    """

    mass: Tracer
    lens_light: Tracer | None
    pixelization: Pixelization
    path: str


def has_pixelization(tracer: Any) -> bool:
    """Whether ``tracer`` (a :class:`~twinlens.lensing.tracer.Tracer`) holds a pixelised source."""
    return isinstance(tracer, Tracer) and bool(tracer.pixelizations)


def pixelised_parts(tracer: Tracer) -> PixelisedParts | None:
    """Split ``tracer`` for a pixelised fit, or None when it has no pixelization.

    Raises ValueError, naming the galaxy or profile, for what cannot go with a pixelised
    source (see the module documentation)."""
    if not has_pixelization(tracer):
        return None
    for i, g in enumerate(tracer.lenses):
        if g.pixelization is not None:
            raise ValueError(
                f"lenses[{i}].pixelization: a pixelization reconstructs a source's light; put it "
                "in a source galaxy"
            )
    owners = [i for i, g in enumerate(tracer.sources) if g.pixelization is not None]
    if len(owners) > 1:
        raise ValueError(
            f"sources[{owners[1]}].pixelization: one pixelised source per fit "
            f"(sources[{owners[0]}] has one already)"
        )
    owner = owners[0]
    for i, g in enumerate(tracer.sources):
        if g.light:
            where = "in the same galaxy as" if i == owner else "beside"
            raise ValueError(
                f"sources[{i}].light: light profiles {where} a pixelised source are not "
                "supported (the pixelization reconstructs all of the source plane's light)"
            )
    mass = Tracer(tuple(Galaxy(mass=g.mass) for g in tracer.lenses if g.mass))
    lights = tuple(Galaxy(light=g.light) for g in tracer.lenses if g.light)
    pixelization = tracer.sources[owner].pixelization
    return PixelisedParts(
        mass, Tracer(lights) if lights else None, pixelization, f"sources[{owner}].pixelization"
    )


def joint_lens_light(parts: PixelisedParts) -> bool:
    """Whether the lens light is solved jointly with the source (it has a linear profile)
    rather than subtracted from the data once."""
    return parts.lens_light is not None and parts.lens_light.n_linear > 0


def free_lens_light(paths: Any, parts: PixelisedParts | None = None) -> list[str]:
    """The parameter paths among ``paths`` that name lens light, refused beside a pixelised
    source when that light is subtracted from the data once (``parts`` given and its lens light
    solved jointly: none are refused)."""
    if parts is not None and joint_lens_light(parts):
        return []
    return [p for p in paths if p.startswith("lenses[") and ".light[" in p]


@lru_cache(maxsize=8)
def subtract_lens_light(dataset: Imaging, lens_light: Tracer) -> Imaging:
    """``dataset`` with the blurred image of ``lens_light`` (a tracer of lens light of fixed
    parameters) subtracted from its data inside the mask."""
    if any(is_tracer(v) or is_batched(v) for v in _numbers(lens_light)):
        raise ValueError(
            "lens light beside a pixelised source must have fixed (concrete) parameters; it is "
            "subtracted from the data before the inversion"
        )
    image = lens_light_image(dataset, lens_light)
    data = np.array(dataset.data, dtype=float)
    used = dataset.grid.used
    data[used] = data[used] - image[used]
    return Imaging(data, dataset.noise_map, dataset.psf, dataset.grid)


def lens_light_image(dataset: Imaging, lens_light: Tracer | None) -> np.ndarray:
    """The blurred lens light ``(ny, nx)`` inside the mask, 0 outside (and 0 without lens
    light)."""
    from twinlens.lensing.blurred import blurred_terms

    out = np.zeros(dataset.grid.n_pixels)
    if lens_light is not None:
        out[dataset.mask_index] = np.asarray(blurred_terms(lens_light, dataset, "numpy"))[0]
    return out.reshape(dataset.grid.shape)


class PixelisedSourceFit:
    """A tracer with a pixelised source fitted to imaging (what :class:`FitImaging` delegates
    to).

    Parameters
    ----------
    dataset : Imaging
    tracer : Tracer
        Lens mass, optionally lens light (of fixed parameters, or with linear profiles solved
        with the source), and one pixelised source.
    backend : str
    """

    def __init__(self, dataset: Imaging, tracer: Tracer, backend: str) -> None:
        parts = pixelised_parts(tracer)
        if parts is None:
            raise ValueError("the tracer has no pixelised source")
        self.parts = parts
        self.dataset = dataset
        self.joint = joint_lens_light(parts)
        if self.joint:  # evaluated with each call, linear intensities solved with the source
            self.source_dataset = dataset
            self.inversion = FitPixelised(
                dataset, parts.mass, parts.pixelization, backend, lens_light=parts.lens_light
            )
            return
        self.source_dataset = (
            dataset if parts.lens_light is None else subtract_lens_light(dataset, parts.lens_light)
        )
        self.inversion = FitPixelised(self.source_dataset, parts.mass, parts.pixelization, backend)

    @property
    def log_evidence(self) -> Any:
        """The log-evidence of the inversion (see :func:`~twinlens.inversion.log_evidence`)."""
        return self.inversion.log_evidence

    @property
    def chi_squared(self) -> Any:
        """``chi^2`` of the source model (and the subtracted lens light) over the mask."""
        return self.inversion.chi_squared

    @property
    def intensities(self) -> Any:
        """The lens light's linear intensities solved with the source, in
        :attr:`Tracer.linear_profiles <twinlens.lensing.tracer.Tracer.linear_profiles>` order
        (empty without linear lens light)."""
        return self.inversion.intensities

    @property
    def source_data(self) -> np.ndarray:
        """The data less the (fitted) lens light, ``(ny, nx)``: what the source explains."""
        lens_light = self.parts.lens_light
        if not self.joint or lens_light is None:
            return np.asarray(self.source_dataset.data)
        solved = lens_light.with_intensities(np.asarray(self.intensities))
        return np.asarray(self.dataset.data) - lens_light_image(self.dataset, solved)

    @property
    def model_image(self) -> np.ndarray:
        """The blurred model ``(ny, nx)``: lens light plus lensed source; NaN outside the mask."""
        if self.joint:  # the inversion modelled the lens light itself
            return self.inversion.model_image
        return self.inversion.model_image + lens_light_image(self.dataset, self.parts.lens_light)


def _host_matrices(fit: FitPixelised) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """``(mesh, B, F + R', D)`` of an evaluated fit, rebuilt in numpy from its traced points:
    the whole system that the fit solved. ``B (n_mask, n_source + n_linear)`` holds the
    source's blurred columns, then those of the fit's linear lens light (unit intensity);
    ``R' = diag(R, 0)``; ``D = B^T C^-1 (d - l)``, ``l`` the blurred image of the lens
    light's parametric (fixed-intensity) profiles, 0 without lens light."""
    from twinlens.inversion.mapping import (
        MaskedLayout,
        blurred_mapping_matrix,
        mapping_matrix,
    )
    from twinlens.inversion.pixelization import _lens_light_terms

    points = np.asarray(fit.source_plane_points)
    vertices = np.asarray(fit.source_vertices)
    mesh_type = fit.pixelization.mesh
    masked = MaskedLayout(fit.dataset)
    mesh = mesh_type.mapping(
        points, vertices if isinstance(mesh_type, Delaunay) else None, np, masked.sub_weight
    )
    n_mask = masked.data.size
    m = mapping_matrix(
        mesh.indices, mesh.weights, masked.sub_pixel, masked.sub_weight, n_mask, mesh.n_pixels
    )
    blurred = blurred_mapping_matrix(m, fit.dataset, np)
    data = masked.data
    light = _lens_light_terms(fit.lens_light, fit.dataset, "numpy")
    if light is not None:
        light = np.asarray(light)
        data = data - light[0]
        blurred = np.concatenate([blurred, light[1:].T], axis=1)
    n_linear = blurred.shape[1] - mesh.n_pixels
    bw = blurred / masked.noise[:, None]
    reg = fit.pixelization.regularization.matrix(mesh, np)
    system = bw.T @ bw + np.pad(reg, ((0, n_linear), (0, n_linear)))
    return mesh, blurred, system, bw.T @ (data / masked.noise)


def reconstruction_errors(fit: FitPixelised) -> np.ndarray:
    """The source pixels' standard errors, ``(n_source,)``: the square root of the diagonal of
    the source block of ``(F + R')^-1``, the width of the posterior of each pixel's value
    given the lens model and ``lambda``. With linear lens light solved jointly, that block is
    marginal over the intensities (``A_ss^-1 + A_ss^-1 A_sa S^+ A_as A_ss^-1``, ``S`` the
    Schur complement of the source block and ``S^+`` its pseudo-inverse, eigenvalues below
    1e-10 of the largest dropped, so combinations of intensities that the data cannot tell
    apart add nothing); without, it is
    ``diag((F + R)^-1)``. Both are the Gaussian (unconstrained) widths: where positivity or
    the intensities' bound is active, the constrained posterior is narrower on that side.
    NaN where the fit failed."""
    from scipy.linalg import cho_factor, cho_solve

    n_source = np.asarray(fit.reconstruction).shape[0]
    if not math.isfinite(float(fit.log_evidence)):
        return np.full(n_source, np.nan)
    _, _, system, _ = _host_matrices(fit)
    factor = cho_factor(system[:n_source, :n_source], lower=True)
    inverse = cho_solve(factor, np.eye(n_source))
    if system.shape[0] > n_source:
        cross = system[:n_source, n_source:]
        solved = cho_solve(factor, cross)  # A_ss^-1 A_sa
        schur = system[n_source:, n_source:] - cross.T @ solved
        pinv = np.linalg.pinv(0.5 * (schur + schur.T), rcond=1e-10, hermitian=True)
        inverse = inverse + solved @ pinv @ solved.T
    return np.sqrt(np.clip(np.diag(inverse), 0.0, None))


def source_on_grid(
    fit: FitPixelised, n: int = 100, values: Any = None
) -> tuple[np.ndarray, float, tuple[float, float]]:
    """The reconstructed source interpolated on a regular ``n x n`` grid over its mesh, as the
    mesh interpolates it (bilinear on a rectangular lattice, barycentric on a Delaunay
    triangulation); NaN outside the mesh.

    Parameters
    ----------
    fit : FitPixelised
    n : int
        Pixels per side.
    values : float array (n_source,), optional
        Per-source-pixel values to interpolate instead (e.g. :func:`reconstruction_errors`).

    Returns
    -------
    image : float array (n, n)
        Row 0 at the bottom (smallest y), as the data.
    pixel_scale : float
        arcsec.
    centre : (float, float)
        The grid's centre ``(x, y)``, arcsec.
    """
    if not (isinstance(n, int) and n >= 2):
        raise ValueError(f"source_on_grid: n must be an integer >= 2, got {shown(n)}")
    vertices = np.asarray(fit.source_vertices, dtype=float)
    s = np.asarray(fit.reconstruction if values is None else values, dtype=float)
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    centre = 0.5 * (lo + hi)
    width = float(np.max(hi - lo))
    scale = width / n
    axis = (np.arange(n) - (n - 1) / 2) * scale
    xs, ys = np.meshgrid(centre[0] + axis, centre[1] + axis)
    mesh = fit.pixelization.mesh
    if isinstance(mesh, Rectangular):
        from twinlens.inversion.interpolation import lattice_weights

        # the lattice's own columns and rows (uniform, or at quantiles for an adaptive mesh)
        nx = mesh.shape[1]
        gx, gy = vertices[:nx, 0], vertices[::nx, 1]
        points = np.stack([xs.ravel(), ys.ravel()], axis=-1)
        indices, weights = lattice_weights(points, gx, gy, np)
        image = np.sum(s[indices] * weights, axis=-1)
        outside = (
            (points[:, 0] < gx[0])
            | (points[:, 0] > gx[-1])
            | (points[:, 1] < gy[0])
            | (points[:, 1] > gy[-1])
        )
        image = np.where(outside, np.nan, image).reshape(xs.shape)
    else:
        from scipy.interpolate import LinearNDInterpolator

        image = LinearNDInterpolator(vertices, s, fill_value=np.nan)(xs, ys)
    return np.asarray(image, dtype=float), scale, (float(centre[0]), float(centre[1]))

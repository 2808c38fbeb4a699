"""The imaging log-likelihood of a tracer, on every backend.

``log L = -(chi^2 + sum log(2 pi sigma^2)) / 2`` over the masked-in pixels, with
``chi^2 = sum ((data - model) / sigma)^2``. The model is the tracer's light on the grid's
sub-pixels, averaged to pixels, convolved with the PSF (light from the blurring pixels just
outside the mask included) and read at the masked-in pixels. Linear light profiles enter as
one blurred image each; their intensities are the non-negative least-squares solution
(:mod:`twinlens.inversion.nnls`).

A tracer with a pixelised source (:mod:`twinlens.inversion.source`) is scored instead by
the Bayesian log-evidence of the source inversion, which :class:`FitImaging` then reports as
its ``log_likelihood``.

Every array here may carry leading batch axes: a tracer whose free parameters are
:class:`~twinlens.backend.concrete.Batched` columns gives one log-likelihood per batch member,
each stage running over the whole batch at once (see :mod:`twinlens.likelihood`).
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.backend import array_module, resolve_backend
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.point_images import PointImages, check_point_images
from twinlens.inversion.nnls import counting, nnls_gram, note_unconverged
from twinlens.inversion.source import PixelisedSourceFit, has_pixelization
from twinlens.lensing.blurred import blurred_terms
from twinlens.lensing.tracer import Tracer
from twinlens.profiles.base import _numbers

__all__ = ["FitImaging", "log_likelihood"]


def solve_and_score(terms: Any, dataset: Imaging, backend: str) -> tuple[Any, Any, Any]:
    """``(log_likelihood, chi_squared, intensities)`` from :func:`blurred_terms`' output."""
    xp = array_module(backend)
    data = dataset.data.reshape(-1)[dataset.mask_index]
    weight = 1.0 / dataset.noise_map.reshape(-1)[dataset.mask_index]
    residual = (data - terms[..., 0, :]) * weight
    if terms.shape[-2] > 1:
        columns = terms[..., 1:, :] * weight
        gram = columns @ xp.swapaxes(columns, -1, -2)
        rhs = (columns @ residual[..., :, None])[..., 0]
        intensities = nnls_gram(gram, rhs, backend)
        residual = residual - (intensities[..., None, :] @ columns)[..., 0, :]
    else:
        intensities = xp.zeros((*residual.shape[:-1], 0))
    chi2 = xp.sum(residual * residual, axis=-1)
    return -0.5 * (chi2 + dataset.noise_normalization), chi2, intensities


def _evaluate(
    tracer: Tracer, dataset: Imaging, backend: str, point_images: PointImages | None = None
) -> tuple[Any, Any, Any]:
    return solve_and_score(blurred_terms(tracer, dataset, backend, point_images), dataset, backend)


@cache
def _jitted():
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    # the dataset is static (hashes by value: one compile per distinct dataset), the tracer a
    # pytree (its numbers are arguments, so a new parameter value reuses the program); the
    # memo's switch is static too, since it decides what the program computes
    # the count of solves that ran out of steps is returned (see nnls.counting); point images
    # are static (fixed positions: their columns are constants of the program)
    return jax.jit(
        counting(
            lambda dataset, tracer, memo_on, points: _evaluate(tracer, dataset, "jax", points)
        ),
        static_argnums=(0, 2, 3),
    )


def log_likelihood(
    tracer: Tracer,
    dataset: Imaging,
    backend: str | None = None,
    point_images: PointImages | None = None,
) -> Any:
    """The log-likelihood of ``dataset`` given ``tracer`` (linear intensities solved), with
    ``point_images`` (their fluxes solved too) when given."""
    return FitImaging(dataset, tracer, backend, point_images).log_likelihood


class FitImaging:
    """A tracer fitted to an imaging dataset: the log-likelihood and the maps behind it.

    Parameters
    ----------
    dataset : Imaging
    tracer : Tracer
    backend : str, optional
        ``numba``, ``jax`` or ``numpy`` (default: the process default; JAX for JAX inputs).
    point_images : PointImages, optional
        Unresolved images (a lensed quasar's) at fixed positions, whose fluxes are solved with
        the linear light (:mod:`twinlens.imaging.point_images`).
    """

    def __init__(
        self,
        dataset: Imaging,
        tracer: Tracer,
        backend: str | None = None,
        point_images: PointImages | None = None,
    ) -> None:
        self.dataset = dataset
        self.tracer = tracer
        self.backend = resolve_backend(backend, *_numbers(tracer))
        self.point_images = check_point_images(point_images, tracer, dataset)
        self.pixelised: PixelisedSourceFit | None = None
        if has_pixelization(tracer):
            self.pixelised = PixelisedSourceFit(dataset, tracer, self.backend)

    @cached_property
    def _result(self) -> tuple[Any, Any, Any]:
        if self.pixelised is not None:  # the evidence of the source inversion
            p = self.pixelised
            return p.log_evidence, p.chi_squared, p.intensities
        if self.backend == "jax":
            out, unconverged = _jitted()(
                self.dataset, self.tracer, memo.enabled(), self.point_images
            )
            note_unconverged(unconverged, "the problems of one fit")
            return out
        return _evaluate(self.tracer, self.dataset, self.backend, self.point_images)

    @property
    def log_likelihood(self) -> Any:
        """``-(chi^2 + noise normalisation) / 2``."""
        return self._result[0]

    @property
    def chi_squared(self) -> Any:
        """``sum ((data - model) / sigma)^2`` over the masked-in pixels."""
        return self._result[1]

    @property
    def intensities(self) -> Any:
        """Solved intensities of the linear light profiles, in
        :attr:`Tracer.linear_profiles` order (then the point images' fluxes, if any)."""
        return self._result[2]

    @property
    def point_image_fluxes(self) -> np.ndarray:
        """The solved flux of each point image (empty without ``point_images``)."""
        return np.asarray(self.intensities)[..., self.tracer.n_linear :]

    @cached_property
    def solved_tracer(self) -> Tracer:
        """The tracer with linear profiles replaced by parametric ones at the solved
        intensities."""
        if self.pixelised is not None and not np.size(self.intensities):
            return self.tracer
        return self.tracer.with_intensities(np.asarray(self.intensities)[: self.tracer.n_linear])

    @cached_property
    def model_image(self) -> np.ndarray:
        """The blurred model ``(ny, nx)`` at the solved intensities; NaN outside the mask."""
        if self.pixelised is not None:
            return self.pixelised.model_image
        terms = np.asarray(
            blurred_terms(self.tracer, self.dataset, self.backend, self.point_images)
        )
        model = terms[0] + np.asarray(self.intensities) @ terms[1:]
        out = np.full(self.dataset.grid.n_pixels, np.nan)
        out[self.dataset.mask_index] = model
        return out.reshape(self.dataset.grid.shape)

    @property
    def residual_map(self) -> np.ndarray:
        """``data - model``, NaN outside the mask."""
        return self.dataset.data - self.model_image

    @property
    def normalized_residual_map(self) -> np.ndarray:
        """``(data - model) / sigma``, NaN outside the mask."""
        return self.residual_map / self.dataset.noise_map

    def plot(self, path: str | None = None) -> Any:
        """Data, model, normalised residuals and source-plane-free summary in one figure
        (needs matplotlib). Saves to ``path`` when given; returns the figure."""
        import matplotlib

        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        grid = self.dataset.grid
        half = np.array(grid.shape[::-1]) * grid.pixel_scale / 2
        extent = (
            grid.origin[0] - half[0],
            grid.origin[0] + half[0],
            grid.origin[1] - half[1],
            grid.origin[1] + half[1],
        )
        fig, axes = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
        data = np.where(grid.used, self.dataset.data, np.nan)
        vmax = np.nanmax(data)
        panels = (
            ("data", data, "viridis", (np.nanmin(data), vmax)),
            ("model", self.model_image, "viridis", (np.nanmin(data), vmax)),
            ("normalised residuals", self.normalized_residual_map, "RdBu_r", (-4, 4)),
        )
        for ax, (title, image, cmap, (lo, hi)) in zip(axes, panels, strict=True):
            shown = ax.imshow(image, origin="lower", extent=extent, cmap=cmap, vmin=lo, vmax=hi)
            ax.set_title(title)
            ax.set_xlabel("x [arcsec]")
            fig.colorbar(shown, ax=ax, shrink=0.85)
        axes[0].set_ylabel("y [arcsec]")
        fig.suptitle(
            f"log L = {float(self.log_likelihood):.3f}   chi^2 = {float(self.chi_squared):.1f}"
        )
        if path is not None:
            fig.savefig(path, dpi=100)
        return fig

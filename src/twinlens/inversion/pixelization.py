"""A lens model fitted to imaging with a pixelised source: the log-evidence on every backend.

The pipeline of one evaluation, for lens mass profiles in a :class:`~twinlens.lensing.tracer.Tracer`
and a :class:`Pixelization` (mesh plus regularisation):

1. trace the masked-in sub-pixels (and, for a Delaunay mesh, the overlay vertices) to the
   source plane, ``beta = theta - alpha(theta)``;
2. relocate those beyond the border (:mod:`~twinlens.inversion.border`);
3. build the mesh and its interpolation weights (:mod:`~twinlens.inversion.meshes`);
4. the mapping matrix, binned and blurred (:mod:`~twinlens.inversion.mapping`);
5. solve and score (:mod:`~twinlens.inversion.solve`).

Backends: ``numpy`` is the reference; ``numba`` runs the relocation and the mapping and
blurring of the (sparse) mapping matrix as compiled loops, and the dense algebra with BLAS and
LAPACK; ``jax`` runs everything in one jit-compiled program (triangulation through a host
callback), differentiable with respect to the lens parameters and the regularisation
coefficient, and vmap-able over both.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from typing import Any, ClassVar

import numpy as np

from twinlens.backend import resolve_backend
from twinlens.fields import ValueIdentity, static_field
from twinlens.imaging.dataset import Imaging
from twinlens.inversion import loops, triangulation
from twinlens.inversion.border import NEIGHBOURS, relocate
from twinlens.inversion.conventions import (
    RELOCATIONS,
    border_pixel_centres,
    relocate_by_ellipse,
)
from twinlens.inversion.mapping import (
    MaskedLayout,
    blurred_columns,
    blurred_mapping_matrix,
    border_indices,
    mapping_matrix,
    sparse_blurred,
)
from twinlens.inversion.meshes import Delaunay, MeshMapping, Rectangular
from twinlens.inversion.nnls import counting, note_unconverged
from twinlens.inversion.regularization import EPSILON, Curvature, Regularization
from twinlens.inversion.solve import (
    InversionTerms,
    gram,
    one_blas_thread,
    solve,
    solve_normal,
)
from twinlens.lensing.tracer import Tracer
from twinlens.messages import shown
from twinlens.profiles.base import _numbers
from twinlens.profiles.checks import POSITIVE_RANGE

__all__ = ["FitPixelised", "Pixelization", "log_evidence"]

logger = logging.getLogger("twinlens.inversion")


@dataclass(frozen=True, eq=False)
class Pixelization(ValueIdentity):
    """A pixelised source: a mesh and the regularisation of its pixels.

    Parameters
    ----------
    mesh : Rectangular or Delaunay
    regularization : Regularization
        :class:`~twinlens.inversion.regularization.Constant`,
        :class:`~twinlens.inversion.regularization.Curvature` (rectangular meshes) or
        :class:`~twinlens.inversion.regularization.AdaptiveBrightness`; its
        ``coefficient`` is ``lambda``.
    positive : bool
        Constrain the source pixels (and any jointly solved intensities) to be >= 0, by
        non-negative least squares (:func:`~twinlens.inversion.solve.solve_normal`);
        default False (the unconstrained, linear solution).
    relocation : str
        How sub-pixels (and Delaunay vertices) traced beyond the mask's border are moved onto
        it (:mod:`~twinlens.inversion.border`): ``"smooth"`` (default), continuous in the
        lens parameters, or ``"nearest"``, autolens' rule, under which the evidence jumps
        where a relocated point's nearest border point changes; or ``"ellipse"``, onto an
        ellipse fitted to the traced border pixels (current autoarray's rule,
        :mod:`~twinlens.inversion.conventions`).
    """

    #: what a Galaxy recognises a pixelised source by (lensing does not import this room)
    is_pixelization: ClassVar[bool] = True

    mesh: Any
    regularization: Any
    positive: bool = static_field(default=False)
    relocation: str = static_field(default="smooth")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.positive, bool):
            raise ValueError(
                f"Pixelization.positive must be True or False, got {shown(self.positive)}"
            )
        if not isinstance(self.relocation, str) or self.relocation not in RELOCATIONS:
            raise ValueError(
                f"Pixelization.relocation must be one of {', '.join(map(repr, RELOCATIONS))}, "
                f"got {shown(self.relocation)}"
            )
        if not isinstance(self.mesh, (Rectangular, Delaunay)):
            raise TypeError(
                f"Pixelization.mesh must be a Rectangular or Delaunay mesh, got "
                f"{type(self.mesh).__name__}"
            )
        if not isinstance(self.regularization, Regularization):
            raise TypeError(
                "Pixelization.regularization must be a Constant, Curvature or "
                f"AdaptiveBrightness, got {type(self.regularization).__name__}"
            )
        if isinstance(self.mesh, Delaunay) and isinstance(self.regularization, Curvature):
            raise ValueError(
                "Pixelization: Curvature regularisation needs a Rectangular mesh (lattice lines)"
            )


@dataclass(frozen=True)
class _Problem:
    """What one dataset and mesh need, computed once (plain numpy)."""

    masked: MaskedLayout
    border: np.ndarray
    image_vertices: np.ndarray | None


@lru_cache(maxsize=16)
def _problem(dataset: Imaging, mesh: Any) -> _Problem:
    masked = MaskedLayout(dataset)
    border = border_indices(masked)
    vertices = mesh.image_plane_vertices(dataset.grid)
    if vertices is not None and vertices.shape[0] < 3:
        raise ValueError(
            f"Delaunay.shape={mesh.shape} places {vertices.shape[0]} vertices inside the mask; "
            "it needs at least 3 (use a larger shape)"
        )
    return _Problem(masked, border, vertices)


def _check_tracer(tracer: Tracer) -> None:
    if not isinstance(tracer, Tracer):
        raise TypeError(f"tracer must be a Tracer, got {type(tracer).__name__}")
    if any(g.light for g in (*tracer.lenses, *tracer.sources)):
        raise ValueError(
            "a pixelised fit takes a tracer of lens mass only: pass lens light as lens_light "
            "(a Tracer of light only), or fit through FitImaging with the whole tracer"
        )


def _check_lens_light(lens_light: Any) -> None:
    rule = (
        "lens_light must be a Tracer of lens galaxies with light profiles only (no mass, no "
        "pixelization, no source galaxies)"
    )
    if not isinstance(lens_light, Tracer):
        raise ValueError(f"{rule}; got a {type(lens_light).__name__}")
    if lens_light.sources:
        raise ValueError(f"{rule}; it has {len(lens_light.sources)} source galaxies")
    if lens_light.pixelizations:
        raise ValueError(f"{rule}; it has a pixelization")
    for i, g in enumerate(lens_light.lenses):
        if g.mass:
            raise ValueError(f"{rule}; lenses[{i}] has mass profiles")


def _traced(tracer: Tracer, x: Any, y: Any, backend: str, grid: Any, xp: Any) -> Any:
    ax, ay = tracer._deflections(x, y, backend, grid)
    return xp.stack([x - ax, y - ay], axis=-1)


def _structure(pixelization: Pixelization, mesh: MeshMapping, xp: Any) -> Any:
    return pixelization.regularization.structure(mesh, xp)


def _closed_log_det(pixelization: Pixelization, lam: Any, xp: Any) -> Any:
    """``ln det R`` from the eigenvalues of ``H`` where the regularisation knows them for the
    mesh (:meth:`Regularization.log_det`), else None (``R`` is factorised)."""
    return pixelization.regularization.log_det(pixelization.mesh, lam, xp)


def _coefficient_ok(lam: Any) -> Any:
    return (lam >= POSITIVE_RANGE[0]) & (lam <= POSITIVE_RANGE[1])


@dataclass(frozen=True)
class _Result:
    terms: InversionTerms
    model: Any  # blurred model at the masked-in pixels
    vertices: Any  # source-pixel positions
    points: Any  # relocated source-plane sub-pixels


def _failed(
    n_mask: int, n_source: int, n_linear: int, norm: float, vertices: Any, points: Any
) -> _Result:
    nan = math.nan
    terms = InversionTerms(
        np.full(n_source, nan), nan, nan, nan, nan, norm, -math.inf, np.full(n_linear, nan)
    )
    return _Result(terms, np.full(n_mask, nan), vertices, points)


def _lens_light_terms(lens_light: Tracer | None, dataset: Imaging, backend: str) -> Any:
    """The lens light's blurred images at the masked-in pixels, ``(1 + n_linear, n_mask)``:
    the parametric part, then each linear profile's unit-intensity image; None without."""
    if lens_light is None:
        return None
    from twinlens.lensing.blurred import blurred_terms

    return blurred_terms(lens_light, dataset, backend)


def _evaluate_host(
    tracer: Tracer,
    dataset: Imaging,
    pixelization: Pixelization,
    backend: str,
    lens_light: Tracer | None = None,
) -> _Result:
    """numpy and numba backends."""
    prob = _problem(dataset, pixelization.mesh)
    masked = prob.masked
    points, vertices = _relocated_host(tracer, prob, backend, pixelization.relocation)
    mesh = pixelization.mesh.mapping(points, vertices, np, masked.sub_weight)
    n_mask, n_source = masked.data.size, mesh.n_pixels
    light = _lens_light_terms(lens_light, dataset, backend)
    n_linear = 0 if light is None else light.shape[0] - 1
    norm = float(np.sum(np.log(2.0 * math.pi * masked.noise**2)))
    if mesh.status != triangulation.STATUS_OK:
        if isinstance(pixelization.mesh, Rectangular):
            logger.warning(
                "pixelised source: the traced sub-pixels span no area; log-evidence is -inf"
            )
        return _failed(n_mask, n_source, n_linear, norm, mesh.vertices, points)
    lam = pixelization.regularization.coefficient
    reg = lam * _structure(pixelization, mesh, np) + EPSILON * np.eye(n_source)
    positive = backend if pixelization.positive else None
    log_det_r = _closed_log_det(pixelization, lam, np)
    if backend == "numba":
        terms, model = _solve_sparse(mesh, masked, light, reg, positive, log_det_r)
    else:
        terms, model = _solve_dense(mesh, masked, dataset, light, reg, positive, log_det_r)
    # the lens light's parametric part is fixed: it was subtracted from the data
    fixed = 0.0 if light is None else light[0]
    return _Result(terms, model + fixed, mesh.vertices, points)


def _relocated_host(tracer: Tracer, prob: _Problem, backend: str, rule: str) -> tuple[Any, Any]:
    """The traced sub-pixels and (for a Delaunay mesh) overlay vertices, relocated from beyond
    the border by ``rule``: numba's compiled loop, or numpy."""
    layout = prob.masked.layout
    points = _traced(tracer, layout.xs, layout.ys, backend, layout, np)
    border = points[prob.border]
    vertices = None
    if prob.image_vertices is not None:
        vertices = _traced(
            tracer, prob.image_vertices[:, 0], prob.image_vertices[:, 1], backend, None, np
        )
    if rule == "ellipse":
        return relocate_by_ellipse(points, vertices, _traced_border(tracer, prob, backend, np), np)
    if backend != "numba":
        points = relocate(points, border, np, rule)
        return points, None if vertices is None else relocate(vertices, border, np, rule)
    compiled = loops.compiled()
    bx, by = np.ascontiguousarray(border[:, 0]), np.ascontiguousarray(border[:, 1])

    m = min(NEIGHBOURS + 1, bx.size)

    def move(p: np.ndarray) -> np.ndarray:
        out_x, out_y = np.empty(p.shape[0]), np.empty(p.shape[0])
        px, py = np.ascontiguousarray(p[:, 0]), np.ascontiguousarray(p[:, 1])
        if rule == "nearest":
            compiled.relocate_loop(px, py, bx, by, out_x, out_y)
        else:
            compiled.relocate_smooth_loop(px, py, bx, by, m, out_x, out_y)
        return np.stack([out_x, out_y], axis=-1)

    return move(points), None if vertices is None else move(vertices)


def _traced_border(tracer: Tracer, prob: _Problem, backend: str, xp: Any) -> Any:
    """The traced centres of the mask's border pixels, which the ellipse is fitted to."""
    c = xp.asarray(border_pixel_centres(prob.masked.dataset.grid))
    return _traced(tracer, c[:, 0], c[:, 1], backend, None, xp)


def _solve_sparse(
    mesh: MeshMapping,
    masked: MaskedLayout,
    light: Any,
    reg: np.ndarray,
    positive: str | None,
    log_det_r: Any,
) -> tuple[InversionTerms, np.ndarray]:
    """numba: ``F = B~^T B~`` over the nonzeros of the blurred mapping matrix, with any linear
    lens-light columns joined; ``(terms, model at the masked-in pixels)`` without the lens
    light's parametric part."""
    n_source = mesh.n_pixels
    data = masked.data if light is None else masked.data - light[0]
    dw = data / masked.noise
    columns = np.zeros((0, masked.data.size)) if light is None else light[1:] / masked.noise
    sparse = sparse_blurred(mesh.indices, mesh.weights, n_source, masked, 1.0 / masked.noise)
    curvature = sparse.curvature()
    vector = sparse.transpose_times(dw)
    if columns.shape[0]:
        cross = np.stack([sparse.transpose_times(c) for c in columns])  # (n_linear, n_s)
        curvature = np.block([[curvature, cross.T], [cross, columns @ columns.T]])
        vector = np.concatenate([vector, columns @ dw])

    def weighted_model(x: np.ndarray) -> np.ndarray:
        return sparse.times(x[:n_source]) + x[n_source:] @ columns

    terms = solve_normal(
        curvature, vector, dw, masked.noise, reg, weighted_model, np, positive, "numba", log_det_r
    )
    x = np.concatenate([terms.reconstruction, terms.intensities])
    return terms, masked.noise * weighted_model(x)


def _solve_dense(
    mesh: MeshMapping,
    masked: MaskedLayout,
    dataset: Imaging,
    light: Any,
    reg: np.ndarray,
    positive: str | None,
    log_det_r: Any,
) -> tuple[InversionTerms, np.ndarray]:
    """numpy: the dense blurred mapping matrix, with any linear lens-light columns joined;
    ``(terms, model at the masked-in pixels)`` without the lens light's parametric part."""
    n_mask, n_source = masked.data.size, mesh.n_pixels
    data = masked.data if light is None else masked.data - light[0]
    m = mapping_matrix(
        mesh.indices, mesh.weights, masked.sub_pixel, masked.sub_weight, n_mask, n_source
    )
    blurred = blurred_mapping_matrix(m, dataset, np)
    if light is not None and light.shape[0] > 1:
        blurred = np.concatenate([blurred, light[1:].T], axis=1)
    terms = solve(blurred, data, masked.noise, reg, np, positive, None, log_det_r)
    x = np.concatenate([terms.reconstruction, terms.intensities])
    return terms, blurred @ x


def _evaluate_jax(
    tracer: Tracer, dataset: Imaging, pixelization: Pixelization, lens_light: Tracer | None = None
) -> tuple:
    """The JAX program: ``(log_evidence, chi^2, s^T R s, ln det(F + R), ln det R, noise
    normalisation, reconstruction, model, vertices, points, intensities)``."""
    from twinlens.backend import jax_runtime

    jnp = jax_runtime.load().numpy
    prob = _problem(dataset, pixelization.mesh)
    masked = prob.masked
    layout = masked.layout
    x, y = jnp.asarray(layout.xs), jnp.asarray(layout.ys)
    points = _traced(tracer, x, y, "jax", layout, jnp)
    vertices = None
    if prob.image_vertices is not None:
        iv = jnp.asarray(prob.image_vertices)
        vertices = _traced(tracer, iv[:, 0], iv[:, 1], "jax", None, jnp)
    rule = pixelization.relocation
    if rule == "ellipse":
        traced_border = _traced_border(tracer, prob, "jax", jnp)
        points, vertices = relocate_by_ellipse(points, vertices, traced_border, jnp)
    else:
        border = points[prob.border]
        points = relocate(points, border, jnp, rule)
        vertices = None if vertices is None else relocate(vertices, border, jnp, rule)
    mesh = pixelization.mesh.mapping(points, vertices, jnp, masked.sub_weight)
    n_source = mesh.n_pixels
    noise = jnp.asarray(masked.noise)
    light = _lens_light_terms(lens_light, dataset, "jax")
    fixed = 0.0 if light is None else light[0]
    dw = (jnp.asarray(masked.data) - fixed) / noise
    # B~^T = (B / sigma)^T, (n_source, n_mask): F = B~^T B~ and D = B~^T d~ contract the
    # long axis without transposing the matrix
    columns = blurred_columns(mesh.indices, mesh.weights, n_source, masked, jnp) / noise
    if light is not None:  # the linear light profiles' columns after the source's
        columns = jnp.concatenate([columns, light[1:] / noise], axis=0)
    lam = pixelization.regularization.coefficient
    lam_ok = _coefficient_ok(lam)
    lam_safe = jnp.where(lam_ok, lam, 1.0)
    reg = lam_safe * _structure(pixelization, mesh, jnp) + EPSILON * jnp.eye(n_source)
    positive = "jax" if pixelization.positive else None
    terms = solve_normal(
        gram(columns, jnp),
        columns @ dw,
        dw,
        noise,
        reg,
        lambda x: x @ columns,
        jnp,
        positive,
        log_det_regularization=_closed_log_det(pixelization, lam_safe, jnp),
    )
    ok = lam_ok & (mesh.status == triangulation.STATUS_OK)
    log_e = jnp.where(ok, terms.log_evidence, -jnp.inf)
    return (
        log_e,
        terms.chi_squared,
        terms.regularization_term,
        terms.log_det_curvature_reg,
        terms.log_det_regularization,
        terms.noise_normalization,
        terms.reconstruction,
        noise * (jnp.concatenate([terms.reconstruction, terms.intensities]) @ columns) + fixed,
        mesh.vertices,
        points,
        terms.intensities,
    )


@cache
def _jitted() -> Any:
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    # the dataset is static (hashes by value); the tracer, the pixelization and the lens light
    # are pytrees (lens parameters and lambda are leaves; the mesh's fields are static)
    # the count of solves that ran out of steps is returned (see nnls.counting)
    return jax.jit(
        counting(
            lambda dataset, tracer, pixelization, lens_light: _evaluate_jax(
                tracer, dataset, pixelization, lens_light
            )
        ),
        static_argnums=(0,),
    )


def log_evidence(
    tracer: Tracer,
    dataset: Imaging,
    pixelization: Pixelization,
    backend: str | None = None,
    lens_light: Tracer | None = None,
) -> Any:
    """The Bayesian log-evidence of ``dataset`` given the lens ``tracer`` and a pixelised
    source (see :mod:`twinlens.inversion.solve` for the terms).

    Parameters
    ----------
    tracer : Tracer
        Lens galaxies with mass profiles only (no light profiles).
    dataset : Imaging
    pixelization : Pixelization
    backend : str, optional
        ``numba``, ``jax`` or ``numpy`` (default: the process default; JAX for JAX inputs).
    lens_light : Tracer, optional
        Lens light solved jointly with the source (see :class:`FitPixelised`).

    Returns
    -------
    float (numpy, numba) or JAX scalar
        ``-inf`` for an unusable mesh or a regularisation coefficient out of range.
    """
    return FitPixelised(dataset, tracer, pixelization, backend, lens_light).log_evidence


class FitPixelised:
    """A lens model and a pixelised source fitted to imaging: the evidence and its parts.

    Parameters
    ----------
    dataset : Imaging
    tracer : Tracer
        Lens mass only.
    pixelization : Pixelization
    backend : str, optional
        ``numba``, ``jax`` or ``numpy``.
    lens_light : Tracer, optional
        Galaxies of light only (no mass, no pixelization), fitted with the source: its
        parametric profiles' blurred image is subtracted from the data, and its linear
        profiles' blurred unit-intensity images are solved jointly with the source pixels
        (:mod:`~twinlens.inversion.solve`); evaluated at every call, so its parameters
        may vary (be JAX tracers).
    """

    def __init__(
        self,
        dataset: Imaging,
        tracer: Tracer,
        pixelization: Pixelization,
        backend: str | None = None,
        lens_light: Tracer | None = None,
    ) -> None:
        _check_tracer(tracer)
        if lens_light is not None:
            _check_lens_light(lens_light)
        if not isinstance(dataset, Imaging):
            raise TypeError(f"dataset must be an Imaging, got {type(dataset).__name__}")
        if not isinstance(pixelization, Pixelization):
            raise TypeError(f"pixelization must be a Pixelization, got {type(pixelization)}")
        self.dataset = dataset
        self.tracer = tracer
        self.pixelization = pixelization
        self.lens_light = lens_light
        self.backend = resolve_backend(
            backend,
            *_numbers(tracer),
            *_numbers(pixelization),
            *(_numbers(lens_light) if lens_light is not None else ()),
        )
        _problem(dataset, pixelization.mesh)  # configuration errors now, not inside a program

    @cached_property
    def _result(self) -> _Result:
        if self.backend == "jax":
            from twinlens.backend import jax_runtime

            jax = jax_runtime.load()
            # on CPU, JAX's Cholesky calls LAPACK (see inversion.one_blas_thread)
            with one_blas_thread():
                out, unconverged = jax.block_until_ready(
                    _jitted()(self.dataset, self.tracer, self.pixelization, self.lens_light)
                )
            note_unconverged(unconverged, "the problems of one source inversion")
            terms = InversionTerms(out[6], out[1], out[2], out[3], out[4], out[5], out[0], out[10])
            return _Result(terms, out[7], out[8], out[9])
        # every BLAS call of the host path on one thread, not only the factorisations: the
        # example's likelihood ran several times faster than with threaded BLAS on 2 cores
        with one_blas_thread():
            return _evaluate_host(
                self.tracer, self.dataset, self.pixelization, self.backend, self.lens_light
            )

    @property
    def terms(self) -> InversionTerms:
        """Every term of the log-evidence, and the reconstruction."""
        return self._result.terms

    @property
    def log_evidence(self) -> Any:
        """``-1/2 [chi^2 + s^T R s + ln det(F + R) - ln det R + sum ln(2 pi sigma^2)]``."""
        return self._result.terms.log_evidence

    @property
    def chi_squared(self) -> Any:
        """``sum ((d - B s) / sigma)^2`` over the masked-in pixels."""
        return self._result.terms.chi_squared

    @property
    def reconstruction(self) -> Any:
        """The source pixels' values ``s``, ``(n_source,)``."""
        return self._result.terms.reconstruction

    @property
    def intensities(self) -> Any:
        """The lens light's linear profiles' intensities solved with the source,
        ``(n_linear,)`` (empty without ``lens_light``)."""
        return self._result.terms.intensities

    @property
    def source_vertices(self) -> Any:
        """Source-pixel positions ``(n_source, 2)``, arcsec."""
        return self._result.vertices

    @property
    def source_plane_points(self) -> Any:
        """The traced, relocated sub-pixels ``(n_sub, 2)``, arcsec."""
        return self._result.points

    @cached_property
    def model_image(self) -> np.ndarray:
        """The blurred model ``(ny, nx)`` (the lensed source, plus ``lens_light`` when given);
        NaN outside the mask."""
        out = np.full(self.dataset.grid.n_pixels, np.nan)
        out[self.dataset.mask_index] = np.asarray(self._result.model)
        return out.reshape(self.dataset.grid.shape)

    @property
    def normalized_residual_map(self) -> np.ndarray:
        """``(data - model) / sigma``, NaN outside the mask."""
        return (self.dataset.data - self.model_image) / self.dataset.noise_map

"""Regularisation: the prior that makes a pixelised source smooth.

The source ``s`` has the Gaussian prior ``exp(-s^T R s / 2)`` with

``R = lambda * H + EPSILON * I``,

``lambda`` the regularisation coefficient (a model parameter, > 0) and ``H`` a fixed
positive semi-definite matrix built from the mesh's neighbours:

* :class:`Constant` (gradient): ``H = sum over neighbour pairs (i, j) of
  (e_i - e_j)(e_i - e_j)^T``, the graph Laplacian, so ``s^T H s = sum (s_i - s_j)^2``;
* :class:`Curvature` (rectangular meshes): ``H = sum over three pixels (l, m, r) in a line of
  d d^T`` with ``d = e_l - 2 e_m + e_r``, so ``s^T H s = sum (s_l - 2 s_m + s_r)^2``;
* :class:`AdaptiveBrightness`: the gradient form with a weight per pair,
  ``(w_i + w_j) / 2``, from per-pixel weights ``w`` (:func:`adaptive_weights` makes them from
  a previous reconstruction, large where the source is faint).

``H`` is singular (a constant source has no gradient), so its determinant in the evidence
would be 0. Following autolens, a small constant ``EPSILON = 1e-8`` is added to the diagonal
of ``R`` (not scaled by ``lambda``), which makes ``R`` positive definite.

autolens' ``Constant(coefficient=c)`` is ``Constant(coefficient=c**2)`` here: autolens squares
its coefficient, twinlens takes ``lambda`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.fields import ValueIdentity, static_field
from twinlens.inversion.meshes import MeshMapping, Rectangular
from twinlens.profiles.checks import check_positive

__all__ = [
    "EPSILON",
    "AdaptiveBrightness",
    "Constant",
    "Curvature",
    "Regularization",
    "adaptive_weights",
    "gradient_matrix",
    "lattice_curvature_eigenvalues",
    "lattice_laplacian_eigenvalues",
    "lattice_log_det",
]

#: Added to the diagonal of every regularisation matrix (autolens' convention).
EPSILON = 1e-8


def gradient_matrix(n_pixels: int, edges: Any, edge_weights: Any, xp: Any = np) -> Any:
    """``sum_e w_e (e_i - e_j)(e_i - e_j)^T`` over pairs ``edges (n_e, 2)``, ``(n, n)``.

    A pair with weight 0 (padding) adds nothing."""
    i, j = edges[:, 0], edges[:, 1]
    h = xp.zeros((n_pixels, n_pixels), dtype=float)
    if xp is np:
        np.add.at(h, (i, i), edge_weights)
        np.add.at(h, (j, j), edge_weights)
        np.add.at(h, (i, j), -edge_weights)
        np.add.at(h, (j, i), -edge_weights)
        return h
    return (
        h.at[i, i]
        .add(edge_weights)
        .at[j, j]
        .add(edge_weights)
        .at[i, j]
        .add(-edge_weights)
        .at[j, i]
        .add(-edge_weights)
    )


def lattice_laplacian_eigenvalues(shape: tuple[int, int]) -> np.ndarray:
    """The eigenvalues of the graph Laplacian of an ``(ny, nx)`` lattice with its row and column
    neighbour pairs (:class:`Constant`'s ``H`` on a rectangular mesh), ``(ny nx,)``.

    The lattice is the Cartesian product of two paths, so its Laplacian's eigenvalues are the
    sums of theirs; a path of ``n`` vertices has ``4 sin^2(pi k / (2 n))``, ``k = 0 .. n - 1``
    (``2 - 2 cos`` without its cancellation: each to rounding, the zero exactly zero)."""
    ny, nx = shape
    path_y = 4.0 * np.sin(np.pi * np.arange(ny) / (2 * ny)) ** 2
    path_x = 4.0 * np.sin(np.pi * np.arange(nx) / (2 * nx)) ** 2
    return (path_y[:, None] + path_x[None, :]).reshape(-1)


def _line_curvature_eigenvalues(n: int) -> np.ndarray:
    """The eigenvalues of ``D^T D`` for the ``(n - 2) x n`` second difference ``D`` of a line
    of ``n`` pixels: its two zeros (constant and linear sources) exactly, and the others from
    ``D D^T``, which has the same nonzero eigenvalues and no zero to round."""
    d = np.zeros((n - 2, n))
    for i in range(n - 2):
        d[i, i : i + 3] = (1.0, -2.0, 1.0)
    return np.concatenate([np.zeros(2), np.linalg.eigvalsh(d @ d.T)])


def lattice_curvature_eigenvalues(shape: tuple[int, int]) -> np.ndarray:
    """The eigenvalues of :class:`Curvature`'s ``H`` on an ``(ny, nx)`` lattice, ``(ny nx,)``:
    ``H`` is the Kronecker sum of the rows' and the columns' ``D^T D``, so its eigenvalues are
    the sums of theirs."""
    ny, nx = shape
    return (
        _line_curvature_eigenvalues(ny)[:, None] + _line_curvature_eigenvalues(nx)[None, :]
    ).reshape(-1)


def lattice_log_det(
    shape: tuple[int, int], coefficient: Any, xp: Any = np, curvature: bool = False
) -> Any:
    """``ln det(lambda H + EPSILON I)`` for :class:`Constant` (or, with ``curvature``,
    :class:`Curvature`) on an ``(ny, nx)`` rectangular mesh, from the eigenvalues of ``H``
    (:func:`lattice_laplacian_eigenvalues`, :func:`lattice_curvature_eigenvalues`): no
    factorisation, and exact where one loses the near-null directions (``EPSILON`` against
    ``lambda`` times ``H``'s largest eigenvalue, 8 or 32: a condition number of ``8e8 lambda``
    or more)."""
    mu = _eigenvalues(shape, curvature)
    return xp.sum(xp.log(coefficient * mu + EPSILON))


@lru_cache(maxsize=32)
def _eigenvalues(shape: tuple[int, int], curvature: bool) -> np.ndarray:
    # computed once per mesh shape (the curvature's take an eigensolve per axis), read-only
    # since every caller shares the array
    mu = lattice_curvature_eigenvalues(shape) if curvature else lattice_laplacian_eigenvalues(shape)
    mu.flags.writeable = False
    return mu


def curvature_matrix(n_pixels: int, stencils: Any, xp: Any = np) -> Any:
    """``sum d d^T``, ``d = e_l - 2 e_m + e_r`` over ``stencils (n_s, 3)``, ``(n, n)``."""
    coeffs = np.array([1.0, -2.0, 1.0])
    rows = np.repeat(stencils, 3, axis=1).reshape(-1)
    cols = np.tile(stencils, (1, 3)).reshape(-1)
    values = np.tile(np.outer(coeffs, coeffs).reshape(-1), len(stencils))
    h = np.zeros((n_pixels, n_pixels))
    np.add.at(h, (rows, cols), values)
    return h if xp is np else xp.asarray(h)


@dataclass(frozen=True, eq=False)
class Regularization(ValueIdentity):
    """Base of the regularisation schemes.

    Parameters
    ----------
    coefficient : float
        ``lambda`` > 0 (in [1e-30, 1e30]); a JAX leaf, so a search may vary it.
    """

    coefficient: Any = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "coefficient", self.coefficient)

    def structure(self, mesh: MeshMapping, xp: Any = np) -> Any:
        """``H``, the matrix multiplied by ``lambda`` (``(n_pixels, n_pixels)``)."""
        raise NotImplementedError

    def log_det(self, mesh: Any, coefficient: Any, xp: Any = np) -> Any:
        """``ln det R`` at ``coefficient`` without factorising ``R``, where ``H``'s eigenvalues
        are known for the mesh (a :class:`~twinlens.inversion.meshes.Rectangular` or
        ``Delaunay`` mesh, not its mapping); None where they are not."""
        return None

    def matrix(self, mesh: MeshMapping, xp: Any = np) -> Any:
        """``R = lambda H + EPSILON I`` for coefficient ``lambda`` (a traced one allowed)."""
        h = self.structure(mesh, xp)
        return self.coefficient * h + EPSILON * xp.eye(mesh.n_pixels)


@dataclass(frozen=True, eq=False)
class Constant(Regularization):
    """Gradient regularisation with one coefficient: ``s^T H s = sum (s_i - s_j)^2`` over
    neighbour pairs (lattice rows and columns, or Delaunay edges)."""

    def log_det(self, mesh: Any, coefficient: Any, xp: Any = np) -> Any:
        """On a rectangular mesh, from the lattice Laplacian's eigenvalues
        (:func:`lattice_log_det`)."""
        if isinstance(mesh, Rectangular):
            return lattice_log_det(mesh.shape, coefficient, xp)
        return None

    def structure(self, mesh: MeshMapping, xp: Any = np) -> Any:
        """The graph Laplacian of the mesh's neighbour pairs."""
        weights = xp.where(xp.asarray(mesh.edge_valid), 1.0, 0.0)
        return gradient_matrix(mesh.n_pixels, mesh.edges, weights, xp)


@dataclass(frozen=True, eq=False)
class Curvature(Regularization):
    """Curvature regularisation on a rectangular mesh:
    ``s^T H s = sum (s_l - 2 s_m + s_r)^2`` over three consecutive pixels of a row or column.

    The second difference is in pixel index, whatever the spacing: on a mesh with unequal
    column widths (``RectangularAdaptDensity``) it is not the source's second derivative."""

    def log_det(self, mesh: Any, coefficient: Any, xp: Any = np) -> Any:
        """On a rectangular mesh, from the lines' second-difference spectra
        (:func:`lattice_log_det`)."""
        if isinstance(mesh, Rectangular):
            return lattice_log_det(mesh.shape, coefficient, xp, curvature=True)
        return None

    def structure(self, mesh: MeshMapping, xp: Any = np) -> Any:
        """Sum of the outer products of the second-difference stencils."""
        if mesh.stencils is None:
            raise ValueError(
                "Curvature regularisation needs a Rectangular mesh (lattice lines); use "
                "Constant or AdaptiveBrightness with a Delaunay mesh"
            )
        return curvature_matrix(mesh.n_pixels, mesh.stencils, xp)


@dataclass(frozen=True, eq=False)
class AdaptiveBrightness(Regularization):
    """Gradient regularisation weighted per source pixel:
    ``s^T H s = sum (w_i + w_j) / 2 (s_i - s_j)^2`` over neighbour pairs.

    Parameters
    ----------
    coefficient : float
        ``lambda`` > 0.
    pixel_weights : float array, one per source pixel
        ``w`` >= 0, one per source pixel, finite (from :func:`adaptive_weights`); with all
        weights 1 this is :class:`Constant`.
    """

    pixel_weights: Any = static_field(default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pixel_weights", np.asarray(self.pixel_weights, dtype=float))
        super().__post_init__()
        w = self.pixel_weights
        if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w) & (w >= 0)):
            raise ValueError(
                "AdaptiveBrightness.pixel_weights must be a non-empty 1-D array of finite "
                f"values >= 0, got shape {w.shape}"
            )

    def structure(self, mesh: MeshMapping, xp: Any = np) -> Any:
        """The weighted graph Laplacian."""
        w = self.pixel_weights
        if w.size != mesh.n_pixels:
            raise ValueError(
                f"AdaptiveBrightness.pixel_weights has {w.size} values but the mesh has "
                f"{mesh.n_pixels} source pixels"
            )
        edges = mesh.edges
        pair = 0.5 * (xp.asarray(w)[edges[:, 0]] + xp.asarray(w)[edges[:, 1]])
        pair = xp.where(xp.asarray(mesh.edge_valid), pair, 0.0)
        return gradient_matrix(mesh.n_pixels, edges, pair, xp)


def adaptive_weights(
    source: np.ndarray,
    inner: float = 1.0,
    outer: float = 100.0,
    signal_scale: float = 1.0,
) -> np.ndarray:
    """Per-pixel weights ``w = (inner * t + outer * (1 - t))**2`` from a previous
    reconstruction ``source (n_pixels,)``, where ``t = (max(s, 0) / max(s))**signal_scale``
    is 1 at the brightest pixel and 0 where the source is dark (the signal of autolens'
    adaptive-brightness scheme): bright regions are regularised with ``inner``, faint ones
    with ``outer``.

    Parameters
    ----------
    source : float array, one value per source pixel
    inner, outer : float
        >= 0.
    signal_scale : float
        > 0; larger values narrow the bright region.

    Returns
    -------
    float array, one weight per source pixel
    """
    s = np.maximum(np.asarray(source, dtype=float), 0.0)
    if not (inner >= 0 and outer >= 0 and signal_scale > 0):
        raise ValueError(
            "adaptive_weights: need inner >= 0, outer >= 0 and signal_scale > 0, got "
            f"{inner!r}, {outer!r}, {signal_scale!r}"
        )
    peak = s.max()
    t = (s / peak) ** signal_scale if peak > 0 else np.zeros_like(s)
    return (inner * t + outer * (1.0 - t)) ** 2

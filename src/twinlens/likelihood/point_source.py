"""Log-likelihoods of a lensed point source: image positions, flux ratios and time delays.

The data (:class:`PointSourceData`) are the observed image positions ``theta_i`` with their
positional uncertainties ``sigma_i`` (arcsec), and optionally the time delays of images
``1..n-1`` relative to image 0 (days) and the image fluxes, each with uncertainties. The
parameters (:class:`PointSource`) are the source position ``beta``, its intrinsic flux ``F`` and
the time-delay distance ``D_dt`` (Mpc). Each term is ``-chi^2 / 2`` (Gaussian errors, no
normalising constant); :class:`PointSourceLikelihood` sums the terms that have data.

**Image positions, in the image plane** (``positions = "image"``). The model images of
``beta`` are found with an :class:`~twinlens.lensing.lens_equation.ImageSolver`; observed image
``i`` is paired with model image ``p(i)`` by the assignment (each model image used at most once)
that minimises

    ``chi^2 = sum_i |theta_i - theta_model,p(i)|^2 / sigma_i^2``.

When the lens makes a different number of images than were observed, the log-likelihood is
``-inf`` (a missing or extra image is no fit at all); it is never NaN. The images are found by a
grid search; on JAX the term's derivatives are those of the found images (the implicit function
theorem's, :mod:`twinlens.lensing.lens_equation`), the count and the pairing held as they are.

**Image positions, in the source plane** (``positions = "source"``). Each observed image is
ray-traced back, ``beta_i = theta_i - alpha(theta_i)``. To first order a displacement
``delta beta`` in the source plane moves the image by ``A_i^-1 delta beta``, with
``A_i = I - H(theta_i)`` the lens-mapping Jacobian at the image (``H`` the hessian of the
potential). The image-plane offset of image ``i`` is therefore approximately
``A_i^-1 (beta_i - beta)``, and

    ``chi^2 = sum_i |A_i^-1 (beta_i - beta)|^2 / sigma_i^2``.

No images are solved for, so it is cheap and differentiable. It agrees with the image-plane
chi^2 when the offsets are small compared with the scale on which ``A`` changes. (Weighting
``|beta_i - beta|^2`` by the magnification ``|det A_i^-1|``, as some codes do, is the
direction-average of this form for a nearly isotropic ``A``; the form here keeps the direction:
an offset along the tangential arc is stretched, one along the radius is not.)

**Flux ratios.** The model flux of image ``i`` is ``F |mu_i|``, ``mu_i = 1 / det A_i`` at the
observed position, and ``chi^2 = sum_i (f_i - F |mu_i|)^2 / sigma_f,i^2``.

**Time delays.** The Fermat potential ``phi_i = |theta_i - beta|^2 / 2 - psi(theta_i)`` at the
observed positions (:func:`~twinlens.lensing.point_sources.fermat_potential`) gives the delays
``Delta t_i = D_dt / c (phi_i - phi_0)`` (:func:`~twinlens.cosmology.time_delay_days`), and
``chi^2 = sum_{i >= 1} (Delta t_i,obs - Delta t_i)^2 / sigma_t,i^2``. With a
:class:`~twinlens.lensing.multiplane.MultiPlaneTracer` the model delays are its
:meth:`~twinlens.lensing.multiplane.MultiPlaneTracer.arrival_times` (distances from its cosmology,
plane by plane) at the observed positions, scaled to ``PointSource.h0`` when it is given, and
``PointSource.time_delay_distance`` is not used.

All terms run on numba, numpy and JAX (``jit`` and ``grad``), with the same values.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from twinlens.backend import array_module, resolve_backend
from twinlens.backend.concrete import is_batched
from twinlens.backend.reductions import take_min
from twinlens.cosmology import time_delay_days
from twinlens.fields import ValueIdentity, static_field
from twinlens.imaging.point_images import PointImages
from twinlens.kernels import lensing
from twinlens.lensing.lens_equation import ImageSolver
from twinlens.lensing.lens_equation_steps import _newton_step
from twinlens.lensing.multiplane import MultiPlaneTracer
from twinlens.lensing.point_sources import fermat_potential
from twinlens.lensing.tracer import Tracer
from twinlens.messages import shown
from twinlens.profiles.base import _numbers
from twinlens.profiles.checks import check_pair, check_positive

__all__ = [
    "IMAGING_POSITIONS",
    "POSITION_LIKELIHOODS",
    "PointSource",
    "PointSourceData",
    "PointSourceLikelihood",
    "flux_chi_squared",
    "image_plane_chi_squared",
    "model_delays",
    "model_image_positions",
    "model_images",
    "source_plane_chi_squared",
    "time_delay_chi_squared",
]

#: the ways of scoring image positions
POSITION_LIKELIHOODS = ("image", "source", "none")
#: where the images seen in the imaging are placed: at the observed positions (fixed), or at
#: the model's images reached from them (moving with the lens and the source at every step)
IMAGING_POSITIONS = ("observed", "model")
#: a masked (absent) model image is this far away, arcsec^2 / sigma^2 (finite: no inf - inf)
_ABSENT = 1e30
#: the assignment of observed to model images is searched exhaustively up to this many maps
_MAX_ASSIGNMENTS = 40_320


@dataclass(frozen=True, eq=False)
class PointSource(ValueIdentity):
    """The parameters of a lensed point source.

    Parameters
    ----------
    centre : (float, float)
        Source position ``beta = (x, y)``, arcsec.
    flux : float
        Intrinsic (unlensed) flux, in the units of the measured fluxes, > 0 (used only by the
        flux term).
    time_delay_distance : float
        ``D_dt = (1 + z_d) D_d D_s / D_ds``, Mpc, > 0 (used only by the time-delay term of a
        single-plane lens).
    h0 : float, optional
        ``H0`` (km/s/Mpc) for the time-delay term of a
        :class:`~twinlens.lensing.multiplane.MultiPlaneTracer`: its cosmology with ``H0``
        replaced and every other parameter kept. Every distance of an FLRW cosmology with
        fixed density parameters scales as ``1 / H0`` while the ratios that bend the rays do
        not, so the delays are the tracer's own times ``H0_cosmology / h0``. None (the
        default): the cosmology's own ``H0``.
    """

    centre: tuple[Any, Any] = (0.0, 0.0)
    flux: Any = 1.0
    time_delay_distance: Any = 5000.0
    h0: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_pair(self, "centre", self.centre)
        check_positive(self, "flux", self.flux)
        check_positive(self, "time_delay_distance", self.time_delay_distance)
        if self.h0 is not None:
            check_positive(self, "h0", self.h0)


def _array(name: str, value: Any, shape: tuple[int, ...], positive: bool) -> np.ndarray:
    """``value`` as a float array of ``shape`` (a scalar is broadcast), finite (and > 0 when
    ``positive``); a clear ValueError naming ``name`` otherwise."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"PointSourceData.{name} must be real numbers, got {shown(value)}"
        ) from None
    if isinstance(value, bool) or np.asarray(value).dtype.kind not in "iuf":
        raise ValueError(f"PointSourceData.{name} must be real numbers, got {shown(value)}")
    if arr.ndim == 0:
        arr = np.full(shape, float(arr))
    if arr.shape != shape:
        raise ValueError(f"PointSourceData.{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"PointSourceData.{name} must be finite, got {shown(value)}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"PointSourceData.{name} must be > 0 (an uncertainty), got {shown(value)}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class PointSourceData(ValueIdentity):
    """Measurements of the images of one point source.

    Parameters
    ----------
    positions : array, (n, 2)
        Observed image positions ``(x, y)``, arcsec, ``n >= 1``. Image 0 is the reference of
        the delays.
    position_sigma : float or array (n,)
        Positional uncertainty of each image, arcsec, > 0.
    delays : array (n - 1,), optional
        Time delays of images ``1..n-1`` relative to image 0, ``t_i - t_0``, days (positive
        when image ``i`` arrives after image 0).
    delay_sigma : float or array (n - 1,), optional
        Their uncertainties, days, > 0 (required with ``delays``).
    fluxes : array (n,), optional
        Measured image fluxes (any unit, the source's ``flux`` is in the same one).
    flux_sigma : float or array (n,), optional
        Their uncertainties, > 0 (required with ``fluxes``).
    """

    positions: Any = static_field()
    position_sigma: Any = static_field()
    delays: Any = static_field(default=None)
    delay_sigma: Any = static_field(default=None)
    fluxes: Any = static_field(default=None)
    flux_sigma: Any = static_field(default=None)

    def __post_init__(self) -> None:
        pos = np.asarray(self.positions)
        if pos.dtype.kind not in "iuf" or pos.ndim != 2 or pos.shape[1] != 2 or pos.shape[0] < 1:
            raise ValueError(
                "PointSourceData.positions must be real (x, y) pairs of shape (n, 2), n >= 1, "
                f"got {shown(self.positions)}"
            )
        n = pos.shape[0]
        set_ = object.__setattr__
        set_(self, "positions", _array("positions", pos, (n, 2), False))
        set_(self, "position_sigma", _array("position_sigma", self.position_sigma, (n,), True))
        for value, sigma, shape in (
            ("delays", "delay_sigma", (n - 1,)),
            ("fluxes", "flux_sigma", (n,)),
        ):
            given, given_sigma = getattr(self, value), getattr(self, sigma)
            if given is None and given_sigma is None:
                continue
            if given is None or given_sigma is None:
                missing = value if given is None else sigma
                raise ValueError(f"PointSourceData.{missing} is needed with {value}")
            if value == "delays" and n < 2:
                raise ValueError("PointSourceData.delays need at least two images")
            set_(self, value, _array(value, given, shape, False))
            set_(self, sigma, _array(sigma, given_sigma, shape, True))
        super().__post_init__()

    @property
    def n_images(self) -> int:
        """The number of observed images."""
        return int(self.positions.shape[0])


# -- the terms, as functions of a tracer, the parameters and the data ----------------------


def _backend_for(tracer: Tracer, point_source: PointSource, backend: str | None) -> str:
    return resolve_backend(backend, *_numbers(tracer), *_numbers(point_source))


def _source(point_source: PointSource, xp: Any) -> Any:
    """``beta (2,)``, or ``(n_batch, 2)`` for :func:`~twinlens.backend.concrete.batched`
    columns."""
    cx, cy = point_source.centre
    if is_batched(cx, cy):
        columns = np.broadcast_arrays(*(np.asarray(c, dtype=float).reshape(-1) for c in (cx, cy)))
        return np.stack(columns, axis=-1)
    return xp.stack([xp.asarray(cx), xp.asarray(cy)])


def _inverse_jacobians(tracer: Tracer, xy: Any, backend: str) -> tuple[Any, ...]:
    """At each of ``xy (n, 2)``: ``(a11, a12, a21, a22, det)`` of ``A = I - H``. All four
    entries: a multi-plane lens's ``A`` is not symmetric."""
    xp = array_module(backend)
    h = tracer.hessian(xy, backend)
    a11, a12 = 1.0 - h[..., 0, 0], -h[..., 0, 1]
    a21, a22 = -h[..., 1, 0], 1.0 - h[..., 1, 1]
    det = lensing.jacobian_determinant(h[..., 0, 0], h[..., 0, 1], h[..., 1, 1], h[..., 1, 0])
    # exactly on a critical curve: a huge (finite) value, never a division by zero
    det = xp.where(xp.abs(det) < 1e-300, xp.where(det < 0, -1e-300, 1e-300), det)
    return a11, a12, a21, a22, det


def source_plane_chi_squared(
    tracer: Tracer, point_source: PointSource, data: PointSourceData, backend: str | None = None
) -> Any:
    """``sum_i |A_i^-1 (beta_i - beta)|^2 / sigma_i^2`` (see the module), a scalar."""
    b = _backend_for(tracer, point_source, backend)
    xp = array_module(b)
    theta = xp.asarray(data.positions)
    beta_i = tracer.source_plane(theta, b)
    dx = beta_i[..., 0] - point_source.centre[0]
    dy = beta_i[..., 1] - point_source.centre[1]
    a11, a12, a21, a22, det = _inverse_jacobians(tracer, theta, b)
    ex = (a22 * dx - a12 * dy) / det
    ey = (a11 * dy - a21 * dx) / det
    return xp.sum((ex * ex + ey * ey) / xp.asarray(data.position_sigma) ** 2, axis=-1)


@cache
def _assignments(n_observed: int, n_slots: int) -> np.ndarray:
    """Every injective map of ``n_observed`` observed images to ``n_slots`` model slots,
    ``(n_maps, n_observed)``."""
    return np.array(list(itertools.permutations(range(n_slots), n_observed)), dtype=np.int64)


def image_plane_chi_squared(
    tracer: Tracer,
    point_source: PointSource,
    data: PointSourceData,
    solver: ImageSolver,
    backend: str | None = None,
    magnification_limit: float = 0.0,
) -> Any:
    """The image-plane positional chi^2 (see the module): ``inf`` on every backend when the
    model has a different number of images than were observed or one image cannot be
    paired. Model images with ``|mu| < magnification_limit`` are not counted: too faint to be
    seen (the central image of a lens shallower than isothermal, for one)."""
    b = _backend_for(tracer, point_source, backend)
    xp = array_module(b)
    images = solver.solve(tracer, _source(point_source, xp) * 1.0, b)
    n, m = data.n_images, solver.max_images
    theta = xp.asarray(data.positions)
    sigma2 = xp.asarray(data.position_sigma)[:, None] ** 2
    # a batch of models (batched parameters, numba and numpy) has its batch axis in front
    d = theta[:, None, :] - images.positions[..., None, :, :]
    cost = (d[..., 0] ** 2 + d[..., 1] ** 2) / sigma2  # (..., n, m)
    seen = images.mask & (xp.abs(images.magnifications) >= magnification_limit)
    cost = xp.where(seen[..., None, :], cost, _ABSENT)
    if n > m:
        total = xp.asarray(_ABSENT) + 0.0 * xp.sum(cost, axis=(-2, -1))
    elif math.perm(m, n) <= _MAX_ASSIGNMENTS:
        maps = _assignments(n, m)
        total = take_min(xp.sum(cost[..., np.arange(n)[None, :], maps], axis=-1), -1, xp)
    else:  # too many images to search every pairing: each observed image to its nearest
        total = xp.sum(take_min(cost, -1, xp), axis=-1)
    same_count = seen.sum(axis=-1) == n
    return xp.where(same_count & (total < _ABSENT), total, xp.inf)


#: Newton steps from each observed image to the model's image: quadratic convergence takes an
#: offset of 0.05 arcsec below 1e-10 arcsec in four on a galaxy-scale lens
NEWTON_STEPS = 4
#: the longest step, arcsec: a longer one is clipped (near a critical curve), and the images
#: are then not found
_MAX_STEP = 0.25
#: the last step must be shorter than this (arcsec) for the images to count as found; the
#: positions then hold to about its square
_FOUND_STEP = 1e-5
#: two observed images that lead to model images closer than this (arcsec) found one image
_DISTINCT = 1e-4


def model_image_positions(
    tracer: Tracer,
    point_source: PointSource,
    data: PointSourceData,
    backend: str | None = None,
) -> Any:
    """The model's image of the source that Newton's steps reach from each observed image,
    ``(n, 2)`` arcsec.

    Newton's method on the lens equation ``theta - alpha(theta) = beta``, started at each
    observed position: ``theta <- theta + A^-1 (beta - beta(theta))`` with ``A = I - H``, the
    image solver's step (:mod:`twinlens.lensing.lens_equation`), clipped at 0.25 arcsec. The
    first step is the source-plane approximation's image-plane offset; ``NEWTON_STEPS`` in
    all, a fixed number, so that JAX traces one program and differentiates through it.
    :func:`model_images` also says whether the steps found the images."""
    return model_images(tracer, point_source, data, backend)[0]


def model_images(
    tracer: Tracer,
    point_source: PointSource,
    data: PointSourceData,
    backend: str | None = None,
) -> tuple[Any, Any]:
    """``(positions (n, 2), found)``: :func:`model_image_positions`, and whether the steps
    found one model image per observed one: every last step shorter than 1e-5 arcsec and
    unclipped, and no two positions within 1e-4 arcsec of each other. Otherwise (a source
    that makes fewer images, or an image beyond the steps' reach) ``found`` is False.

    With :func:`~twinlens.backend.concrete.batched` parameters (a batch of models on numba or
    numpy) the positions are ``(n_batch, n, 2)`` and ``found`` one flag per member."""
    b = _backend_for(tracer, point_source, backend)
    xp = array_module(b)
    theta = xp.asarray(data.positions) * 1.0
    x, y = theta[:, 0], theta[:, 1]
    sx, sy = point_source.centre
    size, clipped = 0.0, False
    for _ in range(NEWTON_STEPS):
        x, y, size, clipped = _newton_step(tracer, x, y, sx, sy, _MAX_STEP, b, xp)
    positions = xp.stack([x, y], -1)
    # reduced over each member's images only (the last axes), so a batch keeps one flag each
    found = (
        xp.all(xp.isfinite(positions), axis=(-2, -1))
        & xp.all(size < _FOUND_STEP, axis=-1)
        & ~xp.any(clipped, axis=-1)
    )
    if data.n_images > 1:
        i, j = np.triu_indices(data.n_images, 1)
        gap = xp.hypot(x[..., i] - x[..., j], y[..., i] - y[..., j])
        found = found & xp.all(gap > _DISTINCT, axis=-1)
    return positions, found


def flux_chi_squared(
    tracer: Tracer, point_source: PointSource, data: PointSourceData, backend: str | None = None
) -> Any:
    """``sum_i (f_i - F |mu_i|)^2 / sigma_f,i^2``, the magnifications at the observed
    positions; 0 without fluxes."""
    if data.fluxes is None:
        return 0.0
    b = _backend_for(tracer, point_source, backend)
    xp = array_module(b)
    *_, det = _inverse_jacobians(tracer, xp.asarray(data.positions), b)
    model = point_source.flux / xp.abs(det)
    r = (xp.asarray(data.fluxes) - model) / xp.asarray(data.flux_sigma)
    return xp.sum(r * r, axis=-1)


def model_delays(
    tracer: Tracer, point_source: PointSource, data: PointSourceData, backend: str | None = None
) -> Any:
    """The model's delays of images ``1..n-1`` relative to image 0 at the observed positions,
    ``D_dt / c (phi_i - phi_0)``, days, ``(n - 1,)`` (a multi-plane tracer's own arrival
    times, its cosmology's distances in place of ``D_dt``)."""
    b = _backend_for(tracer, point_source, backend)
    xp = array_module(b)
    beta = _source(point_source, xp)
    if isinstance(tracer, MultiPlaneTracer):
        t = tracer.arrival_times(xp.asarray(data.positions), beta, b)
        if point_source.h0 is None:
            return t[..., 1:] - t[..., :1]
        return (t[..., 1:] - t[..., :1]) * (tracer.h0 / point_source.h0)
    if point_source.h0 is not None:  # a value that would otherwise be silently unused
        raise TypeError(
            "PointSource.h0 scales a MultiPlaneTracer's delays; a single-plane lens's delays "
            "take time_delay_distance (H0 follows from it with the redshifts)"
        )
    if beta.ndim > 1:  # one source per batch member, for its images
        beta = beta[:, None, :]
    phi = fermat_potential(tracer, xp.asarray(data.positions), beta, b)
    return time_delay_days(phi[..., 1:] - phi[..., :1], point_source.time_delay_distance)


def time_delay_chi_squared(
    tracer: Tracer, point_source: PointSource, data: PointSourceData, backend: str | None = None
) -> Any:
    """``sum_{i >= 1} (Delta t_i,obs - Delta t_i)^2 / sigma_t,i^2``; 0 without delays."""
    if data.delays is None:
        return 0.0
    b = _backend_for(tracer, point_source, backend)
    xp = array_module(b)
    r = (xp.asarray(data.delays) - model_delays(tracer, point_source, data, b)) / xp.asarray(
        data.delay_sigma
    )
    return xp.sum(r * r, axis=-1)


@dataclass(frozen=True, eq=False)
class PointSourceLikelihood(ValueIdentity):
    """``log L = -(chi^2_positions + chi^2_fluxes + chi^2_delays) / 2`` of one point source.

    Parameters
    ----------
    data : PointSourceData
    positions : str
        ``"image"`` (solve for the model's images; needs ``solver``), ``"source"`` (the
        source-plane approximation) or ``"none"`` (positions not scored; they still place the
        flux and delay terms).
    solver : ImageSolver, optional
        For ``positions = "image"``: its window must hold every image (default
        ``ImageSolver()``).
    magnification_limit : float
        For ``positions = "image"``: model images with ``|mu|`` below it are not counted
        (lenstronomy's ``magnification_limit``), so that a faint central image, which a lens
        shallower than isothermal makes and observations rarely see, does not make the image
        count differ (``-inf``). Default 0: every image counts.
    in_imaging : bool
        The images are also seen in the imaging data (a quasar's or a supernova's): beside
        imaging, a :class:`~twinlens.likelihood.joint.JointLikelihood` then models them as point
        images at the observed positions, their fluxes solved with the linear light
        (:class:`~twinlens.imaging.point_images.PointImages`). Default False.
    imaging_positions : {"observed", "model"}
        With ``in_imaging``, where the images are placed in the imaging: ``"observed"`` (the
        default; fixed work, rendered once) or ``"model"``, the model's image that Newton's
        steps reach from each observed one (:func:`model_images`), so that the imaging data
        constrain the lens and the source through where the images fall. A vector whose
        images the steps do not find (fewer model images, or one beyond their reach), or one
        of whose images puts less than ``MIN_SEEN`` of its light in the fitted pixels, has
        log-likelihood ``-inf``.
    """

    data: PointSourceData = static_field()
    positions: str = static_field(default="image")
    solver: Any = static_field(default=None)
    magnification_limit: float = static_field(default=0.0)
    in_imaging: bool = static_field(default=False)
    imaging_positions: str = static_field(default="observed")

    def __post_init__(self) -> None:
        if not isinstance(self.data, PointSourceData):
            raise TypeError(
                f"PointSourceLikelihood.data must be a PointSourceData, got "
                f"{type(self.data).__name__}"
            )
        if self.positions not in POSITION_LIKELIHOODS:
            raise ValueError(
                f"PointSourceLikelihood.positions must be one of "
                f"{', '.join(POSITION_LIKELIHOODS)}, got {shown(self.positions)}"
            )
        if self.positions == "image" and self.solver is None:
            object.__setattr__(self, "solver", ImageSolver())
        if self.solver is not None and not isinstance(self.solver, ImageSolver):
            raise TypeError(
                f"PointSourceLikelihood.solver must be an ImageSolver, got "
                f"{type(self.solver).__name__}"
            )
        if self.solver is not None:
            offset = np.abs(np.asarray(self.data.positions) - np.asarray(self.solver.centre))
            if offset.max() >= self.solver.window:
                raise ValueError(
                    f"PointSourceLikelihood: an observed image lies {offset.max():g} arcsec from "
                    f"the solver's centre {self.solver.centre}, outside its window of +-"
                    f"{self.solver.window:g} arcsec (no model image could match it); widen "
                    "ImageSolver.window"
                )
        limit = self.magnification_limit
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 <= limit < 1e30:
            raise ValueError(
                "PointSourceLikelihood.magnification_limit must be a number >= 0, "
                f"got {shown(limit)}"
            )
        object.__setattr__(self, "magnification_limit", float(limit))
        if not isinstance(self.in_imaging, (bool, np.bool_)):
            raise ValueError(
                "PointSourceLikelihood.in_imaging must be true or false, "
                f"got {shown(self.in_imaging)}"
            )
        object.__setattr__(self, "in_imaging", bool(self.in_imaging))
        if self.imaging_positions not in IMAGING_POSITIONS:
            raise ValueError(
                f"PointSourceLikelihood.imaging_positions must be one of "
                f"{', '.join(IMAGING_POSITIONS)}, got {self.imaging_positions!r}"
            )
        if self.imaging_positions == "model" and not self.in_imaging:
            raise ValueError(
                'PointSourceLikelihood.imaging_positions = "model" places the images in the '
                "imaging: it needs in_imaging = True"
            )
        if self.solver is not None and self.data.n_images > self.solver.max_images:
            raise ValueError(
                f"PointSourceLikelihood: {self.data.n_images} observed images but the solver "
                f"has max_images = {self.solver.max_images}; raise it"
            )
        super().__post_init__()

    @property
    def point_images(self) -> PointImages | None:
        """The observed images as fixed imaging components (with ``in_imaging`` at the
        observed positions), else None."""
        if self.in_imaging and self.imaging_positions == "observed":
            return PointImages(self.data.positions)
        return None

    @property
    def images_move(self) -> bool:
        """Whether the imaging's point images sit at the model's positions (per vector)."""
        return self.in_imaging and self.imaging_positions == "model"

    def point_images_at(self, tracer: Tracer, point_source: PointSource) -> PointImages | None:
        """The images the imaging holds for this lens and source (fixed ones, or the model's
        positions computed now), or None without ``in_imaging``; a clear error when the model
        has no image near an observed one (its log-likelihood is ``-inf``)."""
        if not self.images_move:
            return self.point_images
        positions, found = model_images(tracer, point_source, self.data, "numpy")
        if not bool(found):
            raise ValueError(
                "PointSourceLikelihood: the model does not make one image near each observed "
                "image (imaging_positions = 'model'), so the imaging has no images to place"
            )
        return PointImages(np.asarray(positions, dtype=float))

    def chi_squared(
        self, tracer: Tracer, point_source: PointSource, backend: str | None = None
    ) -> dict[str, Any]:
        """The chi^2 of each term with data, by name (``positions``, ``fluxes``,
        ``delays``)."""
        b = _backend_for(tracer, point_source, backend)
        out: dict[str, Any] = {}
        if self.positions == "image":
            out["positions"] = image_plane_chi_squared(
                tracer, point_source, self.data, self.solver, b, self.magnification_limit
            )
        elif self.positions == "source":
            out["positions"] = source_plane_chi_squared(tracer, point_source, self.data, b)
        if self.data.fluxes is not None:
            out["fluxes"] = flux_chi_squared(tracer, point_source, self.data, b)
        if self.data.delays is not None:
            out["delays"] = time_delay_chi_squared(tracer, point_source, self.data, b)
        return out

    def log_likelihood(
        self, tracer: Tracer, point_source: PointSource, backend: str | None = None
    ) -> Any:
        """``-chi^2 / 2`` summed over the terms (``-inf`` for a wrong number of images)."""
        b = _backend_for(tracer, point_source, backend)
        terms = self.chi_squared(tracer, point_source, b)
        total: Any = 0.0
        for value in terms.values():
            total = total + value
        xp = array_module(b)
        total = xp.asarray(total)
        return xp.where(total < _ABSENT, -0.5 * total, -xp.inf)

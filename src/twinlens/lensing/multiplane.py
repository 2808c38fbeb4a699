"""Ray tracing through several lens planes.

Lens galaxies at redshifts ``z_1 < z_2 < ... < z_n`` deflect a ray in turn; the source lies
at ``z_s``, behind all of them. A ray seen at ``theta`` crosses plane ``j`` at

    ``theta_j = theta - sum_{i<j} beta_ij alpha_i(theta_i)``,
    ``beta_ij = D_ij D_s / (D_j D_is)``,

(``D_j`` observer to plane ``j``, ``D_ij`` plane ``i`` to plane ``j``, ``D_s`` and ``D_is``
to the source: angular-diameter distances) and leaves the source plane at
``beta = theta_s = theta - sum_i alpha_i(theta_i)`` (``beta_is = 1``).

**Convention.** Each profile's parameters define its *reduced* deflection toward the final
source redshift ``z_s``, ``alpha_i = (D_is / D_s) alpha_hat_i`` (``alpha_hat_i`` the physical
deflection angle): an Einstein radius is the one the galaxy would have alone in front of the
source at ``z_s``. This is lenstronomy's MultiPlane convention, so parameters carry over
unchanged. With one plane, ``beta = theta - alpha(theta)``: a :class:`MultiPlaneTracer` with
all lenses at one redshift equals a :class:`~twinlens.lensing.tracer.Tracer`.

The distance ratios ``beta_ij`` are computed once on the host, with
:mod:`astropy.cosmology`, and enter both backends as constants. They depend on the
cosmology's shape parameters (``Omega_m``, ...) but not on ``H0``: changing ``H0`` rescales
every distance alike. A search that varies the ratios themselves may give them as
``distance_ratios`` (numbers, or JAX arrays and tracers).

The hessian is that of the whole mapping, by the chain rule through the planes: with
``A_j = d theta_j / d theta`` and ``H_i`` the hessian of plane ``i``'s potential at
``theta_i``, ``A_j = I - sum_{i<j} beta_ij H_i A_i``, and ``d alpha / d theta = I - A_s``
(not symmetric in general: its off-diagonal entries are returned as they are).

**Arrival times.** With ``theta_{n+1} = beta`` and ``chi_i = (1 + z_i) D_i`` (for each
plane), the light seen at ``theta`` arrives at

    ``t(theta) = sum_i [ tau_i |theta_i - theta_{i+1}|^2 / 2 - T_i psi_i(theta_i) ] / c``,
    ``tau_i = (1 + z_i) D_i D_{i+1} / D_{i,i+1}``,   ``T_i = (1 + z_i) D_i D_s / D_is``,

(``D_{n+1} = D_s``, ``D_{n,n+1} = D_ns``) up to a constant, ``psi_i`` the summed reduced
potential of plane ``i`` (``grad psi_i = alpha_i``). The first sum is the geometric delay of
the broken path, each segment's at the redshift of its near end; the second the Shapiro delay
of each plane, ``(1 + z_i) D_i / c`` times its physical potential ``D_s / D_is psi_i``
(whose gradient is ``alpha_hat_i``). Fermat's principle recovers the lens equation: in a flat
universe ``tau_i = chi_i chi_{i+1} / (chi_{i+1} - chi_i)`` (comoving distances), and
``d t / d theta_i = 0`` is ``s_{i-1} - s_i = alpha_hat_i``, the change of the comoving
slope ``s_i = (x_{i+1} - x_i) / (chi_{i+1} - chi_i)`` of the ray (``x_i = chi_i theta_i``).
With one plane ``tau_1 = T_1 = D_dt`` and ``t = D_dt / c (|theta - beta|^2 / 2 - psi)``, the
single-plane arrival time exactly.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from twinlens.backend import resolve_backend
from twinlens.backend.concrete import is_concrete
from twinlens.fields import static_field
from twinlens.kernels import lensing
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.messages import shown
from twinlens.profiles.base import _numbers, assemble, positions

__all__ = ["Cosmology", "MultiPlaneTracer", "distance_ratios"]


class Cosmology:
    """An :mod:`astropy.cosmology` instance held by value (astropy cosmologies do not hash):
    equal when of one class with the same parameters, so equal tracers share compiled
    programs. ``astropy`` holds the cosmology itself."""

    __slots__ = ("astropy", "key")
    astropy: Any
    key: tuple

    def __init__(self, cosmology: Any) -> None:
        if isinstance(cosmology, Cosmology):
            cosmology = cosmology.astropy
        if not hasattr(cosmology, "angular_diameter_distance"):
            raise TypeError(
                "cosmology must be an astropy.cosmology instance (e.g. FlatLambdaCDM), got "
                f"{type(cosmology).__name__}"
            )
        self.astropy = cosmology
        # every parameter's exact value (astropy's repr rounds quantities to 8 digits); units
        # are astropy's fixed ones per parameter
        parameters = getattr(cosmology, "parameters", {})
        values = tuple(
            (name, repr(np.asarray(getattr(v, "value", v)).tolist()))
            for name, v in parameters.items()
        )
        self.key = (type(cosmology).__module__, type(cosmology).__qualname__, repr(cosmology))
        self.key += values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cosmology) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Cosmology({self.astropy!r})"

    def __reduce__(self) -> tuple:
        return (Cosmology, (self.astropy,))


def distance_ratios(lens_redshifts: Any, z_source: float, cosmology: Any = None) -> np.ndarray:
    """The ratios ``beta_ij = D_ij D_s / (D_j D_is)`` of the recursive lens equation.

    Parameters
    ----------
    lens_redshifts : sequence of float
        The planes' redshifts, strictly increasing, each >= 0.
    z_source : float
        The source redshift, greater than every lens redshift.
    cosmology : astropy.cosmology.FLRW, optional
        Default :func:`twinlens.cosmology.default_cosmology` (flat LambdaCDM, ``H0 = 70``,
        ``Omega_m = 0.3``).

    Returns
    -------
    numpy.ndarray, (n + 1, n)
        Row ``j`` holds ``beta_ij`` for the planes ``i < j`` in front of plane ``j`` (zero for
        ``i >= j``); the last row is the source plane, all ones.
    """
    from twinlens.cosmology import default_cosmology

    zs = tuple(float(z) for z in lens_redshifts)
    _check_plane_redshifts(zs, z_source)
    cosmo = default_cosmology() if cosmology is None else cosmology
    return _ratios(Cosmology(cosmo), zs, float(z_source)).copy()


def _check_plane_redshifts(zs: tuple[float, ...], z_source: Any) -> None:
    for z in zs:
        if not math.isfinite(z) or z < 0.0:
            raise ValueError(f"lens redshifts must be finite and >= 0, got {shown(z)}")
    if any(zs[k + 1] <= zs[k] for k in range(len(zs) - 1)):
        raise ValueError(f"lens redshifts must be strictly increasing, got {zs}")
    if isinstance(z_source, bool) or not isinstance(z_source, (int, float, np.number)):
        raise TypeError(f"z_source must be a real number, got {type(z_source).__name__}")
    z_s = float(z_source)
    if not math.isfinite(z_s) or (zs and not z_s > zs[-1]) or z_s <= 0.0:
        low = zs[-1] if zs else 0.0
        raise ValueError(
            f"z_source must be a finite redshift greater than every lens redshift "
            f"(z_source > {low:g}: the source lies behind every lens plane), got {shown(z_source)}"
        )


@lru_cache(maxsize=256)
def _ratios(cosmology: Cosmology, zs: tuple[float, ...], z_source: float) -> np.ndarray:
    """Read-only ``(n + 1, n)`` ratios, computed once per (cosmology, planes, source)."""
    from twinlens.cosmology import angular_diameter_distance  # astropy on first use

    cosmo = cosmology.astropy
    n = len(zs)
    d = [angular_diameter_distance(cosmo, 0.0, z) for z in zs]
    d_s = angular_diameter_distance(cosmo, 0.0, z_source)
    d_is = [angular_diameter_distance(cosmo, z, z_source) for z in zs]
    out = np.zeros((n + 1, n))
    for j in range(1, n):
        for i in range(j):
            d_ij = angular_diameter_distance(cosmo, zs[i], zs[j])
            out[j, i] = d_ij * d_s / (d[j] * d_is[i])
    out[n, :] = 1.0  # D_is D_s / (D_s D_is), exactly
    out.flags.writeable = False
    return out


@lru_cache(maxsize=256)
def _delay_weights(
    cosmology: Cosmology, zs: tuple[float, ...], z_source: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(tau_i, T_i)``, Mpc, per plane: the geometric weight of the segment from plane ``i``
    to the next plane (the source plane after the last) and the weight of its potential."""
    from twinlens.cosmology import angular_diameter_distance

    cosmo = cosmology.astropy
    d = [angular_diameter_distance(cosmo, 0.0, z) for z in (*zs, z_source)]
    tau = []
    weight = []
    for i, z in enumerate(zs):
        d_next = angular_diameter_distance(cosmo, z, (*zs, z_source)[i + 1])
        d_is = angular_diameter_distance(cosmo, z, z_source)
        tau.append((1.0 + z) * d[i] * d[i + 1] / d_next)
        weight.append((1.0 + z) * d[i] * d[-1] / d_is)
    return tuple(tau), tuple(weight)


@dataclass(frozen=True, eq=False)
class MultiPlaneTracer(Tracer):
    """Lens galaxies on several planes (by their redshifts) and sources behind them all.

    The multi-plane counterpart of :class:`~twinlens.lensing.tracer.Tracer`, with the same
    methods: ``deflections`` (``theta - beta``), ``source_plane`` (``beta``), ``hessian`` (of
    the whole mapping), ``magnification``, ``convergence`` (half the trace of the hessian),
    ``image``, and it is accepted by :class:`~twinlens.FitImaging`,
    :class:`~twinlens.ImagingLikelihood`, :class:`~twinlens.Model` and
    :class:`~twinlens.ImageSolver`. See :mod:`twinlens.lensing.multiplane` for the equations and
    the convention (each profile's parameters define its reduced deflection toward
    ``z_source``, as in lenstronomy).

    Parameters
    ----------
    lenses : Galaxy or tuple of Galaxy
        Each with a ``redshift`` in ``[0, z_source)``; galaxies with equal redshifts share a
        plane. Their light is seen at the ray's position on their own plane.
    sources : Galaxy or tuple of Galaxy
        Light at ``z_source`` (a source galaxy's ``redshift`` must be None or ``z_source``; any
        mass it holds is ignored).
    z_source : float
        The source redshift, greater than every lens redshift.
    cosmology : astropy.cosmology.FLRW, optional
        For the distance ratios; default flat LambdaCDM with ``H0 = 70``, ``Omega_m = 0.3``
        (:func:`twinlens.cosmology.default_cosmology`). Held by value (:class:`Cosmology`).
    distance_ratios : array (n_planes + 1, n_planes), optional
        The ratios ``beta_ij`` given directly instead of from ``cosmology`` (row ``j``, column
        ``i``; the last row is the source plane and should hold ones). They are a pytree leaf:
        JAX arrays and tracers are accepted, so a search may vary them. Give ``cosmology`` or
        ``distance_ratios``, not both.
    """

    z_source: Any = static_field(default=None)
    cosmology: Any = static_field(default=None)
    distance_ratios: Any = None

    def __post_init__(self) -> None:
        if self.cosmology is not None and self.distance_ratios is not None:
            raise ValueError(
                "MultiPlaneTracer: give cosmology or distance_ratios, not both (the ratios "
                "follow from the cosmology)"
            )
        if self.cosmology is not None:
            object.__setattr__(self, "cosmology", Cosmology(self.cosmology))
        if isinstance(self.distance_ratios, (list, tuple)):  # nested lists index as arrays
            object.__setattr__(self, "distance_ratios", np.asarray(self.distance_ratios, float))
        if self.z_source is None:
            raise TypeError("MultiPlaneTracer.z_source is required (the source redshift)")
        if isinstance(self.z_source, bool) or not isinstance(
            self.z_source, (int, float, np.integer, np.floating)
        ):
            raise TypeError(
                f"MultiPlaneTracer.z_source must be a real number, got "
                f"{type(self.z_source).__name__}"
            )
        object.__setattr__(self, "z_source", float(self.z_source))
        if not math.isfinite(self.z_source) or self.z_source <= 0.0:
            raise ValueError(
                f"MultiPlaneTracer.z_source must be a finite redshift > 0, got {self.z_source!r}"
            )
        super().__post_init__()
        for i, g in enumerate(self.lenses):
            if g.redshift is None:
                raise ValueError(
                    f"MultiPlaneTracer.lenses[{i}].redshift is None: every lens galaxy of a "
                    "multi-plane tracer needs a redshift in [0, z_source)"
                )
            if not g.redshift < self.z_source:
                raise ValueError(
                    f"MultiPlaneTracer.lenses[{i}].redshift must be in [0, z_source) = "
                    f"[0, {self.z_source:g}) (the source lies behind every lens plane), got "
                    f"{g.redshift!r}"
                )
        for i, g in enumerate(self.sources):
            if g.redshift is not None and g.redshift != self.z_source:
                raise ValueError(
                    f"MultiPlaneTracer.sources[{i}].redshift must be None or z_source = "
                    f"{self.z_source:g} (sources lie on the last plane), got {g.redshift!r}"
                )
        if self.pixelizations:
            raise ValueError(
                "MultiPlaneTracer does not support pixelised sources yet; use light profiles"
            )
        if self.distance_ratios is not None:
            n = len(self.plane_redshifts)
            shape = tuple(np.shape(self.distance_ratios))
            if shape != (n + 1, n):
                raise ValueError(
                    f"MultiPlaneTracer.distance_ratios must have shape (n_planes + 1, n_planes) "
                    f"= {(n + 1, n)}, got {shape}"
                )
            if is_concrete(self.distance_ratios) and not np.all(
                np.isfinite(np.asarray(self.distance_ratios))
            ):
                raise ValueError("MultiPlaneTracer.distance_ratios must be finite")

    # -- planes -----------------------------------------------------------------------------

    @property
    def plane_redshifts(self) -> tuple[float, ...]:
        """The lens planes' redshifts, increasing."""
        return tuple(sorted({float(g.redshift) for g in self.lenses}))

    @property
    def ratios(self) -> Any:
        """``beta_ij``, ``(n_planes + 1, n_planes)``: ``distance_ratios`` when given, else from
        the cosmology (computed on the host once per cosmology and redshifts)."""
        if self.distance_ratios is not None:
            return self.distance_ratios
        return _ratios(self.cosmology_in_use, self.plane_redshifts, self.z_source)

    def _planes(self) -> list[list]:
        """The mass profiles on each plane, in redshift order."""
        index = {z: j for j, z in enumerate(self.plane_redshifts)}
        planes: list[list] = [[] for _ in index]
        for g in self.lenses:
            planes[index[float(g.redshift)]].extend(g.mass)
        return planes

    def _plane_of(self, galaxy: Galaxy) -> int:
        return self.plane_redshifts.index(float(galaxy.redshift))

    def _ratio(self, ratios: Any, j: int, i: int) -> Any:
        if j == len(self.plane_redshifts):
            return 1.0 if self.distance_ratios is None else ratios[j, i]
        if isinstance(ratios, np.ndarray):
            return float(ratios[j, i])
        return ratios[j, i]

    def _ray_positions(
        self, x: Any, y: Any, backend: str, hessian: bool = False
    ) -> tuple[list, list, list, tuple]:
        """``(xs, ys, jac, total)``: the ray's position on every plane and the source plane
        (``n_planes + 1`` entries each); with ``hessian``, ``sum_i H_i A_i`` as
        ``(m00, m01, m10, m11)`` in ``jac`` (else empty); and the total deflection
        ``theta - beta = sum_i alpha_i(theta_i)``."""
        planes = self._planes()
        n = len(planes)
        ratios = self.ratios
        xs: list = []
        ys: list = []
        alphas: list = []
        products: list = []  # H_i A_i per plane, (m00, m01, m10, m11)
        total: tuple = (0.0, 0.0)
        for j in range(n + 1):
            tx: Any = 0.0  # sum_{i<j} beta_ij alpha_i
            ty: Any = 0.0
            a = [1.0, 0.0, 0.0, 1.0]  # A_j
            for i in range(j):
                b = self._ratio(ratios, j, i)
                tx = tx + b * alphas[i][0]
                ty = ty + b * alphas[i][1]
                if hessian:
                    a = [a[k] - b * products[i][k] for k in range(4)]
            xj, yj = x - tx, y - ty
            xs.append(xj)
            ys.append(yj)
            if j == n:
                total = (tx, ty)
                break
            ax: Any = 0.0
            ay: Any = 0.0
            hxx: Any = 0.0
            hxy: Any = 0.0
            hyy: Any = 0.0
            for p in planes[j]:
                dx, dy = p._deflections(xj, yj, backend)
                ax, ay = ax + dx, ay + dy
                if hessian:
                    h = p._hessian(xj, yj, backend)
                    hxx, hxy, hyy = hxx + h[0], hxy + h[1], hyy + h[2]
            alphas.append((ax, ay))
            if hessian:
                products.append(
                    (
                        hxx * a[0] + hxy * a[2],
                        hxx * a[1] + hxy * a[3],
                        hxy * a[0] + hyy * a[2],
                        hxy * a[1] + hyy * a[3],
                    )
                )
        jac: list = []
        if hessian:
            jac = [0.0, 0.0, 0.0, 0.0]
            for i in range(n):
                b = self._ratio(ratios, n, i)
                jac = [jac[k] + b * products[i][k] for k in range(4)]
        return xs, ys, jac, total

    # -- coordinate-array internals ---------------------------------------------------------

    def _deflections(self, x: Any, y: Any, backend: str, grid: Any = None) -> tuple[Any, Any]:
        """``theta - beta``: the total deflection from the image plane to the source plane."""
        ax, ay = self._ray_positions(x, y, backend)[3]
        return ax, ay

    def _hessian_components(self, x: Any, y: Any, backend: str) -> tuple[Any, Any, Any, Any]:
        """``d alpha / d theta`` as ``(xx, xy, yx, yy)`` (``xy = d alpha_x / d y``)."""
        jac = self._ray_positions(x, y, backend, hessian=True)[2]
        zero = x * 0
        return zero + jac[0], zero + jac[1], zero + jac[2], zero + jac[3]

    def _light_terms(self, x: Any, y: Any, backend: str, grid: Any = None) -> tuple[Any, list]:
        """``(fixed, columns)`` as :meth:`Tracer._light_terms`: each lens galaxy's light at the
        ray's position on its own plane, the sources' at the source plane; linear profiles'
        unit-intensity images in profile order."""
        xs, ys = self._ray_positions(x, y, backend)[:2]
        fixed: Any = 0.0
        columns: list = []
        placed = [(g, self._plane_of(g)) for g in self.lenses]
        placed += [(g, len(xs) - 1) for g in self.sources]
        for g, j in placed:
            for p in g.light:
                if p.n_linear:
                    columns += p._columns(xs[j], ys[j], backend)
                else:
                    fixed = fixed + p._image(xs[j], ys[j], backend)
        return fixed, columns

    # -- public, positions in ---------------------------------------------------------------

    def ray_shoot(self, xy: Any, backend: str | None = None) -> Any:
        """``beta``, the source-plane position of rays seen at ``xy (..., 2)`` (as
        :meth:`source_plane`; lenstronomy's name)."""
        return self.source_plane(xy, backend)

    def plane_positions(self, xy: Any, backend: str | None = None) -> Any:
        """The ray's position on every lens plane and the source plane,
        ``(n_planes + 1, ..., 2)``, arcsec."""
        b = self._backend(xy, backend)
        x, y, xp = positions(xy, b)
        xs, ys = self._ray_positions(x, y, b)[:2]
        return xp.stack(
            [assemble(xp, [x * 0 + u, y * 0 + v], (2,)) for u, v in zip(xs, ys, strict=True)]
        )

    def hessian(self, xy: Any, backend: str | None = None) -> Any:
        """``d alpha / d theta`` of the whole mapping (``alpha = theta - beta``), ``(..., 2, 2)``
        as ``[[d alpha_x/dx, d alpha_x/dy], [d alpha_y/dx, d alpha_y/dy]]`` (not symmetric
        in general)."""
        b = self._backend(xy, backend)
        x, y, xp = positions(xy, b)
        return assemble(xp, list(self._hessian_components(x, y, b)), (2, 2))

    def magnification(self, xy: Any, backend: str | None = None) -> Any:
        """Signed magnification ``1 / det(d beta / d theta)``."""
        h = self.hessian(xy, backend)
        return 1.0 / lensing.jacobian_determinant(
            h[..., 0, 0], h[..., 0, 1], h[..., 1, 1], h[..., 1, 0]
        )

    def convergence(self, xy: Any, backend: str | None = None) -> Any:
        """The effective convergence, half the trace of :meth:`hessian`."""
        h = self.hessian(xy, backend)
        return 0.5 * (h[..., 0, 0] + h[..., 1, 1])

    def potential(self, xy: Any, backend: str | None = None) -> Any:
        """Not defined: a multi-plane mapping has no single lensing potential."""
        raise NotImplementedError(
            "a multi-plane lens has no single lensing potential (its hessian is not "
            "symmetric); for time delays use MultiPlaneTracer.arrival_times or time_delays"
        )

    @property
    def cosmology_in_use(self) -> Cosmology:
        """``cosmology``, or the default one (:func:`twinlens.cosmology.default_cosmology`)."""
        from twinlens.cosmology import default_cosmology

        return self.cosmology or Cosmology(default_cosmology())

    @property
    def h0(self) -> float:
        """The Hubble constant of the tracer's cosmology, km/s/Mpc."""
        return float(self.cosmology_in_use.astropy.H0.to_value("km / (s Mpc)"))

    def delay_weights(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """``(tau, T)``, Mpc, one entry per plane in redshift order: the weights of the
        geometric and potential terms of :meth:`arrival_times`, ``tau_i = (1 + z_i) D_i
        D_{i+1} / D_{i,i+1}`` and ``T_i = (1 + z_i) D_i D_s / D_is``, from the cosmology.

        Raises ValueError for a tracer built from ``distance_ratios``: the ratios fix the ray
        paths but not the distances, which the delays need."""
        if self.distance_ratios is not None:
            raise ValueError(
                "MultiPlaneTracer built from distance_ratios has no distances: time delays "
                "need the cosmology's angular-diameter distances (give cosmology= instead)"
            )
        return _delay_weights(self.cosmology_in_use, self.plane_redshifts, self.z_source)

    def arrival_times(self, xy: Any, source: Any = None, backend: str | None = None) -> Any:
        """Arrival times of light seen at ``xy (..., 2)``, days, up to a constant common to
        all images (only differences are observable).

        ``t = sum_i [tau_i |theta_i - theta_{i+1}|^2 / 2 - T_i psi_i(theta_i)] / c`` over the
        planes, the ray traced through them (:mod:`twinlens.lensing.multiplane` derives it). With
        one plane it is :func:`twinlens.lensing.point_sources.arrival_times` with
        ``D_dt = (1 + z_d) D_d D_s / D_ds``.

        Parameters
        ----------
        xy : array, (..., 2)
            Image-plane positions ``theta``, arcsec.
        source : array, (2,) or (..., 2), optional
            The source position ``beta`` that ends the last segment, arcsec; ``(..., 2)``:
            one source per batch member of ``xy (..., n, 2)``. Default: each ray's own
            source-plane position (the same at images; elsewhere ``t`` then is not a Fermat
            potential of a fixed source).
        backend : str, optional
            ``"numba"``, ``"jax"`` or ``"numpy"``.

        Returns
        -------
        array, (...)
            Days. Raises ValueError for a tracer built from ``distance_ratios``.
        """
        from twinlens.cosmology import DAYS_PER_MPC_ARCSEC2

        tau, weight = self.delay_weights()
        b = resolve_backend(backend, getattr(xy, "xy", xy), source, *_numbers(self))
        x, y, xp = positions(xy, b)
        xs, ys = self._ray_positions(x, y, b)[:2]
        if source is not None:
            beta = xp.asarray(source)
            if beta.ndim < 1 or beta.shape[-1] != 2:
                raise ValueError(
                    f"source must have shape (..., 2) holding (x, y), got {beta.shape}"
                )
            if beta.ndim == np.ndim(getattr(xy, "xy", xy)) - 1 and beta.ndim > 1:
                beta = beta[..., None, :]  # one source per batch member, for (..., n, 2)
            xs[-1], ys[-1] = beta[..., 0], beta[..., 1]
        t: Any = 0.0
        for i, plane in enumerate(self._planes()):
            dx = xs[i] - xs[i + 1]
            dy = ys[i] - ys[i + 1]
            psi: Any = 0.0
            for p in plane:
                psi = psi + p._potential(xs[i], ys[i], b)
            t = t + (tau[i] * (0.5 * (dx * dx + dy * dy)) - weight[i] * psi)
        return (x * 0 + t) * DAYS_PER_MPC_ARCSEC2

    def time_delays(self, xy: Any, source: Any = None, backend: str | None = None) -> Any:
        """Delays of images ``xy (..., n, 2)`` relative to the first, ``t_i - t_0``, days
        (``(..., n)``; positive for an image that arrives after the first). Arguments as
        :meth:`arrival_times`."""
        t = self.arrival_times(xy, source, backend)
        return t - t[..., :1]

    def with_intensities(self, intensities: Any) -> MultiPlaneTracer:
        """As :meth:`Tracer.with_intensities`, keeping the redshifts and the cosmology."""
        single = Tracer(self.lenses, self.sources).with_intensities(intensities)
        return dataclasses.replace(self, lenses=single.lenses, sources=single.sources)

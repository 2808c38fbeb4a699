"""Galaxies and ray tracing through one lens plane.

A :class:`Tracer` holds lens galaxies (mass and light) and source galaxies (light). A ray seen
at ``theta`` left the source plane at ``beta = theta - alpha(theta)``, ``alpha`` the summed
deflection of every lens mass profile; the image is the lens light at ``theta`` plus the source
light at ``beta`` (surface brightness is conserved by lensing).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.backend import array_module, resolve_backend
from twinlens.backend.concrete import is_concrete
from twinlens.fields import ValueIdentity, static_field
from twinlens.kernels import lensing
from twinlens.memo import Recalled
from twinlens.messages import shown
from twinlens.profiles.base import MassProfile, _numbers, assemble, positions
from twinlens.profiles.light import LightProfile

__all__ = ["Galaxy", "Tracer"]


def _deflect(profile: MassProfile, x: Any, y: Any, backend: str) -> tuple[Any, Any]:
    return profile._deflections(x, y, backend)


def _shine(profile: LightProfile, x: Any, y: Any, backend: str) -> Any:
    return profile._columns(x, y, backend) if profile.n_linear else profile._image(x, y, backend)


def _light_quantity(profile: LightProfile) -> str:
    return "columns" if profile.n_linear else "image"


def _as_tuple(owner: object, name: str, kind: type) -> None:
    value = getattr(owner, name)
    if isinstance(value, kind) or not isinstance(value, (tuple, list)):
        value = (value,)  # one profile; anything else fails the check below, named
    value = tuple(value)
    for i, v in enumerate(value):
        if not isinstance(v, kind):
            raise TypeError(
                f"{type(owner).__name__}.{name}[{i}] must be a {kind.__name__}, got "
                f"{type(v).__name__}"
            )
    object.__setattr__(owner, name, value)


def _is_pixelization(value: Any) -> bool:
    """Whether ``value`` is a pixelised source (:class:`~twinlens.inversion.Pixelization`,
    which marks itself so: the inversion room sits above lensing and is not imported here)."""
    return bool(getattr(type(value), "is_pixelization", False))


@dataclass(frozen=True, eq=False)
class Galaxy(ValueIdentity):
    """A galaxy: mass profiles (for a lens) and light profiles (lens light or source).

    Parameters
    ----------
    mass : profile or tuple of profiles
        :mod:`twinlens.mass` profiles.
    light : profile or tuple of profiles
        :mod:`twinlens.light` profiles (linear ones have their intensities solved by a fit).
        A :class:`~twinlens.inversion.Pixelization` given here is moved to
        ``pixelization``.
    pixelization : Pixelization, optional
        A pixelised source (a source galaxy's light reconstructed on a mesh; see
        :doc:`/pixelised`), as autolens' ``Galaxy(pixelization=...)``.
    redshift : float, optional
        The galaxy's redshift, a finite number >= 0 (static configuration, not a fit
        parameter). A :class:`Tracer` ignores it (one lens plane); a
        :class:`~twinlens.lensing.multiplane.MultiPlaneTracer` puts each lens galaxy on the plane
        of its redshift. None (the default) for single-plane lensing.
    """

    mass: Any = ()
    light: Any = ()
    pixelization: Any = None
    redshift: Any = static_field(default=None)

    def __post_init__(self) -> None:
        light = self.light if isinstance(self.light, (tuple, list)) else (self.light,)
        pixelizations = [p for p in light if _is_pixelization(p)]
        if pixelizations:  # Galaxy(light=Pixelization(...)): the pixelization's own field
            if self.pixelization is not None or len(pixelizations) > 1:
                raise ValueError("Galaxy: give one Pixelization (light or pixelization), not two")
            object.__setattr__(self, "pixelization", pixelizations[0])
            object.__setattr__(self, "light", tuple(p for p in light if not _is_pixelization(p)))
        if self.pixelization is not None and not _is_pixelization(self.pixelization):
            raise TypeError(
                "Galaxy.pixelization must be a Pixelization, got "
                f"{type(self.pixelization).__name__}"
            )
        _as_tuple(self, "mass", MassProfile)
        _as_tuple(self, "light", LightProfile)
        if self.redshift is not None:
            object.__setattr__(self, "redshift", _check_redshift(self.redshift))
        super().__post_init__()


def _check_redshift(z: Any) -> float:
    if isinstance(z, bool) or not isinstance(z, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"Galaxy.redshift must be a real number >= 0 (or None), got {type(z).__name__}"
        )
    value = float(z)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(
            f"Galaxy.redshift must be a finite redshift >= 0 (or None), got {shown(z)}"
        )
    return value


@dataclass(frozen=True, eq=False)
class Tracer(ValueIdentity):
    """Lens galaxies in one plane and source galaxies behind it.

    Parameters
    ----------
    lenses : Galaxy or tuple of Galaxy
        Their mass deflects; their light is seen directly.
    sources : Galaxy or tuple of Galaxy
        Their light is seen through the lenses (any mass they hold is ignored: one lens plane).
    """

    lenses: Any = ()
    sources: Any = ()

    def __post_init__(self) -> None:
        _as_tuple(self, "lenses", Galaxy)
        _as_tuple(self, "sources", Galaxy)
        super().__post_init__()

    # -- coordinate-array internals (used by the likelihood) -------------------------------
    #
    # The sums over profiles are where the memo hooks in (no profile knows about it): an
    # image-plane field of a profile with fixed inputs is recalled from twinlens.memo, times
    # its free linear parameter if it has one; everything else is evaluated directly.

    def _has_free_values(self) -> bool:
        """Whether some parameter is a tracer or a batch column: the concrete ones are then
        the fixed ones, and the memo may store their fields at once. With every value
        concrete it cannot tell, and stores a field only when it is asked for twice."""
        # None: a galaxy without a pixelization (no value, fixed or free)
        return not all(is_concrete(v) for v in _numbers(self) if v is not None)

    def _mass_split(
        self, x: Any, y: Any, backend: str, grid: Any, eager: bool
    ) -> tuple[list[Recalled], list]:
        """``(recalled, direct)``: stored deflection fields, and the profiles to evaluate.
        ``grid`` is the value-identity grid ``x, y`` come from, if any (see the memo).

        A sum of profiles (:class:`~twinlens.mass.MassSum`) whose fields are all fixed is one
        stored field; otherwise its parts are taken one by one, as a galaxy's own profiles:
        the fixed ones recalled, the others evaluated (on numba, in the fused loop)."""
        recalled: list[Recalled] = []
        direct: list = []

        def recall(p: MassProfile) -> Recalled | None:
            linear = p.linear_parameter
            return memo.recall(p, "deflections", x, y, backend, _deflect, linear, grid, eager)

        for profile in (p for g in self.lenses for p in g.mass):
            whole = recall(profile)
            if whole is not None:
                recalled.append(whole)
                continue
            for p in profile.summands():
                r = None if p is profile else recall(p)  # a lone profile was asked above
                (direct if r is None else recalled).append(p if r is None else r)
        return recalled, direct

    @staticmethod
    def _sum_deflections(
        recalled: list[Recalled], direct: list, x: Any, y: Any, backend: str
    ) -> tuple[Any, Any]:
        ax: Any = 0.0
        ay: Any = 0.0
        for r in recalled:
            dx, dy = r.value(backend)
            ax, ay = ax + dx, ay + dy
        for p in direct:
            dx, dy = p._deflections(x, y, backend)
            ax, ay = ax + dx, ay + dy
        return ax, ay

    def _deflections(self, x: Any, y: Any, backend: str, grid: Any = None) -> tuple[Any, Any]:
        split = self._mass_split(x, y, backend, grid, self._has_free_values())
        return self._sum_deflections(*split, x, y, backend)

    def _light_terms(self, x: Any, y: Any, backend: str, grid: Any = None) -> tuple[Any, list]:
        """``(fixed, columns)``: the summed image of parametric light profiles (``0.0`` when
        there is none) and the unit-intensity images of linear ones, in profile order.

        On numba the whole tracer runs as one compiled loop when every profile allows it
        (:mod:`twinlens.lensing.fused`)."""
        eager = self._has_free_values()
        recalled_mass, direct_mass = self._mass_split(x, y, backend, grid, eager)
        # lens light is seen on the image plane: recalled where the memo applies
        lens_slots = [
            memo.recall(
                p, _light_quantity(p), x, y, backend, _shine, p.linear_parameter, grid, eager
            )
            or p
            for g in self.lenses
            for p in g.light
        ]
        sources = [p for g in self.sources for p in g.light]
        direct_lens = [s for s in lens_slots if not isinstance(s, Recalled)]
        stored_images = [s for s in lens_slots if isinstance(s, Recalled) and s.kind == "array"]
        computed = None
        if backend == "numba" and getattr(x, "ndim", 0) == 1:
            from twinlens.lensing.fused import fused_light

            computed = fused_light(
                direct_mass, direct_lens, sources, x, y, tuple(recalled_mass), tuple(stored_images)
            )
        if computed is None:
            ax, ay = self._sum_deflections(recalled_mass, direct_mass, x, y, backend)
            fixed: Any = 0.0
            for r in stored_images:
                fixed = fixed + r.value(backend)
            columns: list = []
            for profiles, px, py in ((direct_lens, x, y), (sources, x - ax, y - ay)):
                for p in profiles:
                    if p.n_linear:
                        columns += p._columns(px, py, backend)
                    else:
                        fixed = fixed + p._image(px, py, backend)
            computed = fixed, columns
        fixed, direct_columns = computed
        # the columns in profile order: recalled ones in their slots
        it = iter(direct_columns)
        columns = []
        for slot in (*lens_slots, *sources):
            if isinstance(slot, Recalled):
                if slot.kind == "list":
                    columns += slot.value(backend)
            else:
                columns += [next(it) for _ in range(slot.n_linear)]
        return fixed, columns

    @property
    def linear_profiles(self) -> list[LightProfile]:
        """The linear light profiles, in the order their intensities are solved."""
        return [p for g in (*self.lenses, *self.sources) for p in g.light if p.n_linear]

    @property
    def pixelizations(self) -> list[Any]:
        """The pixelised sources (:class:`~twinlens.inversion.Pixelization`), in galaxy
        order (a fit takes at most one, in a source galaxy)."""
        return [g.pixelization for g in (*self.lenses, *self.sources) if g.pixelization is not None]

    @property
    def n_linear(self) -> int:
        """Intensities a fit solves for."""
        return sum(p.n_linear for p in self.linear_profiles)

    # -- public, positions in -------------------------------------------------------------

    def _backend(self, xy: Any, backend: str | None) -> str:
        return resolve_backend(backend, getattr(xy, "xy", xy), *_numbers(self))

    def deflections(self, xy: Any, backend: str | None = None) -> Any:
        """Summed deflection of the lens galaxies, ``(..., 2)``, arcsec."""
        b = self._backend(xy, backend)
        x, y, xp = positions(xy, b)
        ax, ay = self._deflections(x, y, b)
        return assemble(xp, [x * 0 + ax, y * 0 + ay], (2,))

    def source_plane(self, xy: Any, backend: str | None = None) -> Any:
        """``beta = theta - alpha(theta)`` for image positions ``xy (..., 2)``."""
        b = self._backend(xy, backend)
        x, y, xp = positions(xy, b)
        ax, ay = self._deflections(x, y, b)
        return assemble(xp, [x - ax, y - ay], (2,))

    def image(self, xy: Any, backend: str | None = None) -> Any:
        """Unconvolved surface brightness at image positions ``xy (..., 2)``: lens light plus
        lensed source light, linear profiles at unit intensity. A pixelised source has no
        image until fitted (ValueError)."""
        if self.pixelizations:
            raise ValueError(
                "a pixelised source has no image of its own until it is fitted: use FitImaging "
                "(its model_image), or give the source light profiles"
            )
        b = self._backend(xy, backend)
        x, y, _ = positions(xy, b)
        fixed, columns = self._light_terms(x, y, b)
        out = x * 0 + fixed
        for c in columns:
            out = out + c
        return out

    def hessian(self, xy: Any, backend: str | None = None) -> Any:
        """Summed hessian of the lens galaxies' potential at ``xy``, ``(..., 2, 2)``."""
        b = self._backend(xy, backend)
        xp = array_module(b)
        h = xp.zeros((*xp.shape(getattr(xy, "xy", xy))[:-1], 2, 2))
        for g in self.lenses:
            for p in g.mass:
                h = h + p.hessian(xy, b)
        return h

    def potential(self, xy: Any, backend: str | None = None) -> Any:
        """Summed lensing potential of the lens galaxies at ``xy (..., 2)``, arcsec^2 (each
        profile's is zero at its centre; only differences between positions are physical)."""
        b = self._backend(xy, backend)
        xp = array_module(b)
        total = xp.zeros(xp.shape(getattr(xy, "xy", xy))[:-1])
        for g in self.lenses:
            for p in g.mass:
                total = total + p.potential(xy, b)
        return total

    def magnification(self, xy: Any, backend: str | None = None) -> Any:
        """Signed magnification of the lens galaxies' summed mass at ``xy``."""
        h = self.hessian(xy, backend)
        return lensing.magnification(h[..., 0, 0], h[..., 0, 1], h[..., 1, 1])

    def convergence(self, xy: Any, backend: str | None = None) -> Any:
        """Summed convergence of the lens galaxies at ``xy (..., 2)`` (profiles without one,
        such as external shear, add nothing)."""
        b = self._backend(xy, backend)
        xp = array_module(b)
        total = xp.zeros(xp.shape(getattr(xy, "xy", xy))[:-1])
        for g in self.lenses:
            for p in g.mass:
                try:
                    total = total + p.convergence(xy, b)
                except NotImplementedError:
                    continue
        return total

    def einstein_radius(
        self,
        centre: tuple[float, float] | None = None,
        r_max: float = 10.0,
        backend: str | None = None,
    ) -> float:
        """The effective Einstein radius of the lenses' summed mass, arcsec: the radius ``R`` of
        the circle about ``centre`` (default: the first lens profile's centre) within which the
        mean convergence is 1. It is what the data constrain whatever the split between mass
        components. NaN when the mean convergence never reaches 1 between 0.001" and
        ``r_max``.

        By Gauss's theorem (``div alpha = 2 kappa``) the mean convergence within ``R`` is the
        radial deflection averaged around the circle, divided by ``R``: exact for any mass,
        point masses included, and external shear adds nothing."""
        from scipy.optimize import brentq

        if centre is None:
            centre = next(
                (
                    p.centre
                    for g in self.lenses
                    for whole in g.mass
                    for p in whole.summands()  # a sum's first centred part, as a tuple's
                    if hasattr(p, "centre")
                ),
                (0.0, 0.0),
            )
        cx, cy = float(centre[0]), float(centre[1])
        phi = (np.arange(128) + 0.5) * (2 * np.pi / 128)
        cos, sin = np.cos(phi), np.sin(phi)

        def excess(radii: np.ndarray) -> np.ndarray:  # mean convergence within each R, minus 1
            xy = np.stack([cx + radii[:, None] * cos, cy + radii[:, None] * sin], axis=-1)
            alpha = np.asarray(self.deflections(xy, backend))
            radial = alpha[..., 0] * cos + alpha[..., 1] * sin
            return radial.mean(axis=1) / radii - 1.0

        radii = np.geomspace(1e-3, r_max, 64)
        values = excess(radii)
        above = np.flatnonzero(values >= 0.0)
        if above.size == 0 or above[-1] == radii.size - 1:
            return float("nan")
        k = above[-1]  # the outermost crossing from >= 1 to < 1
        return float(brentq(lambda r: excess(np.array([r]))[0], radii[k], radii[k + 1], xtol=1e-12))

    def with_intensities(self, intensities: Any) -> Tracer:
        """A copy of this tracer with each linear light profile replaced by its parametric twin
        at the given intensities (``n_linear`` values, in :attr:`linear_profiles` order): what a
        fit solved, as a model to plot or simulate from."""
        values = [float(v) for v in intensities]
        if len(values) != self.n_linear:
            raise ValueError(f"need {self.n_linear} intensities, got {len(values)}")
        it = iter(values)

        def solved(galaxy: Galaxy) -> Galaxy:
            light = []
            for p in galaxy.light:
                if not p.n_linear:
                    light.append(p)
                elif p.n_linear == 1:
                    light.append(p.with_intensity(next(it)))  # type: ignore[attr-defined]
                else:
                    light.append(p.with_intensities([next(it) for _ in range(p.n_linear)]))  # type: ignore[attr-defined]
            return dataclasses.replace(galaxy, light=tuple(light))

        return Tracer(tuple(solved(g) for g in self.lenses), tuple(solved(g) for g in self.sources))

"""The mass-profile base class: positions in, lensing quantities out, on any backend."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from twinlens.backend import array_module, resolve_backend
from twinlens.backend.concrete import is_batched, is_concrete
from twinlens.fields import ValueIdentity
from twinlens.kernels import lensing
from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity, ellipticity_from_axis_ratio
from twinlens.kernels.gaussian import is_near_round
from twinlens.kernels.registry import KernelCall
from twinlens.profiles.checks import check_axis_ratio, check_finite


def _numbers(obj: ValueIdentity) -> list:
    """Every field value, tuples flattened and nested profiles opened (what may be a tracer)."""
    out: list = []
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        for item in v if isinstance(v, tuple) else (v,):
            out.extend(_numbers(item) if isinstance(item, ValueIdentity) else (item,))
    return out


def positions(xy: Any, backend: str) -> tuple[Any, Any, Any]:
    """``(x, y, xp)`` from positions ``(..., 2)`` (or an object with an ``xy`` array)."""
    xy = getattr(xy, "xy", xy)
    xp = array_module(backend)
    arr = xp.asarray(xy)
    if arr.dtype.kind not in "iuf":  # numpy would drop an imaginary part, or read True as 1
        raise TypeError(f"xy must hold real numbers (x, y), got an array of dtype {arr.dtype}")
    if arr.ndim < 1 or arr.shape[-1] != 2:
        raise ValueError(f"xy must have shape (..., 2) holding (x, y) pairs, got {arr.shape}")
    return arr[..., 0], arr[..., 1], xp


def assemble(xp: Any, parts: list, shape: tuple[int, ...]) -> Any:
    """Components ``parts`` (arrays of one shape, in C order) as one array of trailing
    ``shape``: ``np.stack`` on numpy; on JAX a scatter into zeros, because XLA fuses a kernel
    into a ``stack`` and then evaluates it once per output element."""
    first = parts[0]
    if xp is np:
        return np.stack(parts, axis=-1).reshape(*first.shape, *shape)
    out = xp.zeros((*first.shape, len(parts)), dtype=first.dtype)
    for i, part in enumerate(parts):
        out = out.at[..., i].set(part)
    return out.reshape(*first.shape, *shape)


def axis_ratio_angle(e1: Any, e2: Any) -> tuple[Any, Any]:
    """``(q, phi)`` from concrete ellipticity components (``phi`` in radians): Python floats,
    or ``(n_batch, 1)`` columns for :class:`~twinlens.backend.concrete.Batched` components
    (computed once per batch member, not once per point)."""
    if is_batched(e1, e2):
        q, phi = axis_ratio_from_ellipticity(np.asarray(e1), np.asarray(e2))
        return np.asarray(q), np.asarray(phi)
    q, phi = axis_ratio_from_ellipticity(float(e1), float(e2))
    return float(q), float(phi)


def all_concrete(*values: Any) -> bool:
    """True when every value is concrete (known now, not a tracer or a batch column)."""
    return all(is_concrete(v) for v in values)


class MassProfile(ValueIdentity):
    """Base class of mass profiles.

    Every method takes positions ``xy`` of shape ``(..., 2)`` (arcsec, last axis ``(x, y)``) and
    ``backend=`` (``"numba"``, ``"jax"``, ``"numpy"``; default: JAX if any input or parameter
    is a JAX array or tracer, else the process default).

    A subclass says what it computes with one method, :meth:`kernel_call`: for a quantity, the
    kernel (a constant of a :mod:`twinlens.kernels` module) and the parameters it binds from its
    fields. The public methods evaluate that call, and the fused loop of
    :mod:`twinlens.lensing.fused` compiles it into a whole tracer's loop. A profile that is not one
    kernel call (a sum of profiles) returns None there and overrides ``_convergence``,
    ``_deflections``, ``_hessian`` and ``_potential`` instead, on coordinate arrays; a sum
    also lists its parts in :meth:`summands`.

    ``linear_parameter`` names a field every lensing quantity is proportional to (a
    mass-to-light ratio), or is None: fields at the unit value then serve every value of it
    (:mod:`twinlens.memo`).
    """

    linear_parameter: ClassVar[str | None] = None

    @classmethod
    def from_axis_ratio(cls, *args: Any, q: float = 1.0, angle: float = 0.0, **kwargs: Any) -> Any:
        """Build a profile with an ``ell_comps`` field from axis ratio ``q`` in (0, 1] and the
        major axis' angle in degrees, counter-clockwise from +x; other arguments pass through."""
        check_axis_ratio(cls.__name__, q)
        check_finite(cls, "angle", angle)
        e1, e2 = ellipticity_from_axis_ratio(q, angle * (math.pi / 180.0))
        if all_concrete(e1, e2):  # Python floats, so the profile's key is stable
            e1, e2 = float(e1), float(e2)
        build: Any = cls  # a subclass with an ell_comps field
        return build(*args, ell_comps=(e1, e2), **kwargs)

    def _backend(self, xy: Any, backend: str | None) -> str:
        return resolve_backend(backend, getattr(xy, "xy", xy), *_numbers(self))

    def convergence(self, xy: Any, backend: str | None = None) -> Any:
        """Convergence (dimensionless), shape ``xy.shape[:-1]``."""
        b = self._backend(xy, backend)
        x, y, _ = positions(xy, b)
        return self._convergence(x, y, b)

    def deflections(self, xy: Any, backend: str | None = None) -> Any:
        """Deflection angles ``(..., 2)`` as ``(alpha_x, alpha_y)``, arcsec."""
        b = self._backend(xy, backend)
        x, y, xp = positions(xy, b)
        ax, ay = self._deflections(x, y, b)
        return assemble(xp, [ax, ay], (2,))

    def hessian(self, xy: Any, backend: str | None = None) -> Any:
        """Hessian of the lensing potential, ``(..., 2, 2)``:
        ``[[psi_xx, psi_xy], [psi_xy, psi_yy]]``."""
        b = self._backend(xy, backend)
        x, y, xp = positions(xy, b)
        hxx, hxy, hyy = self._hessian(x, y, b)
        return assemble(xp, [hxx, hxy, hxy, hyy], (2, 2))

    def potential(self, xy: Any, backend: str | None = None) -> Any:
        """Lensing potential, arcsec^2 (zero at the profile centre)."""
        b = self._backend(xy, backend)
        x, y, _ = positions(xy, b)
        return self._potential(x, y, b)

    def magnification(self, xy: Any, backend: str | None = None) -> Any:
        """Signed magnification ``1 / det(I - H)``."""
        h = self.hessian(xy, backend)
        return lensing.magnification(h[..., 0, 0], h[..., 0, 1], h[..., 1, 1])

    def shear(self, xy: Any, backend: str | None = None) -> Any:
        """Shear ``(..., 2)`` as ``(gamma_1, gamma_2) = ((psi_xx - psi_yy) / 2, psi_xy)``."""
        b = self._backend(xy, backend)
        h = self.hessian(xy, b)
        return assemble(
            array_module(b), list(lensing.shear(h[..., 0, 0], h[..., 0, 1], h[..., 1, 1])), (2,)
        )

    # subclasses ---------------------------------------------------------------------------

    def summands(self) -> tuple[MassProfile, ...]:
        """The profiles whose sum this one is: itself, or a sum's parts (nested sums opened).
        A tracer plans its work from these, so that a sum's parts enter the fused loop of
        :mod:`twinlens.lensing.fused` one kernel call each, as a galaxy's own profiles do."""
        return (self,)

    def kernel_call(self, quantity: str) -> KernelCall | None:
        """What computes ``quantity`` (``convergence``, ``deflections``, ``hessian``,
        ``potential``): a kernel and the parameters bound from this profile's fields, or None
        when the profile computes it otherwise (and overrides the quantity's method)."""
        return None

    def _evaluate(self, quantity: str, x: Any, y: Any, backend: str) -> Any:
        call = self.kernel_call(quantity)
        if call is None:
            raise NotImplementedError(f"{type(self).__name__} computes no {quantity}")
        return call(x, y, backend)

    def _convergence(self, x: Any, y: Any, backend: str) -> Any:
        return self._evaluate("convergence", x, y, backend)

    def _deflections(self, x: Any, y: Any, backend: str) -> tuple[Any, Any]:
        return self._evaluate("deflections", x, y, backend)

    def _hessian(self, x: Any, y: Any, backend: str) -> tuple[Any, Any, Any]:
        return self._evaluate("hessian", x, y, backend)

    def _potential(self, x: Any, y: Any, backend: str) -> Any:
        return self._evaluate("potential", x, y, backend)


def ellipse_form(e1: Any, e2: Any) -> str:
    """Which exact form of the Gaussian kernels applies: ``spherical`` (e = 0), ``near_round``
    (:func:`twinlens.kernels.gaussian.is_near_round`), ``elliptical``, or ``traced`` (the
    ellipticity is not known until run time)."""
    if not all_concrete(e1, e2):
        return "traced"
    if float(e1) == 0.0 and float(e2) == 0.0:
        return "spherical"
    return "near_round" if is_near_round(float(e1), float(e2)) else "elliptical"


def shape_parameters(e1: Any, e2: Any, form: str) -> tuple:
    """The shape parameters a kernel of ``form`` takes: none for ``spherical``, ``(q, phi)``
    for ``elliptical`` (:func:`axis_ratio_angle`), ``(e1, e2)`` for the other forms."""
    if form == "spherical":
        return ()
    if form == "elliptical":
        return axis_ratio_angle(e1, e2)
    return (e1, e2)

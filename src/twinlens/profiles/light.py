"""Light profiles: surface brightness of lens and source galaxies.

Each parametric profile has a *linear* variant without the ``intensity`` field: a fit solves
its intensity (a non-negative least-squares solve in the likelihood) instead of sampling it,
which removes one free parameter per profile and makes the search easier. A linear profile's
:meth:`~LightProfile.image` is its image at unit intensity; its columns are what the solve
combines.

Every profile's radius is the intermediate-axis elliptical radius
``R = sqrt(q x'^2 + y'^2 / q)`` (``x'`` along the major axis), the convention of the mass
profiles, so the flux inside ``R`` does not depend on ``q``.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from twinlens.backend import resolve_backend
from twinlens.fields import ValueIdentity, canonical
from twinlens.kernels import gaussian as gaussian_kernels
from twinlens.kernels import light as light_kernels
from twinlens.kernels import mge as mge_kernels
from twinlens.kernels.registry import KernelCall
from twinlens.profiles.base import MassProfile, _numbers, positions
from twinlens.profiles.checks import (
    check_ellipticity,
    check_finite,
    check_non_negative,
    check_pair,
    check_positive,
    check_range,
    real_array,
)

__all__ = [
    "CORE_SERSIC_ALPHA_MIN",
    "SERSIC_INDEX_RANGE",
    "CoreSersic",
    "Exponential",
    "GaussianBasis",
    "GaussianLight",
    "LightProfile",
    "LinearCoreSersic",
    "LinearExponential",
    "LinearGaussian",
    "LinearSersic",
    "MGELight",
    "Sersic",
]

SERSIC_INDEX_RANGE = (0.2, 10.0)  # where b_n is computed to float64 precision on every backend
#: The smallest core-Sersic sharpness: the profile holds ``exp(gamma ln 2 / alpha)`` and
#: ``2^(1 / (alpha n))`` factors, which overflow (and meet as inf - inf, a NaN) for alpha below
#: about 3e-3 at gamma -> 2, n = 0.2.
CORE_SERSIC_ALPHA_MIN = 0.01


class LightProfile(ValueIdentity):
    """Base class of light profiles.

    ``image(xy, backend=None)`` gives the surface brightness at positions ``(..., 2)``. Linear
    variants (``n_linear > 0``) have no intensity field; ``columns`` gives the unit-intensity
    images the likelihood solves for, and ``image`` their sum.

    A subclass says what it computes with :meth:`kernel_call` (its image: a kernel and the
    parameters bound from its fields) and, if it has several solved intensities,
    :meth:`column_calls`; the fused loop of :mod:`twinlens.lensing.fused` compiles those calls.

    ``linear_parameter`` names the field the image is proportional to (``intensity``), or is
    None (linear variants, whose images are already at unit intensity, and expansions).
    """

    linear_parameter: ClassVar[str | None] = None

    # Declared for the type checker only: at run time an annotation on a class that is not a
    # dataclass trips the ValueIdentity guard, and the concrete dataclasses define the fields.
    if TYPE_CHECKING:
        centre: tuple
        ell_comps: tuple

        # read-only, so that a subclass may make it a property (GaussianBasis)
        @property
        def n_linear(self) -> int:
            """How many intensities the fit solves: a class constant (0 here, 1 in the linear
            variants) or a property of the fields."""
    else:
        n_linear: ClassVar[int] = 0

    def image(self, xy: Any, backend: str | None = None) -> Any:
        """Surface brightness (intensity units) at ``xy (..., 2)``, shape ``xy.shape[:-1]``."""
        b = resolve_backend(backend, getattr(xy, "xy", xy), *_numbers(self))
        x, y, _ = positions(xy, b)
        if self.n_linear:
            cols = self._columns(x, y, b)
            out = cols[0]
            for c in cols[1:]:
                out = out + c
            return out
        return self._image(x, y, b)

    def kernel_call(self, quantity: str = "image") -> KernelCall | None:
        """What computes the image (the only ``quantity``): a kernel and the parameters bound
        from this profile's fields (at unit intensity for a linear variant), or None when the
        image is a sum of :meth:`column_calls`. Subclasses implement :meth:`_image_call`."""
        if quantity != "image":
            raise ValueError(
                f"{type(self).__name__}.kernel_call: a light profile computes 'image', "
                f"not {quantity!r}"
            )
        return self._image_call()

    def _image_call(self) -> KernelCall | None:
        return None

    def column_calls(self) -> list[KernelCall]:
        """One kernel call per solved intensity (linear profiles), each at unit intensity;
        empty when the profile computes its columns otherwise."""
        call = self.kernel_call("image")
        return [] if call is None else [call]

    def _image(self, x: Any, y: Any, backend: str) -> Any:
        call = self.kernel_call("image")
        if call is None:
            raise NotImplementedError(f"{type(self).__name__} has no kernel for its image")
        return call(x, y, backend)

    def _columns(self, x: Any, y: Any, backend: str) -> list:
        """Unit-intensity images, one per solved intensity (linear profiles)."""
        calls = self.column_calls()
        if not calls:
            raise NotImplementedError(f"{type(self).__name__} has no kernels for its columns")
        return [call(x, y, backend) for call in calls]

    def _check_shape(self) -> None:
        check_pair(self, "centre", self.centre)
        check_ellipticity(self, "ell_comps", self.ell_comps)


class _Linear:
    """Mixin for linear variants: intensity 1, solved by the fit. ``parametric`` is the
    profile with an ``intensity`` field and otherwise the same fields."""

    n_linear: ClassVar[int] = 1
    intensity: ClassVar[float] = 1.0
    parametric: ClassVar[type]
    if TYPE_CHECKING:  # mixed only into dataclasses, so dataclasses.fields accepts self
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def with_intensity(self, intensity: float) -> Any:
        """The parametric profile with this intensity (e.g. the one a fit solved)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return self.parametric(**values, intensity=intensity)


def _check_sersic_index(owner: object, value: Any) -> None:
    lo, hi = SERSIC_INDEX_RANGE
    check_range(owner, "sersic_index", value, lo, hi)


# -- Sersic ---------------------------------------------------------------------------------


class _SersicFamily(LightProfile):
    if TYPE_CHECKING:  # for the type checker only, as in LightProfile
        effective_radius: float

        # read-only: a field, or a class constant (Exponential's index, a linear variant's
        # unit intensity)
        @property
        def sersic_index(self) -> float: ...
        @property
        def intensity(self) -> float: ...

    def _b(self) -> Any:
        return light_kernels.sersic_b(self.sersic_index)

    def _image_call(self) -> KernelCall:
        """The Sersic kernel with this profile's shape and intensity."""
        params = (
            *self.centre,
            *self.ell_comps,
            self.effective_radius,
            self.sersic_index,
            self._b(),
            self.intensity,
        )
        return KernelCall(light_kernels.SERSIC, params)

    def _check_sersic(self) -> None:
        self._check_shape()
        check_positive(self, "effective_radius", self.effective_radius)
        _check_sersic_index(self, self.sersic_index)


@dataclass(frozen=True, eq=False)
class _SersicShape(_SersicFamily):
    """The fields of :class:`Sersic` and :class:`LinearSersic` but the intensity."""

    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)
    effective_radius: float = 1.0
    sersic_index: float = 4.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_sersic()


@dataclass(frozen=True, eq=False)
class Sersic(_SersicShape):
    """Elliptical Sersic profile:
    ``I(R) = intensity * exp(-b_n ((R / effective_radius)^(1/n) - 1))``.

    ``b_n`` is exact (``P(2n, b_n) = 1/2``), so ``effective_radius`` is exactly the half-light
    radius (lenstronomy and autogalaxy use approximations; :mod:`twinlens.convert` maps them).

    Parameters
    ----------
    centre : (float, float)
        arcsec.
    ell_comps : (float, float)
        ``(e1, e2)``, ``|e| < 1``.
    effective_radius : float
        Half-light radius along the intermediate axis, arcsec, > 0.
    sersic_index : float
        ``n`` in [0.2, 10].
    intensity : float
        Surface brightness at ``effective_radius``.
    """

    intensity: float = 1.0

    linear_parameter: ClassVar[str | None] = "intensity"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_finite(self, "intensity", self.intensity)


@dataclass(frozen=True, eq=False)
class LinearSersic(_Linear, _SersicShape):
    """:class:`Sersic` with its intensity solved by the fit."""

    parametric: ClassVar[type] = Sersic


@dataclass(frozen=True, eq=False)
class _ExponentialShape(_SersicFamily):
    """The fields of :class:`Exponential` and :class:`LinearExponential` but the intensity."""

    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)
    effective_radius: float = 1.0
    sersic_index: ClassVar[float] = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_sersic()


@dataclass(frozen=True, eq=False)
class Exponential(_ExponentialShape):
    """Elliptical exponential disc: the Sersic profile with ``n = 1``.

    Parameters are those of :class:`Sersic` without ``sersic_index``.
    """

    intensity: float = 1.0

    linear_parameter: ClassVar[str | None] = "intensity"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_finite(self, "intensity", self.intensity)


@dataclass(frozen=True, eq=False)
class LinearExponential(_Linear, _ExponentialShape):
    """:class:`Exponential` with its intensity solved by the fit."""

    parametric: ClassVar[type] = Exponential


# -- core-Sersic ----------------------------------------------------------------------------


class _CoreSersicFamily(_SersicFamily):
    if TYPE_CHECKING:  # for the type checker only, as in LightProfile
        break_radius: float
        gamma: float
        alpha: float

    def _image_call(self) -> KernelCall:
        """The core-Sersic kernel with this profile's shape and intensity."""
        params = (
            *self.centre,
            *self.ell_comps,
            self.effective_radius,
            self.sersic_index,
            self._b(),
            self.break_radius,
            self.gamma,
            self.alpha,
            self.intensity,
        )
        return KernelCall(light_kernels.CORE_SERSIC, params)

    def _check_core(self) -> None:
        self._check_sersic()
        check_non_negative(self, "break_radius", self.break_radius)
        check_range(self, "gamma", self.gamma, 0.0, 2.0, high_open=True)
        check_positive(self, "alpha", self.alpha, low=CORE_SERSIC_ALPHA_MIN)


@dataclass(frozen=True, eq=False)
class _CoreSersicShape(_CoreSersicFamily):
    """The fields of :class:`CoreSersic` and :class:`LinearCoreSersic` but the intensity."""

    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)
    effective_radius: float = 1.0
    sersic_index: float = 4.0
    break_radius: float = 0.1
    gamma: float = 0.25
    alpha: float = 3.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_core()


@dataclass(frozen=True, eq=False)
class CoreSersic(_CoreSersicShape):
    """Core-Sersic profile (Graham et al. 2003): a Sersic profile outside ``break_radius`` and
    a power law ``R^-gamma`` inside it, joined with sharpness ``alpha``; see
    :func:`twinlens.kernels.light.core_sersic` for the formula.

    Parameters
    ----------
    centre, ell_comps, effective_radius, sersic_index
        As for :class:`Sersic`.
    break_radius : float
        arcsec, >= 0 (0 gives the Sersic profile).
    gamma : float
        Inner power-law slope, in [0, 2).
    alpha : float
        Sharpness of the transition, >= 0.01 (:data:`CORE_SERSIC_ALPHA_MIN`).
    intensity : float
        Amplitude (see the kernel for its meaning).
    """

    intensity: float = 1.0

    linear_parameter: ClassVar[str | None] = "intensity"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_finite(self, "intensity", self.intensity)


@dataclass(frozen=True, eq=False)
class LinearCoreSersic(_Linear, _CoreSersicShape):
    """:class:`CoreSersic` with its intensity solved by the fit."""

    parametric: ClassVar[type] = CoreSersic


# -- Gaussians (the Gaussian mass kernels: the same exp(-R^2 / 2 sigma^2) shape) ------------


class _GaussianLightFamily(LightProfile):
    def _gaussian_call(self, sigma: Any, amplitude: Any) -> KernelCall:
        params = (*self.centre, *self.ell_comps, sigma, amplitude)
        return KernelCall(gaussian_kernels.CONVERGENCE, params)


@dataclass(frozen=True, eq=False)
class _GaussianShape(_GaussianLightFamily):
    """The fields of :class:`GaussianLight` and :class:`LinearGaussian` but the intensity."""

    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)
    sigma: float = 1.0

    if TYPE_CHECKING:  # a property, not an annotation, so that it is no field of this dataclass

        @property
        def intensity(self) -> float: ...

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_shape()
        check_positive(self, "sigma", self.sigma)

    def _image_call(self) -> KernelCall:
        """The Gaussian kernel with this profile's shape and intensity."""
        return self._gaussian_call(self.sigma, self.intensity)


@dataclass(frozen=True, eq=False)
class GaussianLight(_GaussianShape):
    """Elliptical Gaussian light: ``I = intensity * exp(-R^2 / (2 sigma^2))``.

    Parameters
    ----------
    centre, ell_comps
        As for :class:`Sersic`.
    sigma : float
        arcsec, > 0.
    intensity : float
        Peak surface brightness.
    """

    intensity: float = 1.0

    linear_parameter: ClassVar[str | None] = "intensity"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_finite(self, "intensity", self.intensity)


@dataclass(frozen=True, eq=False)
class LinearGaussian(_Linear, _GaussianShape):
    """:class:`GaussianLight` with its intensity solved by the fit."""

    parametric: ClassVar[type] = GaussianLight


def _float_array(owner: object, name: str) -> None:
    value = getattr(owner, name)
    if isinstance(value, tuple):  # lists and tuples become read-only float arrays
        object.__setattr__(owner, name, canonical(real_array(owner, name, value)))


@dataclass(frozen=True, eq=False)
class MGELight(_GaussianLightFamily):
    """A multi-Gaussian expansion of light: concentric elliptical Gaussians sharing centre and
    ellipticity, summed in one kernel pass. Its mass twin, with one mass-to-light ratio, is
    :class:`twinlens.mass.MGE` (see :meth:`to_mass`).

    Parameters
    ----------
    sigmas : array (K,)
        arcsec, > 0.
    intensities : array (K,)
        Peak surface brightness of each Gaussian.
    centre, ell_comps
        As for :class:`Sersic`.
    """

    sigmas: Any
    intensities: Any
    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _float_array(self, "sigmas")
        _float_array(self, "intensities")
        self._check_shape()
        check_positive(self, "sigmas", self.sigmas)
        check_finite(self, "intensities", self.intensities)
        n_s, n_i = np.shape(self.sigmas), np.shape(self.intensities)
        if len(n_s) != 1 or n_s != n_i or n_s[0] == 0:  # as MGE: an empty sum has no kernel
            raise ValueError(
                "MGELight.sigmas and MGELight.intensities must be 1-D of one non-zero length, "
                "got shapes "
                f"{np.shape(self.sigmas)} and {np.shape(self.intensities)}"
            )

    def _image_call(self) -> KernelCall:
        """The MGE kernel: every Gaussian summed in one pass."""
        params = (*self.centre, *self.ell_comps, self.sigmas, self.intensities)
        return KernelCall(mge_kernels.CONVERGENCE, params)

    def to_mass(self, mass_to_light_ratio: float = 1.0) -> MassProfile:
        """The MGE mass profile that follows this light."""
        from twinlens.profiles.gaussian import MGE

        return MGE(self.sigmas, self.intensities, self.centre, self.ell_comps, mass_to_light_ratio)


@dataclass(frozen=True, eq=False)
class GaussianBasis(_GaussianLightFamily):
    """A linear basis of concentric elliptical Gaussians: every Gaussian's intensity is
    solved (non-negative) by the fit, so the basis can take the shape of most smooth galaxies
    without sampling a Sersic index.

    Parameters
    ----------
    sigmas : array (K,)
        arcsec, > 0 (log-spaced from below the pixel scale to the galaxy's extent works well).
    centre, ell_comps
        As for :class:`Sersic`.
    """

    sigmas: Any
    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _float_array(self, "sigmas")
        self._check_shape()
        check_positive(self, "sigmas", self.sigmas)
        if np.ndim(self.sigmas) != 1 or np.size(self.sigmas) == 0:
            raise ValueError(f"GaussianBasis.sigmas must be 1-D, got {np.shape(self.sigmas)}")

    @property
    def n_linear(self) -> int:
        """One solved intensity per Gaussian."""
        return int(np.size(self.sigmas))

    def column_calls(self) -> list[KernelCall]:
        """One unit-amplitude Gaussian per sigma."""
        # by index, not np.asarray: under jax.jit the sigmas are a traced leaf of the pytree
        return [self._gaussian_call(self.sigmas[k], 1.0) for k in range(self.n_linear)]

    def _columns(self, x, y, backend):
        if backend == "jax":  # one vectorised call: a (K, n) array, not K copies of the kernel
            sigmas = self.sigmas.reshape((-1,) + (1,) * x.ndim)  # (K, 1, ...) for any x shape
            return list(self._gaussian_call(sigmas, 1.0)(x, y, backend))
        return super()._columns(x, y, backend)

    def with_intensities(self, intensities: Any) -> MGELight:
        """The parametric expansion with these intensities."""
        return MGELight(self.sigmas, np.asarray(intensities, float), self.centre, self.ell_comps)

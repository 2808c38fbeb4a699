"""Mass profiles evaluated through their decomposition into elliptical Gaussians.

Each profile is a radial convergence (or a 3D density, projected) on concentric ellipses of the
package's convention (radius ``sqrt(q x'^2 + y'^2 / q)``), decomposed into Gaussians by
:mod:`twinlens.kernels.gauss_decomposition` and evaluated as an :class:`~twinlens.mass.MGE`.
Every decomposition is linear in the profile's normalisation, so the Gaussians are computed at
unit normalisation from the *shape* parameters (a scale radius, a slope, a Sersic index) and the
normalisation multiplies them as the MGE's ``mass_to_light_ratio``. A concrete shape is
decomposed once, in numpy, and cached by its float values; a shape that is a
:class:`~twinlens.backend.concrete.Batched` column (a numba or numpy batch) is decomposed per
member, the same way; a traced shape (a free Sersic index under JAX) makes the decomposition
part of the traced program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from twinlens.backend.concrete import Batched, is_concrete
from twinlens.fields import static_field
from twinlens.kernels import gauss_decomposition as gd
from twinlens.kernels.registry import KernelCall
from twinlens.profiles.base import MassProfile, all_concrete
from twinlens.profiles.checks import (
    check_count,
    check_ellipticity,
    check_finite,
    check_pair,
    check_positive,
    check_range,
)
from twinlens.profiles.gaussian import MGE

#: Sersic indices of :class:`SersicMass`: where the decomposition's accuracy is documented
#: (its amplitudes overflow from about n = 1e4).
SERSIC_MASS_INDEX_RANGE = (0.5, 10.0)

#: ``(decompose, normalisation, shape parameters, options)``: see :meth:`_Decomposed._recipe`.
Recipe = tuple[Callable[..., tuple[Any, Any]], Any, tuple, tuple]


@functools.lru_cache(maxsize=4096)
def _unit_decomposition(
    decompose: Callable[..., tuple[Any, Any]], shape: tuple[float, ...], options: tuple
) -> tuple[np.ndarray, np.ndarray]:
    """``decompose(1.0, *shape, **options)`` as read-only numpy arrays.

    Keyed by Python floats, never by the caller's arrays, and computed in numpy whatever they
    were: a profile built from JAX arrays and an equal one built from numpy arrays share the
    entry, and each backend reads the same numpy bytes (JAX takes numpy constants as they are).
    """
    amps, sigmas = decompose(1.0, *shape, **dict(options))
    out = (np.array(amps, dtype=float), np.array(sigmas, dtype=float))
    for a in out:
        a.setflags(write=False)
    return out


def _member_values(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=float).reshape(-1)


class _Decomposed(MassProfile):
    """Shared behaviour: decompose, then delegate every quantity to the equivalent MGE."""

    # Declared for the type checker only (the concrete dataclasses define the fields): at run
    # time an annotation on a class that is not a dataclass trips the ValueIdentity guard.
    if TYPE_CHECKING:
        centre: tuple[float, float]
        ell_comps: tuple[float, float]
        n_gaussians: int

    def _recipe(self) -> Recipe:
        """``(decompose, normalisation, shape, options)``: the amplitudes are
        ``normalisation * decompose(1.0, *shape, **dict(options))[0]`` (every decomposition is
        linear in its first argument), the dispersions ``decompose(...)[1]``."""
        raise NotImplementedError

    def _unit(self) -> tuple[Any, Any]:
        """Unit-normalisation amplitudes and dispersions: ``(K,)`` arrays, ``(n_batch, K)`` for
        a :class:`~twinlens.backend.concrete.Batched` shape parameter, or traced JAX arrays."""
        decompose, _, shape, options = self._recipe()
        if all_concrete(*shape):
            return _unit_decomposition(
                decompose, tuple(float(np.asarray(s)) for s in shape), options
            )
        if all(is_concrete(s) or isinstance(s, Batched) for s in shape):
            # A numba/numpy batch with a free shape parameter (a gNFW slope, a scale radius):
            # one numpy decomposition per member, stacked into (n_batch, K) rows that the MGE
            # kernels and the fused loop read per member. Members run one at a time because
            # each is served by the cache above (a batch that repeats a value, the reference
            # values standing in for invalid members) and the Python loop costs microseconds
            # against the decomposition's milliseconds; numpy only, so numba results never
            # depend on JAX.
            members = np.broadcast_arrays(*(_member_values(s) for s in shape))
            rows = [
                _unit_decomposition(decompose, tuple(map(float, values)), options)
                for values in zip(*members, strict=True)
            ]
            return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
        return decompose(1.0, *shape, **dict(options))  # traced: part of the JAX program

    def mge(self) -> MGE:
        """The equivalent multi-Gaussian expansion, its normalisation as the MGE's
        ``mass_to_light_ratio`` (the decomposition of a concrete shape is cached by value)."""
        _, norm, _, _ = self._recipe()
        unit, sigmas = self._unit()
        centre, ell_comps = self.centre, self.ell_comps
        return MGE(sigmas, unit, centre=centre, ell_comps=ell_comps, mass_to_light_ratio=norm)

    def kernel_call(self, quantity: str) -> KernelCall | None:
        """The equivalent MGE's kernel of ``quantity`` (:meth:`mge`)."""
        return self.mge().kernel_call(quantity)

    def _check_shape(self) -> None:
        check_pair(self, "centre", self.centre)
        check_ellipticity(self, "ell_comps", self.ell_comps)
        # the decomposition's quadrature needs N_QUAD >= 2 n_gaussians
        check_count(self, "n_gaussians", self.n_gaussians, 2, gd.N_QUAD // 2)


@dataclass(frozen=True, eq=False)
class SersicMass(_Decomposed):
    """Elliptical Sersic mass: a mass-to-light ratio times a Sersic light profile.

    ``kappa(R) = mass_to_light_ratio * intensity * exp(-b_n ((R / effective_radius)^(1/n) - 1))``
    with ``R = sqrt(q x'^2 + y'^2 / q)`` and ``b_n`` such that ``effective_radius`` encloses half
    the mass.

    Parameters
    ----------
    centre, ell_comps
        As for :class:`~twinlens.mass.Gaussian`.
    effective_radius : float
        Half-mass radius (intermediate axis), arcsec, > 0.
    sersic_index : float
        ``n`` in [0.5, 10] (:data:`SERSIC_MASS_INDEX_RANGE`; accuracy documented for 0.5 and
        0.85 to 10, see the decomposition docs).
    intensity : float
        Light at ``effective_radius``.
    mass_to_light_ratio : float
    n_gaussians : int
        Gaussians in the decomposition (static; default 48: deflections within 1e-6).
    """

    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    effective_radius: float = 1.0
    sersic_index: float = 4.0
    intensity: float = 1.0
    mass_to_light_ratio: float = 1.0
    n_gaussians: int = static_field(default=gd.SERSIC_DEFAULTS["n_sigma"])

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_shape()
        check_positive(self, "effective_radius", self.effective_radius)
        check_range(self, "sersic_index", self.sersic_index, *SERSIC_MASS_INDEX_RANGE)
        check_finite(self, "intensity", self.intensity)
        check_finite(self, "mass_to_light_ratio", self.mass_to_light_ratio)

    def _recipe(self) -> Recipe:
        return (
            gd.decompose_sersic,
            self.mass_to_light_ratio * self.intensity,
            (self.effective_radius, self.sersic_index),
            (("n_sigma", self.n_gaussians),),
        )


@dataclass(frozen=True, eq=False)
class _Halo(_Decomposed):
    """The fields and checks every decomposed halo shares (``n_gaussians`` is keyword-only,
    so each halo's own parameter follows ``r_s`` in positional order)."""

    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    rho_s: float = 0.1
    r_s: float = 10.0
    n_gaussians: int = static_field(default=gd.NFW_DEFAULTS["n_sigma"], kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_shape()
        check_finite(self, "rho_s", self.rho_s)
        check_positive(self, "r_s", self.r_s)


@dataclass(frozen=True, eq=False)
class GNFW(_Halo):
    """Generalised NFW halo with a free inner slope, projected, elliptical in projection.

    3D density ``rho(r) = rho_s / ((r / r_s)^gamma (1 + r / r_s)^(3 - gamma))`` with ``rho_s``
    in units of the critical surface density per arcsec, so the projection is a convergence.

    Parameters
    ----------
    centre, ell_comps
        As for :class:`~twinlens.mass.Gaussian`.
    rho_s : float
        Density normalisation, ``Sigma_crit`` / arcsec.
    r_s : float
        Scale radius, arcsec, > 0.
    gamma : float
        Inner slope, in [0, 3) (accuracy measured to 2.8); 1 is NFW.
    n_gaussians : int
        Gaussians in the decomposition (static; default 45: deflections within 1e-6).
    """

    gamma: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "gamma", self.gamma, 0.0, 3.0, high_open=True)

    def _recipe(self) -> Recipe:
        return (
            gd.decompose_gnfw,
            self.rho_s,
            (self.r_s, self.gamma),
            (("n_sigma", self.n_gaussians),),
        )


@dataclass(frozen=True, eq=False)
class CoredNFW(_Halo):
    """Cored NFW halo, projected, elliptical in projection.

    3D density ``rho(r) = rho_s / ((r + r_c) / r_s * (1 + r / r_s)^2)`` (lenstronomy's CNFW form),
    ``rho_s`` in ``Sigma_crit`` / arcsec.

    Parameters
    ----------
    centre, ell_comps
        As for :class:`~twinlens.mass.Gaussian`.
    rho_s : float
        Density normalisation, ``Sigma_crit`` / arcsec.
    r_s : float
        Scale radius, arcsec, > 0.
    r_c : float
        Core radius, arcsec, > 0 (accuracy measured for 1e-3 to 10 ``r_s``).
    n_gaussians : int
        Gaussians in the decomposition (static; default 45).
    """

    r_c: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "r_c", self.r_c)

    def _recipe(self) -> Recipe:
        return (
            gd.decompose_cored_nfw,
            self.rho_s,
            (self.r_s, self.r_c),
            (("n_sigma", self.n_gaussians),),
        )

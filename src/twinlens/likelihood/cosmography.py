"""Time-delay cosmography: imaging, a lensed point source's positions and delays, and the lens
galaxy's stellar velocity dispersion, with ``H0`` (and ``Omega_m``) sampled directly.

A lens model fitted to imaging and image positions is blind to the mass-sheet transform
``kappa -> lambda kappa + (1 - lambda)``: it rescales the time delays by ``lambda`` and leaves
the images as they were. Written with an internal part (``lambda_int``, a property of the lens
galaxy) and the line of sight's external convergence (``kappa_ext``),
``lambda = lambda_int (1 - kappa_ext)``, and

* the delays are those of the model with ``D_dt`` replaced by ``lambda D_dt(H0, Omega_m)``;
* the galaxy's own mass is ``(1 - kappa_ext)`` times the transformed model's, and, taking the
  internal sheet's dynamics as a rescaling of the model's (the approximation of the TDCOSMO
  analyses), the dispersion is ``sigma^2 = lambda_int (1 - kappa_ext) sigma_model^2``, with
  ``sigma_model`` the spherical Jeans dispersion (:mod:`twinlens.kinematics`) of a power law
  with the lens's Einstein radius and slope, at the distance ratio ``D_s / D_ds`` of the
  sampled cosmology.

Delays alone measure ``lambda D_dt``: with ``lambda_int`` free, ``H0`` follows its prior. The
dispersion measures ``lambda_int (1 - kappa_ext)`` times a function of ``Omega_m``, which
breaks the degeneracy. Distances are flat LambdaCDM
(:func:`~twinlens.cosmology.flat_lcdm_distances`), differentiable in ``H0`` and ``Omega_m``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from twinlens.backend import array_module, resolve_backend
from twinlens.backend.concrete import any_jax
from twinlens.cosmology import LensDistances, check_redshifts, flat_lcdm_distances
from twinlens.fields import ValueIdentity, static_field
from twinlens.kinematics import (
    Annulus,
    CircularAperture,
    GaussianLight,
    GaussianSeeing,
    Hernquist,
    MoffatSeeing,
    SersicLight,
    Slit,
)
from twinlens.kinematics.dispersion import Anisotropy, rule_dispersion
from twinlens.kinematics.models import MassSum, NFWMass, PointMass, PowerLawMass
from twinlens.kinematics.radial_rule import aperture_rule
from twinlens.lensing.tracer import Tracer
from twinlens.likelihood.batched import (
    JAX_CHUNK,
    check_jax_vectors,
    check_vectors,
    checked_rows,
    finite_or_minus_inf,
    jax_batch,
    run_jax_rows,
)
from twinlens.likelihood.joint import JointLikelihood
from twinlens.likelihood.point_source import PointSource, PointSourceLikelihood
from twinlens.messages import shown
from twinlens.model.paths import (
    COSMOGRAPHY,
    KINEMATICS,
    POINT_SOURCE,
    get_path,
    parameter_paths,
    part_path,
    set_paths,
)
from twinlens.profiles.checks import check_positive, check_range
from twinlens.profiles.nfw import NFW
from twinlens.profiles.simple import PointMass as LensPointMass

__all__ = ["Cosmography", "CosmographyLikelihood", "VelocityDispersionData"]

#: the point source's parameter that this likelihood computes from the cosmology
D_DT_FIELD = "time_delay_distance"
D_DT = POINT_SOURCE + D_DT_FIELD


@dataclass(frozen=True, eq=False)
class Cosmography(ValueIdentity):
    """The parameters of time-delay cosmography.

    Parameters
    ----------
    h0 : float
        Hubble constant, km/s/Mpc, in ``[1, 1000]``.
    omega_m : float
        Matter density of flat LambdaCDM, in ``(0, 1]``.
    lambda_int : float
        The internal mass-sheet transform of the lens galaxy, in ``(0, 10]`` (1: the model as
        fitted).
    kappa_ext : float
        The external convergence of the line of sight, ``< 1``.
    z_lens, z_source : float
        The redshifts of the lens and the source, ``0 < z_lens < z_source`` (fixed).
    """

    h0: Any = 70.0
    omega_m: Any = 0.3
    lambda_int: Any = 1.0
    kappa_ext: Any = 0.0
    z_lens: float = static_field(default=0.5)
    z_source: float = static_field(default=2.0)

    def __post_init__(self) -> None:
        zl, zs = check_redshifts(self.z_lens, self.z_source)
        if zl == 0.0:
            raise ValueError("Cosmography.z_lens must be > 0 (no delays at z_lens = 0)")
        object.__setattr__(self, "z_lens", zl)
        object.__setattr__(self, "z_source", zs)
        super().__post_init__()
        check_positive(self, "h0", self.h0, 1.0, 1000.0)
        check_range(self, "omega_m", self.omega_m, 0.0, 1.0, low_open=True)
        check_range(self, "lambda_int", self.lambda_int, 0.0, 10.0, low_open=True)
        check_range(self, "kappa_ext", self.kappa_ext, -10.0, 1.0, high_open=True)

    @property
    def lambda_total(self) -> Any:
        """``lambda_int (1 - kappa_ext)``: what multiplies ``D_dt`` and ``sigma^2``."""
        return self.lambda_int * (1.0 - self.kappa_ext)

    def distances(self, xp: Any = np) -> LensDistances:
        """The lens's distances in this cosmology (arrays or tracers as the parameters)."""
        zl, zs = self.z_lens, self.z_source
        return LensDistances(zl, zs, *flat_lcdm_distances(zl, zs, self.h0, self.omega_m, xp))


def _numbers(name: str, value: Any) -> tuple[float, ...]:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(
            f"VelocityDispersionData.{name} must be finite numbers, got {shown(value)}"
        )
    return tuple(float(v) for v in arr)


@dataclass(frozen=True, eq=False)
class VelocityDispersionData(ValueIdentity):
    """Measured stellar velocity dispersions of the lens galaxy and how they were taken.

    Parameters
    ----------
    sigma : float or sequence of float
        The dispersions, km/s (> 0): one aperture's, or one per bin.
    error : float or sequence of float, optional
        Independent Gaussian errors, km/s (> 0), one per value (or one for all).
    covariance : (n, n) array, optional
        Their covariance, (km/s)^2, positive definite (instead of ``error``).
    apertures : CircularAperture, Annulus, Slit, or a tuple of them
        One per value (one aperture serves a single value).
    seeing : GaussianSeeing or MoffatSeeing, optional
        The seeing of the spectroscopy (None: none).
    light : twinlens.kinematics.Hernquist, .GaussianLight or .SersicLight
        The lens galaxy's light, the dispersions' tracer.
    mass : str or tuple of str
        The path of the lens's mass profile that the Jeans model takes as spherical: a power
        law (``einstein_radius`` and ``slope``, 2 for an isothermal profile without one), a
        point mass or an NFW; several paths are summed (stars and a dark halo).
    """

    sigma: Any = static_field()
    error: Any = static_field(default=None)
    covariance: Any = static_field(default=None)
    apertures: Any = static_field(default=None)
    seeing: Any = static_field(default=None)
    light: Any = static_field(default=None)
    mass: Any = static_field(default="lenses[0].mass[0]")

    def __post_init__(self) -> None:
        sigma = _numbers("sigma", self.sigma)
        n = len(sigma)
        if min(sigma) <= 0.0:
            raise ValueError(f"VelocityDispersionData.sigma must be > 0 km/s, got {sigma}")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "covariance", self._covariance(n))
        object.__setattr__(self, "error", None)
        apertures = self.apertures
        apertures = (apertures,) if not isinstance(apertures, tuple) else apertures
        kinds = (CircularAperture, Annulus, Slit)
        if len(apertures) != n or not all(isinstance(a, kinds) for a in apertures):
            raise ValueError(
                f"VelocityDispersionData.apertures must be {n} CircularAperture, Annulus or Slit "
                f"(one per value), got {shown(self.apertures)}"
            )
        object.__setattr__(self, "apertures", apertures)
        if self.seeing is not None and not isinstance(self.seeing, GaussianSeeing | MoffatSeeing):
            raise TypeError(
                "VelocityDispersionData.seeing must be a GaussianSeeing, MoffatSeeing or None"
            )
        if not isinstance(self.light, Hernquist | GaussianLight | SersicLight):
            raise TypeError(
                "VelocityDispersionData.light must be a Hernquist, GaussianLight or SersicLight, "
                f"got {shown(self.light)}"
            )
        super().__post_init__()

    def _covariance(self, n: int) -> tuple:
        if (self.error is None) == (self.covariance is None):
            raise ValueError("VelocityDispersionData: give error or covariance (one of them)")
        if self.error is not None:
            error = _numbers("error", self.error)
            error = error * n if len(error) == 1 else error
            if len(error) != n or min(error) <= 0.0:
                raise ValueError(
                    f"VelocityDispersionData.error must be {n} values > 0 km/s, got {error}"
                )
            cov = np.diag(np.square(error))
        else:
            cov = np.asarray(self.covariance, dtype=float).reshape(n, n)
            if not np.allclose(cov, cov.T) or np.any(np.linalg.eigvalsh(cov) <= 0.0):
                raise ValueError(
                    "VelocityDispersionData.covariance must be symmetric and positive definite"
                )
        return tuple(tuple(float(v) for v in row) for row in cov)

    @property
    def rules(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each aperture's radial rule with the seeing (fixed work, computed once)."""
        return [aperture_rule(a, self.seeing) for a in self.apertures]

    @cached_property
    def precision(self) -> np.ndarray:
        """The inverse covariance, (km/s)^-2."""
        return np.linalg.inv(np.asarray(self.covariance))

    def model_mass(self, tracer: Tracer) -> Any:
        """The spherical mass of ``tracer``'s profiles at :attr:`mass` (one path, or several
        summed: :class:`~twinlens.kinematics.MassSum`)."""
        paths = (self.mass,) if isinstance(self.mass, str) else tuple(self.mass)
        masses = [self._spherical(tracer, path) for path in paths]
        return masses[0] if len(masses) == 1 else MassSum(tuple(masses))

    @staticmethod
    def _spherical(tracer: Tracer, path: str) -> Any:
        """The kinematics' mass of one lens profile, its ellipticity set aside: a power law
        (``einstein_radius`` and ``slope``, 2 without one), a point mass, or an NFW."""
        try:
            profile = get_path(tracer, path)
        except (KeyError, IndexError, AttributeError):
            profile = None
        if isinstance(profile, LensPointMass):
            return PointMass(profile.einstein_radius)
        if isinstance(profile, NFW):
            return NFWMass(profile.kappa_s, profile.scale_radius)
        if not hasattr(profile, "einstein_radius"):
            name = type(profile).__name__
            what = "nothing" if profile is None else f"an object of type {name}"
            raise ValueError(
                f"VelocityDispersionData.mass: {path!r} names {what}: the Jeans model takes a "
                "power law (einstein_radius, and slope: 2 without one), a PointMass or an NFW"
            )
        return PowerLawMass(profile.einstein_radius, getattr(profile, "slope", 2.0))

    def predicted(
        self,
        tracer: Tracer,
        cosmography: Cosmography,
        anisotropy: Anisotropy,
        backend: str,
    ) -> Any:
        """The model's dispersions, km/s, ``(n,)``: the Jeans model's times
        ``sqrt(lambda_int (1 - kappa_ext))``."""
        xp = array_module(backend)
        distances = cosmography.distances(xp)
        mass = self.model_mass(tracer)
        sigma = [
            rule_dispersion(rule, mass, self.light, anisotropy, distances, backend)
            for rule in self.rules
        ]
        return xp.stack([xp.asarray(s) for s in sigma]) * xp.sqrt(cosmography.lambda_total)

    def chi_squared(self, predicted: Any, xp: Any = np) -> Any:
        """``r^T C^-1 r`` of the residuals ``sigma - predicted``."""
        r = xp.asarray(self.sigma) - predicted
        return r @ (xp.asarray(self.precision) @ r)


@dataclass(frozen=True, eq=False)
class CosmographyLikelihood(ValueIdentity):
    """``log L = log L_imaging + log L_point_source + log L_kinematics``, with ``D_dt`` and
    the dispersion from :class:`Cosmography` (module docstring).

    Parameters
    ----------
    dataset : Imaging or None
        The imaging (None: the point source alone).
    model : Tracer
        The lens (a single plane) and sources; the free values are replaced from each vector.
    point_source : PointSource
        Its ``time_delay_distance`` is computed, never free.
    point_source_likelihood : PointSourceLikelihood
        Its data must hold delays.
    cosmography : Cosmography
        Its parameters' values (the free ones replaced from each vector) and the redshifts.
    kinematics : VelocityDispersionData, optional
    anisotropy : Isotropic, ConstantBeta or OsipkovMerritt, optional
        Needed with ``kinematics``.
    free : tuple of str
        Free paths: the tracer's, ``point_source.``, ``cosmography.`` and ``kinematics.``
        (the anisotropy's) ones.
    """

    dataset: Any = static_field()
    model: Tracer = static_field()
    point_source: PointSource = static_field()
    point_source_likelihood: PointSourceLikelihood = static_field()
    cosmography: Cosmography = static_field()
    kinematics: Any = static_field(default=None)
    anisotropy: Any = static_field(default=None)
    free: tuple = static_field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "free", tuple(self.free))
        super().__post_init__()
        if type(self.model) is not Tracer:
            raise TypeError(
                "CosmographyLikelihood.model must be a single-plane Tracer (a multi-plane "
                "lens's delays take PointSource.h0)"
            )
        if not isinstance(self.cosmography, Cosmography):
            raise TypeError("CosmographyLikelihood.cosmography must be a Cosmography")
        if self.point_source_likelihood.data.delays is None:
            raise ValueError(
                "CosmographyLikelihood: the point-source data hold no delays, so nothing "
                "measures H0; give PointSourceData delays"
            )
        if D_DT in self.free:
            raise ValueError(
                f"CosmographyLikelihood: {D_DT!r} follows from cosmography.h0 (and omega_m, "
                "lambda_int, kappa_ext); it cannot be free"
            )
        if (self.kinematics is None) != (self.anisotropy is None):
            raise ValueError(
                "CosmographyLikelihood: kinematics (VelocityDispersionData) and anisotropy "
                "come together"
            )
        if self.kinematics is not None:
            if not isinstance(self.kinematics, VelocityDispersionData):
                raise TypeError("CosmographyLikelihood.kinematics must be VelocityDispersionData")
            self.kinematics.model_mass(self.model)  # a clear error for a wrong path now
        known = set(self._inner_paths()) | set(self._own_paths())
        unknown = [p for p in self.free if p not in known]
        if unknown:
            raise ValueError(
                f"CosmographyLikelihood.free: {unknown} are not scalar parameters; known: "
                f"{sorted(known)}"
            )
        if len(set(self.free)) != len(self.free):
            raise ValueError(f"CosmographyLikelihood.free repeats a path: {self.free}")
        self.joint  # noqa: B018 (its checks, now)

    def _inner_paths(self) -> list[str]:
        """The tracer's and the point source's scalar paths (the joint likelihood's)."""
        return parameter_paths(self.model) + [
            POINT_SOURCE + p for p in parameter_paths(self.point_source) if p != D_DT_FIELD
        ]

    def _own_paths(self) -> list[str]:
        paths = [COSMOGRAPHY + p for p in parameter_paths(self.cosmography)]
        if self.anisotropy is not None:
            paths += [KINEMATICS + p for p in parameter_paths(self.anisotropy)]
        return paths

    # -- the parts -----------------------------------------------------------------------

    @property
    def n_params(self) -> int:
        """The number of free parameters."""
        return len(self.free)

    @cached_property
    def _columns(self) -> tuple[list[int], list[int]]:
        """Columns of the joint likelihood's parameters, and of this one's own."""
        inner = [i for i, p in enumerate(self.free) if part_path(p)[0] in (None, "point_source")]
        own = [i for i in range(len(self.free)) if i not in inner]
        return inner, own

    @cached_property
    def joint(self) -> JointLikelihood:
        """The imaging and point-source likelihood, ``D_dt`` its last free parameter."""
        inner = tuple(self.free[i] for i in self._columns[0])
        return JointLikelihood(
            self.dataset,
            self.model,
            self.point_source,
            self.point_source_likelihood,
            (*inner, D_DT),
        )

    @property
    def reference(self) -> np.ndarray:
        """The model's own values of the free parameters."""
        return np.array([float(self._value(p)) for p in self.free])

    def _value(self, path: str) -> Any:
        name, inner = part_path(path)
        part = {
            None: self.model,
            "point_source": self.point_source,
            "cosmography": self.cosmography,
            "kinematics": self.anisotropy,
        }[name]
        return get_path(part, inner)

    def _parts(self, values: Any) -> tuple[Cosmography, Any]:
        """The cosmography and anisotropy at ``values`` (one per free parameter)."""
        cosmo: dict[str, Any] = {}
        aniso: dict[str, Any] = {}
        for j in self._columns[1]:
            name, inner = part_path(self.free[j])
            (cosmo if name == "cosmography" else aniso)[inner] = values[j]
        anisotropy = None if self.anisotropy is None else set_paths(self.anisotropy, aniso, False)
        return set_paths(self.cosmography, cosmo, False), anisotropy

    def instances(self, vector: Any) -> tuple[Tracer, PointSource, Cosmography, Any]:
        """The tracer, point source (its ``D_dt`` computed), cosmography and anisotropy at
        ``vector`` (a clear error when out of range)."""
        v = [float(x) for x in np.asarray(vector, dtype=float).reshape(-1)]
        cosmography, anisotropy = self._parts(v)
        tracer, point = self.joint.instances(self._inner_vector(np.asarray(v), cosmography))
        return tracer, point, cosmography, anisotropy

    def _inner_vector(self, values: Any, cosmography: Cosmography, xp: Any = np) -> Any:
        """The joint likelihood's vector(s): the inner columns, then ``lambda D_dt``."""
        d = cosmography.distances(xp)
        d_dt = cosmography.lambda_total * d.d_dt
        inner = values[..., xp.asarray(self._columns[0], dtype=int)]
        d_dt = xp.broadcast_to(xp.asarray(d_dt), values.shape[:-1])
        return xp.concatenate([inner, d_dt[..., None]], axis=-1)

    # -- evaluation ----------------------------------------------------------------------

    def __call__(self, vector: Any, backend: str | None = None) -> Any:
        """``log L`` at one vector (``-inf`` outside the valid ranges): a float, or for a JAX
        array or tracer a JAX scalar (jit-, grad-, vmap-able)."""
        if any_jax(vector):
            resolve_backend(backend, vector)
            return self.jax_log_likelihood(check_jax_vectors(vector, self.free, 1))
        return float(self.batch(np.atleast_2d(np.asarray(vector, dtype=float)), backend)[0])

    def batch(self, vectors: Any, backend: str | None = None, **settings: Any) -> np.ndarray:
        """``log L`` of each row of ``vectors (n_batch, n_params)``; ``settings`` go to the
        joint likelihood's batches. JAX ``vectors`` give ``jax.vmap`` of
        :meth:`jax_log_likelihood`."""
        if any_jax(vectors):
            resolve_backend(backend, vectors)
            return jax_batch(self.jax_log_likelihood, check_jax_vectors(vectors, self.free, 2))
        backend = resolve_backend(backend)
        values = check_vectors(np.asarray(vectors, dtype=float), self.free)
        if backend == "jax":
            chunks = [values[i : i + JAX_CHUNK] for i in range(0, len(values), JAX_CHUNK)]
            return np.concatenate([self._jax_chunk(c) for c in chunks])
        valid, _ = checked_rows(self._parts, values)  # the rows inside every range
        safe = np.where(valid[:, None], values, self.reference[None, :])
        cosmography = self._parts([c for c in safe.T])[0]
        with np.errstate(all="ignore"):
            inner = self._inner_vector(safe, cosmography)
        out = self.joint.batch(inner, backend, **settings)
        out = np.where(valid, out, -np.inf)
        if self.kinematics is not None:
            for i in np.flatnonzero(np.isfinite(out)):
                out[i] += self._kinematics_log_likelihood(safe[i], backend)
        return finite_or_minus_inf(np.asarray(out, dtype=float))

    def _kinematics_log_likelihood(self, row: np.ndarray, backend: str) -> float:
        values = [float(x) for x in row]
        cosmography, anisotropy = self._parts(values)
        tracer = self.joint._members(list(self._inner_vector(row, cosmography)))[0]
        kin = self.kinematics
        predicted = kin.predicted(tracer, cosmography, anisotropy, backend)
        return -0.5 * float(kin.chi_squared(np.asarray(predicted, dtype=float)))

    def _jax_chunk(self, values: np.ndarray) -> np.ndarray:
        n = values.shape[0]
        if n < JAX_CHUNK and n > 1:
            pad = np.repeat(self.reference[None, :], JAX_CHUNK - n, 0)
            values = np.concatenate([values, pad])
        return run_jax_rows(self, values, n)

    def jax_log_likelihood(self, vector: Any) -> Any:
        """``log L`` of one vector, JAX-traceable (``-inf`` outside the valid ranges)."""
        from twinlens.backend import jax_runtime
        from twinlens.profiles.checks import collect_validity

        jnp = jax_runtime.load().numpy
        with collect_validity() as conditions:
            self._parts(vector)
        valid = jnp.all(jnp.isfinite(vector))
        for c in conditions:
            valid = valid & jnp.all(c)
        safe = jnp.where(valid, vector, jnp.asarray(self.reference))
        cosmography, anisotropy = self._parts(safe)
        inner = self._inner_vector(safe, cosmography, jnp)
        total = self.joint.jax_log_likelihood(inner)
        if self.kinematics is not None:
            tracer = self.joint._members(inner)[0]
            kin = self.kinematics
            predicted = kin.predicted(tracer, cosmography, anisotropy, "jax")
            total = total - 0.5 * kin.chi_squared(predicted, jnp)
        return jnp.where(valid, total, -jnp.inf)

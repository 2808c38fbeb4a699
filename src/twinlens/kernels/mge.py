"""Multi-Gaussian expansions: N concentric elliptical Gaussians sharing centre and ellipticity.

Each function sums :mod:`twinlens.kernels.gaussian`'s single-Gaussian math over the components
``(sigmas[k], kappas[k])`` inside one pass over the points: the frame rotation and the
ellipticity algebra are done once per point, not once per component. On numba the sum is a loop
inside the compiled per-point function; under JAX the same single-Gaussian function is
``vmap``-ed over the components and summed, which keeps the traced program the size of one
component rather than N (a Python loop would be unrolled N times).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from twinlens.backend import jax_runtime
from twinlens.kernels import gaussian
from twinlens.kernels.domains import Arg
from twinlens.kernels.gaussian import _deflections_shajib, _hessian_shajib, _rotate_hessian
from twinlens.kernels.geometry import from_profile_frame, to_profile_frame
from twinlens.kernels.ops import pointwise
from twinlens.kernels.registry import Kernel, register


@pointwise
def convergence(x, y, centre_x, centre_y, e1, e2, sigmas, kappas):
    """Sum of the components' convergences."""
    total = 0.0 * x
    for k in range(len(sigmas)):
        total = total + gaussian.convergence(x, y, centre_x, centre_y, e1, e2, sigmas[k], kappas[k])
    return total


@pointwise
def deflections_spherical(x, y, centre_x, centre_y, sigmas, kappas):
    """Deflections of round components (``q = 1``), arcsec."""
    ax = 0.0 * x
    ay = 0.0 * x
    for k in range(len(sigmas)):
        bx, by = gaussian.deflections_spherical(x, y, centre_x, centre_y, sigmas[k], kappas[k])
        ax = ax + bx
        ay = ay + by
    return ax, ay


@pointwise
def deflections_elliptical(x, y, centre_x, centre_y, q, phi, sigmas, kappas):
    """Deflections for ``q`` in ``[0.05, 0.96]`` (Shajib 2019), arcsec; one rotation per point."""
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    ax = 0.0 * xp
    ay = 0.0 * xp
    for k in range(len(sigmas)):
        bx, by = _deflections_shajib(xp, yp, q, sigmas[k], kappas[k])
        ax = ax + bx
        ay = ay + by
    return from_profile_frame(ax, ay, phi)


@pointwise
def deflections_near_round(x, y, centre_x, centre_y, e1, e2, sigmas, kappas):
    """Deflections for ``|e| < gaussian.E_SWITCH``, arcsec."""
    ax = 0.0 * x
    ay = 0.0 * x
    for k in range(len(sigmas)):
        bx, by = gaussian.deflections_near_round(
            x, y, centre_x, centre_y, e1, e2, sigmas[k], kappas[k]
        )
        ax = ax + bx
        ay = ay + by
    return ax, ay


@pointwise
def deflections(x, y, centre_x, centre_y, e1, e2, sigmas, kappas):
    """Deflections for any ellipticity, differentiable in every parameter, arcsec."""
    ax = 0.0 * x
    ay = 0.0 * x
    for k in range(len(sigmas)):
        bx, by = gaussian.deflections(x, y, centre_x, centre_y, e1, e2, sigmas[k], kappas[k])
        ax = ax + bx
        ay = ay + by
    return ax, ay


@pointwise
def hessian_elliptical(x, y, centre_x, centre_y, q, phi, sigmas, kappas):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` for ``q`` in ``[0.05, 0.96]``."""
    xp, yp = to_profile_frame(x, y, centre_x, centre_y, phi)
    hxx = 0.0 * xp
    hxy = 0.0 * xp
    hyy = 0.0 * xp
    for k in range(len(sigmas)):
        a, b, c = _hessian_shajib(xp, yp, q, sigmas[k], kappas[k])
        hxx = hxx + a
        hxy = hxy + b
        hyy = hyy + c
    return _rotate_hessian(hxx, hxy, hyy, phi)


@pointwise
def hessian(x, y, centre_x, centre_y, e1, e2, sigmas, kappas):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` for any ellipticity."""
    hxx = 0.0 * x
    hxy = 0.0 * x
    hyy = 0.0 * x
    for k in range(len(sigmas)):
        a, b, c = gaussian.hessian(x, y, centre_x, centre_y, e1, e2, sigmas[k], kappas[k])
        hxx = hxx + a
        hxy = hxy + b
        hyy = hyy + c
    return hxx, hxy, hyy


@pointwise
def potential(x, y, centre_x, centre_y, e1, e2, sigmas, kappas):
    """Lensing potential, arcsec^2, zero at the centre."""
    total = 0.0 * x
    for k in range(len(sigmas)):
        total = total + gaussian.potential(x, y, centre_x, centre_y, e1, e2, sigmas[k], kappas[k])
    return total


# ------------------------------------------------------------------------------------------
# JAX: vmap the single-Gaussian kernel over the components


def _summed_over_components(single: Callable[..., Any]) -> Callable[..., tuple]:
    """A JAX implementation: ``single`` vmapped over the last two arguments, summed."""

    @cache
    def build() -> Callable[..., tuple]:
        jax = jax_runtime.load()

        def run(*args: Any) -> tuple:
            *head, sigmas, kappas = args
            out = jax.vmap(lambda s, k: single(*head, s, k))(sigmas, kappas)
            out = out if isinstance(out, tuple) else (out,)
            return tuple(o.sum(axis=0) for o in out)

        return jax.jit(run)

    def call(*args: Any) -> tuple:
        return build()(*args)

    return call


_N_COMPONENTS = 5
_SIGMAS = Arg("sigmas", gaussian._SIGMA, size=_N_COMPONENTS)
_KAPPAS = Arg("kappas", gaussian._KAPPA0, size=_N_COMPONENTS)


def _register(name, point, single, params, outputs, tol=gaussian._TOL, power=1):
    # the absolute floor scales with sum_k kappa_k sigma_k^power (the components' sizes)
    register(
        Kernel(
            name=f"mge.{name}",
            point=point,
            inputs=(Arg("x", gaussian._XY), Arg("y", gaussian._XY)),
            params=(*(Arg(n, d) for n, d in params), _SIGMAS, _KAPPAS),
            outputs=outputs,
            tol=tol,
            ties=gaussian._TIES,
            impls={"jax": _summed_over_components(single)},
            atol_scale=lambda *p, power=power: float(np.sum(np.abs(p[-1]) * p[-2] ** power)),
            doc=point.__doc__ or "",
        )
    )


_C = gaussian._C
_EA, _ER, _QP, _H = gaussian._EA, gaussian._ER, gaussian._QP, gaussian._H
_A = ("alpha_x", "alpha_y")
_register("convergence", convergence, gaussian.convergence, (*_C, *_EA), ("kappa",), power=0)
_register("deflections_spherical", deflections_spherical, gaussian.deflections_spherical, _C, _A)
_register(
    "deflections_elliptical",
    deflections_elliptical,
    gaussian.deflections_elliptical,
    (*_C, *_QP),
    _A,
)
_register(
    "deflections_near_round",
    deflections_near_round,
    gaussian.deflections_near_round,
    (*_C, *_ER),
    _A,
)
_register("deflections", deflections, gaussian.deflections, (*_C, *_EA), _A)
_T = gaussian._TOL_HESSIAN
_register(
    "hessian_elliptical", hessian_elliptical, gaussian.hessian_elliptical, (*_C, *_QP), _H, _T
)
_register("hessian", hessian, gaussian.hessian, (*_C, *_EA), _H, _T)
_register("potential", potential, gaussian.potential, (*_C, *_EA), ("psi",))

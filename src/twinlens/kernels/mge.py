"""Multi-Gaussian expansions: N concentric elliptical Gaussians sharing centre and ellipticity.

Each kernel here is a single-Gaussian function of :mod:`twinlens.kernels.gaussian` summed over
the components ``(sigmas[k], kappas[k])``, inside one kernel call on every backend (the
registry's ``components`` option): numpy loops over the components on whole arrays; numba runs
one compiled loop (components outside, points inside and parallel, which keeps each component's
constants out of the point loop); JAX ``vmap``-s the single-Gaussian function over the
components and sums, so the traced program holds one component's math, not N.

For a scientist, the math is the single-Gaussian function: e.g. the deflection of an MGE is
``sum(gaussian.deflections_elliptical(x, y, cx, cy, q, phi, s, k) for s, k in zip(sigmas,
kappas))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from twinlens.kernels import gaussian, mge_far_field
from twinlens.kernels.domains import Arg
from twinlens.kernels.registry import Kernel, KernelFamily
from twinlens.kernels.tolerance import Tolerance

_N_COMPONENTS = 5
_SIGMAS = Arg("sigmas", gaussian._SIGMA, size=_N_COMPONENTS)
_KAPPAS = Arg("kappas", gaussian._KAPPA0, size=_N_COMPONENTS)
_FAMILY = KernelFamily("mge", gaussian._XY, tol=gaussian._TOL)


def _component_scale(power: int) -> Callable[..., float]:
    # the absolute floor scales with sum_k |kappa_k| sigma_k^power (the components' sizes)
    return lambda kappas, sigmas, **_: float(np.sum(np.abs(kappas) * sigmas**power))


def _summed(
    name: str,
    single: Callable[..., Any],
    params: tuple[Arg, ...],
    outputs: tuple[str, ...],
    tol: Tolerance | None = None,
    power: int = 1,
    impls: dict[str, Callable[..., Any]] | None = None,
) -> Kernel:
    # the sum over components of the single-Gaussian kernel of the same name
    return _FAMILY.register(
        name,
        single,
        outputs,
        params=(*params, _SIGMAS, _KAPPAS),
        tol=tol,
        atol_scale=_component_scale(power),
        impls=impls,
        components=2,
        doc=f"Sum over components of gaussian.{name}: {single.__doc__ or ''}",
    )


_C, _EA, _ER, _QP = gaussian._C, gaussian._EA, gaussian._ER, gaussian._QP
_A, _H = gaussian._A, gaussian._H
_T = gaussian._TOL_HESSIAN
g = gaussian
CONVERGENCE = _summed("convergence", g.convergence, (*_C, *_EA), ("kappa",), power=0)
DEFLECTIONS_SPHERICAL = _summed("deflections_spherical", g.deflections_spherical, _C, _A)
DEFLECTIONS_ELLIPTICAL = _summed(
    "deflections_elliptical",
    g.deflections_elliptical,
    (*_C, *_QP),
    _A,
    # numba: the components far from a point summed as one series (mge_far_field)
    impls={"numba": mge_far_field.deflections_elliptical},
)
DEFLECTIONS_NEAR_ROUND = _summed(
    "deflections_near_round", g.deflections_near_round, (*_C, *_ER), _A
)
DEFLECTIONS = _summed(
    "deflections",
    g.deflections,
    (*_C, *_EA),
    _A,
    impls={"numba": g.by_ellipticity(DEFLECTIONS_NEAR_ROUND, DEFLECTIONS_ELLIPTICAL)},
)
HESSIAN_ELLIPTICAL = _summed(
    "hessian_elliptical", g.hessian_elliptical, (*_C, *_QP), _H, _T, power=0
)
HESSIAN_NEAR_ROUND = _summed(
    "hessian_near_round", g.hessian_near_round, (*_C, *_ER), _H, _T, power=0
)
HESSIAN = _summed(
    "hessian",
    g.hessian,
    (*_C, *_EA),
    _H,
    _T,
    power=0,
    impls={"numba": g.by_ellipticity(HESSIAN_NEAR_ROUND, HESSIAN_ELLIPTICAL)},
)
POTENTIAL = _summed("potential", g.potential, (*_C, *_EA), ("psi",), power=2)
del g

#: The kernel for each ``(quantity, form)``, the forms of
#: :data:`twinlens.kernels.gaussian.KERNELS` (the round hessian is the near-round form's).
KERNELS = _FAMILY.by_form()

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

import numpy as np

from twinlens.kernels import gaussian
from twinlens.kernels.domains import Arg
from twinlens.kernels.registry import Kernel, register

_N_COMPONENTS = 5
_SIGMAS = Arg("sigmas", gaussian._SIGMA, size=_N_COMPONENTS)
_KAPPAS = Arg("kappas", gaussian._KAPPA0, size=_N_COMPONENTS)


def _register(name, params, outputs, tol=gaussian._TOL, power=1, impls=None):
    single = getattr(gaussian, name)
    register(
        Kernel(
            name=f"mge.{name}",
            point=single,
            inputs=(Arg("x", gaussian._XY), Arg("y", gaussian._XY)),
            params=(*(Arg(n, d) for n, d in params), _SIGMAS, _KAPPAS),
            outputs=outputs,
            tol=tol,
            ties=gaussian._TIES,
            components=2,
            impls=impls or {},
            # the absolute floor scales with sum_k |kappa_k| sigma_k^power (the components' sizes)
            atol_scale=lambda *p, power=power: float(np.sum(np.abs(p[-1]) * p[-2] ** power)),
            doc=f"Sum over components of gaussian.{name}: {single.__doc__ or ''}",
        )
    )


_C, _EA, _ER, _QP, _H = gaussian._C, gaussian._EA, gaussian._ER, gaussian._QP, gaussian._H
_A = ("alpha_x", "alpha_y")
_T = gaussian._TOL_HESSIAN
_register("convergence", (*_C, *_EA), ("kappa",), power=0)
_register("deflections_spherical", _C, _A)
_register("deflections_elliptical", (*_C, *_QP), _A)
_register("deflections_near_round", (*_C, *_ER), _A)
_register(
    "deflections", (*_C, *_EA), _A, impls={"numba": gaussian.numba_by_form("mge", "deflections")}
)
_register("hessian_elliptical", (*_C, *_QP), _H, _T, power=0)
_register("hessian_near_round", (*_C, *_ER), _H, _T, power=0)
_register(
    "hessian",
    (*_C, *_EA),
    _H,
    _T,
    power=0,
    impls={"numba": gaussian.numba_by_form("mge", "hessian")},
)
_register("potential", (*_C, *_EA), ("psi",), power=2)

"""Invariants every mass profile must satisfy, as reusable assertions.

Each takes a profile (or a function that builds one) and positions, and checks a relation
between quantities computed independently (a kernel against JAX autodiff of another kernel, a
field against its rotated or shifted twin), never against our own stored output.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from twinlens.backend import BACKENDS, jax_runtime

jax = jax_runtime.load()
jnp = jax.numpy


def default_points(scale: float = 1.0) -> np.ndarray:
    """A 13 x 9 grid over [-3, 3] x [-2, 2] times ``scale`` that avoids the origin."""
    xs = np.linspace(-3, 3, 13) + 0.0123
    ys = np.linspace(-2, 2, 9) - 0.0071
    return scale * np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)


def assert_backends_agree(profile, xy, rtol=1e-12, atol=1e-15, quantities=None) -> None:
    """Every quantity on numba and JAX equals numpy's."""
    for name in quantities or ("convergence", "deflections", "hessian", "potential"):
        ref = np.asarray(getattr(profile, name)(xy, backend="numpy"))
        for backend in ("numba", "jax"):
            out = np.asarray(getattr(profile, name)(xy, backend=backend))
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=f"{name} {backend}")


def assert_deflection_is_potential_gradient(profile, xy, rtol=1e-10, atol=1e-13) -> None:
    """``alpha = grad psi``: JAX autodiff of the potential kernel against the deflection kernel
    (numpy backend)."""
    grad = jax.vmap(jax.grad(lambda p: profile.potential(p[None], backend="jax")[0]))(
        jnp.asarray(xy)
    )
    alpha = np.asarray(profile.deflections(xy, backend="numpy"))
    np.testing.assert_allclose(np.asarray(grad), alpha, rtol=rtol, atol=atol)


def assert_hessian_is_deflection_jacobian(profile, xy, rtol=1e-10, atol=1e-13) -> None:
    """``H = d alpha / d theta``: JAX forward-mode of the deflection kernel against the hessian
    kernel (numba backend)."""
    jac = jax.vmap(jax.jacfwd(lambda p: profile.deflections(p[None], backend="jax")[0]))(
        jnp.asarray(xy)
    )
    hess = np.asarray(profile.hessian(xy, backend="numba"))
    np.testing.assert_allclose(hess, np.asarray(jac), rtol=rtol, atol=atol)


def assert_convergence_is_half_trace(profile, xy, rtol=1e-11, atol=1e-13) -> None:
    """``kappa = (psi_xx + psi_yy) / 2`` on every backend, and the hessian is symmetric."""
    for backend in BACKENDS:
        h = np.asarray(profile.hessian(xy, backend=backend))
        kappa = np.asarray(profile.convergence(xy, backend=backend))
        np.testing.assert_allclose(0.5 * (h[..., 0, 0] + h[..., 1, 1]), kappa, rtol=rtol, atol=atol)
        np.testing.assert_array_equal(h[..., 0, 1], h[..., 1, 0])


def rotate_points(xy, angle: float, about=(0.0, 0.0)) -> np.ndarray:
    """Rotate positions (or vectors, with ``about=(0, 0)``) counter-clockwise by ``angle``
    radians about ``about``."""
    c, s = math.cos(angle), math.sin(angle)
    d = np.asarray(xy, dtype=float) - np.asarray(about)
    return np.stack([c * d[..., 0] - s * d[..., 1], s * d[..., 0] + c * d[..., 1]], -1) + about


def rotate_ellipticity(ell, angle: float) -> tuple[float, float]:
    """``(e1, e2)`` of an ellipse rotated by ``angle`` radians (``e`` turns by ``2 angle``)."""
    c, s = math.cos(2 * angle), math.sin(2 * angle)
    return (c * ell[0] - s * ell[1], s * ell[0] + c * ell[1])


def assert_rotation_covariant(
    profile, rotated, xy, angles: Sequence[float] = (0.3, -1.1, math.pi / 2), rtol=1e-11, atol=1e-13
) -> None:
    """A profile rotated by ``a`` about its centre (``rotated(profile, a)``) has, at the
    rotated points, the same convergence and potential and the rotated deflections."""
    centre = getattr(profile, "centre", (0.0, 0.0))
    kappa = np.asarray(profile.convergence(xy))
    psi = np.asarray(profile.potential(xy))
    alpha = np.asarray(profile.deflections(xy))
    for a in angles:
        turned = rotated(profile, a)
        rxy = rotate_points(xy, a, about=centre)
        np.testing.assert_allclose(turned.convergence(rxy), kappa, rtol=rtol, atol=atol)
        np.testing.assert_allclose(turned.potential(rxy), psi, rtol=rtol, atol=atol)
        np.testing.assert_allclose(
            turned.deflections(rxy), rotate_points(alpha, a), rtol=rtol, atol=atol
        )


def rotated_by_ellipticity(profile, angle: float):
    """``rotated`` for profiles whose only orientation is ``ell_comps``."""
    return dataclasses.replace(profile, ell_comps=rotate_ellipticity(profile.ell_comps, angle))


def assert_translation_covariant(profile, xy, shift=(0.37, -0.21), rtol=1e-11, atol=1e-13) -> None:
    """Moving the centre and the points by the same shift changes nothing."""
    moved = dataclasses.replace(
        profile, centre=(profile.centre[0] + shift[0], profile.centre[1] + shift[1])
    )
    mxy = np.asarray(xy) + np.asarray(shift)
    for name in ("convergence", "deflections", "hessian"):
        np.testing.assert_allclose(
            getattr(moved, name)(mxy), getattr(profile, name)(xy), rtol=rtol, atol=atol
        )


def assert_continuous_as_q_to_1(build: Callable[[float], object], xy, rtol=1e-7) -> None:
    """``build(q)`` (a profile of axis ratio ``q``) changes by O(1 - q) as ``q -> 1``: at
    ``1 - 1e-8`` the fields are within ``rtol`` of ``q = 1``'s, on every backend."""
    for backend in BACKENDS:
        round_ = build(1.0)
        near = build(1.0 - 1e-8)
        for name in ("convergence", "deflections", "hessian", "potential"):
            a = np.asarray(getattr(near, name)(xy, backend=backend))
            b = np.asarray(getattr(round_, name)(xy, backend=backend))
            scale = np.max(np.abs(b))
            np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale, err_msg=f"{name} {backend}")


def mean_convergence_inside_circle(profile, radius: float, centre=(0.0, 0.0)) -> float:
    """Mean convergence inside a circle, by Gauss's law: the flux of the deflection through the
    circle over its area (2 pi r^2), with a 4000-point periodic trapezoid rule (exponentially
    accurate for smooth periodic integrands)."""
    t = np.linspace(0.0, 2.0 * np.pi, 4001)[:-1]
    normal = np.stack([np.cos(t), np.sin(t)], axis=-1)
    ring = np.asarray(centre) + radius * normal
    flux = np.mean(np.sum(np.asarray(profile.deflections(ring)) * normal, axis=-1))
    return float(flux * 2.0 * np.pi * radius / (2.0 * np.pi * radius**2))


def assert_gradients_finite(build: Callable, params: Sequence[float], point) -> np.ndarray:
    """JAX forward-mode derivatives of every quantity with respect to the parameters
    (``build(*params)`` makes the profile) are finite at ``point``; returns the deflection
    Jacobian (2 x n_params)."""
    p = jnp.asarray(np.asarray(params, dtype=float))
    xy = jnp.asarray(np.asarray(point, dtype=float))[None]
    jac = None
    for name in ("convergence", "deflections", "hessian", "potential"):

        def field(par, name=name):
            return getattr(build(*par), name)(xy, backend="jax")[0]

        j = np.asarray(jax.jacfwd(field)(p))
        assert np.all(np.isfinite(j)), f"{name}: non-finite gradient {j}"
        if name == "deflections":
            jac = j
    return jac


def finite_difference_jacobian(build: Callable, params, point, eps=1e-6) -> np.ndarray:
    """Central differences of the deflection on the numpy backend (2 x n_params)."""
    params = np.asarray(params, dtype=float)
    xy = np.asarray(point, dtype=float)[None]
    out = np.empty((2, len(params)))
    for i in range(len(params)):
        up, down = params.copy(), params.copy()
        up[i] += eps
        down[i] -= eps
        fu = np.asarray(build(*up).deflections(xy, backend="numpy"))[0]
        fd = np.asarray(build(*down).deflections(xy, backend="numpy"))[0]
        out[:, i] = (fu - fd) / (2 * eps)
    return out

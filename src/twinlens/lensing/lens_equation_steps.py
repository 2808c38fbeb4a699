"""The steps of the lens-equation solver that every backend shares (see
:mod:`twinlens.lensing.lens_equation` for the method): the triangle table and the mapped grid,
the first guess inside a triangle, the clipped Newton refinement, and the acceptance,
de-duplication and packing of the images. Each takes the array module ``xp`` (numpy, or
``jax.numpy`` inside the JAX program).
"""

from __future__ import annotations

import math
from functools import cache, partial
from typing import Any, Protocol

import numpy as np

from twinlens.lensing import lens_equation_loops as loops
from twinlens.lensing.multiplane import MultiPlaneTracer
from twinlens.lensing.tracer import Tracer

#: barycentric slack: a source on an edge (to rounding) is inside both triangles
_SLACK = 1e-9
#: candidates closer than this many cells are one image
_SAME_IMAGE_CELLS = 1e-4
#: a Newton step is clipped to this many cells
_MAX_STEP_CELLS = 2.0
#: a candidate is dropped after this many clipped steps
_MAX_CLIPPED = 4
#: on the host a candidate stops once its step is below this, relative to ``1 + |theta|``
#: (Newton converges quadratically: the next step would be far below rounding)
_CONVERGED_STEP = 1e-11


class Settings(Protocol):
    """What the steps read of an :class:`~twinlens.lensing.lens_equation.ImageSolver`."""

    @property
    def spacing(self) -> float:
        """Grid cell size, arcsec."""
        ...

    @property
    def newton_iterations(self) -> int:
        """Newton steps at most."""
        ...

    @property
    def tolerance(self) -> float:
        """Largest source-plane residual of an image, arcsec."""
        ...

    @property
    def max_images(self) -> int:
        """Slots per source."""
        ...


_BLOCK = 8  # cells per block side


@cache
def _triangle_table(cells: int) -> np.ndarray:
    n, b = cells, _BLOCK
    nb = -(-n // b)
    table = -np.ones((nb, nb, b, b, 2, 3), dtype=np.int64)
    j, i = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    v00 = j * (n + 1) + i
    v10, v01, v11 = v00 + 1, v00 + n + 1, v00 + n + 2
    table[j // b, i // b, j % b, i % b, 0] = np.stack([v00, v10, v11], axis=-1)
    table[j // b, i // b, j % b, i % b, 1] = np.stack([v00, v11, v01], axis=-1)
    flat = table.reshape(nb * nb, 2 * b * b, 3)
    flat.flags.writeable = False
    return flat


def slot_layout(table: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> tuple[Any, Any, Any]:
    """What every lens shares of the triangle slots: which are padding ``(n_blocks, P, 1)``,
    their vertex indices with the padding's made safe ``(n_blocks, P, 3)``, and their
    image-plane vertices ``(n_blocks, P, 6)`` (zeros in padding)."""
    pad = table[..., :1] < 0
    safe = np.where(table < 0, 0, table)
    return pad, safe, _gather(pad, safe, vx, vy, np)


def _gather(pad: Any, safe: Any, ux: Any, uy: Any, xp: Any) -> Any:
    """Each slot's three vertices ``(x0, y0, x1, y1, x2, y2)``, zeros in padding: one
    indexing of the ``(n, 2)`` points by the slots' ``(n_blocks, P, 3)`` indices."""
    points = xp.stack([ux, uy], axis=-1)[safe]  # (n_blocks, P, 3, 2)
    return xp.where(xp.asarray(pad), 0.0, points.reshape(*safe.shape[:2], 6))


def _block_arrays(layout: tuple[Any, Any, Any], mx: Any, my: Any, xp: Any) -> tuple[Any, Any, Any]:
    """Triangle slots' mapped and image-plane vertices ``(T, 6)`` (zeros in padding, which
    has zero area) and the blocks' source-plane boxes ``(n_blocks, 4)``, given the slots'
    :func:`slot_layout`."""
    pad, safe, image = layout
    tri = _gather(pad, safe, mx, my, xp)
    xs, ys = tri[..., 0::2], tri[..., 1::2]
    big = xp.where(xp.asarray(pad), xp.inf, 0.0)
    boxes = xp.stack(
        [
            (xs + big).min(axis=(1, 2)),
            (xs - big).max(axis=(1, 2)),
            (ys + big).min(axis=(1, 2)),
            (ys - big).max(axis=(1, 2)),
        ],
        axis=-1,
    )
    n_slots = safe.shape[0] * safe.shape[1]
    return tri.reshape(n_slots, 6), xp.asarray(image).reshape(n_slots, 6), boxes


def _lens_deflections(tracer: Tracer, x: Any, y: Any, backend: str) -> tuple[Any, Any]:
    if isinstance(tracer, MultiPlaneTracer):  # theta - beta through every plane
        tx, ty = tracer._deflections(x, y, backend)
        return x * 0 + tx, y * 0 + ty
    ax: Any = 0.0
    ay: Any = 0.0
    for g in tracer.lenses:
        for p in g.mass:
            dx, dy = p._deflections(x, y, backend)
            ax, ay = ax + dx, ay + dy
    return x * 0 + ax, y * 0 + ay


def _lens_hessian(tracer: Tracer, x: Any, y: Any, backend: str) -> tuple[Any, Any, Any]:
    hxx: Any = 0.0
    hxy: Any = 0.0
    hyy: Any = 0.0
    for g in tracer.lenses:
        for p in g.mass:
            a, b, c = p._hessian(x, y, backend)
            hxx, hxy, hyy = hxx + a, hxy + b, hyy + c
    zero = x * 0
    return zero + hxx, zero + hxy, zero + hyy


def _first_guess(tri: Any, image: Any, sx: Any, sy: Any, xp: Any) -> tuple[Any, Any]:
    """The image-plane point whose barycentric weights in its triangle are the source's in the
    mapped triangle (exact where the map is linear over the triangle)."""
    ax, ay, bx, by, cx, cy = (tri[..., i] for i in range(6))
    la, lb, lc, _ = loops.barycentric(ax, ay, bx, by, cx, cy, sx, sy)
    x = la * image[..., 0] + lb * image[..., 2] + lc * image[..., 4]
    y = la * image[..., 1] + lb * image[..., 3] + lc * image[..., 5]
    return x, y


def _jacobian(tracer: Tracer, x: Any, y: Any, backend: str) -> tuple[Any, Any, Any, Any]:
    """``A = d beta / d theta`` as ``(a11, a12, a21, a22)`` (symmetric on one plane)."""
    if isinstance(tracer, MultiPlaneTracer):
        hxx, hxy, hyx, hyy = tracer._hessian_components(x, y, backend)
        return 1.0 - hxx, -hxy, -hyx, 1.0 - hyy
    hxx, hxy, hyy = _lens_hessian(tracer, x, y, backend)
    return 1.0 - hxx, -hxy, -hxy, 1.0 - hyy


def _newton_step(
    tracer: Tracer, x: Any, y: Any, sx: Any, sy: Any, max_step: float, backend: str, xp: Any
) -> tuple[Any, Any, Any, Any]:
    """One clipped Newton step: ``(x, y, |step|, clipped)``."""
    ax, ay = _lens_deflections(tracer, x, y, backend)
    rx = sx - (x - ax)
    ry = sy - (y - ay)
    a11, a12, a21, a22 = _jacobian(tracer, x, y, backend)
    det = a11 * a22 - a12 * a21
    # on a critical curve: a long step (then clipped), never an overflow to inf and NaN
    safe = xp.where(xp.abs(det) < 1e-100, xp.copysign(1e-100, det), det)
    dx = (a22 * rx - a12 * ry) / safe
    dy = (a11 * ry - a21 * rx) / safe
    size = xp.sqrt(dx * dx + dy * dy)
    clipped = size > max_step
    scale = xp.where(clipped, max_step / xp.where(clipped, size, 1.0), 1.0)
    return x + scale * dx, y + scale * dy, size * scale, clipped


def _newton(
    tracer: Tracer,
    x: Any,
    y: Any,
    sx: Any,
    sy: Any,
    solver: Settings,
    backend: str,
    xp: Any,
) -> tuple[Any, Any, Any]:
    """Newton's iteration from ``(x, y)``: ``(x, y, alive)``. A candidate dies (stops, and is
    no image) after ``_MAX_CLIPPED`` clipped steps: its triangle held no image nearby (the
    mapped triangles about a singular centre are huge), and it would only crawl towards an
    image that another candidate finds directly. On the host a candidate also stops once its
    step is below ``_CONVERGED_STEP``; under JAX every candidate takes every step."""
    max_step = _MAX_STEP_CELLS * solver.spacing
    if xp is np:
        x, y = np.array(x, dtype=float), np.array(y, dtype=float)
        clips = np.zeros(x.shape, dtype=np.int64)
        active = np.arange(x.size)  # only the candidates still moving are stepped
        for _ in range(solver.newton_iterations):
            if active.size == 0:
                break
            nx, ny, size, clipped = _newton_step(
                tracer, x[active], y[active], sx[active], sy[active], max_step, backend, xp
            )
            clips[active] += clipped
            x[active], y[active] = nx, ny
            moving = size > _CONVERGED_STEP * (1.0 + np.abs(nx) + np.abs(ny))
            active = active[moving & (clips[active] <= _MAX_CLIPPED)]
        return x, y, clips <= _MAX_CLIPPED
    import jax

    def body(_: Any, state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        x0, y0, clips = state
        nx, ny, _size, clipped = _newton_step(tracer, x0, y0, sx, sy, max_step, backend, xp)
        alive = clips <= _MAX_CLIPPED
        return xp.where(alive, nx, x0), xp.where(alive, ny, y0), clips + (alive & clipped)

    x, y, clips = jax.lax.fori_loop(
        0, solver.newton_iterations, body, (x, y, xp.zeros(x.shape, dtype=int))
    )
    return x, y, clips <= _MAX_CLIPPED


def _without_derivatives(tracer: Tracer) -> Tracer:
    """``tracer`` with each JAX parameter under ``stop_gradient``; plain numbers stay as they
    are (a concrete parameter still picks its branch)."""
    import jax

    def stop(value: Any) -> Any:
        return jax.lax.stop_gradient(value) if isinstance(value, jax.Array) else value

    return jax.tree_util.tree_map(stop, tracer)


def _root_derivatives(tracer: Tracer, x: Any, y: Any, sx: Any, sy: Any) -> tuple[Any, Any]:
    """Roots ``(x, y)`` of the lens equation found without derivatives (JAX), as they are,
    given the implicit function theorem's derivatives: ``d theta = A^-1 (d beta + d alpha)``,
    ``d alpha`` at fixed ``theta``. The rule is evaluated at the roots it returns, so that the
    derivatives of every order are the theorem's. The tracer's JAX parameters are the
    differentiated ones; its plain numbers stay as they are (a concrete one picks its branch)."""
    import jax

    leaves, tree = jax.tree_util.tree_flatten(tracer)
    traced = [i for i, v in enumerate(leaves) if isinstance(v, jax.Array)]
    fixed = [None if i in traced else v for i, v in enumerate(leaves)]

    def rebuild(params: list) -> Tracer:
        values = list(fixed)
        for i, v in zip(traced, params, strict=True):
            values[i] = v
        return jax.tree_util.tree_unflatten(tree, values)

    return _implicit_roots()(rebuild, [leaves[i] for i in traced], x, y, sx, sy)


@cache
def _implicit_roots() -> Any:
    import jax
    import jax.numpy as jnp

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def at_roots(rebuild: Any, params: list, x: Any, y: Any, sx: Any, sy: Any) -> Any:
        return x, y

    @at_roots.defjvp
    def _(rebuild: Any, primals: tuple, tangents: tuple) -> tuple:
        params, x, y, sx, sy = primals
        d_params, _, _, d_sx, d_sy = tangents  # the roots were found without derivatives
        roots = at_roots(rebuild, params, x, y, sx, sy)  # the rule again at higher orders
        # a candidate that is no root may hold anything: its derivative is 0, never NaN
        ok = jnp.isfinite(roots[0]) & jnp.isfinite(roots[1])
        rx, ry = jnp.where(ok, roots[0], 0.0), jnp.where(ok, roots[1], 0.0)
        _, (d_ax, d_ay) = jax.jvp(
            lambda p: _lens_deflections(rebuild(p), rx, ry, "jax"), (params,), (d_params,)
        )
        a11, a12, a21, a22 = _jacobian(rebuild(params), rx, ry, "jax")
        det = a11 * a22 - a12 * a21
        det = jnp.where(jnp.abs(det) < 1e-100, jnp.copysign(1e-100, det), det)
        bx, by = d_sx + d_ax, d_sy + d_ay
        dx = jnp.where(ok, (a22 * bx - a12 * by) / det, 0.0)
        dy = jnp.where(ok, (a11 * by - a21 * bx) / det, 0.0)
        return roots, (dx, dy)

    return at_roots


def _newton_rows(
    tracer: Tracer,
    x: np.ndarray,
    y: np.ndarray,
    sx: np.ndarray,
    sy: np.ndarray,
    valid: np.ndarray,
    solver: Settings,
    backend: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The host's :func:`_newton` for a batch of lenses (a tracer with batched parameters),
    candidates ``(n_rows, c)`` (``valid`` marks the real ones): ``(x, y, alive)``. Each step
    runs every row's candidates in one set of kernel calls, and moves only those the host
    would step (still valid, moving and not clipped too often), so that every candidate takes
    the same steps as on its own."""
    max_step = _MAX_STEP_CELLS * solver.spacing
    x, y = np.array(x, dtype=float), np.array(y, dtype=float)
    clips = np.zeros(x.shape, dtype=np.int64)
    active = np.array(valid, dtype=bool)
    for _ in range(solver.newton_iterations):
        if not active.any():
            break
        nx, ny, size, clipped = _newton_step(tracer, x, y, sx, sy, max_step, backend, np)
        clips += active & clipped
        x, y = np.where(active, nx, x), np.where(active, ny, y)
        moving = size > _CONVERGED_STEP * (1.0 + np.abs(nx) + np.abs(ny))
        active &= moving & (clips <= _MAX_CLIPPED)
    return x, y, clips <= _MAX_CLIPPED


def _finish(
    tracer: Tracer,
    x: Any,
    y: Any,
    sx: Any,
    sy: Any,
    valid: Any,
    searched_all: Any,
    solver: Settings,
    backend: str,
    xp: Any,
) -> tuple[Any, Any, Any, Any, Any]:
    """Acceptance, de-duplication, magnification and parity, and packing into
    ``max_images`` slots; candidates ``(..., k)``. The fields of
    :class:`~twinlens.lensing.lens_equation.Images`, in order."""
    ax, ay = _lens_deflections(tracer, x, y, backend)
    rx = x - ax - sx
    ry = y - ay - sy
    residual = xp.sqrt(rx * rx + ry * ry)
    ok = valid & (residual <= solver.tolerance) & xp.isfinite(x) & xp.isfinite(y)
    # a candidate repeats an earlier accepted one within the merging distance
    k = x.shape[-1]
    d2 = (x[..., :, None] - x[..., None, :]) ** 2 + (y[..., :, None] - y[..., None, :]) ** 2
    earlier = xp.asarray(np.tri(k, k, -1, dtype=bool))  # [i, j]: j < i
    near = d2 <= (_SAME_IMAGE_CELLS * solver.spacing) ** 2
    repeat = xp.any(near & earlier & ok[..., None, :], axis=-1)
    keep = ok & ~repeat
    n_kept = keep.sum(axis=-1)
    m = solver.max_images
    # kept first, in grid order (numpy < 2 has no stable=: kind= there, stable= for JAX)
    stable = {"kind": "stable"} if xp is np else {"stable": True}
    order = xp.argsort(~keep, axis=-1, **stable)[..., :m]
    take = lambda a: xp.take_along_axis(a, order, axis=-1)  # noqa: E731
    mask = take(keep)
    px = xp.where(mask, take(x), 0.0)
    py = xp.where(mask, take(y), 0.0)
    a11, a12, a21, a22 = _jacobian(tracer, px, py, backend)
    det = a11 * a22 - a12 * a21
    mu = xp.where(det == 0.0, math.inf, 1.0 / xp.where(det == 0.0, 1.0, det))
    magnification = xp.where(mask, mu, 0.0)
    parity = xp.where(mask, xp.sign(det), 0.0)
    positions = xp.stack([px, py], axis=-1)
    complete = searched_all & (n_kept <= m)
    return positions, magnification, parity, mask, complete

"""The elliptical Gaussian's potential-theory integrals over homoeoids, in ``(e1, e2)``.

With ``M`` the quadratic form of :mod:`twinlens.kernels.gaussian` and
``P(u) = I + u (M^-1 - I)``, the deflection is
``alpha = int_0^1 kappa(u theta^T P^-1 theta) P^-1 theta / sqrt(det P) du`` (the hessian by
differentiating under the integral) and the potential
``psi = kappa0 sigma^2 int_0^1 b h(u b) / sqrt(det P) du``. Both are smooth in ``(e1, e2)`` and
exact for every ``q``:

* ``_near_round_sums``: the deflections and hessian for ``|e| <``
  :data:`~twinlens.kernels.gaussian.E_SWITCH`, where Shajib's formula loses digits; near
  ``q = 1`` the integrand is ``exp(-a u)``, ``a = r^2 / (2 sigma^2)``, times a slowly varying
  factor, so a 40-node Gauss-Legendre rule on ``[0, min(1, 38 / a)]`` integrates it to float64
  accuracy;
* :data:`potential`: the potential of every ``q``, by a tanh-sinh rule.

On numpy and numba each rule is a loop over its nodes, under JAX a ``lax.scan``
(``_scan_rule``); one per-node function serves both.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from twinlens.backend import jax_runtime
from twinlens.kernels.ops import exp, expm1, make_op, pointwise, sqrt, where

_U_CUT = 38.0
_GL_T, _GL_W = np.polynomial.legendre.leggauss(40)
_GL_T = 0.5 * (_GL_T + 1.0)  # nodes on [0, 1]
_GL_W = 0.5 * _GL_W
_N_GL = len(_GL_T)


def _tanh_sinh_rule(h: float = 1.0 / 32.0) -> tuple[np.ndarray, np.ndarray]:
    # Nodes on (0, 1) written as 1 / (1 + exp(-pi sinh(k h))) so that nodes near 0 keep their
    # relative precision; stop before nodes underflow or reach 1.
    k_max = int(np.ceil(np.arcsinh(700.0 / np.pi) / h))
    k = np.arange(-k_max, k_max + 1)
    s = np.pi * np.sinh(k * h)
    keep = np.abs(s) < 700.0
    k, s = k[keep], s[keep]
    nodes = 1.0 / (1.0 + np.exp(-s))
    weights = 0.5 * h * np.pi * np.cosh(k * h) / (2.0 * np.cosh(0.5 * s) ** 2)
    keep = (nodes > 1e-300) & (nodes < 1.0) & (weights > 1e-300)
    return nodes[keep], weights[keep]


_TS_T, _TS_W = _tanh_sinh_rule()
_N_TS = len(_TS_T)


@pointwise
def one_minus_exp_ratio(s):
    """``(1 - exp(-s)) / s``, equal to 1 at ``s = 0``; a series below ``s = 1e-3`` keeps the
    value and its derivative exact as ``s -> 0``."""
    small = s < 1e-3
    ss = where(small, 1.0, s)
    series = 1.0 + s * (-0.5 + s * (1.0 / 6.0 + s * (-1.0 / 24.0 + s / 120.0)))
    return where(small, series, -expm1(-ss) / ss)


# ------------------------------------------------------------------------------------------
# the near-round deflections and hessian: a Gauss-Legendre rule


@pointwise
def _homoeoid_setup(dx, dy, e1, e2, sigma):
    # What every node of the homoeoid integrals shares: |e|^2, 2 / (1 - |e|^2), 1 / (2 sigma^2)
    # and E theta, with E = [[e1, e2], [e2, -e1]].
    ee = e1 * e1 + e2 * e2
    return ee, 2.0 / (1.0 - ee), 0.5 / (sigma * sigma), e1 * dx + e2 * dy, e2 * dx - e1 * dy


@pointwise
def _homoeoid_matrix(ee, c2, u):
    # P(u) = g I + cu E and det P, for P(u) = I + u (M^-1 - I).
    cu = c2 * u
    g = 1.0 + cu * ee
    return cu, g, g * g - cu * cu * ee


@pointwise
def _near_round_setup(dx, dy, e1, e2, sigma):
    # For small |e| the integrand is exp(-a u) times a slowly varying factor,
    # a = r^2 / (2 sigma^2); beyond u = _U_CUT / a it is below exp(-_U_CUT) of its start, so
    # the rule runs over [0, top], top = min(1, _U_CUT / a) (exp(-38 * s) on [0, 1] is integrated
    # to 1e-15 by 40 Gauss-Legendre nodes).
    ee, c2, inv_2s2, ex, ey = _homoeoid_setup(dx, dy, e1, e2, sigma)
    a = (dx * dx + dy * dy) * inv_2s2
    far = a > _U_CUT
    top = where(far, _U_CUT / where(far, a, 1.0), 1.0)
    return ee, c2, inv_2s2, top, ex, ey


@pointwise
def _near_round_node(dx, dy, e1, e2, ee, c2, inv_2s2, ex, ey, u):
    # The integrands at one node u: w(u) v and w(u) (Pinv - u v v^T / sigma^2), with
    # v = P(u)^-1 theta, P(u) = g I + cu E, w(u) = exp(-u theta.v / (2 sigma^2)) / sqrt(det P).
    cu, g, det = _homoeoid_matrix(ee, c2, u)
    vx = (g * dx - cu * ex) / det
    vy = (g * dy - cu * ey) / det
    w = exp(-u * inv_2s2 * (dx * vx + dy * vy)) / sqrt(det)
    uv = 2.0 * u * inv_2s2
    return (
        w * vx,
        w * vy,
        w * ((g - cu * e1) / det - uv * vx * vx),
        w * (-cu * e2 / det - uv * vx * vy),
        w * ((g + cu * e1) / det - uv * vy * vy),
    )


def _near_round_sums_loop(dx, dy, e1, e2, sigma, kappa0):
    # numpy and numba: a loop over the nodes.
    ee, c2, inv_2s2, top, ex, ey = _near_round_setup(dx, dy, e1, e2, sigma)
    sx = 0.0 * dx
    sy = 0.0 * dx
    hxx = 0.0 * dx
    hxy = 0.0 * dx
    hyy = 0.0 * dx
    for k in range(_N_GL):
        a, b, c, d, e = _near_round_node(dx, dy, e1, e2, ee, c2, inv_2s2, ex, ey, top * _GL_T[k])
        sx = sx + _GL_W[k] * a
        sy = sy + _GL_W[k] * b
        hxx = hxx + _GL_W[k] * c
        hxy = hxy + _GL_W[k] * d
        hyy = hyy + _GL_W[k] * e
    scale = kappa0 * top
    return scale * sx, scale * sy, scale * hxx, scale * hxy, scale * hyy


def _scan_rule(jax, nodes, weights, node_terms, like, n_out):
    # sum_k weights[k] * node_terms(nodes[k]) in the numpy loop's order, as a lax.scan: one
    # node's program, and one node's intermediates in memory. A vmap over the nodes held
    # (nodes x points) arrays (256 MB for the 40 nodes of 160,000 points): slower when run,
    # and a lax.cond holding it slowed the whole program even when it was not taken.
    def step(acc, node_weight):
        node, weight = node_weight
        return tuple(a + weight * f for a, f in zip(acc, node_terms(node), strict=True)), None

    zero = tuple(0.0 * like for _ in range(n_out))
    acc, _ = jax.lax.scan(step, zero, (jax.numpy.asarray(nodes), jax.numpy.asarray(weights)))
    return acc


@cache
def _near_round_sums_jax():
    jax = jax_runtime.load()

    def sums(dx, dy, e1, e2, sigma, kappa0):
        ee, c2, inv_2s2, top, ex, ey = _near_round_setup(dx, dy, e1, e2, sigma)
        like = dx + 0.0 * (dy + top)  # the broadcast shape of every node's terms

        def node(t):
            return _near_round_node(dx, dy, e1, e2, ee, c2, inv_2s2, ex, ey, top * t)

        scale = kappa0 * top
        return tuple(scale * f for f in _scan_rule(jax, _GL_T, _GL_W, node, like, 5))

    return sums


_near_round_sums = make_op(
    "_near_round_sums",
    _near_round_sums_loop,
    _near_round_sums_jax,
    _near_round_sums_loop,
    inline=False,  # a 40-node loop: inlining it only slows compilation
)


# ------------------------------------------------------------------------------------------
# the potential: a tanh-sinh rule


@pointwise
def _potential_node(dx, dy, ee, c2, inv_2s2, ex, ey, r2, tet, u):
    # b h(u b) / sqrt(det P) at one node, b = theta.v / (2 sigma^2), h(s) = (1 - e^-s) / s.
    cu, g, det = _homoeoid_matrix(ee, c2, u)
    b = (g * r2 - cu * tet) / det * inv_2s2
    return b * one_minus_exp_ratio(u * b) / sqrt(det)


@pointwise
def _potential_setup(dx, dy, e1, e2, sigma):
    ee, c2, inv_2s2, ex, ey = _homoeoid_setup(dx, dy, e1, e2, sigma)
    return ee, c2, inv_2s2, ex, ey, dx * dx + dy * dy, dx * ex + dy * ey


def _potential_loop(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
    dx = x - centre_x
    dy = y - centre_y
    ee, c2, inv_2s2, ex, ey, r2, tet = _potential_setup(dx, dy, e1, e2, sigma)
    total = 0.0 * dx
    for k in range(_N_TS):
        total = total + _TS_W[k] * _potential_node(
            dx, dy, ee, c2, inv_2s2, ex, ey, r2, tet, _TS_T[k]
        )
    return kappa0 * sigma * sigma * total


@cache
def _potential_jax():
    jax = jax_runtime.load()

    def pot(x, y, centre_x, centre_y, e1, e2, sigma, kappa0):
        dx = x - centre_x
        dy = y - centre_y
        ee, c2, inv_2s2, ex, ey, r2, tet = _potential_setup(dx, dy, e1, e2, sigma)

        def node(u):
            return (_potential_node(dx, dy, ee, c2, inv_2s2, ex, ey, r2, tet, u),)

        (total,) = _scan_rule(jax, _TS_T, _TS_W, node, dx + 0.0 * dy, 1)
        return kappa0 * sigma * sigma * total

    return pot


potential = make_op("potential", _potential_loop, _potential_jax, _potential_loop, inline=False)
potential.__doc__ = """Lensing potential, arcsec^2, zero at the centre (all ``q``).

``psi = kappa0 sigma^2 int_0^1 b h(u b) / sqrt(det P) du`` with ``b = theta.v / (2 sigma^2)`` and
``h(s) = (1 - exp(-s)) / s``, by a tanh-sinh rule (about 300 nodes; about 1e-10 relative) that
resolves both the ``1/u`` range of distant points and the narrow feature near ``u = 1`` of very
flat profiles.
"""

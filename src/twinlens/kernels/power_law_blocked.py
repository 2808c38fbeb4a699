"""The power law's deflections on numba, a block of points at a time.

The per-point loop sums the series point by point: the loop over terms sits inside the loop
over points, so LLVM cannot vectorise, and each point pays the sum's full latency. Here each
parallel iteration takes ``BLOCK`` points: their set-up (with the vectorising exp and log in
place of pow), then each Horner step for the whole block (the term loop outside, the point
loop inside: vectorised), then the assembly. The same formulas as
:mod:`twinlens.kernels.power_law`'s ``_setup``, ``series`` and ``deflections_series``
(validated against them on every call of ``twinlens validate``), within 7e-16 of the
per-point loop.

For a batch of parameter sets (the power law's ``batched_numba``), the same blocked loop and
the per-point series loops run over every member in one call, each member with its own series:
the numbers of the members' calls one by one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from twinlens.kernels.ops import exp_vectorised, log_vectorised

BLOCK = 128


def _deflections_block(x, y, start, cx, cy, e1, e2, einstein_radius, slope, coef, out_x, out_y):
    # numba only (it writes into out_x, out_y); points start .. start + BLOCK of x, y
    m = min(BLOCK, x.shape[0] - start)
    n_coef = coef.shape[0]
    t = slope - 1.0
    scale = einstein_radius * einstein_radius * (1.0 - e1 * e1 - e2 * e2)
    vr = np.empty(BLOCK)
    vi = np.empty(BLOCK)
    amp = np.empty(BLOCK)
    zr = np.empty(BLOCK)
    zi = np.empty(BLOCK)
    wr = np.empty(BLOCK)
    wi = np.empty(BLOCK)
    er = np.empty(BLOCK)
    ei = np.empty(BLOCK)
    orr = np.empty(BLOCK)
    oi = np.empty(BLOCK)
    for j in range(m):
        dx = x[start + j] - cx
        dy = y[start + j] - cy
        a = (1.0 - e1) * dx - e2 * dy
        b = (1.0 + e1) * dy - e2 * dx
        v2 = a * a + b * b
        v2s = v2 if v2 > 0.0 else 1.0  # at the centre V = 0, so alpha = 0 whatever A is
        amp[j] = exp_vectorised(0.5 * t * log_vectorised(scale / v2s))
        c2 = (a * a - b * b) / v2s
        s2 = 2.0 * a * b / v2s
        zr_j = -(e1 * c2 + e2 * s2)
        zi_j = e2 * c2 - e1 * s2
        vr[j] = a
        vi[j] = b
        zr[j] = zr_j
        zi[j] = zi_j
        wr[j] = zr_j * zr_j - zi_j * zi_j
        wi[j] = 2.0 * zr_j * zi_j
    # the even and odd Horner chains of power_law_series.horner, in W = Z^2, each step over
    # the whole block
    k = 2 * ((n_coef - 1) // 2)
    for j in range(m):
        er[j] = coef[k]
        ei[j] = 0.0
    while k >= 2:
        k -= 2
        c = coef[k]
        for j in range(m):
            re = er[j] * wr[j] - ei[j] * wi[j] + c
            ei[j] = er[j] * wi[j] + ei[j] * wr[j]
            er[j] = re
    k = 2 * (n_coef // 2) - 1
    for j in range(m):
        orr[j] = coef[k] if k >= 1 else 0.0
        oi[j] = 0.0
    while k >= 3:
        k -= 2
        c = coef[k]
        for j in range(m):
            re = orr[j] * wr[j] - oi[j] * wi[j] + c
            oi[j] = orr[j] * wi[j] + oi[j] * wr[j]
            orr[j] = re
    for j in range(m):
        sr = er[j] + orr[j] * zr[j] - oi[j] * zi[j]
        si = ei[j] + orr[j] * zi[j] + oi[j] * zr[j]
        out_x[start + j] = amp[j] * (vr[j] * sr - vi[j] * si)
        out_y[start + j] = amp[j] * (vr[j] * si + vi[j] * sr)


@cache
def blocked_deflections_loop() -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """The compiled loop ``(x, y, cx, cy, e1, e2, einstein_radius, slope, coef) -> (alpha_x,
    alpha_y)``, one parallel iteration per ``BLOCK`` points (generated and compiled on first
    use)."""
    from twinlens.kernels.compile import build, generate

    args = ["x", "y", "cx", "cy", "e1", "e2", "einstein_radius", "slope", "coef"]
    body = "\n".join(
        [
            "    n = x.shape[0]",
            "    out_x = np.empty(n)",
            "    out_y = np.empty(n)",
            f"    for block in prange((n + {BLOCK} - 1) // {BLOCK}):",
            f"        _block(x, y, block * {BLOCK}, {', '.join(args[2:])}, out_x, out_y)",
            "    return (out_x, out_y)",
        ]
    )
    source = generate(
        "power_law.deflections, blocked", [("_block", _deflections_block)], args, body
    )
    dummy: list[Any] = [np.zeros(1), np.zeros(1), *([0.5] * 6), np.full(3, 0.5)]
    for a in dummy[:2]:
        a.flags.writeable = False
    return build("power_law_deflections_blocked", source, *dummy)


# -- a batch of parameter sets -----------------------------------------------------------------
#
# Each member has its own series (its own length): ``coef (n_batch, N)`` holds the members'
# coefficients, zero-padded, and ``n_terms (n_batch,)`` their lengths, so that a member sums
# exactly its own terms, as it would alone. Inputs are flat: shared by every member
# (``n_per`` points) or one block per member (``n_batch * n_per``). Output ``t`` is member
# ``t // n_per``'s point ``t % n_per``.

_ROWS_ARGS = ["n_batch", "n_per", "x", "y", "cx", "cy", "e1", "e2", "einstein_radius", "slope"]
_ROWS_ARGS += ["coef", "n_terms"]


def _rows_dummy() -> list[Any]:
    x, y = np.zeros(1), np.zeros(1)
    for a in (x, y):
        a.flags.writeable = False
    params = [np.full(1, 0.5) for _ in range(6)]
    return [1, 1, x, y, *params, np.full((1, 3), 0.5), np.full(1, 3, dtype=np.int64)]


@cache
def blocked_deflections_rows_loop() -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """The blocked deflections of a batch of parameter sets (see above): one parallel
    iteration per ``BLOCK`` points of one member, the blocks laid as in a member's own call."""
    from twinlens.kernels.compile import build, generate

    member = "coef[b, :n_terms[b]]"
    body = "\n".join(
        [
            "    n_in = x.shape[0]",
            "    out_x = np.empty(n_batch * n_per)",
            "    out_y = np.empty(n_batch * n_per)",
            f"    per = (n_per + {BLOCK} - 1) // {BLOCK}",
            "    for job in prange(n_batch * per):",
            "        b = job // per",
            "        o = b * n_per",
            "        j = o if n_in > n_per else 0",
            f"        _block(x[j : j + n_per], y[j : j + n_per], (job % per) * {BLOCK}, cx[b],",
            f"               cy[b], e1[b], e2[b], einstein_radius[b], slope[b], {member},",
            "               out_x[o : o + n_per], out_y[o : o + n_per])",
            "    return (out_x, out_y)",
        ]
    )
    source = generate(
        "power_law.deflections, blocked, batched",
        [("_block", _deflections_block)],
        _ROWS_ARGS,
        body,
    )
    return build("power_law_deflections_blocked_rows", source, *_rows_dummy())


@cache
def series_rows_loop(point: Callable, n_outputs: int) -> Callable[..., tuple]:
    """The per-point series function ``point`` over a batch of parameter sets (see above),
    one parallel iteration per (member, point)."""
    from twinlens.kernels.compile import build, generate

    outs = [f"out_{k}" for k in range(n_outputs)]
    call = "_point(x[i], y[i], cx[b], cy[b], e1[b], e2[b], einstein_radius[b], slope[b], c)"
    store = (
        [f"        {outs[0]}[t] = {call}"]
        if n_outputs == 1
        else [f"        r = {call}"] + [f"        {o}[t] = r[{k}]" for k, o in enumerate(outs)]
    )
    body = "\n".join(
        [
            "    n_in = x.shape[0]",
            *(f"    {o} = np.empty(n_batch * n_per)" for o in outs),
            "    for t in prange(n_batch * n_per):",
            "        b = t // n_per",
            "        i = t % n_in",
            "        c = coef[b, :n_terms[b]]",
            *store,
            f"    return ({', '.join(outs)},)",
        ]
    )
    name = point.__name__
    source = generate(f"power_law.{name}, batched", [("_point", point)], _ROWS_ARGS, body)
    return build(f"power_law_{name}_rows", source, *_rows_dummy())


def rows_impl(coefficient_rows: Callable, loop: Callable) -> Callable[..., tuple]:
    """A kernel's ``batched_numba`` (:class:`~twinlens.kernels.registry.Kernel`): the members'
    series from ``coefficient_rows(e1, e2, slope) -> (coef, n_terms)``, then ``loop()``.
    The series of the last few batches are remembered: the steps of a solve ask for the
    same members' deflections and hessians many times."""

    def impl(n_batch, n_per, x, y, cx, cy, e1, e2, einstein_radius, slope):
        key = (e1.tobytes(), e2.tobytes(), slope.tobytes())
        series = _SERIES.get(key)
        if series is None:
            series = _SERIES[key] = coefficient_rows(e1, e2, slope)
            while len(_SERIES) > _SERIES_SIZE:
                _SERIES.popitem(last=False)
        params = (cx, cy, e1, e2, einstein_radius, slope)
        return loop()(n_batch, n_per, x, y, *params, *series)

    return impl


_SERIES: OrderedDict = OrderedDict()
_SERIES_SIZE = 8

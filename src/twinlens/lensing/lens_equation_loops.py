"""The numba loop of the lens-equation solver's triangle search, as plain Python.

This module runs as it is (slowly) on numpy arrays; :func:`compiled` makes the numba copy
(:func:`twinlens.kernels.compile.numba_copy`), cached on disk like every generated module.
:func:`barycentric` is also the JAX search's math (called on whole arrays), so both backends
test a triangle the same way.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType

import numpy as np

prange = range  # numba's prange in the compiled copy, whose template imports it

_FUNCTIONS = (
    "barycentric",
    "find_triangles",
    "map_blocks",
    "block_boxes_rows",
    "find_triangles_rows",
)


def barycentric(ax, ay, bx, by, cx, cy, sx, sy):
    """Barycentric coordinates ``(l_a, l_b, l_c)`` of ``(sx, sy)`` in triangle ``abc`` and
    twice its signed area ``d`` (``l`` are meaningless where ``d == 0``)."""
    d = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    safe = d + (d == 0.0)  # no division by zero; callers discard d == 0
    la = ((bx - sx) * (cy - sy) - (by - sy) * (cx - sx)) / safe
    lb = ((cx - sx) * (ay - sy) - (cy - sy) * (ax - sx)) / safe
    return la, lb, 1.0 - la - lb, d


def find_triangles(tri, boxes, sources, slack, out_index, out_count):
    """For each source, the first ``out_index.shape[1]`` triangles (in slot order) whose
    source-plane image contains it, and how many there are in all.

    ``tri`` is ``(n_blocks * P, 6)``: the mapped vertices ``ax, ay, bx, by, cx, cy`` of the
    triangle slots, ``P`` per block (zero-area padding is never inside); ``boxes``
    ``(n_blocks, 4)`` each block's ``(x_min, x_max, y_min, y_max)``, so that a block whose box
    misses the source is skipped whole; ``sources`` ``(n_sources, 2)``. A source counts as
    inside when every barycentric coordinate is ``>= -slack`` (a source on a shared edge is
    found in both triangles, and the solver drops the duplicate). Writes ``out_index
    (n_sources, k)`` (unused slots -1) and ``out_count (n_sources,)``."""
    k = out_index.shape[1]
    per_block = tri.shape[0] // boxes.shape[0]
    for s in prange(sources.shape[0]):
        sx = sources[s, 0]
        sy = sources[s, 1]
        n = 0
        for blk in range(boxes.shape[0]):
            if sx < boxes[blk, 0] - slack or sx > boxes[blk, 1] + slack:
                continue
            if sy < boxes[blk, 2] - slack or sy > boxes[blk, 3] + slack:
                continue
            for t in range(blk * per_block, (blk + 1) * per_block):
                la, lb, lc, d = barycentric(
                    tri[t, 0], tri[t, 1], tri[t, 2], tri[t, 3], tri[t, 4], tri[t, 5], sx, sy
                )
                if d != 0.0 and la >= -slack and lb >= -slack and lc >= -slack:
                    if n < k:
                        out_index[s, n] = t
                    n += 1
        for j in range(min(n, k), k):
            out_index[s, j] = -1
        out_count[s] = n


def map_blocks(mx, my, safe, pad, out_tri, out_boxes):
    """The triangle slots' mapped vertices and each block's box, one block per iteration
    (in parallel in the compiled copy): ``mx, my`` the mapped grid vertices; ``safe (n_blocks,
    P, 3)`` the slots' vertex indices and ``pad (n_blocks, P, 1)`` which slots are padding
    (:func:`~twinlens.lensing.lens_equation_steps.slot_layout`). Writes ``out_tri (n_blocks,
    P, 6)`` (zeros in padding) and ``out_boxes (n_blocks, 4)``, ``(x_min, x_max, y_min,
    y_max)`` over the block's real slots (``inf, -inf`` for a block of padding alone)."""
    for blk in prange(safe.shape[0]):
        x_min, x_max = np.inf, -np.inf
        y_min, y_max = np.inf, -np.inf
        for t in range(safe.shape[1]):
            for v in range(3):
                if pad[blk, t, 0]:
                    out_tri[blk, t, 2 * v] = 0.0
                    out_tri[blk, t, 2 * v + 1] = 0.0
                    continue
                x = mx[safe[blk, t, v]]
                y = my[safe[blk, t, v]]
                out_tri[blk, t, 2 * v] = x
                out_tri[blk, t, 2 * v + 1] = y
                x_min, x_max = min(x_min, x), max(x_max, x)
                y_min, y_max = min(y_min, y), max(y_max, y)
        out_boxes[blk, 0] = x_min
        out_boxes[blk, 1] = x_max
        out_boxes[blk, 2] = y_min
        out_boxes[blk, 3] = y_max


def block_boxes_rows(mx, my, cells, size, out_boxes):
    """:func:`map_blocks`'s boxes for a batch of lenses: ``mx, my (n_rows, n_vertices)`` each
    row's mapped grid vertices (``cells + 1`` per side); writes ``out_boxes (n_rows, n_blocks,
    4)``, one (row, block of ``size x size`` cells) per iteration (in parallel in the compiled
    copy). A block's box is taken over its cells' vertices, each once: the values its triangle
    slots hold, so the same box (a NaN is never taken, as there, and a zero's sign is
    irrelevant to the search's comparisons). The slots' vertices are not stored:
    :func:`find_triangles_rows` reads them from ``mx, my``."""
    side = (cells + size - 1) // size
    n_blocks = side * side
    for job in prange(mx.shape[0] * n_blocks):
        r = job // n_blocks
        blk = job % n_blocks
        j0 = (blk // side) * size
        i0 = (blk % side) * size
        x_min, x_max = np.inf, -np.inf
        y_min, y_max = np.inf, -np.inf
        for j in range(j0, min(j0 + size, cells) + 1):
            for i in range(i0, min(i0 + size, cells) + 1):
                x = mx[r, j * (cells + 1) + i]
                y = my[r, j * (cells + 1) + i]
                x_min, x_max = min(x_min, x), max(x_max, x)
                y_min, y_max = min(y_min, y), max(y_max, y)
        out_boxes[r, blk, 0] = x_min
        out_boxes[r, blk, 1] = x_max
        out_boxes[r, blk, 2] = y_min
        out_boxes[r, blk, 3] = y_max


def find_triangles_rows(mx, my, safe, pad, boxes, sources, slack, out_index, out_count):
    """:func:`find_triangles` for a batch of lenses, one source each (row ``r`` of
    ``sources (n_rows, 2)`` behind row ``r`` of ``mx, my``), one row per iteration: the
    triangles' mapped vertices read from ``mx, my`` through ``safe (n_blocks, P, 3)``, the
    padding (``pad``, zero area: never inside) skipped, ``boxes`` from
    :func:`block_boxes_rows`. The same tests in the same order as :func:`find_triangles`;
    slot ``blk * P + t`` as there."""
    k = out_index.shape[1]
    per_block = safe.shape[1]
    for r in prange(sources.shape[0]):
        sx = sources[r, 0]
        sy = sources[r, 1]
        n = 0
        for blk in range(safe.shape[0]):
            if sx < boxes[r, blk, 0] - slack or sx > boxes[r, blk, 1] + slack:
                continue
            if sy < boxes[r, blk, 2] - slack or sy > boxes[r, blk, 3] + slack:
                continue
            for t in range(per_block):
                if pad[blk, t, 0]:
                    continue
                a, b, c = safe[blk, t, 0], safe[blk, t, 1], safe[blk, t, 2]
                la, lb, lc, d = barycentric(
                    mx[r, a], my[r, a], mx[r, b], my[r, b], mx[r, c], my[r, c], sx, sy
                )
                if d != 0.0 and la >= -slack and lb >= -slack and lc >= -slack:
                    if n < k:
                        out_index[r, n] = blk * per_block + t
                    n += 1
        for j in range(min(n, k), k):
            out_index[r, j] = -1
        out_count[r] = n


@cache
def compiled() -> ModuleType:
    """The numba-compiled copy of this module's loops (compiled once, cached on disk)."""
    import sys

    from twinlens.kernels.compile import numba_copy

    return numba_copy(sys.modules[__name__], _FUNCTIONS, "lensing_lens_equation")

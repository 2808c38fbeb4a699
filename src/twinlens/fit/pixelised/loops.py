"""The numba loops of the pixelised inversion, as plain Python.

This module runs as it is (slowly) on numpy arrays; :func:`compiled` makes the numba copy:
the same text with ``prange`` taken from numba and every function compiled (``parallel``
over the ``prange`` loops), written as a generated module so numba caches it on disk. The
loops are written to be race-free: each ``prange`` iteration writes only its own row.
"""

from __future__ import annotations

import math
from functools import cache
from types import ModuleType

import numpy as np

prange = range  # numba's prange in the compiled copy (see compiled)

_FUNCTIONS = ("relocate_loop", "sparse_rows", "blurred_rows", "dense_rows")


def relocate_loop(px, py, bx, by, out_x, out_y):
    """Border relocation (twinlens.fit.pixelised.border.relocate) of points ``(px, py)``
    against border points ``(bx, by)``, written into ``out_x, out_y``."""
    nb = bx.shape[0]
    ox = 0.0
    oy = 0.0
    for k in range(nb):
        ox += bx[k]
        oy += by[k]
    ox /= nb
    oy /= nb
    rb = np.empty(nb)
    rmin = math.inf
    for k in range(nb):
        rb[k] = math.sqrt((bx[k] - ox) ** 2 + (by[k] - oy) ** 2)
        rmin = min(rmin, rb[k])
    for i in prange(px.shape[0]):
        dx = px[i] - ox
        dy = py[i] - oy
        r = math.sqrt(dx * dx + dy * dy)
        out_x[i] = px[i]
        out_y[i] = py[i]
        if r > rmin:
            best = 0
            best_d = math.inf
            for k in range(nb):
                d = (px[i] - bx[k]) ** 2 + (py[i] - by[k]) ** 2
                if d < best_d:
                    best_d = d
                    best = k
            if r > rb[best]:
                f = rb[best] / r
                out_x[i] = ox + dx * f
                out_y[i] = oy + dy * f


def sparse_rows(indices, weights, sub_weight, starts, cols, vals, counts):
    """The mapping matrix's rows, sparse: pixel ``p`` (sub-pixels ``starts[p]`` to
    ``starts[p + 1]``) reads source pixels ``cols[p, :counts[p]]`` with values
    ``vals[p, :counts[p]]`` (sub-pixel weight times interpolation weight, duplicates merged)."""
    k = indices.shape[1]
    for p in prange(starts.shape[0] - 1):
        c = 0
        for sub in range(starts[p], starts[p + 1]):
            for slot in range(k):
                s = indices[sub, slot]
                v = weights[sub, slot] * sub_weight[sub]
                found = False
                for e in range(c):
                    if cols[p, e] == s:
                        vals[p, e] += v
                        found = True
                        break
                if not found:
                    cols[p, c] = s
                    vals[p, c] = v
                    c += 1
        counts[p] = c


def dense_rows(cols, vals, counts, out):
    """The mapping matrix ``out (n_mask, n_source)`` (zeroed) from :func:`sparse_rows`."""
    for p in prange(counts.shape[0]):
        for e in range(counts[p]):
            out[p, cols[p, e]] += vals[p, e]


def blurred_rows(cols, vals, counts, image_to_mask, rows, columns, kernel, nx, ny, out):
    """The PSF-blurred mapping matrix ``out (n_mask, n_source)`` (zeroed), by direct
    convolution of the sparse rows: ``out[q] = sum_ab kernel[a, b] M[pixel at
    (row_q - a + cy, col_q - b + cx)]``, only masked-in pixels contributing."""
    ky, kx = kernel.shape
    cy = ky // 2
    cx = kx // 2
    for q in prange(rows.shape[0]):
        r = rows[q]
        c = columns[q]
        for a in range(ky):
            rr = r - a + cy
            if rr < 0 or rr >= ny:
                continue
            for b in range(kx):
                cc = c - b + cx
                w = kernel[a, b]
                if cc < 0 or cc >= nx or w == 0.0:
                    continue
                p = image_to_mask[rr * nx + cc]
                if p < 0:
                    continue
                for e in range(counts[p]):
                    out[q, cols[p, e]] += w * vals[p, e]


@cache
def compiled() -> ModuleType:
    """The numba-compiled copy of this module's loops (compiled once, cached on disk)."""
    import inspect
    import os
    import sys

    from twinlens.backend import numba_runtime

    # OpenMP worker threads that spin after a parallel loop starve the host's Qhull point
    # location that follows (17 s against 0.03 s for 20,000 points on 2 busy cores); sleeping
    # waiters change no result. Effective when OpenMP has not started yet in this process.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

    numba_runtime.load()
    source = inspect.getsource(sys.modules[__name__])
    source = source.replace("prange = range  #", "from numba import njit, prange  #", 1)
    cache_on = numba_runtime.cache_enabled()
    source += "\n\n# compiled copies\n" + "".join(
        f"{name} = njit(parallel=True, cache={cache_on}, error_model='numpy')({name})\n"
        for name in _FUNCTIONS
    )
    return numba_runtime.import_generated("fit_pixelised", source)

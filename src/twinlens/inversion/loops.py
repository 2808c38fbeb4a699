"""The numba loops of the pixelised inversion, as plain Python.

This module runs as it is (slowly) on numpy arrays; :func:`compiled` makes the numba copy
(:func:`twinlens.kernels.compile.numba_copy`: each function's text, with numba's ``prange``,
compiled ``parallel`` over its ``prange`` loops), cached on disk like every generated module. The
loops are written to be race-free: each ``prange`` iteration writes only its own row.
"""

from __future__ import annotations

import math
from functools import cache
from types import ModuleType

import numpy as np

prange = range  # numba's prange in the compiled copy, whose template imports it

_FUNCTIONS = (
    "border_radii",
    "relocate_loop",
    "relocate_smooth_loop",
    "k_nearest_point",
    "sparse_rows",
    "blurred_row_counts",
    "blurred_sparse_rows",
    "column_index",
    "curvature_upper",
    "mirror_upper",
    "transpose_times",
    "rows_times",
)


def border_radii(bx, by):
    """The border's origin (the mean of its points ``(bx, by)``), each border point's distance
    from it and the smallest: ``(ox, oy, rb, rmin)``."""
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
    return ox, oy, rb, rmin


def relocate_loop(px, py, bx, by, out_x, out_y):
    """Border relocation (twinlens.inversion.border.relocate) of points ``(px, py)``
    against border points ``(bx, by)``, written into ``out_x, out_y``."""
    ox, oy, rb, rmin = border_radii(bx, by)
    for i in prange(px.shape[0]):
        dx = px[i] - ox
        dy = py[i] - oy
        r = math.sqrt(dx * dx + dy * dy)
        out_x[i] = px[i]
        out_y[i] = py[i]
        if r > rmin:
            best = 0
            best_d = math.inf
            for k in range(bx.shape[0]):
                d = (px[i] - bx[k]) ** 2 + (py[i] - by[k]) ** 2
                if d < best_d:
                    best_d = d
                    best = k
            if r > rb[best]:
                f = rb[best] / r
                out_x[i] = ox + dx * f
                out_y[i] = oy + dy * f


def k_nearest_point(x, y, bx, by, best_d, best_i):
    """The ``m = best_d.shape[0]`` nearest of the points ``(bx, by)`` to ``(x, y)``: squared
    distances ascending into ``best_d`` and their indices into ``best_i`` (ties: the lower
    index first)."""
    m = best_d.shape[0]
    for j in range(m):
        best_d[j] = math.inf
        best_i[j] = 0
    for k in range(bx.shape[0]):
        d = (x - bx[k]) ** 2 + (y - by[k]) ** 2
        if d < best_d[m - 1]:
            j = m - 1
            while j > 0 and best_d[j - 1] > d:
                best_d[j] = best_d[j - 1]
                best_i[j] = best_i[j - 1]
                j -= 1
            best_d[j] = d
            best_i[j] = k


def relocate_smooth_loop(px, py, bx, by, m, out_x, out_y):
    """The smooth border relocation (twinlens.inversion.border.relocate, ``rule="smooth"``) of
    points ``(px, py)`` against border points ``(bx, by)`` with ``m = k + 1`` neighbours,
    written into ``out_x, out_y``; the kernel is border.kernel_radius's arithmetic."""
    ox, oy, rb, rmin = border_radii(bx, by)
    for i in prange(px.shape[0]):
        dx = px[i] - ox
        dy = py[i] - oy
        r = math.sqrt(dx * dx + dy * dy)
        out_x[i] = px[i]
        out_y[i] = py[i]
        if r > rmin:  # the radius averages border radii, so it is >= rmin
            best_d = np.empty(m)
            best_i = np.empty(m, dtype=np.int64)
            k_nearest_point(px[i], py[i], bx, by, best_d, best_i)
            h2 = best_d[m - 1]
            total = 0.0
            acc = 0.0
            for j in range(m):
                w = 1.0 - best_d[j] / h2 if h2 > 0.0 else 1.0
                total += w
                acc += w * rb[best_i[j]]
            if not total > 0.0:  # every distance equal: the plain mean
                total = 0.0
                acc = 0.0
                for j in range(m):
                    total += 1.0
                    acc += rb[best_i[j]]
            radius = acc / total
            if r > radius:
                f = radius / r
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


def blurred_row_counts(
    cols, counts, image_to_mask, rows, columns, kernel, nx, ny, n_source, chunk, out_counts
):
    """Distinct source pixels in each row of the blurred mapping matrix (the sparse rows of
    :func:`sparse_rows` convolved with the PSF kernel), written into ``out_counts``.
    Rows are processed in chunks of ``chunk``, each with its own scratch marks."""
    ky, kx = kernel.shape
    cy = ky // 2
    cx = kx // 2
    n_rows = rows.shape[0]
    n_chunks = (n_rows + chunk - 1) // chunk
    for h in prange(n_chunks):
        mark = np.full(n_source, -1, dtype=np.int64)
        for q in range(h * chunk, min(n_rows, (h + 1) * chunk)):
            n = 0
            r = rows[q]
            c = columns[q]
            for a in range(ky):
                rr = r - a + cy
                if rr < 0 or rr >= ny:
                    continue
                for b in range(kx):
                    cc = c - b + cx
                    if cc < 0 or cc >= nx or kernel[a, b] == 0.0:
                        continue
                    p = image_to_mask[rr * nx + cc]
                    if p < 0:
                        continue
                    for e in range(counts[p]):
                        s = cols[p, e]
                        if mark[s] != q:
                            mark[s] = q
                            n += 1
            out_counts[q] = n


def blurred_sparse_rows(
    cols,
    vals,
    counts,
    image_to_mask,
    rows,
    columns,
    kernel,
    nx,
    ny,
    row_scale,
    n_source,
    chunk,
    indptr,
    out_cols,
    out_vals,
):
    """The blurred mapping matrix in compressed sparse rows, each row scaled by
    ``row_scale[q]`` (``1 / sigma``): row ``q`` holds source pixels
    ``out_cols[indptr[q]:indptr[q + 1]]`` (ascending) with values ``out_vals[...]``; the
    row lengths come from :func:`blurred_row_counts`."""
    ky, kx = kernel.shape
    cy = ky // 2
    cx = kx // 2
    n_rows = rows.shape[0]
    n_chunks = (n_rows + chunk - 1) // chunk
    for h in prange(n_chunks):
        acc = np.zeros(n_source)
        mark = np.full(n_source, -1, dtype=np.int64)
        for q in range(h * chunk, min(n_rows, (h + 1) * chunk)):
            start = indptr[q]
            n = 0
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
                        s = cols[p, e]
                        if mark[s] != q:
                            mark[s] = q
                            out_cols[start + n] = s
                            n += 1
                        acc[s] += w * vals[p, e]
            out_cols[start : start + n] = np.sort(out_cols[start : start + n])
            scale = row_scale[q]
            for j in range(start, start + n):
                s = out_cols[j]
                out_vals[j] = acc[s] * scale
                acc[s] = 0.0


def column_index(indptr, cols, col_ptr, col_pos, col_row):
    """The columns of a compressed-sparse-row matrix: column ``s`` has its entries at CSR
    positions ``col_pos[col_ptr[s]:col_ptr[s + 1]]``, in rows ``col_row[...]`` (ascending).
    ``col_ptr`` (``n_source + 1``) must be zeroed. Serial (a counting sort)."""
    n_rows = indptr.shape[0] - 1
    n_source = col_ptr.shape[0] - 1
    for j in range(cols.shape[0]):
        col_ptr[cols[j] + 1] += 1
    for s in range(n_source):
        col_ptr[s + 1] += col_ptr[s]
    fill = col_ptr[:-1].copy()
    for q in range(n_rows):
        for j in range(indptr[q], indptr[q + 1]):
            s = cols[j]
            col_pos[fill[s]] = j
            col_row[fill[s]] = q
            fill[s] += 1


def curvature_upper(indptr, cols, vals, col_ptr, col_pos, col_row, out):
    """The upper triangle (diagonal included) of ``B^T B`` for the CSR matrix ``B`` (columns
    ascending within rows) into ``out (n_source, n_source)`` (zeroed): row ``s`` of ``out``
    gathers, over the rows ``q`` of ``B`` that hold ``s``, ``B[q, s] * B[q, t]`` for the
    entries ``t >= s`` of row ``q``. Each ``prange`` iteration writes only its own row."""
    for s in prange(col_ptr.shape[0] - 1):
        for e in range(col_ptr[s], col_ptr[s + 1]):
            j0 = col_pos[e]
            v = vals[j0]
            for j in range(j0, indptr[col_row[e] + 1]):
                out[s, cols[j]] += v * vals[j]


def mirror_upper(out):
    """Copy the upper triangle of the square ``out`` onto its lower triangle."""
    n = out.shape[0]
    for s in prange(n):
        for t in range(s):
            out[s, t] = out[t, s]


def transpose_times(vals, col_ptr, col_pos, col_row, x, out):
    """``out = B^T x`` for the CSR ``B`` through its column index."""
    for s in prange(col_ptr.shape[0] - 1):
        acc = 0.0
        for e in range(col_ptr[s], col_ptr[s + 1]):
            acc += vals[col_pos[e]] * x[col_row[e]]
        out[s] = acc


def rows_times(indptr, cols, vals, x, out):
    """``out = B x`` for the CSR ``B``."""
    for q in prange(indptr.shape[0] - 1):
        acc = 0.0
        for j in range(indptr[q], indptr[q + 1]):
            acc += vals[j] * x[cols[j]]
        out[q] = acc


@cache
def compiled() -> ModuleType:
    """The numba-compiled copy of this module's loops (compiled once, cached on disk)."""
    import os
    import sys

    from twinlens.kernels.compile import numba_copy

    # OpenMP worker threads that spin after a parallel loop starve the host's Qhull point
    # location that follows (by orders of magnitude on busy cores); sleeping waiters change
    # no result. Effective when OpenMP has not started yet in this process.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

    return numba_copy(sys.modules[__name__], _FUNCTIONS, "inversion_loops")

"""How close two backends must be, and how that is measured."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    """``|a - b| <= atol + rtol * |b|`` per element, with ``b`` the reference.

    ``atol`` is the small absolute floor near zeros that design.md asks for; ``why`` says why a
    tolerance is looser than the default.
    """

    rtol: float = 1e-12
    atol: float = 1e-14
    why: str = ""
    #: measure each point's error against the norm of all outputs there (a vector or tensor),
    #: not component by component: a component that vanishes because of the frame's orientation
    #: carries no relative precision of its own
    norm: bool = False


@dataclass(frozen=True)
class Agreement:
    """The measured difference between one output of two backends."""

    max_rel: float
    max_abs: float
    passed: bool
    n: int


def compare_outputs(outs: tuple, refs: tuple, tol: Tolerance) -> list[Agreement]:
    """Compare every output; with ``tol.norm`` each point's scale is the norm of the outputs."""
    outs = tuple(np.asarray(o) for o in outs)
    refs = tuple(np.asarray(r) for r in refs)
    if not tol.norm:
        return [compare(o, r, tol) for o, r in zip(outs, refs, strict=True)]
    scale = np.sqrt(sum(np.abs(r) ** 2 for r in refs))
    return [compare(o, r, tol, scale=scale) for o, r in zip(outs, refs, strict=True)]


def compare(
    out: np.ndarray, ref: np.ndarray, tol: Tolerance, scale: np.ndarray | None = None
) -> Agreement:
    """Measure ``out`` against ``ref``.

    Relative error is ``|out - ref| / s`` with ``s = |ref|`` (or the given per-element
    ``scale``) over elements where ``s > atol / rtol`` (elsewhere the absolute floor governs).
    Non-finite values must match exactly (the same infinity, or NaN against NaN); any other
    disagreement in finiteness fails. Differences below the smallest normal number pass (JAX
    on CPUs flushes subnormals to zero).
    """
    a = np.asarray(out)
    b = np.asarray(ref)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    if a.size == 0:
        return Agreement(0.0, 0.0, True, 0)
    fa, fb = np.isfinite(a), np.isfinite(b)
    same_nonfinite = (~fa & ~fb) & ((a == b) | (np.isnan(a) & np.isnan(b)))
    finiteness_ok = bool(np.all((fa & fb) | same_nonfinite))
    both = fa & fb
    diff = np.abs(a[both] - b[both])
    mag = np.abs(b[both]) if scale is None else np.broadcast_to(scale, b.shape)[both]
    max_abs = float(diff.max()) if diff.size else 0.0
    big = mag > tol.atol / max(tol.rtol, 1e-300)
    max_rel = float((diff[big] / mag[big]).max()) if np.any(big) else 0.0
    # XLA on CPUs flushes subnormal results to zero: differences below the smallest normal
    # float are not disagreements (they matter when a zero amplitude scales atol to zero)
    floor = max(tol.atol, float(np.finfo(b.dtype if b.dtype.kind == "f" else float).tiny))
    within = bool(np.all(diff <= floor + tol.rtol * mag))
    if not finiteness_ok:
        max_rel = max_abs = float("inf")
    return Agreement(max_rel, max_abs, within and finiteness_ok, int(a.size))

"""One compiled pass over the sub-pixels for a whole tracer, on numba.

Ray tracing a tracer profile by profile writes every intermediate (each deflection, the source
positions, each light term) to memory: on W5 that is ten arrays of 160,000 values per
evaluation, and on a batch, ten arrays per member. Because every profile's math is a per-point
function (:mod:`twinlens.kernels`), the whole model can instead be one loop over blocks of
points: per block, sum the deflections, trace the rays, and add the light, keeping the
intermediates in arrays of one block that stay in the L1 cache.

The tracer is first *planned* from what each profile says it computes
(:meth:`~twinlens.profiles.base.MassProfile.kernel_call`,
:meth:`~twinlens.profiles.light.LightProfile.column_calls`): a kernel and its parameters. A sum
of mass profiles arrives here as its parts (the tracer opens it:
:meth:`~twinlens.profiles.base.MassProfile.summands`). A profile that is not one kernel call,
or whose kernel has no per-point source numba compiles as is, leaves the tracer on the
profile-by-profile path. The loop is generated
per plan signature (which kernels, in which roles), compiled once and cached on disk like every
other kernel (:func:`twinlens.kernels.compile.generate`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np

from twinlens.backend.numba_runtime import read_only
from twinlens.kernels.compile import BLOCK, build, generate  # one block size: L1-sized
from twinlens.kernels.registry import Kernel, KernelCall, batch_params
from twinlens.memo import Recalled

__all__ = ["fused_light", "fused_sources"]

# plans met while fused_sources records (None otherwise): (signature, n_stored) pairs
_recorded: list[tuple[tuple, tuple[int, int]]] | None = None

#: One step of a plan: its role (``mass``: a deflection; ``fixed``: light of known intensity;
#: ``column``: a unit-intensity image the likelihood solves for), the call, and the plane of its
#: inputs (``image``: the sub-pixels; ``source``: the traced rays).
Step = tuple[str, KernelCall, str]


def _plan(mass: list, lens_light: list, source_light: list) -> list[Step] | None:
    """The steps of the fused loop, or None if some profile cannot be fused."""
    steps: list[Step] = []
    for profile in mass:
        call = profile.kernel_call("deflections")
        if call is None:
            return None
        steps.append(("mass", call, "image"))
    for profiles, plane in ((lens_light, "image"), (source_light, "source")):
        for profile in profiles:
            if profile.n_linear:
                calls = profile.column_calls()
                if len(calls) != profile.n_linear:
                    return None
                steps += [("column", c, plane) for c in calls]
            else:
                call = profile.kernel_call("image")
                if call is None:
                    return None
                steps.append(("fixed", call, plane))
    for role, call, _ in steps:
        if not _compilable(call.kernel, 2 if role == "mass" else 1):
            return None
    order = ("mass", "fixed", "column")  # the loop sums the fixed light before the columns
    return sorted(steps, key=lambda step: order.index(step[0]))


def _split_mass(mass: list) -> tuple[list, list[KernelCall]]:
    """The mass profiles the loop inlines, and the calls of those whose kernel has a numba
    implementation of its own (the power law's blocked series, the MGE's far-field sums):
    those run as their kernel, before the loop, and enter it as a stored field. Their values
    are then the kernel's bit for bit, in a tracer as alone and as recalled from the memo."""
    inlined, computed = [], []
    for profile in mass:
        call = profile.kernel_call("deflections")
        if (
            call is not None
            and _compilable(call.kernel, 2, own_numba=True)
            and not call.kernel.is_batched(tuple(call.params))
        ):
            computed.append(call)
        else:
            inlined.append(profile)
    return inlined, computed


def _computed_field(call: KernelCall, xs: np.ndarray, ys: np.ndarray) -> Any:
    x, y = (read_only(np.ascontiguousarray(a, dtype=float)) for a in (xs, ys))
    ax, ay = call.kernel(x, y, *call.params, backend="numba")
    return Recalled(read_only(np.stack([ax, ay])), "tuple")


def _compilable(kernel: Kernel, n_outputs: int, own_numba: bool = False) -> bool:
    # a per-point source numba compiles as is, on (x, y) float inputs
    return (
        kernel.point is not None
        and ("numba" not in kernel.impls) != own_numba
        and kernel.input_dtype == "float64"
        and len(kernel.inputs) == 2
        and len(kernel.outputs) == n_outputs
    )


def _split(call: KernelCall) -> tuple[list, list]:
    n_fixed = len(call.kernel.params) - call.kernel.components
    return list(call.params[:n_fixed]), list(call.params[n_fixed:])


def fused_light(
    mass: list,
    lens_light: list,
    source_light: list,
    xs: np.ndarray,
    ys: np.ndarray,
    stored_mass: tuple = (),
    stored_light: tuple = (),
) -> tuple[Any, list] | None:
    """``(fixed, columns)`` like :meth:`Tracer._light_terms` on numba, from one fused loop, or
    None when the profiles cannot be fused. Parameters may be
    :class:`~twinlens.backend.concrete.Batched` columns; outputs are then ``(n_batch, n)``.

    ``stored_mass`` (deflections) and ``stored_light`` (images) are fields recalled from
    :mod:`twinlens.memo`: the loop reads them, times their factors, instead of computing."""
    inlined, computed = _split_mass(mass)
    steps = _plan(inlined, lens_light, source_light)
    if steps is None:
        return None
    if computed:
        stored_mass = (*stored_mass, *(_computed_field(call, xs, ys) for call in computed))
    scalars, comps = [], []
    for _, call, _ in steps:
        s, k = _split(call)
        scalars += s
        comps += k
    stored = [*stored_mass, *stored_light]
    scalars += [r.factor for r in stored]  # a factor is one number per member, like a param
    try:
        n_batch, scalar_arrays, comp_arrays = batch_params(scalars, comps)
    except ValueError:
        return None
    batched = any(np.ndim(p) > 0 for p in scalars) or any(np.ndim(c) > 1 for c in comps)
    signature = tuple((role, call.kernel, plane) for role, call, plane in steps)
    if _recorded is not None:
        _recorded.append((signature, (len(stored_mass), len(stored_light))))
    loop = _compiled(signature, (len(stored_mass), len(stored_light)))
    has_fixed = any(role == "fixed" for role, _, _ in steps) or bool(stored_light)
    n_columns = sum(role == "column" for role, _, _ in steps)
    n_out = n_columns + int(has_fixed)
    outs = [np.empty(n_batch * xs.shape[0]) for _ in range(n_out)]
    # the coordinates as the loop was compiled for (contiguous, read-only): a grid's column is
    # a strided read-only view, and a call with another array type compiles the loop again
    xs, ys = (read_only(np.ascontiguousarray(a, dtype=float)) for a in (xs, ys))
    loop(*outs, n_batch, xs, ys, *(r.stored for r in stored), *scalar_arrays, *comp_arrays)
    shaped = [o.reshape(n_batch, xs.shape[0]) if batched else o for o in outs]
    if has_fixed:
        return shaped[0], shaped[1:]
    return 0.0, shaped


@contextlib.contextmanager
def _recording() -> Iterator[list]:
    global _recorded
    _recorded = []
    try:
        yield _recorded
    finally:
        _recorded = None


def fused_sources(tracer: Any) -> list[str]:
    """The generated numba source of each fused loop ``tracer``'s image runs, with every field
    computed in the loop (the memo off); empty when its profiles cannot be fused. What
    ``twinlens debug-source --config`` prints."""
    from twinlens import memo

    points = np.array([[0.1, 0.2], [-0.3, 0.4]])
    with memo.disabled(), _recording() as plans:
        tracer.image(points, backend="numba")
    return [_source(signature, n_stored) for signature, n_stored in dict.fromkeys(plans)]


@cache
def _compiled(signature: tuple, n_stored: tuple[int, int]) -> Any:
    """The compiled loop for a plan ``signature`` (``(role, kernel, plane)`` per step) with
    ``n_stored`` memo fields (deflections, images)."""
    source = _source(signature, n_stored)
    stem = "fused_" + "_".join(k.name.replace(".", "_") for _, k, _ in signature)[:80]
    n_mass, n_light = n_stored
    n_out = sum(role == "column" for role, _, _ in signature)
    n_out += int(n_light > 0 or any(role == "fixed" for role, _, _ in signature))
    dummy: list[Any] = [np.zeros(1) for _ in range(n_out)] + [1]
    dummy += [read_only(np.zeros(1)), read_only(np.zeros(1))]
    # the memo's arrays are read-only: a distinct numba type
    dummy += [read_only(np.zeros((2, 1)))] * n_mass + [read_only(np.zeros(1))] * n_light
    dummy += [np.full(1, 0.5) for _, k, _ in signature for _ in range(_n_scalars(k))]
    dummy += [np.full(1, 0.5)] * (n_mass + n_light)
    dummy += [np.full((1, 1), 0.5) for _, k, _ in signature for _ in range(k.components)]
    return build(stem, source, *dummy)


def _n_scalars(kernel: Kernel) -> int:
    return len(kernel.params) - kernel.components


# A pass per step, not one loop body for the whole tracer: LLVM vectorises each kernel's pass
# on its own, where the whole model in one body vectorised worse. The passes index slices of
# the block (``xb[i]``): indexed by an offset (``xs[s + i]``), they did not vectorise. Each
# output is its own 1-D array, passed in (every element is written): with two rows of one 2-D
# array written per point, LLVM did not vectorise the loop.
def _source(signature: tuple, n_stored: tuple[int, int]) -> str:
    """The generated module: per block of ``BLOCK`` points, one pass over the block per step
    (sum the deflections into ``ax, ay``, then add or write each light term at the traced
    rays); the parallel loop runs over every (batch member, block) pair."""
    points: list[tuple[str, Kernel]] = []
    scalars: list[str] = []
    comps: list[str] = []
    n_mass, n_light = n_stored
    # stored fields (from the memo) first: read, times one factor per member
    stored = [f"sm{j}" for j in range(n_mass)] + [f"sl{j}" for j in range(n_light)]
    factors = [f"f{name}" for name in stored]
    # each pass over a block: its lines, the loop over i included
    passes = _stored_passes(stored, n_mass)
    has_mass = n_mass > 0 or any(role == "mass" for role, _, _ in signature)
    has_fixed = n_light > 0 or any(role == "fixed" for role, _, _ in signature)
    first_light = n_light == 0
    first_mass = n_mass == 0
    n_columns = 0
    for j, (role, kernel, plane) in enumerate(signature):
        points.append((f"_k{j}", kernel))
        n_s, n_c = _n_scalars(kernel), kernel.components
        # the kernel's own parameter names (the profile's fields), one prefix per step
        s_names = [f"k{j}_{arg.name}" for arg in kernel.params[:n_s]]
        c_names = [f"k{j}_{arg.name}" for arg in kernel.params[n_s:]]
        scalars += s_names
        comps += c_names
        if plane == "source" and has_mass:  # the ray traced through every deflection
            body = ["x = xb[i] - ax[i]", "y = yb[i] - ay[i]"]
        else:
            body = ["x = xb[i]", "y = yb[i]"]
        args = ", ".join(["x, y", *(f"{p}_b" for p in s_names), *(f"{c}_k" for c in c_names)])
        call = f"_k{j}({args})"
        if role == "mass":
            targets = ["ax", "ay"]
            body += [f"r = {call}"]
            values = ["r[0]", "r[1]"]
            first = first_mass
            first_mass = False
        elif role == "fixed":
            targets, values = ["m0"], [call]
            first = first_light
            first_light = False
        else:
            n_columns += 1
            targets, values, first = [f"m{n_columns}"], [call], True
        if not n_c:
            op = "=" if first else "+="
            passes.append(
                _pass(body + [f"{t}[i] {op} {v}" for t, v in zip(targets, values, strict=True)])
            )
            continue
        # a sum over components (e.g. an MGE): the component loop outside the points, so
        # each component's pass vectorises over the block like a single profile's
        if first:
            passes.append(_pass([f"{t}[i] = 0.0" for t in targets]))
        lines = [f"for k in range({c_names[0]}.shape[1]):"]
        lines += [f"    {c}_k = {c}[b, k]" for c in c_names]
        body += [f"{t}[i] += {v}" for t, v in zip(targets, values, strict=True)]
        passes.append(lines + ["    " + line for line in _pass(body)])
    outputs = (["o0"] if has_fixed else []) + [f"o{k}" for k in range(1, 1 + n_columns)]
    scalars += factors
    # per-member scalars are read once per (member, block) pair, before the passes, so each
    # pass is the same straight-line code as a single evaluation's
    loads = [f"{p}_b = {p}[b]" for p in scalars]
    block = _block_lines(outputs, stored, n_mass, has_mass, passes)
    arguments = [*outputs, "n_batch", "xs", "ys", *stored, *scalars, *comps]
    block_body = "\n".join(" " * 4 + line for line in [*loads, *block])
    loop = _LOOP.format(
        block_size=BLOCK,
        call="block(t // n_blocks, t % n_blocks, n, " + ", ".join(arguments) + ")",
    )
    return generate(
        "a tracer's deflections and light, block by block",
        points,
        arguments,
        loop,
        blocks=[("block", ["b", "blk", "n", *arguments], block_body)],
    )


def _stored_passes(stored: list[str], n_mass: int) -> list[list[str]]:
    """The passes that read the memo's stored fields: deflections into ``ax, ay``, images into
    ``m0``, each times its member's factor."""
    passes = []
    if n_mass:
        mass = stored[:n_mass]
        passes.append(
            _pass(
                [
                    "ax[i] = " + " + ".join(f"f{a}_b * {a}_s[0, i]" for a in mass),
                    "ay[i] = " + " + ".join(f"f{a}_b * {a}_s[1, i]" for a in mass),
                ]
            )
        )
    if stored[n_mass:]:
        light = " + ".join(f"f{a}_b * {a}_s[i]" for a in stored[n_mass:])
        passes.append(_pass([f"m0[i] = {light}"]))
    return passes


def _block_lines(
    outputs: list[str], stored: list[str], n_mass: int, has_mass: bool, passes: list[list[str]]
) -> list[str]:
    """The body of ``block`` after the loads: the block's slices of the points, outputs and
    stored fields, the deflection arrays, then the passes."""
    block = [f"s = blk * {BLOCK}", f"e = min(s + {BLOCK}, n)", "m = e - s"]
    block += ["xb = xs[s:e]", "yb = ys[s:e]"]
    block += [f"m{o[1:]} = {o}[b * n + s : b * n + e]" for o in outputs]
    block += [f"{a}_s = {a}[:, s:e]" for a in stored[:n_mass]]
    block += [f"{a}_s = {a}[s:e]" for a in stored[n_mass:]]
    if has_mass:
        block += ["ax = np.empty(m)", "ay = np.empty(m)"]
    for lines in passes:
        block += lines
    return block


def _pass(body: list[str]) -> list[str]:
    """The lines of one pass over a block's ``m`` points."""
    return ["for i in range(m):", *("    " + line for line in body)]


# One parallel loop over every (member, block) pair serves a single evaluation and a batch
# alike. A loop parallel over members for batches and over blocks for one member compiled each
# fused loop twice where both ran (a fit's batches and its single evaluations). The parallel
# body only calls ``block``, compiled on its own: numba's parallel passes analyse every
# statement of the body, with each kernel inlined into it, and a body that calls one function
# costs them nothing (the same values, the same run time).
_LOOP = """\
    n = xs.shape[0]
    n_blocks = (n + {block_size} - 1) // {block_size}
    for t in prange(n_batch * n_blocks):
        {call}
"""

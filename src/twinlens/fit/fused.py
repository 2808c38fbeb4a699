"""One compiled pass over the sub-pixels for a whole tracer, on numba.

Ray tracing a tracer profile by profile writes every intermediate (each deflection, the source
positions, each light term) to memory: on W5 that is ten arrays of 160,000 values per
evaluation, and on a batch, ten arrays per member. Because every profile's math is a per-point
function (:mod:`twinlens.kernels`), the whole model can instead be one loop: at each point,
sum the deflections, trace the ray, and add the light, keeping everything in registers.

The tracer is first *planned*: each profile is called with the backend ``"plan"``, on which a
registered kernel returns a record of the call (:class:`PlannedOutput`) instead of computing.
A profile whose method does more than return a kernel's output cannot be planned; the tracer
then falls back to the profile-by-profile path. The loop is generated per plan signature (which
kernels, in which roles), compiled once and cached on disk like every other kernel.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from twinlens.backend import numba_runtime
from twinlens.kernels.plan import PLAN, PlannedCall, PlannedOutput
from twinlens.kernels.registry import batch_params

__all__ = ["fused_light"]


class Symbol:
    """A symbolic per-point input: image-plane ``x``/``y`` or source-plane ``bx``/``by``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


IMAGE = (Symbol("x"), Symbol("y"))
SOURCE = (Symbol("bx"), Symbol("by"))


def _plan(mass: list, lens_light: list, source_light: list) -> tuple[list, list, list] | None:
    """``(mass, fixed, columns)`` planned calls, or None if some profile cannot be fused."""
    mass_calls, fixed, columns = [], [], []
    try:
        for profile in mass:
            out = profile._deflections(*IMAGE, PLAN)
            if not (
                isinstance(out, tuple)
                and len(out) == 2
                and all(isinstance(o, PlannedOutput) for o in out)
                and out[0].call is out[1].call
                and (out[0].index, out[1].index) == (0, 1)
            ):
                return None
            mass_calls.append(out[0].call)
        for profiles, symbols in ((lens_light, IMAGE), (source_light, SOURCE)):
            for profile in profiles:
                outs = (
                    profile._columns(*symbols, PLAN)
                    if profile.n_linear
                    else [profile._image(*symbols, PLAN)]
                )
                for o in outs:
                    if not isinstance(o, PlannedOutput) or o.call.args[:2] != symbols:
                        return None
                (columns if profile.n_linear else fixed).extend(o.call for o in outs)
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        return None
    for call in (*mass_calls, *fixed, *columns):
        k = call.kernel
        if k.point is None or "numba" in k.impls or k.input_dtype != "float64":
            return None  # no per-point source that numba compiles as is
    for call in mass_calls:
        if call.args[:2] != IMAGE:
            return None
    return mass_calls, fixed, columns


def _split(call: PlannedCall) -> tuple[list, list]:
    k = call.kernel
    params = call.args[len(k.inputs) :]
    n_fixed = len(k.params) - k.components
    return list(params[:n_fixed]), list(params[n_fixed:])


def _signature(mass: list, fixed: list, columns: list, n_base: tuple[int, int]) -> tuple:
    calls = tuple(
        (role, c.kernel.name, tuple(s.name for s in c.args[: len(c.kernel.inputs)]))
        for role, calls in (("mass", mass), ("fixed", fixed), ("column", columns))
        for c in calls
    )
    return (*calls, ("stored", n_base))


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
    plan = _plan(mass, lens_light, source_light)
    if plan is None:
        return None
    mass_calls, fixed, columns = plan
    calls = mass_calls + fixed + columns
    scalars, comps = [], []
    for c in calls:
        s, k = _split(c)
        scalars += s
        comps += k
    stored = [*stored_mass, *stored_light]
    scalars += [r.factor for r in stored]  # a factor is one number per member, like a param
    try:
        n_batch, scalar_arrays, comp_arrays = batch_params(scalars, comps)
    except ValueError:
        return None
    batched = any(np.ndim(p) > 0 for p in scalars) or any(np.ndim(c) > 1 for c in comps)
    # parallel over members when there are enough to share out, else over points
    by_member = n_batch >= 2 * numba_runtime.get_num_threads()
    signature = _signature(mass_calls, fixed, columns, (len(stored_mass), len(stored_light)))
    loop = _compiled(signature, tuple(_kernel_key(c) for c in calls), by_member)
    n_out = len(columns) + (1 if fixed or stored_light else 0)
    outs = [np.empty(n_batch * xs.shape[0]) for _ in range(n_out)]
    loop(*outs, n_batch, xs, ys, *(r.stored for r in stored), *scalar_arrays, *comp_arrays)
    shaped = [o.reshape(n_batch, xs.shape[0]) if batched else o for o in outs]
    if fixed or stored_light:
        return shaped[0], shaped[1:]
    return 0.0, shaped


def _kernel_key(call: PlannedCall) -> tuple:
    k = call.kernel
    return (k.point.__module__, k.point.__name__, len(k.params) - k.components, k.components)


@cache
def _compiled(signature: tuple, kernels: tuple, by_member: bool) -> Any:
    from twinlens.kernels import ops
    from twinlens.kernels.compile import compile_quietly, math_fingerprint

    numba_runtime.load()
    ops.register_numba_overloads()
    modules = sorted({module for module, *_ in kernels})
    fingerprint = "-".join(math_fingerprint(m) for m in modules)
    source = _source(signature, kernels, fingerprint, by_member)
    stem = "fused_" + "_".join(name.replace(".", "_") for _, name, _ in signature[:-1])[:80]
    loop = numba_runtime.import_generated(stem, source).loop
    n_mass, n_light = signature[-1][1]
    n_out = sum(role == "column" for role, _, _ in signature[:-1])
    n_out += int(n_light > 0 or any(role == "fixed" for role, _, _ in signature[:-1]))
    dummy: list[Any] = [np.zeros(1) for _ in range(n_out)] + [1, np.zeros(1), np.zeros(1)]
    stored = [np.zeros((2, 1))] * n_mass + [np.zeros(1)] * n_light
    for a in stored:
        a.setflags(write=False)  # the memo's arrays are read-only: a distinct numba type
    dummy += stored
    dummy += [np.full(1, 0.5) for k in kernels for _ in range(k[2])]
    dummy += [np.full(1, 0.5)] * (n_mass + n_light)
    dummy += [np.full((1, 1), 0.5) for k in kernels for _ in range(k[3])]
    return compile_quietly(loop, *dummy)


def _source(signature: tuple, kernels: tuple, fingerprint: str, by_member: bool) -> str:
    """The generated module: per point, sum the deflections, trace, add the light; the
    parallel loop runs over batch members (``by_member``) or over the points of each.

    Each output is its own 1-D array, passed in (every element is written): with two rows of
    one 2-D array written per point, LLVM did not vectorise the loop (W6: 12.9 ms against
    1.8 ms per call), and arrays allocated inside the loop made W5 batches 25% slower."""
    imports, scalars, comps = [], [], []
    body = ["x = xs[i]", "y = ys[i]", "ax = 0.0", "ay = 0.0", "light = 0.0"]
    n_mass, n_light = signature[-1][1]
    signature = signature[:-1]
    # stored fields (from the memo) first: read, times one factor per member
    stored = [f"sm{j}" for j in range(n_mass)] + [f"sl{j}" for j in range(n_light)]
    factors = [f"f{name}" for name in stored]
    body += [f"ax += f{a}_b * {a}[0, i]\nay += f{a}_b * {a}[1, i]" for a in stored[:n_mass]]
    body += [f"light += f{a}_b * {a}[i]" for a in stored[n_mass:]]
    n_columns = 0
    traced = False
    for j, ((role, _, symbols), (module, function, n_s, n_c)) in enumerate(
        zip(signature, kernels, strict=True)
    ):
        imports += [
            f"from {module} import {function} as _src{j}",
            f"_k{j} = njit(getattr(_src{j}, '_numba_impl', _src{j}), error_model='numpy', "
            "inline='always')",
        ]
        s_names = [f"p{j}_{a}" for a in range(n_s)]
        c_names = [f"c{j}_{a}" for a in range(n_c)]
        scalars += s_names
        comps += c_names
        if role != "mass" and not traced:  # every deflection is summed: trace the ray
            body += ["bx = x - ax", "by = y - ay"]
            traced = True
        inputs = "x, y" if symbols == ("x", "y") else "bx, by"
        args = ", ".join([inputs, *(f"{p}_b" for p in s_names), *(f"{c}[b, k]" for c in c_names)])
        call = f"_k{j}({args})"
        if role == "mass":
            if n_c:  # a sum over components (e.g. an MGE): loop inside the point
                body += [f"for k in range({c_names[0]}.shape[1]):", f"    r = {call}"]
                body += ["    ax += r[0]", "    ay += r[1]"]
            else:
                body += [f"r = {call}", "ax += r[0]", "ay += r[1]"]
            continue
        if n_c:
            body += ["v = 0.0", f"for k in range({c_names[0]}.shape[1]):", f"    v += {call}"]
            value = "v"
        else:
            value = call
        if role == "fixed":
            body.append(f"light += {value}")
        else:
            n_columns += 1
            body.append(f"o{n_columns}[t] = {value}")
    has_fixed = n_light > 0 or any(role == "fixed" for role, _, _ in signature)
    if has_fixed:
        body.append("o0[t] = light")
    outputs = (["o0"] if has_fixed else []) + [f"o{k}" for k in range(1, 1 + n_columns)]
    body = [part for line in body for part in line.split("\n")]
    scalars += factors
    # per-member scalars are read once per member, outside the parallel loop over points,
    # so the loop body is the same straight-line code as a single evaluation's
    loads = "\n".join(f"        {p}_b = {p}[b]" for p in scalars) or "        pass"
    return _TEMPLATE.format(
        fingerprint=fingerprint,
        imports="\n".join(imports),
        cache=numba_runtime.cache_enabled(),
        args=", ".join([*outputs, "n_batch", "xs", "ys", *stored, *scalars, *comps]),
        members="prange" if by_member else "range",
        points="range" if by_member else "prange",
        loads=loads,
        body="\n".join(" " * 12 + line for line in body),
    )


_TEMPLATE = """\
# Generated by twinlens: a tracer's deflections and light in one loop. Safe to delete.
# math fingerprint: {fingerprint}
import numpy as np
from numba import njit, prange

{imports}


@njit(parallel=True, cache={cache}, error_model="numpy")
def loop({args}):
    n = xs.shape[0]
    for b in {members}(n_batch):
{loads}
        for i in {points}(n):
            t = b * n + i
{body}
"""

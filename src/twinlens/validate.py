"""Cross-backend validation: every registered kernel, every available backend, one report.

Each kernel is evaluated over generated inputs (each special value of each parameter, random
parameter draws, per-point inputs with every special value and with points tied to the centre)
on every available backend, and each backend is compared with the numpy reference at the
kernel's tolerance.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import asdict, dataclass

import numpy as np

from twinlens.kernels.registry import Kernel, all_kernels, parameter_cases, sample_arguments
from twinlens.kernels.tolerance import compare_outputs


@dataclass(frozen=True)
class Row:
    """One line of the report: a kernel, a backend against the reference."""

    kernel: str
    backends: str
    max_rel: float
    max_abs: float
    rtol: float
    atol: float
    passed: bool
    n_values: int
    error: str = ""


def available_backends() -> list[str]:
    """Backends whose packages are importable here (numpy always is)."""
    names = ["numpy"]
    for name in ("numba", "jax"):
        if importlib.util.find_spec(name) is not None:
            names.append(name)
    return names


def validate_kernel(
    kernel: Kernel, backends: list[str], seed: int = 0, n_points: int = 512, n_random: int = 8
) -> list[Row]:
    """Compare each backend in ``backends`` (other than numpy) with the numpy reference."""
    rng = np.random.default_rng(seed)
    cases = [
        sample_arguments(kernel, rng, n_points, c) for c in parameter_cases(kernel, rng, n_random)
    ]
    others = [b for b in backends if b != "numpy"]
    per_backend: dict[str, list] = {b: [] for b in others}
    errors: dict[str, str] = {}
    for args in cases:
        ref = _as_tuple(kernel(*args, backend="numpy"))
        for b in others:
            if b in errors:
                continue
            try:
                out = _as_tuple(kernel(*args, backend=b))
            except Exception as err:  # reported as a failed row, never swallowed silently
                first_line = (str(err).strip().splitlines() or [""])[0]
                errors[b] = f"{type(err).__name__}: {first_line[:160]}"
                continue
            per_backend[b] += compare_outputs(out, ref, kernel.tolerance_for(args))
    if "numba" in others and "jax" in others:  # the headline pair, measured directly
        per_backend["numba vs jax"] = []
        for args in cases:
            if "numba" in errors or "jax" in errors:
                break
            nb, jx = (
                _as_tuple(kernel(*args, backend="numba")),
                _as_tuple(kernel(*args, backend="jax")),
            )
            per_backend["numba vs jax"] += compare_outputs(nb, jx, kernel.tolerance_for(args))
        others = [*others, "numba vs jax"]
    rows = []
    for b in others:
        got = per_backend[b]
        rows.append(
            Row(
                kernel=kernel.name,
                backends=b if " vs " in b else f"{b} vs numpy",
                max_rel=max((a.max_rel for a in got), default=float("nan")),
                max_abs=max((a.max_abs for a in got), default=float("nan")),
                rtol=kernel.tol.rtol,
                atol=kernel.tol.atol,
                passed=b not in errors and bool(got) and all(a.passed for a in got),
                n_values=sum(a.n for a in got),
                error=errors.get(b, ""),
            )
        )
    return rows


def _release_jax_programs(limit: int = 20_000) -> None:
    # Each compiled XLA program holds memory mappings; validating every kernel compiles
    # hundreds, and a process past the kernel's mapping limit (vm.max_map_count, 65530 by
    # default) crashes in the next compile. Past ``limit`` mappings (Linux reports them), drop
    # the compiled programs: each kernel's are not needed again.
    if "jax" not in sys.modules:
        return
    try:
        with open("/proc/self/maps", "rb") as maps:
            count = sum(1 for _ in maps)
    except OSError:  # not Linux: no such limit to watch
        return
    if count > limit:
        sys.modules["jax"].clear_caches()


def _as_tuple(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def run(backends: list[str] | None = None, seed: int = 0, n_points: int = 512) -> list[Row]:
    """Validate every registered kernel; returns the report rows."""
    backends = backends or available_backends()
    rows: list[Row] = []
    for kernel in all_kernels():
        usable = [b for b in backends if b in kernel.backends]
        missing = [b for b in backends if b not in kernel.backends]
        rows += validate_kernel(kernel, usable, seed=seed, n_points=n_points)
        _release_jax_programs()
        rows += [
            Row(kernel.name, f"{b} vs numpy", float("nan"), float("nan"), kernel.tol.rtol,
                kernel.tol.atol, False, 0, error=f"no {b} implementation")
            for b in missing
        ]  # fmt: skip
    return rows


def format_table(rows: list[Row]) -> str:
    """A fixed-width table for people."""
    head = ("kernel", "backends", "max rel err", "max abs err", "rtol", "atol", "result")
    lines = [
        (
            r.kernel,
            r.backends,
            f"{r.max_rel:.2e}",
            f"{r.max_abs:.2e}",
            f"{r.rtol:.0e}",
            f"{r.atol:.0e}",
            "pass" if r.passed else f"FAIL {r.error}".strip(),
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(out)


def as_dicts(rows: list[Row]) -> list[dict]:
    return [asdict(r) for r in rows]

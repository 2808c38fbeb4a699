"""Plan mode: a kernel called with ``backend="plan"`` records the call instead of computing.

Code above the kernels (a tracer fusing its profiles into one compiled loop) calls a profile's
method in plan mode to learn which kernel it would run, with which arguments. A recorded
output supports no arithmetic, so a method that does more than return a kernel's output
fails to plan and its caller falls back to computing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PLAN = "plan"


@dataclass(frozen=True, eq=False)
class PlannedCall:
    """A kernel call recorded in plan mode: the kernel and its arguments."""

    kernel: Any
    args: tuple


@dataclass(frozen=True, eq=False)
class PlannedOutput:
    """One output of a planned call."""

    call: PlannedCall
    index: int


def planned(kernel: Any, args: tuple) -> Any:
    """One :class:`PlannedOutput` per output of ``kernel`` (a tuple when there are several)."""
    call = PlannedCall(kernel, args)
    outs = tuple(PlannedOutput(call, i) for i in range(len(kernel.outputs)))
    return outs[0] if len(outs) == 1 else outs

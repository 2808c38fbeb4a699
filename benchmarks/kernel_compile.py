"""What a first-time user pays per kernel: the first call of every registered kernel (compile
plus one run on 12 points) in one process, in registry order, with numba's on-disk cache off.

    python benchmarks/kernel_compile.py                 # numba
    python benchmarks/kernel_compile.py --backend jax
    python benchmarks/kernel_compile.py --top 15        # the costliest first, and the total

One JSON line per kernel (``first_call_s``) and a last line with the total. The first kernel
also pays the backend's own start-up. Kernels that share compiled loops (a traced form that
runs its exact forms' kernels on numba) cost little after them: the order is the registry's.
"""

from __future__ import annotations

import argparse
import os

# set before twinlens reads it: nothing from an earlier run may be loaded from disk
os.environ["TWINLENS_NUMBA_CACHE"] = "0"

import numpy as np
from timing import emit, first_call

from twinlens.kernels import all_kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("numba", "jax"), default="numba")
    parser.add_argument("--top", type=int, default=0, help="print only the N costliest kernels")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    rows = []
    for kernel in all_kernels():
        values = [a.domain.uniform(rng, 12) for a in kernel.inputs]
        values += [p.draw(rng) for p in kernel.params]
        seconds = first_call(lambda k=kernel, v=values: k(*v, backend=args.backend))
        rows.append((seconds, kernel.name))
    shown = sorted(rows, reverse=True)[: args.top] if args.top else rows
    for seconds, name in shown:
        emit(case="kernel_first_call", kernel=name, backend=args.backend, first_call_s=seconds)
    emit(
        case="kernel_first_call_total",
        backend=args.backend,
        kernels=len(rows),
        first_call_s=sum(s for s, _ in rows),
    )


if __name__ == "__main__":
    main()

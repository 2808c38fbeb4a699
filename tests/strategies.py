"""Hypothesis strategies built from the registry's argument domains."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from twinlens.kernels.domains import Domain
from twinlens.kernels.registry import Kernel


def values(domain: Domain) -> st.SearchStrategy[float]:
    """A value of ``domain``: its special values on purpose, or any float inside it."""
    if domain.log:
        inner = st.floats(np.log(domain.lo), np.log(domain.hi)).map(
            lambda t: float(min(max(np.exp(t), domain.lo), domain.hi))
        )
    else:
        # No subnormals: JAX on CPUs flushes them to zero (documented in docs/backends.rst),
        # and none below 1e-100 in size either, whose squares (a radius squared) are subnormal
        # and flushed to zero on JAX alone; 0 itself and the domain's specials stay.
        inner = st.floats(
            domain.lo, domain.hi, allow_nan=False, allow_infinity=False, allow_subnormal=False
        ).map(lambda v: v if abs(v) >= 1e-100 else 0.0)
    if domain.specials:
        return st.one_of(st.sampled_from(domain.specials), inner)
    return inner


@st.composite
def kernel_arguments(draw, kernel: Kernel, n_points: int = 32) -> list:
    """Arguments for ``kernel``: params, then per-point inputs, with ties applied on purpose.

    The number of points is fixed so that JAX compiles each kernel once, not once per size."""
    params = {
        p.name: draw(values(p.domain))
        if p.size is None
        else np.array(draw(st.lists(values(p.domain), min_size=p.size, max_size=p.size)))
        for p in kernel.params
    }
    n = n_points
    inputs = {
        a.name: np.array(draw(st.lists(values(a.domain), min_size=n, max_size=n)))
        for a in kernel.inputs
    }
    if kernel.ties:
        tied = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        for inp, par in kernel.ties:
            if inp in inputs and par in params:
                inputs[inp][tied] = params[par]
    return [inputs[a.name] for a in kernel.inputs] + [params[p.name] for p in kernel.params]

"""JAX for a test, as twinlens configures it."""

from __future__ import annotations

from typing import Any

import pytest


def jax_or_skip() -> Any:
    """JAX with float64 on (twinlens turns it on when it first loads JAX), or skip the test where
    JAX is not installed. A test that builds its own JAX arrays before anything in twinlens has
    loaded JAX would otherwise get float32 arrays when it runs alone."""
    pytest.importorskip("jax")
    from twinlens.backend import jax_runtime

    return jax_runtime.load()

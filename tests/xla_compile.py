"""How the test processes have XLA compile, and how a test compiles a program as a user's.

The suite compiles about 3,900 JAX programs on small arrays, and their compiling, not their
running, is the cost. So the test processes turn off what makes XLA's CPU programs fast and
slow to build: LLVM's optimisation passes and the newer fusion emitters (``test_power_law.py``
plus ``test_pixelised_backends.py``: XLA compiles 51.5 s with both on, 21.4 s with both off).
Results may then differ from a user's in the last bits where the arithmetic cancels; every
tolerance holds, and a test that asserts identical bits between two programs compiles them as
the user's would be (:func:`user_compiled`). The flags are part of JAX's on-disk cache key, so
these programs never stand in for a user's.

``TWINLENS_TEST_XLA=user`` runs the tests with XLA's defaults (``tox -e slow`` does).
"""

from __future__ import annotations

import os
from typing import Any

#: the test run's XLA flags
TEST_FLAGS = {"xla_backend_optimization_level": "0", "xla_cpu_use_fusion_emitters": "false"}
#: the same options at XLA's defaults, as compile options (test_xla_compile.py checks these
#: give a user's bits)
USER_OPTIONS = {"xla_backend_optimization_level": 3, "xla_cpu_use_fusion_emitters": True}


def fast_compile_wanted() -> bool:
    """Whether this run compiles with the test flags (not under ``TWINLENS_TEST_XLA=user``)."""
    return os.environ.get("TWINLENS_TEST_XLA", "").strip().lower() != "user"


def set_test_flags() -> None:
    """Add the test flags to ``XLA_FLAGS`` (before JAX starts its backend), each unless the
    user's ``XLA_FLAGS`` names it already."""
    if not fast_compile_wanted():
        return
    flags = os.environ.get("XLA_FLAGS", "")
    extra = [f"--{name}={value}" for name, value in TEST_FLAGS.items() if name not in flags]
    if extra:
        os.environ["XLA_FLAGS"] = " ".join([flags, *extra]).strip()


def user_compiled(fn: Any, *args: Any) -> Any:
    """``fn`` jitted and compiled for ``args`` with XLA's default options (as a user's program
    is compiled), whatever the test flags; call it with the same ``args``."""
    import jax

    return jax.jit(fn).lower(*args).compile(USER_OPTIONS)

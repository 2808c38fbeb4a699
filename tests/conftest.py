import os
import sys

import pytest
from hypothesis import HealthCheck, settings
from xla_compile import set_test_flags

# Default run: enough examples to reach every special value, derandomised so CI is repeatable.
settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# tox -e slow: long, randomised runs.
settings.register_profile(
    "slow",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("TWINLENS_HYPOTHESIS_PROFILE", "default"))

# numba's OpenMP threads spin while they wait for work. With a test process per core, each
# running parallel loops, the spinning threads keep the cores from the other process: a call
# of a kernel on 512 points took 16 ms instead of 0.07 ms. Waiting threads that sleep change no
# result. (Read when OpenMP starts, at the first parallel loop; test subprocesses inherit it.)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

# XLA compiles the test processes' programs fast rather than fast to run (see xla_compile.py).
set_test_flags()

# Compiled JAX programs kept on disk, in the folder `twinlens validate`'s workers use (beside the
# numba loops; TWINLENS_NUMBA_CACHE=0 turns both off): the test processes, the command-line
# runs they start, and each module after _release_jax_programs cleared the in-memory programs
# load a program compiled once instead of compiling it again. The default run with the numba
# loops already on disk: 10 min 10 s without, 6 min 28 s with, the folder empty at the start.
if "TWINLENS_JAX_CACHE_DIR" not in os.environ:
    from twinlens.validate import worker_jax_cache

    _jax_cache = worker_jax_cache()
    if _jax_cache:
        os.environ["TWINLENS_JAX_CACHE_DIR"] = _jax_cache


@pytest.fixture(autouse=True, scope="module")
def _release_jax_programs():
    """Drop JAX's compiled programs after each test module.

    Every XLA executable keeps memory mappings; the whole suite compiles thousands of programs,
    and a process that reaches the kernel's limit on mappings (vm.max_map_count, 65530 by
    default) crashes inside the next compile. Clearing per module keeps the count bounded."""
    yield
    if "jax" in sys.modules:
        sys.modules["jax"].clear_caches()

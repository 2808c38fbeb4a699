"""The test run's XLA flags: in effect in the test processes, and undone by
:func:`xla_compile.user_compiled`, which must reproduce a user's program bit for bit."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
from jax_loaded import jax_or_skip
from xla_compile import TEST_FLAGS, fast_compile_wanted, user_compiled

# a sum that cancels (psi_xx of an elliptical Gaussian far out): its last bits follow the
# codegen, so the two compile settings give different values here
_PROGRAM = """
import sys
import numpy as np
from twinlens.backend import jax_runtime
from twinlens.kernels import faddeeva, gaussian

def outputs(compiled):
    rng = np.random.default_rng(7)
    x, y = rng.uniform(-6, 6, 400), rng.uniform(0, 6, 400)
    xx, yy = rng.uniform(-30, 30, 400), rng.uniform(-30, 30, 400)
    params = (0.1, -0.2, 0.55, 0.7, 0.3, 1.2)
    w = compiled(faddeeva.wofz_upper, x, y)(x, y)
    h = compiled(gaussian.hessian_elliptical, xx, yy, *params)(xx, yy, *params)
    return np.stack([np.asarray(a) for a in (*w, *h)])

if __name__ == "__main__":
    jax = jax_runtime.load()
    np.save(sys.argv[1], outputs(lambda fn, *args: jax.jit(fn)))
"""


def test_test_flags_are_set_and_user_compiled_gives_a_users_bits(tmp_path):
    jax = jax_or_skip()
    flags = os.environ.get("XLA_FLAGS", "")
    set_here = [f"--{name}={value}" in flags for name, value in TEST_FLAGS.items()]
    assert set_here == [fast_compile_wanted()] * len(TEST_FLAGS)
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "TWINLENS_JAX_CACHE_DIR")}
    subprocess.run(
        [sys.executable, str(script), str(tmp_path / "user.npy")], env=env, check=True, timeout=300
    )
    user = np.load(tmp_path / "user.npy")
    spec = importlib.util.spec_from_file_location("xla_program", script)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    np.testing.assert_array_equal(program.outputs(user_compiled), user)
    # the same programs jitted plainly: a user's bits only without the test flags (which are
    # then in force in this process, not only named in its environment)
    plain = program.outputs(lambda fn, *args: jax.jit(fn))
    assert np.array_equal(plain, user) == (not fast_compile_wanted())

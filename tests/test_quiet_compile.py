"""A cold numba cache compiles every generated loop without printing numba's internal
"pedantic" IR warnings (issue 13: about 420 such lines on a cold ``twinlens fit --example``)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np

from twinlens.backend import numba_runtime

# One imaging likelihood on a 20x20 grid, on numba. Its parameters reach the fused loop as
# read-only arrays, a type the eager compile in ``compile_quietly`` had not seen: the loop
# compiled again at that first real call, outside the filter, and printed the warnings.
SCRIPT = """
import numpy as np
from twinlens.imaging.dataset import simulate
from twinlens.likelihood.imaging import FitImaging
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.grids import Grid2D
from twinlens.light import Sersic
from twinlens.mass import SIE

grid = Grid2D((20, 20), 0.1, sub_size=1).circular_mask(0.9)
psf = PSF.gaussian(0.15, 0.1, 3)
tracer = Tracer(
    Galaxy(mass=(SIE((0.0, 0.0), (0.1, -0.05), 0.6),)),
    Galaxy(light=Sersic((0.03, 0.02), (0.1, 0.0), 0.2, 1.5, 2.0)),
)
dataset = simulate(tracer, grid, psf, noise_sigma=0.05, seed=2, backend="numpy")
print(float(FitImaging(dataset, tracer, "numba").log_likelihood))
"""


def test_cold_cache_compiles_without_numba_internal_warnings(tmp_path):
    env = {
        **os.environ,
        "TWINLENS_CACHE_DIR": str(tmp_path / "twinlens"),
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "PYTHONWARNINGS": "default",  # show every warning, as a user's terminal would
    }
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert np.isfinite(float(out.stdout.strip().splitlines()[-1]))  # it was evaluated
    leaked = [
        line
        for line in out.stderr.splitlines()
        if "NumbaIRAssumptionWarning" in line or "pedantic" in line
    ]
    assert not leaked, f"{len(leaked)} numba-internal warning lines:\n" + "\n".join(leaked[:6])


class _FakeDispatcher:
    """Stands in for a numba dispatcher whose compile warns as numba's would."""

    def compile(self, sig):
        import numba

        warnings.warn(numba.core.errors.NumbaIRAssumptionWarning("not in scope"), stacklevel=1)
        warnings.warn(numba.core.errors.NumbaPerformanceWarning("no parallelism"), stacklevel=1)
        return sig


def test_quiet_compiles_silences_only_the_pedantic_check():
    fake = numba_runtime.quiet_compiles(_FakeDispatcher())
    assert numba_runtime.quiet_compiles(fake) is fake  # wrapped once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fake.compile(("sig",)) == ("sig",)
    assert [type(w.message).__name__ for w in caught] == ["NumbaPerformanceWarning"]


def test_generated_modules_compile_quietly_but_not_what_they_import():
    # only the module's own functions: a jitted import may be a user's, left as it is
    source = (
        "from numba import njit\n"
        "from twinlens.kernels.isothermal import convergence\n"
        "imported = njit(convergence)\n"
        "@njit(cache=False)\n"
        "def loop(x):\n"
        "    return x + 1.0\n"
    )
    module = numba_runtime.import_generated("test_quiet", source)
    assert getattr(module.loop, "_twinlens_quiet", False)
    assert not getattr(module.imported, "_twinlens_quiet", False)
    assert module.loop(1.0) == 2.0

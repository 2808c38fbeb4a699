"""Backend names, the process default, selection by input type, and lazy imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import twinlens
from twinlens.backend import jax_runtime, resolve_backend
from twinlens.kernels import get

FRAME = get("geometry.to_profile_frame")


def _run_python(code: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_import_twinlens_imports_no_jax_and_compiles_nothing():
    code = (
        "import sys, twinlens, twinlens.kernels, twinlens.fields, twinlens.validate\n"
        "import json; print(json.dumps({m: m in sys.modules for m in ('jax', 'numba')}))"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"jax": False, "numba": False}


def test_unknown_backend_lists_the_choices():
    with pytest.raises(ValueError, match="numba, jax, numpy"):
        twinlens.set_backend("torch")
    with pytest.raises(ValueError, match="numba, jax, numpy"):
        FRAME(np.zeros(2), np.zeros(2), 0.0, 0.0, 0.0, backend="cuda")


def test_default_is_numba_and_set_backend_overrides(monkeypatch):
    monkeypatch.delenv("TWINLENS_BACKEND", raising=False)
    assert twinlens.get_backend() == "numba"
    try:
        twinlens.set_backend("numpy")
        assert resolve_backend(None, np.zeros(2)) == "numpy"
    finally:
        twinlens.set_backend(None)
    assert twinlens.get_backend() == "numba"


def test_environment_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv("TWINLENS_BACKEND", "numpy")
    assert twinlens.get_backend() == "numpy"
    monkeypatch.setenv("TWINLENS_BACKEND", "fortran")
    with pytest.raises(ValueError, match="TWINLENS_BACKEND"):
        twinlens.get_backend()


def test_jax_input_selects_jax_and_conflicting_request_is_refused(monkeypatch):
    jax = jax_runtime.load()
    monkeypatch.setenv("TWINLENS_BACKEND", "numpy")
    x = jax.numpy.linspace(-1.0, 1.0, 5)
    out = FRAME(x, x, 0.1, 0.0, 0.3)
    assert isinstance(out[0], jax.Array)
    with pytest.raises(TypeError, match="backend='jax'"):
        FRAME(x, x, 0.1, 0.0, 0.3, backend="numba")


def test_tracer_inputs_select_jax():
    jax = jax_runtime.load()

    def f(cx):
        xr, yr = FRAME(np.linspace(-1, 1, 4), np.zeros(4), cx, 0.0, 0.0)
        return (xr**2 + yr**2).sum()

    # d/dcx sum((x - cx)^2) = -2 sum(x - cx)
    x = np.linspace(-1, 1, 4)
    np.testing.assert_allclose(jax.grad(f)(0.25), -2 * np.sum(x - 0.25), rtol=1e-14)


def test_jax_runs_in_float64_by_default():
    jax = jax_runtime.load()
    out = FRAME(jax.numpy.ones(3), jax.numpy.ones(3), 0.0, 0.0, 0.0)
    assert out[0].dtype == np.float64


def test_missing_jax_names_the_install_command():
    code = (
        "import sys; sys.modules['jax'] = None\n"
        "import numpy as np\n"
        "from twinlens.kernels import get\n"
        "try:\n"
        "    get('geometry.to_profile_frame')(np.zeros(2), np.zeros(2), 0, 0, 0, backend='jax')\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    result = _run_python(code)
    assert "pip install 'twinlens[jax]'" in result.stdout, result.stdout + result.stderr


def test_float32_is_opt_in():
    code = (
        "import numpy as np\n"
        "from twinlens.kernels import get\n"
        "import jax.numpy as jnp\n"
        "out = get('geometry.from_profile_frame')(np.ones(2), np.ones(2), 0.1, backend='jax')\n"
        "print(out[0].dtype)\n"
    )
    assert _run_python(code, {"TWINLENS_JAX_X64": "0"}).stdout.strip() == "float32"
    assert _run_python(code).stdout.strip() == "float64"


def test_float32_jax_inputs_made_before_float64_are_flagged():
    code = (
        "import warnings, numpy as np\n"
        "import jax.numpy as jnp\n"
        "x = jnp.linspace(0.0, 1.0, 5)  # made before twinlens switched float64 on\n"
        "from twinlens.kernels import get\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    get('geometry.from_profile_frame')(x, x, 0.1)\n"
        "print(x.dtype, any('float32' in str(m.message) for m in w))\n"
    )
    assert _run_python(code).stdout.split() == ["float32", "True"]


def test_jax_persistent_cache_is_used_when_asked(tmp_path):
    # TWINLENS_JAX_CACHE_DIR (docs/backends.rst, docs/cluster.rst): compiled programs land in
    # the folder, and a second process reads them back (a cache hit, the same numbers)
    code = (
        "import numpy as np\n"
        "import jax\n"
        "from twinlens.kernels import get\n"
        "x = np.linspace(-2.0, 2.0, 257)\n"
        "ax, ay = get('isothermal.deflections_elliptical')(x, x[::-1], 0.1, -0.2, 0.7, 0.3, 1.3, "
        "0.05, backend='jax')\n"
        "print(float(np.sum(ax)), float(np.sum(ay)))\n"
    )
    env = {**os.environ, "TWINLENS_JAX_CACHE_DIR": str(tmp_path / "jax")}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    entries = [p for p in (tmp_path / "jax").rglob("*") if p.is_file()]
    assert entries, "no compiled program was written to TWINLENS_JAX_CACHE_DIR"
    debug = code.replace(
        "import jax\n",
        "import jax, logging\n"
        "logging.basicConfig(level=logging.DEBUG)\n"
        "logging.getLogger('jax').setLevel(logging.DEBUG)\n",
    )
    second = subprocess.run([sys.executable, "-c", debug], capture_output=True, text=True, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert "Persistent compilation cache hit" in second.stderr

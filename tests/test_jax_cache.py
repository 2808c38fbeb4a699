"""The on-disk JAX program cache (``TWINLENS_JAX_CACHE_DIR``) stays within its cap
(``TWINLENS_JAX_CACHE_MAX_MB``), dropping the least recently used programs. JAX reads its cache
settings once per process, so each case runs in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("filelock")

# twelve small, distinct programs: about 3 kB each on disk
PROGRAMS = """
from twinlens.backend import jax_runtime
jax = jax_runtime.load()
import jax.numpy as jnp
for n in range(1, 13):
    jax.jit(lambda x, n=n: jnp.sin(x) * n + jnp.cos(x) ** n)(jnp.ones(n)).block_until_ready()
"""


def _stored_bytes(cap_mb: str, folder: Path) -> int:
    env = {**os.environ, "TWINLENS_JAX_CACHE_DIR": str(folder), "TWINLENS_JAX_CACHE_MAX_MB": cap_mb}
    env["JAX_PLATFORMS"] = "cpu"
    subprocess.run([sys.executable, "-c", PROGRAMS], env=env, check=True, timeout=300)
    return sum(p.stat().st_size for p in folder.glob("*-cache"))


def test_the_program_cache_keeps_within_its_cap(tmp_path):
    cap = 0.02  # MB: room for a few of the programs
    uncapped = _stored_bytes("0", tmp_path / "uncapped")
    capped = _stored_bytes(str(cap), tmp_path / "capped")
    assert uncapped > cap * 2**20  # without the cap the programs overflow it
    assert 0 < capped <= cap * 2**20


def test_programs_stored_without_a_cap_are_evicted_first(tmp_path):
    # a folder filled before the cap (JAX kept no access times then) takes the cap cleanly
    folder = tmp_path / "cache"
    uncapped = _stored_bytes("0", folder)
    old = {p.name for p in folder.glob("*-cache")}
    assert not list(folder.glob("*-atime")) and uncapped > 0.02 * 2**20
    env = {**os.environ, "TWINLENS_JAX_CACHE_DIR": str(folder), "TWINLENS_JAX_CACHE_MAX_MB": "0.02"}
    env["JAX_PLATFORMS"] = "cpu"
    code = PROGRAMS.replace("range(1, 13)", "range(20, 26)")  # new programs to store
    done = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", code], env=env, timeout=300
    )
    assert done.returncode == 0  # no warning from JAX's eviction
    stored = {p.name for p in folder.glob("*-cache")}
    assert sum(p.stat().st_size for p in folder.glob("*-cache")) <= 0.02 * 2**20
    assert stored - old  # the new programs were stored, the old ones dropped first
    assert len(old - stored) > 0


def test_a_bad_cap_is_named(monkeypatch):
    from twinlens.backend import jax_runtime

    monkeypatch.setenv("TWINLENS_JAX_CACHE_MAX_MB", "-5")
    with pytest.raises(ValueError, match="TWINLENS_JAX_CACHE_MAX_MB='-5': expected a number"):
        jax_runtime.cache_cap_bytes()
    monkeypatch.setenv("TWINLENS_JAX_CACHE_MAX_MB", "0")
    assert jax_runtime.cache_cap_bytes() is None  # no cap
    monkeypatch.setenv("TWINLENS_JAX_CACHE_MAX_MB", "2")
    assert jax_runtime.cache_cap_bytes() == 2 * 2**20

"""numba threads and the on-disk cache shared by many processes."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import twinlens
from twinlens.kernels import get

KERNEL_SCRIPT = """
import numpy as np
from twinlens.kernels import get
x = np.linspace(-3.0, 3.0, 10001)
xr, yr = get("geometry.to_profile_frame")(x, x[::-1], 0.1, -0.2, 0.7, backend="numba")
print(np.concatenate([xr, yr]).tobytes().hex()[:64], float(xr.sum()), float(yr.sum()))
"""


def test_set_num_threads_validates_and_applies():
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    twinlens.set_num_threads(1)
    try:
        assert twinlens.get_num_threads() == 1
        x = np.linspace(-1, 1, 1000)
        ref = get("geometry.to_profile_frame")(x, x, 0.1, 0.2, 0.3, backend="numpy")
        out = get("geometry.to_profile_frame")(x, x, 0.1, 0.2, 0.3, backend="numba")
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-13)
    finally:
        twinlens.set_num_threads(limit)
    for bad in (0, limit + 1, 1.5, True):
        with pytest.raises(ValueError, match="num_threads must be an int from 1 to"):
            twinlens.set_num_threads(bad)


def test_numba_num_threads_environment_is_honoured(tmp_path):
    code = "import twinlens; print(twinlens.get_num_threads())"
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "TWINLENS_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "1", out.stderr


def test_four_processes_share_one_empty_cache_directory(tmp_path):
    env = {**os.environ, "TWINLENS_CACHE_DIR": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", KERNEL_SCRIPT],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
    outputs = {out for out, _ in results}
    assert len(outputs) == 1
    cached = list(tmp_path.rglob("*.nbi"))
    assert cached, "numba wrote no cache index"
    # a fifth process loads the compiled kernel from the cache and gives the same answer
    probe = (
        KERNEL_SCRIPT
        + "loop = get('geometry.to_profile_frame').implementation('numba')\n"
        + "print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))\n"
    )
    again = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    first, hits_misses = again.stdout.splitlines()
    assert first + "\n" in outputs
    assert hits_misses == "1 0", again.stderr


def test_cache_can_be_turned_off(tmp_path):
    env = {**os.environ, "TWINLENS_CACHE_DIR": str(tmp_path), "TWINLENS_NUMBA_CACHE": "0"}
    result = subprocess.run(
        [sys.executable, "-c", KERNEL_SCRIPT], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    assert not list(tmp_path.rglob("*.nbi"))


PROBE = (
    KERNEL_SCRIPT
    + "loop = get('geometry.to_profile_frame').implementation('numba')\n"
    + "print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))\n"
)


def _probe(env: dict) -> tuple[str, str, str]:
    """(values line, "hits misses", stderr) of a fresh process evaluating the kernel."""
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    values, hits_misses = run.stdout.splitlines()
    return values, hits_misses, run.stderr


@pytest.mark.parametrize("damage", ["truncate data", "garble index"])
def test_a_damaged_cache_file_is_discarded_and_compiled_again(tmp_path, damage):
    env = {**os.environ, "TWINLENS_CACHE_DIR": str(tmp_path)}
    values, _, _ = _probe(env)
    # the reference comes from numpy, not from the cache under test
    reference = subprocess.run(
        [sys.executable, "-c", KERNEL_SCRIPT.replace('backend="numba"', 'backend="numpy"')],
        capture_output=True,
        text=True,
        env=env,
    ).stdout.split()
    got = [float(v) for v in values.split()[1:]]
    assert got == pytest.approx([float(v) for v in reference[1:]], rel=1e-12)
    pattern = "*.nbc" if damage == "truncate data" else "*.nbi"
    files = [f for f in tmp_path.rglob(pattern) if "to_profile_frame" in f.name]
    assert files, f"numba wrote no {pattern} file for the kernel"
    for f in files:
        data = f.read_bytes()
        f.write_bytes(
            data[: len(data) // 3] if damage == "truncate data" else data[:8] + b"\0" * 64
        )
    again, hits_misses, err = _probe(env)
    assert again == values
    assert hits_misses == "0 1"
    assert "could not be read" in err and "compiling again" in err
    # the entry written by the recompile is whole: the next process loads it silently
    third, hits_misses, err = _probe(env)
    assert third == values and hits_misses == "1 0"
    assert "could not be read" not in err


def test_generated_modules_follow_the_umask(tmp_path):
    env = {**os.environ, "TWINLENS_CACHE_DIR": str(tmp_path)}
    code = "import os; os.umask(0o002); exec(" + repr(KERNEL_SCRIPT) + ")"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    modules = list(tmp_path.rglob("*.py"))
    assert modules
    for f in modules:
        assert f.stat().st_mode & 0o777 == 0o664, f  # group-writable, as the umask allows
    for f in tmp_path.rglob("*.nb[ci]"):
        assert f.stat().st_mode & 0o060 == 0o060, f  # numba's files: the umask's mode too

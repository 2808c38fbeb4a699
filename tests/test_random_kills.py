"""``twinlens fit`` killed outright (SIGKILL) at random moments, and run again each time.

With ``checkpoint_every = 0`` every batch commits its checkpoint, so a kill lands in every
part of the run: starting up, sampling, training a bound, committing, writing the results.
Whatever it interrupts, the checkpoint left behind opens, the same command run again carries
on (or is killed again) without an error, and the samples it ends with are those of a run
that was never killed (docs/searches.rst, "What a checkpoint survives").
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_interrupt import CONFIG
from test_job import _small_dataset

# commit after every batch
EVERY_BATCH = CONFIG.replace("checkpoint_every = 1e9", "checkpoint_every = 0")
KILLS = 10


def _command(folder: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "twinlens", "fit", str(folder / "fit.toml"), *extra]


def _timed_reference(folder: Path) -> tuple[float, float]:
    """Run the fit in ``folder`` uninterrupted; the seconds until sampling started (the line
    ``nautilus: starting``) and until the run ended."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    began = time.monotonic()
    process = subprocess.Popen(
        _command(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    sampling = None
    for line in process.stdout:
        if sampling is None and "nautilus: starting" in line:
            sampling = time.monotonic() - began
    err = process.stderr.read()
    assert process.wait() == 0 and sampling is not None, err
    return sampling, time.monotonic() - began


def _run(folder: Path, kill_after: float | None, log: Path) -> tuple[int, str]:
    """Run the fit in ``folder``, SIGKILLed after ``kill_after`` seconds if still running;
    its exit status (-9 when killed) and standard error."""
    with log.with_suffix(".out").open("w") as out, log.open("w") as err:
        process = subprocess.Popen(_command(folder, "--quiet"), stdout=out, stderr=err)
        try:
            process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=60)
        except BaseException:
            process.kill()
            raise
    return process.returncode, log.read_text()


def _opens(path: Path) -> None:
    """``path`` is a whole nautilus state: h5py opens it and finds the sampler's marks."""
    import h5py

    with h5py.File(path, "r") as f:
        assert "sampler" in f and "rng_state" in f["sampler"].attrs, (path, list(f))


@pytest.mark.slow  # an uninterrupted fit, ten killed reruns, a last one: about 50 s
def test_random_sigkills_never_break_the_checkpoint_or_change_the_samples(tmp_path):
    pytest.importorskip("h5py")
    lens = tmp_path / "lens"
    lens.mkdir()
    _small_dataset(lens)
    (lens / "fit.toml").write_text(EVERY_BATCH)
    assert EVERY_BATCH != CONFIG
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    shutil.copytree(lens, reference)
    shutil.copytree(lens, killed)
    logs = tmp_path / "logs"
    logs.mkdir()

    # the uninterrupted run, which also measures how long a run takes and how long it takes
    # to start sampling
    start_up, duration = _timed_reference(reference)

    # ten moments of that run; each rerun carries the run from one to the next: killed after
    # its own start-up and the time between them (the first, a fresh run, at the first)
    rng = random.Random(0)
    moments = sorted(rng.uniform(0.0, duration) for _ in range(KILLS))
    delays = [moments[0]] + [start_up + b - a for a, b in itertools.pairwise(moments)]
    out = killed / "out_numba"
    outcomes: list[str] = []
    for n, delay in enumerate(delays):
        code, err = _run(killed, delay, logs / f"run{n}.err")
        outcomes.append("killed" if code == -9 else f"exit {code}")
        # a run that ended before its kill ended well; one killed had said nothing wrong
        assert code in (0, -9), (n, delay, outcomes, err)
        assert "Traceback" not in err and "error:" not in err, (n, delay, outcomes, err)
        for name in ("nautilus.hdf5", "nautilus.backup.hdf5"):
            if (out / name).exists():
                _opens(out / name)
    assert "killed" in outcomes, outcomes  # the moments must interrupt something

    code, err = _run(killed, None, logs / "last.err")
    assert code == 0, err
    ours = out / "samples.csv"
    theirs = reference / "out_numba" / "samples.csv"
    np.testing.assert_array_equal(
        np.loadtxt(ours, delimiter=",", skiprows=1),
        np.loadtxt(theirs, delimiter=",", skiprows=1),
    )
    assert ours.read_bytes() == theirs.read_bytes()
    a = json.loads((out / "result.json").read_text())
    b = json.loads((reference / "out_numba" / "result.json").read_text())
    assert a["n_evaluations"] == b["n_evaluations"]
    assert a["log_evidence"] == b["log_evidence"]
    assert a["parameters"] == b["parameters"]
    assert not (out / "nautilus.work.hdf5").exists()  # removed after the last commit

"""Ctrl-C as the first signal, and emcee stopped by a signal: both stop at a safe point with
their checkpoint written, and the resumed run is, bit for bit, the uninterrupted one.

``test_interrupt`` stops ``twinlens fit`` (nautilus) with SIGTERM first; a person's first
Ctrl-C (SIGINT) must do the same (docs/searches.rst, "Stopping a run"). emcee's chain, stopped
by SIGTERM mid-step, keeps every finished step and its random state, so the chain resumed from
the checkpoint is the uninterrupted chain.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import signal

import numpy as np
import pytest
from test_interrupt import CONFIG, _finish, _readable, _start, _wait_for, stopped_run
from test_interrupt import lens_folder as lens_folder  # the module's fixture, shared
from test_search import GaussianToy

from twinlens.job import run_fit
from twinlens.job.config import load_config
from twinlens.search import Emcee
from twinlens.search.checkpoint import CheckpointFiles
from twinlens.search.stopping import SearchStopped, stop_on_signals


def test_a_first_ctrl_c_stops_the_fit_with_its_checkpoint_and_the_rerun_resumes(
    lens_folder, tmp_path
):
    folder = tmp_path / "run"
    shutil.copytree(lens_folder, folder)
    out = folder / "out_numba"
    checkpoint = out / "nautilus.hdf5"

    # Ctrl-C as sampling starts: it finishes the batch in flight, writes the checkpoint, exit 3
    err = stopped_run(folder, signal.SIGINT, "nautilus: starting")
    assert "SIGINT received" in err and "stopped by SIGINT" in err, err
    assert CheckpointFiles(out, "nautilus", _readable).readable(checkpoint)
    held = int(re.search(r"stopped by SIGINT after (\d+) likelihood evaluations", err)[1])
    assert held > 0

    # the same command resumes from what the stopped run said its checkpoint holds
    second = _start(folder)
    lines = _wait_for(second, "nautilus: resuming from")
    assert int(lines[-1].split("resuming from ")[1].split()[0]) == held
    code, _, err = _finish(second)
    assert code == 0, err
    resumed = np.loadtxt(out / "samples.csv", delimiter=",", skiprows=1)

    # the same fit, never interrupted, in this process
    run_fit(load_config(folder / "fit.toml"), output=tmp_path / "ref", progress=False, plot=False)
    reference = np.loadtxt(tmp_path / "ref" / "samples.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(resumed, reference)
    a = json.loads((out / "result.json").read_text())
    b = json.loads((tmp_path / "ref" / "result.json").read_text())
    assert a["n_evaluations"] == b["n_evaluations"] and a["n_evaluations"] > held
    assert a["log_evidence"] == b["log_evidence"]


class SignalledToy(GaussianToy):
    """The toy objective that sends this process ``signum`` during its ``at``-th
    ``log_likelihood`` call, as a batch scheduler would while a step is in flight."""

    def __init__(self, at: int, signum: int = signal.SIGTERM):
        super().__init__()
        self.at, self.signum, self.invocations = at, signum, 0

    def log_likelihood(self, vectors):
        self.invocations += 1
        if self.invocations == self.at:
            os.kill(os.getpid(), self.signum)
        return super().log_likelihood(vectors)


def test_emcee_stopped_by_sigterm_resumes_to_the_uninterrupted_chain(tmp_path):
    emcee = pytest.importorskip("emcee")
    # commits only at the end and on a stop: the stop alone must write the checkpoint
    search = Emcee(n_walkers=8, n_steps=200, seed=4, checkpoint_every=math.inf)
    uninterrupted = search.run(GaussianToy())

    # emcee evaluates the starting ball in one call, then each step in two (its two halves of
    # the walkers): call 2 s is the first half of step s. SIGTERM there stops the chain after
    # step s, the step in flight, with nothing evaluated beyond it
    step = 60
    toy = SignalledToy(at=2 * step)
    with stop_on_signals(), pytest.raises(SearchStopped) as stopped:
        search.run(toy, output_dir=tmp_path)
    assert stopped.value.signal_name == "SIGTERM"
    assert stopped.value.n_evaluations == step * 8
    assert stopped.value.checkpoint == tmp_path / "emcee.hdf5"
    assert toy.invocations == 2 * step + 1
    assert toy.calls == 8 * (step + 1)  # the ball and `step` whole steps
    backend = emcee.backends.HDFBackend(str(tmp_path / "emcee.hdf5"), read_only=True)
    assert backend.iteration == step
    np.testing.assert_array_equal(backend.get_chain(), uninterrupted_chain(search, step))

    # the rerun continues from the checkpoint to the uninterrupted chain
    rest = GaussianToy()
    resumed = search.run(rest, output_dir=tmp_path)
    assert resumed.info["resumed_from_step"] == step and resumed.info["n_steps"] == 200
    assert rest.calls == 8 * (200 - step)  # no step evaluated twice, the ball not again
    np.testing.assert_array_equal(resumed.samples, uninterrupted.samples)
    np.testing.assert_array_equal(resumed.log_likelihood, uninterrupted.log_likelihood)
    np.testing.assert_array_equal(
        resumed.info["acceptance_fraction"], uninterrupted.info["acceptance_fraction"]
    )
    assert resumed.max_log_likelihood == uninterrupted.max_log_likelihood


def uninterrupted_chain(search: Emcee, steps: int) -> np.ndarray:
    """The first ``steps`` steps of ``search``'s chain, run without a stop, without burn-in
    (steps, walkers, d)."""
    short = dataclasses.replace(search, n_steps=steps, burn_in=0.0).run(GaussianToy())
    return short.samples.reshape(steps, search.n_walkers, -1)


# emcee through the command: committing only at the end and on a stop
EMCEE_CONFIG = CONFIG.replace(
    'name = "nautilus"\nn_live = 60\nn_eff = 400\nn_networks = 1\ncheckpoint_every = 1e9',
    'name = "emcee"\nn_walkers = 8\nn_steps = 300\ncheckpoint_every = 1e9',
)


@pytest.mark.slow  # two command-line runs and a fit in this process: about 12 s (the
# in-process test above stops emcee by a signal in the default run)
def test_the_command_stops_emcee_on_sigterm_and_resumes_to_the_uninterrupted_chain(
    lens_folder, tmp_path
):
    emcee = pytest.importorskip("emcee")
    assert EMCEE_CONFIG != CONFIG
    folder = tmp_path / "run"
    shutil.copytree(lens_folder, folder)
    (folder / "fit.toml").write_text(EMCEE_CONFIG)
    out = folder / "out_numba"

    err = stopped_run(folder, signal.SIGTERM, "emcee: step 60/300")
    assert "stopped by SIGTERM" in err
    held = int(re.search(r"stopped by SIGTERM after (\d+) likelihood evaluations", err)[1])
    stored = emcee.backends.HDFBackend(str(out / "emcee.hdf5"), read_only=True).iteration
    assert 60 <= stored < 300 and held == 8 * stored

    code, _, err = _finish(_start(folder, "--quiet"))
    assert code == 0, err
    resumed = json.loads((out / "result.json").read_text())
    assert resumed["search_settings"]["n_steps"] == 300

    run_fit(load_config(folder / "fit.toml"), output=tmp_path / "ref", progress=False, plot=False)
    reference = json.loads((tmp_path / "ref" / "result.json").read_text())
    np.testing.assert_array_equal(
        np.loadtxt(out / "samples.csv", delimiter=",", skiprows=1),
        np.loadtxt(tmp_path / "ref" / "samples.csv", delimiter=",", skiprows=1),
    )
    assert resumed["n_evaluations"] == reference["n_evaluations"] == 8 * 300
    assert resumed["parameters"] == reference["parameters"]

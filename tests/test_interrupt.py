"""A fit that an interrupt or an edited input cannot spoil.

The command is run for real in a subprocess and signalled as a person (Ctrl-C, SIGINT) or a
batch scheduler (SIGTERM) would: the first signal stops it after the batch in flight with its
checkpoint written and exit status 3; a second stops it at once without touching the
checkpoint; the rerun resumes and gives, bit for bit, the samples of an uninterrupted run. A
checkpoint of a differently defined run (a narrowed prior, other data) is refused, naming what
changed, until ``--restart``. Checkpoint commits are atomic: a failure in the middle of one
leaves the previous complete checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_job import SMALL, _small_dataset

from twinlens.job import run_fit
from twinlens.job.config import load_config
from twinlens.search import Objective
from twinlens.search.checkpoint import CheckpointFiles, CheckpointMismatch
from twinlens.search.stopping import EXIT_STOPPED

# commits only at the end and on a stop (a checkpoint that changes shows a commit); one
# network per bound, as training them is most of the time of so small a problem
CONFIG = SMALL.format(backend="numba").replace(
    "n_eff = 400", "n_eff = 400\nn_networks = 1\ncheckpoint_every = 1e9"
)


def _start(folder: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "twinlens", "fit", str(folder / "fit.toml"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for(process: subprocess.Popen, text: str, timeout: float = 600.0) -> list[str]:
    """Read the process's output until a line contains ``text``."""
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    process.kill()
    raise AssertionError(f"no line with {text!r}; output: {''.join(lines)}{process.stderr.read()}")


def _finish(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


def stopped_run(folder: Path, sig: int, when: str) -> str:
    """Start ``twinlens fit`` in ``folder``, send ``sig`` once its output says ``when``, and
    check that it stopped at a safe point (exit 3, no results); its standard error."""
    process = _start(folder)
    _wait_for(process, when)
    process.send_signal(sig)
    code, _, err = _finish(process)
    assert code == EXIT_STOPPED, err
    assert "run the same command again to resume" in err
    assert not (folder / "out_numba" / "summary.txt").exists()  # no results from a stop
    return err


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def lens_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lens")
    _small_dataset(folder)
    (folder / "fit.toml").write_text(CONFIG)
    return folder


def test_signals_stop_at_a_safe_point_and_the_rerun_is_the_uninterrupted_run(lens_folder, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(lens_folder, folder)
    out = folder / "out_numba"
    checkpoint = out / "nautilus.hdf5"

    # a batch scheduler's SIGTERM as sampling starts: a consistent checkpoint, exit 3
    err = stopped_run(folder, signal.SIGTERM, "nautilus: starting")
    assert "SIGTERM" in err
    assert CheckpointFiles(out, "nautilus", _readable).readable(checkpoint)
    kept = _digest(checkpoint)

    # resumed, then two signals at once (delivered together while the process is paused):
    # it stops at once (exit 128 + the second signal) and the checkpoint is not touched
    second = _start(folder)
    lines = _wait_for(second, "nautilus: resuming from")
    assert int(lines[-1].split("resuming from ")[1].split()[0]) > 0
    second.send_signal(signal.SIGSTOP)
    second.send_signal(signal.SIGTERM)
    second.send_signal(signal.SIGINT)
    second.send_signal(signal.SIGCONT)
    code, _, err = _finish(second)
    assert code in (128 + signal.SIGINT, 128 + signal.SIGTERM), err
    assert "stopping at once" in err
    assert _digest(checkpoint) == kept

    # a narrowed prior into the same folder while the run is unfinished: refused, naming it,
    # the checkpoint untouched (a *finished* fit of another definition is set aside and
    # fitted afresh instead: test_reruns)
    toml = (folder / "fit.toml").read_text()
    narrowed = toml.replace("uniform = [0.5, 1.5]", "uniform = [0.8, 1.0]")
    assert narrowed != toml
    narrowed = narrowed.replace("seed = 2", "seed = 2\nn_like_max = 200")
    (folder / "fit.toml").write_text(narrowed)
    code, _, err = _finish(_start(folder, "--quiet"))
    assert code == 2
    assert "prior of lenses[0].mass[0].einstein_radius" in err and "--restart" in err
    assert "UniformPrior(lower=0.5, upper=1.5) then, UniformPrior(lower=0.8, upper=1.0) now" in err
    assert "model" not in err.split("definition")[1]  # only the prior (and so the start) moved
    assert not (out / "summary.txt").exists() and _digest(checkpoint) == kept
    (folder / "fit.toml").write_text(toml)

    # the rerun finishes from the checkpoint
    code, _, err = _finish(_start(folder, "--quiet"))
    assert code == 0, err
    resumed = np.loadtxt(out / "samples.csv", delimiter=",", skiprows=1)

    # the same fit, never interrupted, in this process
    config = load_config(folder / "fit.toml")
    run_fit(config, output=tmp_path / "reference", progress=False, plot=False)
    reference = np.loadtxt(tmp_path / "reference" / "samples.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(resumed, reference)
    a = json.loads((out / "result.json").read_text())
    b = json.loads((tmp_path / "reference" / "result.json").read_text())
    assert a["n_evaluations"] == b["n_evaluations"]
    assert a["log_evidence"] == b["log_evidence"]

    # --restart discards the old run
    (folder / "fit.toml").write_text(narrowed)
    code, _, err = _finish(_start(folder, "--quiet", "--restart"))
    assert code == 0, err
    assert json.loads((out / "result.json").read_text())["n_evaluations"] == 200


def _readable(path: Path) -> bool:
    from twinlens.search.nautilus import _readable as nautilus_readable

    return nautilus_readable(path)


# -- the checkpoint files ----------------------------------------------------------------------


def _files(tmp_path: Path) -> CheckpointFiles:
    return CheckpointFiles(tmp_path, "toy", lambda p: p.exists() and p.read_bytes()[:2] == b"ok")


def test_a_commit_cut_short_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    files = _files(tmp_path)
    assert not files.prepare({"seed": 1})
    files.work.write_bytes(b"ok first")
    files.commit()
    files.work.write_bytes(b"ok second")
    files.commit()
    assert files.checkpoint.read_bytes() == b"ok second"
    assert files.backup.read_bytes() == b"ok first"

    # a kill at the final rename of the next commit: the checkpoint is still the last one
    real_replace = os.replace

    def killed(source, target):
        if Path(target) == files.checkpoint:
            raise KeyboardInterrupt
        real_replace(source, target)

    files.work.write_bytes(b"ok third, torn")
    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        files.commit()
    monkeypatch.undo()
    assert files.checkpoint.read_bytes() == b"ok second"
    # the work file, torn or not, is never resumed from: the checkpoint is
    files.work.write_bytes(b"torn")
    assert files.prepare({"seed": 1})
    assert files.work.read_bytes() == b"ok second"


def test_a_checkpoint_of_another_run_is_refused_naming_what_changed(tmp_path):
    files = _files(tmp_path)
    files.prepare({"seed": 1, "data": "aaa", "prior of x": "U(0, 1)"})
    files.work.write_bytes(b"ok")
    files.commit()
    with pytest.raises(CheckpointMismatch) as err:
        files.prepare({"seed": 1, "data": "bbb", "prior of x": "U(0, 2)"})
    message = str(err.value)
    assert "data: aaa then, bbb now" in message
    assert "prior of x: U(0, 1) then, U(0, 2) now" in message
    assert "seed" not in message and "--restart" in message
    assert files.checkpoint.exists()  # refusing deletes nothing
    assert not files.prepare({"seed": 1, "data": "bbb"}, restart=True)
    assert not files.checkpoint.exists()
    # a checkpoint without a record (an older twinlens) is not trusted either
    files.work.write_bytes(b"ok")
    files.commit()
    files.record.unlink()
    with pytest.raises(CheckpointMismatch, match="no record"):
        files.prepare({"seed": 1, "data": "bbb"})


# -- the objective's fingerprint ---------------------------------------------------------------


def test_the_fingerprint_names_each_part_and_is_the_same_in_every_process(lens_folder):
    config = load_config(lens_folder / "fit.toml")
    base = Objective.build(config.model, config.dataset, "numba").fingerprint()
    # rebuilt, on the other backend: the same run
    again = load_config(lens_folder / "fit.toml")
    assert Objective.build(again.model, again.dataset, "numpy").fingerprint() == base
    # another process (Python salts str hashes per process; the digest must not change)
    code = (
        "import json; from twinlens.job.config import load_config; "
        "from twinlens.search import Objective; "
        f"c = load_config({str(lens_folder / 'fit.toml')!r}); "
        "print(json.dumps(Objective.build(c.model, c.dataset, 'numpy').fingerprint()))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(other) == base

    def changed(edit) -> set[str]:
        import dataclasses

        c = load_config(lens_folder / "fit.toml")
        model, dataset = edit(c.model, c.dataset, dataclasses.replace)
        fingerprint = Objective.build(model, dataset, "numpy").fingerprint()
        return {k for k in base if fingerprint.get(k) != base[k]}

    def other_data(model, dataset, replace):
        data = np.array(dataset.data)
        data[3, 4] += 1e-12
        return model, replace(dataset, data=data)

    def other_noise(model, dataset, replace):
        return model, replace(dataset, noise_map=np.asarray(dataset.noise_map) * 1.001)

    def other_mask(model, dataset, replace):
        return model, dataset.with_grid(dataset.grid.circular_mask(1.0))

    def other_prior(model, dataset, replace):
        from twinlens.model import UniformPrior

        (path, _), *rest = model.priors
        return replace(model, priors=((path, UniformPrior(0.6, 1.5)), *rest)), dataset

    def other_start(model, dataset, replace):
        from twinlens.model.paths import set_paths

        return replace(model, tracer=set_paths(model.tracer, {model.paths[0]: 1.1})), dataset

    def other_fixed_value(model, dataset, replace):
        from twinlens.model.paths import set_paths

        tracer = set_paths(model.tracer, {"lenses[0].mass[0].ell_comps[0]": 0.11})
        return replace(model, tracer=tracer), dataset

    assert changed(other_start) == set()  # where a search starts does not define the run
    assert changed(other_fixed_value) == {"model"}
    assert changed(other_data) == {"data"}
    assert changed(other_noise) == {"noise map"}
    assert "mask and grid" in changed(other_mask)
    assert changed(other_prior) == {"prior of lenses[0].mass[0].einstein_radius"}


def test_point_images_are_part_of_the_fingerprint(lens_folder):
    # a checkpoint of a fit without the quasar's images must not resume one with them
    import dataclasses

    from twinlens.imaging.point_images import PointImages
    from twinlens.likelihood import ImagingLikelihood

    c = load_config(lens_folder / "fit.toml")
    plain = Objective.build(c.model, c.dataset, "numpy")
    paths = c.model.paths

    def with_points(points):
        # the example's PSF (1.5-pixel FWHM) is warned about when the images are rendered
        with pytest.warns(RuntimeWarning, match="undersampled"):
            like = ImagingLikelihood(c.dataset, c.model.tracer, paths, points)
        return dataclasses.replace(plain, likelihood=like).fingerprint()

    base = plain.fingerprint()
    seen = with_points(PointImages([(0.3, 0.1), (-0.2, 0.4)]))
    assert {k for k in seen if seen.get(k) != base.get(k)} == {"point images"}
    moved = with_points(PointImages([(0.3, 0.1), (-0.2, 0.41)]))
    linear = with_points(PointImages([(0.3, 0.1), (-0.2, 0.4)], shift="linear"))
    assert moved["point images"] != seen["point images"] != linear["point images"]

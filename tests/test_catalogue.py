"""Fitting a catalogue of lenses on Dask (``twinlens batch``).

A real ``LocalCluster`` of two worker processes fits three tiny lenses, one of them broken:
the broken one is ``failed`` with its reason while the others finish, the table agrees with
the lenses' own results, and a rerun fits nothing again. The command killed part-way, and a
worker killed mid-fit, still end with every lens fitted once. Catalogue mistakes name the lens
and the column before any work starts; SLURM and PBS job scripts carry what the ``[cluster]``
table asks for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_job import SMALL, _small_dataset

from twinlens.catalogue import (
    CatalogueError,
    ClusterError,
    jobqueue_cluster,
    load_catalogue,
    run_catalogue,
)

# the short fit's lens and model (test_job), as a template: no data files, a smaller search
TEMPLATE = (
    SMALL.format(backend="numba")
    .replace('output = "out_numba"\n', "")
    .replace('data = "data.fits"\nnoise_map = "noise_map.fits"\npsf = "psf.fits"\n', "")
    .replace("n_live = 60\nn_eff = 400", "n_live = 50\nn_eff = 200\nn_networks = 1")
)

CSV = """id,data,noise_map,psf,lens[0].mass[0].einstein_radius
a,lens/data.fits,lens/noise_map.fits,lens/psf.fits,
b,lens/data.fits,lens/noise_map.fits,lens/psf.fits,0.95
broken,lens/missing.fits,lens/noise_map.fits,lens/psf.fits,
"""


def _catalogue(folder: Path, csv: str = CSV, extra: str = "") -> Path:
    if not (folder / "lens").exists():
        (folder / "lens").mkdir(parents=True)
        _small_dataset(folder / "lens")
    (folder / "template.toml").write_text(TEMPLATE)
    (folder / "lenses.csv").write_text(csv)
    path = folder / "catalogue.toml"
    path.write_text(
        'template = "template.toml"\ncatalogue = "lenses.csv"\noutput = "out"\n' + extra
    )
    return path


def test_a_local_cluster_fits_the_catalogue_and_a_rerun_fits_nothing_again(tmp_path, capsys):
    catalogue = load_catalogue(_catalogue(tmp_path))
    table = run_catalogue(catalogue, workers=2, plot=False)
    rows = {str(r["id"]): r for r in table}
    assert [rows[i]["status"] for i in ("a", "b", "broken")] == ["done", "done", "failed"]
    assert "missing.fits" in rows["broken"]["error"] and Path(rows["broken"]["log"]).is_file()
    # the table is the lenses' own results
    for lens_id in ("a", "b"):
        record = json.loads((tmp_path / "out" / "lenses" / lens_id / "result.json").read_text())
        theta = record["parameters"]["lenses[0].mass[0].einstein_radius"]
        assert rows[lens_id]["lenses[0].mass[0].einstein_radius"] == theta["median"]
        assert rows[lens_id]["n_evaluations"] == record["n_evaluations"]
        assert abs(theta["median"] - 0.9) < 0.01  # the simulated lens's radius
    assert (tmp_path / "out" / "catalogue.csv").is_file()
    assert (tmp_path / "out" / "catalogue.parquet").is_file()
    out = capsys.readouterr().out
    assert "1 of 3 lenses failed" in out and "broken" in out

    # the rerun: finished lenses untouched, the failed one tried again (and failing again)
    stamps = {i: (tmp_path / "out/lenses" / i / "result.json").stat().st_mtime_ns for i in "ab"}
    again = run_catalogue(load_catalogue(tmp_path / "catalogue.toml"), workers=2, plot=False)
    assert [str(r["status"]) for r in again] == ["done", "done", "failed"]
    for i in "ab":
        assert (tmp_path / "out/lenses" / i / "result.json").stat().st_mtime_ns == stamps[i]
    assert "2 already done, 1 to fit" in capsys.readouterr().out


def _worker_pids(parent: int) -> list[int]:
    import psutil

    children = psutil.Process(parent).children(recursive=True)
    return [p.pid for p in children if "spawn_main" in " ".join(p.cmdline())]


@pytest.mark.slow  # three minutes: a cluster started twice, a fit resumed (tox -e slow)
def test_killed_worker_and_killed_command_still_fit_every_lens_once(tmp_path):
    csv = "id,data,noise_map,psf\n" + "".join(
        f"l{i},lens/data.fits,lens/noise_map.fits,lens/psf.fits\n" for i in range(3)
    )
    path = _catalogue(tmp_path, csv)
    command = [sys.executable, "-m", "twinlens", "batch", str(path), "--workers", "2"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    lenses = tmp_path / "out" / "lenses"
    # kill one worker process as soon as a fit is under way: its nanny restarts it and the
    # scheduler gives its lens to a worker again
    deadline = time.monotonic() + 300
    while not any(lenses.glob("*.partial/nautilus.work.hdf5")) and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = _worker_pids(process.pid)
    assert workers, "no worker processes found"
    os.kill(workers[0], signal.SIGKILL)
    # then stop the whole command once one lens has finished
    while not any((p / "result.json").exists() for p in lenses.glob("l?")):
        assert process.poll() is None or process.returncode == 0, process.stdout.read()
        if time.monotonic() > deadline:
            raise AssertionError("no lens finished")
        time.sleep(0.2)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    process.communicate(timeout=120)
    finished = {p.name: (p / "result.json").read_bytes() for p in lenses.glob("l?")}
    assert finished

    # the rerun fits what is left; what had finished is not fitted again
    rerun = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(finished)} already done" in rerun.stdout
    for name, record in finished.items():
        assert (lenses / name / "result.json").read_bytes() == record
    results = [json.loads((lenses / f"l{i}" / "result.json").read_text()) for i in range(3)]
    assert not list(lenses.glob("*.partial"))
    # the same data and seed: every lens's fit is the same, however it was interrupted
    assert len({r["n_evaluations"] for r in results}) == 1
    assert len({r["log_evidence"] for r in results}) == 1


@pytest.mark.parametrize(
    ("csv", "message"),
    [
        ("id,data,noise_map,psf,colour\na,d,n,p,1\n", "lens a, column colour"),
        ("id,data,noise_map,psf\na,d,n,p\na,d,n,p\n", "'a' appears twice"),
        ("id,data,noise_map,psf\na b,d,n,p\n", "lens id 'a b'"),
        (
            "id,data,noise_map,psf,lens[0].mass[0].theta\na,d,n,p,1.0\n",
            "lens a, column lens[0].mass[0].theta: lens[0].mass[0] (SIE) sets no parameter",
        ),
        (
            "id,data,noise_map,psf,lens[0].mass[3].einstein_radius\na,d,n,p,1.0\n",
            "the template has no lens[0].mass[3]",
        ),
        (
            'id,data,noise_map,psf,lens[0].mass[0].einstein_radius\na,d,n,p,"{uniform = [2, 1]}"\n',
            "lens a: lens[0].mass[0].einstein_radius",
        ),
        ("id,data,psf\na,d,p\n", "lens a: no noise_map"),
    ],
)
def test_catalogue_mistakes_name_the_lens_and_the_column(tmp_path, csv, message):
    (tmp_path / "lens").mkdir()  # no data: a mistake is found before any file is read
    with pytest.raises(CatalogueError) as err:
        load_catalogue(_catalogue(tmp_path, csv))
    assert message in str(err.value)


def test_job_scripts_carry_the_cluster_table(tmp_path):
    table = {
        "kind": "slurm",
        "cores": 4,
        "memory": "8GB",
        "walltime": "02:30:00",
        "queue": "short",
        "account": "lensing",
        "job_extra_directives": ["--constraint=avx2"],
    }
    with jobqueue_cluster(table) as cluster:  # builds the script; submits nothing
        script = cluster.job_script()
    for text in ("#SBATCH -p short", "#SBATCH -A lensing", "#SBATCH -t 02:30:00", "avx2"):
        assert text in script, script
    # one single-threaded worker process per core of the job (not one process running four
    # fits at once, each with numba on all four cores)
    assert "--nthreads 1 " in script and "--nworkers 4 " in script, script
    with jobqueue_cluster({**table, "kind": "pbs", "job_extra_directives": []}) as cluster:
        pbs = cluster.job_script()
    assert "#PBS -q short" in pbs and "#PBS -A lensing" in pbs and "walltime=02:30:00" in pbs
    with pytest.raises(ClusterError, match="needs memory"):
        jobqueue_cluster({"kind": "slurm", "cores": 4})
    with pytest.raises(ClusterError, match="processes = 8 is more than cores = 4"):
        jobqueue_cluster({**table, "processes": 8})
    with jobqueue_cluster({**table, "processes": 2}) as cluster:  # two workers of two threads
        script = cluster.job_script()
    assert "--nthreads 2 " in script and "--nworkers 2 " in script, script
    with pytest.raises(ClusterError, match="unknown entries nodes"):
        jobqueue_cluster({"kind": "slurm", "cores": 4, "memory": "1GB", "nodes": 2})


@pytest.mark.slow  # four cold compiles at once: a minute or two on 2 cores (tox -e slow)
def test_the_numba_cache_survives_four_processes_starting_at_once(tmp_path):
    # four processes compile the same kernels into one empty cache folder at once (as the
    # workers of a node do on a fresh machine); all succeed, agree, and a fifth reads them
    code = (
        "import numpy as np; from twinlens.mass import SIE; from twinlens.light import Sersic; "
        "xy = np.stack(np.meshgrid(np.linspace(-2, 2, 30), np.linspace(-2, 2, 30)), -1)"
        ".reshape(-1, 2); "
        "a = SIE((0.1, 0.0), (0.1, 0.05), 1.2).deflections(xy, backend='numba'); "
        "b = Sersic((0.0, 0.1), (0.0, 0.1), 0.3, 1.5, 1.0).image(xy, backend='numba'); "
        "print(repr(float(np.sum(a))), repr(float(np.sum(b))))"
    )
    env = {**os.environ, "TWINLENS_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    outputs = [r.communicate(timeout=900) for r in runs]
    assert all(r.returncode == 0 for r in runs), [o[1][-2000:] for o in outputs]
    assert len({o[0] for o in outputs}) == 1
    assert list((tmp_path / "cache").rglob("*.nbi")), "nothing was cached"
    later = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert later.returncode == 0 and later.stdout == outputs[0][0], later.stderr[-2000:]


def test_numba_threads_are_shared_out_and_set_in_the_task_thread():
    import threading

    import numba

    from twinlens.catalogue.runner import _numba_share
    from twinlens.catalogue.task import limit_numba_threads

    assert _numba_share({"kind": "local"}, 8, 2, 1) == 4
    assert _numba_share({"kind": "local"}, 2, 4, 1) == 1
    assert _numba_share({"kind": "slurm", "cores": 6}, 64, None, 2) == 1
    assert _numba_share({"kind": "tcp://host:8786"}, 8, None, 1) is None
    seen = []

    def task():  # a Dask task runs in an executor thread, not where the worker set up
        limit_numba_threads(1)
        seen.append(numba.get_num_threads())

    worker = threading.Thread(target=task)
    worker.start()
    worker.join()
    assert seen == [1]


def test_a_catalogue_lens_that_adapts_to_an_earlier_stage_is_refused(tmp_path):
    """A staged fit's first stage has its own output folder, outside the catalogue's: refused
    when the catalogue is read, before anything runs."""
    path = _catalogue(tmp_path, CSV.replace("broken,lens/missing.fits", "c,lens/data.fits"))
    source = TEMPLATE[TEMPLATE.index("[[source]]") :]
    (tmp_path / "stage1.toml").write_text("")  # only its presence is checked here
    staged = (
        '[[source]]\n[[source.light]]\ntype = "Pixelization"\n'
        'mesh = {type = "Rectangular", shape = [8, 8]}\n'
        'regularization = {type = "AdaptiveBrightness", coefficient = 1.0, '
        'adapt = "stage1.toml"}\n'
    )
    (tmp_path / "template.toml").write_text(TEMPLATE.replace(source, staged))
    with pytest.raises(CatalogueError) as err:
        load_catalogue(path)
    assert "lens a: source[0].light[0].regularization.adapt" in str(err.value)

"""One Dask worker per GPU (``[cluster] gpus = true``, ``twinlens batch --gpus``), without a GPU:
the pinning plugin given the device lists that dask-cuda and a batch job hand their workers,
the cluster asked of dask-cuda, and the errors for what cannot run."""

from __future__ import annotations

import os
import sys
import types

import pytest
from test_catalogue import _catalogue

from twinlens import cli
from twinlens.catalogue import (
    ClusterError,
    gpus,
    jobqueue_cluster,
    load_catalogue,
    run_catalogue,
    runner,
)
from twinlens.catalogue import cluster as cluster_module
from twinlens.catalogue.spec import LensTask

VISIBLE = "CUDA_VISIBLE_DEVICES"


class Loop:
    """A worker's event loop that records what is scheduled on it."""

    def __init__(self) -> None:
        self.scheduled: list = []

    def add_callback(self, callback, *args, **kwargs) -> None:
        self.scheduled.append((callback, kwargs))


def _worker(name: object) -> types.SimpleNamespace:
    worker = types.SimpleNamespace(name=name, loop=Loop())
    worker.close = lambda **kwargs: None
    return worker


def _pinned(monkeypatch, visible: str | None, name: object, per_job: int = 1) -> str:
    """What ``CUDA_VISIBLE_DEVICES`` holds after the plugin set up a worker called ``name``
    that started with ``visible`` (JAX not yet started there, as in a fresh worker)."""
    monkeypatch.setattr(gpus, "_jax_backend_started", lambda: False)
    if visible is None:
        monkeypatch.delenv(VISIBLE, raising=False)
    else:
        monkeypatch.setenv(VISIBLE, visible)
    worker = _worker(name)
    gpus.PinGPU(per_job).setup(worker)
    assert worker.twinlens_gpu == os.environ[VISIBLE] and not worker.loop.scheduled
    return os.environ[VISIBLE]


@pytest.mark.parametrize(
    "devices",
    [["0", "1", "2", "3"], ["GPU-6f2c95a0-aaaa", "GPU-dae76d0e-bbbb", "MIG-0c1d-cccc"]],
    ids=["indices", "uuids"],
)
def test_each_dask_cuda_worker_keeps_its_own_gpu_alone(monkeypatch, devices):
    # dask-cuda starts worker i with every GPU, rotated so that its own comes first
    # (LocalCUDACluster's documented CUDA_VISIBLE_DEVICES: "2,3,0,1" for the third of four)
    pins = []
    for i in range(len(devices)):
        rotated = ",".join(devices[i:] + devices[:i])
        pins.append(_pinned(monkeypatch, rotated, name=i))
    assert pins == devices  # one GPU each, every GPU used once
    # JAX sees what the CUDA driver shows it: one GPU, the worker's own, as its device 0
    assert all(gpus.visible_devices(p) == [d] for p, d in zip(pins, devices, strict=True))


def test_the_workers_of_a_batch_job_share_its_gpus_out(monkeypatch):
    # `dask worker --nworkers 4 --name SLURMCluster-3` names its workers SLURMCluster-3-0 to
    # -3, and each starts with the job's GPUs as the scheduler gave them
    names = [f"SLURMCluster-3-{k}" for k in range(4)]
    pins = [_pinned(monkeypatch, "4,5,6,7", name, per_job=4) for name in names]
    assert pins == ["4", "5", "6", "7"]
    # no list: every GPU of the node is visible, and worker k takes GPU k
    assert _pinned(monkeypatch, None, "PBSCluster-0-2", per_job=4) == "2"
    # a lone worker per job keeps the job's first GPU, whatever its job's number
    assert _pinned(monkeypatch, "3,1", "SLURMCluster-12", per_job=1) == "3"
    with pytest.raises(ValueError, match=r"sees only 4 GPUs .* \[cluster\].processes"):
        _pinned(monkeypatch, "4,5,6,7", "SLURMCluster-3-4", per_job=5)
    with pytest.raises(ValueError, match="does not end in -<k>"):
        _pinned(monkeypatch, "4,5", "worker", per_job=2)
    with pytest.raises(ValueError, match=r"PinGPU\.per_job must be a whole number >= 1"):
        gpus.PinGPU(0)


def test_a_worker_whose_jax_already_started_is_refused(monkeypatch):
    from jax_loaded import jax_or_skip

    jax_or_skip().devices()  # JAX's backend started here: the driver has read the variable
    monkeypatch.setenv(VISIBLE, "1,0")
    worker = _worker(1)
    with pytest.raises(RuntimeError, match="JAX started before its GPU was chosen"):
        gpus.PinGPU().setup(worker)
    assert os.environ[VISIBLE] == "1,0"  # left as it was
    # and closed, with its nanny: a worker that joined late would otherwise go on unpinned
    [(callback, options)] = worker.loop.scheduled
    assert callback is worker.close and options["nanny"] is True
    assert options["reason"].startswith("twinlens-pin-gpu: worker 1: JAX started")


def test_gpus_without_dask_cuda_name_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # an import of it now fails
    with pytest.raises(ClusterError, match="pip install dask-cuda"):
        cluster_module.start_client({"kind": "local", "gpus": True})


def test_a_local_gpu_cluster_is_dask_cudas_with_the_gpus_asked_for(monkeypatch):
    made = []
    fake = types.ModuleType("dask_cuda")
    fake.LocalCUDACluster = lambda **options: made.append(options) or "cluster"
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    assert cluster_module.cuda_cluster([0, "GPU-ab12"], 2, 1) == "cluster"
    assert cluster_module.cuda_cluster(True) == "cluster"
    assert [m["CUDA_VISIBLE_DEVICES"] for m in made] == ["0,GPU-ab12", None]
    assert [m["n_workers"] for m in made] == [2, None]  # None: one worker per GPU


@pytest.mark.parametrize(
    "table, message",
    [
        ({"gpus": "yes"}, r"\[cluster\].gpus = 'yes': expected true, false, or a list"),
        ({"gpus": [-1]}, r"\[cluster\].gpus = \[-1\]"),
        ({"gpus": []}, r"\[cluster\].gpus = \[\]"),
        ({"kind": "slurm", "gpus": [0]}, 'a list of GPUs is for kind = "local"'),
        ({"kind": "slurm", "resource_spec": "x"}, "resource_spec is PBS's -l line"),
    ],
)
def test_bad_gpu_settings_are_named(table, message):
    with pytest.raises(ClusterError, match=message):
        cluster_module.check_table(table)


def test_gpu_job_scripts_run_one_worker_per_gpu():
    table = {"kind": "pbs", "cores": 16, "memory": "64GB", "gpus": True}
    with pytest.raises(ClusterError, match="gpus = true needs processes"):
        jobqueue_cluster(table)
    spec = "select=1:ncpus=16:ngpus=4:mem=64GB"
    with jobqueue_cluster({**table, "processes": 4, "resource_spec": spec}) as cluster:
        script = cluster.job_script()
    assert f"#PBS -l {spec}" in script and "--nworkers 4 " in script, script


def test_the_runner_pins_workers_before_the_warm_up_and_refuses_cpu_backends(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "lens").mkdir()  # no data: nothing here reads it
    path = _catalogue(tmp_path)
    with pytest.raises(ClusterError, match="lens a fits on the numba backend"):
        run_catalogue(load_catalogue(path), gpus=True, progress=False)
    assert cli.main(["batch", str(path), "--gpus", "--quiet"]) == 2
    assert "--backend jax" in capsys.readouterr().err
    registered = []

    class Client:  # stops the run at its second plugin, the warm-up
        def register_plugin(self, plugin):
            registered.append(plugin)
            if len(registered) == 2:
                raise KeyboardInterrupt

        def close(self):
            pass

    monkeypatch.setattr(runner, "start_client", lambda *args: (Client(), None))
    with pytest.raises(KeyboardInterrupt):
        run_catalogue(load_catalogue(path, backend="jax"), gpus=True, progress=False)
    assert [type(p) for p in registered] == [gpus.PinGPU, runner.WarmUp]
    assert registered[0].per_job == 1
    slurm = {"kind": "slurm", "gpus": True, "processes": 4}
    task = LensTask("x", {"backend": "jax"}, ".")
    assert runner._gpu_pin(slurm, None, [task]).per_job == 4
    assert runner._gpu_pin({"kind": "local"}, None, [task]) is None


def test_a_real_worker_process_is_pinned_before_its_tasks_run():
    from distributed import Client, LocalCluster

    # one worker process that starts as dask-cuda starts the second of three: "1,2,0"
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            env={VISIBLE: "1,2,0"},
        ) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(gpus.PinGPU())
        seen = client.run(lambda: (os.environ[VISIBLE], "jax" in sys.modules))
        assert list(seen.values()) == [("1", False)]  # its own GPU alone, JAX not yet loaded
        assert client.submit(lambda: os.environ[VISIBLE]).result() == "1"

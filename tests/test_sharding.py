"""A JAX batch on several local devices: each chunk's rows split among them
(:mod:`twinlens.likelihood.sharding`), with the values of one device.

JAX fixes its device count when it starts, so each case runs in a fresh interpreter: one with
two CPU devices forced (``--xla_force_host_platform_device_count=2``), one with JAX's single
CPU device. Both evaluate the same imaging and joint likelihoods; a spy on the programs'
outputs records the devices their rows were computed on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")

FORCE = "--xla_force_host_platform_device_count"

# a 24 x 24 imaging likelihood simulated with numpy (no numba loop to compile), and the same
# lens with a point source whose images are fitted beside the imaging
PROGRAM = """
import json, os, sys
import numpy as np
from twinlens.backend import jax_runtime
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import LinearSersic, Sersic
from twinlens.likelihood import batched
from twinlens.likelihood.batched import ImagingLikelihood
from twinlens.likelihood.joint import JointLikelihood
from twinlens.likelihood.point_source import PointSource, PointSourceData, PointSourceLikelihood
from twinlens.mass import SIE, ExternalShear

jax = jax_runtime.load()
lens = Galaxy(mass=(SIE((0.0, 0.0), (0.1, 0.0), 0.8), ExternalShear(0.02, -0.01)))
truth = Tracer(lens, Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), 0.2, 1.0, 1.0)))
grid, psf = Grid2D.uniform(24, 0.1, 2), PSF.gaussian(0.15, 0.1, 5)
data = simulate(truth, grid, psf, noise_sigma=0.05, seed=1, backend="numpy")
model = Tracer(lens, Galaxy(light=LinearSersic((0.05, 0.0), (0.0, 0.1), 0.2, 1.0)))
free = ("lenses[0].mass[0].einstein_radius", "lenses[0].mass[0].ell_comps[0]",
        "sources[0].light[0].effective_radius")
imaging = ImagingLikelihood(data, model, free)
images = np.array([[0.85, 0.05], [-0.75, -0.05]])
points = PointSourceLikelihood(PointSourceData(images, 0.01), "source")
joint = JointLikelihood(data, model, PointSource((0.05, 0.0)), points,
                        (*free, "point_source.centre[0]"))

placements = []
run_jax = batched.run_jax

def spy(program, *args, n=None):
    out = program(*args)
    shards = sorted((s.device.id, s.data.shape[0]) for s in out.addressable_shards)
    placements.append({"devices": len(out.sharding.device_set), "shards": shards,
                       "one_device_program": program is batched._jax_batch()})
    return run_jax(lambda *_: out, *args, n=n)

batched.run_jax = spy
rng = np.random.default_rng(3)
vectors = imaging.reference + rng.normal(scale=0.02, size=(5, 3))
vectors[1, 0] = -0.3  # a negative Einstein radius: -inf, on whichever device
joint_vectors = np.column_stack([vectors, 0.05 + rng.normal(scale=0.01, size=5)])
results = {
    "imaging": imaging.batch(vectors, "jax", chunk_size=4),  # chunks of 4 and 1
    "odd": imaging.batch(vectors[:3], "jax", chunk_size=3),  # 3 rows: padded on 2 devices
}
os.environ["TWINLENS_VMAP_WIDTH"] = "64"  # an accelerator's programs: vmapped, not looped
results["wide"] = imaging.batch(vectors, "jax", chunk_size=4)
results["joint"] = joint.batch(joint_vectors, "jax")  # one chunk of 64
np.savez(sys.argv[1], **results)
print(json.dumps({"devices": len(jax.local_devices()), "placements": placements}))
"""


def _run(tmp_path, devices: int) -> tuple[dict, dict]:
    """The program's results and its record, in a process with ``devices`` CPU devices."""
    flags = re.sub(rf"{FORCE}=\S+", "", os.environ.get("XLA_FLAGS", "")).split()
    if devices > 1:
        flags.append(f"{FORCE}={devices}")  # read when JAX starts its CPU backend
    env = {**os.environ, "XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu"}
    out = tmp_path / f"devices_{devices}.npz"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    with np.load(out) as results:
        return dict(results), record


def test_a_batch_sharded_over_two_devices_equals_one_device(tmp_path):
    one, one_record = _run(tmp_path, 1)
    two, two_record = _run(tmp_path, 2)
    assert (one_record["devices"], two_record["devices"]) == (1, 2)
    # one device: the one-device program, unchanged, as before sharding existed
    assert all(p["devices"] == 1 and p["one_device_program"] for p in one_record["placements"])
    # two devices: every chunk's rows split evenly over both, padded to an even count
    shards = [p["shards"] for p in two_record["placements"]]
    halves = [[0, 2], [1, 2]]
    assert shards == [
        halves,  # the first chunk of 4
        halves,  # the last, 1 vector padded to the chunk's 4
        halves,  # a chunk of 3, padded to 4
        halves,  # vmapped: the first chunk of 4
        halves,  # vmapped: the last
        [[0, 32], [1, 32]],  # the joint likelihood's chunk of 64
    ], shards
    assert not any(p["one_device_program"] for p in two_record["placements"])
    for name in ("imaging", "odd", "wide", "joint"):
        # 1e-12: XLA compiles a device's share of a chunk (2 rows) apart from one device's
        # whole chunk (4), and may order a sum differently, as for two chunk sizes
        # (test_batch.py); measured: the same bits, or 3e-13 apart
        np.testing.assert_allclose(two[name], one[name], rtol=1e-12, atol=0, err_msg=name)
    assert one["imaging"][1] == -np.inf and np.isfinite(np.delete(one["imaging"], 1)).all()
    assert one["joint"][1] == -np.inf and np.isfinite(np.delete(one["joint"], 1)).all()
    # chunks of 3 and of 4 are two programs: equal to rounding
    np.testing.assert_allclose(one["odd"], one["imaging"][:3], rtol=1e-13)

"""The twinlens command: validate and info."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from twinlens.cli import main
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.registry import Kernel, register, unregister


def _double(x):
    return 2.0 * x


@pytest.mark.slow  # every kernel on every backend, cold: minutes; test_registry_agreement
def test_validate_passes_and_reports_every_kernel_and_pair(capsys):  # covers the agreement
    assert main(["validate", "--points", "64"]) == 0
    table = capsys.readouterr().out
    for kernel in ("geometry.to_profile_frame", "ellipticity.axis_ratio_from_ellipticity"):
        assert kernel in table
    for pair in ("numba vs numpy", "jax vs numpy", "numba vs jax"):
        assert pair in table
    assert "0 failed" in table


def test_validate_json(capsys):
    # two small families (every kernel on every backend is the slow test above, and
    # test_registry_agreement): the JSON report, not the agreement, is what is checked here
    families = ["--kernel", "sheet", "--kernel", "shear", "--jobs", "1"]
    assert main(["validate", "--json", "--points", "32", "--backend", "numba", *families]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True
    assert {r["backends"] for r in report["rows"]} == {"numba vs numpy"}
    assert all(r["max_rel"] <= r["rtol"] for r in report["rows"])


def test_validate_exits_non_zero_on_a_disagreeing_kernel(capsys):
    broken = Kernel(
        name="test.broken_jax",
        point=_double,
        inputs=(Arg("x", Domain(-1.0, 1.0, specials=(0.5,))),),
        params=(),
        outputs=("y",),
        impls={"jax": lambda x: (2.0 * x + 1e-6,)},
    )
    register(broken)
    try:
        # the broken kernel among sound ones: only it fails, and the exit status says so
        kernels = ["--kernel", "test.broken_jax", "--kernel", "sheet", "--kernel", "shear"]
        assert main(["validate", "--points", "16", "--json", *kernels]) == 1
        rows = json.loads(capsys.readouterr().out)["rows"]
        bad = [r for r in rows if not r["passed"]]
        assert {r["kernel"] for r in bad} == {"test.broken_jax"}
        assert {r["kernel"] for r in rows} > {"test.broken_jax", "sheet.convergence"}
        assert {r["backends"] for r in bad} == {"jax vs numpy", "numba vs jax"}
    finally:
        unregister(broken.name)


def test_python_dash_m_and_info():
    out = subprocess.run(
        [sys.executable, "-m", "twinlens", "info", "--json"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["backends"]["numba"]["available"] is True
    assert info["backends"]["jax"]["x64"] is True
    assert info["backends"]["numba"]["threads"] >= 1
    assert np.all(
        [d.startswith(("cpu", "gpu", "cuda")) for d in info["backends"]["jax"]["devices"]]
    )

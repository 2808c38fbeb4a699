"""``twinlens debug-source``: the generated numba code a reader can see is the code that runs.

For a kernel, the printed module is byte for byte the file the kernel's numba loop was
imported from (the generated folder names each file by a hash of its source); for a fit
configuration, the printed fused loop is the file the model's image ran, and its parameters
carry the profiles' field names.
"""

from __future__ import annotations

import hashlib

import numpy as np
from test_job import SMALL, _small_dataset

from twinlens import cli, memo
from twinlens.backend import numba_runtime
from twinlens.job.config import load_config
from twinlens.kernels import isothermal


def _generated(source: str) -> list:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    return list(numba_runtime.generated_dir().glob(f"*_{digest}.py"))


def test_a_kernel_source_is_the_file_its_loop_runs(capsys):
    kernel = isothermal.DEFLECTIONS_ELLIPTICAL
    kernel(
        np.array([0.3, -0.2]), np.array([0.1, 0.4]), 0.0, 0.0, 0.7, 0.3, 1.0, 0.0, backend="numba"
    )
    assert cli.main(["debug-source", kernel.name]) == 0
    printed = capsys.readouterr().out
    (path,) = _generated(printed[:-1])  # print's own newline off
    assert path.read_text() == printed[:-1]
    assert "einstein_radius" in printed and "def loop(" in printed


def test_a_configuration_prints_its_fused_loop_with_field_names(tmp_path, capsys):
    _small_dataset(tmp_path)
    (tmp_path / "fit.toml").write_text(SMALL.format(backend="numba"))
    assert cli.main(["debug-source", "--config", str(tmp_path / "fit.toml")]) == 0
    printed = capsys.readouterr().out
    assert "k0_einstein_radius" in printed and "def block(" in printed
    assert "p0_" not in printed
    # the printed loop is the one the model's image ran
    config = load_config(tmp_path / "fit.toml")
    with memo.disabled():
        config.model.instance(config.model.start).image(np.zeros((3, 2)), backend="numba")
    (path,) = _generated(printed[:-1])
    assert path.read_text() == printed[:-1]


def test_mistakes_are_one_line_with_status_2(capsys):
    assert cli.main(["debug-source", "no.such_kernel"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no kernel named 'no.such_kernel'" in err
    assert cli.main(["debug-source"]) == 2
    assert "give a kernel name" in capsys.readouterr().err

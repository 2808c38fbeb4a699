"""Errors stay errors: a programming error inside a likelihood is raised, not scored as
``-inf``; messages show a numpy scalar as the number it holds; a bad environment variable is
one line on the command line, with exit status 2."""

import numpy as np
import pytest

from twinlens import Galaxy, Tracer, cli, memo
from twinlens.backend import jax_runtime, numba_runtime
from twinlens.environment import EnvironmentVariableError
from twinlens.likelihood import joint as joint_module
from twinlens.likelihood.batched import vmap_width
from twinlens.likelihood.joint import JointLikelihood
from twinlens.likelihood.point_source import (
    PointSource,
    PointSourceData,
    PointSourceLikelihood,
)
from twinlens.mass import SIE, SIS, ExternalShear
from twinlens.messages import shown
from twinlens.model.priors import UniformPrior
from twinlens.search import Nautilus

# -- 1. the joint likelihood: out of range is -inf, a bug raises ---------------------------------

THETA_E, BETA = 1.1, 0.3


def _joint():
    """A point source behind a singular isothermal sphere (images at BETA +- THETA_E on the
    x axis), its Einstein radius and time-delay distance free."""
    lens = Tracer(Galaxy(mass=SIS((0.0, 0.0), THETA_E)))
    images = np.array([[BETA + THETA_E, 0.0], [BETA - THETA_E, 0.0]])
    likelihood = PointSourceLikelihood(PointSourceData(images, 0.01), "source")
    free = ("lenses[0].mass[0].einstein_radius", "point_source.time_delay_distance")
    return JointLikelihood(None, lens, PointSource((BETA, 0.0)), likelihood, free)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_joint_likelihood_out_of_range_vectors_give_minus_inf(backend):
    joint = _joint()
    vectors = np.array(
        [
            [THETA_E, 3000.0],  # in range
            [-THETA_E, 3000.0],  # negative Einstein radius
            [THETA_E, -5.0],  # negative time-delay distance
            [np.nan, 3000.0],
        ]
    )
    out = joint.batch(vectors, backend)
    assert np.isfinite(out[0])
    assert np.all(out[1:] == -np.inf)


@pytest.mark.parametrize("error", [TypeError("a bug"), ValueError("a bug, no range check")])
def test_joint_likelihood_raises_an_error_in_its_evaluation(monkeypatch, error):
    joint = _joint()
    real = joint_module.set_paths

    def broken(obj, values, check_paths=True):
        if isinstance(obj, PointSource):
            raise error
        return real(obj, values, check_paths)

    monkeypatch.setattr(joint_module, "set_paths", broken)
    with pytest.raises(type(error), match="a bug"):
        joint.batch(np.array([[THETA_E, 3000.0]]), "numba")


# -- 2. numbers in messages ----------------------------------------------------------------------


def test_shown_writes_numpy_values_as_python_ones():
    assert shown(np.float64(-0.05)) == repr(-0.05)
    assert shown(np.int64(3)) == "3"
    assert shown(np.True_) == "True"
    assert shown((np.float64(0.5), np.int32(2))) == repr((0.5, 2))
    assert shown(np.array([1.5, -2.0])) == repr([1.5, -2.0])
    assert shown("text") == repr("text")
    assert "np." not in shown(np.arange(1000.0))


@pytest.mark.parametrize(
    ("build", "value"),
    [
        (lambda: SIE(einstein_radius=np.float64(-0.05)), "-0.05"),
        (lambda: SIE(einstein_radius=np.float32(-0.05)), "-0.05"),
        (lambda: SIE(einstein_radius=np.array(-0.05)), "-0.05"),
        (lambda: SIE(centre=np.array([0.0, 0.0])), "[0.0, 0.0]"),
        (lambda: ExternalShear.from_magnitude_angle(np.float64(-0.05), 0.0), "-0.05"),
        (lambda: UniformPrior(lower=np.float32(np.inf)), "inf"),
        (lambda: UniformPrior(lower=np.array(np.nan)), "nan"),
        (lambda: Nautilus(f_live=np.float64(-0.05)), "-0.05"),
        (lambda: Nautilus(n_live=np.int64(-3)), "-3"),
        (lambda: Nautilus(discard_exploration=np.int64(1)), "1"),
    ],
    ids=[
        "SIE-float64",
        "SIE-float32",
        "SIE-0d-array",
        "SIE-centre-array",
        "ExternalShear-classmethod",
        "UniformPrior-float32",
        "UniformPrior-0d-array",
        "Nautilus-float",
        "Nautilus-int",
        "Nautilus-bool",
    ],
)
def test_messages_show_numpy_values_as_numbers(build, value):
    with pytest.raises(ValueError) as info:
        build()
    message = str(info.value)
    assert f"got {value}" in message
    assert "np." not in message and "array(" not in message


# -- 3. environment variables ----------------------------------------------------------------------


def _run_cli(argv, capsys):
    status = cli.main(argv)
    err = capsys.readouterr().err
    return status, err


def test_bad_backend_variable_is_one_line_with_status_2(monkeypatch, capsys):
    monkeypatch.setenv("TWINLENS_BACKEND", "cuda")
    status, err = _run_cli(["info"], capsys)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert "TWINLENS_BACKEND" in lines[0] and "'cuda'" in lines[0]
    assert "numba, jax, numpy" in lines[0]


def test_bad_numba_cache_switch_is_one_line_with_status_2(monkeypatch, capsys):
    monkeypatch.delenv("TWINLENS_BACKEND", raising=False)
    monkeypatch.setenv("TWINLENS_NUMBA_CACHE", "maybe")
    status, err = _run_cli(["info"], capsys)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert "TWINLENS_NUMBA_CACHE" in lines[0] and "'maybe'" in lines[0]
    assert "0" in lines[0] and "1" in lines[0]


@pytest.mark.parametrize(
    ("name", "bad", "read", "allowed"),
    [
        ("TWINLENS_JAX_X64", "flase", jax_runtime.x64_requested, "false"),
        ("TWINLENS_JAX_CACHE_MAX_MB", "lots", jax_runtime.cache_cap_bytes, ">= 0"),
        ("TWINLENS_MEMO", "maybe", memo.enabled, "off"),
        ("TWINLENS_MEMO_MAX_MB", "-1", memo.max_bytes, ">= 0"),
        ("TWINLENS_VMAP_WIDTH", "wide", vmap_width, ">= 1"),
        ("TWINLENS_MALLOC", "sytem", numba_runtime.keep_freed_memory, "system"),
        ("TWINLENS_NUMBA_CACHE", "2", numba_runtime.cache_enabled, "true"),
    ],
)
def test_every_variable_names_itself_its_value_and_what_is_allowed(
    monkeypatch, name, bad, read, allowed
):
    monkeypatch.setenv(name, bad)
    with pytest.raises(EnvironmentVariableError) as info:
        read()
    message = str(info.value)
    assert name in message and repr(bad) in message and allowed in message
    assert "\n" not in message


# -- a failed export fails the fit, after everything else is written --------------------------


def _small_fit(tmp_path):
    from test_job import SMALL, _small_dataset

    _small_dataset(tmp_path)
    quick = SMALL.replace("n_live = 60\nn_eff = 400", "n_live = 40\nn_eff = 100\nn_networks = 1")
    (tmp_path / "fit.toml").write_text(quick.format(backend="numba"))
    return tmp_path / "fit.toml"


def test_a_failed_coolest_export_fails_the_fit_after_every_other_file(tmp_path, capsys):
    import json

    from twinlens import cli, export

    config = _small_fit(tmp_path)

    def broken(*args, **kwargs):
        raise TypeError("a bug in the export")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(export, "to_coolest", broken)
        code = cli.main(["fit", str(config), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "COOLEST export failed" in err and "TypeError: a bug in the export" in err
    out = tmp_path / "out_numba"
    record = json.loads((out / "result.json").read_text())
    assert record["coolest"] == "TypeError: a bug in the export"
    assert {"samples.csv", "summary.txt", "model.fits", "fit.png"} <= set(record["files"])
    assert not (out / "coolest.json").exists()


def test_a_model_coolest_cannot_describe_is_noted_not_failed(tmp_path, capsys):
    import json

    from twinlens import cli, export

    config = _small_fit(tmp_path)

    def undescribable(*args, **kwargs):
        raise export.NotDescribable("lenses[0].mass[0] is a GNFW")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(export, "to_coolest", undescribable)
        assert cli.main(["fit", str(config), "--quiet"]) == 0
    record = json.loads((tmp_path / "out_numba" / "result.json").read_text())
    assert record["coolest"] == "not written: lenses[0].mass[0] is a GNFW"


def test_an_unreadable_checkpoint_is_one_line_with_status_2(tmp_path, capsys):
    from twinlens import cli

    config = _small_fit(tmp_path)
    (tmp_path / "out_numba").mkdir()
    (tmp_path / "out_numba" / "nautilus.hdf5").write_bytes(b"torn by a damaged disk")
    assert cli.main(["fit", str(config), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unreadable and has no backup" in err
    assert "--restart" in err

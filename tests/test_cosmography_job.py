"""``[cosmography]`` and ``[kinematics]`` in a fit configuration: the tdcosmo example's files,
what they define, the mistakes they name, and a rerun after the dispersion changed.

The slow test fits the example with and without the kinematics: ``H0`` is recovered, and the
dispersion narrows it (the mass-sheet degeneracy broken)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from twinlens.job import example_tdcosmo as tdc
from twinlens.job.config import ConfigError, load_config
from twinlens.search.checkpoint import describe_changes


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("tdcosmo")
    tdc.write_tdcosmo_example(path, search={"name": "nautilus", "n_live": 50})
    return path


def _edited(folder, tmp_path, old: str, new: str, name: str = "fit.toml"):
    text = (folder / name).read_text()
    assert re.search(old, text, flags=re.M), old
    path = tmp_path / "edited.toml"
    for f in ("data.fits", "noise_map.fits", "psf.fits"):
        (tmp_path / f).write_bytes((folder / f).read_bytes())
    path.write_text(re.sub(old, new, text, flags=re.M))
    return path


def test_example_defines_the_cosmography(folder) -> None:
    config = load_config(folder / "fit.toml")
    model = config.model
    for path in ("cosmography.h0", "cosmography.lambda_int", "kinematics.r_ani"):
        assert path in model.paths
    assert "point_source.time_delay_distance" not in model.paths
    assert model.cosmography.omega_m == 0.3 and model.cosmography.z_lens == 0.5
    objective = config.objective("numba")
    truth = np.array([tdc.TDCOSMO_TRUTH[p] for p in model.paths])
    scaled = truth.copy()  # the mass sheet: the delays cannot tell, the dispersion can
    for path in ("cosmography.h0", "cosmography.lambda_int"):
        scaled[model.paths.index(path)] *= 1.3
    with_kin = objective.log_likelihood(np.stack([truth, scaled]))
    assert with_kin[0] > with_kin[1] + 5
    blind = load_config(folder / "without_kinematics.toml")
    assert "kinematics.r_ani" not in blind.model.paths
    keep = [model.paths.index(p) for p in blind.model.paths]
    without = blind.objective("numba").log_likelihood(np.stack([truth[keep], scaled[keep]]))
    assert without[1] == pytest.approx(without[0], abs=1e-6)


def test_the_dispersion_is_part_of_the_fingerprint(folder, tmp_path) -> None:
    before = load_config(folder / "fit.toml").objective("numba").fingerprint()
    edited = _edited(folder, tmp_path, r"^sigma = [\d.]+", "sigma = 240.0")
    after = load_config(edited).objective("numba").fingerprint()
    changed = describe_changes(before, after)
    assert "kinematics" in changed, changed


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (r"^\[cosmography\].*$", "[cosmographie]", "unknown sections cosmographie"),
        (r"^h0 = .*$", "", r"\[cosmography\]\.h0 is missing"),
        (r"^z_lens = .*\nz_source = .*$", "", "needs the redshifts"),
        (r"^lambda_int = .*$", "lambda_int = -1.0", "lambda_int must be"),
        (r"^aperture = .*$", 'aperture = {type = "slot"}', r"aperture\[0\]"),
        (r"^sigma_error = .*$", "covariance = [[4.0]]\nsigma_error = 3.0", "one of them"),
        (r"^light = .*$", 'light = {type = "Sersic"}', "Sersic takes"),
        (r"^anisotropy = .*$", 'anisotropy = {type = "Osipkov"}', "OsipkovMerritt"),
        (r"^sigma = .*$", "sigma = -5.0", "sigma must be > 0"),
        (r"^delays = .*\ndelay_sigma = .*$", "", "with delays"),
        (r"^z_source = 2.0$", "z_source = 2.0\ntime_delay_distance = 5000.0", "remove it"),
    ],
)
def test_mistakes_are_named(folder, tmp_path, old: str, new: str, message: str) -> None:
    path = _edited(folder, tmp_path, old, new)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_kinematics_needs_cosmography(folder, tmp_path) -> None:
    path = _edited(folder, tmp_path, r"^\[cosmography\](.|\n)*?(?=^\[kinematics\])", "")
    with pytest.raises(ConfigError, match=r"\[kinematics\] needs \[cosmography\]"):
        load_config(path)


@pytest.mark.slow
def test_tdcosmo_example_breaks_the_mass_sheet_degeneracy(tmp_path) -> None:
    from twinlens import cli

    out = tmp_path / "ex"
    args = ["fit", "--example", "tdcosmo", "--quick", "--output", str(out), "--quiet"]
    assert cli.main(args) == 0
    assert cli.main(["fit", str(out / "without_kinematics.toml"), "--quiet"]) == 0
    with_kin = json.loads((out / "fit_output" / "result.json").read_text())
    without = json.loads((out / "fit_output_without_kinematics" / "result.json").read_text())
    h0, h0_blind = with_kin["derived"]["h0"], without["derived"]["h0"]
    width = h0["upper_68"] - h0["lower_68"]
    assert abs(h0["median"] - tdc.H0_TRUE) < width * 1.5, h0  # inside about 3 sigma
    assert h0_blind["upper_68"] - h0_blind["lower_68"] > 2.0 * width, (h0, h0_blind)
    record = with_kin["derived"]["velocity_dispersion"][0]
    assert abs(record["predicted"]["median"] - record["measured"]) < 2.0 * record["error"]
    summary = (out / "fit_output" / "summary.txt").read_text()
    assert "velocity dispersion 0: measured" in summary and "H0 = " in summary
    for name in ("kinematics.png", "point_source.png", "corner.png"):
        assert (out / "fit_output" / name).stat().st_size > 10_000


def test_kappa_ext_from_a_file_of_samples(folder, tmp_path) -> None:
    rng = np.random.default_rng(3)
    np.savetxt(tmp_path / "kappa_ext.txt", rng.normal(0.02, 0.03, 1000))
    path = _edited(folder, tmp_path, r"^kappa_ext = .*$", 'kappa_ext = {samples = "kappa_ext.txt"}')
    config = load_config(path)
    prior = dict(config.model.priors)["cosmography.kappa_ext"]
    assert prior.median == pytest.approx(0.02, abs=0.005)
    fingerprint = config.objective("numba").fingerprint()
    assert "SampledPrior" in fingerprint["prior of cosmography.kappa_ext"]
    np.savetxt(tmp_path / "kappa_ext.txt", rng.normal(0.05, 0.03, 1000))
    again = load_config(path).objective("numba").fingerprint()  # other samples: a new fit
    assert describe_changes(fingerprint, again).count("kappa_ext") >= 1
    bad = _edited(folder, tmp_path, r"^kappa_ext = .*$", 'kappa_ext = {samples = "none.txt"}')
    with pytest.raises(ConfigError, match=r"kappa_ext\.samples: cannot read"):
        load_config(bad)


@pytest.mark.slow
def test_the_dispersion_replaces_the_quasar_examples_slope_prior(tmp_path) -> None:
    """``--example quasar`` fits positions and delays with a slope prior "from elsewhere";
    its ``with_kinematics.toml`` frees the slope and adds the dispersion: H0 and the slope are
    recovered."""
    from twinlens import cli

    out = tmp_path / "ex"
    args = ["fit", "--example", "quasar", "--quick", "--output", str(out), "--quiet"]
    assert cli.main(args) == 0
    assert cli.main(["fit", str(out / "with_kinematics.toml"), "--quiet"]) == 0
    record = json.loads((out / "fit_output_with_kinematics" / "result.json").read_text())
    h0 = record["derived"]["h0"]
    assert abs(h0["median"] - tdc.H0_TRUE) < 1.5 * (h0["upper_68"] - h0["lower_68"]), h0
    slope = record["parameters"]["lenses[0].mass[0].slope"]
    width = slope["upper_68"] - slope["lower_68"]
    assert abs(slope["median"] - tdc.TDCOSMO_TRUTH["lenses[0].mass[0].slope"]) < 1.5 * width
    assert width < 0.7 * 0.35  # narrower than the uniform prior's [1.7, 2.4] 68% span

"""Rerunning after a change: nothing stale kept silently, nothing of the user's overwritten.

A finished fit's ``result.json`` holds the fingerprint of what defined it; a rerun whose
definition changed sets the old result aside and fits afresh (``twinlens fit``), or refits
exactly the changed lenses of a catalogue (``twinlens batch``; ``--keep-stale`` keeps them,
marked ``stale``). The built-in examples keep a user's edited configuration and never simulate
over existing data.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest
from astropy.io import fits
from test_job import SMALL, _small_dataset

from twinlens import cli
from twinlens.job import run_fit
from twinlens.job.config import load_config, parse_config
from twinlens.job.example_folder import ExampleFolderError, place_example
from twinlens.job.example_table import prepare_example
from twinlens.job.freshness import fingerprint_of, staleness

EINSTEIN = "lenses[0].mass[0].einstein_radius"
QUICK = SMALL.replace("n_live = 60\nn_eff = 400", "n_live = 40\nn_eff = 100\nn_networks = 1")


def _config(folder: Path, text: str = QUICK) -> Path:
    (folder / "fit.toml").write_text(text.format(backend="numba"))
    return folder / "fit.toml"


def test_a_rerun_after_a_prior_change_sets_the_finished_fit_aside_and_refits(tmp_path, capsys):
    _small_dataset(tmp_path)
    run_fit(load_config(_config(tmp_path)), progress=False, plot=False)
    out = tmp_path / "out_numba"
    first = (out / "result.json").read_text()
    assert json.loads(first)["fingerprint"][f"prior of {EINSTEIN}"].startswith("Uniform")

    # the same definition: the finished fit is not set aside
    run_fit(load_config(_config(tmp_path)), progress=False, plot=False)
    assert not list(tmp_path.glob("out_numba.stale-*"))
    first = (out / "result.json").read_text()  # rewritten: its wall time is this run's
    capsys.readouterr()

    edited = QUICK.replace("uniform = [0.5, 1.5]", "uniform = [0.6, 1.5]")
    run_fit(load_config(_config(tmp_path, edited)), progress=False, plot=False)
    said = capsys.readouterr().out
    assert f"prior of {EINSTEIN}" in said and "fitting afresh" in said
    (aside,) = tmp_path.glob("out_numba.stale-*")
    assert (aside / "result.json").read_text() == first  # the old result, whole
    assert (aside / "samples.csv").is_file() and (aside / "nautilus.hdf5").is_file()
    now = json.loads((out / "result.json").read_text())
    assert (
        now["parameters"][EINSTEIN]["prior"] != json.loads(first)["parameters"][EINSTEIN]["prior"]
    )
    assert sorted(now["files"]) == sorted(p.name for p in out.iterdir() if p.name in now["files"])


def test_more_samples_asked_of_a_finished_fit_continue_its_search(tmp_path, capsys):
    _small_dataset(tmp_path)
    run_fit(load_config(_config(tmp_path)), progress=False, plot=False)
    out = tmp_path / "out_numba"
    before = json.loads((out / "result.json").read_text())
    capsys.readouterr()

    run_fit(load_config(_config(tmp_path, QUICK.replace("n_eff = 100", "n_eff = 300"))))
    said = capsys.readouterr().out
    assert "n_eff: 100 then, 300 now" in said and "continuing its search" in said
    (aside,) = tmp_path.glob("out_numba.stale-*")
    assert json.loads((aside / "result.json").read_text()) == before
    assert not (aside / "nautilus.hdf5").exists()  # the checkpoint stayed to go on from
    after = json.loads((out / "result.json").read_text())
    assert after["info"]["resumed"] is True
    assert after["n_evaluations"] > before["n_evaluations"]


def test_the_fingerprint_names_a_changed_data_file_and_search_setting(tmp_path):
    _small_dataset(tmp_path)
    config = load_config(_config(tmp_path))
    out = tmp_path / "done"
    out.mkdir()
    (out / "result.json").write_text(json.dumps({"fingerprint": fingerprint_of(config)}))
    assert not staleness(out, fingerprint_of(load_config(tmp_path / "fit.toml")))
    assert staleness(tmp_path / "nothing", fingerprint_of(config)) is None

    with fits.open(tmp_path / "data.fits", mode="update") as hdul:
        hdul[0].data[3, 4] += 1e-9  # a re-reduced image, one pixel off by a hair
    assert staleness(out, fingerprint_of(load_config(tmp_path / "fit.toml"))).parts == ["data"]

    _config(tmp_path, QUICK.replace("seed = 2", "seed = 3"))
    changed = staleness(out, fingerprint_of(load_config(tmp_path / "fit.toml")))
    assert changed.parts == ["seed", "data"]
    assert "seed: 2 then, 3 now" in changed.text
    # scheduling is not a change of results
    _config(tmp_path, QUICK.replace("seed = 2", "seed = 2\ncheckpoint_every = 99"))
    assert staleness(out, fingerprint_of(load_config(tmp_path / "fit.toml"))).parts == ["data"]

    # a result from before fingerprints cannot be trusted to match
    (out / "result.json").write_text(json.dumps({"search": "nautilus"}))
    assert staleness(out, fingerprint_of(config))


def _small_batch_example(monkeypatch) -> None:
    from twinlens.catalogue import example

    monkeypatch.setattr(example, "N_PIX", 16)
    tiny = example.TEMPLATE.replace("n_live = 100\nn_eff = 500", "n_live = 30\nn_eff = 60")
    monkeypatch.setattr(example, "TEMPLATE", tiny)


def test_batch_example_reruns_refit_exactly_the_changed_lenses(tmp_path, monkeypatch, capsys):
    _small_batch_example(monkeypatch)
    args = ["batch", "--example", "2", "--output", str(tmp_path), "--workers", "1"]
    assert cli.main(args) == 0
    said = capsys.readouterr().out
    assert "calibration:" in said and "2 done, 0 failed" in said
    lenses = tmp_path / "output" / "lenses"
    stamp = (lenses / "lens000" / "result.json").stat().st_mtime_ns

    # one lens's data re-reduced: that lens alone is refitted; the data are not re-simulated
    with fits.open(tmp_path / "lens001" / "data.fits", mode="update") as hdul:
        hdul[0].data[5, 5] += 1e-6
        edited = np.array(hdul[0].data)
    old = (lenses / "lens001" / "result.json").read_text()
    assert cli.main(args) == 0
    said = capsys.readouterr().out
    assert "1 lens changed since its fit (data): refitting" in said
    assert "1 already done, 1 to fit" in said
    assert (lenses / "lens000" / "result.json").stat().st_mtime_ns == stamp
    assert (lenses / "lens001" / "result.json").read_text() != old
    assert not list(lenses.glob("*.stale-*"))  # kept aside only until the new fit finished
    np.testing.assert_array_equal(fits.getdata(tmp_path / "lens001" / "data.fits"), edited)

    # the template's prior edited, --keep-stale: nothing refitted, both marked stale
    template = tmp_path / "template.toml"
    template.write_text(template.read_text().replace("[0.6, 1.8]", "[0.7, 1.8]"))
    assert cli.main([*args, "--keep-stale"]) == 0
    said = capsys.readouterr().out
    assert f"2 lenses changed since their fit (prior of {EINSTEIN})" in said
    assert "template.toml differs from the built-in example's: using yours" in said
    assert "[0.7, 1.8]" in template.read_text()  # the user's edit survives
    table = (tmp_path / "output" / "catalogue.csv").read_text().splitlines()
    assert [line.split(",")[1] for line in table[1:]] == ["stale", "stale"]
    assert (lenses / "lens000" / "result.json").stat().st_mtime_ns == stamp


def test_an_edited_example_configuration_survives_a_rerun(tmp_path, monkeypatch, capsys):
    path, notes = prepare_example("parametric", tmp_path, seed=1)
    assert notes == [] and path == tmp_path / "fit.toml"
    data_stamp = (tmp_path / "data.fits").stat().st_mtime_ns
    # unedited, other options: our own file is updated for them
    _, notes = prepare_example("parametric", tmp_path, seed=1, quick=True)
    assert notes == [f"updated {path} for the options given"]
    assert "n_live = 100" in path.read_text()

    edited = path.read_text().replace("uniform = [0.5, 2.0]", "uniform = [0.8, 1.2]")
    path.write_text(edited)
    _, notes = prepare_example("parametric", tmp_path, seed=1)
    assert path.read_text() == edited
    assert any("differs from the built-in example's: using yours" in n for n in notes)
    assert (tmp_path / "data.fits").stat().st_mtime_ns == data_stamp

    # the command fits the user's version
    fitted = {}
    monkeypatch.setattr("twinlens.job.run_fit", lambda config, **kw: fitted.update(c=config))
    assert cli.main(["fit", "--example", "--output", str(tmp_path)]) == 0
    prior = dict(fitted["c"].model.priors)[EINSTEIN]
    assert (prior.lower, prior.upper) == (0.8, 1.2)
    assert "using yours" in capsys.readouterr().out


def test_example_data_are_never_simulated_over(tmp_path):
    prepare_example("parametric", tmp_path, seed=1)
    with pytest.raises(ExampleFolderError, match="--seed 1"):
        prepare_example("parametric", tmp_path, seed=2)
    (tmp_path / "psf.fits").unlink()
    with pytest.raises(ExampleFolderError, match=r"psf\.fits"):
        prepare_example("parametric", tmp_path, seed=1)
    # a folder of the user's own (no record of ours): its configuration is theirs
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "fit.toml").write_text("title = 'mine'\n")

    def write(staging: Path) -> Path:
        (staging / "fit.toml").write_text("title = 'built-in'\n")
        return staging / "fit.toml"

    path, notes = place_example(write, mine, seed=1)
    assert path.read_text() == "title = 'mine'\n" and "using yours" in notes[0]
    assert not [p for p in mine.iterdir() if p.name.startswith(".staging")]


def test_a_lens_row_override_change_is_found_without_fitting(tmp_path):
    _small_dataset(tmp_path)
    base = tomllib.loads(QUICK.format(backend="numba"))
    base.pop("output")
    config = parse_config(base, tmp_path)
    out = tmp_path / "lens"
    out.mkdir()
    (out / "result.json").write_text(json.dumps({"fingerprint": fingerprint_of(config)}))
    base["lens"][0]["mass"][0]["einstein_radius"] = {"uniform": [0.9, 1.1]}
    changed = staleness(out, fingerprint_of(parse_config(base, tmp_path)))
    assert changed.parts == [f"prior of {EINSTEIN}"]


def test_a_template_edit_refits_exactly_the_lenses_it_changes(tmp_path, capsys):
    from test_catalogue import _catalogue

    from twinlens.catalogue import load_catalogue, run_catalogue

    # lens b sets its own Einstein-radius prior, so the template's is not b's
    csv = (
        "id,data,noise_map,psf,lens[0].mass[0].einstein_radius\n"
        "a,lens/data.fits,lens/noise_map.fits,lens/psf.fits,\n"
        'b,lens/data.fits,lens/noise_map.fits,lens/psf.fits,"{uniform = [0.8, 1.0]}"\n'
    )
    path = _catalogue(tmp_path, csv)
    run_catalogue(load_catalogue(path), workers=1, plot=False, progress=False)
    lenses = tmp_path / "out" / "lenses"
    before = {i: (lenses / i / "result.json").read_text() for i in "ab"}

    template = tmp_path / "template.toml"
    text = template.read_text()
    assert "uniform = [0.5, 1.5]" in text
    template.write_text(text.replace("uniform = [0.5, 1.5]", "uniform = [0.6, 1.5]"))
    table = run_catalogue(load_catalogue(path), workers=1, plot=False)
    said = capsys.readouterr().out
    assert f"1 lens changed since its fit (prior of {EINSTEIN}): refitting" in said
    assert "1 already done, 1 to fit" in said
    assert [str(r["status"]) for r in table] == ["done", "done"]
    assert (lenses / "b" / "result.json").read_text() == before["b"]
    record = json.loads((lenses / "a" / "result.json").read_text())
    assert record["parameters"][EINSTEIN]["prior"] == "UniformPrior(lower=0.6, upper=1.5)"


def test_data_simulated_again_after_a_deletion_take_the_new_seed(tmp_path):
    prepare_example("parametric", tmp_path, seed=1)
    for name in ("data.fits", "noise_map.fits", "psf.fits"):
        (tmp_path / name).unlink()
    prepare_example("parametric", tmp_path, seed=2)  # the folder's data are now seed 2's
    prepare_example("parametric", tmp_path, seed=2)
    with pytest.raises(ExampleFolderError, match="--seed 2"):
        prepare_example("parametric", tmp_path, seed=1)


def test_a_finished_lens_whose_data_cannot_be_read_is_kept_and_said(tmp_path, capsys):
    from test_catalogue import CSV, _catalogue

    from twinlens.catalogue import load_catalogue
    from twinlens.catalogue.runner import _stale_lenses

    catalogue = load_catalogue(_catalogue(tmp_path, CSV))  # lens "broken" names a missing file
    finished = tmp_path / "out" / "lenses" / "broken"
    finished.mkdir(parents=True)
    (finished / "result.json").write_text(json.dumps({"fingerprint": {"data": "old"}}))
    assert _stale_lenses(catalogue, keep=False) == {}
    said = capsys.readouterr().out
    assert "1 finished lens(es) kept unchecked" in said and "missing.fits" in said
    assert (finished / "result.json").is_file()  # nothing moved

"""``twinlens fit``'s options do what they say with a configuration file: ``--output`` is
honoured, ``--quick`` (an example-only option) is refused rather than ignored, and
``--backend`` is checked against the search."""

from __future__ import annotations

import json

from test_job import SMALL, _small_dataset

from twinlens import cli

# one batch of 100 evaluations: enough to write every result, cheap
ONE_BATCH = SMALL.format(backend="numba").replace("n_eff = 400", "n_eff = 400\nn_like_max = 100")


def test_output_is_honoured_and_quick_is_refused_with_a_configuration(tmp_path, capsys):
    _small_dataset(tmp_path)
    (tmp_path / "fit.toml").write_text(ONE_BATCH)
    assert cli.main(["fit", str(tmp_path / "fit.toml"), "--quick"]) == 2
    assert "--quick applies to --example only" in capsys.readouterr().err
    assert not (tmp_path / "out_numba").exists()

    elsewhere = tmp_path / "elsewhere"
    assert cli.main(["fit", str(tmp_path / "fit.toml"), "--output", str(elsewhere)]) == 0
    assert not (tmp_path / "out_numba").exists()  # the file's own output is not used
    record = json.loads((elsewhere / "result.json").read_text())
    assert record["n_evaluations"] == 100
    out = capsys.readouterr().out
    assert "compiling the likelihood" in out and "writing the results" in out
    # the run did not converge (n_like_max): the summary says so
    assert "WARNING" in (elsewhere / "summary.txt").read_text()


def test_a_backend_the_search_cannot_run_on_is_a_usage_error(tmp_path, capsys):
    _small_dataset(tmp_path)
    text = SMALL.format(backend="jax").replace("n_live = 60\nn_eff = 400", "n_starts = 2")
    (tmp_path / "fit.toml").write_text(text.replace('name = "nautilus"', 'name = "map"'))
    assert cli.main(["fit", str(tmp_path / "fit.toml"), "--backend", "numba"]) == 2
    err = capsys.readouterr().err
    assert "map" in err and "jax" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out_jax").exists() and not (tmp_path / "out_numba").exists()

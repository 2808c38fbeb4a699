"""Multi-band fits through the job: ``[[dataset]]`` tables, a band's own parameters, results
per band, and a rerun after one band's data changed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from twinlens.grids import Grid2D
from twinlens.imaging import fits_io
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.job import run_fit
from twinlens.job.config import ConfigError, load_config
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.mass import SIE

THETA_E = 0.9
#: (pixels, pixel scale, PSF FWHM, source effective radius, source intensity) per band
BANDS = {"blue": (30, 0.08, 0.12, 0.25, 2.0), "red": (16, 0.15, 0.25, 0.32, 1.0)}
OWN = "sources[0].light[0].effective_radius"


def _write_bands(directory: Path) -> None:
    for i, (name, (n, scale, fwhm, radius, intensity)) in enumerate(BANDS.items()):
        truth = Tracer(
            Galaxy(mass=SIE((0.0, 0.0), (0.1, 0.0), THETA_E)),
            Galaxy(light=Sersic((0.05, 0.0), (0.0, 0.1), radius, 1.0, intensity)),
        )
        psf = PSF.gaussian(fwhm, scale, 5)
        data = simulate(truth, Grid2D.uniform(n, scale, 2), psf, noise_sigma=0.02, seed=i)
        (directory / name).mkdir(exist_ok=True)
        fits_io.write_image(directory / name / "data.fits", data.data, scale, True)
        fits_io.write_image(directory / name / "noise_map.fits", data.noise_map, scale, True)
        fits_io.write_image(directory / name / "psf.fits", psf.kernel, scale, True)


def _band(name: str, extra: str = "") -> str:
    return f"""
[[dataset]]
name = "{name}"
data = "{name}/data.fits"
noise_map = "{name}/noise_map.fits"
psf = "{name}/psf.fits"
sub_size = 2
{extra}
"""


CONFIG = """
output = "out"
{bands}
[search]
name = "nautilus"
n_live = 60
n_eff = 300
seed = 2

[[lens]]
[[lens.mass]]
type = "SIE"
centre = [0.0, 0.0]
ell_comps = [0.1, 0.0]
einstein_radius = {{uniform = [0.5, 1.5]}}

[[source]]
[[source.light]]
type = "LinearSersic"
centre = [0.05, 0.0]
ell_comps = [0.0, 0.1]
effective_radius = {{uniform = [0.1, 0.6], start = 0.3}}
sersic_index = 1.0
"""
OWN_PRIOR = f'own = {{"{OWN}" = {{uniform = [0.1, 0.6]}}}}'


def _config(directory: Path, bands: str | None = None, short: bool = False) -> Path:
    """The two-band configuration; ``short``: a search too short to recover anything, for
    tests of what a run writes and when it runs again."""
    if bands is None:
        bands = _band("blue") + _band("red", OWN_PRIOR)
    path = directory / "fit.toml"
    path.write_text(_shortened(CONFIG.format(bands=bands), short))
    return path


def _shortened(text: str, short: bool = True) -> str:
    return text.replace("n_live = 60\nn_eff = 300", "n_live = 30\nn_eff = 40") if short else text


def test_a_two_band_fit_writes_each_bands_results_and_recovers_the_colour_gradient(
    tmp_path, capsys
):
    _write_bands(tmp_path)
    config = load_config(_config(tmp_path))
    assert config.bands == ("blue", "red")
    assert config.model.paths[-1] == f"band.red.{OWN}"
    run_fit(config, progress=False, plot=True)
    out = tmp_path / "out"
    record = json.loads((out / "result.json").read_text())
    bands = record["bands"]
    assert set(bands) == {"blue", "red"}
    assert record["chi_squared"] == pytest.approx(
        bands["blue"]["chi_squared"] + bands["red"]["chi_squared"], rel=1e-12
    )
    assert record["n_pixels"] == 30 * 30 + 16 * 16
    for name, (n, *_) in BANDS.items():
        model, _ = fits_io.read_image(out / name / "model.fits")
        assert model.shape == (n, n)
        assert (out / name / "normalized_residuals.fits").is_file()
        assert bands[name]["solved_intensities"][0] > 0
    assert (out / "fit.png").is_file()
    # each band's radius within its 95% interval, and the two told apart
    params = record["parameters"]
    for path, truth in ((OWN, BANDS["blue"][3]), (f"band.red.{OWN}", BANDS["red"][3])):
        p = params[path]
        half = 2 * 0.5 * (p["upper_68"] - p["lower_68"])
        assert abs(p["median"] - truth) < half, path
    assert params[f"band.red.{OWN}"]["lower_68"] > params[OWN]["upper_68"]
    header = (out / "samples.csv").read_text().splitlines()[0]
    assert f"band.red.{OWN}" in header


def test_a_bands_own_astrometric_offset(tmp_path):
    _write_bands(tmp_path)
    offsets = '{"offset[0]" = {uniform = [-0.1, 0.1]}, "offset[1]" = {uniform = [-0.1, 0.1]}}'
    config = load_config(_config(tmp_path, _band("blue") + _band("red", f"own = {offsets}")))
    assert config.model.paths[-2:] == ("band.red.offset[0]", "band.red.offset[1]")
    objective = config.objective("numba")
    start = np.asarray(objective.start)
    assert start[-1] == start[-2] == 0.0
    moved = start.copy()
    moved[-2] = 0.05  # the red band's scene moved off its data: a worse fit
    assert objective.log_likelihood(moved[None])[0] < objective.log_likelihood(start[None])[0]
    tracer = config.model.band_instance(moved, "red")
    assert tracer.lenses[0].mass[0].centre[0] == pytest.approx(0.05)


def test_changing_one_bands_data_refits_and_says_which(tmp_path, capsys):
    _write_bands(tmp_path)
    run_fit(load_config(_config(tmp_path, short=True)), progress=False, plot=False)
    first = (tmp_path / "out" / "result.json").read_text()
    data, scale = fits_io.read_image(tmp_path / "red" / "data.fits")
    fits_io.write_image(tmp_path / "red" / "data.fits", np.asarray(data) * 1.01, scale, True)
    capsys.readouterr()
    run_fit(load_config(_config(tmp_path, short=True)), progress=False, plot=False)
    said = capsys.readouterr().out
    assert "red data" in said and "blue data" not in said
    (aside,) = tmp_path.glob("out.stale-*")
    assert (aside / "result.json").read_text() == first


@pytest.mark.parametrize(
    ("bands", "message"),
    [
        (_band("blue") + _band("blue"), r'name = "blue" is given twice'),
        (_band("blue").replace('name = "blue"', 'name = "2x"'), r'name = "2x": each band'),
        (
            _band("blue")
            + _band("red", 'own = {"sources[0].light[0].radius" = {uniform = [0, 1]}}'),
            r'"red"\.own\."sources\[0\]\.light\[0\]\.radius": the model has no scalar parameter',
        ),
        (
            _band("blue") + _band("red", f'own = {{"{OWN}" = {{uniform = [0.4, 0.6]}}}}'),
            r"starts at the model's value 0.3, which lies outside its prior",
        ),
        (
            _band("blue") + _band("red", f'own = {{"{OWN}" = 0.3}}'),
            r"needs a prior table",
        ),
        (
            _band("blue") + _band("red", 'own = {"offset[0]" = {uniform = [0.1, 0.2]}}'),
            r"starts at the model's value 0, which lies outside its prior",
        ),
        (_band("blue", "colour = 1"), r'\[\[dataset\]\] "blue": unknown entries colour'),
        (_band("blue").replace('data = "blue/data.fits"\n', ""), r'"blue" needs data'),
    ],
)
def test_bad_band_tables_are_refused_with_their_names(tmp_path, bands, message):
    _write_bands(tmp_path)
    with pytest.raises(ConfigError, match=message):
        load_config(_config(tmp_path, bands))


def _band_catalogue(folder: Path, rows: str) -> Path:
    template = CONFIG.format(bands=_band("blue") + _band("red", OWN_PRIOR))
    for name in BANDS:  # the template names no files: each lens's row does
        for kind in ("data", "noise_map", "psf"):
            template = template.replace(f'{kind} = "{name}/{kind}.fits"\n', "")
    (folder / "template.toml").write_text(_shortened(template.replace('output = "out"\n', "")))
    (folder / "lenses.csv").write_text(rows)
    path = folder / "catalogue.toml"
    path.write_text('template = "template.toml"\ncatalogue = "lenses.csv"\noutput = "cat"\n')
    return path


BAND_COLUMNS = ",".join(f"{b}.{k}" for b in BANDS for k in ("data", "noise_map", "psf"))
BAND_FILES = ",".join(f"{b}/{k}.fits" for b in BANDS for k in ("data", "noise_map", "psf"))


def test_a_catalogue_of_multiband_lenses_names_each_bands_files(tmp_path):
    from twinlens.catalogue import load_catalogue, run_catalogue

    _write_bands(tmp_path)
    rows = f"id,{BAND_COLUMNS}\nx,{BAND_FILES}\n"
    table = run_catalogue(load_catalogue(_band_catalogue(tmp_path, rows)), workers=1, plot=False)
    assert [str(r["status"]) for r in table] == ["done"]
    record = json.loads((tmp_path / "cat" / "lenses" / "x" / "result.json").read_text())
    assert set(record["bands"]) == {"blue", "red"}
    assert (tmp_path / "cat" / "lenses" / "x" / "red" / "model.fits").is_file()


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            f"id,{BAND_COLUMNS},data\nx,{BAND_FILES},d.fits\n",
            r"column data: the template has bands",
        ),
        (
            "id,blue.data,blue.noise_map,blue.psf\nx,a.fits,b.fits,c.fits\n",
            r"lens x: no red.data, red.noise_map, red.psf",
        ),
    ],
)
def test_multiband_catalogue_mistakes_name_the_band(tmp_path, rows, message):
    from twinlens.catalogue import CatalogueError, load_catalogue

    with pytest.raises(CatalogueError, match=message):
        load_catalogue(_band_catalogue(tmp_path, rows))


@pytest.mark.slow  # a whole pixelised fit; tests/test_multiband.py checks its likelihood
def test_a_pixelised_source_in_each_band_with_the_red_bands_own_coefficient(tmp_path):
    _write_bands(tmp_path)
    coefficient = "sources[0].pixelization.regularization.coefficient"
    own = f'own = {{"{coefficient}" = {{log_uniform = [0.01, 100.0]}}}}'
    pixelised = (
        '[[source]]\n[[source.light]]\ntype = "Pixelization"\n'
        'mesh = {type = "Rectangular", shape = [12, 12]}\n'
        'regularization = {type = "Constant", coefficient = '
        "{log_uniform = [0.01, 100.0], start = 1.0}}\n"
    )
    text = CONFIG.format(bands=_band("blue") + _band("red", own))
    text = text[: text.index("[[source]]")] + pixelised
    path = tmp_path / "fit.toml"
    path.write_text(text.replace("n_live = 60\nn_eff = 300", "n_live = 40\nn_eff = 100"))
    config = load_config(path)
    assert config.model.paths[-1] == f"band.red.{coefficient}"
    run_fit(config, progress=False, plot=True)
    record = json.loads((tmp_path / "out" / "result.json").read_text())
    theta = record["parameters"]["lenses[0].mass[0].einstein_radius"]
    assert abs(theta["median"] - THETA_E) < 0.01
    assert set(record["bands"]) == {"blue", "red"} and (tmp_path / "out" / "fit.png").is_file()

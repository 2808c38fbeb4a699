"""``twinlens batch --example [N]``: N varied simulated lenses, a catalogue that fits them, and
a report of how well their true values were recovered.

Each lens is an SIE (Einstein radius 0.8-1.4", ellipticity components within +-0.15) lensing
an elliptical Sersic source (centre within +-0.15", effective radius 0.15-0.35"), on 40 x 40
pixels of 0.08" with a Gaussian PSF (FWHM 0.12") and Gaussian noise of 0.02 per pixel. Six
parameters are free per lens; nautilus runs with 100 live points and one network per bound
(training networks, not the likelihood, is most of such a small fit's time).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.grids import Grid2D
from twinlens.imaging import fits_io
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.mass import SIE
from twinlens.messages import shown

__all__ = ["calibration", "report", "write_example"]

N_PIX, PIXEL_SCALE, SUB_SIZE, NOISE = 40, 0.08, 2, 0.02

TEMPLATE = """\
title = "twinlens batch example"
backend = "numba"

[dataset]
sub_size = {sub_size}

[search]
name = "nautilus"
n_live = 100
n_eff = 500
n_networks = 1
seed = 1

[[lens]]
[[lens.mass]]
type = "SIE"
centre = [0.0, 0.0]
ell_comps = [{{uniform = [-0.25, 0.25]}}, {{uniform = [-0.25, 0.25]}}]
einstein_radius = {{uniform = [0.6, 1.8]}}

[[source]]
[[source.light]]
type = "LinearSersic"
centre = [{{uniform = [-0.3, 0.3]}}, {{uniform = [-0.3, 0.3]}}]
ell_comps = [0.0, 0.1]
effective_radius = {{log_uniform = [0.05, 1.0]}}
sersic_index = 1.5
"""

_FREE = {
    "lenses[0].mass[0].ell_comps[0]": (-0.15, 0.15),
    "lenses[0].mass[0].ell_comps[1]": (-0.15, 0.15),
    "lenses[0].mass[0].einstein_radius": (0.8, 1.4),
    "sources[0].light[0].centre[0]": (-0.15, 0.15),
    "sources[0].light[0].centre[1]": (-0.15, 0.15),
    "sources[0].light[0].effective_radius": (0.15, 0.35),
}


def _lens(truth: dict[str, float]) -> Tracer:
    return Tracer(
        Galaxy(
            mass=SIE(
                (0.0, 0.0),
                (truth["lenses[0].mass[0].ell_comps[0]"], truth["lenses[0].mass[0].ell_comps[1]"]),
                truth["lenses[0].mass[0].einstein_radius"],
            )
        ),
        Galaxy(
            light=Sersic(
                (truth["sources[0].light[0].centre[0]"], truth["sources[0].light[0].centre[1]"]),
                (0.0, 0.1),
                truth["sources[0].light[0].effective_radius"],
                1.5,
                1.0,
            )
        ),
    )


def write_example(folder: str | Path, n_lenses: int = 8, seed: int = 1) -> Path:
    """Simulate ``n_lenses`` lenses into ``folder`` and write ``template.toml``,
    ``lenses.csv`` (with ``truth.`` columns) and ``catalogue.toml``; returns the last."""
    if not (isinstance(n_lenses, int) and n_lenses >= 1):
        raise ValueError(f"n_lenses must be a whole number >= 1, got {shown(n_lenses)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    grid = Grid2D.uniform(N_PIX, PIXEL_SCALE, SUB_SIZE)
    psf = PSF.gaussian(0.12, PIXEL_SCALE, 5)
    columns = ["id", "data", "noise_map", "psf", *(f"truth.{p}" for p in _FREE)]
    rows = []
    for i in range(n_lenses):
        lens_id = f"lens{i:03d}"
        truth = {p: float(rng.uniform(*bounds)) for p, bounds in _FREE.items()}
        imaging = simulate(_lens(truth), grid, psf, noise_sigma=NOISE, seed=seed * 1000 + i)
        (folder / lens_id).mkdir(exist_ok=True)
        for name, image in (("data", imaging.data), ("noise_map", imaging.noise_map)):
            fits_io.write_image(folder / lens_id / f"{name}.fits", image, PIXEL_SCALE, True)
        fits_io.write_image(folder / lens_id / "psf.fits", psf.kernel, PIXEL_SCALE, True)
        rows.append(
            [lens_id, *(f"{lens_id}/{n}.fits" for n in ("data", "noise_map", "psf"))]
            + [repr(truth[p]) for p in _FREE]
        )
    with (folder / "lenses.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(rows)
    (folder / "template.toml").write_text(TEMPLATE.format(sub_size=SUB_SIZE))
    path = folder / "catalogue.toml"
    path.write_text(
        'template = "template.toml"\ncatalogue = "lenses.csv"\noutput = "output"\n\n'
        '[cluster]\nkind = "local"\nworkers = 2\n'
    )
    return path


def calibration(catalogue: Any) -> dict[str, float]:
    """The fraction of known true values inside each finished lens's central 68% and 95%
    posterior intervals, pooled over lenses and parameters (near 0.68 and 0.95 when the
    posteriors are honest), with the number of values pooled."""
    from twinlens.catalogue.task import lens_folders

    inside = {68: 0, 95: 0}
    n = 0
    for task in catalogue.tasks:
        finished, _ = lens_folders(catalogue.output, task.id)
        samples_path = finished / "samples.csv"
        if task.truths is None or not samples_path.is_file():
            continue
        with samples_path.open() as f:
            names = f.readline().strip().split(",")
        samples = np.loadtxt(samples_path, delimiter=",", skiprows=1, ndmin=2)
        for j, name in enumerate(names):
            if name not in task.truths:
                continue
            column, truth = samples[:, j], task.truths[name]
            n += 1
            for level in inside:
                tail = 50.0 - level / 2.0
                lo, hi = np.percentile(column, [tail, 100.0 - tail])
                inside[level] += int(lo <= truth <= hi)
    return {"n": n, "inside_68": inside[68] / max(n, 1), "inside_95": inside[95] / max(n, 1)}


def report(catalogue: Any, table: Any) -> None:
    """Print the example's calibration line and where its figures are."""
    result = calibration(catalogue)
    print(
        f"calibration: {result['inside_68']:.0%} of {result['n']} true values inside the 68% "
        f"intervals, {result['inside_95']:.0%} inside the 95% intervals (honest posteriors: "
        "near 68% and 95%)"
    )
    figure = catalogue.output / "catalogue.png"
    if figure.is_file():
        print(f"summary figure: {figure}; residuals: {catalogue.output / 'thumbnails.png'}")

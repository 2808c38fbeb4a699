"""The built-in example: an HST-like strong lens to simulate and fit.

An SIE plus external shear whose lens light is a fixed multi-Gaussian expansion (30 Gaussians
fitted to a de Vaucouleurs profile) carrying mass with one free mass-to-light ratio, and an
elliptical Sersic source: 0.05" pixels, a 2" circular mask, 2 x 2 sub-pixels (the data are
simulated with 4 x 4), a Gaussian PSF of FWHM 0.1", noise 0.05 per pixel: the benchmark
workload W6, masked.

:func:`write_example` writes the data, noise map and PSF as FITS files and a ``fit.toml`` that
fits them; ``twinlens simulate --example DIR`` and ``twinlens fit --example`` call it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.fit.imaging import simulate
from twinlens.fit.psf import PSF
from twinlens.fit.tracer import Galaxy, Tracer
from twinlens.grids import Grid2D
from twinlens.kernels.gauss_decomposition import decompose_sersic
from twinlens.light import MGELight, Sersic
from twinlens.mass import SIE, ExternalShear

__all__ = ["TRUTH", "example_tracer", "write_example"]

N_PIX, PIXEL_SCALE, SUB_SIZE, NOISE, MASK_RADIUS = 100, 0.05, 2, 0.05, 2.0
PSF_FWHM, PSF_SIZE = 0.1, 21

#: Nautilus settings of the example: enough live points for 14 parameters, and a posterior of
#: 2,000 effective samples (``--quick``: 100 and 500).
EXAMPLE_SEARCH = {"n_live": 200, "n_eff": 2000}
QUICK_SEARCH = {"n_live": 100, "n_eff": 500}

#: The true values of the example's free parameters, by path.
TRUTH = {
    "lenses[0].mass[0].centre[0]": 0.0,
    "lenses[0].mass[0].centre[1]": 0.0,
    "lenses[0].mass[0].ell_comps[0]": 0.07,
    "lenses[0].mass[0].ell_comps[1]": 0.05,
    "lenses[0].mass[0].einstein_radius": 1.0,
    "lenses[0].mass[1].gamma_1": 0.03,
    "lenses[0].mass[1].gamma_2": -0.02,
    "lenses[0].mass[2].mass_to_light_ratio": 10.0,
    "sources[0].light[0].centre[0]": 0.05,
    "sources[0].light[0].centre[1]": 0.1,
    "sources[0].light[0].ell_comps[0]": -0.088,
    "sources[0].light[0].ell_comps[1]": 0.153,
    "sources[0].light[0].effective_radius": 0.3,
    "sources[0].light[0].sersic_index": 1.5,
}

# the priors written into fit.toml: wide around the truth, as a modeller would set them
PRIORS = {
    "lenses[0].mass[0].centre[0]": ("gaussian", [0.0, 0.1]),
    "lenses[0].mass[0].centre[1]": ("gaussian", [0.0, 0.1]),
    "lenses[0].mass[0].ell_comps[0]": ("uniform", [-0.3, 0.3]),
    "lenses[0].mass[0].ell_comps[1]": ("uniform", [-0.3, 0.3]),
    "lenses[0].mass[0].einstein_radius": ("uniform", [0.6, 1.6]),
    "lenses[0].mass[1].gamma_1": ("uniform", [-0.1, 0.1]),
    "lenses[0].mass[1].gamma_2": ("uniform", [-0.1, 0.1]),
    "lenses[0].mass[2].mass_to_light_ratio": ("log_uniform", [1.0, 30.0]),
    "sources[0].light[0].centre[0]": ("gaussian", [0.0, 0.3]),
    "sources[0].light[0].centre[1]": ("gaussian", [0.0, 0.3]),
    "sources[0].light[0].ell_comps[0]": ("uniform", [-0.4, 0.4]),
    "sources[0].light[0].ell_comps[1]": ("uniform", [-0.4, 0.4]),
    "sources[0].light[0].effective_radius": ("log_uniform", [0.05, 1.5]),
    "sources[0].light[0].sersic_index": ("uniform", [0.5, 4.0]),
}


def lens_light() -> MGELight:
    """30 Gaussians (sigma 0.01"-5") fitted to a de Vaucouleurs profile of R_eff 1"."""
    peaks, sigmas = decompose_sersic(0.02, 1.0, 4.0, n_sigma=30, sigma_range=(0.04, 20.0))
    return MGELight(np.asarray(sigmas), np.asarray(peaks), (0.0, 0.0), (0.05, 0.03))


def example_tracer(source_intensity: float = 0.2) -> Tracer:
    """The true lens and source."""
    t = TRUTH
    light = lens_light()
    sie = SIE(
        (t["lenses[0].mass[0].centre[0]"], t["lenses[0].mass[0].centre[1]"]),
        (t["lenses[0].mass[0].ell_comps[0]"], t["lenses[0].mass[0].ell_comps[1]"]),
        t["lenses[0].mass[0].einstein_radius"],
    )
    shear = ExternalShear(t["lenses[0].mass[1].gamma_1"], t["lenses[0].mass[1].gamma_2"])
    stellar = light.to_mass(t["lenses[0].mass[2].mass_to_light_ratio"])
    lens = Galaxy(mass=(sie, shear, stellar), light=light)
    source = Sersic(
        (t["sources[0].light[0].centre[0]"], t["sources[0].light[0].centre[1]"]),
        (t["sources[0].light[0].ell_comps[0]"], t["sources[0].light[0].ell_comps[1]"]),
        t["sources[0].light[0].effective_radius"],
        t["sources[0].light[0].sersic_index"],
        source_intensity,
    )
    return Tracer(lens, Galaxy(light=source))


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r} to TOML")


def _free(path: str) -> dict:
    kind, args = PRIORS[path]
    return {kind: args}


def config_text(search: dict, backend: str, output: str = "fit_output") -> str:
    """The example's ``fit.toml``."""
    light = lens_light()
    p = _free
    lines = [
        'title = "twinlens example: SIE + shear + MGE lens light, Sersic source"',
        f"backend = {_toml(backend)}",
        f"output = {_toml(output)}",
        "",
        "[dataset]",
        'data = "data.fits"',
        'noise_map = "noise_map.fits"',
        'psf = "psf.fits"',
        f"sub_size = {SUB_SIZE}",
        f"mask_radius = {MASK_RADIUS}",
        "",
        "[search]",
        *(f"{k} = {_toml(v)}" for k, v in search.items()),
        "",
        "[[lens]]",
        "[[lens.light]]  # fixed: an MGE measured earlier",
        'type = "MGELight"',
        f"sigmas = {_toml(light.sigmas)}",
        f"intensities = {_toml(light.intensities)}",
        f"centre = {_toml(light.centre)}",
        f"ell_comps = {_toml(light.ell_comps)}",
        "[[lens.mass]]",
        'type = "SIE"',
        "centre = " + _toml([p("lenses[0].mass[0].centre[0]"), p("lenses[0].mass[0].centre[1]")]),
        "ell_comps = "
        + _toml([p("lenses[0].mass[0].ell_comps[0]"), p("lenses[0].mass[0].ell_comps[1]")]),
        f"einstein_radius = {_toml(p('lenses[0].mass[0].einstein_radius'))}",
        "[[lens.mass]]",
        'type = "ExternalShear"',
        f"gamma_1 = {_toml(p('lenses[0].mass[1].gamma_1'))}",
        f"gamma_2 = {_toml(p('lenses[0].mass[1].gamma_2'))}",
        "[[lens.mass]]  # the lens light's mass: one free mass-to-light ratio",
        'type = "MGE"',
        "light = 0",
        f"mass_to_light_ratio = {_toml(p('lenses[0].mass[2].mass_to_light_ratio'))}",
        "",
        "[[source]]",
        "[[source.light]]  # its intensity is solved linearly",
        'type = "LinearSersic"',
        "centre = "
        + _toml([p("sources[0].light[0].centre[0]"), p("sources[0].light[0].centre[1]")]),
        "ell_comps = "
        + _toml([p("sources[0].light[0].ell_comps[0]"), p("sources[0].light[0].ell_comps[1]")]),
        f"effective_radius = {_toml(p('sources[0].light[0].effective_radius'))}",
        f"sersic_index = {_toml(p('sources[0].light[0].sersic_index'))}",
    ]
    return "\n".join(lines) + "\n"


def write_example(
    directory: str | Path,
    *,
    seed: int = 1,
    search: dict | None = None,
    backend: str = "numba",
    overwrite: bool = False,
) -> Path:
    """Simulate the example into ``directory`` (``data.fits``, ``noise_map.fits``, ``psf.fits``)
    and write the ``fit.toml`` that fits it; returns the path of ``fit.toml``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "fit.toml"
    if config.exists() and not overwrite:
        raise FileExistsError(f"{config} exists; pass overwrite=True (--overwrite) to replace it")
    grid = Grid2D.uniform(N_PIX, PIXEL_SCALE, 4)  # finer than the fit's sub-pixels
    psf = PSF.gaussian(PSF_FWHM, PIXEL_SCALE, PSF_SIZE)
    with memo.disabled():  # a one-off image: nothing to keep
        dataset = simulate(example_tracer(), grid, psf, noise_sigma=NOISE, seed=seed)
    names = {"data": "data.fits", "noise_map": "noise_map.fits", "psf": "psf.fits"}
    from twinlens.fit import fits_io

    fits_io.write_image(directory / names["data"], dataset.data, PIXEL_SCALE, overwrite)
    fits_io.write_image(directory / names["noise_map"], dataset.noise_map, PIXEL_SCALE, overwrite)
    fits_io.write_image(directory / names["psf"], psf.kernel, PIXEL_SCALE, overwrite)
    search = search or {"name": "nautilus", **EXAMPLE_SEARCH, "seed": seed}
    config.write_text(config_text(search, backend))
    return config

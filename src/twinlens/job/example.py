"""The built-in example: an HST-like strong lens to simulate and fit.

An SIE plus external shear, a lens light that was fitted beforehand (an elliptical Sersic of
fixed shape whose intensity the fit solves linearly) and an elliptical Sersic source (its
intensity solved linearly too): 13 free parameters, each constrained by the image, and every
profile one that COOLEST describes, so the fit writes ``coolest.json``. 0.05" pixels, a 1.8"
circular mask (it holds 98% of the lensed source's light), 2 x 2 sub-pixels (the data are
simulated with 4 x 4), a Gaussian PSF of FWHM 0.1", noise 0.05 per pixel.

An earlier example let the lens light (a multi-Gaussian expansion) carry mass with a free
mass-to-light ratio; the image hardly tells that mass from the SIE's, and the sampler did not
follow the curved degeneracy between them, so its posterior missed the truths.

:func:`write_example` writes the data, noise map and PSF as FITS files and a ``fit.toml`` that
fits them; ``twinlens simulate DIR`` and ``twinlens fit --example`` call it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging as ImagingData
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.mass import SIE, ExternalShear

__all__ = [
    "EXAMPLE_SEARCH",
    "PIXELISED_IMAGING",
    "PIXELISED_SEARCH",
    "PIXELISED_TRUTH",
    "PRIORS",
    "QUICK_SEARCH",
    "TRUTH",
    "example_tracer",
    "pixelised_example_tracer",
    "simulate_example_dataset",
    "write_example",
    "write_pixelised_example",
]

N_PIX, PIXEL_SCALE, SUB_SIZE, NOISE, MASK_RADIUS = 100, 0.05, 2, 0.05, 1.8
PSF_FWHM, PSF_SIZE = 0.1, 11  # 11 pixels reach 6 sigma of the PSF

#: Nautilus settings of the example: 150 live points for 13 parameters, 1,000 effective
#: posterior samples, and one network per bound rather than four: training networks costs
#: more here than the likelihood evaluations that better bounds would save. ``--quick``: 100
#: live points and 500 samples.
EXAMPLE_SEARCH = {"n_live": 150, "n_eff": 1000, "n_networks": 1}
QUICK_SEARCH = {"n_live": 100, "n_eff": 500, "n_networks": 1}


def _lens_truth(
    centre: tuple[float, float],
    ell_comps: tuple[float, float],
    einstein_radius: float,
    gamma: tuple[float, float],
) -> dict[str, float]:
    """The true values of an SIE (``lenses[0].mass[0]``) plus external shear
    (``lenses[0].mass[1]``), the lens of both imaging examples, by path."""
    sie, shear = "lenses[0].mass[0]", "lenses[0].mass[1]"
    return {
        f"{sie}.centre[0]": centre[0],
        f"{sie}.centre[1]": centre[1],
        f"{sie}.ell_comps[0]": ell_comps[0],
        f"{sie}.ell_comps[1]": ell_comps[1],
        f"{sie}.einstein_radius": einstein_radius,
        f"{shear}.gamma_1": gamma[0],
        f"{shear}.gamma_2": gamma[1],
    }


def _lens(t: dict[str, float]) -> tuple[SIE, ExternalShear]:
    """The SIE and shear of a truth made by :func:`_lens_truth`."""
    sie = SIE(
        (t["lenses[0].mass[0].centre[0]"], t["lenses[0].mass[0].centre[1]"]),
        (t["lenses[0].mass[0].ell_comps[0]"], t["lenses[0].mass[0].ell_comps[1]"]),
        t["lenses[0].mass[0].einstein_radius"],
    )
    return sie, ExternalShear(t["lenses[0].mass[1].gamma_1"], t["lenses[0].mass[1].gamma_2"])


#: The true values of the example's free parameters, by path.
TRUTH = {
    **_lens_truth((0.02, -0.01), (0.07, 0.05), 1.0, (0.03, -0.02)),
    "sources[0].light[0].centre[0]": 0.05,
    "sources[0].light[0].centre[1]": 0.1,
    "sources[0].light[0].ell_comps[0]": -0.088,
    "sources[0].light[0].ell_comps[1]": 0.153,
    "sources[0].light[0].effective_radius": 0.3,
    "sources[0].light[0].sersic_index": 1.5,
}

#: The priors written into fit.toml, as a modeller would set them: the lens centred on its
#: light within 0.1", the source anywhere within about 0.5" of it, and broad ranges otherwise.
PRIORS = {
    "lenses[0].mass[0].centre[0]": ("gaussian", [0.0, 0.1]),
    "lenses[0].mass[0].centre[1]": ("gaussian", [0.0, 0.1]),
    "lenses[0].mass[0].ell_comps[0]": ("uniform", [-0.4, 0.4]),
    "lenses[0].mass[0].ell_comps[1]": ("uniform", [-0.4, 0.4]),
    "lenses[0].mass[0].einstein_radius": ("uniform", [0.5, 2.0]),
    "lenses[0].mass[1].gamma_1": ("uniform", [-0.15, 0.15]),
    "lenses[0].mass[1].gamma_2": ("uniform", [-0.15, 0.15]),
    "sources[0].light[0].centre[0]": ("gaussian", [0.0, 0.3]),
    "sources[0].light[0].centre[1]": ("gaussian", [0.0, 0.3]),
    "sources[0].light[0].ell_comps[0]": ("uniform", [-0.5, 0.5]),
    "sources[0].light[0].ell_comps[1]": ("uniform", [-0.5, 0.5]),
    "sources[0].light[0].effective_radius": ("log_uniform", [0.02, 2.0]),
    "sources[0].light[0].sersic_index": ("uniform", [0.5, 5.0]),
}

# the lens light's shape, fixed in the fit as if measured beforehand; its intensity is solved.
# Its index is 2.5: the cusp of a de Vaucouleurs profile (n = 4) is so steep that the fit's
# 2 x 2 sub-pixels miss the 4 x 4 image by chi^2 ~ 100 even after the intensity solve, which
# pulls the source's size and index 2 sigma off; at n = 2.5 the miss is chi^2 0.2
LENS_LIGHT: dict[str, Any] = {
    "centre": (0.0, 0.0),
    "ell_comps": (0.05, 0.03),
    "effective_radius": 1.0,
}
LENS_LIGHT_INDEX, LENS_INTENSITY, SOURCE_INTENSITY = 2.5, 0.3, 0.2


def example_tracer(
    source_intensity: float = SOURCE_INTENSITY, lens_intensity: float = LENS_INTENSITY
) -> Tracer:
    """The true lens and source."""
    t = TRUTH
    sie, shear = _lens(t)
    light = Sersic(**LENS_LIGHT, sersic_index=LENS_LIGHT_INDEX, intensity=lens_intensity)
    source = Sersic(
        (t["sources[0].light[0].centre[0]"], t["sources[0].light[0].centre[1]"]),
        (t["sources[0].light[0].ell_comps[0]"], t["sources[0].light[0].ell_comps[1]"]),
        t["sources[0].light[0].effective_radius"],
        t["sources[0].light[0].sersic_index"],
        source_intensity,
    )
    return Tracer(Galaxy(mass=(sie, shear), light=light), Galaxy(light=source))


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


def _pair(path: str) -> str:
    return _toml([_free(f"{path}[0]"), _free(f"{path}[1]")])


def config_text(search: dict, backend: str, output: str = "fit_output") -> str:
    """The example's ``fit.toml``."""
    title = "twinlens example: SIE + shear, Sersic lens light and source"
    return config_document(title, backend, output, search, model_lines(), (SUB_SIZE, MASK_RADIUS))


def model_lines() -> list[str]:
    """The ``[[lens]]`` and ``[[source]]`` tables of the example's ``fit.toml``: its priors,
    the lens light's fixed shape, both intensities solved linearly."""
    sie, shear, source = "lenses[0].mass[0]", "lenses[0].mass[1]", "sources[0].light[0]"
    return [
        "[[lens]]",
        "[[lens.light]]  # its shape measured earlier: fixed; its intensity solved linearly",
        'type = "LinearSersic"',
        *(f"{k} = {_toml(v)}" for k, v in LENS_LIGHT.items()),
        f"sersic_index = {_toml(LENS_LIGHT_INDEX)}",
        "[[lens.mass]]",
        'type = "SIE"',
        f"centre = {_pair(f'{sie}.centre')}",
        f"ell_comps = {_pair(f'{sie}.ell_comps')}",
        f"einstein_radius = {_toml(_free(f'{sie}.einstein_radius'))}",
        "[[lens.mass]]",
        'type = "ExternalShear"',
        f"gamma_1 = {_toml(_free(f'{shear}.gamma_1'))}",
        f"gamma_2 = {_toml(_free(f'{shear}.gamma_2'))}",
        "",
        "[[source]]",
        "[[source.light]]  # its intensity is solved linearly",
        'type = "LinearSersic"',
        f"centre = {_pair(f'{source}.centre')}",
        f"ell_comps = {_pair(f'{source}.ell_comps')}",
        f"effective_radius = {_toml(_free(f'{source}.effective_radius'))}",
        f"sersic_index = {_toml(_free(f'{source}.sersic_index'))}",
    ]


def config_document(
    title: str,
    backend: str,
    output: str,
    search: dict,
    body: list[str],
    dataset: tuple[int, float] | None,
    dataset_note: str = "",
    bands: tuple[str, ...] = (),
) -> str:
    """A built-in example's ``fit.toml``: the head every example shares, then its own lines.

    Parameters
    ----------
    title, backend, output : str
        The file's first entries.
    search : dict
        The ``[search]`` table.
    body : list of str
        The lines after it (the lens, source and point-source tables).
    dataset : (int, float) or None
        Sub-pixels and mask radius of the ``[dataset]`` table of the example's FITS files;
        None for an example without imaging.
    dataset_note : str, default ""
        A comment on the ``[dataset]`` line.
    bands : tuple of str, optional
        The ``[[dataset]]`` tables of a multi-band example, in place of ``dataset``.

    Returns
    -------
    str
        The file's text.
    """
    lines = [f'title = "{title}"', f"backend = {_toml(backend)}", f"output = {_toml(output)}", ""]
    if dataset is not None:
        sub_size, mask_radius = dataset
        lines += [
            f"[dataset]  # {dataset_note}" if dataset_note else "[dataset]",
            'data = "data.fits"',
            'noise_map = "noise_map.fits"',
            'psf = "psf.fits"',
            f"sub_size = {sub_size}",
            f"mask_radius = {mask_radius}",
            "",
        ]
    lines += [*bands, "[search]", *(f"{k} = {_toml(v)}" for k, v in search.items()), "", *body]
    return "\n".join(lines) + "\n"


def example_config_path(directory: str | Path, overwrite: bool) -> Path:
    """``directory/fit.toml``, the folder made; an existing file is a FileExistsError unless
    ``overwrite`` (nothing of a user's is replaced unasked)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "fit.toml"
    if config.exists() and not overwrite:
        raise FileExistsError(f"{config} exists; pass overwrite=True (--overwrite) to replace it")
    return config


@dataclass(frozen=True)
class Imaging:
    """How a built-in example's data are taken.

    Parameters
    ----------
    n_pix : int
        Pixels along each side of the square image.
    pixel_scale : float
        Pixel size, arcsec.
    psf_fwhm : float
        FWHM of the Gaussian PSF, arcsec.
    psf_size : int
        Pixels along each side of the PSF kernel.
    noise : float
        Standard deviation of the Gaussian noise per pixel.
    """

    n_pix: int
    pixel_scale: float
    psf_fwhm: float
    psf_size: int
    noise: float


def simulate_example_files(
    directory: str | Path,
    tracer: Tracer,
    imaging: Imaging,
    *,
    seed: int,
    overwrite: bool,
) -> Path:
    """Simulate ``tracer`` as ``imaging`` says (with 4 x 4 sub-pixels, finer than any fit's)
    and write ``data.fits``, ``noise_map.fits`` and ``psf.fits`` into ``directory``; returns
    the path its ``fit.toml`` is to take (an existing one is a FileExistsError unless
    ``overwrite``). The one home of every built-in example's data."""
    config = example_config_path(directory, overwrite)
    dataset = simulate_example_dataset(tracer, imaging, seed=seed)
    from twinlens.imaging import fits_io

    for name, image in (
        ("data", dataset.data),
        ("noise_map", dataset.noise_map),
        ("psf", dataset.psf.kernel),
    ):
        fits_io.write_image(config.parent / f"{name}.fits", image, imaging.pixel_scale, overwrite)
    return config


def simulate_example_dataset(tracer: Tracer, imaging: Imaging, *, seed: int) -> ImagingData:
    """``tracer`` observed as ``imaging`` says, with 4 x 4 sub-pixels (finer than any fit's)
    and Gaussian noise seeded by ``seed``, unmasked: the data of :func:`simulate_example_files`
    (and of ``benchmarks/pixelised_bias.py``, which fits them without the FITS round trip)."""
    grid = Grid2D.uniform(imaging.n_pix, imaging.pixel_scale, 4)
    psf = PSF.gaussian(imaging.psf_fwhm, imaging.pixel_scale, imaging.psf_size)
    # a one-off image: nothing to memoise, and numpy spares a compile (half a minute cold)
    with memo.disabled():
        return simulate(tracer, grid, psf, noise_sigma=imaging.noise, seed=seed, backend="numpy")


def write_example_files(
    directory: str | Path,
    text: Callable[[dict], str],
    default_search: dict,
    *,
    seed: int,
    search: dict | None,
    overwrite: bool,
    scene: tuple[Tracer, Imaging] | None = None,
) -> Path:
    """Write a built-in example into ``directory``; the one home of the example writers.

    Parameters
    ----------
    directory : str or Path
        The folder (made if missing).
    text : callable
        ``fit.toml``'s text for the ``[search]`` settings it is given.
    default_search : dict
        The nautilus settings used when ``search`` is None (with ``seed``).
    seed : int
        Seeds the simulated noise and the default search.
    search : dict or None
        The ``[search]`` table (its ``name`` included), or None for the default.
    overwrite : bool
        Replace an existing ``fit.toml`` (else a FileExistsError) and FITS files.
    scene : (Tracer, Imaging) or None, default None
        The true lens and source and how they are observed: simulated into ``data.fits``,
        ``noise_map.fits`` and ``psf.fits`` (:func:`simulate_example_files`). None writes
        ``fit.toml`` alone.

    Returns
    -------
    Path
        The path of ``fit.toml``.
    """
    if scene is None:
        config = example_config_path(directory, overwrite)
    else:
        config = simulate_example_files(directory, *scene, seed=seed, overwrite=overwrite)
    search = search or {"name": "nautilus", **default_search, "seed": seed}
    config.write_text(text(search))
    return config


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
    return write_example_files(
        directory,
        lambda chosen: config_text(chosen, backend),
        EXAMPLE_SEARCH,
        seed=seed,
        search=search,
        overwrite=overwrite,
        scene=(example_tracer(), Imaging(N_PIX, PIXEL_SCALE, PSF_FWHM, PSF_SIZE, NOISE)),
    )


# -- the pixelised variant ------------------------------------------------------------------
#
# An SIE plus external shear lensing an irregular source (an elliptical Sersic and two compact
# Gaussian clumps), fitted with a pixelised source in two stages (twinlens.job.stages): a
# Delaunay mesh with one regularisation coefficient first, then an adaptive-density lattice
# whose regularisation adapts to the first stage's source (one coefficient alone biases the
# lens model of a clumpy source, docs/pixelised.rst). The likelihood is the Bayesian evidence
# of the source inversion. Coarser than the parametric example (0.1" pixels, 40 x 40) and with
# the lens centre fixed (as if measured on the lens light), so that each stage takes a few
# minutes on two cores: 6 free parameters (the lens's 5 and the regularisation coefficient).

PIX_N_PIX, PIX_PIXEL_SCALE, PIX_SUB_SIZE, PIX_NOISE, PIX_MASK_RADIUS = 40, 0.1, 2, 0.06, 1.8
PIX_PSF_FWHM, PIX_PSF_SIZE = 0.15, 7
#: How the pixelised example's data are taken.
PIXELISED_IMAGING = Imaging(PIX_N_PIX, PIX_PIXEL_SCALE, PIX_PSF_FWHM, PIX_PSF_SIZE, PIX_NOISE)
#: Overlay grid of the first stage's Delaunay mesh's vertices (those inside the mask: about
#: 200).
PIX_MESH_SHAPE = (15, 15)
#: The second stage's adaptive-density lattice.
PIX_ADAPT_SHAPE = (20, 20)
#: The second stage's prior range of lambda (log-uniform), in units of the tuned strength.
PIX_ADAPT_COEFFICIENT = (0.1, 10.0)

#: Nautilus settings of the pixelised example (``--quick``: fewer live points).
PIXELISED_SEARCH = {"n_live": 80, "n_eff": 400, "n_networks": 1}
PIXELISED_QUICK_SEARCH = {"n_live": 50, "n_eff": 200, "n_networks": 1}

#: The true lens of the pixelised example, by path (the regularisation coefficient has none).
PIXELISED_TRUTH = _lens_truth((0.02, -0.01), (0.1, 0.05), 1.0, (0.02, -0.01))

PIXELISED_PRIORS = {
    "lenses[0].mass[0].ell_comps[0]": ("uniform", [-0.4, 0.4]),
    "lenses[0].mass[0].ell_comps[1]": ("uniform", [-0.4, 0.4]),
    "lenses[0].mass[0].einstein_radius": ("uniform", [0.7, 1.4]),
    "lenses[0].mass[1].gamma_1": ("uniform", [-0.1, 0.1]),
    "lenses[0].mass[1].gamma_2": ("uniform", [-0.1, 0.1]),
    "sources[0].pixelization.regularization.coefficient": ("log_uniform", [0.01, 100.0]),
}


def pixelised_example_tracer() -> Tracer:
    """The true lens and irregular source of the pixelised example."""
    from twinlens.light import GaussianLight

    sie, shear = _lens(PIXELISED_TRUTH)
    source = (
        Sersic((0.05, 0.02), (0.1, -0.15), 0.25, 1.2, 0.6),
        GaussianLight(centre=(-0.18, 0.12), sigma=0.06, intensity=1.5),
        GaussianLight(centre=(0.2, -0.1), sigma=0.04, intensity=1.2),
    )
    return Tracer(Galaxy(mass=(sie, shear)), Galaxy(light=source))


def _free_pix(path: str) -> dict:
    kind, args = PIXELISED_PRIORS[path]
    return {kind: args}


def _pixelised_lens_lines() -> list[str]:
    sie, shear, t = "lenses[0].mass[0]", "lenses[0].mass[1]", PIXELISED_TRUTH
    pair = lambda path: _toml([_free_pix(f"{path}[0]"), _free_pix(f"{path}[1]")])  # noqa: E731
    return [
        "[[lens]]",
        "[[lens.mass]]",
        'type = "SIE"',
        f"centre = {_toml([t[f'{sie}.centre[0]'], t[f'{sie}.centre[1]']])}  # from the lens light",
        f"ell_comps = {pair(f'{sie}.ell_comps')}",
        f"einstein_radius = {_toml(_free_pix(f'{sie}.einstein_radius'))}",
        "[[lens.mass]]",
        'type = "ExternalShear"',
        f"gamma_1 = {_toml(_free_pix(f'{shear}.gamma_1'))}",
        f"gamma_2 = {_toml(_free_pix(f'{shear}.gamma_2'))}",
        "",
        "[[source]]",
        "[[source.light]]  # the source reconstructed on a mesh; the likelihood is the evidence",
        'type = "Pixelization"',
    ]


def pixelised_stage1_text(search: dict, backend: str, output: str = "stage1_output") -> str:
    """The pixelised example's ``stage1.toml``: a Delaunay mesh with one regularisation
    coefficient, whose fit gives the second stage its adapt image."""
    coefficient = _free_pix("sources[0].pixelization.regularization.coefficient")
    lines = [
        *_pixelised_lens_lines(),
        f'mesh = {{type = "Delaunay", shape = {_toml(list(PIX_MESH_SHAPE))}}}',
        f'regularization = {{type = "Constant", coefficient = {_toml(coefficient)}}}',
    ]
    title = "twinlens example, stage 1: SIE + shear, irregular source on a Delaunay mesh"
    return config_document(title, backend, output, search, lines, (PIX_SUB_SIZE, PIX_MASK_RADIUS))


def pixelised_config_text(search: dict, backend: str, output: str = "fit_output") -> str:
    """The pixelised example's ``fit.toml``: an adaptive-density lattice whose regularisation
    adapts to the fit of ``stage1.toml`` (run first, :mod:`twinlens.job.stages`)."""
    coefficient = _toml({"log_uniform": list(PIX_ADAPT_COEFFICIENT)})
    lines = [
        *_pixelised_lens_lines(),
        f'mesh = {{type = "RectangularAdaptDensity", shape = {_toml(list(PIX_ADAPT_SHAPE))}}}',
        "# weights from stage1.toml's source (fitted first when it has not been), tuned by the",
        "# evidence; lambda = 1 is the tuned regularisation, free within a decade of it",
        f'regularization = {{type = "AdaptiveBrightness", coefficient = {coefficient}, '
        'adapt = "stage1.toml"}',
    ]
    title = "twinlens example: SIE + shear, irregular source, adaptive pixelised source"
    return config_document(title, backend, output, search, lines, (PIX_SUB_SIZE, PIX_MASK_RADIUS))


def write_pixelised_example(
    directory: str | Path,
    *,
    seed: int = 1,
    search: dict | None = None,
    backend: str = "numba",
    overwrite: bool = False,
    scene: tuple[Tracer, Imaging] | None = None,
) -> Path:
    """Simulate the pixelised example into ``directory`` and write the ``fit.toml`` that fits
    it with a pixelised source in two stages (and ``stage1.toml``, its first); returns the
    path of ``fit.toml``. ``scene`` replaces the example's lens, source and noise with others
    fitted the same way (``benchmarks/pixelised_calibration.py``; the lens centre stays the
    example's, fixed in the configuration)."""
    stage1 = Path(directory) / "stage1.toml"
    if stage1.exists() and not overwrite:
        raise FileExistsError(f"{stage1} exists; pass overwrite=True (--overwrite) to replace it")
    path = write_example_files(
        directory,
        lambda chosen: pixelised_config_text(chosen, backend),
        PIXELISED_SEARCH,
        seed=seed,
        search=search,
        overwrite=overwrite,
        scene=scene or (pixelised_example_tracer(), PIXELISED_IMAGING),
    )
    chosen = search or {"name": "nautilus", **PIXELISED_SEARCH, "seed": seed}
    stage1.write_text(pixelised_stage1_text(chosen, backend))
    return path

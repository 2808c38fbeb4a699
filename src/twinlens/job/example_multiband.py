"""The multi-band example: the parametric example's lens seen in two bands.

Like HST's F814W and F160W: 0.05" pixels with a narrow PSF (FWHM 0.08"), and 0.13" pixels with
a broad one (0.18"). The lens galaxy is red (four times brighter in F160W than in F814W), its
source bluer (a little brighter in F814W) and a little larger in the red band (a colour
gradient: its effective radius is 0.3" in F814W, 0.36" in F160W). ``fit.toml`` fits both bands
at once (:class:`~twinlens.likelihood.MultiBandLikelihood`): the lens and the source's shape shared,
each band's intensities solved on their own, and the source's F160W effective radius free for
that band alone. 14 free parameters.
"""

from __future__ import annotations

from pathlib import Path

from twinlens.job.example import (
    EXAMPLE_SEARCH,
    QUICK_SEARCH,
    TRUTH,
    Imaging,
    _toml,
    config_document,
    example_config_path,
    example_tracer,
    model_lines,
    simulate_example_files,
)
from twinlens.model.paths import set_paths

__all__ = [
    "BANDS",
    "MULTIBAND_QUICK_SEARCH",
    "MULTIBAND_SEARCH",
    "MULTIBAND_TRUTH",
    "write_multiband_example",
]

#: How each band is taken: pixels and scale chosen so both cover about 4" (80 x 0.05",
#: 31 x 0.13"), PSF kernels reaching 6 sigma.
BANDS = {
    "F814W": Imaging(80, 0.05, 0.08, 9, 0.08),
    "F160W": Imaging(31, 0.13, 0.18, 5, 0.02),
}
#: Each band's (source intensity, lens-light intensity, source effective radius). The noise
#: and intensities make each band carry a comparable share of the information on the lens
#: (the larger F160W pixels collect more light each: less noise per pixel).
BAND_LIGHT = {"F814W": (0.25, 0.1, 0.3), "F160W": (0.2, 0.4, 0.36)}
SUB_SIZE, MASK_RADIUS = 2, 1.8
#: The source's effective radius in F160W, free for that band alone.
OWN = "sources[0].light[0].effective_radius"
OWN_PRIOR = {"log_uniform": [0.02, 2.0]}

MULTIBAND_TRUTH = {**TRUTH, f"band.F160W.{OWN}": BAND_LIGHT["F160W"][2]}
MULTIBAND_SEARCH = dict(EXAMPLE_SEARCH)
MULTIBAND_QUICK_SEARCH = dict(QUICK_SEARCH)


def _band_table(name: str) -> list[str]:
    lines = [
        "[[dataset]]",
        f'name = "{name}"',
        f'data = "{name}/data.fits"',
        f'noise_map = "{name}/noise_map.fits"',
        f'psf = "{name}/psf.fits"',
        f"sub_size = {SUB_SIZE}",
        f"mask_radius = {MASK_RADIUS}",
    ]
    if name == "F160W":
        lines.append(f'own = {{"{OWN}" = {_toml(OWN_PRIOR)}}}  # a colour gradient')
    return [*lines, ""]


def multiband_config_text(search: dict, backend: str, output: str = "fit_output") -> str:
    """The multi-band example's ``fit.toml``."""
    title = "twinlens example: one lens in two bands (F814W-like and F160W-like)"
    bands = tuple(line for name in BANDS for line in _band_table(name))
    return config_document(title, backend, output, search, model_lines(), None, bands=bands)


def write_multiband_example(
    directory: str | Path,
    *,
    seed: int = 1,
    search: dict | None = None,
    backend: str = "numba",
    overwrite: bool = False,
) -> Path:
    """Simulate both bands into ``directory/<band>/`` (``data.fits``, ``noise_map.fits``,
    ``psf.fits``) and write the ``fit.toml`` that fits them; returns its path."""
    config = example_config_path(directory, overwrite)
    for i, (name, imaging) in enumerate(BANDS.items()):
        source, lens, radius = BAND_LIGHT[name]
        tracer = set_paths(example_tracer(source, lens), {OWN: radius})
        simulate_example_files(
            config.parent / name, tracer, imaging, seed=seed + 100 * i, overwrite=overwrite
        )
    search = search or {"name": "nautilus", **MULTIBAND_SEARCH, "seed": seed}
    config.write_text(multiband_config_text(search, backend))
    return config

"""twinlens: strong gravitational lensing with the same answers on numba and JAX.

``import twinlens`` imports neither jax nor numba and compiles nothing; each backend is
loaded the first time a call asks for it.
"""

from twinlens.backend import (
    BACKENDS,
    get_backend,
    get_num_threads,
    resolve_backend,
    set_backend,
    set_num_threads,
)
from twinlens.fields import ValueIdentity, static_field

__version__ = "0.1.0"

# imaging names, imported on first use (PEP 562) so that ``import twinlens`` stays light
_LAZY = {
    "Grid2D": "twinlens.grids",
    "Grid2DIrregular": "twinlens.grids",
    "PSF": "twinlens.imaging.psf",
    "Imaging": "twinlens.imaging.dataset",
    "simulate": "twinlens.imaging.dataset",
    "Galaxy": "twinlens.lensing.tracer",
    "Tracer": "twinlens.lensing.tracer",
    "MultiPlaneTracer": "twinlens.lensing.multiplane",
    "FitImaging": "twinlens.likelihood.imaging",
    "ImagingLikelihood": "twinlens.likelihood.batched",
    "ImageSolver": "twinlens.lensing.lens_equation",
    "Images": "twinlens.lensing.lens_equation",
    "solve_lens_equation": "twinlens.lensing.lens_equation",
    "fermat_potential": "twinlens.lensing.point_sources",
    "arrival_times": "twinlens.lensing.point_sources",
    "time_delays": "twinlens.lensing.point_sources",
    "lens_distances": "twinlens.cosmology",
    "time_delay_distance": "twinlens.cosmology",
}


# subpackages reachable as attributes (``twinlens.mass.SIE``) without importing them by hand
_SUBMODULES = frozenset(
    {"mass", "light", "special", "convert", "export", "kernels", "grids", "memo"}
    | {"imaging", "lensing", "inversion", "likelihood"}
    | {"model", "search", "catalogue", "cosmology"}
)


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"twinlens.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'twinlens' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "BACKENDS",
    "PSF",
    "FitImaging",
    "Galaxy",
    "Grid2D",
    "Grid2DIrregular",
    "ImageSolver",
    "Images",
    "Imaging",
    "ImagingLikelihood",
    "MultiPlaneTracer",
    "Tracer",
    "ValueIdentity",
    "__version__",
    "arrival_times",
    "fermat_potential",
    "get_backend",
    "get_num_threads",
    "lens_distances",
    "resolve_backend",
    "set_backend",
    "set_num_threads",
    "simulate",
    "solve_lens_equation",
    "static_field",
    "time_delay_distance",
    "time_delays",
]

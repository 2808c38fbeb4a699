"""The math of twinlens as plain functions on plain arrays, and the registry of kernels.

Each module holds per-point functions that can be called directly on numpy arrays, e.g.
``twinlens.kernels.geometry.to_profile_frame(x, y, 0.1, 0.0, 0.5)``, and registers them as
:class:`~twinlens.kernels.registry.Kernel` objects that run on every backend::

    from twinlens.kernels import registry
    xr, yr = registry.get("geometry.to_profile_frame")(x, y, 0.1, 0.0, 0.5, backend="numba")
"""

from twinlens.kernels import ellipticity, faddeeva, gaussian, geometry, mge  # noqa: F401  (registers kernels)
from twinlens.kernels.registry import Kernel, all_kernels, get, register

__all__ = ["Kernel", "all_kernels", "get", "register"]

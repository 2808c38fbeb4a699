"""The math of twinlens as plain functions on plain arrays, and the registry of kernels.

Each module holds per-point functions that can be called directly on numpy arrays, e.g.
``twinlens.kernels.geometry.to_profile_frame(x, y, 0.1, 0.0, 0.5)``, and registers them as
:class:`~twinlens.kernels.registry.Kernel` objects that run on every backend::

    from twinlens.kernels import registry
    xr, yr = registry.get("geometry.to_profile_frame")(x, y, 0.1, 0.0, 0.5, backend="numba")
"""

# importing a kernel module registers its kernels
from twinlens.kernels import (
    ellipticity,  # noqa: F401
    faddeeva,  # noqa: F401
    gaussian,  # noqa: F401
    geometry,  # noqa: F401
    isothermal,  # noqa: F401
    light,  # noqa: F401
    mge,  # noqa: F401
    multipole,  # noqa: F401
    nfw,  # noqa: F401
    point_mass,  # noqa: F401
    power_law,  # noqa: F401
    shear,  # noqa: F401
    sheet,  # noqa: F401
)
from twinlens.kernels.registry import Kernel, all_kernels, get, register

__all__ = ["Kernel", "all_kernels", "get", "register"]

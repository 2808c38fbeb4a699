"""The math of twinlens as plain functions on plain arrays, and the kernels built from them.

Each module holds per-point functions that can be called directly on numpy arrays, e.g.
``twinlens.kernels.geometry.to_profile_frame(x, y, 0.1, 0.0, 0.5)``, and exports them as
:class:`~twinlens.kernels.registry.Kernel` constants that run on every backend::

    from twinlens.kernels.geometry import TO_PROFILE_FRAME
    xr, yr = TO_PROFILE_FRAME(x, y, 0.1, 0.0, 0.5, backend="numba")

Every module of this package is imported here, which registers its kernels for listings
(``twinlens validate``, the agreement tests): a new kernel file needs no line in this file.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

from twinlens.kernels.registry import Kernel, KernelCall, all_kernels, get, register  # noqa: E402

__all__ = ["Kernel", "KernelCall", "all_kernels", "get", "register"]

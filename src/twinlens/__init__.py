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

__all__ = [
    "BACKENDS",
    "ValueIdentity",
    "__version__",
    "get_backend",
    "get_num_threads",
    "resolve_backend",
    "set_backend",
    "set_num_threads",
    "static_field",
]

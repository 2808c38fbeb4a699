"""Everything a new profile needs, in one public module.

A profile is three pieces (``docs/contributing.rst`` walks through them with the Plummer lens
of ``docs/examples/plummer.py``, which imports only from here and the public API):

1. its math for one point, written with the elementary functions of :data:`ops`
   (``ops.sqrt``, ``ops.log``, ``ops.where``, ...) so that one source runs on numpy, numba
   and JAX;
2. its kernels: :func:`register` binds the point function to its inputs and parameters
   (:class:`Arg`, each with the :class:`Domain` the agreement tests draw from) and to the
   :class:`Tolerance` the backends must agree within, and returns the :class:`Kernel`;
3. its class: a frozen dataclass subclassing :class:`MassProfile` or :class:`LightProfile`,
   whose ``__post_init__`` checks each field (:func:`check_positive`, :func:`check_pair`,
   ...: a bad value raises an error naming the field and the allowed range) and whose
   ``kernel_call`` returns a :class:`KernelCall` (the kernel constant and the fields it takes).
"""

from __future__ import annotations

from twinlens.kernels import ops
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.registry import Kernel, KernelCall, register
from twinlens.kernels.tolerance import Tolerance
from twinlens.light import LightProfile
from twinlens.mass import MassProfile
from twinlens.profiles.checks import (
    check_axis_ratio,
    check_count,
    check_ellipticity,
    check_finite,
    check_non_negative,
    check_pair,
    check_positive,
    check_range,
)

__all__ = [
    "Arg",
    "Domain",
    "Kernel",
    "KernelCall",
    "LightProfile",
    "MassProfile",
    "Tolerance",
    "check_axis_ratio",
    "check_count",
    "check_ellipticity",
    "check_finite",
    "check_non_negative",
    "check_pair",
    "check_positive",
    "check_range",
    "ops",
    "register",
]

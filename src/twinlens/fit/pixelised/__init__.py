"""Pixelised source reconstruction: meshes, regularisation, the linear inversion and the
Bayesian evidence, on the numpy, numba and JAX backends.

See :doc:`/pixelised` for the method. The modules, in the order an evaluation uses them:

* :mod:`~twinlens.fit.pixelised.border`: relocation of sub-pixels traced beyond the mask's
  border;
* :mod:`~twinlens.fit.pixelised.meshes` (with :mod:`~twinlens.fit.pixelised.interpolation`
  and :mod:`~twinlens.fit.pixelised.triangulation`): rectangular (uniform or adaptive) and
  Delaunay meshes, whose image-plane vertices :mod:`~twinlens.fit.pixelised.image_mesh` may
  place by brightness;
* :mod:`~twinlens.fit.pixelised.mapping`: the mapping matrix, binned and blurred;
* :mod:`~twinlens.fit.pixelised.regularization`: constant, curvature and adaptive-brightness
  regularisation;
* :mod:`~twinlens.fit.pixelised.inversion`: the solve and the log-evidence;
* :mod:`~twinlens.fit.pixelised.fit`: all of it for a lens model and a dataset.
"""

from twinlens.fit.pixelised.fit import FitPixelised, Pixelization, log_evidence
from twinlens.fit.pixelised.image_mesh import kmeans_vertices
from twinlens.fit.pixelised.meshes import Delaunay, Rectangular, RectangularAdaptDensity
from twinlens.fit.pixelised.regularization import (
    AdaptiveBrightness,
    Constant,
    Curvature,
    adaptive_weights,
)

__all__ = [
    "AdaptiveBrightness",
    "Constant",
    "Curvature",
    "Delaunay",
    "FitPixelised",
    "Pixelization",
    "Rectangular",
    "RectangularAdaptDensity",
    "adaptive_weights",
    "kmeans_vertices",
    "log_evidence",
]

"""Pixelised source reconstruction: meshes, regularisation, the linear inversion and the
Bayesian evidence, on the numpy, numba and JAX backends.

See :doc:`/pixelised` for the method. The modules, in the order an evaluation uses them:

* :mod:`~twinlens.inversion.border`: relocation of sub-pixels traced beyond the mask's
  border;
* :mod:`~twinlens.inversion.meshes` (with :mod:`~twinlens.inversion.interpolation`
  and :mod:`~twinlens.inversion.triangulation`): rectangular (uniform or adaptive) and
  Delaunay meshes, whose image-plane vertices :mod:`~twinlens.inversion.image_mesh` may
  place by brightness;
* :mod:`~twinlens.inversion.mapping`: the mapping matrix, binned and blurred;
* :mod:`~twinlens.inversion.regularization`: constant, curvature and adaptive-brightness
  regularisation;
* :mod:`~twinlens.inversion.solve`: the solve and the log-evidence;
* :mod:`~twinlens.inversion.pixelization`: all of it for a lens model and a dataset;
* :mod:`~twinlens.inversion.adapt`: a previous fit's adapt image, made into the next fit's
  mesh and regularisation.
"""

from twinlens.inversion.adapt import adapt_image, adapt_signal, adaptive_pixelization
from twinlens.inversion.image_mesh import kmeans_vertices
from twinlens.inversion.meshes import Delaunay, Rectangular, RectangularAdaptDensity
from twinlens.inversion.pixelization import FitPixelised, Pixelization, log_evidence
from twinlens.inversion.regularization import (
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
    "adapt_image",
    "adapt_signal",
    "adaptive_pixelization",
    "adaptive_weights",
    "kmeans_vertices",
    "log_evidence",
]

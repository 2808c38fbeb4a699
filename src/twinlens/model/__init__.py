"""Models to fit: free and fixed parameters, priors, and vectors to instances."""

from twinlens.model.model import Model, latex_label, path_from_latex_label
from twinlens.model.paths import get_path, parameter_paths, set_paths
from twinlens.model.priors import (
    GaussianPrior,
    LogUniformPrior,
    Prior,
    SampledPrior,
    TruncatedGaussianPrior,
    UniformPrior,
)

__all__ = [
    "GaussianPrior",
    "LogUniformPrior",
    "Model",
    "Prior",
    "SampledPrior",
    "TruncatedGaussianPrior",
    "UniformPrior",
    "get_path",
    "latex_label",
    "parameter_paths",
    "path_from_latex_label",
    "set_paths",
]

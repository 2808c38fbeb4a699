"""Batched evaluation: log-likelihoods of many parameter vectors in one call."""

from twinlens.likelihood.batched import ImagingLikelihood, default_memory_budget
from twinlens.likelihood.multiband import MultiBandLikelihood

__all__ = ["ImagingLikelihood", "MultiBandLikelihood", "default_memory_budget"]

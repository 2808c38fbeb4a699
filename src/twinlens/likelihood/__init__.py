"""Batched evaluation: log-likelihoods of many parameter vectors in one call."""

from twinlens.likelihood.batched import ImagingLikelihood, default_memory_budget

__all__ = ["ImagingLikelihood", "default_memory_budget"]

"""Datasets, PSFs, simulation and likelihoods."""

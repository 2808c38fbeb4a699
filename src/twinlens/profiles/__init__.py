"""Profiles: frozen dataclasses that bind parameters and call kernels."""

"""Sphinx configuration for the twinlens docs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "src"))

project = "twinlens"
author = "the twinlens developers"
copyright = "2026, the twinlens developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
exclude_patterns = ["_build", "examples"]
html_theme = "alabaster"
nitpicky = False

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
# napoleon makes the shape names in numpy-style types ("int array (n_pixels,)") into
# cross-references; a shape name that is also an attribute of two classes (Grid2D.n_pixels,
# Rectangular.n_pixels) is then an ambiguous reference. Shapes are not references: quiet them.
suppress_warnings = ["ref.python"]

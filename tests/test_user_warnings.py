"""Warnings point at the user's line, however deep in the package they are raised."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.point_images import PointImages
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE
from twinlens.user_warnings import warn_user


def test_a_warning_from_deep_inside_points_at_the_callers_line():
    grid = Grid2D.uniform(20, 0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PointImages([(0.13, 0.02)]).images(grid, PSF.gaussian(0.15, 0.1, 7))  # undersampled
    assert [w.filename for w in caught] == [__file__]
    assert "the PSF is undersampled" in str(caught[0].message)


def test_warn_user_called_from_outside_the_package_is_this_line():
    with pytest.warns(RuntimeWarning, match="here") as caught:
        warn_user("here")
    assert caught[0].filename == __file__


def test_a_fit_with_an_undersampled_psf_warns_at_the_fits_line():
    # FitImaging -> point_images_for -> _warn_if_undersampled: three levels in the package
    grid = Grid2D.uniform(20, 0.1)
    psf = PSF.gaussian(0.15, 0.1, 7)
    dataset = Imaging(np.zeros((20, 20)), np.full((20, 20), 0.1), psf, grid)
    model = Tracer(Galaxy(mass=SIE((0.0, 0.0), (0.0, 0.0), 0.5)), Galaxy())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FitImaging(dataset, model, "numpy", PointImages([(0.13, 0.02)]))
    undersampled = [w for w in caught if "undersampled" in str(w.message)]
    assert undersampled and all(w.filename == __file__ for w in undersampled)


def test_a_warning_raised_in_generated_code_points_past_it():
    # a dataclass's generated __init__ has no file ("<string>") but runs in its class's module
    # (e.g. a likelihood whose __post_init__ checks the PSF): made here the same way
    import twinlens.imaging.point_images as module

    namespace: dict = {}
    source = "def __init__(psf):\n    _warn_if_undersampled(psf)\n"
    exec(compile(source, "<string>", "exec"), dict(vars(module)), namespace)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace["__init__"](PSF.gaussian(0.15, 0.1, 7))
    assert [w.filename for w in caught] == [__file__]


def test_a_warning_under_a_cached_property_points_past_functools():
    # functools.cached_property's __get__ is a Python frame between the user's line and ours
    import functools

    import twinlens.imaging.point_images as module

    namespace: dict = {}
    source = (
        "class Holder:\n"
        "    @functools.cached_property\n"
        "    def columns(self):\n"
        "        _warn_if_undersampled(PSF.gaussian(0.15, 0.1, 7))\n"
        "        return 1\n"
    )
    exec(source, {**vars(module), "functools": functools, "PSF": PSF}, namespace)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert namespace["Holder"]().columns == 1
    assert [w.filename for w in caught] == [__file__]

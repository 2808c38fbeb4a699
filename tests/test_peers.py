"""Our deflections against lenstronomy's, computed in the test (``tox -e peers``).

Both are closed forms through the Faddeeva function (lenstronomy with scipy's), so they must
agree to 1e-12 relative on the design's W1 and W2 workloads.
"""

from __future__ import annotations

import numpy as np
import pytest

from twinlens import convert
from twinlens.mass import MGE, Gaussian

pytestmark = pytest.mark.peers

GRID = np.linspace(-5, 5, 100)
XY = np.stack(np.meshgrid(GRID, GRID), axis=-1).reshape(-1, 2)
W1 = Gaussian.from_axis_ratio(q=0.7, angle=30.0, centre=(0.05, -0.02), sigma=0.5, intensity=1.0)
W2 = MGE.from_axis_ratio(np.geomspace(0.01, 5.0, 30), np.ones(30), q=0.7, angle=30.0)


@pytest.mark.parametrize(("label", "profile"), [("W1", W1), ("W2", W2)])
@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_deflections_match_lenstronomy(label, profile, backend):
    from lenstronomy.LensModel.lens_model import LensModel  # installed by tox -e peers

    name, kwargs = convert.to_lenstronomy(profile)
    model = LensModel([name])
    ax, ay = model.alpha(XY[:, 0], XY[:, 1], [kwargs])
    ref = np.stack([ax, ay], axis=-1)
    ours = np.asarray(profile.deflections(XY, backend=backend))
    err = np.linalg.norm(ours - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert np.max(err) < 1e-12, (label, float(np.max(err)))

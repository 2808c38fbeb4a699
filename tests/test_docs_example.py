"""The contributor guide's example works as the guide says."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from twinlens.backend import jax_runtime
from twinlens.validate import validate_kernel

sys.path.insert(0, str(Path(__file__).parents[1] / "docs" / "examples"))
plummer = importlib.import_module("plummer")
PLUMMER_DEFLECTIONS, Plummer = plummer.PLUMMER_DEFLECTIONS, plummer.Plummer


def test_example_kernel_validates_on_every_backend():
    rows = validate_kernel(PLUMMER_DEFLECTIONS, ["numpy", "numba", "jax"], n_points=64)
    assert rows and all(r.passed for r in rows), rows


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_example_profile_matches_closed_form_and_mass_inside_radius(backend):
    p = Plummer(theta_e=1.2, core=0.3, centre=(0.1, -0.2))
    xy = np.array([[1.1, -0.2], [0.1, 0.8], [0.1, -0.2]])
    alpha = np.asarray(p.deflections(xy, backend=backend))
    # on the x axis through the centre, r = 1: alpha = theta_E^2 r / (r^2 + a^2)
    assert alpha[0, 0] == pytest.approx(1.44 / 1.09, rel=1e-14)
    assert alpha[1, 1] == pytest.approx(1.44 / 1.09, rel=1e-14)
    np.testing.assert_array_equal(alpha[2], [0.0, 0.0])


def test_example_profile_guards_and_identity():
    with pytest.raises(ValueError, match="core must be > 0"):
        Plummer(theta_e=1.0, core=0.0)
    assert Plummer(1.0, 0.2) == Plummer(1.0, 0.2)
    jax = jax_runtime.load()
    grad = jax.grad(lambda c: Plummer(1.0, c).deflections(np.array([[1.0, 0.0]]))[0, 0])(0.5)
    # d/da [1 / (1 + a^2)] = -2a / (1 + a^2)^2
    assert float(grad) == pytest.approx(-1.0 / 1.25**2, rel=1e-13)


def test_imaging_quickstart_runs_and_backends_agree():
    quickstart = importlib.import_module("imaging_quickstart")
    out = quickstart.main(n_pix=30)
    numba_fit, jax_fit = out["fits"]["numba"], out["fits"]["jax"]
    assert float(numba_fit.log_likelihood) == pytest.approx(
        float(jax_fit.log_likelihood), rel=1e-10
    )
    # the simulated source intensity is recovered within the noise
    assert float(np.asarray(numba_fit.intensities)[0]) == pytest.approx(0.35, rel=0.05)
    np.testing.assert_allclose(out["batch"]["numba"], out["batch"]["jax"], rtol=1e-10)
    assert out["batch"]["numba"][2] == -np.inf  # a negative Einstein radius
    assert out["batch"]["numba"][0] == pytest.approx(float(numba_fit.log_likelihood), rel=1e-12)
    # the FITS round trip keeps the data exactly and reads the pixel scale from the header
    again, dataset = out["again"], out["dataset"]
    np.testing.assert_array_equal(again.data, dataset.data)
    assert again.grid.pixel_scale == dataset.grid.pixel_scale

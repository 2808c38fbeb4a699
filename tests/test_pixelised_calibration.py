"""Staged pixelised fits are calibrated (slow: about half an hour on 2 cores).

Twelve simulated lenses with irregular sources (a random Sersic and one to three clumps of
random size, place and brightness, at a random noise level), each fitted as the built-in
pixelised example is (two stages through the fit job, nautilus at the example's settings):
the truths fall inside the 68% and 95% intervals as often as those levels say, within two
binomial standard errors pooled over the five lens parameters, and no parameter's mean offset
exceeds half a sigma. The truths are the simulation's; ``benchmarks/pixelised_calibration.py``
does the simulating and scoring, and its larger run is in ``docs/pixelised.rst``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from twinlens.job import example


def _benchmark():
    path = Path(__file__).parents[1] / "benchmarks" / "pixelised_calibration.py"
    spec = importlib.util.spec_from_file_location("pixelised_calibration", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_staged_pixelised_fits_cover_their_truths(tmp_path):
    bench = _benchmark()
    search = {"name": "nautilus", **example.PIXELISED_SEARCH}
    result = bench.calibrate(12, tmp_path, search)
    print(bench.table(result))
    for level in (68, 95):
        error = result[f"coverage{level}_expected_error"]
        assert abs(result[f"coverage{level}"] - level / 100) < 2 * error, bench.table(result)
    for path, offset in result["offsets"].items():
        assert abs(offset["mean"]) < 0.5, (path, bench.table(result))

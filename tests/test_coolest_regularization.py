"""A pixelised source's regularisation reaches the COOLEST file where the standard keeps it:
a ``regularizations`` entry of COOLEST's own type for our scheme (``PixelGradient`` for
``Constant``, ``PixelCurvature`` for ``Curvature``, the code-specific
``DefaultForPixelated`` otherwise), applied to the source's pixelated profile by its id, with
``lambda`` as a parameter: point estimate, posterior statistics and prior. Read back through
COOLEST's own reader, it rebuilds the same scheme and coefficient."""

from __future__ import annotations

import json

import numpy as np
import pytest

from twinlens.export import to_coolest
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import (
    AdaptiveBrightness,
    Constant,
    Curvature,
    Delaunay,
    Pixelization,
    Rectangular,
)
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.likelihood.imaging import FitImaging
from twinlens.mass import SIE
from twinlens.model import LogUniformPrior, UniformPrior

LAMBDA = "sources[0].pixelization.regularization.coefficient"

#: COOLEST's types (coolest.template.classes.regularizations.pixelated) for our schemes
COOLEST_TYPE = {Constant: "PixelGradient", Curvature: "PixelCurvature"}


def _pixelised(scheme, mesh):
    mass = (SIE((0.02, -0.01), (0.1, 0.05), 1.0),)
    grid = Grid2D.uniform(16, 0.15, sub_size=1).circular_mask(1.1)
    psf = PSF.gaussian(fwhm=0.15, pixel_scale=0.15, shape=3)
    truth = Tracer(Galaxy(mass=mass), Galaxy(light=Sersic((0.05, 0.02), (0.1, -0.1), 0.25, 1.2)))
    data = simulate(truth, grid, psf, noise_sigma=0.03, seed=4, backend="numpy")
    tracer = Tracer(Galaxy(mass=mass), Galaxy(light=Pixelization(mesh, scheme)))
    return tracer, data, FitImaging(data, tracer, "numpy").pixelised


def _read(path):
    """The document as COOLEST's reader gives it: its object (validated, which a key it does
    not know must not upset) and its plain JSON, where the regularisation is."""
    from coolest.template.json import JSONSerializer

    serializer = JSONSerializer(str(path.with_suffix("")), check_external_files=False)
    serializer.load_simple(str(path), as_object=True, validate=True)
    return serializer.load_simple(str(path), as_object=False)


@pytest.mark.parametrize(
    ("scheme", "mesh"),
    [(Constant(2.5), Delaunay((6, 6))), (Curvature(0.4), Rectangular((7, 7)))],
    ids=["constant", "curvature"],
)
def test_the_regularisation_round_trips_through_coolest(tmp_path, scheme, mesh):
    tracer, data, reconstruction = _pixelised(scheme, mesh)
    samples = np.random.default_rng(2).lognormal(np.log(scheme.coefficient), 0.2, 400)
    path = to_coolest(
        tracer,
        tmp_path / "pix.json",
        dataset=data,
        reconstruction=reconstruction,
        posterior={LAMBDA: samples},
        priors={LAMBDA: UniformPrior(0.01, 10.0)},
    )
    document = _read(path)
    (source,) = document["lensing_entities"][-1]["light_model"]
    (regularization,) = document["regularizations"]
    assert regularization["applied_to_profile_id"] == source["id"]
    lam = regularization["parameters"]["lambda"]
    # our scheme again, from COOLEST's type and lambda
    rebuilt = {v: k for k, v in COOLEST_TYPE.items()}[regularization["type"]](
        lam["point_estimate"]["value"]
    )
    assert type(rebuilt) is type(scheme) and rebuilt.coefficient == scheme.coefficient
    stats = lam["posterior_stats"]
    p16, p50, p84 = np.percentile(samples, [16, 50, 84])
    assert (stats["percentile_16th"], stats["median"], stats["percentile_84th"]) == (
        pytest.approx(p16),
        pytest.approx(p50),
        pytest.approx(p84),
    )
    assert stats["mean"] == pytest.approx(samples.mean())
    assert lam["prior"] == {"type": "UniformPrior", "min_value": 0.01, "max_value": 10.0}
    assert lam["fixed"] is False
    meta = document["meta"]["twinlens"]["regularizations"][regularization["id"]]
    assert meta["path"] == "sources[0].pixelization.regularization"
    assert meta["type"] == type(scheme).__name__


def test_a_scheme_coolest_lacks_is_the_code_specific_one(tmp_path):
    """AdaptiveBrightness has no COOLEST type: DefaultForPixelated, our scheme named in the
    metadata; a log-uniform prior, which COOLEST lacks, is a null prior that names ours; a
    lambda the fit held is marked fixed."""
    weights = np.linspace(1.0, 4.0, 49)
    scheme = AdaptiveBrightness(1.5, pixel_weights=weights)
    tracer, _, reconstruction = _pixelised(scheme, Rectangular((7, 7)))
    logu = to_coolest(
        tracer,
        tmp_path / "logu.json",
        reconstruction=reconstruction,
        priors={LAMBDA: LogUniformPrior(0.01, 100.0)},
    )
    (regularization,) = _read(logu)["regularizations"]
    assert regularization["type"] == "DefaultForPixelated"
    lam = regularization["parameters"]["lambda"]
    assert lam["point_estimate"]["value"] == 1.5
    assert lam["prior"]["type"] is None and "LogUniformPrior" in lam["prior"]["description"]
    meta = _read(logu)["meta"]["twinlens"]["regularizations"]
    assert meta[regularization["id"]]["type"] == "AdaptiveBrightness"
    held = to_coolest(tracer, tmp_path / "held.json", reconstruction=reconstruction, priors={})
    (regularization,) = _read(held)["regularizations"]
    assert regularization["parameters"]["lambda"]["fixed"] is True


def test_a_pixelised_fit_writes_lambda_with_its_posterior(tmp_path):
    """The fit job's coolest.json: lambda's posterior statistics are its samples', as
    result.json's median and interval are, and its prior names the configuration's."""
    from twinlens.job import example
    from twinlens.job.config import load_config
    from twinlens.job.results import write_results
    from twinlens.search import SearchResult

    config = load_config(
        example.write_pixelised_example(tmp_path / "ex", search={"name": "nautilus"})
    )
    paths = config.model.paths
    truth = {**example.PIXELISED_TRUTH, LAMBDA: 1.0}
    centre = np.array([truth[p] for p in paths])
    samples = centre * (1 + 1e-3 * np.random.default_rng(3).standard_normal((12, len(paths))))
    result = SearchResult(
        name="nautilus",
        paths=paths,
        samples=samples,
        log_likelihood=np.zeros(len(samples)),
        max_likelihood=samples[0],
        max_log_likelihood=0.0,
        log_evidence=-1.0,
        log_evidence_error=None,
        n_evaluations=10,
        seed=0,
        info={"converged": True},
    )
    files = write_results(config, result, tmp_path / "out", plot=False)
    (regularization,) = _read(files["coolest"])["regularizations"]
    lam = regularization["parameters"]["lambda"]
    record = json.loads(files["json"].read_text())["parameters"][LAMBDA]
    assert lam["point_estimate"]["value"] == pytest.approx(samples[0, paths.index(LAMBDA)])
    assert lam["posterior_stats"]["median"] == pytest.approx(record["median"])
    assert lam["posterior_stats"]["percentile_16th"] == pytest.approx(record["lower_68"])
    assert lam["posterior_stats"]["percentile_84th"] == pytest.approx(record["upper_68"])
    prior = config.model.priors[paths.index(LAMBDA)][1]
    assert isinstance(prior, LogUniformPrior)  # the example's, which COOLEST lacks: named
    assert lam["prior"]["type"] is None and repr(prior) in lam["prior"]["description"]
    assert regularization["type"] == "PixelGradient"  # the example's Constant scheme

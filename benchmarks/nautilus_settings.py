"""Nautilus's settings against the time to a posterior: the built-in example's objective
(``twinlens fit --example``, 13 free parameters, numba) sampled by nautilus directly with
several settings, each printing one JSON line: wall time, likelihood evaluations, log Z, the
number of bounds, and each parameter's median and 68% half-width (equal-weight samples), so
that a faster setting can be checked for equal quality.

    python benchmarks/nautilus_settings.py [--settings JSON ...]

The default settings are the example's (150 live points, one network) and the levers tried for
issue 40: ``n_like_new_bound``, ``split_threshold``, smaller networks, fewer live points. A
setting ``"ellipsoids": "compiled"`` runs nautilus with twinlens' compiled ellipsoids
(:mod:`twinlens.search.ellipsoids`, as ``twinlens fit`` does); without it nautilus's own. The
example's data are written once into a temporary folder; ``n_eff`` is 1000, seed 1.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from twinlens.job.config import load_config
from twinlens.job.example import write_example
from twinlens.search.ellipsoids import compiled_ellipsoids

DEFAULT_SETTINGS = (
    {"n_live": 150, "n_networks": 1},
    {"n_live": 150, "n_networks": 1, "ellipsoids": "compiled"},
    {"n_live": 150, "n_networks": 1, "n_like_new_bound": 4500},
    {"n_live": 150, "n_networks": 1, "split_threshold": 10000},
    {"n_live": 150, "n_networks": 1, "neural_network_kwargs": {"hidden_layer_sizes": [32, 16]}},
    {"n_live": 100, "n_networks": 1},
)


def run(objective: object, settings: dict) -> dict:
    """One nautilus run of ``objective`` with ``settings``; its line."""
    import nautilus

    count = [0]

    def prior(u: np.ndarray) -> np.ndarray:
        return np.asarray(objective.from_unit(u), dtype=float)

    def likelihood(x: np.ndarray) -> np.ndarray:
        count[0] += len(x)
        return np.asarray(objective.log_likelihood(x), dtype=float)

    options = {k: v for k, v in settings.items() if k != "ellipsoids"}
    compiled = settings.get("ellipsoids", "nautilus") == "compiled"
    t0 = time.perf_counter()
    sampler = nautilus.Sampler(
        prior, likelihood, n_dim=objective.n_params, vectorized=True, seed=1, **options
    )
    with compiled_ellipsoids(nautilus) if compiled else nullcontext():
        sampler.run(n_eff=1000, verbose=False, f_live=0.01, discard_exploration=False)
    wall = time.perf_counter() - t0
    points = sampler.posterior(equal_weight=True)[0]
    lo, med, hi = np.percentile(points, [16, 50, 84], axis=0)
    return {
        "settings": settings,
        "wall_s": round(wall, 1),
        "n_evaluations": count[0],
        "log_z": round(float(sampler.log_z), 3),
        "n_bounds": len(sampler.bounds),
        "median": [round(float(v), 5) for v in med],
        "half_width": [round(float(v), 5) for v in (hi - lo) / 2],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", nargs="*", type=json.loads, help="JSON objects")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        objective = load_config(write_example(Path(tmp))).objective("numba")
        objective.log_likelihood(objective.start[None])  # compiles or loads the cache
        for settings in args.settings or DEFAULT_SETTINGS:
            print(json.dumps(run(objective, settings)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

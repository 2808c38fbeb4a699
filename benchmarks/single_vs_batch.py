"""Single and batched log-likelihoods of the same vectors: how far apart they are on each
backend (docs/backends.rst, "Single and batched evaluations").

Run: ``cd benchmarks && python single_vs_batch.py``. The models are those of the tests
(``tests/test_batch.py``, ``tests/test_every_parameter_free.py``); 32 vectors each.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import numpy as np
from profile_values import MASS
from test_batch import _setup, _vectors
from test_every_parameter_free import (
    SOURCE,
    _dataset,
)

from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.likelihood import ImagingLikelihood

cases = {"SIE+shear, linear Sersic, Gaussian lens light (7 free)": _setup()}
for name, path in [("GNFW", "lenses[0].mass[0].gamma"), ("PowerLaw", "lenses[0].mass[0].slope")]:
    model = Tracer(Galaxy(mass=(MASS[name],)), Galaxy(light=(SOURCE,)))
    cases[f"{name} {path.split('.')[-1]} free"] = ImagingLikelihood(_dataset(), model, (path,))
for label, like in cases.items():
    if like.n_params > 1:
        v = _vectors(like, 32, scale=0.01, seed=4)
    else:
        v = like.reference * (1 + 0.01 * np.random.default_rng(4).normal(size=(32, 1)))
    for backend in ("numba", "numpy", "jax"):
        batch = like.batch(v, backend)
        single = np.array([like(x, backend) for x in v])
        rel = np.max(np.abs(batch - single) / np.abs(single))
        same = np.array_equal(batch, single)
        print(f"{label:55s} {backend:6s} max rel. difference {rel:.2e}, identical: {same}")

"""Every built-in example starts where its likelihood is finite.

``run_fit`` warns when ``log L`` at the start vector is -inf; the shipped examples must not
trigger it (a round, unsheared lens with the source on its axis makes a ring, not the four
observed images of the time-delay and quasar examples)."""

from __future__ import annotations

import numpy as np
import pytest

from twinlens.job import example, timedelay

WRITERS = {
    "parametric": example.write_example,
    "pixelised": example.write_pixelised_example,
    "timedelay": timedelay.write_timedelay_example,
    "quasar": timedelay.write_quasar_example,
}


@pytest.mark.parametrize("name", list(WRITERS))
def test_example_starts_with_a_finite_likelihood(tmp_path, name):
    from twinlens.job.config import load_config
    from twinlens.search import Objective

    config = load_config(WRITERS[name](tmp_path, search={"name": "nautilus", "n_live": 50}))
    ps = config.point_source
    # as run_fit builds it, on the configuration's own backend
    objective = Objective.build(
        config.model, config.dataset, config.backend, None if ps is None else ps.likelihood
    )
    start = np.asarray(objective.start, dtype=float)
    assert np.all(np.isfinite(objective.log_prior(start[None, :])))
    log_l = float(np.asarray(objective.log_likelihood(start[None, :]))[0])
    at = dict(zip(objective.paths, start, strict=True))
    assert np.isfinite(log_l), f"{name}: log L = {log_l} at {at}"

"""Searches: nested sampling (nautilus, the default), MCMC (emcee), and on the JAX backend a
maximum-posterior optimiser (optax) and NUTS (blackjax).

Each search is a thin adapter over its library, which is imported only when a search runs: a
missing one gives an ImportError naming ``pip install "twinlens[fit]"``. Build an
:class:`Objective` from a model and a dataset, pick a search (by class, or by name with
:func:`search_from_config`), and run it (:meth:`~twinlens.search.base.Search.run`, the same
for every search; each search's class notes say what its result holds)::

    objective = Objective.build(model, dataset, backend="numba")
    result = Nautilus(n_live=1000, seed=1).run(objective, output_dir=Path("fit"), progress=True)
    result.medians(), result.intervals(0.68), result.log_evidence
"""

from twinlens.search.base import (
    SEARCHES,
    Objective,
    ObjectiveLike,
    Search,
    SearchResult,
    search_from_config,
)
from twinlens.search.emcee import Emcee
from twinlens.search.jax_searches import NUTS, MaximumPosterior
from twinlens.search.nautilus import Nautilus

__all__ = [
    "NUTS",
    "SEARCHES",
    "Emcee",
    "MaximumPosterior",
    "Nautilus",
    "Objective",
    "ObjectiveLike",
    "Search",
    "SearchResult",
    "search_from_config",
]

"""Fitting a whole catalogue of lenses on a Dask cluster: ``twinlens batch CATALOGUE``.

Not to be confused with :mod:`twinlens.likelihood`, which evaluates one likelihood at a batch of
parameter vectors: here each *lens* of a catalogue is one fit (the ``twinlens fit`` job), run
as one Dask task on a local cluster of worker processes, an existing scheduler, or SLURM/PBS
through dask-jobqueue. See ``docs/cluster.rst``.

:func:`load_catalogue` reads and checks a catalogue file; :func:`run_catalogue` fits its
lenses and returns the results table.
"""

from twinlens.catalogue.cluster import ClusterError, jobqueue_cluster
from twinlens.catalogue.runner import run_catalogue
from twinlens.catalogue.spec import Catalogue, CatalogueError, LensTask, load_catalogue
from twinlens.catalogue.table import build_table

__all__ = [
    "Catalogue",
    "CatalogueError",
    "ClusterError",
    "LensTask",
    "build_table",
    "jobqueue_cluster",
    "load_catalogue",
    "run_catalogue",
]

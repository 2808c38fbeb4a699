"""COOLEST export and import, in parts; users call them from :mod:`twinlens.export`.

Each module imports only the ones listed before it:

``base``
    :class:`NotDescribable`, loading the ``coolest`` package, checking a ``.json`` path.
``conventions``
    Our parameters to COOLEST's and back (angles, axis ratios, Sersic ``b_n``).
``profiles``
    Our profiles to COOLEST profiles, parameter by parameter, and the tracer's walk.
``posterior``, ``priors``
    Posterior statistics and priors of ours, as COOLEST's.
``pixels``
    The FITS files next to the JSON: the observation and a pixelised source.
``write``, ``read``
    :func:`~twinlens.export.to_coolest` and :func:`~twinlens.export.from_coolest`.
"""

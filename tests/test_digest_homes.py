"""Digests written into users' files do not change when code moves between modules.

A checkpoint's record and a finished fit's fingerprint hold digests of value-identity objects
(a PSF, a tracer, a point source), whose keys hold their classes. The classes of the old
``twinlens.fit`` and ``twinlens.batch`` packages moved to the rooms ``imaging``, ``lensing``,
``inversion`` and ``likelihood``; a digest still names each class by its first module, so a
run started before the move resumes after it.
"""

from __future__ import annotations

import hashlib

import numpy as np

from twinlens.fields import _FIRST_HOMES, value_digest, value_key
from twinlens.imaging.psf import PSF
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.mass import SIE


def _old_digest(value, old_names: dict[type, str]) -> bytes:
    """The digest as written before the move: a second implementation of the feed, naming
    each class by the text ``repr`` gave it in its old module."""
    hasher = hashlib.blake2b(digest_size=16)

    def feed(key):
        if isinstance(key, tuple):
            hasher.update(b"(%d" % len(key))
            for item in key:
                feed(item)
            hasher.update(b")")
        elif isinstance(key, bytes):
            hasher.update(b"b%d:" % len(key))
            hasher.update(key)
        else:
            text = old_names.get(key, repr(key)) if isinstance(key, type) else repr(key)
            hasher.update(b"r%d:" % len(text.encode()))
            hasher.update(text.encode())

    feed(value_key(value))
    return hasher.digest()


def test_moved_classes_keep_their_digests():
    psf = PSF.gaussian(0.1, 0.05, 11)
    old = {PSF: "<class 'twinlens.fit.psf.PSF'>"}
    assert value_digest(psf) == _old_digest(psf, old)

    tracer = Tracer(Galaxy(mass=SIE((0.0, 0.0), (0.1, 0.0), 1.0)))
    old = {
        Tracer: "<class 'twinlens.fit.tracer.Tracer'>",
        Galaxy: "<class 'twinlens.fit.tracer.Galaxy'>",
    }
    assert value_digest(tracer) == _old_digest(tracer, old)
    # a class that did not move is named by its own module
    assert SIE.__module__ not in _FIRST_HOMES


def test_every_first_home_names_a_module_that_is_gone():
    import importlib

    import pytest

    for new, old in _FIRST_HOMES.items():
        importlib.import_module(new)  # the class's home now
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)  # only digests remember it
    assert np.unique(list(_FIRST_HOMES.values())).size == len(_FIRST_HOMES)

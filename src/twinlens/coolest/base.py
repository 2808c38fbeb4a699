"""What every part of the COOLEST export and import needs: the error for what the format
cannot say, the ``coolest`` package (imported only when called) and the ``.json`` path check."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any


class NotDescribable(ValueError):
    """The model holds something COOLEST's format has no place for (a profile, a cosmology,
    a value outside COOLEST's range): the model is fine, the format cannot say it."""

    # documented and caught as twinlens.export.NotDescribable: tracebacks name it there
    __module__ = "twinlens.export"


_INSTALL = 'pip install "twinlens[fit]"'
_UNSUPPORTED_LIGHT = ("skip", "raise")


def _load_coolest() -> SimpleNamespace:
    try:
        import coolest
        from coolest.template import lazy
        from coolest.template.classes import probabilities
        from coolest.template.classes.regularizations import pixelated
        from coolest.template.json import JSONSerializer
        from coolest.template.standard import COOLEST
    except ImportError as err:
        raise ImportError(
            f"COOLEST export and import need the coolest package: {_INSTALL}"
        ) from err
    return SimpleNamespace(
        lazy=lazy,
        probabilities=probabilities,
        regularizations=pixelated,
        COOLEST=COOLEST,
        JSONSerializer=JSONSerializer,
        version=coolest.__version__,
    )


def _json_path(path: Any, must_exist: bool) -> Path:
    try:
        out = Path(os.fspath(path)).expanduser().absolute()
    except TypeError:
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__}") from None
    if out.suffix != ".json":
        raise ValueError(f"a COOLEST file is a .json file; got {str(path)!r}")
    if must_exist and not out.is_file():
        raise FileNotFoundError(f"no COOLEST file at {str(out)!r}")
    if not must_exist and not out.parent.is_dir():
        raise FileNotFoundError(f"directory {str(out.parent)!r} does not exist (for {out.name})")
    return out

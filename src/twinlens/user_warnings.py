"""Warnings attributed to the user's line.

``warnings.warn`` takes a ``stacklevel`` counted by hand, which goes stale as soon as a call
moves one level deeper in the package, and then the warning points into twinlens instead of at
the call that caused it. :func:`warn_user` counts it: the warning is attributed to the first
frame outside the package (the user's script, a test, the command line's entry point).
"""

from __future__ import annotations

import sys
import warnings
from types import FrameType


def warn_user(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """``warnings.warn(message, category)`` at the first caller outside twinlens."""
    level = 2  # the frame that called warn_user
    frame: FrameType | None = sys._getframe(1)
    # by module name, not file: a dataclass's generated __init__ has no file ("<string>") but
    # runs in its class's module; the standard library's wrappers between two of our frames (a
    # cached_property's __get__) are passed over too
    while frame is not None and _in_package(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


#: standard-library modules whose frames sit between ours (cached_property, generated methods)
_TRANSPARENT = frozenset({"functools", "dataclasses", "contextlib"})


def _in_package(module: str) -> bool:
    return module == "twinlens" or module.startswith("twinlens.") or module in _TRANSPARENT

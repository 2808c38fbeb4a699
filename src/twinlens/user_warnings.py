"""Warnings attributed to the user's line.

``warnings.warn`` takes a ``stacklevel`` counted by hand, which goes stale as soon as a call
moves one level deeper in the package, and then the warning points into twinlens instead of at
the call that caused it. :func:`warn_user` counts it: the warning is attributed to the first
frame outside the package (the user's script, a test, the command line's entry point).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep


def warn_user(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """``warnings.warn(message, category)`` at the first caller outside twinlens."""
    level = 2  # the frame that called warn_user
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)

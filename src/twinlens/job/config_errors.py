"""The error of a fit configuration, and the helpers that word its messages in the
configuration file's own (TOML) terms."""

from __future__ import annotations

import difflib
import json
from typing import Any

import numpy as np

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the entry."""


def _show(value: Any) -> str:
    """``value`` as it is written in TOML, for messages (``true``, not ``True``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + "}"
    if value is None:
        return "nothing"
    return repr(value)


def _suggest(name: Any, choices: Any) -> str:
    """`` (did you mean "x"?)`` for the closest of ``choices`` to a mistyped ``name``."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {_show(close[0])}?)" if close else ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _toml_path(message: str) -> str:
    """A message naming tracer paths (``sources[0].light``) in TOML terms (``source[0]``)."""
    return message.replace("lenses[", "lens[").replace("sources[", "source[")

"""Reading twinlens' environment variables, and the one error a bad value raises.

The variables (see docs/backends.rst and docs/memo.rst):

* ``TWINLENS_BACKEND``: the default backend, one of numba, jax, numpy;
* ``TWINLENS_JAX_X64``, ``TWINLENS_NUMBA_CACHE``, ``TWINLENS_MEMO``: switches, ``1``/``true``/
  ``yes``/``on`` or ``0``/``false``/``no``/``off``;
* ``TWINLENS_JAX_CACHE_MAX_MB``, ``TWINLENS_MEMO_MAX_MB``: megabytes, a finite number >= 0;
* ``TWINLENS_VMAP_WIDTH``: an integer >= 1;
* ``TWINLENS_MALLOC``: ``system``, or unset;
* ``TWINLENS_NAUTILUS_ELLIPSOIDS``: ``compiled`` or ``nautilus``;
* ``TWINLENS_CACHE_DIR``, ``TWINLENS_JAX_CACHE_DIR``: folders (any path).

An unset or empty variable takes its default. Any other value outside the allowed ones raises
:class:`EnvironmentVariableError`, naming the variable, its value and what is allowed: a typo
(``TWINLENS_JAX_X64=flase``) must not pass for a default.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

__all__ = ["EnvironmentVariableError", "env_choice", "env_number", "env_switch"]

_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


class EnvironmentVariableError(ValueError):
    """An environment variable twinlens reads holds a value it does not accept (the message
    names the variable, its value and the allowed values). The command line reports it as one
    line, ``error: ...``, with exit status 2."""

    def __init__(self, name: str, raw: str, allowed: str) -> None:
        super().__init__(f"environment variable {name}={raw!r}: expected {allowed}")
        self.name = name
        self.raw = raw


def _raw(name: str) -> str | None:
    """The variable's value as set; None when it is unset, empty or blank."""
    raw = os.environ.get(name)
    return raw if raw is not None and raw.strip() else None


def env_choice(name: str, choices: Sequence[str], default: str) -> str:
    """The value of ``name``, one of ``choices`` (case and surrounding spaces ignored), or
    ``default`` when unset or empty."""
    raw = _raw(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    for choice in choices:
        if value == choice.lower():
            return choice
    unset = f"unset or empty: {default}" if default else "or unset"
    raise EnvironmentVariableError(name, raw, f"one of {', '.join(choices)} ({unset})")


def env_switch(name: str, default: bool) -> bool:
    """The switch ``name``: on or off (see the module), ``default`` when unset or empty."""
    raw = _raw(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _ON or value in _OFF:
        return value in _ON
    raise EnvironmentVariableError(
        name, raw, f"one of {', '.join(_ON)} (on) or {', '.join(_OFF)} (off)"
    )


def env_number(
    name: str, default: float, minimum: float, allowed: str, *, integer: bool = False
) -> float:
    """The finite number ``name`` (an integer when ``integer``), ``>= minimum``; ``default``
    when unset or empty. ``allowed`` says what is accepted, for the error."""
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        raise EnvironmentVariableError(name, raw, allowed) from None
    if not (math.isfinite(value) and value >= minimum):
        raise EnvironmentVariableError(name, raw, allowed)
    return value

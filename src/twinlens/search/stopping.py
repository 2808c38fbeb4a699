"""Stopping a long search on request, at a safe point, without losing or corrupting its work.

A batch scheduler sends SIGTERM before it kills a job; a person presses Ctrl-C (SIGINT). Inside
:func:`stop_on_signals` the first of either only raises a flag: the search finishes the batch
in flight, writes a consistent checkpoint and raises :class:`SearchStopped`. Nothing is raised
in the middle of a library's own work (nautilus trains its networks with scikit-learn, which
swallows a ``KeyboardInterrupt`` and goes on; a checkpoint write cut short is unreadable).

A second signal stops at once without touching the checkpoint: with ``hard_exit`` (the
command line) the process exits with status ``128 + signal``; otherwise ``KeyboardInterrupt``
is raised, and raised again at the next likelihood call should a library swallow it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "EXIT_STOPPED",
    "SearchStopped",
    "raise_if_aborted",
    "stop_on_signals",
    "stop_requested",
]

#: Exit status of ``twinlens fit`` stopped by a signal at a safe point, its checkpoint written
#: (rerunning the same command resumes). 0 is success, 1 an error, 2 a usage or configuration
#: error, 128 + N a second signal N that stopped it at once.
EXIT_STOPPED = 3


class SearchStopped(Exception):
    """A search stopped on request at a safe point; its checkpoint holds all finished work."""

    def __init__(self, search: str, signal_name: str, checkpoint: Path | None, n_evaluations: int):
        self.search = search
        self.signal_name = signal_name
        self.checkpoint = checkpoint
        self.n_evaluations = n_evaluations
        where = (
            f"the checkpoint {checkpoint} holds them; run the same command again to resume"
            if checkpoint is not None
            else "no output folder was given, so nothing was kept"
        )
        super().__init__(
            f"{search} stopped by {signal_name} after {n_evaluations} likelihood evaluations; "
            f"{where}"
        )


class _State:
    requested: str | None = None  # the name of the first signal received
    aborted: bool = False  # a second signal: stop at once


_state = _State()


def stop_requested() -> str | None:
    """The name of the signal that asked the running search to stop, or None."""
    return _state.requested


def raise_if_aborted() -> None:
    """Raise ``KeyboardInterrupt`` again after a second signal (for a library that swallowed
    the first one raised); searches call it from their likelihood wrappers."""
    if _state.aborted:
        raise KeyboardInterrupt


@contextlib.contextmanager
def stop_on_signals(hard_exit: bool = False) -> Iterator[None]:
    """Turn the first SIGINT or SIGTERM into a stop request for the block's search.

    Outside the main thread signals cannot be caught, and the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if _state.requested is None:
            _state.requested = name
            print(
                f"\ntwinlens: {name} received: stopping after the batch in flight and writing "
                "the checkpoint (send it again to stop at once, without the checkpoint)",
                file=sys.stderr,
                flush=True,
            )
            return
        _state.aborted = True
        print(f"\ntwinlens: second {name}: stopping at once", file=sys.stderr, flush=True)
        if hard_exit:
            sys.stdout.flush()
            os._exit(128 + signum)
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    _state.requested, _state.aborted = None, False
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _state.requested, _state.aborted = None, False

"""Whether a finished fit still answers the run asked for, and what to do when it does not.

Every finished fit's ``result.json`` stores the fingerprint of what defined it
(:func:`~twinlens.search.checkpoint.run_record`: the search settings that shape its results,
the model and every prior, digests of the data, noise map, PSF, mask and grid, and the point
source). A rerun compares that with the fingerprint of the configuration it is given: the
same, the result stands; different (or a result with no fingerprint, from an older twinlens),
the result is *stale*: its files are kept aside in a ``.stale-<date>`` folder beside it and
the fit runs again, saying what changed. The search's checkpoint goes with them, unless the
change is one the checkpoint may continue under (``n_eff``, ``n_steps``): then the new run
goes on from where the old one stopped. Nothing is overwritten and nothing is reused
silently.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from twinlens.search.checkpoint import changed_parts, describe_changes

__all__ = [
    "RESULT",
    "Staleness",
    "checkpoint_files",
    "checkpoint_survives",
    "fingerprint_of",
    "read_result",
    "result_files",
    "set_aside",
    "staleness",
]

#: The file that marks a finished fit (written last, after every other result file).
RESULT = "result.json"
#: What a result with no fingerprint is said to be.
UNRECORDED = "its definition (no record: fitted by an older twinlens)"


class Staleness:
    """How a finished result's fingerprint differs from the current one.

    ``parts`` are the names of what changed (``prior of lenses[0].mass[0].einstein_radius``,
    ``data``, ``n_live``); ``text`` says each change with its old and new value.
    """

    def __init__(self, parts: list[str], text: str) -> None:
        self.parts, self.text = parts, text

    def __bool__(self) -> bool:
        return bool(self.parts)


def read_result(folder: Path) -> dict | None:
    """The folder's ``result.json`` as a dict, or None when there is none (or it is torn)."""
    try:
        record = json.loads((Path(folder) / RESULT).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def staleness(folder: Path, current: dict[str, Any]) -> Staleness | None:
    """None when ``folder`` holds no finished fit; else how its fingerprint differs from
    ``current`` (empty, and false, when it does not)."""
    record = read_result(folder)
    if record is None:
        return None
    stored = record.get("fingerprint")
    if not isinstance(stored, dict):
        return Staleness([UNRECORDED], UNRECORDED)
    return Staleness(changed_parts(stored, current), describe_changes(stored, current))


def stale_name(folder: Path) -> Path:
    """A new ``<folder>.stale-<date>`` path beside ``folder`` (a counter when taken)."""
    folder = Path(folder)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = folder.with_name(f"{folder.name}.stale-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = folder.with_name(f"{folder.name}.stale-{stamp}-{n}")
    return aside


def set_aside(folder: Path, names: list[str] | None = None) -> Path:
    """Keep a stale result aside: the whole ``folder`` is renamed to ``<folder>.stale-<date>``
    (``names`` None), or just the files ``names`` in it are moved into such a folder (an
    output folder that may hold a user's own files too). Returns the new folder."""
    folder = Path(folder)
    aside = stale_name(folder)
    if names is None:
        os.rename(folder, aside)
        return aside
    aside.mkdir()
    for name in names:
        source = folder / name
        if source.exists():
            os.replace(source, aside / name)
    return aside


def checkpoint_files(folder: Path) -> list[str]:
    """The names of the checkpoint files of the search that wrote ``folder``'s result."""
    search = str((read_result(folder) or {}).get("search", ""))
    suffixes = (".hdf5", ".backup.hdf5", ".work.hdf5", ".json")
    return [f"{search}{suffix}" for suffix in suffixes] if search else []


def checkpoint_survives(folder: Path, changed: Staleness) -> bool:
    """Whether the search's checkpoint in ``folder`` still belongs to the changed run: every
    changed part is one its record is not keyed on (``n_eff``, ``n_steps``: a finished run
    asked for more samples goes on from where it stopped)."""
    names = [n for n in checkpoint_files(folder) if n.endswith(".json")]
    try:
        keys = json.loads((Path(folder) / names[0]).read_text()) if names else None
    except (OSError, ValueError):
        keys = None
    return isinstance(keys, dict) and not any(part in keys for part in changed.parts)


def result_files(folder: Path) -> list[str]:
    """The names of a finished fit's result files in ``folder`` (those its ``result.json``
    lists, and ``result.json`` itself), checkpoint files apart."""
    record = read_result(folder) or {}
    listed = [str(n) for n in record.get("files", []) if "/" not in str(n)]
    return [*listed, RESULT]


def fingerprint_of(config: Any) -> dict[str, Any]:
    """The fingerprint of the run a :class:`~twinlens.job.config.FitConfig` defines (its data
    read), as a finished result stores it."""
    from twinlens.search import search_from_config
    from twinlens.search.checkpoint import run_record

    return run_record(search_from_config(**config.search), config.objective())

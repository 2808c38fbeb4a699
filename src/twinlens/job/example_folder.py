"""Putting a built-in example into a folder without overwriting anything of the user's.

An example is first written into a hidden staging folder inside the target, then placed file
by file:

- data (FITS files, all-or-nothing per folder) are written only where none of them exist:
  existing data are never simulated over; a folder that holds part of them, or data simulated
  with another seed, is refused with what to do;
- a configuration (TOML, CSV) that is missing, or that is still exactly what an earlier run
  of the example wrote (a hash kept in ``.twinlens-example.json``), is written; one the user
  has edited is kept and used, and the run says so in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from twinlens.search.checkpoint import atomic_write_text

__all__ = ["MARKER", "ExampleFolderError", "place_example"]

#: What the examples wrote into a folder: the seed of its data and each text file's hash.
MARKER = ".twinlens-example.json"
_DATA_SUFFIXES = (".fits",)


class ExampleFolderError(ValueError):
    """An example folder that cannot be used as it is (the message says what to do)."""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_marker(folder: Path) -> dict:
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return {}
    return marker if isinstance(marker, dict) else {}


def place_example(
    write: Callable[[Path], Path], folder: str | Path, seed: int
) -> tuple[Path, list[str]]:
    """Write an example with ``write(staging) -> main file`` and place it into ``folder`` (see
    the module); returns the main file's path in ``folder`` and one line per thing kept or
    changed that the user should know of.

    Raises
    ------
    ExampleFolderError
        When ``folder`` holds part of an example's data, or data of another seed.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker = _read_marker(folder)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder))
    try:
        main = write(staging).relative_to(staging)
        files = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
        data = [f for f in files if f.suffix in _DATA_SUFFIXES]
        notes, simulated = _place_data(staging, folder, data, marker, seed)
        texts = {}
        for name in (f for f in files if f.suffix not in _DATA_SUFFIXES):
            note, texts[str(name)] = _place_text(staging, folder, name, marker)
            notes += [note] if note else []
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    # the seed of the data in the folder: this run's where it wrote them, else the earlier one
    record = {"seed": seed if simulated else marker.get("seed", seed), "texts": texts}
    atomic_write_text(json.dumps(record, indent=1) + "\n", folder / MARKER)
    return folder / main, notes


def _place_data(
    staging: Path, folder: Path, data: list[Path], marker: dict, seed: int
) -> tuple[list[str], bool]:
    """Write the data files that are absent (all-or-nothing per folder); returns the notes and
    whether any were written."""
    groups: dict[Path, list[Path]] = {}
    for name in data:
        groups.setdefault(name.parent, []).append(name)
    kept = 0
    todo = []
    for parent, names in groups.items():
        present = [n for n in names if (folder / n).exists()]
        if present and len(present) < len(names):
            missing = ", ".join(str(n) for n in names if n not in present)
            raise ExampleFolderError(
                f"{folder / parent} holds part of the example's data but not {missing}: "
                "delete the rest of it to simulate it again, or give another --output"
            )
        kept += bool(present)
        todo += [] if present else names
    stored = marker.get("seed")
    if kept and stored is not None and stored != seed:
        raise ExampleFolderError(
            f"{folder} holds the example's data simulated with --seed {stored}; data are "
            f"never simulated over: run with --seed {stored}, or give another --output for "
            f"--seed {seed}"
        )
    for name in todo:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, folder / name)
    notes = []
    if kept and stored is None:  # data of unknown origin: say whose are fitted
        notes = [f"using the data already in {folder} (never simulated over)"]
    return notes, bool(todo)


def _place_text(staging: Path, folder: Path, name: Path, marker: dict) -> tuple[str, str]:
    """Place one configuration file; returns ``(note, the hash of what we wrote or kept)``."""
    target, new = folder / name, staging / name
    ours = marker.get("texts", {}).get(str(name))
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(new, target)
        return "", _digest(target)
    current = _digest(target)
    if current == _digest(new):
        return "", current
    if current == ours:  # as an earlier run wrote it: the options changed, not the user
        os.replace(new, target)
        return f"updated {target} for the options given", _digest(target)
    return (
        f"{target} differs from the built-in example's: using yours (give another --output "
        "for the built-in one)",
        ours or "",
    )

"""A search's checkpoint in its output folder: written atomically, keyed on what defines the run.

The sampling library writes its state into a *work* file as it goes (``NAME.work.hdf5``), in
place, so a kill in the middle of a write can tear it. At safe points (between batches) the
search calls :meth:`CheckpointFiles.commit`, which copies the work file aside, fsyncs it and
renames it over ``NAME.hdf5``, after keeping the previous one as ``NAME.backup.hdf5``: at
every moment ``NAME.hdf5`` is a complete state, and a torn work file is never read again.

Beside it, ``NAME.json`` records what the run is: the search's settings that shape its
samples and a digest of each part of the objective (model and priors, data, noise map, PSF,
mask and grid). A later run in the same folder resumes only when every part is the same;
otherwise it is refused, naming what changed, unless told to ``restart``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twinlens.user_warnings import warn_user

__all__ = [
    "CheckpointFiles",
    "CheckpointMismatch",
    "CheckpointUnreadable",
    "changed_parts",
    "describe_changes",
    "objective_record",
    "run_record",
]


class CheckpointMismatch(ValueError):
    """A checkpoint from a run defined differently from this one."""


class CheckpointUnreadable(ValueError):
    """A checkpoint that neither opens nor has a readable backup (a damaged disk)."""


def objective_record(objective: Any) -> dict[str, str]:
    """What defines the objective, part by part, for a checkpoint's record (the objective's
    ``fingerprint()`` where it has one, else its free parameters)."""
    fingerprint = getattr(objective, "fingerprint", None)
    if fingerprint is not None:
        return dict(fingerprint())
    return {"free parameters": ", ".join(objective.paths)}


def run_record(search: Any, objective: Any) -> dict[str, Any]:
    """What defines a search's results on ``objective``: the settings that shape them, the
    starting vector where the search depends on it, and the objective's parts
    (:func:`objective_record`). A finished result stores it as its fingerprint, so a rerun
    can tell whether the result still answers the run it is asked for."""
    record = dict(search.result_settings())
    if getattr(search, "uses_start", False):
        record["start"] = [float(v) for v in objective.start]
    record.update(objective_record(objective))
    return json.loads(json.dumps(record))  # as stored: tuples become lists


def changed_parts(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The keys whose values differ between two records (either side may lack a key)."""
    current = json.loads(json.dumps(current))
    keys = [*current, *(k for k in stored if k not in current)]
    return [k for k in keys if stored.get(k, _ABSENT) != current.get(k, _ABSENT)]


def describe_changes(stored: dict[str, Any], current: dict[str, Any]) -> str:
    """``"KEY: OLD then, NEW now; ..."`` for every part that differs."""
    current = json.loads(json.dumps(current))
    return "; ".join(
        f"{key}: {_short(stored.get(key, _ABSENT))} then, {_short(current.get(key, _ABSENT))} now"
        for key in changed_parts(stored, current)
    )


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not every platform opens folders
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_copy(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` so that ``target`` is always either the old or the new
    whole file: write aside, fsync, rename."""
    aside = target.with_name(f".{target.name}.partial")
    shutil.copyfile(source, aside)
    with open(aside, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(aside, target)
    _fsync_dir(target.parent)


def atomic_write_text(text: str, target: Path) -> None:
    """Write ``text`` to ``target`` atomically (write aside, fsync, rename)."""
    aside = target.with_name(f".{target.name}.partial")
    with open(aside, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(aside, target)
    _fsync_dir(target.parent)


class CheckpointFiles:
    """The checkpoint files of the search ``name`` in ``folder``.

    Parameters
    ----------
    folder : Path
        The output folder.
    name : str
        The search's name (the files' stem).
    readable : callable
        Whether a file is a complete state of the library (opens and holds its marks).
    """

    def __init__(self, folder: Path, name: str, readable: Callable[[Path], bool]) -> None:
        self.folder = Path(folder)
        self.name = name
        self.readable = readable
        self.checkpoint = self.folder / f"{name}.hdf5"
        self.backup = self.folder / f"{name}.backup.hdf5"
        self.work = self.folder / f"{name}.work.hdf5"
        self.record = self.folder / f"{name}.json"

    def prepare(self, record: dict[str, Any], restart: bool = False) -> bool:
        """Set up the work file for a run defined by ``record``; returns whether it resumes.

        With a complete checkpoint (or, failing that, its backup) whose record matches, the
        work file starts as a copy of it. ``restart`` deletes every file of an earlier run
        first.

        Raises
        ------
        CheckpointMismatch
            If the stored run differs from ``record`` (the message names each part).
        CheckpointUnreadable
            If a checkpoint exists but neither it nor a backup is readable.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        if restart:
            self.discard()
        state = self._resumable_state()
        if state is not None:
            self._check_record(record)
            shutil.copyfile(state, self.work)
            return True
        self.work.unlink(missing_ok=True)  # a torn file of a run that never committed
        atomic_write_text(json.dumps(record, indent=1) + "\n", self.record)
        return False

    def commit(self) -> None:
        """Make the work file the checkpoint, keeping the previous one as the backup."""
        if not self.work.exists():  # stopped before the library wrote anything
            return
        if self.checkpoint.exists():
            atomic_copy(self.checkpoint, self.backup)
        atomic_copy(self.work, self.checkpoint)

    def finish(self) -> None:
        """After the last commit: the work file is no longer needed."""
        self.work.unlink(missing_ok=True)

    def discard(self) -> None:
        """Delete every file of an earlier run."""
        for path in (self.checkpoint, self.backup, self.work, self.record):
            path.unlink(missing_ok=True)

    # -- internals ---------------------------------------------------------------------------

    def _resumable_state(self) -> Path | None:
        if self.readable(self.checkpoint):
            return self.checkpoint
        if self.readable(self.backup):
            # only a kill between the two renames of a commit, or a damaged disk, gets here
            warn_user(
                f"{self.checkpoint} is missing or unreadable; resuming from the backup "
                f"{self.backup}",
                RuntimeWarning,
            )
            return self.backup
        if self.checkpoint.exists():
            raise CheckpointUnreadable(
                f"the {self.name} checkpoint {self.checkpoint} is unreadable and has no backup; "
                "rerun with --restart (restart=True) to start afresh"
            )
        return None

    def _check_record(self, record: dict[str, Any]) -> None:
        stored = None
        if self.record.exists():
            try:
                stored = json.loads(self.record.read_text())
            except (OSError, ValueError):
                stored = None
        if not isinstance(stored, dict):
            raise CheckpointMismatch(
                f"the {self.name} checkpoint in {self.folder} has no record of the run it "
                "belongs to (written by an older twinlens?), so resuming it could mix two "
                "runs: rerun with --restart (restart=True) to start afresh, or use another "
                "output folder"
            )
        if changed_parts(stored, record):
            raise CheckpointMismatch(
                f"cannot resume the {self.name} run in {self.folder}: it was run with another "
                f"definition ({describe_changes(stored, record)}). Rerun with --restart "
                "(restart=True) to discard it and start afresh, or use another output folder"
            )


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

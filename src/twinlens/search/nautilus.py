"""Nested sampling with nautilus (importance nested sampling with neural-network bounds).

The default search: it gives the evidence as well as the posterior, and needs no starting
point. Prior and likelihood are both vectorized: nautilus hands over batches of unit-cube
points, :meth:`~twinlens.model.Model.from_unit` maps them, and the objective evaluates the
batch in one call (chunked over numba threads or one JAX program).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twinlens.search.base import (
    ObjectiveLike,
    Search,
    SearchResult,
    check_bool,
    check_float,
    check_int,
    check_seed,
    hdf5_checkpoint_readable,
    register,
    require,
    restore_or_backup,
)

__all__ = ["Nautilus"]

CHECKPOINT = "nautilus.hdf5"
BACKUP = "nautilus.backup.hdf5"
SETTINGS = "nautilus.json"


@register("nautilus")
@dataclass(frozen=True)
class Nautilus(Search):
    """Nested sampling with ``nautilus`` (Lange 2023).

    Parameters
    ----------
    n_live : int, default 2000
        Live points per bound; more explores multimodal posteriors better, at more cost.
    n_eff : float, default 10000
        Effective sample size of the posterior at which sampling stops.
    f_live : float in (0, 1), default 0.01
        Largest fraction of the evidence left in the live set when exploration stops.
    seed : int, default 0
        Seeds nautilus's random generator: the same seed and settings give the same samples.
    discard_exploration : bool, default False
        Drop the exploration phase's points from the posterior and evidence (unbiased, at the
        cost of samples).
    n_batch : int or None, default None
        Points per likelihood batch (nautilus's default, 100, when None); larger batches suit
        a GPU.
    n_like_max : int or None, default None
        Stop after this many likelihood evaluations in total (resumed runs included); the
        result then has ``info["converged"] = False``.

    Notes
    -----
    With an ``output_dir`` the sampler checkpoints to ``output_dir / "nautilus.hdf5"`` after
    every batch, and a later run with the same settings resumes from it: a killed run loses at
    most the batch in flight. nautilus does not store its constructor settings (``n_live``,
    ``n_batch``) in the checkpoint, so they are kept beside it in ``nautilus.json`` and a
    resume with different ones is refused. Before each run a copy of the checkpoint is kept
    (``nautilus.backup.hdf5``), and used if a kill left the checkpoint unreadable (nautilus
    rewrites the whole file whenever it adds a bound).

    nautilus gives no error estimate of ``log Z``: ``log_evidence_error`` is None.
    """

    n_live: int = 2000
    n_eff: float = 10000
    f_live: float = 0.01
    seed: int = 0
    discard_exploration: bool = False
    n_batch: int | None = None
    n_like_max: int | None = None

    def __post_init__(self) -> None:
        check_int("Nautilus", "n_live", self.n_live, 1)
        check_float("Nautilus", "n_eff", self.n_eff, 0.0, np.inf)
        check_float("Nautilus", "f_live", self.f_live, 0.0, 1.0)
        check_seed("Nautilus", self.seed)
        check_bool("Nautilus", "discard_exploration", self.discard_exploration)
        if self.n_batch is not None:
            check_int("Nautilus", "n_batch", self.n_batch, 1)
        if self.n_like_max is not None:
            check_int("Nautilus", "n_like_max", self.n_like_max, 1)

    def run(
        self, objective: ObjectiveLike, output_dir: Path | None = None, progress: bool = False
    ) -> SearchResult:
        """Sample the posterior of ``objective`` (see the class notes on checkpoints).

        Returns
        -------
        SearchResult
            Equal-weight samples, ``log Z`` (no error estimate), and in ``info``: the
            effective sample size, whether the run converged, and the weighted posterior
            (``weighted_samples``, ``log_weights``, ``weighted_log_likelihood``).
        """
        nautilus = require("nautilus", "nautilus")
        d = objective.n_params

        def prior(u: np.ndarray) -> np.ndarray:
            return np.asarray(objective.from_unit(u), dtype=float)

        def likelihood(x: np.ndarray) -> np.ndarray:
            log_l = np.array(objective.log_likelihood(x), dtype=float).reshape(-1)
            log_l[np.isnan(log_l)] = -np.inf  # a NaN would poison the shells' evidence
            return log_l

        filepath, resumed = None, False
        if output_dir is not None:
            filepath, resumed = self._prepare_checkpoint(Path(output_dir), objective.paths)

        sampler = nautilus.Sampler(
            prior,
            likelihood,
            n_dim=d,
            n_live=self.n_live,
            n_batch=self.n_batch,
            vectorized=True,
            seed=self.seed,
            filepath=filepath,
            resume=True,
        )
        success = sampler.run(
            f_live=self.f_live,
            n_eff=self.n_eff,
            n_like_max=np.inf if self.n_like_max is None else self.n_like_max,
            discard_exploration=self.discard_exploration,
            verbose=bool(progress),
        )

        points, log_w, log_l = sampler.posterior()
        best = int(np.argmax(log_l))
        samples, _, samples_log_l = sampler.posterior(equal_weight=True)
        log_z = sampler.log_z
        info: dict[str, Any] = {
            "converged": bool(success),
            "n_eff": float(sampler.n_eff),
            "n_live": self.n_live,
            "n_shells": len(sampler.bounds),
            "resumed": resumed,
            "checkpoint": None if filepath is None else str(filepath),
            "weighted_samples": np.asarray(points),
            "log_weights": np.asarray(log_w),
            "weighted_log_likelihood": np.asarray(log_l),
        }
        return SearchResult(
            name=self.name,
            paths=objective.paths,
            samples=np.asarray(samples),
            log_likelihood=np.asarray(samples_log_l),
            max_likelihood=np.asarray(points[best]),
            max_log_likelihood=float(log_l[best]),
            log_evidence=None if log_z is None else float(log_z),
            log_evidence_error=None,
            n_evaluations=int(sampler.n_like),
            seed=self.seed,
            info=info,
        )

    # -- checkpoints -------------------------------------------------------------------------

    def _prepare_checkpoint(self, output_dir: Path, paths: tuple[str, ...]) -> tuple[Path, bool]:
        """The checkpoint's path, and whether a run resumes from it: check the settings
        against the stored ones, restore the backup if the checkpoint is unreadable, and
        keep a fresh backup."""
        output_dir.mkdir(parents=True, exist_ok=True)
        checkpoint, backup, record = (output_dir / n for n in (CHECKPOINT, BACKUP, SETTINGS))
        # what the checkpoint depends on; n_eff, f_live and the rest may change between runs
        settings = {
            "paths": list(paths),
            "n_live": self.n_live,
            "n_batch": self.n_batch,
            "seed": self.seed,
        }
        restore_or_backup(checkpoint, backup, _readable)
        if checkpoint.exists():
            if not _readable(checkpoint):
                raise ValueError(
                    f"the nautilus checkpoint {checkpoint} is unreadable and has no backup; "
                    "delete it to start afresh"
                )
            if record.exists():
                stored = json.loads(record.read_text())
                changed = {k: (stored.get(k), v) for k, v in settings.items() if stored.get(k) != v}
                if changed:
                    detail = "; ".join(
                        f"{k}: {a!r} then, {b!r} now" for k, (a, b) in changed.items()
                    )
                    raise ValueError(
                        f"cannot resume the nautilus run in {output_dir} with other settings "
                        f"({detail}): pass the same settings, or use a new output directory"
                    )
            return checkpoint, True
        record.write_text(json.dumps(settings, indent=1))
        return checkpoint, False


def _readable(path: Path) -> bool:
    return hdf5_checkpoint_readable(path, "nautilus", "sampler", "rng_state")

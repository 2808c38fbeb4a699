"""Nested sampling with nautilus (importance nested sampling with neural-network bounds).

The default search: it gives the evidence as well as the posterior, and needs no starting
point. Prior and likelihood are both vectorized: nautilus hands over batches of unit-cube
points, :meth:`~twinlens.model.Model.from_unit` maps them, and the objective evaluates the
batch in one call (chunked over numba threads or one JAX program).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

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
)
from twinlens.search.checkpoint import CheckpointFiles, objective_record
from twinlens.search.ellipsoids import compiled_ellipsoids
from twinlens.search.stopping import SearchStopped, raise_if_aborted, stop_requested

__all__ = ["Nautilus"]


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
    n_networks : int, default 4
        Neural networks per bound (nautilus's default); each bound trains them all, which
        dominates the run time of a fast likelihood, so 1 or 2 make a run of a cheap or
        low-dimensional problem several times faster, at a looser bound.
    checkpoint_every : float >= 0, default 10
        Seconds between checkpoint commits (0: after every batch); a run killed outright
        (SIGKILL, a node failure) loses at most this much work.

    Notes
    -----
    With an ``output_dir``, at least every ``checkpoint_every`` seconds (at a batch
    boundary), at the end and on a stop request, the sampler's state is written to
    ``nautilus.work.hdf5`` and that file becomes the checkpoint ``nautilus.hdf5`` by an
    atomic rename, the previous one kept as ``nautilus.backup.hdf5``
    (:mod:`twinlens.search.checkpoint`). (Left to itself, nautilus rewrites the whole file
    after every new bound: in the example fit that was a fifth of the run time.)
    ``nautilus.json`` records what defines the run: ``n_live``, ``n_batch``, ``n_networks``
    and ``seed`` (nautilus does not store them itself) and the objective's fingerprint
    (model, priors, data, noise, PSF, mask). A later run into the same folder resumes when
    they match, giving the samples of an uninterrupted run; when they differ it is refused,
    naming what changed, unless
    ``restart=True``. ``n_eff``, ``f_live`` and ``n_like_max`` may change between runs: a
    finished run asked for more samples goes on from where it stopped.

    While it runs, nautilus fits its ellipsoids with the compiled copy of its own algorithm
    (:mod:`twinlens.search.ellipsoids`): its ellipsoids to rounding, in a fraction of the time.

    Inside :func:`~twinlens.search.stopping.stop_on_signals` (as ``twinlens fit`` runs it) a
    first SIGINT or SIGTERM stops the run after the batch in flight, with the checkpoint
    written, by raising :class:`~twinlens.search.stopping.SearchStopped`.

    The result holds equal-weight samples and ``log Z``; nautilus gives no error estimate of
    ``log Z``, so ``log_evidence_error`` is None. ``info`` holds the effective sample size,
    whether the run converged, and the weighted posterior (``weighted_samples``,
    ``log_weights``, ``weighted_log_likelihood``).
    """

    checkpoints: ClassVar[bool] = True
    schedule_settings: ClassVar[tuple[str, ...]] = ("checkpoint_every",)

    n_live: int = 2000
    n_eff: float = 10000
    f_live: float = 0.01
    seed: int = 0
    discard_exploration: bool = False
    n_batch: int | None = None
    n_like_max: int | None = None
    n_networks: int = 4
    checkpoint_every: float = 10.0

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
        check_int("Nautilus", "n_networks", self.n_networks, 1)
        check_float(
            "Nautilus", "checkpoint_every", self.checkpoint_every, 0.0, np.inf, closed="both"
        )

    def _run(
        self, objective: ObjectiveLike, output_dir: Path | None, progress: bool, restart: bool
    ) -> SearchResult:
        """Sample the posterior of ``objective`` (see the class notes on checkpoints)."""
        nautilus = require("nautilus", "nautilus")

        def prior(u: np.ndarray) -> np.ndarray:
            return np.asarray(objective.from_unit(u), dtype=float)

        def likelihood(x: np.ndarray) -> np.ndarray:
            raise_if_aborted()
            log_l = np.array(objective.log_likelihood(x), dtype=float).reshape(-1)
            log_l[np.isnan(log_l)] = -np.inf  # a NaN would poison the shells' evidence
            return log_l

        files, resumed = self._checkpoint(objective, output_dir, restart)
        sampler = nautilus.Sampler(
            prior,
            likelihood,
            n_dim=objective.n_params,
            n_live=self.n_live,
            n_batch=self.n_batch,
            n_networks=self.n_networks,
            vectorized=True,
            seed=self.seed,
            filepath=None if files is None else files.work,
            resume=True,
        )
        # read the work file (resume) but do not let nautilus write it: _commit writes it
        sampler.filepath = None
        with compiled_ellipsoids(nautilus):
            success = self._sample(sampler, files, progress, resumed)
        return self._result(objective, sampler, files, resumed, success)

    def _checkpoint(
        self, objective: ObjectiveLike, output_dir: Path | None, restart: bool
    ) -> tuple[CheckpointFiles | None, bool]:
        """The checkpoint files in ``output_dir`` (None without one), prepared for this run,
        and whether it resumes an earlier one."""
        if output_dir is None:
            return None, False
        require("h5py", "nautilus")
        files = CheckpointFiles(Path(output_dir), "nautilus", _readable)
        record = {**self._identity(), **objective_record(objective)}
        return files, files.prepare(record, restart)

    def _result(
        self,
        objective: ObjectiveLike,
        sampler: Any,
        files: CheckpointFiles | None,
        resumed: bool,
        success: bool,
    ) -> SearchResult:
        """The finished sampler's posterior and evidence (see the class notes)."""
        points, log_w, log_l = sampler.posterior()
        if not np.any(np.isfinite(log_l)):  # nautilus's own weighting would fail obscurely
            raise RuntimeError(
                f"nautilus: all {int(sampler.n_like)} likelihood evaluations were -inf (every "
                "draw from the priors outside the model's valid ranges or, with point sources, "
                "without the observed images): narrow the priors about a model that fits"
            )
        best = int(np.argmax(log_l))
        samples, _, samples_log_l = sampler.posterior(equal_weight=True)
        log_z = sampler.log_z
        info: dict[str, Any] = {
            "converged": bool(success),
            "n_eff": float(sampler.n_eff),
            "n_live": self.n_live,
            "n_shells": len(sampler.bounds),
            "resumed": resumed,
            "checkpoint": None if files is None else str(files.checkpoint),
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

    def _identity(self) -> dict[str, Any]:
        """The settings that shape the samples; ``n_eff``, ``f_live`` and the rest may change
        between runs (nautilus does not store ``n_live``, ``n_batch`` or ``n_networks``)."""
        return {
            "search": self.name,
            "n_live": self.n_live,
            "n_batch": self.n_batch,
            "n_networks": self.n_networks,
            "seed": self.seed,
        }

    def _sample(
        self, sampler: Any, files: CheckpointFiles | None, progress: bool, resumed: bool
    ) -> bool:
        """Run the sampler one batch at a time (nautilus's own loop, cut at its batch
        boundaries with ``n_like_max``, so the samples are those of one uninterrupted call):
        between batches the work file is consistent, so that is where the checkpoint is
        committed and a stop request is honoured."""
        limit = np.inf if self.n_like_max is None else self.n_like_max
        reporter = _Progress(sampler, self.n_eff, progress, resumed)
        last_commit = time.monotonic()
        while True:
            success = sampler.run(
                f_live=self.f_live,
                n_eff=self.n_eff,
                n_like_max=min(limit, sampler.n_like + 1),
                discard_exploration=self.discard_exploration,
                verbose=False,
            )
            finished = success or sampler.n_like >= limit
            if files is not None and (
                finished or time.monotonic() - last_commit >= self.checkpoint_every
            ):
                _commit(sampler, files)
                last_commit = time.monotonic()
            if finished:
                break
            signal_name = stop_requested()
            if signal_name is not None:
                if files is not None:
                    _commit(sampler, files)
                reporter.line("stopped")
                raise SearchStopped(
                    "nautilus",
                    signal_name,
                    None if files is None else files.checkpoint,
                    int(sampler.n_like),
                )
            reporter.maybe()
        if files is not None:
            files.finish()
        reporter.line("finished" if success else "stopped at n_like_max")
        return bool(success)


def _commit(sampler: Any, files: CheckpointFiles) -> None:
    """Write the sampler's whole state (between batches, so consistent) and make it the
    checkpoint."""
    sampler.write(files.work, overwrite=True)
    files.commit()


class _Progress:
    """Progress lines of a nautilus run, at most every ``every`` seconds."""

    def __init__(
        self, sampler: Any, n_eff: float, enabled: bool, resumed: bool, every: float = 10.0
    ):
        self.sampler, self.n_eff, self.enabled, self.every = sampler, n_eff, enabled, every
        self.start = self.last = time.monotonic()
        self.n_like0 = int(sampler.n_like)
        if enabled:
            what = f"resuming from {self.n_like0} evaluations" if resumed else "starting"
            print(f"nautilus: {what}; a line every {every:.0f} s", flush=True)

    def maybe(self) -> None:
        if self.enabled and time.monotonic() - self.last >= self.every:
            self.line()

    def line(self, status: str = "") -> None:
        if not self.enabled:
            return
        self.last = time.monotonic()
        s = self.sampler
        elapsed = self.last - self.start
        rate = (s.n_like - self.n_like0) / max(elapsed, 1e-9)
        if s.explored:
            phase = f"sampling, n_eff {s.n_eff:.0f}/{self.n_eff:.0f}"
        else:
            # exploration ends when the live set holds less than f_live of the evidence
            phase = f"exploring, {len(s.bounds)} bounds, live evidence fraction {s.f_live:.3g}"
        with np.errstate(all="ignore"):
            log_z = s.log_z
        z = "" if log_z is None or not np.isfinite(log_z) else f", log Z {log_z:.2f}"
        tail = f" ({status})" if status else ""
        print(
            f"nautilus: {s.n_like} evaluations, {phase}{z}; {_clock(elapsed)}, {rate:.0f}/s{tail}",
            flush=True,
        )


def _clock(seconds: float) -> str:
    minutes, sec = divmod(int(seconds), 60)
    return f"{minutes} min {sec:02d} s" if minutes else f"{sec} s"


def _readable(path: Path) -> bool:
    return hdf5_checkpoint_readable(path, "nautilus", "sampler", "rng_state")

"""Affine-invariant ensemble MCMC with emcee.

The walkers move together, so each step is one batched evaluation of the log posterior (log
prior plus ``log L``) for all of them; the chain is stored in an HDF5 backend and a killed run
continues from its last stored step.
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
    check_float,
    check_int,
    check_seed,
    hdf5_checkpoint_readable,
    prior_and_likelihood,
    register,
    require,
)
from twinlens.search.checkpoint import CheckpointFiles, objective_record
from twinlens.search.stopping import SearchStopped, raise_if_aborted, stop_requested

__all__ = ["Emcee"]

# rounds of redrawing starting walkers that fall outside the priors or the valid ranges
_INIT_ROUNDS = 100


@register("emcee")
@dataclass(frozen=True)
class Emcee(Search):
    """The affine-invariant ensemble sampler of ``emcee`` (Foreman-Mackey et al. 2013).

    Parameters
    ----------
    n_walkers : int, default 32
        Walkers in the ensemble; at least twice the number of free parameters.
    n_steps : int, default 5000
        Steps of every walker, burn-in included (a resumed run counts the stored ones).
    burn_in : float in [0, 1), default 0.3
        Fraction of the steps dropped from the start of the chain.
    seed : int, default 0
        Seeds the starting ball and emcee's random state: the same seed gives the same chain.
    init_scale : float > 0, default 1e-3
        Radius of the starting ball around the objective's ``start``, per parameter, as a
        fraction of the prior's central 68% half-width.

    checkpoint_every : float >= 0, default 10
        Seconds between checkpoint commits (0: after every step); a run killed outright
        (SIGKILL, a node failure) loses at most this much work.

    Notes
    -----
    With an ``output_dir`` emcee stores the chain and its random state in
    ``emcee.work.hdf5`` after every step (its ``HDFBackend``), and at least every
    ``checkpoint_every`` seconds, at the end and on a stop request that file becomes the
    checkpoint ``emcee.hdf5`` by an atomic rename, the previous one kept as
    ``emcee.backup.hdf5`` (:mod:`twinlens.search.checkpoint`). ``emcee.json`` records what
    defines the chain (walkers, seed, starting point and ball, and the objective's
    fingerprint: model, priors, data, noise, PSF, mask). A later run into the same folder
    continues from the last committed step up to ``n_steps`` and gives the same chain as an
    uninterrupted run; a
    stored chain longer than ``n_steps`` is used whole; a differently defined run is refused,
    naming what changed, unless ``restart=True``. Inside
    :func:`~twinlens.search.stopping.stop_on_signals` a first SIGINT or SIGTERM stops the
    chain after the step in flight, with the checkpoint written, by raising
    :class:`~twinlens.search.stopping.SearchStopped`.

    The result's ``samples`` are the flattened chain after burn-in, every walker, and its
    ``max_likelihood`` the best point of the whole stored chain. ``info`` holds the acceptance
    fraction, the integrated autocorrelation times (``autocorrelation_reliable``: whether the
    chain after burn-in is 50 of them long) and the steps stored.
    """

    checkpoints: ClassVar[bool] = True
    schedule_settings: ClassVar[tuple[str, ...]] = ("checkpoint_every",)
    uses_start: ClassVar[bool] = True

    n_walkers: int = 32
    n_steps: int = 5000
    burn_in: float = 0.3
    seed: int = 0
    init_scale: float = 1e-3
    checkpoint_every: float = 10.0

    def __post_init__(self) -> None:
        check_int("Emcee", "n_walkers", self.n_walkers, 2)
        check_int("Emcee", "n_steps", self.n_steps, 1)
        check_float("Emcee", "burn_in", self.burn_in, 0.0, 1.0, closed="lower")
        check_seed("Emcee", self.seed)
        check_float("Emcee", "init_scale", self.init_scale, 0.0, np.inf)
        check_float("Emcee", "checkpoint_every", self.checkpoint_every, 0.0, np.inf, closed="both")

    def _run(
        self, objective: ObjectiveLike, output_dir: Path | None, progress: bool, restart: bool
    ) -> SearchResult:
        """Run (or continue) the chain on ``objective``."""
        emcee = require("emcee", "emcee")
        d = objective.n_params
        if self.n_walkers < 2 * d:
            raise ValueError(
                f"Emcee.n_walkers must be >= 2 * n_params = {2 * d} for {d} free parameters, "
                f"got {self.n_walkers}"
            )

        def log_probability(x: np.ndarray) -> np.ndarray:
            # log L rides along as a blob, so the samples keep theirs
            raise_if_aborted()
            log_prior, log_l = prior_and_likelihood(objective, x)
            post = np.where(np.isfinite(log_l), log_prior + log_l, -np.inf)
            return np.column_stack([post, log_l])

        files, backend = None, None
        if output_dir is not None:
            require("h5py", "emcee")
            files = CheckpointFiles(Path(output_dir), "emcee", _readable)
            record = {
                "search": self.name,
                "n_walkers": self.n_walkers,
                "seed": self.seed,
                "init_scale": self.init_scale,
                "start": [float(v) for v in objective.start],  # the walkers' ball is about it
                **objective_record(objective),
            }
            files.prepare(record, restart)
            backend = emcee.backends.HDFBackend(str(files.work))
        done = 0
        if backend is not None and backend.initialized:
            stored = tuple(map(int, backend.shape))
            if stored != (self.n_walkers, d):  # the record matched, so only a foreign file
                raise ValueError(
                    f"cannot resume the emcee chain in {output_dir}: it has (walkers, "
                    f"parameters) = {stored}, this run {(self.n_walkers, d)}; rerun with "
                    "--restart (restart=True), or use a new output directory"
                )
            done = backend.iteration
        sampler = emcee.EnsembleSampler(
            self.n_walkers, d, log_probability, vectorize=True, backend=backend
        )

        remaining = max(self.n_steps - done, 0)
        if remaining:
            if done:
                state = sampler.get_last_sample()  # coords, log-probabilities, random state
            else:
                rng = np.random.default_rng(self.seed)
                coords, post, blob = self._starting_ball(objective, log_probability, rng)
                # emcee draws from a legacy RandomState; seed it from the same seed
                random_state = np.random.RandomState(self.seed).get_state()
                state = emcee.State(coords, log_prob=post, blobs=blob, random_state=random_state)
            self._advance(sampler, state, remaining, done, progress, files)
        result = self._result(sampler, objective, done)  # read from the work file
        if files is not None:
            files.commit()
            files.finish()
        return result

    def _starting_ball(
        self, objective: ObjectiveLike, log_probability: Any, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Walkers in a small ball around ``objective.start``, each inside the priors with a
        finite log posterior (out-of-range ones are drawn again)."""
        d = objective.n_params
        start = np.asarray(objective.start, dtype=float)
        # the prior's central 68% half-width sets the scale of each parameter
        low = objective.from_unit(np.full((1, d), 0.16))[0]
        high = objective.from_unit(np.full((1, d), 0.84))[0]
        spread = 0.5 * np.abs(np.asarray(high, dtype=float) - np.asarray(low, dtype=float))
        scale = self.init_scale * np.where(spread > 0, spread, 1.0)
        coords = np.empty((self.n_walkers, d))
        values = np.empty((self.n_walkers, 2))
        todo = np.arange(self.n_walkers)
        for _ in range(_INIT_ROUNDS):
            coords[todo] = start + scale * rng.standard_normal((todo.size, d))
            values[todo] = log_probability(coords[todo])
            todo = todo[~np.isfinite(values[todo, 0])]
            if not todo.size:
                return coords, values[:, 0], values[:, 1]
        raise ValueError(
            f"emcee: could not place {todo.size} of {self.n_walkers} walkers with a finite log "
            f"posterior near the starting vector {start} (init_scale={self.init_scale}); check "
            "that the start lies inside the priors and gives a finite likelihood"
        )

    def _advance(
        self,
        sampler: Any,
        state: Any,
        remaining: int,
        done: int,
        progress: bool,
        files: CheckpointFiles | None,
    ) -> None:
        """Step the chain; between steps the work file is consistent, so that is where the
        checkpoint is committed and a stop request is honoured."""
        try:
            import tqdm  # noqa: F401  (emcee's own progress bar needs it)

            bar = bool(progress)
        except ImportError:
            bar = False
        every = max(1, self.n_steps // 20)
        last_commit = time.monotonic()
        for i, _ in enumerate(
            sampler.sample(state, iterations=remaining, progress=bar), start=done + 1
        ):
            if progress and not bar and (i % every == 0 or i == self.n_steps):
                rate = float(np.mean(sampler.acceptance_fraction))
                print(f"emcee: step {i}/{self.n_steps}, acceptance {rate:.2f}", flush=True)
            if files is not None and time.monotonic() - last_commit >= self.checkpoint_every:
                files.commit()
                last_commit = time.monotonic()
            signal_name = stop_requested()
            if signal_name is not None and i < self.n_steps:
                if files is not None:
                    files.commit()
                raise SearchStopped(
                    "emcee",
                    signal_name,
                    None if files is None else files.checkpoint,
                    i * self.n_walkers,
                )

    def _result(self, sampler: Any, objective: ObjectiveLike, resumed_from: int) -> SearchResult:
        n_iter = sampler.iteration
        discard = int(self.burn_in * n_iter)
        chain = sampler.get_chain()  # (steps, walkers, d)
        log_l = sampler.get_blobs()  # (steps, walkers)
        flat_l = log_l.reshape(-1)
        best = int(np.argmax(flat_l))
        # tol=0: an estimate however short the chain (emcee's check would raise or log);
        # "autocorrelation_reliable" says whether the chain is 50 times longer
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = np.asarray(sampler.get_autocorr_time(discard=discard, tol=0), dtype=float)
        info: dict[str, Any] = {
            "acceptance_fraction": np.asarray(sampler.acceptance_fraction),
            "autocorrelation_time": tau,
            "autocorrelation_reliable": bool(np.all(n_iter - discard > 50 * tau)),
            "n_steps": int(n_iter),
            "n_walkers": self.n_walkers,
            "discarded_steps": discard,
            "resumed_from_step": int(resumed_from),
        }
        return SearchResult(
            name=self.name,
            paths=objective.paths,
            samples=chain[discard:].reshape(-1, objective.n_params),
            log_likelihood=log_l[discard:].reshape(-1),
            max_likelihood=chain.reshape(-1, objective.n_params)[best],
            max_log_likelihood=float(flat_l[best]),
            log_evidence=None,
            log_evidence_error=None,
            # the starting ball's evaluations are not counted (redraws vary)
            n_evaluations=int(n_iter * self.n_walkers),
            seed=self.seed,
            info=info,
        )


def _readable(path: Path) -> bool:
    return hdf5_checkpoint_readable(path, "emcee", "mcmc", "iteration")

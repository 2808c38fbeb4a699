"""Gradient-based searches on the JAX backend: a multi-start maximum posterior (optax) and
the No-U-Turn sampler (blackjax).

Both work in an unconstrained space: ``z`` in R^d, ``u = sigmoid(z)`` in the unit cube, and
``x = from_unit(u)`` the parameters, so every step stays inside the priors' supports:

* NUTS samples the density of ``z``: ``log L(x) + sum(log u + log(1 - u))``. The prior needs
  no density of its own: the unit cube carries it (``from_unit`` is its inverse cumulative
  distribution), and the second term is the sigmoid's Jacobian.
* The optimiser maximises the posterior density of ``x`` itself, ``log L(x) + log p(x)``,
  with ``log p(x) = -log|det dx/du|`` from the same transform; ``z`` only keeps it inside the
  supports. (Maximising the density of ``z`` would move the optimum by the Jacobian.)

Neither offers checkpoints: optax and blackjax have none, and both runs are short compared
with nested sampling.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from twinlens.search.base import (
    ObjectiveLike,
    Search,
    SearchResult,
    check_float,
    check_int,
    check_seed,
    register,
    require,
)

__all__ = ["NUTS", "MaximumPosterior"]

# log L below which (or NaN) the optimiser treats a point as excluded: finite, so its
# arithmetic stays finite
_EXCLUDED = -1e300
_INIT_ROUNDS = 100


def _load_jax(search: str, objective: ObjectiveLike) -> ModuleType:
    if objective.backend != "jax":
        raise ValueError(
            f"the {search} search runs on the JAX backend only, but the objective's backend is "
            f"{objective.backend!r}: build it with backend='jax'"
        )
    require("jax", search)
    from twinlens.backend import jax_runtime

    return jax_runtime.load()  # switches on float64 before any array is made


def _to_params(objective: ObjectiveLike, jax: ModuleType, z: Any) -> Any:
    return objective.from_unit(jax.nn.sigmoid(z), jax.numpy)


def _params_on_host(objective: ObjectiveLike, jax: ModuleType, z: Any) -> np.ndarray:
    """:func:`_to_params` as one compiled program, read back to the host. Run eagerly, each of
    the priors' operations compiles on its own (41 programs for two priors, a noticeable share
    of a short NUTS run on a two-parameter toy)."""
    return np.asarray(jax.jit(lambda z: _to_params(objective, jax, z))(z))


def _log_jacobian(jax: ModuleType, z: Any) -> Any:
    """``sum(log u + log(1 - u))`` for ``u = sigmoid(z)``, without overflow at large ``|z|``."""
    return -jax.numpy.sum(jax.nn.softplus(z) + jax.nn.softplus(-z), axis=-1)


def _initial_z(
    jax: ModuleType, value: Any, objective: ObjectiveLike, n: int, seed: int, search: str
) -> tuple[np.ndarray, int]:
    """``n`` starting points in ``z``: the objective's own start first (a staged fit's first
    stage, or the configured values), then draws from the prior; each with a finite ``value``
    (those without are drawn again). Also the evaluations spent."""
    rng = np.random.default_rng(seed)
    values = jax.jit(jax.vmap(value))
    d = objective.n_params
    z = np.empty((n, d))
    todo = np.arange(n)
    own = np.clip(objective.to_unit(np.asarray(objective.start, dtype=float)), 1e-6, 1 - 1e-6)
    spent = 0
    for round_ in range(_INIT_ROUNDS):
        u = rng.uniform(1e-6, 1.0 - 1e-6, size=(todo.size, d))
        if round_ == 0:
            u[0] = own
        z[todo] = np.log(u) - np.log1p(-u)
        ok = np.isfinite(np.asarray(values(z[todo])))
        spent += todo.size
        todo = todo[~ok]
        if not todo.size:
            return z, spent
    raise ValueError(
        f"{search}: {todo.size} of {n} starting points drawn from the prior have no finite "
        f"log-likelihood after {_INIT_ROUNDS} draws each; check the priors against the "
        "profiles' valid ranges"
    )


def _every(n: int) -> int:
    return max(1, n // 10)


@register("map")
@dataclass(frozen=True)
class MaximumPosterior(Search):
    """The maximum of the posterior density, by Adam (optax) from several prior draws at once.

    Parameters
    ----------
    n_starts : int, default 8
        Starting points, optimised side by side (vmapped): the model's own values (a staged
        fit's first-stage lens, or the configured ``value``s), then draws from the prior (each
        redrawn where ``log L`` is not finite).
    n_steps : int, default 1000
        Adam steps from each start.
    learning_rate : float > 0, default 0.05
        Adam's first step size in ``z``; it decays to 1e-3 of that along a cosine, so each
        start settles on its optimum.
    seed : int, default 0
        Seeds the starting points.

    Notes
    -----
    JAX backend only. No checkpoints (optax has none). A point where ``log L`` is ``-inf``
    or NaN counts as excluded, with a zero gradient: a start that lands there stays put and
    loses to the others.

    The result's ``samples`` (one row) and ``max_likelihood`` are the best optimum, the
    maximum of the posterior; ``info`` holds every start's optimum (``optima``), its log
    posterior density and ``log L`` (``log_posterior``, ``log_likelihood``), and the starts
    (``initial``).
    """

    backends: ClassVar[tuple[str, ...]] = ("jax",)

    n_starts: int = 8
    n_steps: int = 1000
    learning_rate: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("MaximumPosterior", "n_starts", self.n_starts, 1)
        check_int("MaximumPosterior", "n_steps", self.n_steps, 1)
        check_float("MaximumPosterior", "learning_rate", self.learning_rate, 0.0, np.inf)
        check_seed("MaximumPosterior", self.seed)

    def _run(
        self, objective: ObjectiveLike, output_dir: Path | None, progress: bool, restart: bool
    ) -> SearchResult:
        """Optimise from every start; ``output_dir`` is not used (no checkpoints)."""
        jax = _load_jax(self.name, objective)
        optax = require("optax", self.name)
        log_posterior, finite_log_likelihood = _map_densities(objective, jax)
        z0, spent = _initial_z(
            jax, finite_log_likelihood, objective, self.n_starts, self.seed, self.name
        )
        optimise = self._optimiser(jax, optax, log_posterior, progress)
        z0 = jax.numpy.asarray(z0)
        best_z, best_value = optimise(z0)
        return self._result(objective, jax, z0, best_z, best_value, spent)

    def _optimiser(
        self, jax: ModuleType, optax: ModuleType, log_posterior: Callable, progress: bool
    ) -> Callable:
        """The compiled optimisation of every start at once (``z`` of shape ``(n_starts,
        d)``): each start's best point in ``z`` and its log posterior density."""
        jnp = jax.numpy
        schedule = optax.cosine_decay_schedule(self.learning_rate, self.n_steps, alpha=1e-3)
        optimiser = optax.adam(schedule)
        value_and_grad = jax.vmap(jax.value_and_grad(lambda z: -log_posterior(z)))
        every = _every(self.n_steps)

        def report(i: Any, best: Any) -> None:
            print(
                f"map: step {int(i)}/{self.n_steps}, best log posterior {float(best):.6g}",
                flush=True,
            )

        def step(carry: Any, i: Any) -> Any:
            z, opt_state, best_z, best_value = carry
            loss, grad = value_and_grad(z)
            value = -loss
            # keep each start's best point: Adam's last step need not be its best
            better = value > best_value
            best_z = jnp.where(better[:, None], z, best_z)
            best_value = jnp.where(better, value, best_value)
            grad = jnp.where(jnp.isfinite(grad), grad, 0.0)
            updates, opt_state = optimiser.update(grad, opt_state, z)
            z = optax.apply_updates(z, updates)
            if progress:
                jax.lax.cond(
                    (i + 1) % every == 0,
                    lambda: jax.debug.callback(report, i + 1, jnp.max(best_value)),
                    lambda: None,
                )
            return (z, opt_state, best_z, best_value), None

        @jax.jit
        def optimise(z: Any) -> Any:
            init = (z, optimiser.init(z), z, jnp.full(z.shape[0], -jnp.inf))
            (z, _, best_z, best_value), _ = jax.lax.scan(step, init, jnp.arange(self.n_steps))
            # the last point too (the scan judged each point before its step)
            value = jax.vmap(log_posterior)(z)
            better = value > best_value
            return jnp.where(better[:, None], z, best_z), jnp.where(better, value, best_value)

        return optimise

    def _result(
        self,
        objective: ObjectiveLike,
        jax: ModuleType,
        z0: Any,
        best_z: Any,
        best_value: Any,
        spent: int,
    ) -> SearchResult:
        """The best of the optima, with every start's in ``info`` (see the class notes)."""
        optima = _params_on_host(objective, jax, best_z)
        # the objective's own batch at the optima: its programs report a linear solve that ran
        # out of steps, which a gradient step inside the optimiser's program cannot
        log_ls = np.array(objective.log_likelihood(optima), dtype=float)
        log_ls[~(log_ls > _EXCLUDED)] = -np.inf
        values = np.array(best_value)
        values[values <= _EXCLUDED] = -np.inf
        best = int(np.argmax(values))
        info: dict[str, Any] = {
            "optima": optima,
            "log_posterior": values,
            "log_likelihood": log_ls,
            "initial": _params_on_host(objective, jax, z0),
            "n_steps": self.n_steps,
            "learning_rate": self.learning_rate,
        }
        return SearchResult(
            name=self.name,
            paths=objective.paths,
            samples=optima[best][None, :],
            log_likelihood=log_ls[best : best + 1],
            max_likelihood=optima[best],
            max_log_likelihood=float(log_ls[best]),
            log_evidence=None,
            log_evidence_error=None,
            n_evaluations=int(spent + self.n_starts * (self.n_steps + 1)),
            seed=self.seed,
            info=info,
        )


def _map_densities(objective: ObjectiveLike, jax: ModuleType) -> tuple[Callable, Callable]:
    """The optimiser's functions of ``z``: the log posterior density of ``x`` (excluded
    points at :data:`_EXCLUDED`), and 0 where ``log L`` is finite, ``-inf`` where not (which
    the starting points must avoid)."""
    jnp = jax.numpy

    def log_prior(z: Any) -> Any:
        # the prior density from the transform: p(x) = 1 / |det dx/du|
        jacobian = jax.jacfwd(lambda u: objective.from_unit(u, jnp))(jax.nn.sigmoid(z))
        return -jnp.linalg.slogdet(jacobian)[1]

    def log_likelihood(z: Any) -> Any:
        value = objective.jax_log_likelihood(_to_params(objective, jax, z))
        return jnp.where(jnp.isfinite(value), value, _EXCLUDED)

    def log_posterior(z: Any) -> Any:
        value = log_likelihood(z) + log_prior(z)
        return jnp.where(jnp.isfinite(value), value, _EXCLUDED)

    def finite_log_likelihood(z: Any) -> Any:
        return jnp.where(log_likelihood(z) > _EXCLUDED, 0.0, -jnp.inf)

    return log_posterior, finite_log_likelihood


@register("nuts")
@dataclass(frozen=True)
class NUTS(Search):
    """The No-U-Turn sampler of blackjax, tuned by its window adaptation (step size and a
    diagonal mass matrix).

    Parameters
    ----------
    n_warmup : int, default 1000
        Adaptation steps per chain (dropped).
    n_samples : int, default 1000
        Samples kept per chain.
    n_chains : int, default 1
        Independent chains run side by side (vmapped): the first from the model's own values
        (as :class:`MaximumPosterior`'s first start), the others from prior draws; with two or
        more ``info["r_hat"]`` gives the potential scale reduction.
    seed : int, default 0
        Seeds the starting points and every random key.
    target_acceptance_rate : float in (0, 1), default 0.8
        The adaptation's target mean acceptance.

    Notes
    -----
    JAX backend only. No checkpoints (blackjax has none).

    The result's ``samples`` are every chain's samples, chain after chain; ``info`` holds the
    step sizes and inverse mass matrices per chain, divergences, mean acceptance, effective
    sample sizes and (two or more chains) ``r_hat``.
    """

    backends: ClassVar[tuple[str, ...]] = ("jax",)

    n_warmup: int = 1000
    n_samples: int = 1000
    n_chains: int = 1
    seed: int = 0
    target_acceptance_rate: float = 0.8

    def __post_init__(self) -> None:
        check_int("NUTS", "n_warmup", self.n_warmup, 1)
        check_int("NUTS", "n_samples", self.n_samples, 1)
        check_int("NUTS", "n_chains", self.n_chains, 1)
        check_seed("NUTS", self.seed)
        check_float("NUTS", "target_acceptance_rate", self.target_acceptance_rate, 0.0, 1.0)

    def _run(
        self, objective: ObjectiveLike, output_dir: Path | None, progress: bool, restart: bool
    ) -> SearchResult:
        """Adapt and sample every chain; ``output_dir`` is not used (no checkpoints)."""
        jax = _load_jax(self.name, objective)
        blackjax = require("blackjax", self.name)
        jnp = jax.numpy
        d = objective.n_params

        def log_likelihood(z: Any) -> Any:
            value = objective.jax_log_likelihood(_to_params(objective, jax, z))
            return jnp.where(jnp.isnan(value), -jnp.inf, value)

        def log_density(z: Any) -> Any:
            return log_likelihood(z) + _log_jacobian(jax, z)

        z0, spent = _initial_z(jax, log_likelihood, objective, self.n_chains, self.seed, self.name)
        warmup_key, sample_key = jax.random.split(jax.random.key(self.seed))
        states, parameters, warmup_steps = self._adapt(
            jax, blackjax, log_density, warmup_key, z0, progress
        )
        sample = self._sampler(jax, blackjax, log_density, parameters, progress)
        z, _, divergent, acceptance, n_steps = sample(sample_key, states)
        x, ess, r_hat = self._summarise(objective, jax, blackjax, z)
        flat_x = np.asarray(x).reshape(-1, d)
        # the samples' log L from the objective's own batch: its programs report a linear solve
        # that ran out of steps, which the sampler's program cannot (as MAP does at its optima;
        # one evaluation per sample, against the many gradients each sample cost)
        flat_l = np.array(objective.log_likelihood(flat_x), dtype=float)
        best = int(np.argmax(flat_l))

        info: dict[str, Any] = {
            "step_size": np.asarray(parameters["step_size"]),
            "inverse_mass_matrix": np.asarray(parameters["inverse_mass_matrix"]),
            "n_divergent": int(np.sum(np.asarray(divergent))),
            "acceptance_rate": float(np.mean(np.asarray(acceptance))),
            "ess": np.asarray(ess),
            "r_hat": None if r_hat is None else np.asarray(r_hat),
            "initial": _params_on_host(objective, jax, jnp.asarray(z0)),
        }
        n_evaluations = spent + int(np.sum(np.asarray(warmup_steps))) + int(np.sum(n_steps))
        return SearchResult(
            name=self.name,
            paths=objective.paths,
            samples=flat_x,
            log_likelihood=flat_l,
            max_likelihood=flat_x[best],
            max_log_likelihood=float(flat_l[best]),
            log_evidence=None,
            log_evidence_error=None,
            n_evaluations=n_evaluations,
            seed=self.seed,
            info=info,
        )

    def _adapt(
        self,
        jax: ModuleType,
        blackjax: ModuleType,
        log_density: Callable,
        key: Any,
        z0: np.ndarray,
        progress: bool,
    ) -> Any:
        """The window adaptation of every chain from ``z0``: the chains' states, their tuned
        parameters (step size, inverse mass matrix) and the integration steps it took."""
        jnp = jax.numpy
        keep = blackjax.adaptation.base.get_filter_adapt_info_fn(
            info_keys={"num_integration_steps"}
        )
        warmup = blackjax.window_adaptation(
            blackjax.nuts,
            log_density,
            target_acceptance_rate=self.target_acceptance_rate,
            adaptation_info_fn=keep,
        )

        @jax.jit
        def adapt(keys: Any, z: Any) -> Any:
            def one(key: Any, position: Any) -> Any:
                (state, parameters), info = warmup.run(key, position, num_steps=self.n_warmup)
                return state, parameters, jnp.sum(info.info.num_integration_steps)

            return jax.vmap(one)(keys, z)

        t0 = time.perf_counter()
        if progress:
            print(f"nuts: warmup, {self.n_warmup} steps x {self.n_chains} chains", flush=True)
        out = adapt(jax.random.split(key, self.n_chains), jnp.asarray(z0))
        if progress:
            print(f"nuts: warmup done in {time.perf_counter() - t0:.1f} s", flush=True)
        return out

    def _sampler(
        self,
        jax: ModuleType,
        blackjax: ModuleType,
        log_density: Callable,
        parameters: Any,
        progress: bool,
    ) -> Callable:
        """The compiled sampling of every chain with its adapted ``parameters``: from a key
        and the chains' states, each step's positions, log densities, divergences,
        acceptance rates and integration steps."""
        jnp = jax.numpy
        every = _every(self.n_samples)

        def report(i: Any, accept: Any) -> None:
            print(
                f"nuts: sample {int(i)}/{self.n_samples}, acceptance {float(accept):.2f}",
                flush=True,
            )

        def one_step(key: Any, state: Any, params: Any) -> Any:
            return blackjax.nuts(log_density, **params).step(key, state)

        def step(states: Any, xs: Any) -> Any:
            i, keys = xs
            states, info = jax.vmap(one_step)(keys, states, parameters)
            if progress:
                jax.lax.cond(
                    (i + 1) % every == 0,
                    lambda: jax.debug.callback(report, i + 1, jnp.mean(info.acceptance_rate)),
                    lambda: None,
                )
            out = (
                states.position,
                states.logdensity,
                info.is_divergent,
                info.acceptance_rate,
                info.num_integration_steps,
            )
            return states, out

        @jax.jit
        def sample(key: Any, states: Any) -> Any:
            keys = jax.random.split(key, self.n_samples * self.n_chains)
            keys = keys.reshape(self.n_samples, self.n_chains, *keys.shape[1:])
            _, out = jax.lax.scan(step, states, (jnp.arange(self.n_samples), keys))
            return out

        return sample

    def _summarise(
        self, objective: ObjectiveLike, jax: ModuleType, blackjax: ModuleType, z: Any
    ) -> Any:
        """The samples ``z`` (samples, chains, d) as parameters (chains, samples, d), with
        their effective sample sizes and (two or more chains) R-hat."""
        jnp = jax.numpy
        diagnostics = blackjax.diagnostics

        @jax.jit
        def summarise(z: Any) -> Any:
            # one program: run eagerly, every operation here compiled on its own
            z = jnp.swapaxes(z, 0, 1)  # (samples, chains, ...) -> (chains, samples, ...)
            x = _to_params(objective, jax, z)
            r_hat = diagnostics.potential_scale_reduction(x) if self.n_chains > 1 else None
            return x, diagnostics.effective_sample_size(x), r_hat

        return summarise(z)

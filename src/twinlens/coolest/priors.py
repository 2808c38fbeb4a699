"""Our priors on free parameters, as priors of COOLEST's parameters."""

from __future__ import annotations

from typing import Any

from twinlens.coolest.profiles import _Param
from twinlens.lensing.tracer import Tracer
from twinlens.model.paths import get_path
from twinlens.model.priors import GaussianPrior, Prior, UniformPrior
from twinlens.user_warnings import warn_user


class _Priors:
    """Our priors on free parameters, as priors of COOLEST's parameters.

    A COOLEST parameter that is an affine function of one free parameter of ours (the others
    fixed) gets the image of its prior when COOLEST has that kind: ``UniformPrior`` (ours and
    COOLEST's, bounds mapped) and ``GaussianPrior`` (COOLEST's ``mean`` and ``width``). COOLEST
    has no log-uniform or truncated Gaussian prior, and the prior that ours induce on a
    nonlinear function (``q`` and ``phi`` of ``ell_comps``, ``gamma_ext`` and ``phi_ext`` of
    the shear, ``theta_eff`` when ``n`` is free too) has no closed form: those parameters get a
    prior of type null whose ``description`` says so and names our priors. A parameter with no
    free input keeps COOLEST's empty prior and is marked fixed, except an amplitude ``I_eff``,
    which the fit solved linearly (its prior stays empty, and it is not fixed)."""

    def __init__(self, priors: Any, tracer: Tracer) -> None:
        try:
            items = dict(priors)
        except (TypeError, ValueError):
            raise TypeError(
                "priors must map parameter paths to twinlens priors (a dict, or Model.priors), "
                f"got {type(priors).__name__}"
            ) from None
        for key, prior in items.items():
            get_path(tracer, key)  # a KeyError naming the tracer's parameters
            if not isinstance(prior, Prior):
                raise TypeError(
                    f"priors[{key!r}] must be a twinlens prior (twinlens.model), got "
                    f"{type(prior).__name__}"
                )
        self.priors: dict[str, Prior] = items
        self.used: set[str] = set()

    def coolest(self, proba: Any, param: _Param, tracer: Tracer) -> Any:
        """COOLEST's prior of ``param`` (from the module ``proba``), or None for none."""
        free = [p for p in param.inputs if p in self.priors]
        if param.name == "I_eff" and param.inputs[0] not in free:
            return None  # an amplitude the fit solved (a linear profile's): no prior
        if not free:
            return None
        self.used.update(free)
        named = " and ".join(f"{self.priors[p]!r} on {p}" for p in free)
        if len(free) == 1 and free[0] in param.affine_in:
            (path,) = free
            prior = self.priors[path]
            fixed = {p: float(get_path(tracer, p)) for p in param.inputs if p != path}

            def at(x: float) -> float:
                return float(param.fn(*[x if p == path else fixed[p] for p in param.inputs]))

            if isinstance(prior, UniformPrior):
                lo, hi = sorted((at(prior.lower), at(prior.upper)))
                return proba.UniformPrior(min_value=lo, max_value=hi)
            if isinstance(prior, GaussianPrior):
                mean = at(prior.mean)
                return proba.GaussianPrior(
                    mean=mean, width=abs(at(prior.mean + prior.sigma) - mean)
                )
            why = f"COOLEST has no {type(prior).__name__}"
        else:
            why = f"the prior induced on {param.name} has no COOLEST form"
        kind = "priors" if len(free) > 1 else "prior"
        return proba.Prior(None, description=f"twinlens {kind} {named}; {why}")

    def fixed(self, param: _Param) -> bool:
        """Whether the fit held ``param`` fixed: no input has a prior, and it is no amplitude
        (a linear profile's intensity is solved, not fixed)."""
        return param.name != "I_eff" and not any(p in self.priors for p in param.inputs)

    def report(self) -> None:
        unused = [p for p in self.priors if p not in self.used]
        if unused:
            warn_user(
                f"priors on parameters that no COOLEST parameter depends on (not written): "
                f"{unused}",
                UserWarning,
            )

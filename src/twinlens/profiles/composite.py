"""A sum of mass profiles treated as one profile (a galaxy's components, lenstronomy's
composite models such as EPL_MULTIPOLE_M1M3M4)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

from twinlens.profiles.base import MassProfile


@dataclass(frozen=True, eq=False)
class MassSum(MassProfile):
    """The sum of mass profiles: every lensing quantity is the sum of the parts'.

    Parameters
    ----------
    profiles : tuple of MassProfile
        The parts (a list is accepted and stored as a tuple). Value identity covers the parts:
        two sums of equal parts in the same order are equal and share compiled programs.
    """

    profiles: tuple = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.profiles, tuple) or not self.profiles:
            raise ValueError(
                f"MassSum.profiles must be a tuple of at least one mass profile, got "
                f"{self.profiles!r}"
            )
        for i, p in enumerate(self.profiles):
            if not isinstance(p, MassProfile):
                raise ValueError(
                    f"MassSum.profiles[{i}] must be a mass profile, got {type(p).__name__}"
                )

    def summands(self) -> tuple[MassProfile, ...]:
        """The parts, each nested sum opened into its own parts, in order."""
        return tuple(q for p in self.profiles for q in p.summands())

    def _sum(self, method: str, x: Any, y: Any, backend: str) -> Any:
        parts = [getattr(p, method)(x, y, backend) for p in self.profiles]
        if isinstance(parts[0], tuple):
            return tuple(reduce(lambda a, b: a + b, comp) for comp in zip(*parts, strict=True))
        return reduce(lambda a, b: a + b, parts)

    def _convergence(self, x, y, backend):
        return self._sum("_convergence", x, y, backend)

    def _deflections(self, x, y, backend):
        return self._sum("_deflections", x, y, backend)

    def _hessian(self, x, y, backend):
        return self._sum("_hessian", x, y, backend)

    def _potential(self, x, y, backend):
        return self._sum("_potential", x, y, backend)

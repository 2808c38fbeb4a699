"""The contributor guide's complete example: a Plummer lens as a kernel and a profile.

The projected Plummer lens deflects by ``alpha = theta_E**2 * r_vec / (r**2 + a**2)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from twinlens.backend import array_module, resolve_backend
from twinlens.backend.concrete import is_concrete
from twinlens.fields import ValueIdentity
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.registry import Kernel, register
from twinlens.kernels.tolerance import Tolerance


# 1. The math: a plain function of one point, written with arithmetic (and twinlens.kernels.ops
#    functions where needed). It runs as it is on numpy arrays.
def plummer_deflections(x, y, centre_x, centre_y, theta_e, core):
    dx = x - centre_x
    dy = y - centre_y
    f = theta_e * theta_e / (dx * dx + dy * dy + core * core)
    return f * dx, f * dy


# 2. The registry entry: argument domains (with the degenerate values drawn on purpose), the
#    tolerance, and ties (points exactly on the centre). numba and JAX are derived from step 1.
PLUMMER_DEFLECTIONS = register(
    Kernel(
        name="examples.plummer_deflections",
        point=plummer_deflections,
        inputs=(Arg("x", Domain(-10, 10, specials=(0.0,))), Arg("y", Domain(-10, 10))),
        params=(
            Arg("centre_x", Domain(-1, 1, specials=(0.0,))),
            Arg("centre_y", Domain(-1, 1)),
            Arg("theta_e", Domain(0.1, 3.0)),
            Arg("core", Domain(1e-4, 10.0, specials=(1e-4,), log=True)),
        ),
        outputs=("alpha_x", "alpha_y"),
        tol=Tolerance(rtol=1e-12, atol=1e-15),
        ties=(("x", "centre_x"), ("y", "centre_y")),
    )
)


# 3. The profile: a frozen dataclass whose fields are its parameters; methods call the kernel.
@dataclass(frozen=True, eq=False)
class Plummer(ValueIdentity):
    theta_e: float
    core: float
    centre: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        # Check concrete values only: under jit a free parameter is a tracer.
        if is_concrete(self.core) and not self.core > 0:
            raise ValueError(f"Plummer.core must be > 0 arcsec, got {self.core}")

    def deflections(self, xy, backend: str | None = None):
        """Deflections ``(N, 2)`` as ``(alpha_x, alpha_y)`` at positions ``xy`` ``(N, 2)``."""
        backend = resolve_backend(backend, xy, self.theta_e, self.core, *self.centre)
        xp = array_module(backend)
        xy = xp.asarray(xy)
        ax, ay = PLUMMER_DEFLECTIONS(
            xy[..., 0], xy[..., 1], *self.centre, self.theta_e, self.core, backend=backend
        )
        return xp.stack([ax, ay], axis=-1)

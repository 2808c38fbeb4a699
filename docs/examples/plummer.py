"""The contributor guide's complete example: a Plummer lens as kernels and a mass profile.

The projected Plummer lens, with ``a`` the core radius and ``S = r**2 + a**2``::

    psi   = theta_E**2 / 2 * ln(S / a**2)           (zero at the centre)
    alpha = theta_E**2 * (dx, dy) / S
    kappa = theta_E**2 * a**2 / S**2

so the mass inside radius ``R`` is ``pi theta_E**2 R**2 / (R**2 + a**2)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from twinlens.extend import (
    Arg,
    Domain,
    Kernel,
    KernelCall,
    MassProfile,
    Tolerance,
    check_pair,
    check_positive,
    ops,
    register,
)


# 1. The math: plain functions of one point, written with arithmetic (and twinlens.kernels.ops
#    functions where needed). They run as they are on numpy arrays. The argument names are the
#    profile's field names.
def plummer_convergence(x, y, centre_x, centre_y, einstein_radius, core_radius):
    """Convergence, dimensionless."""
    dx = x - centre_x
    dy = y - centre_y
    s = dx * dx + dy * dy + core_radius * core_radius
    return einstein_radius * einstein_radius * core_radius * core_radius / (s * s)


def plummer_deflections(x, y, centre_x, centre_y, einstein_radius, core_radius):
    """Deflections ``(alpha_x, alpha_y)``, arcsec."""
    dx = x - centre_x
    dy = y - centre_y
    f = einstein_radius * einstein_radius / (dx * dx + dy * dy + core_radius * core_radius)
    return f * dx, f * dy


def plummer_hessian(x, y, centre_x, centre_y, einstein_radius, core_radius):
    """Hessian ``(psi_xx, psi_xy, psi_yy)`` of the potential."""
    dx = x - centre_x
    dy = y - centre_y
    s = dx * dx + dy * dy + core_radius * core_radius
    f = einstein_radius * einstein_radius / s
    g = -2.0 * f / s
    return f + g * dx * dx, g * dx * dy, f + g * dy * dy


def plummer_potential(x, y, centre_x, centre_y, einstein_radius, core_radius):
    """Potential, arcsec^2, zero at the centre."""
    dx = x - centre_x
    dy = y - centre_y
    a2 = core_radius * core_radius
    return 0.5 * einstein_radius * einstein_radius * ops.log((dx * dx + dy * dy + a2) / a2)


# 2. The kernels: argument domains (with the degenerate values drawn on purpose), the
#    tolerance, and ties (points exactly on the centre). numba and JAX are derived from step 1.
#    Each is a module constant: the profile refers to it by name.
_XY = Domain(-10.0, 10.0, specials=(0.0, 1e-12, 10.0))
_PARAMS = (
    Arg("centre_x", Domain(-1.0, 1.0, specials=(0.0,))),
    Arg("centre_y", Domain(-1.0, 1.0)),
    Arg("einstein_radius", Domain(0.1, 3.0, specials=(1.0,))),
    Arg("core_radius", Domain(1e-4, 10.0, specials=(1e-4, 1.0), log=True)),
)
_TOL = Tolerance(rtol=1e-12, atol=1e-15)
# The potential subtracts ln(a^2) from ln(S): near the centre it cancels to a few ulp of ln(S).
_TOL_PSI = Tolerance(rtol=1e-12, atol=1e-13, why="ln(S) - ln(a^2) cancels at the centre")


def _kernel(name, point, outputs, tol=_TOL):
    return register(
        Kernel(
            name=f"examples.plummer_{name}",
            point=point,
            inputs=(Arg("x", _XY), Arg("y", _XY)),
            params=_PARAMS,
            outputs=outputs,
            tol=tol,
            ties=(("x", "centre_x"), ("y", "centre_y")),
            doc=f"Plummer lens: {name}.",
        )
    )


CONVERGENCE = _kernel("convergence", plummer_convergence, ("kappa",))
DEFLECTIONS = _kernel("deflections", plummer_deflections, ("alpha_x", "alpha_y"))
HESSIAN = _kernel("hessian", plummer_hessian, ("psi_xx", "psi_xy", "psi_yy"))
POTENTIAL = _kernel("potential", plummer_potential, ("psi",), _TOL_PSI)
KERNELS = {
    "convergence": CONVERGENCE,
    "deflections": DEFLECTIONS,
    "hessian": HESSIAN,
    "potential": POTENTIAL,
}


# 3. The profile: a frozen dataclass whose fields are its parameters. It says which kernel
#    computes each quantity, with which of its fields; MassProfile does the rest (positions,
#    backends, the fused numba loop, JAX pytrees, the fit TOML).
@dataclass(frozen=True, eq=False)
class Plummer(MassProfile):
    """Projected Plummer lens.

    Parameters
    ----------
    centre : (float, float)
        ``(x, y)`` of the centre, arcsec.
    einstein_radius : float
        ``theta_E`` > 0, arcsec: the deflection tends to ``theta_E**2 / r`` far out.
    core_radius : float
        ``a`` > 0, arcsec.
    """

    centre: tuple[float, float] = (0.0, 0.0)
    einstein_radius: float = 1.0
    core_radius: float = 0.1

    def __post_init__(self) -> None:
        super().__post_init__()
        # A concrete bad value is an error naming the field and the range; a traced or batched
        # one (a search's free parameter) makes the likelihood -inf there instead.
        check_pair(self, "centre", self.centre)
        check_positive(self, "einstein_radius", self.einstein_radius)
        check_positive(self, "core_radius", self.core_radius)

    def kernel_call(self, quantity: str) -> KernelCall:
        """The Plummer kernel of ``quantity`` with this profile's parameters."""
        return KernelCall(KERNELS[quantity], (*self.centre, self.einstein_radius, self.core_radius))

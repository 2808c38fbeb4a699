"""MassSum: the sum of its parts on every backend, one compiled program per structure."""

from __future__ import annotations

import numpy as np
import pytest
from invariants import jax, jnp

from twinlens.backend import BACKENDS
from twinlens.mass import SIE, ExternalShear, MassSheet, MassSum, PointMass

XY = np.random.default_rng(3).uniform(-2, 2, (50, 2))
PARTS = (
    SIE(ell_comps=(0.1, -0.05), einstein_radius=1.1),
    ExternalShear(gamma_1=0.03, gamma_2=0.01),
    MassSheet(kappa=0.05),
    PointMass(centre=(0.4, 0.2), einstein_radius=0.1),
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_quantity_is_the_sum_of_the_parts(backend):
    total = MassSum(PARTS)
    for name in ("convergence", "deflections", "hessian", "potential"):
        expected = sum(np.asarray(getattr(p, name)(XY, backend=backend)) for p in PARTS)
        np.testing.assert_allclose(
            getattr(total, name)(XY, backend=backend), expected, rtol=1e-14, atol=1e-15
        )


def test_identity_covers_the_parts_and_traced_parts_select_jax():
    assert MassSum(list(PARTS)) == MassSum(PARTS)
    assert MassSum(PARTS) != MassSum(PARTS[::-1])
    count = 0

    @jax.jit
    def deflect(g1):
        nonlocal count
        count += 1
        return MassSum((PARTS[0], ExternalShear(gamma_1=g1))).deflections(jnp.asarray(XY))

    np.testing.assert_allclose(
        deflect(0.03),
        PARTS[0].deflections(XY) + ExternalShear(gamma_1=0.03).deflections(XY),
        rtol=1e-13,
    )
    deflect(0.04)
    assert count == 1


def test_bad_parts_are_named():
    with pytest.raises(ValueError, match="at least one"):
        MassSum(())
    with pytest.raises(ValueError, match=r"MassSum.profiles\[1\] must be a mass profile"):
        MassSum((PARTS[0], 3.0))

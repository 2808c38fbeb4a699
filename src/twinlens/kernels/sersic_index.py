"""The Sersic ``b_n``, the one home of it for light and mass.

``b_n`` is the root of ``P(2n, b_n) = 1/2`` (``P`` the regularised lower incomplete gamma
function), so that ``R_eff`` encloses half of the total light (or mass).

* Concrete ``n`` (Python or numpy floats and arrays, concrete JAX arrays):
  ``scipy.special.gammaincinv(2n, 1/2)``, within ``2e-15`` relative of a 40-digit mpmath root
  for ``0.2 <= n <= 15`` (``tests/test_light_kernels.py``).
* Traced ``n`` (JAX): a Chebyshev series in ``log n`` on ``[N_LO, N_HI] = [0.2, 15]`` for
  ``b_n - 2n + 1/3``, summed by Clenshaw's recurrence. Its 41 coefficients are the series of
  40-digit mpmath roots at the Chebyshev nodes (``tests/test_light_kernels.py`` recomputes
  them and compares); the largest neglected one is 2e-21. It replaces Newton steps on
  ``jax.scipy.special.gammainc``, whose lowering (an iteration per step, and another for each
  derivative) was half of the W5 likelihood's JAX compile time. Values are within ``1e-15``
  relative of mpmath, and ``jax.grad`` differentiates the
  series, within ``1e-13`` relative of the implicit derivative ``-dP/dn / (dP/db)``. Outside
  ``[0.2, 15]`` the series extrapolates and is not accurate: the profiles refuse such indices
  (an error when concrete, ``-inf`` in a search).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special as sc

from twinlens.backend import jax_runtime
from twinlens.backend.concrete import any_jax, is_concrete

__all__ = ["N_HI", "N_LO", "sersic_b"]

#: the range of Sersic indices over which the traced ``b_n`` is accurate
N_LO, N_HI = 0.2, 15.0
_T_LO, _T_HI = math.log(N_LO), math.log(N_HI)
#: Chebyshev coefficients of ``b_n - 2 n + 1/3`` in ``x = 2 (log n - log N_LO) /
#: (log N_HI - log N_LO) - 1``
CHEBYSHEV = (
    0.021131684772342632,
    -0.03223760789339898,
    0.016642782709365138,
    -0.006376104697246901,
    0.0018116163014699818,
    -0.0003084011038268832,
    -2.795518291747245e-05,
    4.5474501140071815e-05,
    -1.903193767672443e-05,
    4.418036876349032e-06,
    -2.3811023249837868e-07,
    -2.5812428028896783e-07,
    1.1312176742867345e-07,
    -2.2399091691030552e-08,
    1.4031013405387564e-09,
    2.79789638940554e-11,
    2.1410814351536159e-10,
    -8.329216389470222e-11,
    -1.847074163775298e-11,
    2.3732266950858717e-11,
    -7.633643329915955e-12,
    4.1446977077006797e-13,
    4.562044562307864e-13,
    -1.1364777315352074e-13,
    -1.610330908000245e-14,
    8.571414485798788e-15,
    2.703232813152784e-15,
    -2.2283560495830674e-15,
    3.132668759946751e-16,
    1.5381349012033712e-16,
    -6.379534841957684e-17,
    -1.198750150839497e-18,
    5.182859840750681e-18,
    -1.9480952028056528e-19,
    -6.345769013362581e-19,
    1.3908255214444548e-19,
    4.475258490775678e-20,
    -2.2860003603211442e-20,
    -2.4290248632025373e-22,
    1.965921292207692e-21,
    -1.8449994151818696e-22,
)


def sersic_b(n: Any) -> Any:
    """The exact Sersic ``b_n`` (see the module).

    Parameters
    ----------
    n : float, array_like, or JAX array / tracer, any shape
        Sersic index, documented and tested for ``n`` in ``[0.2, 15]``. Nothing is checked
        here (the profiles check ranges).

    Returns
    -------
    float or array, the shape of ``n``
        A numpy float or array for numpy input, a JAX array for JAX input.
    """
    if not any_jax(n):
        return sc.gammaincinv(2.0 * np.asarray(n, dtype=float), 0.5)
    jnp = jax_runtime.load().numpy
    if is_concrete(n):
        return jnp.asarray(sc.gammaincinv(2.0 * np.asarray(n, dtype=float), 0.5))
    x = (2.0 * jnp.log(n) - (_T_LO + _T_HI)) / (_T_HI - _T_LO)
    # Clenshaw: b_k = c_k + 2 x b_(k+1) - b_(k+2), sum = c_0 + x b_1 - b_2
    b1 = jnp.zeros_like(x)
    b2 = jnp.zeros_like(x)
    for c in CHEBYSHEV[:0:-1]:
        b1, b2 = c + 2.0 * x * b1 - b2, b1
    return CHEBYSHEV[0] + x * b1 - b2 + 2.0 * n - 1.0 / 3.0

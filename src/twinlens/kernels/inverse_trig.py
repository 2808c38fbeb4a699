"""``arctan(z) / z`` and ``arctanh(z) / z`` smooth through ``z = 0``, with few divisions.

``arctan``: one angle halving, ``arctan(z) = 2 arctan(t)`` with ``t = z / (1 + sqrt(1 + z^2))``
(``|t| < 1`` for every real ``z``), then a polynomial in ``t^2`` for ``arctan(t) / t`` on
``[0, 1]``. Writing ``t = z r`` with ``r = 1 / (1 + sqrt(1 + z^2))`` gives the ratio to ``z``,
``2 r P(t^2)``, without dividing by ``z``.

``arctanh``: a polynomial in ``z^2`` for ``|z| <= 1/2``; above, ``log((1 + |z|) / (1 - |z|)) /
(2 |z|)``, where nothing cancels (``1 - |z|`` is exact there). Both forms are exact functions,
so the derivatives agree across the switch to rounding.

The polynomials are Chebyshev fits (``mpmath.chebyfit``, 40 digits) of ``arctan(sqrt(x)) /
sqrt(x)`` on ``[0, 1]`` (21 coefficients, fit error 5e-18) and ``arctanh(sqrt(x)) / sqrt(x)`` on
``[0, 1/4]`` (14 coefficients, 8e-18); ``tests/test_inverse_trig.py`` refits them.

Why not the library's ``arctan`` and ``arctanh``: at ``z = 0`` the ratio needs a branch, and in
numba a library call per point keeps the loop scalar. These use arithmetic, one ``sqrt`` or one
vectorising ``log``, so LLVM vectorises the loops that call them; numpy and JAX run the same
arithmetic. An earlier form halved the angle three (``arctan``) and four (``arctanh``) times,
each halving a square root and a division: 7 square roots and 9 divisions per SIE deflection,
now 1 and 3 and a logarithm, which matters most on a GPU, where a float64 division or square
root costs about twenty fused multiply-adds.

Accuracy (float64, against mpmath): ``arctan_ratio`` to 5e-16 relative for every real ``z``;
``arctanh_ratio`` to 5e-16 for ``|z| <= 0.99995`` (an axis ratio down to 0.01 in the isothermal
kernels) and beyond, to the rounding of ``1 - |z|``.
"""

from __future__ import annotations

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import log_vectorised as log
from twinlens.kernels.ops import pointwise, sqrt, where
from twinlens.kernels.registry import Kernel, register
from twinlens.kernels.tolerance import Tolerance

# arctan(sqrt(x)) / sqrt(x) on [0, 1], lowest degree first
_ATAN = (
    1.0,
    -0.3333333333333286,
    0.19999999999929946,
    -0.14285714281592693,
    0.11111110982087126,
    -0.09090906605656898,
    0.0769227555520563,
    -0.06666371187721098,
    0.05880342002401543,
    -0.052527255573225747,
    0.04719723992321112,
    -0.042125723963855326,
    0.03651081352721035,
    -0.02970071773623423,
    0.021740213830758134,
    -0.013674139288399478,
    0.007038646202989813,
    -0.0028047655531701315,
    0.0008033604181626027,
    -0.00014617088163625013,
    1.2631178430477426e-05,
)
# arctanh(sqrt(x)) / sqrt(x) on [0, 1/4], lowest degree first
_ATANH = (
    1.0,
    0.33333333333334253,
    0.1999999999976213,
    0.14285714309936393,
    0.11111109827808782,
    0.0909094967767514,
    0.07691479619739994,
    0.06678071960165906,
    0.057736807394426284,
    0.059849948126744074,
    0.014509315392605584,
    0.1449797049645602,
    -0.15287151789790238,
    0.22471180117043177,
)
#: |z| above which arctanh_ratio takes the logarithm
ATANH_SWITCH = 0.5


@pointwise
def _atan_series(x):
    total = 0.0 * x
    for n in range(len(_ATAN) - 1, -1, -1):
        total = total * x + _ATAN[n]
    return total


@pointwise
def _atanh_series(x):
    total = 0.0 * x
    for n in range(len(_ATANH) - 1, -1, -1):
        total = total * x + _ATANH[n]
    return total


@pointwise
def arctan_ratio(z):
    """``arctan(z) / z`` for real ``z``, equal to 1 at ``z = 0``."""
    r = 1.0 / (1.0 + sqrt(1.0 + z * z))
    t = z * r
    return 2.0 * r * _atan_series(t * t)


@pointwise
def arctanh_ratio(z):
    """``arctanh(z) / z`` for ``|z| < 1``, equal to 1 at ``z = 0``."""
    a = abs(z)
    small = a <= ATANH_SWITCH
    safe = where(small, 0.75, a)  # no 0 / 0 in the unused branch (nor in its gradient)
    far = log((1.0 + safe) / (1.0 - safe)) * (0.5 / safe)
    return where(small, _atanh_series(z * z), far)


ARCTAN_RATIO = register(
    Kernel(
        name="inverse_trig.arctan_ratio",
        point=arctan_ratio,
        inputs=(Arg("z", Domain(-1e3, 1e3, specials=(0.0, 1e-300, -1e-8, 0.4, 1.0, -1e3))),),
        params=(),
        outputs=("ratio",),
        tol=Tolerance(rtol=1e-15, atol=0.0),
        doc=arctan_ratio.__doc__ or "",
    )
)
ARCTANH_RATIO = register(
    Kernel(
        name="inverse_trig.arctanh_ratio",
        point=arctanh_ratio,
        inputs=(Arg("z", Domain(-0.99995, 0.99995, specials=(0.0, 1e-300, -1e-8, 0.5, 0.99995))),),
        params=(),
        outputs=("ratio",),
        tol=Tolerance(rtol=1e-15, atol=0.0),
        doc=arctanh_ratio.__doc__ or "",
    )
)

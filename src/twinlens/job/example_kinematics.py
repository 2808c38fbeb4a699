"""The simulated velocity dispersion of the time-delay examples' lens, and the
``[cosmography]`` and ``[kinematics]`` tables that fit it (``--example tdcosmo``, and the
quasar example's ``with_kinematics.toml``).

The dispersion is the spherical Jeans model of the lens's power law with a Hernquist light of
effective radius :data:`R_EFF` and Osipkov-Merritt orbits (``r_ani`` :data:`R_ANI`), in a
1" x 0.81" slit under 0.7" seeing, measured to :data:`SIGMA_FRACTION` of itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twinlens.job.example import _toml

__all__ = ["H0_TRUE", "R_ANI", "R_EFF", "cosmography_tables", "simulated_dispersion"]

#: the lens light's effective radius (arcsec), the true anisotropy radius (arcsec)
R_EFF, R_ANI = 1.0, 1.3
SLIT, SEEING_FWHM = {"type": "slit", "length": 1.0, "width": 0.81}, 0.7
#: the dispersion's error, relative
SIGMA_FRACTION = 0.03
H0_TRUE = 70.0


def _kinematics_data(sigma: float, error: float) -> Any:
    import twinlens.kinematics as K
    from twinlens.job.config_cosmography import HERNQUIST_REFF_OVER_A
    from twinlens.likelihood.cosmography import VelocityDispersionData

    return VelocityDispersionData(
        sigma,
        error,
        apertures=K.Slit(SLIT["length"], SLIT["width"]),
        seeing=K.GaussianSeeing(SEEING_FWHM),
        light=K.Hernquist(R_EFF / HERNQUIST_REFF_OVER_A),
    )


def simulated_dispersion(
    tracer: Any, redshifts: tuple[float, float], omega_m: float, seed: int
) -> tuple[float, float, float]:
    """``(true, measured, error)`` dispersion of the lens of ``tracer``, km/s (flat LambdaCDM
    with ``H0 = 70``, no mass sheet)."""
    import twinlens.kinematics as K
    from twinlens.likelihood.cosmography import Cosmography

    z_lens, z_source = redshifts
    cosmography = Cosmography(H0_TRUE, omega_m, 1.0, 0.0, z_lens=z_lens, z_source=z_source)
    data = _kinematics_data(250.0, 1.0)  # the values do not enter the prediction
    true = float(data.predicted(tracer, cosmography, K.OsipkovMerritt(R_ANI), "numpy")[0])
    error = SIGMA_FRACTION * true
    measured = true + np.random.default_rng(seed + 2000).normal(0.0, error)
    return true, float(measured), float(error)


def cosmography_tables(
    dispersion: tuple[float, float, float] | None, omega_m: float, mass_sheet: bool = True
) -> list[str]:
    """``[cosmography]``, and ``[kinematics]`` of a :func:`simulated_dispersion` (none when
    ``dispersion`` is None); without ``mass_sheet``, ``lambda_int`` is fixed at 1."""
    lambda_int = (
        [
            "# the internal mass sheet: the imaging and positions cannot see it",
            f"lambda_int = {_toml({'uniform': [0.6, 1.4]})}",
        ]
        if mass_sheet
        else ["lambda_int = 1.0  # no mass sheet: the question is the slope"]
    )
    lines = [
        "[cosmography]  # H0 sampled directly: D_dt and D_s / D_ds of flat LambdaCDM",
        f"h0 = {_toml({'uniform': [40.0, 100.0]})}  # km/s/Mpc",
        f"omega_m = {_toml(omega_m)}",
        *lambda_int,
        f"kappa_ext = {_toml({'gaussian': [0.0, 0.025], 'start': 0.0})}  # line of sight",
    ]
    if dispersion is None:
        return lines
    _, measured, error = dispersion
    return [
        *lines,
        "",
        "[kinematics]  # the lens galaxy's stellar velocity dispersion (spherical Jeans)",
        f"sigma = {_toml(round(measured, 2))}  # km/s",
        f"sigma_error = {_toml(round(error, 2))}",
        f"aperture = {_toml(SLIT)}  # arcsec",
        f"seeing_fwhm = {_toml(SEEING_FWHM)}",
        f"light = {_toml({'type': 'Hernquist', 'effective_radius': R_EFF})}",
        "anisotropy = "
        + _toml({"type": "OsipkovMerritt", "r_ani": {"uniform": [0.3, 5.0], "start": 1.0}}),
    ]

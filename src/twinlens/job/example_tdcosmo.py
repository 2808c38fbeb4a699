"""The time-delay cosmography example (``twinlens fit --example tdcosmo``): the time-delay
example's imaging, image positions and delays, and the lens galaxy's velocity dispersion in
a slit, fitted with ``H0`` and the internal mass sheet ``lambda_int`` free.

The lens, the host and the quasar are those of :mod:`twinlens.job.timedelay` (flat LambdaCDM,
``H0 = 70``, ``Omega_m = 0.3``; no mass sheet, ``lambda_int = 1``, ``kappa_ext = 0``). The
dispersion is the spherical Jeans model of the lens's power law with a Hernquist light of
effective radius :data:`R_EFF` and Osipkov-Merritt orbits (``r_ani`` :data:`R_ANI`), in a
1" x 0.81" slit under 0.7" seeing, measured to :data:`SIGMA_FRACTION` of itself.

The folder holds two configurations: ``fit.toml`` (with ``[kinematics]``) and
``without_kinematics.toml`` (the same without it): the second shows the mass-sheet
degeneracy, ``H0`` following ``lambda_int`` across its prior; the first breaks it.
:func:`plot_h0_comparison` draws the two ``H0`` posteriors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinlens.job.example import Imaging, write_example_files
from twinlens.job.timedelay import (
    OMEGA_M,
    TD_N_PIX,
    TD_NOISE,
    TD_PIXEL_SCALE,
    TD_PSF_FWHM,
    TD_PSF_SIZE,
    TIMEDELAY_TRUTH,
    Z_LENS,
    Z_SOURCE,
    _point_source,
    _toml,
    timedelay_config_text,
    timedelay_tracer,
)

__all__ = [
    "TDCOSMO_QUICK_SEARCH",
    "TDCOSMO_SEARCH",
    "TDCOSMO_TRUTH",
    "plot_h0_comparison",
    "quasar_kinematics_tables",
    "simulated_dispersion",
    "write_tdcosmo_example",
]

TDCOSMO_SEARCH = {"n_live": 200, "n_eff": 1000, "n_networks": 1}
TDCOSMO_QUICK_SEARCH = {"n_live": 100, "n_eff": 500, "n_networks": 1}
#: the lens light's effective radius (arcsec), the true anisotropy radius (arcsec)
R_EFF, R_ANI = 1.0, 1.3
SLIT, SEEING_FWHM = {"type": "slit", "length": 1.0, "width": 0.81}, 0.7
#: the dispersion's error, relative
SIGMA_FRACTION = 0.03
H0_TRUE = 70.0

TDCOSMO_TRUTH: dict[str, float] = {
    **TIMEDELAY_TRUTH,
    "cosmography.h0": H0_TRUE,
    "cosmography.lambda_int": 1.0,
    "cosmography.kappa_ext": 0.0,
    "kinematics.r_ani": R_ANI,
}


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


def simulated_dispersion(seed: int) -> tuple[float, float, float]:
    """``(true, measured, error)`` dispersion of the true lens, km/s."""
    import twinlens.kinematics as K
    from twinlens.likelihood.cosmography import Cosmography

    cosmography = Cosmography(H0_TRUE, OMEGA_M, 1.0, 0.0, z_lens=Z_LENS, z_source=Z_SOURCE)
    data = _kinematics_data(250.0, 1.0)  # the values do not enter the prediction
    true = float(
        data.predicted(timedelay_tracer(), cosmography, K.OsipkovMerritt(R_ANI), "numpy")[0]
    )
    error = SIGMA_FRACTION * true
    measured = true + np.random.default_rng(seed + 2000).normal(0.0, error)
    return true, float(measured), float(error)


def quasar_kinematics_tables(seed: int) -> list[str]:
    """The quasar example's ``[cosmography]`` and ``[kinematics]`` (``with_kinematics.toml``):
    no mass sheet (``lambda_int = 1``), the dispersion in place of the slope's prior."""
    return _tables(seed, True, mass_sheet=False)


def _tables(seed: int, kinematics: bool, mass_sheet: bool = True) -> list[str]:
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
        f"omega_m = {_toml(OMEGA_M)}",
        *lambda_int,
        f"kappa_ext = {_toml({'gaussian': [0.0, 0.025], 'start': 0.0})}  # line of sight",
    ]
    if not kinematics:
        return lines
    _, measured, error = simulated_dispersion(seed)
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


def write_tdcosmo_example(
    directory: str | Path,
    *,
    seed: int = 1,
    search: dict | None = None,
    backend: str = "numba",
    overwrite: bool = False,
) -> Path:
    """Simulate the example into ``directory``; write ``fit.toml`` and
    ``without_kinematics.toml``; return the first."""
    point = _point_source(seed)
    title = "twinlens example: time-delay cosmography, H0 with the mass sheet free"

    def text(chosen: dict, kinematics: bool = True) -> str:
        output = "fit_output" if kinematics else "fit_output_without_kinematics"
        name = title if kinematics else title + ", without the kinematics"
        extra = (name, _tables(seed, kinematics))
        return timedelay_config_text(chosen, backend, point, output, extra=extra)

    imaging = Imaging(TD_N_PIX, TD_PIXEL_SCALE, TD_PSF_FWHM, TD_PSF_SIZE, TD_NOISE)
    path = write_example_files(
        directory,
        text,
        TDCOSMO_SEARCH,
        seed=seed,
        search=search,
        overwrite=overwrite,
        scene=(timedelay_tracer(), imaging),
    )
    chosen = search or {"name": "nautilus", **TDCOSMO_SEARCH, "seed": seed}
    (path.parent / "without_kinematics.toml").write_text(text(chosen, kinematics=False))
    return path


def plot_h0_comparison(
    with_kinematics: np.ndarray, without: np.ndarray, path: str | Path, truth: float = H0_TRUE
) -> Path:
    """The two ``H0`` posteriors (equal-weight samples) on one axis, with the truth."""
    from twinlens.job.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8), constrained_layout=True)
    bins = np.linspace(40.0, 100.0, 61)
    for samples, label, colour in (
        (without, "imaging + delays", "C0"),
        (with_kinematics, "imaging + delays + dispersion", "C3"),
    ):
        lo, hi = np.percentile(samples, [16, 84])
        ax.hist(samples, bins=bins, density=True, alpha=0.5, color=colour,
                label=f"{label}: 68% [{lo:.1f}, {hi:.1f}]")  # fmt: skip
    ax.axvline(truth, color="k", lw=1, label=f"truth {truth:g}")
    ax.set_xlabel("H0 [km/s/Mpc]")
    ax.set_ylabel("posterior density")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)

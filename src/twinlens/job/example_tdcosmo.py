"""The time-delay cosmography example (``twinlens fit --example tdcosmo``): the time-delay
example's imaging, image positions and delays, and the lens galaxy's velocity dispersion in
a slit, fitted with ``H0`` and the internal mass sheet ``lambda_int`` free.

The lens, the host and the quasar are those of :mod:`twinlens.job.timedelay` (flat LambdaCDM,
``H0 = 70``, ``Omega_m = 0.3``; no mass sheet, ``lambda_int = 1``, ``kappa_ext = 0``); the
dispersion is :mod:`twinlens.job.example_kinematics`'s.

The folder holds two configurations: ``fit.toml`` (with ``[kinematics]``) and
``without_kinematics.toml`` (the same without it): the second shows the mass-sheet
degeneracy, ``H0`` following ``lambda_int`` across its prior; the first breaks it.
:func:`plot_h0_comparison` draws the two ``H0`` posteriors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twinlens.job.example_kinematics import (
    H0_TRUE,
    R_ANI,
    cosmography_tables,
    simulated_dispersion,
)
from twinlens.job.timedelay import (
    OMEGA_M,
    TIMEDELAY_TRUTH,
    Z_LENS,
    Z_SOURCE,
    _point_source,
    timedelay_config_text,
    timedelay_tracer,
    write_timedelay_files,
)

__all__ = [
    "TDCOSMO_QUICK_SEARCH",
    "TDCOSMO_SEARCH",
    "TDCOSMO_TRUTH",
    "plot_h0_comparison",
    "write_tdcosmo_example",
]

TDCOSMO_SEARCH = {"n_live": 200, "n_eff": 1000, "n_networks": 1}
TDCOSMO_QUICK_SEARCH = {"n_live": 100, "n_eff": 500, "n_networks": 1}
TDCOSMO_TRUTH: dict[str, float] = {
    **TIMEDELAY_TRUTH,
    "cosmography.h0": H0_TRUE,
    "cosmography.lambda_int": 1.0,
    "cosmography.kappa_ext": 0.0,
    "kinematics.r_ani": R_ANI,
}


def _tables(seed: int, kinematics: bool) -> list[str]:
    dispersion = None
    if kinematics:
        dispersion = simulated_dispersion(timedelay_tracer(), (Z_LENS, Z_SOURCE), OMEGA_M, seed)
    return cosmography_tables(dispersion, OMEGA_M)


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

    path = write_timedelay_files(directory, text, TDCOSMO_SEARCH, seed, search, overwrite)
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

"""The time-delay (H0) example: a lensed quasar's imaging, image positions and delays.

A power-law (EPL) plus external shear lens at ``z_lens = 0.5`` and a quasar in a Sersic host
galaxy at ``z_source = 2.0``, simulated with the time-delay distance of flat LambdaCDM
(``H0 = 70`` km/s/Mpc, ``Omega_m = 0.3``). The data are the host's lensed image (the quasar's
own point images taken as already subtracted), the four image positions (3 mas
uncertainties) and the three delays relative to the first image (with Gaussian errors). The fit
samples the lens, the host, the source position and ``D_dt``, and reports
``H0 = 70 D_dt(H0 = 70) / D_dt``.

:func:`write_timedelay_example` writes the FITS files and a ``fit.toml`` with a
``[point_source]`` table; ``twinlens fit --example timedelay`` calls it.
:func:`plot_time_delay_fit` draws the images with the critical curves, the source with the
caustics, and the H0 posterior.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.job.example import Imaging, config_document, write_example_files
from twinlens.job.example_kinematics import cosmography_tables, simulated_dispersion
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import Sersic
from twinlens.mass import ExternalShear, PowerLaw

__all__ = [
    "QUASAR_QUICK_SEARCH",
    "QUASAR_SEARCH",
    "TIMEDELAY_QUICK_SEARCH",
    "TIMEDELAY_SEARCH",
    "TIMEDELAY_TRUTH",
    "plot_time_delay_fit",
    "timedelay_tracer",
    "write_quasar_example",
    "write_timedelay_example",
]

Z_LENS, Z_SOURCE, H0_TRUE, OMEGA_M = 0.5, 2.0, 70.0, 0.3
TD_N_PIX, TD_PIXEL_SCALE, TD_SUB_SIZE, TD_NOISE, TD_MASK_RADIUS = 40, 0.1, 2, 0.05, 2.0
TD_PSF_FWHM, TD_PSF_SIZE = 0.15, 7
POSITION_SIGMA = 0.003  # arcsec
#: delay uncertainties: 2% of the delay, at least 0.25 days
DELAY_FRACTION, DELAY_FLOOR = 0.02, 0.25
#: the image solver of the fit (it must see every image: the window holds 2.5")
SOLVER = {"window": 2.5, "cells": 101}

TIMEDELAY_SEARCH = {"n_live": 150, "n_eff": 1000, "n_networks": 1}
TIMEDELAY_QUICK_SEARCH = {"n_live": 80, "n_eff": 400, "n_networks": 1}
QUASAR_SEARCH = {"n_live": 200, "n_eff": 2000, "n_networks": 1}
QUASAR_QUICK_SEARCH = {"n_live": 80, "n_eff": 400, "n_networks": 1}
#: the quasar example's slope prior: its positions and delays alone cannot tell the slope from
#: D_dt (a steeper profile gives longer delays), so the slope comes from other data
QUASAR_SLOPE_PRIOR = {"gaussian": [2.0, 0.1]}


def true_time_delay_distance() -> float:
    """``D_dt`` of the simulation, Mpc (flat LambdaCDM, ``H0 = 70``, ``Omega_m = 0.3``)."""
    from astropy.cosmology import FlatLambdaCDM

    from twinlens.cosmology import time_delay_distance

    return time_delay_distance(Z_LENS, Z_SOURCE, FlatLambdaCDM(H0=H0_TRUE, Om0=OMEGA_M))


#: the true values of the free parameters, by path (``D_dt`` from the cosmology)
TIMEDELAY_TRUTH: dict[str, float] = {
    "lenses[0].mass[0].ell_comps[0]": 0.1,
    "lenses[0].mass[0].ell_comps[1]": 0.05,
    "lenses[0].mass[0].einstein_radius": 1.2,
    "lenses[0].mass[0].slope": 2.05,
    "lenses[0].mass[1].gamma_1": 0.03,
    "lenses[0].mass[1].gamma_2": -0.02,
    "sources[0].light[0].centre[0]": 0.04,
    "sources[0].light[0].centre[1]": 0.03,
    "sources[0].light[0].effective_radius": 0.2,
    "point_source.centre[0]": 0.04,
    "point_source.centre[1]": 0.03,
}

TD_PRIORS = {
    "lenses[0].mass[0].ell_comps[0]": ("uniform", [-0.3, 0.3]),
    "lenses[0].mass[0].ell_comps[1]": ("uniform", [-0.3, 0.3]),
    "lenses[0].mass[0].einstein_radius": ("uniform", [1.0, 1.4]),
    "lenses[0].mass[0].slope": ("uniform", [1.7, 2.4]),
    "lenses[0].mass[1].gamma_1": ("uniform", [-0.1, 0.1]),
    "lenses[0].mass[1].gamma_2": ("uniform", [-0.1, 0.1]),
    "sources[0].light[0].centre[0]": ("uniform", [-0.2, 0.2]),
    "sources[0].light[0].centre[1]": ("uniform", [-0.2, 0.2]),
    "sources[0].light[0].effective_radius": ("log_uniform", [0.05, 1.0]),
    "point_source.centre[0]": ("uniform", [-0.2, 0.2]),
    "point_source.centre[1]": ("uniform", [-0.2, 0.2]),
    "point_source.time_delay_distance": ("uniform", [2000.0, 8000.0]),
}
HOST_INDEX, HOST_ELL, HOST_INTENSITY = 1.0, (0.05, -0.1), 0.8


def timedelay_tracer() -> Tracer:
    """The true lens and the quasar's host galaxy."""
    t = TIMEDELAY_TRUTH
    lens = PowerLaw(
        (0.0, 0.0),
        (t["lenses[0].mass[0].ell_comps[0]"], t["lenses[0].mass[0].ell_comps[1]"]),
        t["lenses[0].mass[0].einstein_radius"],
        t["lenses[0].mass[0].slope"],
    )
    shear = ExternalShear(t["lenses[0].mass[1].gamma_1"], t["lenses[0].mass[1].gamma_2"])
    host = Sersic(
        (t["sources[0].light[0].centre[0]"], t["sources[0].light[0].centre[1]"]),
        HOST_ELL,
        t["sources[0].light[0].effective_radius"],
        HOST_INDEX,
        HOST_INTENSITY,
    )
    return Tracer(Galaxy(mass=(lens, shear)), Galaxy(light=host))


def simulated_point_source(seed: int) -> dict[str, Any]:
    """The quasar's images (solved on the true lens), and noisy positions and delays."""
    from twinlens.lensing.lens_equation import ImageSolver
    from twinlens.lensing.point_sources import time_delays

    tracer = timedelay_tracer()
    beta = np.array(
        [TIMEDELAY_TRUTH["point_source.centre[0]"], TIMEDELAY_TRUTH["point_source.centre[1]"]]
    )
    images = ImageSolver(window=3.0, cells=301).solve(tracer, beta, "numpy")
    positions, _, _ = images.found()
    if len(positions) != 4:
        raise RuntimeError(f"the example lens made {len(positions)} images, not a quad")
    d_dt = true_time_delay_distance()
    delays = np.asarray(time_delays(tracer, positions, beta, d_dt, "numpy"))[1:]
    sigma = np.maximum(DELAY_FRACTION * np.abs(delays), DELAY_FLOOR)
    rng = np.random.default_rng(seed + 1000)
    return {
        "true_positions": positions,
        "positions": positions + rng.normal(0.0, POSITION_SIGMA, positions.shape),
        "true_delays": delays,
        "delays": delays + rng.normal(0.0, sigma),
        "delay_sigma": sigma,
    }


def _toml(value: Any) -> str:
    from twinlens.job.example import _toml as toml

    return toml(value)


def _free(path: str) -> dict:
    """A free parameter's prior table, starting at the simulation's truth where it has one:
    at the priors' medians the lens is round and unsheared with the source on its axis, which
    makes a ring rather than the four observed images, so ``log L`` there is -inf. ``D_dt``, the
    quantity measured, keeps its prior median."""
    kind, args = TD_PRIORS[path]
    start = TIMEDELAY_TRUTH.get(path)
    return {kind: args} if start is None else {kind: args, "start": start}


def _rounded(a: Any, digits: int) -> list:
    return [round(float(v), digits) for v in np.ravel(a)]


def timedelay_config_text(
    search: dict,
    backend: str,
    point: dict[str, Any],
    output: str = "fit_output",
    imaging: bool = True,
    extra: tuple[str, list[str]] | None = None,
) -> str:
    """The time-delay example's ``fit.toml``; without ``imaging``, the quasar example's (no
    [dataset], no host galaxy, and a prior on the slope, which positions and delays alone
    leave degenerate with ``D_dt``). ``extra``: a title and the lines of tables that give
    ``D_dt`` instead of ``[point_source]`` (``[cosmography]``, ``[kinematics]``)."""
    epl, shear, host = "lenses[0].mass[0]", "lenses[0].mass[1]", "sources[0].light[0]"

    def pair(path: str) -> str:
        return _toml([_free(f"{path}[0]"), _free(f"{path}[1]")])

    positions = [_rounded(p, 5) for p in point["positions"]]
    what = "time delays of a lensed quasar" if imaging else "a quasar's images and delays alone"
    source = [
        "[[source]]",
        "[[source.light]]  # the host galaxy; its intensity is solved linearly",
        'type = "LinearSersic"',
        f"centre = {pair(f'{host}.centre')}",
        f"ell_comps = {_toml(list(HOST_ELL))}",
        f"effective_radius = {_toml(_free(f'{host}.effective_radius'))}",
        f"sersic_index = {_toml(HOST_INDEX)}",
        "",
    ]
    slope = _toml(_free(f"{epl}.slope"))
    if not imaging and extra is None:
        slope = f"{_toml(QUASAR_SLOPE_PRIOR)}  # from elsewhere (imaging, kinematics)"
    elif not imaging:
        slope += "  # the dispersion measures it"
    lines = [
        "[[lens]]",
        "[[lens.mass]]",
        'type = "PowerLaw"',
        "centre = [0.0, 0.0]  # from the lens light",
        f"ell_comps = {pair(f'{epl}.ell_comps')}",
        f"einstein_radius = {_toml(_free(f'{epl}.einstein_radius'))}",
        f"slope = {slope}",
        "[[lens.mass]]",
        'type = "ExternalShear"',
        f"gamma_1 = {_toml(_free(f'{shear}.gamma_1'))}",
        f"gamma_2 = {_toml(_free(f'{shear}.gamma_2'))}",
        "",
        *(source if imaging else []),
        "[point_source]  # the quasar: image positions (arcsec) and delays (days)",
        f"positions = {_toml(positions)}",
        f"position_sigma = {_toml(POSITION_SIGMA)}",
        "# t_i - t_0 of images 1, 2, 3 relative to the first",
        f"delays = {_toml(_rounded(point['delays'], 3))}",
        f"delay_sigma = {_toml(_rounded(point['delay_sigma'], 3))}",
        'position_likelihood = "image"',
        f"solver = {_toml(SOLVER)}",
        f"centre = {pair('point_source.centre')}",
    ]
    if extra is None:
        lines += [
            f"time_delay_distance = {_toml(_free('point_source.time_delay_distance'))}  # Mpc",
            f"z_lens = {_toml(Z_LENS)}  # to report H0 (flat LambdaCDM)",
            f"z_source = {_toml(Z_SOURCE)}",
            f"omega_m = {_toml(OMEGA_M)}",
        ]
        title = f"twinlens example: {what}, EPL + shear, H0"
    else:
        title, tables = extra
        lines += [f"z_lens = {_toml(Z_LENS)}", f"z_source = {_toml(Z_SOURCE)}", "", *tables]
    dataset = (TD_SUB_SIZE, TD_MASK_RADIUS) if imaging else None
    note = "the host galaxy's lensed light (the quasar images subtracted)"
    return config_document(title, backend, output, search, lines, dataset, note)


def write_timedelay_example(
    directory: str | Path,
    *,
    seed: int = 1,
    search: dict | None = None,
    backend: str = "numba",
    overwrite: bool = False,
) -> Path:
    """Simulate the time-delay example into ``directory`` and write its ``fit.toml``."""

    def text(chosen: dict) -> str:
        return timedelay_config_text(chosen, backend, _point_source(seed))

    return write_timedelay_files(directory, text, TIMEDELAY_SEARCH, seed, search, overwrite)


def write_timedelay_files(
    directory: str | Path,
    text: Any,
    default_search: dict,
    seed: int,
    search: dict | None,
    overwrite: bool,
) -> Path:
    """The time-delay lens's imaging simulated into ``directory`` and ``text(search)`` written
    as its ``fit.toml`` (:func:`~twinlens.job.example.write_example_files`)."""
    imaging = Imaging(TD_N_PIX, TD_PIXEL_SCALE, TD_PSF_FWHM, TD_PSF_SIZE, TD_NOISE)
    scene = (timedelay_tracer(), imaging)
    return write_example_files(
        directory, text, default_search, seed=seed, search=search, overwrite=overwrite, scene=scene
    )


def write_quasar_example(
    directory: str | Path,
    *,
    seed: int = 1,
    search: dict | None = None,
    backend: str = "numba",
    overwrite: bool = False,
) -> Path:
    """Write the quasar example's ``fit.toml`` into ``directory``: the time-delay example's
    image positions and delays, fitted without imaging (``twinlens fit --example quasar``),
    and ``with_kinematics.toml``: the same with the lens's velocity dispersion in place of the
    slope's prior (:mod:`twinlens.job.example_kinematics`)."""
    point = _point_source(seed)

    def text(chosen: dict) -> str:
        return timedelay_config_text(chosen, backend, point, imaging=False)

    path = write_example_files(
        directory, text, QUASAR_SEARCH, seed=seed, search=search, overwrite=overwrite
    )
    chosen = search or {"name": "nautilus", **QUASAR_SEARCH, "seed": seed}
    title = "twinlens example: a quasar's images and delays and the lens's dispersion, H0"
    dispersion = simulated_dispersion(timedelay_tracer(), (Z_LENS, Z_SOURCE), OMEGA_M, seed)
    extra = (title, cosmography_tables(dispersion, OMEGA_M, mass_sheet=False))
    output = "fit_output_with_kinematics"
    kinematics = timedelay_config_text(chosen, backend, point, output, False, extra)
    (path.parent / "with_kinematics.toml").write_text(kinematics)
    return path


def _point_source(seed: int) -> dict[str, Any]:
    # one-off solves and delays: nothing worth memoising
    with memo.disabled():
        return simulated_point_source(seed)


def plot_time_delay_fit(
    fit: Any,
    tracer: Tracer,
    point_source: Any,
    data: Any,
    h0_samples: np.ndarray | None,
    path: str | Path,
    h0_title: str | None = None,
) -> Path:
    """Three panels: the data (the convergence, for a fit without imaging: ``fit`` None) with
    the observed and model images and the critical curves; the source plane with the caustics,
    the source and the ray-traced images; the H0 posterior (none when no redshifts were given:
    ``h0_samples`` None), titled ``h0_title`` (the job passes summary.txt's H0 line) or the
    samples' median and 68% interval."""
    from twinlens.job.plots import (
        _extent,
        _pyplot,
        critical_curves_and_caustics,
        point_source_half_width,
    )
    from twinlens.lensing.lens_equation import ImageSolver

    plt = _pyplot()
    if fit is None:
        w = point_source_half_width(data.positions)
        extent = (-w, w, -w, w)
        axis = np.linspace(-w, w, 200)
        xy = np.stack(np.meshgrid(axis, axis), axis=-1)
        image = np.log10(np.clip(np.asarray(tracer.convergence(xy, "numpy")), 1e-3, None))
        background = "log10 convergence"
    else:
        extent = _extent(fit)
        grid = fit.dataset.grid
        image = np.where(grid.used, fit.dataset.data, np.nan)
        background = "data"
    critical, caustics = critical_curves_and_caustics(tracer, extent, n=300)
    beta = np.array([float(point_source.centre[0]), float(point_source.centre[1])])
    half = max(abs(v) for v in extent)
    model, _, _ = ImageSolver(window=half, cells=201).solve(tracer, beta, "numpy").found()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), constrained_layout=True)
    ax = axes[0]
    ax.imshow(image, origin="lower", extent=extent, cmap="viridis")
    for c in critical:
        ax.plot(c[:, 0], c[:, 1], color="white", lw=0.8)
    obs = np.asarray(data.positions)
    ax.plot(obs[:, 0], obs[:, 1], "o", mfc="none", mec="red", ms=10, label="observed images")
    ax.plot(model[:, 0], model[:, 1], "+", color="orange", ms=10, label="model images")
    for i, (x, y) in enumerate(obs):
        ax.annotate(str(i), (x, y), xytext=(6, 6), textcoords="offset points", color="red")
    ax.set_title(f"{background}, images and critical curves")
    ax.legend(loc="lower right", fontsize=8)
    ax = axes[1]
    for c in caustics:
        ax.plot(c[:, 0], c[:, 1], color="C0", lw=0.8)
    back = np.asarray(tracer.source_plane(obs, "numpy"))
    ax.plot(back[:, 0], back[:, 1], "x", color="red", label="observed images, ray-traced")
    ax.plot(beta[0], beta[1], "*", color="orange", ms=12, label="source (model)")
    ax.set_aspect("equal")
    ax.set_title("source plane and caustics")
    ax.legend(loc="lower right", fontsize=8)
    for a in axes[:2]:
        a.set_xlabel("x [arcsec]")
        a.set_ylabel("y [arcsec]")
    ax = axes[2]
    if h0_samples is not None:
        ax.hist(h0_samples, bins=40, color="C2", alpha=0.8)
        lo, med, hi = np.percentile(h0_samples, [16, 50, 84])
        ax.axvline(med, color="k")
        ax.axvspan(lo, hi, color="k", alpha=0.1)
        ax.set_xlabel("H0 [km/s/Mpc]")
        default = f"H0 = {med:.5g} +{hi - med:.3g} -{med - lo:.3g} km/s/Mpc (68%)"
        ax.set_title(h0_title if h0_title is not None else default)
    else:
        ax.set_title("no redshifts given: no H0")
    ax.set_ylabel("posterior samples")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)

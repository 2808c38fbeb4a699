"""Where the pixelised example's lens model lands, configuration by configuration: the bias of
pixelised fits (docs/pixelised.rst, "Bias of pixelised lens models and how to avoid it").

``twinlens fit --example pixelised`` put the SIE's ``ell_comps[1]`` 5.5 sigma and the shear's
``gamma_2`` 4.7 sigma from their truths. This script takes the example's simulated data
(:func:`twinlens.job.example.simulate_example_dataset`; seed 1 is the example's) and, for
each source configuration, maximises the log-evidence over the five free lens parameters (the
SIE's ellipticity and Einstein radius, the shear; its centre fixed at the truth, as the
example does) and ``log10 lambda``: Nelder-Mead (numba backend) from the truth at its best
``lambda``, restarted from its end until a restart gains less than 0.05. Where the evidence is
rough (see ``roughness``), ``--starts`` more runs start from points drawn about the truth, and
the best is kept. One JSON line per seed and configuration, then a table:

* ``lnE_truth``: the log-evidence at the true lens, best ``lambda``; ``lnE_opt``: at the
  optimum; ``offsets``: the optimum less the truth, per parameter; ``offsets_sigma``: the same
  in units of ``SIGMA`` (the scatter of the optimum over noise realisations);
* ``roughness``: the rms about a parabola of ``ln E`` along 21 steps of 0.0004 in
  ``ell_comps[1]`` through the truth, ``lambda`` fixed: the evidence's noise from the mesh (a
  lattice gives ~0.05-0.1; one sigma is a drop of 0.5).

Configuration names (``DEFAULT``): ``<mesh>_<regularisation>[_<adapt image>]``. The mesh:
``del<n>`` (Delaunay on an ``n x n`` overlay; ``del15`` is the example's), ``rect<n>``,
``rad<n>`` (``Rectangular``, ``RectangularAdaptDensity``), ``radfix<n>`` (the true lens's
``rad<n>`` lattice frozen in the source plane, a diagnostic) or ``km`` (Delaunay on as many
vertices as the example's, clustered by k-means on the adapt image). The regularisation:
``con``, ``cur`` or ``ada`` (``AdaptiveBrightness`` from ``adaptive_pixelization``: weights
from the adapt image, tuned by the evidence at the first pass's lens). The adapt image:
``first`` (the model image of the example configuration's fit at its optimum, a first pass)
or ``truth`` (the true lensed source). Modifiers check the data and the fit: ``:sub4`` (4 x 4
sub-pixels in the fit), ``:noiseless``, ``:noise<sigma>``, ``:sim2`` (data simulated with
2 x 2 sub-pixels), ``:mask<r>``. Curvature is not defined on a Delaunay mesh. With several
seeds a second table gives each configuration's mean offset and its standard error. First,
one line checks the fit's forward model against the simulation (:func:`forward_check`).

    python benchmarks/pixelised_bias.py [--quick] [--seeds 1,2,3,4] [--configs ...] [--starts 4]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from twinlens import memo
from twinlens.fields import static_field
from twinlens.grids import Grid2D, bin_to_pixels
from twinlens.imaging.dataset import Imaging
from twinlens.imaging.psf import PSF, convolve
from twinlens.inversion import (
    AdaptiveBrightness,
    Constant,
    Curvature,
    Delaunay,
    FitPixelised,
    Pixelization,
    Rectangular,
    RectangularAdaptDensity,
    adapt_image,
    adaptive_pixelization,
    kmeans_vertices,
)
from twinlens.inversion.mapping import MaskedLayout
from twinlens.inversion.meshes import overlay_points
from twinlens.job import example
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.mass import SIE, ExternalShear

SIE_, SHEAR = "lenses[0].mass[0]", "lenses[0].mass[1]"
PATHS = (
    f"{SIE_}.ell_comps[0]",
    f"{SIE_}.ell_comps[1]",
    f"{SIE_}.einstein_radius",
    f"{SHEAR}.gamma_1",
    f"{SHEAR}.gamma_2",
)
NAMES = ("e1", "e2", "theta_E", "g1", "g2")
TRUTH = np.array([example.PIXELISED_TRUTH[p] for p in PATHS])
CENTRE = (
    example.PIXELISED_TRUTH[f"{SIE_}.centre[0]"],
    example.PIXELISED_TRUTH[f"{SIE_}.centre[1]"],
)
#: 1-sigma widths of the five lens parameters: the scatter (standard deviation) of the
#: optimum over seeds 1 to 8 of the smooth, unbiased configuration ``rad20_ada_first``
#: (``--seeds 1,2,3,4,5,6,7,8 --configs rad20_ada_first``); the example's posterior gave
#: 0.0033 (ell_comps[1]) and 0.0018 (gamma_2).
SIGMA = np.array([0.0047, 0.0042, 0.0008, 0.0021, 0.0020])
STEPS = np.array([0.01, 0.01, 0.01, 0.01, 0.01, 0.3])  # Nelder-Mead's first simplex


def lens(v: np.ndarray) -> Tracer:
    """The SIE plus shear at lens parameters ``v`` (``PATHS``' order), centre at the truth."""
    e1, e2, theta, g1, g2 = (float(x) for x in v)
    return Tracer(Galaxy(mass=(SIE(CENTRE, (e1, e2), theta), ExternalShear(g1, g2))))


def noise_free(sub_size: int, inside: np.ndarray | None = None) -> np.ndarray:
    """The example's image without noise, simulated with ``sub_size`` sub-pixels, as
    :func:`twinlens.imaging.dataset.simulate` computes it; with ``inside`` (boolean, the
    image's shape), the light outside it is dropped before the blurring."""
    imaging = example.PIXELISED_IMAGING
    grid = Grid2D.uniform(imaging.n_pix, imaging.pixel_scale, sub_size)
    psf = PSF.gaussian(imaging.psf_fwhm, imaging.pixel_scale, imaging.psf_size)
    layout = grid.layout()
    with memo.disabled():
        values = np.asarray(example.pixelised_example_tracer().image(layout.points, "numpy"))
    image = np.zeros(grid.n_pixels)
    image[layout.pixels] = bin_to_pixels(values, layout)
    image = image.reshape(grid.shape)
    return convolve(image if inside is None else np.where(inside, image, 0.0), psf)


def simulated(seed: int, noise: float | None = None, sub_size: int = 4) -> Imaging:
    """The example's data (:func:`~twinlens.job.example.simulate_example_dataset`), unmasked;
    ``noise`` other than None rescales the noise realisation and the noise map to that
    standard deviation (0: no noise, the example's noise map kept); another ``sub_size``
    simulates the image with that many sub-pixels instead of 4 x 4."""
    data = example.simulate_example_dataset(
        example.pixelised_example_tracer(), example.PIXELISED_IMAGING, seed=seed
    )
    if noise is None and sub_size == 4:
        return data
    sigma = example.PIX_NOISE
    scale = 1.0 if noise is None else noise / sigma
    image = noise_free(sub_size) + scale * (data.data - noise_free(4))
    noise_map = data.noise_map * (scale if scale > 0 else 1.0)
    return replace(data, data=image, noise_map=noise_map)


def masked(
    data: Imaging, sub_size: int = example.PIX_SUB_SIZE, radius: float | None = None
) -> Imaging:
    """``data`` as the example's fit reads it: a circular mask, ``sub_size`` sub-pixels."""
    radius = example.PIX_MASK_RADIUS if radius is None else radius
    grid = Grid2D.uniform(data.grid.shape, data.grid.pixel_scale, sub_size)
    return data.with_grid(grid.circular_mask(radius))


def forward_check() -> dict:
    """Does the fit model the data as they were simulated? ``chi^2`` (the example's noise)
    over the mask between the noise-free data and the true source taken through the fit's
    own pipeline, without a mesh: evaluated at the fit's traced, relocated sub-pixels (2 x 2
    and 4 x 4), averaged into pixels and blurred as an image zero outside the mask, as the
    mapping matrix is; and the part of it the fit cannot model, the light from outside the
    mask blurred into it."""
    clean = noise_free(4)
    source = Tracer(Galaxy(light=example.pixelised_example_tracer().sources[0].light))
    row: dict[str, Any] = {"check": "forward model"}
    for sub in (2, 4):
        data = masked(simulated(1, noise=0.0), sub)
        probe = Pixelization(Rectangular((3, 3)), Constant(1.0))
        fit = FitPixelised(data, lens(TRUTH), probe, "numba")
        values = np.asarray(source.image(np.asarray(fit.source_plane_points), "numpy"))
        layout = MaskedLayout(data)
        pixels = np.bincount(layout.sub_pixel, values * layout.sub_weight, data.mask_index.size)
        image = np.zeros(data.grid.n_pixels)
        image[data.mask_index] = pixels
        model = convolve(image.reshape(data.grid.shape), data.psf)
        row[f"chi2_true_source_sub{sub}"] = _chi2(clean - model, data)
    row["chi2_light_from_outside_mask"] = _chi2(clean - noise_free(4, data.grid.used), data)
    row["pixels"] = int(data.grid.used.sum())
    return row


def _chi2(residual: np.ndarray, data: Imaging) -> float:
    used = data.grid.used
    return round(float(np.sum((residual[used] / data.noise_map[used]) ** 2)), 3)


# -- the evidence and its optimisation ------------------------------------------------------

Make = Callable[[float], Pixelization]  # log10 lambda -> the pixelization


def log_e(data: Imaging, make: Make, v: np.ndarray, log_lam: float) -> float:
    """``ln E`` at lens ``v`` and ``lambda = 10**log_lam`` (numba); -inf where unusable."""
    try:
        value = float(FitPixelised(data, lens(v), make(log_lam), "numba").log_evidence)
    except ValueError:  # an ellipticity or coefficient out of range
        return -np.inf
    return value


def best_lambda(data: Imaging, make: Make, v: np.ndarray) -> tuple[float, float]:
    """``(ln E, log10 lambda)`` at lens ``v``, ``lambda`` maximising it."""
    r = minimize_scalar(
        lambda t: -log_e(data, make, v, t),
        bounds=(-6.0, 5.0),
        method="bounded",
        options={"xatol": 1e-3},
    )
    return -float(r.fun), float(r.x)


def optimise(data: Imaging, make: Make, start: np.ndarray) -> tuple[float, np.ndarray, int]:
    """Nelder-Mead over ``(lens, log10 lambda)`` from ``start``, restarted from its end with
    a fresh simplex until a restart gains less than 0.05 (at most 5 runs): a rugged evidence
    stops a simplex early. Returns ``(ln E, x, evaluations)``."""

    def cost(x: np.ndarray) -> float:
        value = log_e(data, make, x[:5], x[5])
        return -value if np.isfinite(value) else 1e30

    x, best, n = np.asarray(start, dtype=float), cost(start), 1
    for _ in range(5):
        simplex = np.vstack([x, x + np.diag(STEPS)])
        r = minimize(
            cost,
            x,
            method="Nelder-Mead",
            options={"initial_simplex": simplex, "xatol": 1e-4, "fatol": 1e-3, "maxfev": 3000},
        )
        n += int(r.nfev)
        gain, x = best - float(r.fun), r.x if r.fun < best else x
        best = min(best, float(r.fun))
        if gain < 0.05:
            break
    return -best, x, n


def roughness(data: Imaging, make: Make, v: np.ndarray, log_lam: float) -> float:
    """The rms about a parabola of ``ln E`` along 21 steps of 0.0004 in ``ell_comps[1]``
    through ``v`` (``lambda`` fixed): the evidence's noise from the mesh."""
    steps = np.linspace(-0.004, 0.004, 21)
    values = []
    for d in steps:
        w = v.copy()
        w[1] += d
        values.append(log_e(data, make, w, log_lam))
    values = np.asarray(values)
    fit = np.polyval(np.polyfit(steps, values, 2), steps)
    return float(np.sqrt(np.mean((values - fit) ** 2)))


# -- the configurations ---------------------------------------------------------------------


@dataclass
class Context:
    """One seed, and the first passes (the example configuration's fit at its optimum) that
    the adapt configurations start from, one per dataset."""

    seed: int
    first: dict = field(default_factory=dict)

    def first_pass(self, data: Imaging) -> FitPixelised:
        """The example configuration fitted to ``data`` at its optimum (found once)."""
        key = (data.data.tobytes(), data.grid.used.tobytes(), data.grid.sub_size)
        if key not in self.first:
            make = config_named(EXAMPLE).make(data, self)
            _, lam = best_lambda(data, make, TRUTH)
            _, x, _ = optimise(data, make, np.r_[TRUTH, lam])
            self.first[key] = FitPixelised(data, lens(x[:5]), make(x[5]), "numba")
        return self.first[key]


@dataclass(frozen=True)
class Config:
    """A source configuration and the data it fits.

    ``make(data, context)`` returns the log10-lambda -> Pixelization map; ``noise`` (None:
    the example's) and ``sim_sub_size`` say how the data are simulated (:func:`simulated`),
    ``sub_size`` and ``radius`` how they are fitted."""

    name: str
    make: Callable[[Imaging, Context], Make]
    sub_size: int = example.PIX_SUB_SIZE
    noise: float | None = None
    sim_sub_size: int = 4
    radius: float = example.PIX_MASK_RADIUS


def _vertex_count() -> int:
    """The example's overlay vertices inside its mask (the k-means meshes use as many)."""
    grid = Grid2D.uniform(example.PIX_N_PIX, example.PIX_PIXEL_SCALE, 1)
    mask = grid.circular_mask(example.PIX_MASK_RADIUS)
    return len(overlay_points(mask, example.PIX_MESH_SHAPE))


def true_adapt_image(data: Imaging) -> np.ndarray:
    """The noise-free lensed true source (4 x 4 sub-pixels), zero outside the mask."""
    return np.where(data.grid.used, noise_free(4), 0.0)


def the_adapt_image(data: Imaging, ctx: Context, source: str) -> np.ndarray:
    """The adapt image ``source``: "first", the model image of the example configuration's
    fit to ``data`` at its optimum (a first pass); "truth", the true lensed source."""
    if source == "truth":
        return true_adapt_image(data)
    return adapt_image(ctx.first_pass(data))


def build(mesh_token: str, reg: str, source: str | None) -> Callable[[Imaging, Context], Make]:
    """A configuration's pixelization: ``mesh_token`` is ``del<n>``, ``rect<n>``, ``rad<n>``
    (an ``n x n`` overlay or lattice) or ``km<f>`` (Delaunay on ``f`` times the example's
    vertex count, by k-means on the adapt image ``source``); ``reg`` is ``con``, ``cur`` or
    ``ada`` (AdaptiveBrightness, weights from ``source``'s :func:`adapt_signal` on the mesh
    at the first pass's lens, ``outer`` and ``signal_scale`` set by the evidence there)."""

    def make(data: Imaging, ctx: Context) -> Make:
        image = None if source is None else the_adapt_image(data, ctx, source)
        if mesh_token.startswith("km"):
            n = round(float(mesh_token[2:] or 1) * _vertex_count())
            mesh = Delaunay(image_vertices=kmeans_vertices(data.grid, image, n))
        elif mesh_token.startswith("radfix"):
            mesh = frozen_lattice(data, int(mesh_token[6:]))
        else:
            kind = mesh_token.rstrip("0123456789")
            mesh = MESHES[kind](int(mesh_token[len(kind) :]))
        if reg != "ada":
            return lambda t: Pixelization(mesh, REGULARIZATIONS[reg](10.0**t))
        assert image is not None, "AdaptiveBrightness needs an adapt image"
        tuned = adaptive_pixelization(ctx.first_pass(data), mesh, image).regularization
        weights = tuned.pixel_weights
        return lambda t: Pixelization(mesh, AdaptiveBrightness(10.0**t, pixel_weights=weights))

    return make


@dataclass(frozen=True, eq=False)
class FrozenLattice(Rectangular):
    """A lattice whose edges are fixed in the source plane, whatever the lens (a diagnostic:
    does the bias come from the mesh following the lens model?); ``box`` holds the ``nx``
    column edges, then the ``ny`` row edges."""

    box: tuple = static_field(default=())

    def edges(self, points: Any, xp: Any = np, weights: Any = None) -> tuple[Any, Any]:
        nx = self.shape[1]
        return np.asarray(self.box[:nx]), np.asarray(self.box[nx:])


def frozen_lattice(data: Imaging, n: int) -> FrozenLattice:
    """The ``n x n`` adaptive-density lattice of the true lens, frozen."""
    pix = Pixelization(RectangularAdaptDensity((n, n)), Constant(1.0))
    vertices = np.asarray(FitPixelised(data, lens(TRUTH), pix, "numba").source_vertices)
    return FrozenLattice((n, n), box=(*vertices[:n, 0], *vertices[::n, 1]))


MESHES = {
    "del": lambda n: Delaunay((n, n)),
    "rect": lambda n: Rectangular((n, n)),
    "rad": lambda n: RectangularAdaptDensity((n, n)),
}
REGULARIZATIONS = {"con": Constant, "cur": Curvature}
#: The configurations of a full run: ``<mesh>_<regularisation>[_<adapt image>]`` (see
#: :func:`build`), then modifiers: ``:sub4`` (4 x 4 sub-pixels in the fit), ``:noiseless``,
#: ``:noise<sigma>`` (the noise scaled to sigma), ``:sim2`` (data simulated with 2 x 2
#: sub-pixels), ``:mask<r>`` (mask radius).
DEFAULT = (
    "del15_con",
    "del25_con",
    "rect20_con",
    "rect20_cur",
    "rad20_con",
    "rad20_cur",
    "rad30_cur",
    "radfix20_cur",
    "km_con_first",
    "km_ada_first",
    "rad20_ada_first",
    "rad30_ada_first",
    "rad20_ada_truth",
    "del15_con:sub4",
    "rad20_cur:sub4",
    "del15_con:noiseless",
    "rect20_cur:noiseless",
    "rad20_cur:noiseless",
    "radfix20_cur:noiseless",
    "rad20_ada_first:noiseless",
    "rad20_cur:noise0.02",
    "rad20_cur:sim2",
    "rad20_cur:mask2.0",
)
QUICK = ("del15_con", "rect20_cur", "rad20_cur", "rad20_cur:noiseless", "rad20_ada_first")
EXAMPLE = "del15_con"  # the example's configuration (Delaunay on the 15 x 15 overlay)


def config_named(name: str) -> Config:
    """The configuration a name describes (see ``DEFAULT``)."""
    base, *mods = name.split(":")
    mesh, reg, *source = base.split("_")
    options: dict[str, Any] = {}
    for mod in mods:
        if mod == "sub4":
            options["sub_size"] = 4
        elif mod == "noiseless":
            options["noise"] = 0.0
        elif mod.startswith("noise"):
            options["noise"] = float(mod[5:])
        elif mod == "sim2":
            options["sim_sub_size"] = 2
        elif mod.startswith("mask"):
            options["radius"] = float(mod[4:])
        else:
            raise ValueError(f"unknown modifier {mod!r} in {name!r}")
    return Config(name, build(mesh, reg, source[0] if source else None), **options)


def dataset_for(config: Config, seed: int) -> Imaging:
    """The masked data ``config`` fits."""
    raw = simulated(seed, config.noise, config.sim_sub_size)
    return masked(raw, config.sub_size, config.radius)


ROUGH = 0.3  # above this roughness, a local optimum from the truth is one spike among many


def search(data: Imaging, make: Make, lam: float, starts: int) -> tuple[float, np.ndarray, int]:
    """The best of Nelder-Mead from the truth (at its best ``lambda``) and from ``starts``
    points drawn about it (2 ``SIGMA`` per parameter, a fixed generator)."""
    best, x, n = optimise(data, make, np.r_[TRUTH, lam])
    draws = np.random.default_rng(0).normal(0.0, 2.0, (starts, 5)) * SIGMA
    for d in draws:
        value, y, m = optimise(data, make, np.r_[TRUTH + d, lam])
        n += m
        if value > best:
            best, x = value, y
    return best, x, n


def run(config: Config, ctx: Context, starts: int) -> dict:
    """One configuration on one seed: the JSON row."""
    t0 = time.perf_counter()
    data = dataset_for(config, ctx.seed)
    make = config.make(data, ctx)
    lnE_truth, lam_truth = best_lambda(data, make, TRUTH)
    rough = roughness(data, make, TRUTH, lam_truth)
    lnE_opt, x, n = search(data, make, lam_truth, starts if rough > ROUGH else 0)
    offsets = x[:5] - TRUTH
    row = {
        "seed": ctx.seed,
        "config": config.name,
        "lnE_truth": round(lnE_truth, 2),
        "lnE_opt": round(lnE_opt, 2),
        "log10_lambda_opt": round(float(x[5]), 3),
        "offsets": dict(zip(NAMES, np.round(offsets, 4).tolist(), strict=True)),
        "offsets_sigma": dict(zip(NAMES, np.round(offsets / SIGMA, 1).tolist(), strict=True)),
        "roughness": round(rough, 3),
        "evaluations": n,
    }
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def _rst(head: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    rule = "  ".join("=" * w for w in widths)
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([rule, fmt(head), rule, *(fmt(line) for line in lines), rule])


def table(rows: list[dict]) -> str:
    """The rows as an rst table, offsets in units of ``SIGMA``."""
    head = ["seed", "config", "lnE truth", "lnE opt", *(f"d{n}/s" for n in NAMES), "rough"]
    lines = [
        [
            str(r["seed"]),
            r["config"],
            f"{r['lnE_truth']:.1f}",
            f"{r['lnE_opt']:.1f}",
            *(f"{r['offsets_sigma'][n]:+.1f}" for n in NAMES),
            f"{r['roughness']:.2f}",
        ]
        for r in rows
    ]
    return _rst(head, lines)


def mean_table(rows: list[dict]) -> str:
    """Per configuration, the mean offset over the seeds and its standard error, in units of
    ``SIGMA``, and the mean gain ``lnE opt - lnE truth``."""
    head = ["config", "seeds", *(f"d{n}/s" for n in NAMES), "gain"]
    lines = []
    for name in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == name]
        off = np.array([[r["offsets"][n] for n in NAMES] for r in mine]) / SIGMA
        sem = off.std(axis=0, ddof=1) / np.sqrt(len(mine)) if len(mine) > 1 else 0 * off[0]
        gain = np.mean([r["lnE_opt"] - r["lnE_truth"] for r in mine])
        cells = [f"{m:+.1f}+-{e:.1f}" for m, e in zip(off.mean(axis=0), sem, strict=True)]
        lines.append([name, str(len(mine)), *cells, f"{gain:.1f}"])
    return _rst(head, lines)


def main() -> None:
    # an optimiser's trial steps reach unusable meshes and matrices (-inf, said once each)
    logging.getLogger("twinlens.inversion").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"seed 1, configurations {QUICK}")
    parser.add_argument("--seeds", default="1,2,3,4")
    parser.add_argument("--configs", default=",".join(DEFAULT), help="comma-separated names")
    parser.add_argument(
        "--starts", type=int, default=4, help=f"more starts where the roughness > {ROUGH}"
    )
    args = parser.parse_args()
    seeds = [1] if args.quick else [int(s) for s in args.seeds.split(",")]
    names = list(QUICK if args.quick else args.configs.split(","))
    chosen = [config_named(n) for n in names]
    print(json.dumps(forward_check()), flush=True)
    rows = []
    for seed in seeds:
        ctx = Context(seed)
        for config in chosen:
            row = run(config, ctx, 0 if args.quick else args.starts)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(table(rows))
    if len(seeds) > 1:
        print(mean_table(rows))


if __name__ == "__main__":
    main()

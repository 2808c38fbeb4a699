"""Are staged pixelised fits calibrated? Coverage of the lens parameters over simulated lenses.

Each lens is an SIE plus external shear drawn at random (ellipticity, Einstein radius and
shear; the centre fixed at the example's, as its configuration fixes it) lensing an irregular
source drawn at random: an elliptical Sersic of random size and index plus one to three
Gaussian clumps of random width, place and brightness, observed at a random noise level (so
a random S/N). Each is fitted as the built-in pixelised example is (``twinlens fit --example
pixelised``: a Delaunay stage with one regularisation coefficient, then an adaptive-density
lattice with AdaptiveBrightness weights from the first stage, :mod:`twinlens.job.stages`),
through the fit job itself (its ``fit.toml`` and ``stage1.toml`` written with
:func:`twinlens.job.example.write_pixelised_example`).

For every lens and free lens parameter it reports whether the truth lies inside the 68% and
95% intervals of the equal-weight posterior samples, and the offset ``(median - truth) /
sigma`` (``sigma`` half the 68% interval). The summary gives each coverage pooled over the
parameters with its binomial standard error, and each parameter's mean offset with its
standard error. One JSON line per lens, then the tables. A lens whose fit is finished in
``--output`` is not fitted again (the job reuses a finished, up-to-date fit).

    python benchmarks/pixelised_calibration.py [--lenses 12] [--output DIR] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np

from twinlens.job import example, run_fit
from twinlens.job.config import load_config
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import GaussianLight, Sersic
from twinlens.mass import SIE, ExternalShear

#: the free lens parameters, in the example's configuration
LENS = (
    "lenses[0].mass[0].ell_comps[0]",
    "lenses[0].mass[0].ell_comps[1]",
    "lenses[0].mass[0].einstein_radius",
    "lenses[0].mass[1].gamma_1",
    "lenses[0].mass[1].gamma_2",
)
CENTRE = (
    example.PIXELISED_TRUTH["lenses[0].mass[0].centre[0]"],
    example.PIXELISED_TRUTH["lenses[0].mass[0].centre[1]"],
)


def draw_lens(seed: int) -> tuple[Tracer, example.Imaging, dict[str, float]]:
    """Lens ``seed``: its tracer, how it is observed, and its free parameters' truths."""
    rng = np.random.default_rng(1000 + seed)
    e = rng.uniform(-0.15, 0.15, 2)
    theta = rng.uniform(0.85, 1.2)
    gamma = rng.uniform(-0.05, 0.05, 2)
    lens = Galaxy(
        mass=(SIE(CENTRE, tuple(e), theta), ExternalShear(gamma_1=gamma[0], gamma_2=gamma[1]))
    )
    centre = rng.uniform(-0.15, 0.15, 2)
    light = [
        Sersic(
            tuple(centre),
            tuple(rng.uniform(-0.2, 0.2, 2)),
            effective_radius=rng.uniform(0.15, 0.35),
            sersic_index=rng.uniform(0.7, 2.0),
            intensity=rng.uniform(0.4, 1.0),
        )
    ]
    for _ in range(rng.integers(1, 4)):
        light.append(
            GaussianLight(
                centre=tuple(centre + rng.uniform(-0.25, 0.25, 2)),
                sigma=rng.uniform(0.03, 0.08),
                intensity=rng.uniform(0.8, 2.0),
            )
        )
    noise = rng.uniform(0.04, 0.1)
    imaging = dataclasses.replace(example.PIXELISED_IMAGING, noise=noise)
    truth = dict(zip(LENS, (*e, theta, *gamma), strict=True))
    return Tracer(lens, Galaxy(light=tuple(light))), imaging, truth


def fit_lens(seed: int, folder: Path, search: dict) -> dict[str, Any]:
    """Simulate lens ``seed`` into ``folder``, fit it in two stages, and score its posterior."""
    tracer, imaging, truth = draw_lens(seed)
    began = time.perf_counter()
    if not (folder / "fit.toml").exists():
        example.write_pixelised_example(folder, seed=seed, search=search, scene=(tracer, imaging))
    run_fit(load_config(folder / "fit.toml"), plot=False, progress=False)
    out = folder / "fit_output"
    header = (out / "samples.csv").read_text().splitlines()[0].split(",")
    samples = np.loadtxt(out / "samples.csv", delimiter=",", skiprows=1)
    row: dict[str, Any] = {"seed": seed, "noise": imaging.noise, "params": {}}
    for path, value in truth.items():
        column = samples[:, header.index(path)]
        q = np.percentile(column, [2.5, 16, 50, 84, 97.5])
        row["params"][path] = {
            "truth": value,
            "median": q[2],
            "in68": bool(q[1] < value < q[3]),
            "in95": bool(q[0] < value < q[4]),
            "offset_sigma": (q[2] - value) / (0.5 * (q[3] - q[1])),
        }
    row["seconds"] = time.perf_counter() - began
    return row


def summary(rows: list[dict]) -> dict[str, Any]:
    """Pooled coverages with their binomial standard errors; each parameter's mean offset."""
    out: dict[str, Any] = {"lenses": len(rows)}
    cells = [p for r in rows for p in r["params"].values()]
    for level in (68, 95):
        n, k = len(cells), sum(c[f"in{level}"] for c in cells)
        p = level / 100
        out[f"coverage{level}"] = k / n
        out[f"coverage{level}_expected_error"] = math.sqrt(p * (1 - p) / n)
    out["offsets"] = {}
    for path in LENS:
        z = np.array([r["params"][path]["offset_sigma"] for r in rows])
        se = float(z.std(ddof=1) / math.sqrt(z.size)) if z.size > 1 else math.nan
        out["offsets"][path] = {
            "mean": float(z.mean()),
            "standard_error": se,
            "coverage68": float(np.mean([r["params"][path]["in68"] for r in rows])),
            "coverage95": float(np.mean([r["params"][path]["in95"] for r in rows])),
        }
    return out


def table(result: dict[str, Any]) -> str:
    head = f"{'parameter':36s} {'mean offset/sigma':>18s} {'in 68%':>7s} {'in 95%':>7s}"
    lines = [head]
    for path, o in result["offsets"].items():
        lines.append(
            f"{path:36s} {o['mean']:+8.2f} +- {o['standard_error']:4.2f}   "
            f"{o['coverage68']:6.2f} {o['coverage95']:7.2f}"
        )
    for level in (68, 95):
        lines.append(
            f"pooled {level}% coverage {result[f'coverage{level}']:.3f} (expected {level / 100} "
            f"+- {result[f'coverage{level}_expected_error']:.3f})"
        )
    return "\n".join(lines)


def calibrate(n_lenses: int, output: Path, search: dict, log: Any = None) -> dict[str, Any]:
    """Fit lenses 1 to ``n_lenses`` into ``output/lens_<seed>`` and summarise them."""
    rows = []
    for seed in range(1, n_lenses + 1):
        row = fit_lens(seed, output / f"lens_{seed:02d}", {**search, "seed": seed})
        rows.append(row)
        if log is not None:
            log(json.dumps(row))
    return {**summary(rows), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lenses", type=int, default=12)
    parser.add_argument("--output", type=Path, default=Path("pixelised_calibration_output"))
    parser.add_argument("--quick", action="store_true", help="the example's --quick search")
    args = parser.parse_args()
    settings = example.PIXELISED_QUICK_SEARCH if args.quick else example.PIXELISED_SEARCH
    result = calibrate(
        args.lenses, args.output, {"name": "nautilus", **settings}, lambda s: print(s, flush=True)
    )
    print(table(result))


if __name__ == "__main__":
    main()

"""H0 with and without the lens's velocity dispersion: the tdcosmo example fitted twice.

``twinlens fit --example tdcosmo`` (:mod:`twinlens.job.example_tdcosmo`) simulates a quad with
delays and a slit dispersion; its folder holds ``fit.toml`` (imaging, positions, delays and the
dispersion, with ``H0``, ``lambda_int``, ``kappa_ext`` and ``r_ani`` free) and
``without_kinematics.toml`` (the same without the dispersion). This script fits both, prints
one JSON line per fit (wall time, evaluations, ``H0`` and ``lambda_int`` medians and 68%
intervals, the predicted dispersion) and draws the two ``H0`` posteriors into
``h0_comparison.png`` in the output folder::

    python benchmarks/tdcosmo_h0.py [--quick] [--seed 1] [--output DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from twinlens.job import run_fit
from twinlens.job.config import load_config
from twinlens.job.example_table import prepare_example
from twinlens.job.example_tdcosmo import H0_TRUE, plot_h0_comparison


def _fit(path: Path) -> tuple[dict, np.ndarray]:
    config = load_config(path)
    t0 = time.perf_counter()
    run_fit(config, progress=False, plot=True, restart=True)
    wall = time.perf_counter() - t0
    record = json.loads((config.output / "result.json").read_text())
    samples = np.loadtxt(config.output / "samples.csv", delimiter=",", skiprows=1)
    h0 = samples[:, config.model.paths.index("cosmography.h0")]
    lam = record["parameters"]["cosmography.lambda_int"]
    line = {
        "config": path.name,
        "wall_s": round(wall, 1),
        "n_evaluations": record["n_evaluations"],
        "h0": record["derived"]["h0"],
        "lambda_int": {k: lam[k] for k in ("median", "lower_68", "upper_68")},
        "velocity_dispersion": record["derived"].get("velocity_dispersion"),
    }
    return line, h0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    folder = args.output or Path(tempfile.mkdtemp(prefix="tdcosmo-"))
    fit_toml, _ = prepare_example("tdcosmo", folder, seed=args.seed, quick=args.quick)
    lines, h0 = {}, {}
    for name in ("without_kinematics.toml", fit_toml.name):
        lines[name], h0[name] = _fit(folder / name)
        print(json.dumps(lines[name]), flush=True)
    figure = plot_h0_comparison(
        h0[fit_toml.name], h0["without_kinematics.toml"], folder / "h0_comparison.png", H0_TRUE
    )
    widths = {n: np.subtract(*np.percentile(v, [84, 16])) for n, v in h0.items()}
    ratio = widths["without_kinematics.toml"] / widths[fit_toml.name]
    print(json.dumps({"h0_width_ratio_without_over_with": round(float(ratio), 2)}))
    print(f"figure: {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

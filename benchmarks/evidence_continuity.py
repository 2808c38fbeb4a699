"""Continuity of the pixelised log-evidence in a lens parameter: a fine scan of the SIE's
Einstein radius, and JAX's derivative against finite differences.

The data are the pixelised example's (``twinlens fit --example pixelised``): an SIE plus
external shear lensing an irregular source, 40 x 40 pixels of 0.1" simulated with 4 x 4
sub-pixels (seed 1), fitted with 2 x 2 sub-pixels inside a 1.8" circular mask. For each mesh
and border relocation rule, the Einstein radius runs from each ``--starts`` value in
``--steps`` steps of ``--step`` arcsec (the other lens parameters at their truths), and the
log-evidence's second differences ``d2`` are summarised:

* ``median_d2``, ``max_d2`` and ``ratio`` (max over median): a smooth surface has
  ``d2 ~ f'' step^2`` everywhere; a jump of the evidence shows as a pair of large ``d2``;
* ``jumps``: second differences above ``--threshold`` (0.1);
* ``largest_step``: the largest step of the evidence, estimated as the smaller of two
  neighbouring second differences of opposite signs (a step ``J`` between two points gives
  ``-J, +J``; a kink, where the slope alone changes, gives one, or two of the same sign, so
  it only counts where two kinks of opposite signs fall side by side);
* ``refined``: the largest second difference again, over the two steps around the largest
  one, with steps 10 and 100 times finer, as a fraction of the coarse one: a kink's second
  difference shrinks with the step (to ~0.1 and ~0.01), a jump's keeps its size (~1), so
  this says which the largest spike is;
* ``fd_rel_<h>``: the largest ``|FD_h - g| / |g|`` over ``--gradient-points`` points spread
  over the scan (at 10%, 30%, ... of it), with ``g`` JAX's derivative and ``FD_h`` the
  central difference ``(f(x + h) - f(x - h)) / 2h`` of the scan's backend, for ``h`` in 1e-6,
  1e-4 and 1e-3 arcsec: on a surface with cliffs the small step agrees with ``g`` and the
  larger ones do not (each point's values are in ``gradients``).

One JSON line per scan, then a table.

    python benchmarks/evidence_continuity.py [--quick] [--meshes rectangular,adaptive,delaunay]
        [--relocations smooth,nearest] [--backend numba] [--starts 1.0,1.05,1.2]
        [--steps 200] [--step 1e-5] [--coefficient 1.0] [--gradient-points 5]
"""

from __future__ import annotations

import argparse
import json
import os
import time

# numba's OpenMP threads must not spin while Qhull locates points (see inversion/loops.py)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np

from twinlens import memo
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.inversion import (
    Constant,
    Curvature,
    Delaunay,
    Pixelization,
    Rectangular,
    RectangularAdaptDensity,
    log_evidence,
)
from twinlens.job import example
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.mass import SIE, ExternalShear

#: the meshes scanned, with the regularisation each is fitted with
MESHES = {
    "rectangular": (Rectangular((18, 18)), Curvature),
    "adaptive": (RectangularAdaptDensity((18, 18)), Curvature),
    "delaunay": (Delaunay((16, 16)), Constant),
}
FD_STEPS = (1e-6, 1e-4, 1e-3)


def example_dataset() -> Imaging:
    """The pixelised example's data, masked as its ``fit.toml`` masks them."""
    grid = Grid2D.uniform(example.PIX_N_PIX, example.PIX_PIXEL_SCALE, 4)
    psf = PSF.gaussian(example.PIX_PSF_FWHM, example.PIX_PIXEL_SCALE, example.PIX_PSF_SIZE)
    with memo.disabled():
        data = simulate(
            example.pixelised_example_tracer(),
            grid,
            psf,
            noise_sigma=example.PIX_NOISE,
            seed=1,
            backend="numpy",
        )
    fitted = Grid2D.uniform(example.PIX_N_PIX, example.PIX_PIXEL_SCALE, example.PIX_SUB_SIZE)
    return data.with_grid(fitted.circular_mask(example.PIX_MASK_RADIUS))


def lens(einstein_radius: float) -> Tracer:
    """The example's true lens with the Einstein radius replaced."""
    t = example.PIXELISED_TRUTH
    sie, shear = "lenses[0].mass[0]", "lenses[0].mass[1]"
    mass = SIE(
        (t[f"{sie}.centre[0]"], t[f"{sie}.centre[1]"]),
        (t[f"{sie}.ell_comps[0]"], t[f"{sie}.ell_comps[1]"]),
        einstein_radius,
    )
    return Tracer(Galaxy(mass=(mass, ExternalShear(t[f"{shear}.gamma_1"], t[f"{shear}.gamma_2"]))))


def scan_statistics(values: np.ndarray, threshold: float) -> dict:
    """Median and maximum of the absolute second differences, their ratio, how many exceed
    ``threshold``, and the largest step (see the module documentation)."""
    signed = np.diff(values, 2)
    d2 = np.abs(signed)
    median = float(np.median(d2))
    # a step J between two points gives second differences -J, +J side by side (a kink,
    # one or two of the same sign): the smaller of an opposite-signed neighbouring pair
    opposite = np.sign(signed[:-1]) != np.sign(signed[1:])
    pairs = np.minimum(d2[:-1], d2[1:])[opposite]
    return {
        "median_d2": median,
        "max_d2": float(d2.max()),
        "ratio": float(d2.max() / median) if median > 0 else float("inf"),
        "jumps": int(np.sum(d2 > threshold)),
        "largest_step": float(pairs.max()) if pairs.size else 0.0,
    }


def refine(
    dataset: Imaging, pix: Pixelization, backend: str, x: float, step: float, largest: float
) -> list[float]:
    """The largest second difference over ``[x, x + 2 step]`` with steps ``step / 10`` and
    ``step / 100``, as fractions of ``largest`` (the coarse one there)."""
    out = []
    for factor in (10, 100):
        radii = x + (step / factor) * np.arange(2 * factor + 1)
        values = [float(log_evidence(lens(r), dataset, pix, backend)) for r in radii]
        out.append(float(np.abs(np.diff(values, 2)).max()) / largest)
    return out


def gradient_check(dataset: Imaging, pix: Pixelization, x: float, backend: str) -> dict:
    """JAX's derivative of the log-evidence in the Einstein radius at ``x``, and the relative
    disagreement of central differences of ``backend``'s values with it."""
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()
    g = float(jax.grad(lambda r: log_evidence(lens(r), dataset, pix, "jax"))(x))
    out = {"x": x, "grad_jax": g}
    for h in FD_STEPS:
        up = float(log_evidence(lens(x + h), dataset, pix, backend))
        down = float(log_evidence(lens(x - h), dataset, pix, backend))
        out[f"fd_rel_{h:g}"] = abs((up - down) / (2 * h) - g) / abs(g)
    return out


def scan(dataset: Imaging, pix: Pixelization, args: argparse.Namespace, start: float) -> dict:
    """One scan's row (see the module documentation)."""
    radii = start + args.step * np.arange(args.steps + 1)
    t0 = time.perf_counter()
    values = np.array([float(log_evidence(lens(r), dataset, pix, args.backend)) for r in radii])
    row = {"start": start, "seconds": round(time.perf_counter() - t0, 1)}
    row.update(scan_statistics(values, args.threshold))
    at = int(np.argmax(np.abs(np.diff(values, 2))))
    row["refined"] = refine(dataset, pix, args.backend, radii[at], args.step, row["max_d2"])
    if args.gradient_points:
        where = (np.arange(args.gradient_points) + 0.5) / args.gradient_points
        checks = [
            gradient_check(dataset, pix, start + f * (radii[-1] - start), args.backend)
            for f in where
        ]
        for h in FD_STEPS:
            row[f"fd_rel_{h:g}"] = max(c[f"fd_rel_{h:g}"] for c in checks)
        row["gradients"] = checks
    return row


def table(rows: list[dict]) -> str:
    """The rows as a plain-text table."""
    head = f"{'mesh':<12}{'relocation':<11}{'start':>6}{'median d2':>11}{'max d2':>9}"
    head += f"{'ratio':>8}{'jumps':>6}{'step':>9}{'refined':>15}" + "".join(
        f"{'FD ' + f'{h:g}':>10}" for h in FD_STEPS
    )
    lines = [head]
    for r in rows:
        line = f"{r['mesh']:<12}{r['relocation']:<11}{r['start']:>6g}{r['median_d2']:>11.2g}"
        line += f"{r['max_d2']:>9.2g}{r['ratio']:>8.0f}{r['jumps']:>6d}{r['largest_step']:>9.2g}"
        line += f"{'{:.2g}, {:.2g}'.format(*r['refined']):>15}"
        line += "".join(
            f"{r[f'fd_rel_{h:g}']:>10.1%}" if f"fd_rel_{h:g}" in r else f"{'-':>10}"
            for h in FD_STEPS
        )
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one start, 40 steps, 2 checks")
    parser.add_argument("--meshes", default=",".join(MESHES))
    parser.add_argument("--relocations", default="smooth,nearest")
    parser.add_argument("--backend", default="numba", choices=("numpy", "numba", "jax"))
    parser.add_argument("--starts", default="1.0,1.05,1.2", help="Einstein radii, arcsec")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--step", type=float, default=1e-5, help="arcsec")
    parser.add_argument("--coefficient", type=float, default=1.0, help="lambda")
    parser.add_argument("--threshold", type=float, default=0.1)
    parser.add_argument(
        "--gradient-points", type=int, default=5, help="JAX derivative checks (0: none)"
    )
    args = parser.parse_args()
    starts = [float(s) for s in args.starts.split(",")]
    if args.quick:
        starts, args.steps = starts[-1:], 40
        args.gradient_points = min(args.gradient_points, 2)
    dataset = example_dataset()
    rows = []
    for name in args.meshes.split(","):
        mesh, regularization = MESHES[name]
        for rule in args.relocations.split(","):
            pix = Pixelization(mesh, regularization(args.coefficient), relocation=rule)
            for start in starts:
                row = {"mesh": name, "relocation": rule, "backend": args.backend}
                row.update(scan(dataset, pix, args, start))
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()

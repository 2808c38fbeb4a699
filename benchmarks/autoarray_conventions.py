"""How far each of autoarray's conventions moves the pixelised log-evidence (docs/pixelised.rst,
"Differences from autolens").

The data are the pixelised example's (``twinlens fit --example pixelised``: 40 x 40 pixels of
0.1", simulated with 4 x 4 sub-pixels, seed 1, fitted with 2 x 2 inside a 1.8" mask; see
``evidence_continuity.py``), the lens at its true parameters. Each configuration changes one
convention from our defaults (``Delaunay(placement="inset", outside_hull="hull_edge")``,
``Pixelization(relocation="smooth", positive=False)``) to autoarray's, or the three of the
mesh and relocation at once, which is autoarray's evaluation with its linear solve, and with
positivity too, which is its default (``tests/test_pixelised_autoarray.py``). For each,
the log-evidence at ``lambda = 1`` and its maximum over ``--lambdas`` log-spaced values of
``lambda`` from 0.01 to 100 (the example's prior), with the differences from ours, absolute
and relative.

One JSON line per configuration, then a table.

    python benchmarks/autoarray_conventions.py [--backend numba] [--lambdas 33]
        [--shape 15,15] [--rectangular 18,18] [--matched 16,16]
"""

from __future__ import annotations

import argparse
import json
import os

# numba's OpenMP threads must not spin while Qhull locates points (see inversion/loops.py)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
from evidence_continuity import example_dataset, lens

from twinlens.inversion import Constant, Delaunay, Pixelization, Rectangular, log_evidence
from twinlens.job import example

AUTOARRAY = {"placement": "cell_centres", "outside_hull": "nearest_vertex"}


def configurations(shape: tuple, rect: tuple, matched: tuple) -> dict:
    """name: (mesh, relocation, positive, the name of the configuration it is compared with)."""
    cells = f"{matched[0]}x{matched[1]}"
    mine = "delaunay ours"
    return {
        mine: (Delaunay(shape), "smooth", False, None),
        "delaunay relocation=nearest": (Delaunay(shape), "nearest", False, mine),
        "delaunay relocation=ellipse": (Delaunay(shape), "ellipse", False, mine),
        "delaunay placement=cell_centres": (
            Delaunay(shape, placement="cell_centres"),
            "smooth",
            False,
            mine,
        ),
        f"delaunay placement=cell_centres {cells}": (
            Delaunay(matched, placement="cell_centres"),
            "smooth",
            False,
            mine,
        ),
        "delaunay outside_hull=nearest_vertex": (
            Delaunay(shape, outside_hull="nearest_vertex"),
            "smooth",
            False,
            mine,
        ),
        "delaunay positive=True": (Delaunay(shape), "smooth", True, mine),
        "delaunay all three": (Delaunay(shape, **AUTOARRAY), "ellipse", False, mine),
        "delaunay all three, positive": (Delaunay(shape, **AUTOARRAY), "ellipse", True, mine),
        "rectangular ours": (Rectangular(rect), "smooth", False, None),
        "rectangular relocation=ellipse": (
            Rectangular(rect),
            "ellipse",
            False,
            "rectangular ours",
        ),
    }


def measure(tracer, dataset, mesh, relocation, positive, lambdas, backend) -> dict:
    """The log-evidence at ``lambda = 1`` and its maximum over ``lambdas``."""

    def f(lam: float) -> float:
        pix = Pixelization(mesh, Constant(lam), positive=positive, relocation=relocation)
        return float(log_evidence(tracer, dataset, pix, backend))

    values = [f(lam) for lam in lambdas]
    best = int(np.argmax(values))
    vertices = mesh.image_plane_vertices(dataset.grid)
    return {
        "source_pixels": mesh.n_pixels if vertices is None else len(vertices),
        "log_evidence_lambda_1": f(1.0),
        "best_lambda": float(lambdas[best]),
        "best_log_evidence": values[best],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--lambdas", type=int, default=33)
    parser.add_argument("--shape", default=",".join(map(str, example.PIX_MESH_SHAPE)))
    parser.add_argument("--rectangular", default="18,18")
    # autoarray's overlay of the same shape keeps fewer points in the mask (its outer points
    # lie nearer the box's corners): a larger one that keeps about as many as ours
    parser.add_argument("--matched", default="16,16")
    args = parser.parse_args()
    shape, rect, matched = (
        tuple(int(n) for n in text.split(","))
        for text in (args.shape, args.rectangular, args.matched)
    )
    dataset = example_dataset()
    tracer = lens(example.PIXELISED_TRUTH["lenses[0].mass[0].einstein_radius"])
    lambdas = np.geomspace(0.01, 100.0, args.lambdas)
    rows: dict = {}
    for name, (mesh, relocation, positive, reference) in configurations(
        shape, rect, matched
    ).items():
        row = {"configuration": name}
        row.update(measure(tracer, dataset, mesh, relocation, positive, lambdas, args.backend))
        if reference is not None:
            ref = rows[reference]
            for key in ("log_evidence_lambda_1", "best_log_evidence"):
                row[f"{key}_minus_ours"] = row[key] - ref[key]
                row[f"{key}_relative"] = (row[key] - ref[key]) / abs(ref[key])
        rows[name] = row
        print(json.dumps(row), flush=True)
    print()
    print(
        f"{'configuration':40s} {'pixels':>6s} {'lnE(1)':>10s} {'d(1)':>8s} {'rel':>8s} "
        f"{'lambda*':>8s} {'lnE*':>10s} {'d*':>8s} {'rel':>8s}"
    )
    for row in rows.values():
        d1 = row.get("log_evidence_lambda_1_minus_ours", 0.0)
        r1 = row.get("log_evidence_lambda_1_relative", 0.0)
        db = row.get("best_log_evidence_minus_ours", 0.0)
        rb = row.get("best_log_evidence_relative", 0.0)
        print(
            f"{row['configuration']:40s} {row['source_pixels']:6d} "
            f"{row['log_evidence_lambda_1']:10.2f} {d1:8.2f} {r1:8.2%} "
            f"{row['best_lambda']:8.3g} {row['best_log_evidence']:10.2f} {db:8.2f} {rb:8.2%}"
        )


if __name__ == "__main__":
    main()

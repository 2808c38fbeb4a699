"""Catalogue runs on Dask: lenses per hour on 1 and 2 worker processes, and the scheduler's
overhead per task.

Cases, one JSON line each:

* ``workers-1`` / ``workers-2``: the ``twinlens batch --example`` catalogue (N simulated
  lenses, default 4), fitted from scratch on a ``LocalCluster`` of 1 and of 2 worker
  processes (one thread each), with a warm numba cache (a first, untimed run fills it);
  wall seconds, lenses per hour, and the compile and per-lens seconds the runner reports.
* ``overhead``: 1,000 tiny tasks (a function returning its argument) submitted to a
  2-worker ``LocalCluster`` and gathered; milliseconds per task.

The last line gives the ratio of lenses per hour, 2 workers against 1 (goal >= 1.8), and the
overhead per task (goal < 5 ms). Run: ``cd benchmarks && python batch_scaling.py [--lenses N]``
on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path


def _fit(folder: Path, workers: int) -> dict:
    from twinlens.catalogue import load_catalogue, run_catalogue

    shutil.rmtree(folder / "output", ignore_errors=True)
    catalogue = load_catalogue(folder / "catalogue.toml")
    began = time.perf_counter()
    table = run_catalogue(catalogue, workers=workers, plot=False, progress=False)
    wall = time.perf_counter() - began
    done = sum(str(r["status"]) == "done" for r in table)
    fit_seconds = [float(r["wall_time_s"]) for r in table if str(r["status"]) == "done"]
    return {
        "case": f"workers-{workers}",
        "lenses": len(table),
        "done": done,
        "wall_s": round(wall, 2),
        "lenses_per_hour": round(done * 3600.0 / wall, 1),
        "median_search_s": round(sorted(fit_seconds)[len(fit_seconds) // 2], 2),
    }


def _identity(x: int) -> int:
    return x


def _overhead(n_tasks: int = 1000) -> dict:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        client.gather(client.map(_identity, range(50)))  # warm up
        began = time.perf_counter()
        futures = client.map(_identity, range(1000, 1000 + n_tasks))
        client.gather(futures)
        wall = time.perf_counter() - began
    return {"case": "overhead", "tasks": n_tasks, "ms_per_task": round(1000 * wall / n_tasks, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lenses", type=int, default=4, help="lenses in the catalogue")
    args = parser.parse_args()
    from twinlens.catalogue import example, load_catalogue, run_catalogue

    folder = Path(tempfile.mkdtemp(prefix="twinlens_batch_scaling_"))
    example.write_example(folder, n_lenses=args.lenses, seed=3)
    # fill the numba cache first: compile cost is reported by the runner, not timed here
    warm = load_catalogue(folder / "catalogue.toml")
    warm.tasks = warm.tasks[:1]
    run_catalogue(warm, workers=1, plot=False, progress=False)
    rows = [_fit(folder, 1), _fit(folder, 2), _overhead()]
    for row in rows:
        print(json.dumps(row), flush=True)
    ratio = rows[1]["lenses_per_hour"] / rows[0]["lenses_per_hour"]
    print(
        json.dumps(
            {
                "case": "ratios",
                "two_workers_over_one": round(ratio, 2),
                "goal_two_workers_over_one": 1.8,
                "ms_per_task": rows[2]["ms_per_task"],
                "goal_ms_per_task": 5.0,
            }
        )
    )
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

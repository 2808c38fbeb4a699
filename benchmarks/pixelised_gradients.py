"""Gradient searches on a pixelised source against nautilus: the pixelised example's data,
fitted with nautilus (numba) and with JAX's MAP and NUTS, on one mesh: the example's first
stage with its mesh and regularisation replaced, or (``--staged``) the example's own second
stage, its adaptive weights made from its first stage's nautilus fit (run once).

Prints, per search, the posterior mean and width of every parameter and, for NUTS, how far
its means lie from nautilus's (in nautilus sigmas) and the ratio of its widths; then the JAX
objective's compile time (first gradient) apart from its steady time per gradient, and each
search's wall time.

    python benchmarks/pixelised_gradients.py --quick
    python benchmarks/pixelised_gradients.py --mesh RectangularAdaptDensity --shape 20 20
    python benchmarks/pixelised_gradients.py --staged
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from twinlens.backend import jax_runtime
from twinlens.job.config import load_config
from twinlens.job.example import write_pixelised_example
from twinlens.job.stages import resolve_stages
from twinlens.search import search_from_config

MESH_LINE = re.compile(r"^mesh = .*$", re.MULTILINE)
REG_TYPE = re.compile(r'^(regularization = \{type = )"Constant"', re.MULTILINE)


def _config_file(folder: Path, args: argparse.Namespace) -> Path:
    """The pixelised example's data in ``folder`` and the configuration to fit: its fit.toml
    (``--staged``), or its stage1.toml with the mesh, regularisation and relocation
    replaced."""
    staged = write_pixelised_example(folder, seed=1)
    if args.staged:
        return staged
    mesh = f'mesh = {{type = "{args.mesh}", shape = {list(args.shape)}}}'
    text = (folder / "stage1.toml").read_text()
    text = MESH_LINE.sub(f'{mesh}\nrelocation = "{args.relocation}"', text)
    path = folder / "one_stage.toml"
    path.write_text(REG_TYPE.sub(rf'\1"{args.regularization}"', text))
    return path


def _objective(path: Path, backend: str) -> object:
    """The configuration's objective on ``backend``, its stages resolved (the first stage's fit
    run once, then reused)."""
    return resolve_stages(load_config(path, backend=backend), progress=False).objective()


def _moments(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, mid, hi = np.percentile(samples, [16, 50, 84], axis=0)
    return mid, 0.5 * (hi - lo)


def _gradient_times(path: Path, repeats: int) -> dict:
    """The JAX objective's first value-and-gradient (compile included) and its steady time."""
    jax = jax_runtime.load()  # float64 on
    objective = _objective(path, "jax")
    start = np.asarray(objective.model.start, dtype=float)
    grad = jax.jit(jax.value_and_grad(objective.jax_log_likelihood))
    t0 = time.perf_counter()
    jax.block_until_ready(grad(start))
    first = time.perf_counter() - t0
    times = []
    for k in range(repeats):
        x = start * (1.0 + 1e-6 * (k + 1))
        t0 = time.perf_counter()
        jax.block_until_ready(grad(x))
        times.append(time.perf_counter() - t0)
    return {"compile_s": first - float(np.median(times)), "gradient_ms": 1e3 * np.median(times)}


def _run(path: Path, backend: str, settings: dict) -> tuple[object, float]:
    objective = _objective(path, backend)
    search = search_from_config(**settings)
    t0 = time.perf_counter()
    result = search.run(objective, None, progress=False)
    return result, time.perf_counter() - t0


def _say(key: str, value: object) -> None:
    """One line of JSON per finished step, so that a long run reports as it goes."""
    print(json.dumps({key: value}), flush=True)


def _compare(reference: object, sampled: object, optimum: object) -> dict:
    names = reference.paths
    mean_n, sigma_n = _moments(reference.samples)
    mean_s, sigma_s = _moments(sampled.samples)
    return {
        name: {
            "nautilus": [float(mean_n[i]), float(sigma_n[i])],
            "nuts": [float(mean_s[i]), float(sigma_s[i])],
            "map": float(optimum.max_likelihood[i]),
            "nuts_offset_sigma": float((mean_s[i] - mean_n[i]) / sigma_n[i]),
            "nuts_width_ratio": float(sigma_s[i] / sigma_n[i]),
        }
        for i, name in enumerate(names)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mesh", default="Rectangular")
    parser.add_argument("--shape", type=int, nargs=2, default=[18, 18])
    parser.add_argument("--regularization", default="Constant")
    parser.add_argument("--relocation", default="smooth", choices=["smooth", "nearest"])
    parser.add_argument("--staged", action="store_true", help="the example's second stage")
    parser.add_argument("--map-starts", type=int, default=4, help="MAP's starts (vmapped)")
    parser.add_argument("--quick", action="store_true", help="fewer live points and samples")
    args = parser.parse_args(argv)
    quick = args.quick
    nautilus = {"name": "nautilus", "n_live": 100 if quick else 400}
    nautilus["n_eff"] = 300 if quick else 2000
    nuts = {"name": "nuts", "n_warmup": 100 if quick else 500}
    nuts["n_samples"] = 150 if quick else 1500
    _say("settings", {**vars(args), "nautilus": nautilus, "nuts": nuts})
    with tempfile.TemporaryDirectory() as tmp:
        path = _config_file(Path(tmp), args)
        _say("jax_gradient", _gradient_times(path, 20))
        reference, seconds = _run(path, "numba", nautilus)
        _say("nautilus", {"wall_s": seconds, "median": _moments(reference.samples)[0].tolist()})
        optimum, seconds = _run(path, "jax", {"name": "map", "n_starts": args.map_starts})
        _say("map", {"wall_s": seconds, "optimum": optimum.max_likelihood.tolist()})
        sampled, seconds = _run(path, "jax", nuts)
        _say("nuts", {"wall_s": seconds, "n_divergent": sampled.info.get("n_divergent")})
    _say("parameters", _compare(reference, sampled, optimum))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

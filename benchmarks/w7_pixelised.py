"""W7: the pixelised-source log-evidence on the W5 data (100 x 100 pixels at 0.05", 4 x 4
sub-pixels, SIE + shear, 21 x 21 PSF) inside a 2.5" circular mask, with a Delaunay source of
about 1,000 vertices (a 36 x 36 overlay) and a 40 x 40 rectangular source.

Prints one JSON line per case: wall time per evaluation (median and minimum after warm-up)
and CPU time per call, on numba and JAX (JAX compile time apart), with ``--vmap N`` a JAX vmap
over N lens parameter sets, and, when autogalaxy (autoarray) is importable, the same problem
on autoarray in the same run: its Delaunay mapper on our traced sub-pixels and the same traced
vertices, and its uniform 40 x 40 rectangular mesh, constant regularisation with coefficient
``sqrt(lambda)``, positivity off, the evidence terms; its time starts from the traced
sub-pixels (the lens deflections, a few ms, are not counted for it). ``ratio_vs_autoarray``
is autoarray's median over ours.

``autoarray-jax`` is the same autoarray calls with ``xp=jax.numpy`` under ``jax.jit`` (its JAX
switch in 2026.7.27.1; jit compile as ``first_call_s``, medians after warm-up), the traced
sub-pixels as the argument, with ``ratio_vs_autoarray_jax_<ours>`` and its evidence's relative
difference from autoarray's numpy path and from ours. It runs for the rectangular mesh with
constant regularisation. For the Delaunay mesh with constant regularisation it does not run in
2026.7.27.1: the regularisation takes the mesh's neighbours from ``scipy.spatial.Delaunay`` on
the vertices, which raises ``TracerArrayConversionError`` on a traced array, whether the
vertices are a jit argument or a closed-over concrete array (``jnp`` operations on them are
staged into the trace); autoarray's docstring for ``Constant`` says so and points to its
split-cross regularisation (``ConstantSplit``), a different prior from ours, so not compared.
The row then carries ``traced_vertices_error`` and ``error``.

    python benchmarks/w7_pixelised.py [--quick] [--vmap 16] [--backends numba,jax]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from functools import partial

# numba's OpenMP threads must not spin while Qhull locates points (see inversion/loops.py)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
from timing import block, first_call, measure
from workloads import simulate_dataset, w5_lens_mass, w5_truth

from twinlens.inversion import Constant, Delaunay, Pixelization, Rectangular, log_evidence
from twinlens.inversion.solve import one_blas_thread
from twinlens.lensing.tracer import Galaxy, Tracer

MASK_RADIUS = 2.5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a 40 x 40 image, for a smoke run")
    parser.add_argument("--vmap", type=int, default=0, help="JAX vmap batch size (0: skip)")
    parser.add_argument("--backends", default="numba,jax")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    side = 40 if args.quick else 100
    data = simulate_dataset(w5_truth(), side=side)
    data = data.with_grid(data.grid.circular_mask(MASK_RADIUS))
    lens = Tracer(Galaxy(mass=w5_lens_mass()))
    meshes = {"delaunay": Delaunay((36, 36)), "rectangular": Rectangular((40, 40))}
    ours: dict = {}
    for name, mesh in meshes.items():
        pix = Pixelization(mesh, Constant(1.0))
        ref = None
        for backend in args.backends.split(","):
            row = {"case": f"w7_{name}", "backend": backend, "pixels": int(data.grid.used.sum())}
            fn = lambda b=backend, p=pix: log_evidence(lens, data, p, b)  # noqa: E731
            if backend == "jax":
                row["first_call_s"] = first_call(fn)
            row.update(measure(fn, repeats=args.repeats, warmup=1))
            ours[(name, backend)] = row["wall_median_ms"]
            value = float(fn())
            row["log_evidence"] = value
            ref = value if ref is None else ref
            row["rel_diff_vs_first_backend"] = abs(value - ref) / abs(ref)
            print(json.dumps(row), flush=True)
        if args.vmap and "jax" in args.backends:
            from twinlens.backend import jax_runtime

            jax = jax_runtime.load()
            sie, shear = w5_lens_mass()

            def one(theta_e, lam, sie=sie, shear=shear, pix=pix):
                t = Tracer(Galaxy(mass=(replace(sie, einstein_radius=theta_e), shear)))
                return log_evidence(t, data, replace(pix, regularization=Constant(lam)), "jax")

            batched = jax.jit(jax.vmap(one))
            thetas = jax.numpy.asarray(1.2 + 1e-3 * np.linspace(-1, 1, args.vmap))
            lams = jax.numpy.asarray(np.logspace(-1, 1, args.vmap))
            with one_blas_thread():
                t0 = time.perf_counter()
                block(batched(thetas, lams))
                compile_s = time.perf_counter() - t0
                timed = measure(lambda f=batched, a=thetas, b=lams: f(a, b), repeats=3, warmup=0)
            row = {
                "case": f"w7_{name}_vmap{args.vmap}",
                "backend": "jax",
                "first_call_s": compile_s,
            }
            row.update(timed)
            row["wall_median_ms_per_member"] = timed["wall_median_ms"] / args.vmap
            print(json.dumps(row), flush=True)
        for peer in _autoarray_case(name, lens, data, pix, args.repeats):
            tag = "autoarray_jax" if peer["backend"] == "autoarray-jax" else "autoarray"
            if "wall_median_ms" in peer:
                for backend in args.backends.split(","):
                    if (name, backend) in ours:
                        peer[f"ratio_vs_{tag}_{backend}"] = (
                            peer["wall_median_ms"] / ours[(name, backend)]
                        )
                ref = peer["ours_numba_log_evidence"]
                peer["rel_diff_vs_ours_numba"] = abs(peer["log_evidence"] - ref) / abs(ref)
            print(json.dumps(peer), flush=True)


def _autoarray_case(name, lens, data, pix, repeats):
    """The same evaluation on autoarray, from our traced, relocated sub-pixels (and, for
    Delaunay, the same traced vertices); None when autoarray is not installed."""
    try:
        import autoarray as aa
        from autoarray.fit import fit_util
    except ImportError:
        return []
    from twinlens.inversion import FitPixelised
    from twinlens.inversion import pixelization as pixfit

    fit = FitPixelised(data, lens, pix, "numba")
    masked = pixfit._problem(data, pix.mesh).masked
    grid = data.grid
    ny, nx = grid.shape
    ps = grid.pixel_scale
    mask = aa.Mask2D(mask=np.flipud(~grid.used), pixel_scales=(ps, ps))
    rc = np.argwhere(~np.asarray(mask))
    pos = masked.image_to_mask[(ny - 1 - rc[:, 0]) * nx + rc[:, 1]]
    subs = np.concatenate([masked.order[masked.starts[p] : masked.starts[p + 1]] for p in pos])
    points = np.asarray(fit.source_plane_points)[subs][:, ::-1].copy()
    f = masked.layout.levels[0][0]
    pixel_yx = np.stack([grid.y.reshape(-1), grid.x.reshape(-1)], -1)[data.mask_index][pos]
    kernel = aa.Array2D.no_mask(values=np.flipud(data.psf.kernel).copy(), pixel_scales=ps)
    imaging = aa.Imaging(
        data=aa.Array2D(values=np.flipud(data.data).copy(), mask=mask),
        noise_map=aa.Array2D(values=np.flipud(data.noise_map).copy(), mask=mask),
        psf=aa.Convolver(kernel=kernel),
        over_sample_size_pixelization=f,
        use_normalized_psf=False,
    )
    coefficient = float(np.sqrt(pix.regularization.coefficient))
    if name == "delaunay":
        vertices = np.asarray(fit.source_vertices)
        mesh = aa.mesh.Delaunay(pixels=vertices.shape[0])
        mesh_grid = aa.Grid2DIrregular(values=vertices[:, ::-1].copy())
    else:
        mesh = aa.mesh.RectangularUniform(shape=pix.mesh.shape)
        mesh_grid = None
    settings = aa.Settings(use_positive_only_solver=False)
    noise = np.asarray(imaging.noise_map.array)
    values = np.asarray(imaging.data.array)

    def evaluate(points, mesh_values, xp=np):
        data_grid = aa.Grid2D(
            values=pixel_yx,
            mask=mask,
            over_sample_size=f,
            over_sampled=aa.Grid2DIrregular(values=points, xp=xp),
            xp=xp,
        )
        mesh_grid = None if mesh_values is None else aa.Grid2DIrregular(values=mesh_values, xp=xp)
        interpolator = mesh.interpolator_from(
            source_plane_data_grid=data_grid, source_plane_mesh_grid=mesh_grid, xp=xp
        )
        mapper = aa.Mapper(
            interpolator=interpolator, regularization=aa.reg.Constant(coefficient), xp=xp
        )
        inv = aa.Inversion(dataset=imaging, linear_obj_list=[mapper], settings=settings, xp=xp)
        model = xp.asarray(inv.mapped_reconstructed_operated_data.array)
        return fit_util.log_evidence_from(
            chi_squared=xp.sum(((values - model) / noise) ** 2),
            regularization_term=inv.regularization_term,
            log_curvature_regularization_term=inv.log_det_curvature_reg_matrix_term,
            log_regularization_term=inv.log_det_regularization_matrix_term,
            noise_normalization=float(np.sum(np.log(2 * np.pi * noise**2))),
        )

    vertex_values = None if mesh_grid is None else np.asarray(mesh_grid.array)
    row = {"case": f"w7_{name}", "backend": "autoarray", "version": aa.__version__}
    fn = lambda: evaluate(points, vertex_values)  # noqa: E731
    row["first_call_s"] = first_call(fn)
    row.update(measure(fn, repeats=repeats, warmup=1))
    row["log_evidence"] = float(fn())
    row["ours_numba_log_evidence"] = float(fit.log_evidence)
    rows = [row]
    # autoarray's JAX path: the same calls with ``xp=jax.numpy`` under ``jax.jit``, the traced
    # sub-pixels (and Delaunay vertices) as the arguments
    row = {"case": f"w7_{name}", "backend": "autoarray-jax", "version": aa.__version__}
    try:
        import jax

        jnp = jax.numpy
        jitted = jax.jit(lambda p, v: evaluate(p, v, xp=jnp))
        vertices = None if vertex_values is None else jnp.asarray(vertex_values)
        fn = lambda: jitted(jnp.asarray(points), vertices)  # noqa: E731
        try:
            row["first_call_s"] = first_call(fn)
        except jax.errors.TracerArrayConversionError as err:
            # Constant regularisation on a Delaunay mesh takes its neighbours from scipy on the
            # mesh grid, which cannot see a traced array: the vertices become a concrete
            # (closed-over) JAX array (a fit whose vertices move with the lens could not do this)
            row["traced_vertices_error"] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
            jitted = jax.jit(partial(evaluate, mesh_values=vertices, xp=jnp))
            fn = lambda: jitted(jnp.asarray(points))  # noqa: E731
            row["first_call_s"] = first_call(fn)
            row["vertices"] = "constant"
        row.update(measure(fn, repeats=repeats, warmup=1))
        row["log_evidence"] = float(fn())
        reference = rows[0]["log_evidence"]
        row["rel_diff_vs_autoarray_numpy"] = abs(row["log_evidence"] - reference) / abs(reference)
    except Exception as err:  # recorded, not raised: the question is whether it runs
        row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
    row["ours_numba_log_evidence"] = float(fit.log_evidence)
    rows.append(row)
    return rows


if __name__ == "__main__":
    main()

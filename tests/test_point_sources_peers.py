"""Image positions and time delays against lenstronomy's LensEquationSolver and arrival times,
on random EPL + external shear lenses (``tox -e peers``)."""

from __future__ import annotations

import numpy as np
import pytest

from twinlens import Galaxy, Tracer, convert, cosmology
from twinlens.lensing.lens_equation import ImageSolver
from twinlens.lensing.point_sources import fermat_potential, time_delays
from twinlens.mass import ExternalShear, PowerLaw

pytestmark = pytest.mark.peers


def _systems(seed, n_lenses=6, n_sources=5):
    """Random EPL + shear lenses (slope 2.0-2.3: no central image, which neither solver is
    built to find reliably) and sources over their caustics (quads, doubles and singles)."""
    rng = np.random.default_rng(seed)
    for _ in range(n_lenses):
        e = rng.uniform(-0.2, 0.2, 2)
        epl = PowerLaw(
            centre=tuple(float(v) for v in rng.uniform(-0.05, 0.05, 2)),
            ell_comps=(float(e[0]), float(e[1])),
            einstein_radius=float(rng.uniform(0.8, 1.5)),
            slope=float(rng.uniform(2.0, 2.3)),
        )
        g = rng.uniform(-0.08, 0.08, 2)
        shear = ExternalShear(float(g[0]), float(g[1]))
        sources = rng.uniform(-0.3, 0.3, (n_sources, 2))
        # and one far outside the caustics (one image, within the search window)
        angle = rng.uniform(0, 2 * np.pi)
        far = 1.4 * epl.einstein_radius * np.array([np.cos(angle), np.sin(angle)])
        sources = np.concatenate([sources, far[None]])
        yield Tracer(Galaxy((epl, shear))), sources


def _lenstronomy(tracer, **kwargs):
    from lenstronomy.LensModel.lens_model import LensModel  # installed by tox -e peers
    from lenstronomy.LensModel.Solver.lens_equation_solver import LensEquationSolver

    names, params = zip(*(convert.to_lenstronomy(p) for p in tracer.lenses[0].mass), strict=True)
    model = LensModel(list(names), **kwargs)
    return model, LensEquationSolver(model), list(params)


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_image_positions_match_lenstronomy(backend):
    pytest.importorskip("lenstronomy")
    if backend == "jax":
        pytest.importorskip("jax")
    solver = ImageSolver(window=4.0)
    counts = []
    for tracer, sources in _systems(seed=19):
        _, peer, params = _lenstronomy(tracer)
        ours = solver.solve(tracer, sources, backend=backend)
        for i, (bx, by) in enumerate(sources):
            # a fine search and a tight source-plane tolerance: positions to 1e-12 or better
            x, y = peer.image_position_from_source(
                bx,
                by,
                params,
                min_distance=0.01,
                search_window=8.0,
                precision_limit=1e-14,
                num_iter_max=200,
            )
            theirs = np.stack([x, y], axis=-1)
            mine = np.asarray(ours.positions[i])[np.asarray(ours.mask[i])]
            assert bool(ours.complete[i])
            assert len(mine) == len(theirs), (i, mine, theirs)
            distance = np.linalg.norm(mine[:, None] - theirs[None], axis=-1)
            assert np.all(distance.min(axis=1) < 1e-8), distance.min(axis=1)
            counts.append(len(mine))
    # the draw reaches quads, doubles and single images
    assert {1, 2, 4} <= set(counts), counts


def test_time_delays_match_lenstronomy():
    pytest.importorskip("lenstronomy")
    from astropy.cosmology import FlatLambdaCDM

    cosmo = FlatLambdaCDM(H0=70.0, Om0=0.3)
    z_lens, z_source = 0.5, 2.0
    d_dt = cosmology.time_delay_distance(z_lens, z_source, cosmo)
    from lenstronomy.Util import constants

    mpc_ratio = constants.Mpc / cosmology.MPC_M
    checked = 0
    for tracer, sources in _systems(seed=7, n_lenses=4, n_sources=3):
        model, _, params = _lenstronomy(tracer, z_lens=z_lens, z_source=z_source, cosmo=cosmo)
        images = ImageSolver(window=4.0).solve(tracer, sources)
        for i, source in enumerate(sources):
            xy = images.positions[i][images.mask[i]]
            if len(xy) < 2:
                continue
            phi_ref = model.fermat_potential(xy[:, 0], xy[:, 1], params, *source)
            phi = fermat_potential(tracer, xy, source)
            scale = np.max(np.abs(phi_ref[1:] - phi_ref[0]))
            np.testing.assert_allclose(
                phi[1:] - phi[0], phi_ref[1:] - phi_ref[0], rtol=1e-10, atol=1e-10 * scale
            )
            t_ref = model.arrival_time(
                xy[:, 0], xy[:, 1], params, x_source=source[0], y_source=source[1]
            )
            # lenstronomy's Mpc is 3.08567758e22 m, the IAU value to 9 digits (4.8e-10 below
            # ours): the delays are compared in its unit
            np.testing.assert_allclose(
                time_delays(tracer, xy, source, d_dt) * mpc_ratio,
                t_ref - t_ref[0],
                rtol=1e-10,
                atol=1e-10 * np.max(np.abs(t_ref - t_ref[0])),
            )
            checked += 1
    assert checked >= 5

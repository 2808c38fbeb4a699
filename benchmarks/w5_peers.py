"""W5, peer side: the imaging log-likelihood of one lensed Sersic source, evaluated with lenstronomy
(numpy) and JAXtronomy (JAX, jit, and jit(vmap) over many parameter sets).

    python benchmarks/w5_peers.py            # prints one JSON line per case
    python benchmarks/w5_peers.py --quick    # fewer repeats, no batch of 1024

The set-up
----------
* Image: 100x100 pixels of 0.05". Pixel [i, j] (row i, column j) has its centre at
  x = (j - 49.5) 0.05, y = (i - 49.5) 0.05: x grows with the column, y with the row, with no RA
  flip. In lenstronomy's terms: ``transform_pix2angle = [[0.05, 0], [0, 0.05]]`` and
  ``ra_at_xy_0 = dec_at_xy_0 = -49.5 * 0.05``. ``PixelGrid.pixel_coordinates`` and
  ``map_pix2coord(j, i)`` give these coordinates to 4e-16 (rounding: lenstronomy computes
  0.05 j - 2.475), and a compact source at (x, y) lands in row y/0.05 + 49.5, column x/0.05 + 49.5.
* Numerics: ``supersampling_factor = 4``, ``supersampling_convolution = False`` and
  ``compute_mode = "regular"``. The sub-pixel centres are at offsets (k + 1/2)/4 - 1/2 pixel,
  k = 0..3, on both axes (checked to 9e-16 for both codes). The model pixel is
  ``pixel_scale**2 * mean(surface brightness over the 16 sub-pixels)``, so it is flux per pixel:
  both codes multiply by the pixel area. It is then convolved with the 21x21 kernel by a true
  convolution (``fftconvolve(image, kernel, mode="same")``, not a correlation; this matters only
  for an asymmetric kernel). lenstronomy's default ``convolution_type`` is ``"fft_static"`` (scipy);
  JAXtronomy's is ``"fft"`` (jax.scipy). With a random asymmetric kernel, lenstronomy's image
  equals that recipe, written out by hand, to 7e-16 of the peak, and JAXtronomy's equals
  lenstronomy's to 3e-15.
* PSF: ``lenstronomy.Data.psf.PSF(psf_type="PIXEL", kernel_point_source=kernel)``, which both
  codes use (JAXtronomy has no PSF class of its own). It rescales the kernel to sum to 1.
* Lens: ``SIE`` (theta_E, e1, e2, center_x, center_y; lenstronomy's SIE is its NIE with a 1e-10"
  core) plus ``SHEAR``. lenstronomy's names for the shear are ``gamma1`` and ``gamma2``, with
  psi = gamma1 (x^2 - y^2)/2 + gamma2 x y about (ra_0, dec_0) = (0, 0). Source:
  ``SERSIC_ELLIPSE``. Its exact mapping to a Sersic with the exact b_n is
  ``sersic_from_lenstronomy`` (delivered as /tmp/sersic_mapping.py, to move into the package):
  R_eff = R_sersic (b_n/b_L)^n and I_e = amp exp(b_L - b_n), with the rest unchanged.

What lenstronomy's log-likelihood is here
-----------------------------------------
``ImageLinearFit.likelihood_data_given_model(kwargs_lens, kwargs_source)`` (lenstronomy 1.14.1)
with its defaults ``source_marg=False``, ``linear_prior=None`` and ``check_positive_flux=False``:

1. Linear solve (``image_linear_solve``, ``likelihood_method = "diagonal"``). The response A is the
   convolved image of the source with ``amp = 1``. Whatever ``amp`` is in ``kwargs_source`` is
   ignored, and it is overwritten **in place** with the solved value. The weights are
   1/C_D with ``C_D = noise_map**2`` (``ImageNoise.C_D``; no model-dependent term when a noise map
   is given). The amplitude is the weighted least-squares solution
   amp = sum(A d / sigma^2) / sum(A^2 / sigma^2) (``de_lens.get_param_WLS``, with
   ``inv_bool = source_marg = False``). If M = A^T C^-1 A is ill-conditioned, amp is set to 0
   rather than raising an error.
2. logL = ``ImageData.log_likelihood(model, likelihood_mask, model_error)``
   = -1/2 sum over masked pixels of (model - data)^2 / (C_D_model + |model_error|).
   - ``C_D_model(model)`` is ``noise_map**2`` when ``noise_map`` is given. Without a noise map it
     is background_rms^2 + max(model, 0)/exposure_time: **model-dependent Poisson**. The linear
     solve then uses the data-based C_D, so the amplitude is not the maximiser of the logL
     reported. Passing ``noise_map`` switches both off.
   - ``model_error`` is the PSF-error map of point sources: 0 here (no point sources, and no
     ``psf_variance_map`` in the PSF).
   - ``likelihood_mask`` defaults to all ones, so all 10^4 pixels are summed. A mask removes
     pixels from the linear solve as well as from the sum.
   - There is **no** normalisation term (no -1/2 sum log(2 pi sigma^2)), no log-determinant and no
     ``log_likelihood_constant``; the last is used only by ``likelihood_method =
     "interferometry_natwt"``.
3. Options that change it, all off here: ``source_marg=True`` adds the log-determinant
   marginalisation (``de_lens.marginalization_new``: 1/2 log det M^-1, or the eigenvalue-clipped
   version when ``linear_prior`` is set). ``check_positive_flux=True`` subtracts 1e8 if a solved
   amplitude is negative. ``ImageData(flux_scaling=...)`` multiplies A (default 1).
   ``ImageData(gradient_boost_factor=...)`` changes C_D only without a noise map. The sampling
   front end (``Sampling.Likelihoods.image_likelihood.ImageLikelihood``) passes the same three
   flags through, also defaulting to False/None/False.

So with ``noise_map`` given and the defaults kept, lenstronomy's value is exactly
-1/2 sum(((data - model)/noise)^2) over all pixels, with the source amplitude fitted by weighted
least squares. ``__main__`` checks this against a direct numpy computation ("check" line).

JAXtronomy (0.1.5)
------------------
It ports the same classes: ``jaxtronomy.Data.imaging_data.ImageData``,
``jaxtronomy.ImSim.image_linear_solve.ImageLinearFit``,
``jaxtronomy.LensModel.lens_model.LensModel`` and
``jaxtronomy.LightModel.light_model.LightModel``, with lenstronomy's ``PSF``. It **does** support
the linear solve: ``ImageLinearFit.likelihood_data_given_model`` (jitted, with ``self`` static)
does the same weighted least squares (``jnp.linalg.solve``, or 0 when cond(M) >= 5/eps) and the
same -1/2 sum(...) with the same flags and defaults (``check_positive_flux`` becomes a
``jnp.where``). We call it with the amplitude free (solved), exactly as for lenstronomy; nothing is
fixed. JAXtronomy does not switch float64 on; we do (``jax_runtime.load()``) before building
anything. In float32 (``TWINLENS_JAX_X64=0``) its logL here is off by 2e-4 (5e-8 relative). Its
SERSIC_ELLIPSE has the same b_n approximation and centre flooring as lenstronomy's.

Timing
------
Only the evaluation is timed: for lenstronomy a call of ``likelihood_data_given_model`` on a fit
object built once; for JAXtronomy a jitted call, blocked until ready. The first call, which
compiles, is reported apart (``compile_s``). ``batch(n)`` runs ``jit(vmap(logL))`` over n
parameter sets. Each float parameter is perturbed by N(0, 1e-4), with a fixed seed. For the
batch, the program is compiled ahead of time (``compile_s``), and the call reuses that
compilation. It reports evaluations per second from the median of repeated calls. A batch of 1024
is run only if XLA's own estimate of the compiled program's memory (``memory_analysis``) fits in
half of the available RAM. Each line also gives the minimum: the machine may be shared, and
medians carry the load of other work.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from timing import call_times, emit

N_PIX = 100
PIXEL_SCALE = 0.05
SUB_SIZE = 4
NOISE_SIGMA = 0.05
PSF_SIZE = 21
PSF_FWHM = 0.1  # arcsec (design.md W5); a Gaussian sampled at pixel centres, normalised


def _ell_comps(q: float, angle_deg: float) -> tuple[float, float]:
    """(e1, e2) from an axis ratio and a position angle (lenstronomy's phi_q2_ellipticity)."""
    e = (1.0 - q) / (1.0 + q)
    phi = math.radians(angle_deg)
    return e * math.cos(2 * phi), e * math.sin(2 * phi)


def _grid_kwargs(shape: tuple[int, int], pixel_scale: float) -> dict:
    """ImageData coordinate keywords: pixel [i, j] at ((j - (nx-1)/2) s, (i - (ny-1)/2) s)."""
    ny, nx = shape
    return {
        "transform_pix2angle": np.array([[pixel_scale, 0.0], [0.0, pixel_scale]]),
        "ra_at_xy_0": -(nx - 1) / 2 * pixel_scale,
        "dec_at_xy_0": -(ny - 1) / 2 * pixel_scale,
    }


def _numerics(sub_size: int) -> dict:
    return {
        "supersampling_factor": int(sub_size),
        "supersampling_convolution": False,
        "compute_mode": "regular",
    }


def _lenstronomy_fit(
    data, noise_map, psf_kernel, pixel_scale, sub_size, lens_models, source_models
) -> Any:
    from lenstronomy.Data.imaging_data import ImageData
    from lenstronomy.Data.psf import PSF
    from lenstronomy.ImSim.image_linear_solve import ImageLinearFit
    from lenstronomy.LensModel.lens_model import LensModel
    from lenstronomy.LightModel.light_model import LightModel

    data = np.asarray(data, dtype=float)
    image_data = ImageData(
        image_data=data,
        noise_map=np.asarray(noise_map, dtype=float),
        **_grid_kwargs(data.shape, pixel_scale),
    )
    psf = PSF(psf_type="PIXEL", kernel_point_source=np.asarray(psf_kernel, dtype=float))
    return ImageLinearFit(
        image_data,
        psf,
        lens_model_class=LensModel(list(lens_models)),
        source_model_class=LightModel(list(source_models)),
        kwargs_numerics=_numerics(sub_size),
    )


def lenstronomy_w5(
    data,
    noise_map,
    psf_kernel,
    pixel_scale,
    sub_size,
    lens_models,
    kwargs_lens,
    source_models,
    kwargs_source,
) -> dict:
    """lenstronomy's W5 log-likelihood, with the source amplitude(s) solved linearly.

    Returns {"log_likelihood", "chi2" (= -2 logL), "evaluate" (zero-argument callable that
    recomputes the log-likelihood; this is what is timed), "model_image" (the best-fit model),
    "linear_amplitudes" (the solved amplitudes)}. The caller's kwargs are not modified.
    """
    fit = _lenstronomy_fit(
        data, noise_map, psf_kernel, pixel_scale, sub_size, lens_models, source_models
    )
    kl = copy.deepcopy(list(kwargs_lens))
    ks = copy.deepcopy(list(kwargs_source))  # lenstronomy writes the solved amp into these

    def evaluate() -> float:
        return float(fit.likelihood_data_given_model(kwargs_lens=kl, kwargs_source=ks)[0])

    model, _, _, amps = fit.image_linear_solve(kwargs_lens=kl, kwargs_source=ks)
    log_l = evaluate()
    return {
        "log_likelihood": log_l,
        "chi2": -2.0 * log_l,
        "evaluate": evaluate,
        "model_image": np.asarray(model),
        "linear_amplitudes": np.asarray(amps),
    }


def _jax_kwargs(kwargs_list) -> list[dict]:
    import jax.numpy as jnp

    return [{k: jnp.asarray(float(v)) for k, v in kw.items()} for kw in kwargs_list]


def jaxtronomy_w5(
    data,
    noise_map,
    psf_kernel,
    pixel_scale,
    sub_size,
    lens_models,
    kwargs_lens,
    source_models,
    kwargs_source,
) -> dict:
    """JAXtronomy's W5 log-likelihood (amplitude solved linearly, as in lenstronomy).

    Returns {"log_likelihood", "jit" (zero-argument callable: one jitted evaluation, blocked until
    ready, returns the float), "batch" (callable(n): jit(vmap) over n perturbed copies of the
    parameters, blocked, returns the n log-likelihoods as a numpy array; compiles once per n, and
    the perturbed parameters are built once per n), "compile_s" (first jitted call),
    "batch_compile" (callable(n): compiles the batch program ahead of time and returns
    {"compile_s", "memory_bytes"}, the latter XLA's estimate of the program's memory)}.
    """
    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()  # float64 on before any JAX array is made
    import jax.numpy as jnp
    from jaxtronomy.Data.imaging_data import ImageData
    from jaxtronomy.ImSim.image_linear_solve import ImageLinearFit
    from jaxtronomy.LensModel.lens_model import LensModel
    from jaxtronomy.LightModel.light_model import LightModel
    from lenstronomy.Data.psf import PSF

    data = np.asarray(data, dtype=float)
    image_data = ImageData(
        image_data=data,
        noise_map=np.asarray(noise_map, dtype=float),
        **_grid_kwargs(data.shape, pixel_scale),
    )
    psf = PSF(psf_type="PIXEL", kernel_point_source=np.asarray(psf_kernel, dtype=float))
    fit = ImageLinearFit(
        image_data,
        psf,
        lens_model_class=LensModel(list(lens_models)),
        source_model_class=LightModel(list(source_models)),
        kwargs_numerics=_numerics(sub_size),
    )

    def log_l(kl, ks):
        return fit.likelihood_data_given_model(kl, ks)[0]

    kl, ks = _jax_kwargs(kwargs_lens), _jax_kwargs(kwargs_source)
    single = jax.jit(log_l)

    def jit_call() -> float:
        return float(single(kl, ks).block_until_ready())

    t0 = time.perf_counter()
    value = jit_call()
    compile_s = time.perf_counter() - t0

    batched = jax.jit(jax.vmap(log_l))
    stacks: dict[int, tuple] = {}

    def stack(n: int) -> tuple:
        if n not in stacks:
            rng = np.random.default_rng(12345 + n)

            def perturbed(kwargs_list):
                return [
                    {
                        k: jnp.asarray(float(v) + 1e-4 * rng.standard_normal(n))
                        for k, v in kw.items()
                    }
                    for kw in kwargs_list
                ]

            stacks[n] = (perturbed(kwargs_lens), perturbed(kwargs_source))
        return stacks[n]

    def batch(n: int) -> np.ndarray:
        return np.asarray(batched(*stack(n)).block_until_ready())

    def batch_compile(n: int) -> dict:
        """Compile the batch program for n ahead of time: {"compile_s", "memory_bytes"} (XLA's
        estimate of the compiled program's memory, None if it gives none)."""
        t0 = time.perf_counter()
        compiled = batched.lower(*stack(n)).compile()
        compile_s = time.perf_counter() - t0
        analysis = compiled.memory_analysis()
        memory = None
        if analysis is not None:
            memory = int(
                analysis.temp_size_in_bytes
                + analysis.argument_size_in_bytes
                + analysis.output_size_in_bytes
                + analysis.generated_code_size_in_bytes
            )
        return {"compile_s": compile_s, "memory_bytes": memory}

    return {
        "log_likelihood": value,
        "jit": jit_call,
        "batch": batch,
        "compile_s": compile_s,
        "batch_compile": batch_compile,
    }


# ---------------------------------------------------------------- the W5 truth and the run


def w5_psf_kernel(size: int = PSF_SIZE, fwhm: float = PSF_FWHM, pixel_scale: float = PIXEL_SCALE):
    """A Gaussian of the given FWHM sampled at the centres of a size x size pixel grid, sum 1."""
    sigma = fwhm / (2.0 * math.sqrt(2.0 * math.log(2.0))) / pixel_scale
    r = np.arange(size) - (size - 1) / 2
    g = np.exp(-0.5 * (r / sigma) ** 2)
    kernel = np.outer(g, g)
    return kernel / kernel.sum()


# Source amplitude: lenstronomy's ``amp`` (surface brightness at R_sersic, per arcsec^2) for which
# the noiseless, convolved model image peaks at about 1 (per pixel; the peak is printed).
SOURCE_AMP = 57.0


def w5_truth() -> dict:
    """The W5 lens and source, as lenstronomy model lists and kwargs."""
    e1, e2 = _ell_comps(0.75, 20.0)
    s1, s2 = _ell_comps(0.7, 60.0)
    return {
        "lens_models": ["SIE", "SHEAR"],
        "kwargs_lens": [
            {"theta_E": 1.2, "e1": e1, "e2": e2, "center_x": 0.0, "center_y": 0.0},
            {"gamma1": 0.03, "gamma2": -0.02},
        ],
        "source_models": ["SERSIC_ELLIPSE"],
        "kwargs_source": [
            {
                "amp": SOURCE_AMP,
                "R_sersic": 0.3,
                "n_sersic": 1.5,
                "e1": s1,
                "e2": s2,
                "center_x": 0.05,
                "center_y": 0.1,
            }
        ],
    }


def w5_simulate(seed: int = 1) -> dict:
    """The truth, the PSF kernel, the noise map and the data (lenstronomy's noiseless image plus
    N(0, 0.05^2) noise from ``np.random.default_rng(seed)``)."""
    truth = w5_truth()
    kernel = w5_psf_kernel()
    noise_map = np.full((N_PIX, N_PIX), NOISE_SIGMA)
    fit = _lenstronomy_fit(
        np.zeros((N_PIX, N_PIX)),
        noise_map,
        kernel,
        PIXEL_SCALE,
        SUB_SIZE,
        truth["lens_models"],
        truth["source_models"],
    )
    clean = np.asarray(fit.image(truth["kwargs_lens"], truth["kwargs_source"]))
    rng = np.random.default_rng(seed)
    data = clean + NOISE_SIGMA * rng.standard_normal(clean.shape)
    return truth | {"psf_kernel": kernel, "noise_map": noise_map, "data": data, "clean": clean}


def _check_plain_chi2(sim: dict, result: dict) -> dict:
    """lenstronomy's logL against -1/2 sum(((d - a A)/sigma)^2), with a from weighted least
    squares and A lenstronomy's unit-amplitude image, all computed here in numpy."""
    fit = _lenstronomy_fit(
        sim["data"],
        sim["noise_map"],
        sim["psf_kernel"],
        PIXEL_SCALE,
        SUB_SIZE,
        sim["lens_models"],
        sim["source_models"],
    )
    unit = copy.deepcopy(sim["kwargs_source"])
    unit[0]["amp"] = 1.0
    a_img = np.asarray(fit.image(sim["kwargs_lens"], unit))
    w = 1.0 / sim["noise_map"] ** 2
    amp = float(np.sum(w * a_img * sim["data"]) / np.sum(w * a_img**2))
    plain = -0.5 * float(np.sum(w * (sim["data"] - amp * a_img) ** 2))
    return {
        "plain_log_likelihood": plain,
        "lenstronomy_minus_plain": result["log_likelihood"] - plain,
        "solved_amp": float(result["linear_amplitudes"][0]),
        "wls_amp": amp,
        "true_amp": SOURCE_AMP,
        "clean_peak": float(sim["clean"].max()),
        "n_pixels": int(sim["data"].size),
    }


def _times(fn: Callable[[], Any], repeats: int, warmup: int) -> dict:
    """Median and minimum seconds per call (see ``timing.call_times``)."""
    times = call_times(fn, repeats, warmup)
    return {"median_s": float(np.median(times)), "min_s": min(times)}


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _time_batch(jx: dict, n: int, repeats: int) -> dict:
    t0 = time.perf_counter()
    values = jx["batch"](n)
    first = time.perf_counter() - t0
    t = _times(lambda: jx["batch"](n), repeats=repeats, warmup=0)
    return {
        "first_call_s": first,
        **t,
        "evals_per_s": n / t["median_s"],
        "evals_per_s_best": n / t["min_s"],
        "log_likelihood_spread": float(np.max(values) - np.min(values)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no batch of 1024")
    args = parser.parse_args()
    repeats = 3 if args.quick else 21

    sim = w5_simulate(seed=1)
    inputs = (
        sim["data"],
        sim["noise_map"],
        sim["psf_kernel"],
        PIXEL_SCALE,
        SUB_SIZE,
        sim["lens_models"],
        sim["kwargs_lens"],
        sim["source_models"],
        sim["kwargs_source"],
    )
    common = {
        "workload": "W5",
        "pixels": N_PIX * N_PIX,
        "sub_size": SUB_SIZE,
        "cpus": os.cpu_count(),
    }

    ls = lenstronomy_w5(*inputs)
    emit(**common, case="check", **_check_plain_chi2(sim, ls))
    ls_t = _times(ls["evaluate"], repeats=repeats, warmup=2)
    emit(
        **common,
        case="lenstronomy",
        median_ms=1e3 * ls_t["median_s"],
        min_ms=1e3 * ls_t["min_s"],
        log_likelihood=ls["log_likelihood"],
        chi2=ls["chi2"],
    )

    jx = jaxtronomy_w5(*inputs)
    jx_t = _times(jx["jit"], repeats=repeats, warmup=2)
    emit(
        **common,
        case="jaxtronomy-jit",
        median_ms=1e3 * jx_t["median_s"],
        min_ms=1e3 * jx_t["min_s"],
        compile_s=jx["compile_s"],
        log_likelihood=jx["log_likelihood"],
        minus_lenstronomy=jx["log_likelihood"] - ls["log_likelihood"],
    )

    for n in (64, 1024):
        case = {"case": "jaxtronomy-jit(vmap)", "batch": n}
        if n == 1024 and args.quick:
            emit(**common, **case, skipped="--quick")
            continue
        compiled = jx["batch_compile"](n)
        need, avail = compiled["memory_bytes"], _available_bytes()
        mem = {
            "compile_s": compiled["compile_s"],
            "xla_memory_estimate_gb": None if need is None else need / 2**30,
        }
        if need is not None and avail is not None and need > avail / 2:
            emit(**common, **case, **mem, available_gb=avail / 2**30, skipped="memory")
            continue
        emit(**common, **case, **mem, **_time_batch(jx, n, repeats=7 if n == 64 else 3))


if __name__ == "__main__":
    main()

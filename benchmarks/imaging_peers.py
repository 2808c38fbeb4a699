"""The peers of the imaging workloads (W5, W6): lenstronomy (numpy) and JAXtronomy (JAX), set
up to compute the log-likelihood of the same data, model and numerics as ours.

The set-up
----------
* Data, noise map and PSF kernel are our dataset's (:func:`workloads.simulate_dataset`).
  Pixel ``[i, j]`` has its centre at ``x = (j - 49.5) 0.05``, ``y = (i - 49.5) 0.05`` (x with
  the column, y with the row, no flip): lenstronomy's ``transform_pix2angle = 0.05 * I`` and
  ``ra_at_xy_0 = dec_at_xy_0 = -49.5 * 0.05``.
* Numerics: ``supersampling_factor = 4``, ``supersampling_convolution = False``,
  ``compute_mode = "regular"``: 4 x 4 sub-pixel centres averaged per pixel, then a true
  convolution with the 21 x 21 kernel, as ours. The PSF is lenstronomy's ``PSF(psf_type="PIXEL")``
  (JAXtronomy uses it too), which rescales the kernel to sum 1, as ours does.
* The model is ours converted with :mod:`twinlens.convert`: ``SIE`` and ``SHEAR`` (and, for W6,
  ``MULTI_GAUSSIAN_ELLIPSE_KAPPA``) lenses, a ``SERSIC_ELLIPSE`` source and, for W6, a
  ``MULTI_GAUSSIAN_ELLIPSE`` lens light. lenstronomy's images are flux per pixel (surface
  brightness times the pixel area) and ours surface brightness, so every light amplitude is
  divided by the pixel area: the two model images are then the same.
* The source intensity is a non-linear parameter in W5 and W6, so the peers run
  ``ImageModel.likelihood_data_given_model`` (no linear solve): ``-chi^2 / 2`` over all pixels
  with the noise map's variance, and no normalisation term. Ours is
  ``-(chi^2 + sum log(2 pi sigma^2)) / 2``, so the lines compare chi-squared.

Only the evaluation is timed: lenstronomy's on a model object built once; JAXtronomy's under
``jax.jit`` with every keyword argument a traced argument, and under ``jit(vmap(...))`` for a
batch, each parameter perturbed by N(0, 1e-4) with a fixed seed.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from peers import Skip, require, version

from twinlens import convert
from twinlens.light import MGELight
from twinlens.likelihood import ImagingLikelihood

SUB_SIZE = 4


def lenstronomy_model(like: ImagingLikelihood) -> dict:
    """Our model as lenstronomy's lists and keyword arguments (light amplitudes per pixel):
    ``{"lens", "kwargs_lens", "source", "kwargs_source", "lens_light", "kwargs_lens_light"}``."""
    area = like.dataset.grid.pixel_scale**2
    lens, source = like.model.lenses[0], like.model.sources[0]
    out: dict[str, list] = {k: [] for k in ("lens", "kwargs_lens", "source", "kwargs_source")}
    out |= {"lens_light": [], "kwargs_lens_light": []}
    for mass in lens.mass:
        name, kw = convert.to_lenstronomy(mass)
        out["lens"].append(name)
        out["kwargs_lens"].append(kw)
    for light in source.light:
        name, kw = convert.light_to_lenstronomy(light)
        out["source"].append(name)
        out["kwargs_source"].append(kw | {"amp": kw["amp"] / area})
    for light in lens.light:
        if not isinstance(light, MGELight):
            raise Skip(f"no converter for lens light {type(light).__name__}")
        # lenstronomy's light MGE has the mass MGE's amplitudes (total per Gaussian)
        _, kw = convert.to_lenstronomy(light.to_mass(1.0))
        out["lens_light"].append("MULTI_GAUSSIAN_ELLIPSE")
        out["kwargs_lens_light"].append(kw | {"amp": [a / area for a in kw["amp"]]})
    return out


def _data_kwargs(like: ImagingLikelihood) -> dict:
    grid = like.dataset.grid
    ny, nx = grid.shape
    s = grid.pixel_scale
    return {
        "image_data": np.asarray(like.dataset.data, dtype=float).reshape(ny, nx),
        "noise_map": np.asarray(like.dataset.noise_map, dtype=float).reshape(ny, nx),
        "transform_pix2angle": np.array([[s, 0.0], [0.0, s]]),
        "ra_at_xy_0": -(nx - 1) / 2 * s,
        "dec_at_xy_0": -(ny - 1) / 2 * s,
    }


def _numerics() -> dict:
    return {
        "supersampling_factor": SUB_SIZE,
        "supersampling_convolution": False,
        "compute_mode": "regular",
    }


def _psf(like: ImagingLikelihood) -> Any:
    from lenstronomy.Data.psf import PSF

    kernel = np.asarray(like.dataset.psf.kernel, dtype=float)
    return PSF(psf_type="PIXEL", kernel_point_source=kernel)


def _kwargs(model: dict) -> tuple:
    return model["kwargs_lens"], model["kwargs_source"], model["kwargs_lens_light"] or None


def lenstronomy_w(like: ImagingLikelihood) -> dict:
    """lenstronomy's log-likelihood of ``like``'s data at ``like``'s model:
    ``{"evaluate" (zero-argument callable, what is timed), "chi2", "version"}``."""
    require("lenstronomy")
    from lenstronomy.Data.imaging_data import ImageData
    from lenstronomy.ImSim.image_model import ImageModel
    from lenstronomy.LensModel.lens_model import LensModel
    from lenstronomy.LightModel.light_model import LightModel

    model = lenstronomy_model(like)
    image = ImageModel(
        ImageData(**_data_kwargs(like)),
        _psf(like),
        lens_model_class=LensModel(model["lens"]),
        source_model_class=LightModel(model["source"]),
        lens_light_model_class=LightModel(model["lens_light"]) if model["lens_light"] else None,
        kwargs_numerics=_numerics(),
    )
    kl, ks, kll = (copy.deepcopy(k) for k in _kwargs(model))

    def evaluate() -> float:
        return float(
            image.likelihood_data_given_model(
                kwargs_lens=kl, kwargs_source=ks, kwargs_lens_light=kll
            )
        )

    return {"evaluate": evaluate, "chi2": -2.0 * evaluate(), "version": version("lenstronomy")}


def _as_jax(kwargs_list: list[dict] | None, rng: np.random.Generator | None = None, n: int = 0):
    """Keyword arguments as JAX arrays; with ``rng``, ``n`` perturbed copies stacked on a
    leading axis (each value plus 1e-4 N(0, 1))."""
    import jax.numpy as jnp

    if kwargs_list is None:
        return None

    def value(v: Any) -> Any:
        v = np.asarray(v, dtype=float)
        if rng is None:
            return jnp.asarray(v)
        return jnp.asarray(v + 1e-4 * rng.standard_normal((n, *v.shape)))

    return [{k: value(v) for k, v in kw.items()} for kw in kwargs_list]


def jaxtronomy_w(like: ImagingLikelihood) -> dict:
    """JAXtronomy's log-likelihood of ``like`` under ``jax.jit``: ``{"jit" (zero-argument
    callable, blocked), "chi2", "first_call_s" (the first jitted call: trace, compile, run),
    "batch" (callable(n): ``jit(vmap)`` over n perturbed parameter sets), "batch_compile"
    (callable(n): compiles that ahead of time, after which ``batch(n)`` runs the compiled
    program; returns ``{"compile_s", "memory_bytes"}``), "hlo" (callable: the single program's
    optimised HLO text), "version"}``."""
    require("jaxtronomy")
    import time

    from twinlens.backend import jax_runtime

    jax = jax_runtime.load()  # float64 on before any JAX array is made
    from jaxtronomy.Data.imaging_data import ImageData
    from jaxtronomy.ImSim.image_model import ImageModel
    from jaxtronomy.LensModel.lens_model import LensModel
    from jaxtronomy.LightModel.light_model import LightModel

    model = lenstronomy_model(like)
    try:
        lens_model = LensModel(model["lens"])
        source_model = LightModel(model["source"])
        lens_light = LightModel(model["lens_light"]) if model["lens_light"] else None
    except Exception as error:  # a profile JAXtronomy does not have
        raise Skip(f"JAXtronomy refuses this model: {str(error).split('.')[0]}") from None
    image = ImageModel(
        ImageData(**_data_kwargs(like)),
        _psf(like),
        lens_model_class=lens_model,
        source_model_class=source_model,
        lens_light_model_class=lens_light,
        kwargs_numerics=_numerics(),
    )

    def log_l(kl, ks, kll):
        return image.likelihood_data_given_model(kl, ks, kll)

    kl, ks, kll = (_as_jax(k) for k in _kwargs(model))
    single = jax.jit(log_l)

    def jit_call() -> Any:
        return single(kl, ks, kll).block_until_ready()

    t0 = time.perf_counter()
    chi2 = -2.0 * float(jit_call())
    first_call_s = time.perf_counter() - t0

    batched = jax.jit(jax.vmap(log_l))
    stacks: dict[int, tuple] = {}
    programs: dict[int, Any] = {}

    def stack(n: int) -> tuple:
        if n not in stacks:
            rng = np.random.default_rng(12345 + n)
            stacks[n] = tuple(_as_jax(k, rng, n) for k in _kwargs(model))
        return stacks[n]

    def batch(n: int) -> Any:
        return programs.get(n, batched)(*stack(n)).block_until_ready()

    def batch_compile(n: int) -> dict:
        t0 = time.perf_counter()
        compiled = batched.lower(*stack(n)).compile()
        compile_s = time.perf_counter() - t0
        programs[n] = compiled
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
        "jit": jit_call,
        "hlo": lambda: single.lower(kl, ks, kll).compile().as_text(),
        "chi2": chi2,
        "first_call_s": first_call_s,
        "batch": batch,
        "batch_compile": batch_compile,
        "version": version("jaxtronomy"),
    }


def available_bytes() -> int | None:
    """The machine's available memory (Linux), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def relative(a: float, b: float) -> float:
    """``|a / b - 1|``."""
    return abs(a / b - 1.0) if b else math.inf

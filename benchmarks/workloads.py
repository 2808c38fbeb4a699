"""The design's standard workloads, W1 to W6, defined once for every script in ``benchmarks/``.

W1-W4 are deflection fields on the design's grid: the centres of 400 x 400 pixels covering
[-5, 5]" on both axes (spacing 0.025", centres -4.9875" .. 4.9875"; no point lies on a profile
centre at the origin). Each is a :class:`DeflectionWorkload`: a function that builds the profile
from a parameter vector (so that the same code serves constant parameters and, under
``jax.jit``, traced ones), the vector's names and its values.

W5 and W6 are imaging log-likelihoods (:func:`w5_likelihood`, :func:`w6_likelihood`):

* W5: 100 x 100 pixels of 0.05", 4 x 4 sub-pixels, a 21 x 21 Gaussian PSF of FWHM 0.1",
  Gaussian noise 0.05. Lens: SIE (theta_E 1.2", q 0.75, angle 20 deg, centre 0) plus external
  shear (0.03, -0.02). Source: an elliptical Sersic (centre (0.05, 0.1)", q 0.7, angle 60 deg,
  R_eff 0.3", n 1.5) whose intensity is a free, non-linear parameter. The data are simulated
  from that truth (seed 1) and every scalar parameter of the model is free (14).
* W6: W5 with a lens light: an MGE of 30 fixed elliptical Gaussians (fitted to a de Vaucouleurs
  profile, sigma 0.01"-5"), whose mass, with one free mass-to-light ratio, joins the SIE and the
  shear. The free parameters are W5's and the ratio (15); the MGE's Gaussians, centre and
  ellipticity are fixed, so its fields are the memo's home case.

The values are float64 throughout.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinlens import memo
from twinlens.grids import Grid2D
from twinlens.imaging.dataset import Imaging, simulate
from twinlens.imaging.psf import PSF
from twinlens.kernels.gauss_decomposition import decompose_sersic
from twinlens.lensing.tracer import Galaxy, Tracer
from twinlens.light import MGELight, Sersic
from twinlens.likelihood import ImagingLikelihood
from twinlens.mass import MGE, SIE, ExternalShear, Gaussian, MassSum, PowerLaw
from twinlens.model import parameter_paths

# -- the deflection grid --------------------------------------------------------------------

GRID_SIDE = 400
GRID_HALF_WIDTH = 5.0  # arcsec


def pixel_centres(side: int = GRID_SIDE, half_width: float = GRID_HALF_WIDTH) -> np.ndarray:
    """Centres of ``side`` equal pixels covering ``[-half_width, half_width]``, arcsec."""
    spacing = 2.0 * half_width / side
    return (np.arange(side) + 0.5) * spacing - half_width


def grid_points(side: int = GRID_SIDE, half_width: float = GRID_HALF_WIDTH) -> np.ndarray:
    """The ``(side * side, 2)`` positions ``(x, y)`` of the pixel centres, x running fastest."""
    c = pixel_centres(side, half_width)
    x, y = np.meshgrid(c, c)
    return np.stack([x.ravel(), y.ravel()], axis=-1)


def ell_comps(q: float, angle: float) -> tuple[float, float]:
    """``(e1, e2)`` of axis ratio ``q`` and major-axis angle ``angle`` (degrees), as the
    profiles' ``from_axis_ratio`` computes them."""
    e1, e2 = Gaussian.from_axis_ratio(q=q, angle=angle).ell_comps
    return float(e1), float(e2)


# -- W1-W4 ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeflectionWorkload:
    """One deflection workload: ``build(vector)`` returns the profile; ``names`` label the
    vector's entries and ``values`` are the workload's own."""

    name: str
    what: str
    build: Callable[[Sequence[Any]], Any]
    names: tuple[str, ...]
    values: tuple[float, ...]

    def vector(self) -> np.ndarray:
        """The parameter vector (float64)."""
        return np.asarray(self.values, dtype=float)

    def profile(self) -> Any:
        """The profile with constant (Python float) parameters."""
        return self.build(tuple(float(v) for v in self.values))


W2_SIGMAS = np.geomspace(0.01, 5.0, 30)
W2_INTENSITIES = np.ones(30)


def _gaussian(p: Sequence[Any]) -> Gaussian:
    return Gaussian(centre=(p[0], p[1]), ell_comps=(p[2], p[3]), sigma=p[4], intensity=p[5])


def _mge(p: Sequence[Any]) -> MGE:
    return MGE(
        sigmas=W2_SIGMAS,
        intensities=W2_INTENSITIES,
        centre=(p[0], p[1]),
        ell_comps=(p[2], p[3]),
        mass_to_light_ratio=p[4],
    )


def _sie(p: Sequence[Any]) -> SIE:
    return SIE(centre=(p[0], p[1]), ell_comps=(p[2], p[3]), einstein_radius=p[4])


def _epl(p: Sequence[Any]) -> PowerLaw:
    return PowerLaw(centre=(p[0], p[1]), ell_comps=(p[2], p[3]), einstein_radius=p[4], slope=p[5])


_CENTRE_ELL = ("centre_x", "centre_y", "e1", "e2")

DEFLECTIONS: dict[str, DeflectionWorkload] = {
    "W1": DeflectionWorkload(
        "W1",
        "elliptical Gaussian (sigma 0.5, q 0.7, angle 30, centre (0.05, -0.02)), deflections",
        _gaussian,
        (*_CENTRE_ELL, "sigma", "intensity"),
        (0.05, -0.02, *ell_comps(0.7, 30.0), 0.5, 1.0),
    ),
    "W2": DeflectionWorkload(
        "W2",
        "30 concentric elliptical Gaussians (sigma 0.01-5 log-spaced, q 0.7, angle 30), "
        "deflections",
        _mge,
        (*_CENTRE_ELL, "mass_to_light_ratio"),
        (0.0, 0.0, *ell_comps(0.7, 30.0), 1.0),
    ),
    "W3": DeflectionWorkload(
        "W3",
        "SIE (theta_E 1.2, q 0.75, angle 20), deflections",
        _sie,
        (*_CENTRE_ELL, "einstein_radius"),
        (0.0, 0.0, *ell_comps(0.75, 20.0), 1.2),
    ),
    "W4": DeflectionWorkload(
        "W4",
        "EPL (gamma 2.2, theta_E 1.2, q 0.8, angle 0), deflections",
        _epl,
        (*_CENTRE_ELL, "einstein_radius", "slope"),
        (0.0, 0.0, *ell_comps(0.8, 0.0), 1.2, 2.2),
    ),
}

# -- W5 and W6 --------------------------------------------------------------------------------

IMAGE_SIDE = 100
PIXEL_SCALE = 0.05  # arcsec
SUB_SIZE = 4
PSF_SIZE = 21
PSF_FWHM = 0.1  # arcsec
NOISE_SIGMA = 0.05
SEED = 1

#: surface brightness at R_eff; the noiseless, blurred image then peaks at about 2.8
SOURCE_INTENSITY = 0.35
#: the W6 lens light's Gaussians: a de Vaucouleurs profile (R_eff 1", intensity 0.02 at R_eff)
LENS_LIGHT_GAUSSIANS = 30
MASS_TO_LIGHT_RATIO = 10.0
#: path of W6's lens-light mass in the model, and of its free ratio
W6_MGE_PATH = "lenses[0].mass[2]"
W6_RATIO_PATH = f"{W6_MGE_PATH}.mass_to_light_ratio"


def w5_lens_mass() -> tuple[Any, ...]:
    """SIE (theta_E 1.2", q 0.75, angle 20 deg) and external shear (0.03, -0.02)."""
    return (
        SIE(centre=(0.0, 0.0), ell_comps=ell_comps(0.75, 20.0), einstein_radius=1.2),
        ExternalShear(0.03, -0.02),
    )


def w5_source() -> Sersic:
    """The elliptical Sersic source, its intensity a parameter like the others."""
    return Sersic(
        centre=(0.05, 0.1),
        ell_comps=ell_comps(0.7, 60.0),
        effective_radius=0.3,
        sersic_index=1.5,
        intensity=SOURCE_INTENSITY,
    )


def w5_grid(side: int = IMAGE_SIDE, sub_size: int = SUB_SIZE) -> Grid2D:
    """The image grid (``side`` pixels covering the same 5" as W5's 100)."""
    return Grid2D.uniform(side, PIXEL_SCALE * IMAGE_SIDE / side, sub_size)


def w5_psf(pixel_scale: float = PIXEL_SCALE, size: int = PSF_SIZE) -> PSF:
    """21 x 21 Gaussian PSF of FWHM 0.1", normalised."""
    return PSF.gaussian(PSF_FWHM, pixel_scale, size)


def w5_truth() -> Tracer:
    """The W5 lens and source."""
    return Tracer(Galaxy(mass=w5_lens_mass()), Galaxy(light=w5_source()))


def lens_light() -> MGELight:
    """W6's lens light: 30 Gaussians fitted to a de Vaucouleurs profile (R_eff 1"), q about
    0.9, centred on the lens."""
    peaks, sigmas = decompose_sersic(
        0.02, 1.0, 4.0, n_sigma=LENS_LIGHT_GAUSSIANS, sigma_range=(0.04, 20)
    )
    return MGELight(np.asarray(sigmas), np.asarray(peaks), (0.0, 0.0), (0.05, 0.03))


def w6_truth() -> Tracer:
    """W5's truth with the lens light, whose mass (ratio 10) joins the SIE and shear."""
    light = lens_light()
    lens = Galaxy(mass=(*w5_lens_mass(), light.to_mass(MASS_TO_LIGHT_RATIO)), light=light)
    return Tracer(lens, Galaxy(light=w5_source()))


def simulate_dataset(truth: Tracer, side: int = IMAGE_SIDE, sub_size: int = SUB_SIZE) -> Imaging:
    """``truth`` observed on the W5 grid with the W5 PSF and noise (seed 1), computed with the
    numpy backend and the memo off, so that every process and every case fits the same data."""
    grid = w5_grid(side, sub_size)
    psf_size = PSF_SIZE if side >= 2 * PSF_SIZE else 5  # smoke runs on tiny images
    with memo.disabled():
        return simulate(
            truth,
            grid,
            w5_psf(grid.pixel_scale, psf_size),
            noise_sigma=NOISE_SIGMA,
            seed=SEED,
            backend="numpy",
        )


def _free(model: Tracer, skip: tuple[str, ...] = ()) -> list[str]:
    return [p for p in parameter_paths(model) if "origin" not in p and not p.startswith(skip)]


def w5_likelihood(side: int = IMAGE_SIDE, sub_size: int = SUB_SIZE) -> ImagingLikelihood:
    """The W5 log-likelihood, every scalar parameter free (``side`` and ``sub_size`` smaller
    only for smoke runs)."""
    truth = w5_truth()
    return ImagingLikelihood(simulate_dataset(truth, side, sub_size), truth, tuple(_free(truth)))


def w5_sum_likelihood() -> ImagingLikelihood:
    """W5 with the lens mass as one :class:`~twinlens.mass.MassSum` of the SIE and the shear
    (what ``convert.from_lenstronomy_list`` makes), on W5's dataset, every scalar free: the
    same model and vector as :func:`w5_likelihood`, its paths inside the sum."""
    truth = Tracer(Galaxy(mass=MassSum(w5_lens_mass())), Galaxy(light=w5_source()))
    dataset = simulate_dataset(w5_truth())
    return ImagingLikelihood(dataset, truth, tuple(_free(truth)))


def w6_likelihood(extra_free: tuple[str, ...] = ()) -> ImagingLikelihood:
    """The W6 log-likelihood: W5's free parameters and the lens light's mass-to-light ratio,
    plus ``extra_free`` paths (e.g. the lens light's centre, for a control that cannot fold)."""
    truth = w6_truth()
    free = _free(truth, skip=("lenses[0].light", W6_MGE_PATH))
    free += [W6_RATIO_PATH, *extra_free]
    return ImagingLikelihood(simulate_dataset(truth), truth, tuple(free))


def perturbed(like: ImagingLikelihood, n: int, scale: float = 1e-4, seed: int = 0) -> np.ndarray:
    """``n`` vectors near the truth: each free value plus ``scale`` times N(0, 1)."""
    rng = np.random.default_rng(seed)
    return like.reference + scale * rng.standard_normal((n, like.n_params))


@contextlib.contextmanager
def jax_chunks_seen() -> Iterator[list[int]]:
    """The chunk sizes the library compiles for JAX batches inside the block (its choice, which
    depends on the memory budget and the batch size), read from its per-chunk call."""
    seen: list[int] = []
    original = getattr(ImagingLikelihood, "_jax_chunk", None)
    if original is None:
        yield seen
        return

    def spy(self: ImagingLikelihood, values: Any, size: int) -> Any:
        seen.append(int(size))
        return original(self, values, size)

    ImagingLikelihood._jax_chunk = spy  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        ImagingLikelihood._jax_chunk = original  # type: ignore[method-assign]


IMAGING = {"W5": w5_likelihood, "W6": w6_likelihood}

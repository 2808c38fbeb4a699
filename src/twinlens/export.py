"""Lens models to and from COOLEST, the lensing community's standard JSON format.

:func:`to_coolest` writes a :class:`~twinlens.lensing.tracer.Tracer` (point estimates, optionally
posterior statistics, and the dataset it was fitted to) as a COOLEST template;
:func:`from_coolest` reads the point estimates of one back into a tracer. Both need the
``coolest`` package (``pip install "twinlens[fit]"``), imported only when they are called.

Profiles
--------
``SIE``
    COOLEST ``SIE``: ``theta_E = einstein_radius``.
``SIS``
    COOLEST ``SIE`` with ``q = 1`` and ``phi = 0``, both marked fixed.
``PowerLaw``
    COOLEST ``PEMD``: ``theta_E = einstein_radius``, ``gamma = slope``.
``ExternalShear``
    COOLEST ``ExternalShear``, in a ``MassField`` entity of its own:
    ``gamma_ext = hypot(gamma_1, gamma_2)`` and ``phi_ext = psi + 90`` degrees, ``psi =
    arctan2(gamma_2, gamma_1) / 2`` (lenstronomy's ``psi_ext``). COOLEST fixes the shear's
    origin at (0, 0): a shear with another origin is refused.
``MassSheet``
    COOLEST ``ConvergenceSheet`` (a ``MassField``): ``kappa_s = kappa``; centre (0, 0) only.
``Sersic``, ``Exponential`` (and their linear variants)
    COOLEST ``Sersic``. COOLEST uses the approximation ``b = 1.9992 n - 0.3271`` where we use
    the exact ``b_n``; the profiles are equal at every point when ``theta_eff = R_e (b /
    b_n)^n`` and ``I_eff = intensity exp(b_n - b)`` (the mapping :mod:`twinlens.convert` uses
    for lenstronomy's Sersic, which has the same approximation). COOLEST allows ``0.5 <= n <=
    10`` and ``I_eff >= 0``. A linear profile (intensity solved by the fit) is written with
    ``I_eff`` null, and read back as a linear profile; write ``tracer.with_intensities(...)``
    to record the solved intensities. An ``Exponential`` is a Sersic with ``n = 1`` (fixed).
``MassSum``
    Its parts, one COOLEST profile each.

Every other mass profile is refused with a ``ValueError`` that names it. Light profiles that
COOLEST cannot describe (``GaussianLight``, ``MGELight``, ``GaussianBasis``, ``CoreSersic``
and their linear variants) are skipped with a warning naming each one, and listed under
``meta["twinlens"]["skipped_light_profiles"]``; ``unsupported_light="raise"`` refuses them.

Conventions (checked against COOLEST's own profile code, ``coolest.api.profiles``)
-------------------------------------------------------------------------------------
Both use ``x`` to the right and ``y`` up, in arcsec (``centre`` is ``(center_x,
center_y)``). Axis ratios agree: ``q = (1 - |e|) / (1 + |e|)`` for our ``ell_comps = (e1,
e2)``. Our major-axis angle ``theta = arctan2(e2, e1) / 2`` is counter-clockwise from +x;
COOLEST's ``phi`` is in degrees counter-clockwise from +y, in ``(-90, 90]``, so
``phi = theta + 90`` degrees, folded, and ``theta = phi - 90`` degrees. Radii (``theta_E``,
``theta_eff``) are on the intermediate axis in both: ``kappa_SIE = theta_E / (2 sqrt(q x'^2
+ y'^2 / q))``, ``x'`` along the major axis.

Entities
--------
Lens galaxy ``i`` becomes the COOLEST ``Galaxy`` ``"lens i"`` (mass and light); each of its
shears and sheets a ``MassField``; source galaxy ``j`` the ``Galaxy`` ``"source j"`` (light;
a source's mass, which a tracer ignores, is not written). Redshifts are written when given.
``meta["twinlens"]["profiles"]`` maps each COOLEST profile id to our profile's path and class,
so :func:`from_coolest` rebuilds the same galaxies (a ``MassSum`` comes back as its parts).
For a file without that record, every entity becomes a galaxy of its own: a lens if it has
mass; a light-only galaxy is a lens-plane galaxy if its redshift is at most the farthest
lens's, and otherwise (or with no redshifts) a source. Each galaxy read back carries its
entity's redshift (``Galaxy.redshift``). A file written here records the tracer's class
(``meta["twinlens"]["tracer"]``) and, for a
:class:`~twinlens.lensing.multiplane.MultiPlaneTracer`, its flat LambdaCDM cosmology in COOLEST's
``cosmology``, and reads back as that class; in another file, lenses at more than one redshift
make a multi-plane tracer whose ``z_source`` is the sources' (they must share one), on the
file's cosmology or the default one.

Posterior statistics
--------------------
With ``posterior`` (our parameter paths to samples or to ``(median, p16, p84, mean)``
summaries) samples are converted to COOLEST's parameters first and summarised after (angles
unwrapped about their circular mean, the median folded into (-90, 90] and the percentiles and
mean shifted with it, so they may lie just outside it). A summary converts only to a COOLEST
parameter that is an affine function of that one parameter of ours with the others fixed (a
centre, ``theta_E``, ``gamma``, ``n``, and ``theta_eff`` or ``I_eff`` when ``n`` is fixed);
other parameters are left without statistics, with a warning. Paths that no exported
parameter uses are reported in a warning.

Priors
------
With ``priors`` (the fit's, e.g. :attr:`twinlens.model.Model.priors`) each COOLEST parameter
that is an affine function of one free parameter of ours gets the image of its prior when
COOLEST has that kind: ``UniformPrior`` and ``GaussianPrior``. COOLEST has no log-uniform or
truncated Gaussian prior, and the prior ours induce on a nonlinear parameter (``q``, ``phi``,
``gamma_ext``, ``phi_ext``; ``theta_eff`` with ``n`` free) has no closed form: those get a
prior of type null whose ``description`` names ours and says why. A parameter no free
parameter of ours reaches is marked ``fixed``, except a solved amplitude ``I_eff``.

Pixelised sources
-----------------
A source galaxy's :class:`~twinlens.inversion.Pixelization` is written from its solved
reconstruction (the ``reconstruction`` argument) as COOLEST's ``PixelatedRegularGrid`` (a uniform
rectangular mesh) or ``IrregularGrid`` (any other mesh), its values in a FITS file next to the
JSON; :func:`from_coolest` skips such a light profile, with a warning. A uniform
:class:`~twinlens.inversion.Rectangular` mesh's vertices are the pixel centres, which
COOLEST interpolates bilinearly, as ours does. An ``IrregularGrid`` holds the mesh's vertices
and values (a FITS table ``x, y, z``); COOLEST interpolates it on the vertices' Delaunay
triangles, as a :class:`~twinlens.inversion.Delaunay` mesh does, and as an approximation
of a :class:`~twinlens.inversion.RectangularAdaptDensity` lattice's bilinear cells. The
values are the reconstruction's, in the data's units per image pixel.

Its regularisation is an entry of the document's ``regularizations`` list, as COOLEST's API
defines one (``coolest.template.classes.regularizations.pixelated``), applied to the
pixelated profile by its id (``applied_to_profile_id``)::

    "regularizations": [{"type": "PixelGradient", "id": "0-regularization-PixelGradient",
        "applied_to_profile_id": "2-galaxy-light-0-IrregularGrid",
        "parameters": {"lambda": {"point_estimate": {"value": 1.74}, "posterior_stats":
            {...}, "prior": {...}, "fixed": false, "id": "..."}}}]

Our :class:`~twinlens.inversion.Constant` scheme (the gradient, ``sum (s_i - s_j)^2`` over
neighbours) is COOLEST's ``PixelGradient``, :class:`~twinlens.inversion.Curvature`
``PixelCurvature``; :class:`~twinlens.inversion.AdaptiveBrightness`, which COOLEST lacks, is
its ``DefaultForPixelated`` (the modelling code's own scheme; its per-pixel weights are not
written). ``lambda`` is our coefficient, the source's prior ``exp(-lambda s^T H s / 2)``; its
posterior statistics and prior are written as a profile parameter's (``posterior`` and
``priors`` take its path, ``sources[i].pixelization.regularization.coefficient``; the usual
log-uniform prior, which COOLEST lacks, is a prior of type null naming ours), and it is marked
fixed when ``priors`` has no prior for it. ``meta["twinlens"]["regularizations"]`` names our
scheme by the entry's id, says what ``lambda`` multiplies, and whether the pixels were
constrained to be positive (``Pixelization.positive``). COOLEST's API (0.1.11) defines these
types but not yet the document's field: its reader leaves the list out of the object it
builds (its plain JSON holds it), and, as for any regularisation, drops it in ``MOCK`` mode.
The ids follow its profiles' pattern. :func:`from_coolest` reads no pixelised source, so no
regularisation either.

Observation
-----------
With ``dataset`` (an :class:`~twinlens.imaging.dataset.Imaging`), the data, noise map, PSF kernel
and (if any) mask are written as FITS files next to the JSON (``<name>_data.fits``,
``<name>_noise_map.fits``, ``<name>_psf.fits``, ``<name>_mask.fits``, replacing existing
ones), rows in our order (row 0 at the bottom, as COOLEST reads them). The observation's field
of view is the grid's. Without a dataset the observation has no pixels and the instrument's
``pixel_size`` is a placeholder 1.0 (COOLEST requires a positive one), as the metadata notes;
COOLEST's reader then needs ``check_external_files=False`` (it otherwise asks for a data FITS
file). COOLEST (0.1.11) reads a FITS array's shape as ``(num_pix_x, num_pix_y)``, transposed
from the ``(ny, nx)`` its coordinates and plots use, so its file check refuses non-square
images that are written correctly.
"""

# the parts live in twinlens.coolest (see its docstring); this module is where users import them
from twinlens.coolest.base import NotDescribable
from twinlens.coolest.read import from_coolest
from twinlens.coolest.write import to_coolest

__all__ = ["NotDescribable", "from_coolest", "to_coolest"]

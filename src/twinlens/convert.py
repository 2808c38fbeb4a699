"""Parameters to and from lenstronomy and autogalaxy, without importing either package.

``from_lenstronomy(name, kwargs)`` and ``to_lenstronomy(profile)`` convert one profile;
``from_lenstronomy_list(names, kwargs_list)`` and ``to_lenstronomy_list(profile)`` convert a
whole lens model (lenstronomy's ``LensModel(lens_model_list)`` and its ``kwargs``; a
:class:`~twinlens.mass.MassSum` becomes several entries). ``from_autogalaxy(name, kwargs)`` and
``to_autogalaxy(profile)`` use the class names of ``autogalaxy.mp``.

Every mapping below was checked numerically against the packages (lenstronomy 1.14,
autogalaxy 2026.7); the tests restate each convention as a formula.

lenstronomy
-----------
Keys ``center_x, center_y`` (``ra_0, dec_0`` for ``SHEAR`` and ``CONVERGENCE``) are our
``centre``; ``e1, e2`` are our ``ell_comps``; angles are radians there and degrees here.

``GAUSSIAN_ELLIPSE_KAPPA``
    ``Gaussian``: ``mass_to_light_ratio * intensity = amp / (2 pi sigma^2)``, same ``sigma``.
``MULTI_GAUSSIAN_ELLIPSE_KAPPA``
    ``MGE``, componentwise; ``scale_factor`` multiplies every ``amp``.
``SIS``, ``POINT_MASS``
    ``SIS``, ``PointMass``: ``einstein_radius = theta_E``.
``SIE``
    ``SIE``: ``einstein_radius = theta_E``. lenstronomy's SIE is its NIE with a 1e-10" core, so
    the two differ by up to ~1e-8 relative within 0.02" of the centre.
``NIE``
    ``NIE``: ``einstein_radius = theta_E``, ``core_radius = s_scale`` (no factor of ``q``).
``EPL``, ``EPL_NUMBA``
    ``PowerLaw``: ``einstein_radius = theta_E``, ``slope = gamma``.
``NFW``, ``NFW_ELLIPSE_CSE``
    ``NFW`` (round, or elliptical with the same radius convention): ``scale_radius = Rs``,
    ``alpha_Rs = 4 kappa_s Rs (1 + ln(1/2))``, the deflection at ``Rs``. lenstronomy's
    cored-steep-ellipsoid NFW is itself a fit, accurate to about 5e-6.
``SHEAR``, ``SHEAR_GAMMA_PSI``
    ``ExternalShear``: ``gamma_1 = gamma1``, ``gamma_2 = gamma2``, ``origin = (ra_0, dec_0)``;
    or ``gamma_1 = gamma_ext cos(2 psi_ext)``, ``gamma_2 = gamma_ext sin(2 psi_ext)``.
``CONVERGENCE``
    ``MassSheet``: ``kappa``, ``centre = (ra_0, dec_0)``.
``MULTIPOLE``, ``MULTIPOLE_ELL``
    ``Multipole``, ``EllipticalMultipole``: ``m``, ``amplitude = a_m``, ``angle = phi_m``,
    ``einstein_radius = r_E``, and ``axis_ratio = q``. Released lenstronomy (to 1.14) fixes the
    reference ellipse along +x, so ``reference_angle = 0``. lenstronomy's elliptical multipole
    deflection is ours plus a uniform vector (its potential keeps a first angular harmonic; a
    gauge that moves the source plane rigidly and changes no image, magnification or
    time-delay difference): ``twinlens.kernels.multipole.lenstronomy_gauge`` gives it.
``EPL_MULTIPOLE_M1M3M4``, ``EPL_MULTIPOLE_M1M3M4_ELL``
    ``MassSum`` of a ``PowerLaw`` and multipoles ``m = 1, 3, 4`` with ``angle = phi +
    delta_phi_m{m}``, ``einstein_radius = theta_E`` and ``amplitude = a{m}_a theta_E /
    sqrt(q)`` (circular), or ``amplitude = a{m}_a theta_E``, ``axis_ratio = q`` and
    ``reference_angle = 0`` (elliptical, as lenstronomy 1.14 computes it).

autogalaxy
----------
``centre`` is ``(y, x)`` and ``ell_comps`` is ``(e2, e1)`` in our order. autogalaxy measures
elliptical radii along the major axis (``sqrt(x'^2 + y'^2 / q^2)``), we along the intermediate
axis (``sqrt(q x'^2 + y'^2 / q)``), hence the factors of ``sqrt(q)``:

``Gaussian``
    ``sigma_ag = sigma sqrt(q)``; ``intensity`` and ``mass_to_light_ratio`` are the same.
``IsothermalSph``, ``PointMass``, ``MassSheet``, ``ExternalShear``
    ``SIS``, ``PointMass``, ``MassSheet``, ``ExternalShear`` (``gamma_1, gamma_2`` in the same
    order; no origin).
``Isothermal``, ``IsothermalCore``
    ``SIE``, ``NIE``: ``einstein_radius_ag = theta_E (1 + q) / (2 sqrt(q))``,
    ``core_radius_ag = s / sqrt(q)``.
``PowerLaw``
    ``PowerLaw``: ``einstein_radius_ag = theta_E ((1 + q) / 2)^(1 / (slope - 1)) / sqrt(q)``.
``NFWSph``, ``NFW``
    ``NFW``: ``kappa_s``; ``scale_radius_ag = scale_radius / sqrt(q)``.
``PowerLawMultipole``
    ``Multipole`` with ``m >= 2`` (autogalaxy's has no ``m = 1`` at slope 2):
    ``multipole_comps = (k sin(m phi_m), k cos(m phi_m))``, ``k = amplitude / einstein_radius``,
    ``slope = 2``.

autogalaxy clamps its axis ratios near 1 (0.9999 or 0.99999), so for nearly round profiles its
own evaluation of a converted profile is not exactly this one.

Worked example::

    >>> from twinlens import convert
    >>> g = convert.from_lenstronomy("GAUSSIAN_ELLIPSE_KAPPA",
    ...     {"amp": 2.0, "sigma": 0.5, "e1": 0.1, "e2": -0.05, "center_x": 0.2, "center_y": 0.0})
    >>> round(g.intensity, 6), g.ell_comps
    (1.27324, (0.1, -0.05))
    >>> convert.to_lenstronomy(g)[0]
    'GAUSSIAN_ELLIPSE_KAPPA'
    >>> convert.to_lenstronomy_list(convert.from_lenstronomy("SIE", {"theta_E": 1.2, "e1": 0.1,
    ...     "e2": 0.0}))[0]
    ['SIE']
"""

# the parts live in twinlens.peers (see its docstring); this module is where users import them
from twinlens.peers.autogalaxy_mass import from_autogalaxy, to_autogalaxy
from twinlens.peers.lenstronomy_light import light_from_lenstronomy, light_to_lenstronomy
from twinlens.peers.lenstronomy_mass import (
    from_lenstronomy,
    from_lenstronomy_list,
    to_lenstronomy,
    to_lenstronomy_list,
)

# the order the docs list them in: autodoc's "bysource" follows __all__
__all__ = [  # noqa: RUF022
    "from_lenstronomy",
    "from_lenstronomy_list",
    "to_lenstronomy",
    "to_lenstronomy_list",
    "from_autogalaxy",
    "to_autogalaxy",
    "light_from_lenstronomy",
    "light_to_lenstronomy",
]

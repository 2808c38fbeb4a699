"""Conversions to and from the peer packages, lenstronomy and autogalaxy, in parts; users
call them from :mod:`twinlens.convert`, whose docstring states every convention.

Each module imports only the ones listed before it:

``common``
    Argument checks and the lookup in a conversion table.
``lenstronomy_mass``
    Lens (mass) profiles to and from lenstronomy, one profile or a whole lens model.
``lenstronomy_light``
    Sersic light profiles to and from lenstronomy.
``autogalaxy_mass``
    Mass profiles to and from ``autogalaxy.mp``.
"""

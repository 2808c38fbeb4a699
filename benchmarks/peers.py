"""The peers of the deflection workloads (W1-W4): what each package needs to compute the same
field on the same points, as a zero-argument callable returning ``(n, 2)``-convertible output.

Every peer is optional. :func:`deflection_peer` raises :class:`Skip` with the reason (not
installed, no such profile) instead of failing, so a benchmark prints one line saying so.

* ``lenstronomy`` (numpy) and, for the EPL, ``lenstronomy EPL_NUMBA`` (its numba EPL);
* ``jaxtronomy jit`` and ``herculens jit``: the deflections under ``jax.jit`` with the profile's
  keyword arguments passed as traced arguments (as a JAX search evaluates them);
* ``autogalaxy`` (numpy): its mass profile's ``deflections_yx_2d_from`` on an irregular grid of
  ``(y, x)`` points.

The profile is converted with :mod:`twinlens.convert` (``to_lenstronomy``, ``to_autogalaxy``),
so each peer computes the profile that ours does.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from twinlens import convert

#: (code, variant) of every deflection peer, in the order they run
DEFLECTION_PEERS = (
    ("lenstronomy", "numpy"),
    ("lenstronomy", "EPL_NUMBA"),
    ("jaxtronomy", "jit"),
    ("herculens", "jit"),
    ("autogalaxy", "numpy"),
)


class Skip(Exception):
    """The peer cannot run this case (the message says why)."""


def version(package: str) -> str | None:
    """The installed version of ``package``, or None."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def require(package: str) -> None:
    """Raise :class:`Skip` when ``package`` is not installed."""
    if importlib.util.find_spec(package) is None:
        raise Skip(f"{package} is not installed")


def as_xy(result: Any, yx: bool = False) -> np.ndarray:
    """A peer's deflections as an ``(n, 2)`` array of ``(alpha_x, alpha_y)``."""
    if isinstance(result, tuple | list):
        out = np.stack([np.asarray(r) for r in result], axis=-1)
    else:
        out = np.asarray(result)
        if out.ndim == 2 and out.shape[0] == 2 and out.shape[1] != 2:
            out = out.T  # herculens returns one (2, n) array
    return out[:, ::-1] if yx else out


def max_relative_difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Largest ``|ours - theirs| / |ours|`` over the points (vector norms)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    err = np.linalg.norm(ours - theirs, axis=-1) / np.linalg.norm(ours, axis=-1)
    return float(np.max(err))


def _lenstronomy(name: str, kwargs: dict, xy: np.ndarray) -> Callable[[], Any]:
    from lenstronomy.LensModel.lens_model import LensModel

    model = LensModel([name])
    x, y = xy[:, 0].copy(), xy[:, 1].copy()
    return lambda: model.alpha(x, y, [kwargs])


def _jax_kwargs(kwargs: dict) -> dict:
    import jax.numpy as jnp

    return {k: jnp.asarray(np.asarray(v, dtype=float)) for k, v in kwargs.items()}


def _jaxtronomy(name: str, kwargs: dict, xy: np.ndarray) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp
    from jaxtronomy.LensModel.lens_model import LensModel

    try:
        model = LensModel([name])
    except Exception as error:  # an unsupported profile is refused here
        raise Skip(f"jaxtronomy has no {name}: {str(error).split('. ')[0]}") from None
    x, y = jnp.asarray(xy[:, 0]), jnp.asarray(xy[:, 1])
    fn = jax.jit(lambda x, y, kw: model.alpha(x, y, [kw]))
    kw = _jax_kwargs(kwargs)
    return lambda: fn(x, y, kw)


def _herculens_clip_shim() -> None:
    """herculens 0.3 calls ``jnp.clip(..., a_max=)``, which JAX 0.10 no longer accepts; its NIE
    module gets a ``jnp`` whose ``clip`` still takes those keywords."""
    import jax.numpy as jnp

    nie = importlib.import_module("herculens.MassModel.Profiles.nie")
    if getattr(nie.jnp, "_twinlens_shim", False):
        return

    def clip(a: Any, a_min: Any = None, a_max: Any = None, **kw: Any) -> Any:
        return jnp.clip(a, kw.get("min", a_min), kw.get("max", a_max))

    names = {n: getattr(jnp, n) for n in dir(jnp) if not n.startswith("__")}
    nie.jnp = types.SimpleNamespace(**(names | {"clip": clip, "_twinlens_shim": True}))


def _herculens(name: str, kwargs: dict, xy: np.ndarray) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    mapping = importlib.import_module("herculens.MassModel.profile_mapping")
    if name not in mapping.SUPPORTED_MODELS:
        raise Skip(f"herculens has no {name}")
    _herculens_clip_shim()
    mass_model = importlib.import_module("herculens.MassModel.mass_model")
    model = mass_model.MassModel([name])
    x, y = jnp.asarray(xy[:, 0]), jnp.asarray(xy[:, 1])
    fn = jax.jit(lambda x, y, kw: model.alpha(x, y, [kw]))
    kw = _jax_kwargs(kwargs)
    return lambda: fn(x, y, kw)


def _autogalaxy(profile: Any, xy: np.ndarray) -> Callable[[], Any]:
    import autogalaxy as ag

    try:
        name, kwargs = convert.to_autogalaxy(profile)
    except (ValueError, KeyError, TypeError) as error:
        raise Skip(f"no autogalaxy profile: {error}") from None
    mp = getattr(ag.mp, name)(**kwargs)
    grid = ag.Grid2DIrregular(values=np.ascontiguousarray(xy[:, ::-1]))  # (y, x)
    return lambda: mp.deflections_yx_2d_from(grid=grid)


def deflection_peer(code: str, variant: str, profile: Any, xy: np.ndarray) -> dict:
    """``{"call", "yx", "version", "profile"}`` for one peer on ``profile``'s deflections at
    ``xy`` (``yx``: the output is ``(alpha_y, alpha_x)``); raises :class:`Skip`."""
    require(code)
    if code == "autogalaxy":
        return {
            "call": _autogalaxy(profile, xy),
            "yx": True,
            "version": version(code),
            "profile": type(profile).__name__,
        }
    try:
        name, kwargs = convert.to_lenstronomy(profile)
    except (ValueError, KeyError, TypeError) as error:
        raise Skip(f"no lenstronomy-style profile: {error}") from None
    if code == "lenstronomy" and variant == "EPL_NUMBA":
        if name != "EPL":
            raise Skip("EPL_NUMBA is lenstronomy's numba EPL only")
        name = "EPL_NUMBA"
    build = {"lenstronomy": _lenstronomy, "jaxtronomy": _jaxtronomy, "herculens": _herculens}
    return {
        "call": build[code](name, kwargs, xy),
        "yx": False,
        "version": version(code),
        "profile": name,
    }

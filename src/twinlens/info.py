"""What this installation can do: version, backends with their versions, threads, devices."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
from typing import Any

from twinlens.backend import get_backend


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect(load_backends: bool = True) -> dict[str, Any]:
    """A dictionary describing twinlens and its backends here."""
    import twinlens

    info: dict[str, Any] = {
        "twinlens": twinlens.__version__,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "default_backend": get_backend(),
        "backends": {"numpy": {"available": True, "version": _version("numpy")}},
    }
    numba_info: dict[str, Any] = {"available": importlib.util.find_spec("numba") is not None}
    if numba_info["available"]:
        numba_info["version"] = _version("numba")
        if load_backends:
            from twinlens.backend import numba_runtime

            numba = numba_runtime.load()
            numba_info["threads"] = numba.get_num_threads()
            numba_info["max_threads"] = numba.config.NUMBA_NUM_THREADS
            numba_info["threading_layer"] = numba.config.THREADING_LAYER
            numba_info["cache_dir"] = str(numba_runtime.generated_dir())
    info["backends"]["numba"] = numba_info
    jax_info: dict[str, Any] = {"available": importlib.util.find_spec("jax") is not None}
    if jax_info["available"]:
        jax_info["version"] = _version("jax")
        jax_info["jaxlib"] = _version("jaxlib")
        if load_backends:
            from twinlens.backend import jax_runtime

            jax = jax_runtime.load()
            jax_info["x64"] = bool(jax.config.read("jax_enable_x64"))
            jax_info["devices"] = [f"{d.platform}:{d.id} {d.device_kind}" for d in jax.devices()]
    else:
        from twinlens.backend.jax_runtime import INSTALL_HINT

        jax_info["install"] = INSTALL_HINT
    info["backends"]["jax"] = jax_info
    return info


def format_info(info: dict[str, Any]) -> str:
    """The report of :func:`info` as lines of text."""
    lines = [
        f"twinlens {info['twinlens']} (python {info['python']}, numpy {info['numpy']}, "
        f"scipy {info['scipy']})",
        f"default backend: {info['default_backend']}",
    ]
    for name, b in info["backends"].items():
        if not b["available"]:
            lines.append(
                f"  {name:<6} not installed" + (f": {b['install']}" if "install" in b else "")
            )
            continue
        extra = {k: v for k, v in b.items() if k not in {"available", "version"}}
        details = ", ".join(f"{k} {v}" for k, v in extra.items())
        lines.append(f"  {name:<6} {b.get('version')}" + (f"  ({details})" if details else ""))
    return "\n".join(lines)

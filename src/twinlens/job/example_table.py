"""The built-in examples of ``twinlens fit --example NAME``, as a table.

Each names its default folder (in the home folder), its search settings (and ``--quick``'s),
the writer that simulates its data and writes its ``fit.toml``, and its true parameters, drawn
on the plots. :func:`prepare_example` puts one into a folder without overwriting a user's
files (:mod:`twinlens.job.example_folder`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from twinlens.job import example, example_multiband, example_tdcosmo, timedelay
from twinlens.job.example_folder import place_example

__all__ = ["EXAMPLES", "BuiltInExample", "prepare_example"]


@dataclass(frozen=True)
class BuiltInExample:
    """One built-in example: where it goes, how it is searched, written and checked."""

    folder: str
    search: dict
    quick_search: dict
    write: Callable[..., Path]
    truth: Callable[[], dict[str, float]]


def _point_truth() -> dict[str, float]:
    return {
        **timedelay.TIMEDELAY_TRUTH,
        "point_source.time_delay_distance": timedelay.true_time_delay_distance(),
    }


EXAMPLES: dict[str, BuiltInExample] = {
    "parametric": BuiltInExample(
        "twinlens_example",
        example.EXAMPLE_SEARCH,
        example.QUICK_SEARCH,
        example.write_example,
        lambda: dict(example.TRUTH),
    ),
    "pixelised": BuiltInExample(
        "twinlens_example_pixelised",
        example.PIXELISED_SEARCH,
        example.PIXELISED_QUICK_SEARCH,
        example.write_pixelised_example,
        lambda: dict(example.PIXELISED_TRUTH),
    ),
    "multiband": BuiltInExample(
        "twinlens_example_multiband",
        example_multiband.MULTIBAND_SEARCH,
        example_multiband.MULTIBAND_QUICK_SEARCH,
        example_multiband.write_multiband_example,
        lambda: dict(example_multiband.MULTIBAND_TRUTH),
    ),
    "timedelay": BuiltInExample(
        "twinlens_example_timedelay",
        timedelay.TIMEDELAY_SEARCH,
        timedelay.TIMEDELAY_QUICK_SEARCH,
        timedelay.write_timedelay_example,
        _point_truth,
    ),
    "tdcosmo": BuiltInExample(
        "twinlens_example_tdcosmo",
        example_tdcosmo.TDCOSMO_SEARCH,
        example_tdcosmo.TDCOSMO_QUICK_SEARCH,
        example_tdcosmo.write_tdcosmo_example,
        lambda: dict(example_tdcosmo.TDCOSMO_TRUTH),
    ),
    "quasar": BuiltInExample(
        "twinlens_example_quasar",
        timedelay.QUASAR_SEARCH,
        timedelay.QUASAR_QUICK_SEARCH,
        timedelay.write_quasar_example,
        _point_truth,
    ),
}


def prepare_example(
    name: str, folder: str | Path, *, seed: int = 1, quick: bool = False, backend: str = "numba"
) -> tuple[Path, list[str]]:
    """Put the example ``name`` into ``folder``: its data only where there are none, its
    ``fit.toml`` unless the user edited it; returns the ``fit.toml`` to fit and the lines to
    tell the user (what was kept, what was updated)."""
    spec = EXAMPLES[name]
    search = {"name": "nautilus", **(spec.quick_search if quick else spec.search), "seed": seed}

    def write(staging: Path) -> Path:
        return spec.write(staging, seed=seed, search=search, backend=backend, overwrite=True)

    return place_example(write, folder, seed)

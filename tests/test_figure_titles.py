"""One name per number: every "name = value" in a figure's titles is printed in summary.txt
under the same name with the same value, and no other value has that name there.

The figures are drawn at the best sample, so fit.png shows the summary's "maximum
log-likelihood" (or "log-likelihood at the estimate"); with a pixelised source that
likelihood is the source inversion's evidence and is named so, for "log evidence" alone is
the search's. Each result is a fake SearchResult near the example's truths (no search)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from twinlens.job import example, timedelay
from twinlens.job.config import load_config
from twinlens.job.results import write_results
from twinlens.search import SearchResult

MAX_LOG_L, LOG_Z = -1234.5678, -1300.25  # unlike anything the plots could compute themselves


@pytest.fixture
def titles(monkeypatch):
    """Each saved figure's titles that name a number, by file name."""
    from matplotlib.figure import Figure

    seen: dict[str, list[str]] = {}
    save = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        texts = [self.get_suptitle(), *(ax.get_title() for ax in self.axes)]
        seen[Path(fname).name] = [t for t in texts if " = " in t]
        return save(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return seen


def _result(config, truth: dict, n: int, name: str = "nautilus") -> SearchResult:
    centre = np.array([truth[p] for p in config.model.paths])
    rng = np.random.default_rng(3)
    samples = centre * (1 + 1e-3 * rng.standard_normal((n, centre.size)))
    return SearchResult(
        name=name,
        paths=config.model.paths,
        samples=samples,
        log_likelihood=np.full(n, MAX_LOG_L - 1.0),
        max_likelihood=samples[0],
        max_log_likelihood=MAX_LOG_L,
        log_evidence=None if name == "map" else LOG_Z,
        log_evidence_error=None,
        n_evaluations=100,
        seed=0,
        info={"converged": True},
    )


def _named_numbers(title: str) -> list[tuple[str, str]]:
    """``(name, value)`` of each "name = value ..." part of a title (parts 4 spaces or a line
    apart)."""
    out = []
    for part in re.split(r" {4}|\n", title):
        name, sep, rest = part.partition(" = ")
        if sep:
            out.append((name, rest.split()[0]))
    return out


def _printed(summary: str, name: str) -> set[str]:
    """The values summary.txt gives ``name``: "name: v", "name = v", "name v", or the max-like
    column of the parameter table's row ``name`` (the figures show the best sample)."""
    values = re.findall(re.escape(name) + r"(?::| =)? (-?\d[\d.]*)", summary)
    rows = [line.split() for line in summary.splitlines()]
    best = [row[-1] for row in rows if row[:1] == [name] and len(row) == 5]  # the table's
    return set(values + best)


def _check(files: dict, titles: dict, figures: tuple[str, ...]) -> str:
    summary = files["summary"].read_text()
    for figure in figures:
        assert titles[figure], f"{figure} has no title with a number"
        for title in titles[figure]:
            for name, value in _named_numbers(title):
                assert _printed(summary, name) == {value}, (figure, title, summary)
    assert _printed(summary, "log evidence") == {f"{LOG_Z:.3f}"}  # the search's, alone
    return summary


@pytest.mark.parametrize(("name", "n"), [("nautilus", 10), ("map", 1)])
def test_fit_figure_names_its_numbers_as_the_summary(tmp_path, titles, name, n):
    config = load_config(example.write_example(tmp_path / "ex", search={"name": "nautilus"}))
    result = _result(config, example.TRUTH, n, name)
    files = write_results(config, result, tmp_path / "out")
    summary = _check(files, titles, ("fit.png",)) if n > 1 else files["summary"].read_text()
    label = "maximum log-likelihood" if n > 1 else "log-likelihood at the estimate"
    (title,) = titles["fit.png"]
    assert title.startswith(f"{label} = {MAX_LOG_L:.3f}")
    assert f"{label}: {MAX_LOG_L:.3f}" in summary


def test_pixelised_fit_figure_names_the_inversion_evidence_as_the_summary(tmp_path, titles):
    path = example.write_pixelised_example(tmp_path / "ex", search={"name": "nautilus"})
    config = load_config(path)
    truth = {
        **example.PIXELISED_TRUTH,
        "sources[0].pixelization.regularization.coefficient": 1.0,
    }
    files = write_results(config, _result(config, truth, 5), tmp_path / "out")
    summary = _check(files, titles, ("fit.png",))
    label = "maximum log-likelihood (the source inversion's log evidence)"
    assert f"{label}: {MAX_LOG_L:.3f}" in summary
    assert titles["fit.png"][0].startswith(f"{label} = {MAX_LOG_L:.3f}")


def test_timedelay_figures_name_their_numbers_as_the_summary(tmp_path, titles):
    path = timedelay.write_timedelay_example(tmp_path / "ex", search={"name": "nautilus"})
    config = load_config(path)
    truth = {
        **timedelay.TIMEDELAY_TRUTH,
        "point_source.time_delay_distance": timedelay.true_time_delay_distance(),
    }
    files = write_results(config, _result(config, truth, 10), tmp_path / "out")
    summary = _check(files, titles, ("fit.png", "point_source.png"))
    (h0,) = titles["point_source.png"]
    assert h0 in summary.splitlines()  # the summary's H0 line, digit for digit

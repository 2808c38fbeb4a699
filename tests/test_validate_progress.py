"""``twinlens validate`` reports progress as it goes (issue 13: ten silent minutes), on
standard error, and can check a chosen subset of kernels."""

from __future__ import annotations

import io
import itertools
import json
import re

import pytest

from twinlens import validate
from twinlens.cli import main

SUBSET = ["sheet.convergence", "sheet.deflections", "point_mass.convergence"]


def test_progress_is_called_once_per_kernel_with_increasing_counts():
    steps: list[validate.Step] = []
    rows = validate.run(["numpy", "numba"], n_points=16, kernels=SUBSET, progress=steps.append)
    assert [s.done for s in steps] == [1, 2, 3]
    assert {s.total for s in steps} == {3}
    assert [s.kernel for s in steps] == sorted(SUBSET)  # the registry's order
    assert all(a.elapsed <= b.elapsed for a, b in itertools.pairwise(steps))
    assert [r for s in steps for r in s.rows] == rows  # each step carries its kernel's rows
    assert {r.kernel for r in rows} == set(SUBSET) and all(r.passed for r in rows)


def test_kernel_families_and_unknown_names():
    family = [k.name for k in validate.select_kernels(["sheet"])]
    assert family and all(name.startswith("sheet.") for name in family)
    assert len(validate.select_kernels()) > len(family)
    with pytest.raises(ValueError, match=r"'sheet\.convergnce' \(did you mean 'sheet\.converg"):
        validate.select_kernels(["sheet.convergnce"])
    with pytest.raises(ValueError, match="no kernel or kernel family named 'nope'"):
        validate.run(["numpy"], kernels=["nope"])


def test_print_progress_writes_one_flushed_line_per_step():
    stream = io.StringIO()
    validate.run(
        ["numpy", "numba"],
        n_points=16,
        kernels=SUBSET[:2],
        progress=validate.print_progress(stream),
    )
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(
        r"validate: 1/2 kernels, sheet\.convergence on numba: pass \.\.\. \d+ s", lines[0]
    )


def test_cli_json_stays_on_stdout_and_progress_goes_to_stderr(capsys):
    argv = ["validate", "--json", "--points", "16", "--backend", "numba"]
    assert main([*argv, "--kernel", "sheet.convergence", "--kernel", "point_mass"]) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)  # nothing but the report on standard output
    kernels = {r["kernel"] for r in report["rows"]}
    assert "sheet.convergence" in kernels and "point_mass.deflections" in kernels
    assert not any(k.startswith("sheet.") and k != "sheet.convergence" for k in kernels)
    progress = out.err.splitlines()
    assert len(progress) == len(kernels) and progress[-1].startswith(
        f"validate: {len(kernels)}/{len(kernels)} kernels, "
    )


def test_cli_quiet_and_unknown_kernel(capsys):
    argv = ["validate", "--points", "16", "--backend", "numba", "--kernel", "sheet.convergence"]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and "1 passed, 0 failed" in out.out
    assert main(["validate", "--kernel", "sheet.nothing"]) == 2
    assert "no kernel or kernel family named 'sheet.nothing'" in capsys.readouterr().err

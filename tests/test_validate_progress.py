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
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.registry import Kernel, register, unregister

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


def _halved(x, a):
    return 0.5 * a * x


def test_worker_processes_give_the_same_rows_and_keep_local_kernels_here(monkeypatch):
    """Two worker processes (each a fresh interpreter) validate the built-in kernels; a kernel
    registered in this process only is validated here; the rows come back in the registry's
    order, the same as from one process."""
    here: list[str] = []
    validate_one = validate._validate_one

    def validate_here(kernel, *args):  # the workers run the module's own function
        here.append(kernel.name)
        return validate_one(kernel, *args)

    local = Kernel(
        name="test.local_only",
        point=_halved,
        inputs=(Arg("x", Domain(-1.0, 1.0, specials=(0.0,))),),
        params=(Arg("a", Domain(0.5, 2.0, specials=(1.0,))),),
        outputs=("y",),
    )
    register(local)
    try:
        names = [local.name, *SUBSET]
        steps: list[validate.Step] = []
        with monkeypatch.context() as patch:
            patch.setattr(validate, "_validate_one", validate_here)
            parallel = validate.run(
                ["numpy", "numba"], n_points=16, kernels=names, jobs=2, progress=steps.append
            )
        serial = validate.run(["numpy", "numba"], n_points=16, kernels=names)
    finally:
        unregister(local.name)
    assert here == [local.name]  # every built-in kernel was validated in a worker
    assert parallel == serial and all(r.passed for r in parallel)
    assert [r.kernel for r in parallel] == sorted(names)
    assert sorted(s.kernel for s in steps) == sorted(names)
    assert [s.done for s in steps] == [1, 2, 3, 4]


def test_full_adds_random_draws_to_every_special_value():
    kernel = validate.select_kernels(["sheet.convergence"])[0]
    quick = validate.run(["numpy", "numba"], n_points=16, kernels=[kernel.name])
    full = validate.run(["numpy", "numba"], n_points=16, kernels=[kernel.name], full=True)
    specials = sum(len(p.domain.specials) for p in kernel.params if p.size is None)
    per_case = 16 * len(kernel.outputs)
    assert quick[0].n_values == (specials + validate.QUICK_RANDOM) * per_case
    assert full[0].n_values == (specials + validate.FULL_RANDOM) * per_case
    assert validate.QUICK_RANDOM < validate.FULL_RANDOM


def test_groups_keep_a_blended_kernel_with_its_forms():
    groups = validate._groups(validate.select_kernels(["multipole_ell_m3", "sheet"]))
    names = [[k.name for k in g] for g in groups]
    assert sorted(n for g in names for n in g) == sorted(
        k.name for k in validate.select_kernels(["multipole_ell_m3", "sheet"])
    )
    blended = next(g for g in names if "multipole_ell_m3.deflections" in g)
    assert {
        "multipole_ell_m3.deflections_closed",
        "multipole_ell_m3.deflections_near_round",
    } <= set(blended)
    assert len(names[0]) >= max(len(g) for g in names)  # the largest group starts first
    with pytest.raises(ValueError, match="jobs must be a positive int"):
        validate.run(["numpy"], kernels=SUBSET, jobs=0)


def test_cli_jobs_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "--jobs", "0"])
    assert exit_.value.code == 2
    assert "expected a positive integer, got '0'" in capsys.readouterr().err


def test_workers_keep_jax_programs_in_the_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("TWINLENS_JAX_CACHE_DIR", raising=False)
    monkeypatch.setenv("TWINLENS_CACHE_DIR", str(tmp_path))
    assert validate.worker_jax_cache() == str(tmp_path / "jax")
    monkeypatch.setenv("TWINLENS_JAX_CACHE_DIR", str(tmp_path / "mine"))
    assert validate.worker_jax_cache() == str(tmp_path / "mine")  # the user's folder wins
    monkeypatch.delenv("TWINLENS_JAX_CACHE_DIR")
    monkeypatch.setenv("TWINLENS_NUMBA_CACHE", "0")
    assert validate.worker_jax_cache() is None  # on-disk caches off: none for JAX either

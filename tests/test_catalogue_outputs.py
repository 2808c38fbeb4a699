"""What ``twinlens batch`` leaves behind, checked against independent readings and runs.

A real ``dask scheduler`` and ``dask worker``, started as their own processes, fit a catalogue
given to the command by address (``--cluster tcp://HOST:PORT``). The catalogue's table, written
twice (``catalogue.csv`` and ``catalogue.parquet``), reads back the same from both files. A
per-lens override in the catalogue (a prior table, a fixed value) reaches that lens's fit and
no other's (docs/cluster.rst).
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_catalogue import TEMPLATE, _catalogue

from twinlens.catalogue import load_catalogue, run_catalogue
from twinlens.job import run_fit
from twinlens.job.config import parse_config
from twinlens.model import UniformPrior

THETA = "lens[0].mass[0].einstein_radius"  # a column of the catalogue: a place in the template
ELL = "lens[0].mass[0].ell_comps[0]"
# lens b: a narrower prior on the Einstein radius, another fixed ellipticity component
CSV = f"""id,data,noise_map,psf,{THETA},{ELL}
a,lens/data.fits,lens/noise_map.fits,lens/psf.fits,,
b,lens/data.fits,lens/noise_map.fits,lens/psf.fits,"{{uniform = [0.9, 1.1]}}",0.12
broken,lens/missing.fits,lens/noise_map.fits,lens/psf.fits,,
"""


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    """A catalogue of two lenses and a broken one, fitted on a local cluster of one worker;
    its folder."""
    folder = tmp_path_factory.mktemp("catalogue")
    run_catalogue(load_catalogue(_catalogue(folder, CSV)), workers=1, plot=False, progress=False)
    return folder


# -- a scheduler of one's own --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    """End ``process`` and its children (its own session: its group id is its pid)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


@pytest.fixture
def scheduler(tmp_path) -> Iterator[str]:
    """A ``dask scheduler`` on 127.0.0.1 and one ``dask worker`` (one thread) connected to
    it, each its own process; their address. Both are ended at teardown."""
    dask = Path(sys.executable).with_name("dask")
    if not dask.exists():
        pytest.skip("no dask command beside the interpreter")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "dask-logs"
    logs.mkdir()
    started: list[subprocess.Popen] = []

    def start(*args: str, log: str) -> subprocess.Popen:
        with (logs / log).open("w") as out:
            process = subprocess.Popen(
                [str(dask), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=tmp_path,
            )
        started.append(process)
        return process

    try:
        sched = start(
            "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard", log="s"
        )
        deadline = time.monotonic() + 120
        while True:  # until the scheduler listens
            assert sched.poll() is None, (logs / "s").read_text()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, (logs / "s").read_text()
            time.sleep(0.2)
        start(
            "worker",
            address,
            "--nworkers",
            "1",
            "--nthreads",
            "1",
            "--host",
            "127.0.0.1",
            "--no-dashboard",
            "--local-directory",
            str(tmp_path / "dask-worker"),
            log="w",
        )
        yield address
    finally:
        for process in reversed(started):
            _stop(process)


def test_a_running_dask_scheduler_fits_the_catalogue_given_its_address(scheduler, tmp_path):
    two = "".join(CSV.splitlines(keepends=True)[:3])  # lenses a and b
    path = _catalogue(tmp_path / "cat", two)
    command = [sys.executable, "-m", "twinlens", "batch", str(path), "--cluster", scheduler]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = tmp_path / "cat" / "out"
    with (out / "catalogue.csv").open(newline="") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == ["a", "b"] and {r["status"] for r in rows.values()} == {"done"}
    assert (out / "catalogue.parquet").is_file()
    for lens_id in "ab":
        record = json.loads((out / "lenses" / lens_id / "result.json").read_text())
        assert float(rows[lens_id]["n_evaluations"]) == record["n_evaluations"]
    assert not list((out / "lenses").glob("*.partial"))
    # the command worked through that scheduler: its one worker ran the command's warm-up
    from distributed import Client

    with Client(scheduler, timeout=60) as client:
        seen = client.run(lambda dask_worker: hasattr(dask_worker, "twinlens_compile_seconds"))
    assert list(seen.values()) == [True], seen

    # the scheduler's worker fitted lens a as this process fits it
    task = load_catalogue(path).tasks[0]
    run_fit(parse_config(task.config, task.base), output=tmp_path / "a", progress=False, plot=False)
    np.testing.assert_array_equal(
        np.loadtxt(out / "lenses" / "a" / "samples.csv", delimiter=",", skiprows=1),
        np.loadtxt(tmp_path / "a" / "samples.csv", delimiter=",", skiprows=1),
    )


# -- the table, twice ----------------------------------------------------------------------


def test_the_parquet_table_reads_back_as_the_csv_table(fitted):
    import pyarrow.parquet as pq

    with (fitted / "out" / "catalogue.csv").open(newline="") as f:
        header, *lines = list(csv.reader(f))
    parquet = pq.read_table(fitted / "out" / "catalogue.parquet")
    assert parquet.column_names == header
    assert parquet.num_rows == len(lines) == 3
    kinds: dict[str, int] = {"float": 0, "nan": 0, "text": 0, "bool": 0}
    for j, name in enumerate(header):
        column = parquet.column(name)
        values = column.to_pylist()
        cells = [line[j] for line in lines]
        kind = column.type
        if str(kind) in ("double", "float"):
            read = [float(c) for c in cells]  # an empty or unparsable cell fails here
            for row, (a, b) in enumerate(zip(values, read, strict=True)):
                assert (math.isnan(a) and math.isnan(b)) or a == b, (name, row, a, b)
                kinds["nan" if math.isnan(a) else "float"] += 1
        elif str(kind) == "bool":
            assert cells == [str(v) for v in values], name
            kinds["bool"] += 1
        else:
            assert str(kind) in ("string", "large_string"), (name, kind)
            assert cells == values, name
            kinds["text"] += 1
    # the table holds all three: numbers, NaNs (the broken lens's), text
    assert min(kinds.values()) > 0, kinds
    rows = {r["id"]: r for r in parquet.to_pylist()}
    assert [rows[i]["status"] for i in ("a", "b", "broken")] == ["done", "done", "failed"]
    assert "missing.fits" in rows["broken"]["error"]


# -- per-lens overrides ----------------------------------------------------------------------


def _record(fitted: Path, lens_id: str) -> dict:
    return json.loads((fitted / "out" / "lenses" / lens_id / "result.json").read_text())


def test_a_per_lens_override_reaches_that_lens_and_no_other(fitted, tmp_path):
    path = "lenses[0].mass[0].einstein_radius"
    a, b = _record(fitted, "a"), _record(fitted, "b")
    # the prior each lens was fitted with, as the fit records it
    assert a["parameters"][path]["prior"] == repr(UniformPrior(0.5, 1.5))  # the template's
    assert b["parameters"][path]["prior"] == repr(UniformPrior(0.9, 1.1))
    assert 0.9 <= b["parameters"][path]["lower_68"] <= b["parameters"][path]["upper_68"] <= 1.1
    # the fixed value each lens was fitted with
    ell = "lenses[0].mass[0].ell_comps[0]"
    assert a["max_likelihood_model"][ell] == 0.1  # the template's
    assert b["max_likelihood_model"][ell] == 0.12
    assert ell not in a["parameters"] and ell not in b["parameters"]  # still fixed

    # lens b is the template with those two edits made by hand, fitted here
    edited = TEMPLATE.replace(
        "einstein_radius = {uniform = [0.5, 1.5]}", "einstein_radius = {uniform = [0.9, 1.1]}"
    ).replace("ell_comps = [0.1, 0.0]", "ell_comps = [0.12, 0.0]")
    assert edited.count("0.12") == 1 and "[0.9, 1.1]" in edited
    import tomllib

    config = tomllib.loads(edited)
    config["dataset"] = {
        **config.get("dataset", {}),
        "data": "data.fits",
        "noise_map": "noise_map.fits",
        "psf": "psf.fits",
    }
    run_fit(
        parse_config(config, str(fitted / "lens")),
        output=tmp_path / "b",
        progress=False,
        plot=False,
    )
    by_hand = json.loads((tmp_path / "b" / "result.json").read_text())
    assert b["parameters"] == by_hand["parameters"]
    assert b["max_likelihood_model"] == by_hand["max_likelihood_model"]
    assert b["n_evaluations"] == by_hand["n_evaluations"]
    np.testing.assert_array_equal(
        np.loadtxt(fitted / "out" / "lenses" / "b" / "samples.csv", delimiter=",", skiprows=1),
        np.loadtxt(tmp_path / "b" / "samples.csv", delimiter=",", skiprows=1),
    )

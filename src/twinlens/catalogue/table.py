"""The catalogue's results table, rebuilt from the lenses' folders every time.

One row per lens of the catalogue, in its order: ``id``, ``status`` (``done``, ``failed``,
``interrupted``, ``pending``, or ``stale``: finished under another definition of its fit and
kept so by ``--keep-stale``), ``error`` and ``log`` for a failed lens, the search's log
evidence, maximum log-likelihood, evaluations and wall time, and for every free parameter
its median, 16th and 84th percentiles (``<path>``, ``<path>_lower_68``, ``<path>_upper_68``),
and the derived effective Einstein radius. Written as ``catalogue.csv`` and (with pyarrow)
``catalogue.parquet``, each written aside and renamed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

__all__ = ["build_table", "write_table"]


def _lens_row(output: Path, lens_id: str, stale: bool = False) -> dict[str, Any]:
    from twinlens.catalogue.task import FAILURE, LOG, lens_folders, lens_status

    finished, partial = lens_folders(output, lens_id)
    status = lens_status(output, lens_id)
    row: dict[str, Any] = {"id": lens_id, "status": status, "error": "", "log": ""}
    if status == "failed":
        failure = json.loads((partial / FAILURE).read_text())
        row.update(error=failure.get("error", ""), log=failure.get("log", str(partial / LOG)))
    elif status == "interrupted":
        row["log"] = str(partial / LOG)
    if status != "done":
        return row
    record = json.loads((finished / "result.json").read_text())
    row["log"] = str(finished / LOG)
    if stale:
        row["status"] = "stale"
    row["log_evidence"] = record.get("log_evidence")
    row["max_log_likelihood"] = record.get("max_log_likelihood")
    row["n_evaluations"] = record.get("n_evaluations")
    row["wall_time_s"] = record.get("info", {}).get("wall_time_s")
    row["converged"] = not record.get("warnings")
    for path, p in record.get("parameters", {}).items():
        row[path] = p.get("median")
        row[f"{path}_lower_68"] = p.get("lower_68")
        row[f"{path}_upper_68"] = p.get("upper_68")
    theta = record.get("derived", {}).get("einstein_radius", {})
    row["einstein_radius"] = theta.get("median")
    row["einstein_radius_lower_68"] = theta.get("lower_68")
    row["einstein_radius_upper_68"] = theta.get("upper_68")
    return row


def build_table(catalogue: Any, stale: Collection[str] = ()) -> Any:
    """The results table (``astropy.table.Table``) of ``catalogue``, from its folders; the
    finished lenses ``stale`` names get the status ``stale``."""
    from astropy.table import Table

    rows = [_lens_row(catalogue.output, task.id, task.id in stale) for task in catalogue.tasks]
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    numeric = {
        c
        for c in columns
        if any(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows)
    }
    data: dict[str, list[Any]] = {}
    for c in columns:
        if c in numeric:
            data[c] = [_number(r.get(c)) for r in rows]
        elif c == "converged":
            data[c] = [bool(r.get(c, False)) for r in rows]
        else:
            data[c] = [str(r.get(c, "")) for r in rows]
    return Table(data, names=columns)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and value is not None else math.nan


def write_table(table: Any, output: Path) -> dict[str, Path]:
    """Write ``table`` as ``catalogue.csv`` and ``catalogue.parquet`` in ``output``."""
    output = Path(output)
    files = {"csv": output / "catalogue.csv", "parquet": output / "catalogue.parquet"}
    for kind, path in list(files.items()):
        aside = path.with_name(f".{path.name}.partial")
        if kind == "parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:  # the CSV says the same
                files.pop("parquet")
                break
        table.write(aside, format="ascii.csv" if kind == "csv" else "parquet", overwrite=True)
        os.replace(aside, path)
    return files

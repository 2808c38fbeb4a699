"""A catalogue file: one model template and a table of lenses, checked before any fit starts.

A catalogue is a TOML file::

    template = "template.toml"          # a fit configuration (docs/fitting.rst)
    output = "catalogue_output"         # default: <catalogue name>_output beside the file
    catalogue = "lenses.csv"            # or inline rows: [[catalogue]] tables

    [cluster]                           # optional: how the fits are run (docs/cluster.rst)
    kind = "local"                      # local, slurm, pbs, or a scheduler's tcp:// address
    workers = 2

Each row of the catalogue names a lens: ``id`` (letters, digits, ``.``, ``_``, ``-``), its
``data``, ``noise_map`` and ``psf`` FITS files and optionally a ``mask`` FITS file, a
``pixel_scale``, ``mask_radius`` or ``sub_size``, and overrides of the template's parameters,
keyed by their place in the template (``lens[0].mass[0].einstein_radius``,
``lens[0].mass[0].centre[0]``): a number replaces a fixed value, or becomes the ``start`` of a
free one; a prior table (``{uniform = [0.5, 2.0]}``, written as such in a CSV cell) replaces
the parameter's prior. Relative paths are relative to the catalogue file (a CSV's to itself).
Columns ``truth.<model path>`` (``truth.lenses[0].mass[0].einstein_radius``) give known true
values of simulated lenses, drawn on the plots and used for the calibration.

A template with several bands (``[[dataset]]`` tables, docs/multiband.rst) takes each band's
files and settings in columns ``<band>.data``, ``<band>.noise_map``, ``<band>.psf`` (and
``<band>.mask``, ``<band>.pixel_scale``, ``<band>.mask_radius``, ``<band>.sub_size``).

Instead of ``template`` and ``catalogue``, ``configurations = "folder"`` names a folder of
ready fit configurations, one lens each (``<id>.toml``).

Every mistake (an unknown column, a duplicate id, an override of no parameter, a bad prior)
raises :class:`CatalogueError` naming the lens, the column and what is allowed, before any
work starts. Problems with a lens's data (a missing or unreadable FITS file, NaN pixels) are
the lens's own: it fails, the others go on.
"""

from __future__ import annotations

import copy
import csv
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twinlens.job.config import ConfigError, parse_config

__all__ = ["Catalogue", "CatalogueError", "LensTask", "load_catalogue"]

_DATA_COLUMNS = ("data", "noise_map", "psf", "mask")
_DATASET_COLUMNS = (*_DATA_COLUMNS, "pixel_scale", "mask_radius", "sub_size")
_TOP_KEYS = ("template", "catalogue", "configurations", "output", "cluster", "backend", "title")
TRUTH_PREFIX = "truth."
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# a place in the template: lens[0].mass[1].centre[0] or source[0].light[0].sersic_index
_PLACE = re.compile(
    r"^(lens|source)\[(\d+)\]\.(mass|light)\[(\d+)\]\.([A-Za-z_]\w*)(?:\[(\d+)\])?$"
)


class CatalogueError(ValueError):
    """A catalogue file that cannot be used; the message names the lens and the column."""


@dataclass(frozen=True)
class LensTask:
    """One lens's fit, as a worker runs it: a fit configuration (parsed TOML) and where its
    relative paths start."""

    id: str
    config: dict
    base: str
    truths: dict | None = None


@dataclass
class Catalogue:
    """A checked catalogue: the lenses' tasks, the output folder and the cluster table."""

    path: Path
    tasks: list[LensTask]
    output: Path
    cluster: dict = field(default_factory=dict)
    backend: str | None = None


def _read_toml(path: Path, what: str) -> dict:
    if not path.is_file():
        raise CatalogueError(f"no such {what}: {path}")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise CatalogueError(f"{path}: not valid TOML: {err}") from None


def _cell(text: str, where: str) -> Any:
    """A CSV cell as a TOML value: numbers, quoted or bare text, inline tables and arrays."""
    text = text.strip()
    if not text:
        return None
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if text.startswith(("{", "[")):
            raise CatalogueError(f"{where} = {text}: not a TOML table or array") from None
        return text  # a bare path


def _rows_from_csv(path: Path) -> list[dict]:
    if not path.is_file():
        raise CatalogueError(f"catalogue: no such CSV file {path}")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or "id" not in reader.fieldnames:
            raise CatalogueError(f"{path}: the first line must name the columns, among them id")
        rows = []
        for n, raw in enumerate(reader, start=2):
            name = (raw.get("id") or "").strip() or f"line {n}"
            row = {
                k.strip(): _cell(v or "", f"{path.name}: lens {name}, column {k}")
                for k, v in raw.items()
            }
            rows.append({k: v for k, v in row.items() if v is not None})
    return rows


def _override(template: dict, place: str, value: Any, where: str) -> None:
    """Apply one override to the template's parameter at ``place`` (in place)."""
    match = _PLACE.match(place)
    if match is None:
        raise CatalogueError(
            f"{where}: unknown column {place!r}; columns are id, "
            f"{', '.join(_DATASET_COLUMNS)}, or a template parameter such as "
            "lens[0].mass[0].einstein_radius or lens[0].mass[0].centre[0]"
        )
    role, g, kind, p, name, index = match.groups()
    try:
        profile = template[role][int(g)][kind][int(p)]
    except (KeyError, IndexError, TypeError):
        raise CatalogueError(f"{where}: the template has no {role}[{g}].{kind}[{p}]") from None
    if name not in profile or name == "type":
        raise CatalogueError(
            f"{where}: {role}[{g}].{kind}[{p}] ({profile.get('type')}) sets no parameter "
            f"{name!r} in the template; it sets {', '.join(k for k in profile if k != 'type')}"
        )
    holder, key = profile, name
    if index is not None:
        if not isinstance(profile[name], list) or int(index) >= len(profile[name]):
            raise CatalogueError(f"{where}: {role}[{g}].{kind}[{p}].{name} has no [{index}]")
        holder, key = profile[name], int(index)
    current = holder[key]
    if isinstance(value, dict):  # a new prior for this parameter
        holder[key] = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(current, dict):  # a free parameter: where its search starts
            holder[key] = {**current, "start": value}
        else:
            holder[key] = value
    elif isinstance(value, list) and index is None:
        holder[key] = value
    else:
        raise CatalogueError(
            f"{where} = {value!r}: expected a number, a list or a prior table such as "
            "{uniform = [0.5, 2.0]}"
        )


def _truths(row: dict, where: str) -> dict | None:
    """``truth.<path>`` columns: known true values (of simulated lenses), by model path."""
    truths = {}
    for key, value in row.items():
        if key.startswith(TRUTH_PREFIX):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise CatalogueError(f"{where}, column {key} = {value!r}: expected a number")
            truths[key[len(TRUTH_PREFIX) :]] = float(value)
    return truths or None


def _lens_config(template: dict, row: dict, where: str) -> dict:
    config = copy.deepcopy(template)
    bands = config.get("dataset")
    if isinstance(bands, list):  # [[dataset]] tables: each band's files in <band>.<column>
        return _band_lens_config(config, bands, row, where)
    dataset = dict(config.get("dataset", {}))
    for key in _DATA_COLUMNS:  # the template's own files are never a lens's
        dataset.pop(key, None)
    for key, value in row.items():
        if key == "id" or key.startswith(TRUTH_PREFIX):
            continue
        if key in _DATASET_COLUMNS:
            dataset[key] = value
        else:
            _override(config, key, value, f"{where}, column {key}")
    missing = [k for k in ("data", "noise_map", "psf") if k not in dataset]
    if missing:
        raise CatalogueError(f"{where}: no {', '.join(missing)} (FITS file paths)")
    config["dataset"] = dataset
    config.pop("output", None)  # each lens writes into the catalogue's folder
    return config


def _band_lens_config(config: dict, bands: list, row: dict, where: str) -> dict:
    """A multi-band template's lens: columns ``<band>.data``, ``<band>.noise_map``, ...
    give each band's files and settings (docs/multiband.rst)."""
    tables = {}
    for table in bands:
        name = table.get("name") if isinstance(table, dict) else None
        if not isinstance(name, str):
            raise CatalogueError(f"{where}: the template's [[dataset]] tables each need a name")
        tables[name] = {k: v for k, v in table.items() if k not in _DATA_COLUMNS}
    for key, value in row.items():
        if key == "id" or key.startswith(TRUTH_PREFIX):
            continue
        band, _, column = key.partition(".")
        if band in tables and column in _DATASET_COLUMNS:
            tables[band][column] = value
        elif key in _DATASET_COLUMNS:
            raise CatalogueError(
                f"{where}, column {key}: the template has bands ({', '.join(tables)}); name a "
                f"band's file as <band>.{key} (e.g. {next(iter(tables))}.{key})"
            )
        else:
            _override(config, key, value, f"{where}, column {key}")
    for name, table in tables.items():
        missing = [f"{name}.{k}" for k in ("data", "noise_map", "psf") if k not in table]
        if missing:
            raise CatalogueError(f"{where}: no {', '.join(missing)} (FITS file paths)")
    config["dataset"] = list(tables.values())
    config.pop("output", None)
    return config


def _check_ids(ids: list[str], source: str) -> None:
    seen: set[str] = set()
    for lens_id in ids:
        if not _ID.match(lens_id):
            raise CatalogueError(
                f"{source}: lens id {lens_id!r} must start with a letter or digit and hold only "
                "letters, digits, '.', '_' and '-' (it names the lens's folder)"
            )
        if lens_id in seen:
            raise CatalogueError(f"{source}: lens id {lens_id!r} appears twice")
        seen.add(lens_id)


def _check_lens_config(task: LensTask, backend: str | None) -> None:
    """A lens's configuration, checked without reading its data."""
    try:
        checked = parse_config(task.config, task.base, backend, read_data=False)
    except ConfigError as err:
        raise CatalogueError(f"lens {task.id}: {err}") from None
    if checked.adapt is not None:  # its first stage's folder is not the catalogue's
        raise CatalogueError(
            f"lens {task.id}: {checked.adapt.where}.adapt: a catalogue's lenses cannot adapt "
            "to an earlier stage; fit a staged lens with twinlens fit"
        )


def load_catalogue(path: str | Path, backend: str | None = None) -> Catalogue:
    """Read and check a catalogue file (see the module documentation).

    Every lens's configuration is checked as a fit configuration (model, priors, search) now,
    without reading its data; ``backend`` replaces the template's.

    Raises
    ------
    CatalogueError
        For any mistake, naming the lens and the column.
    """
    path = Path(path)
    data = _read_toml(path, "catalogue file")
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise CatalogueError(
            f"{path.name}: unknown entries {', '.join(unknown)}; allowed: {', '.join(_TOP_KEYS)}"
        )
    base = path.parent
    tasks: list[LensTask] = []
    if "configurations" in data:
        if "template" in data or "catalogue" in data:
            raise CatalogueError(
                f"{path.name}: give configurations, or template and catalogue, not both"
            )
        folder = base / str(data["configurations"])
        files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
        if not files:
            raise CatalogueError(
                f"configurations = {data['configurations']!r}: no .toml files in {folder}"
            )
        _check_ids([f.stem for f in files], str(folder))
        for f in files:
            config = _read_toml(f, "fit configuration")
            config.pop("output", None)
            tasks.append(LensTask(f.stem, config, str(f.parent)))
    else:
        for key in ("template", "catalogue"):
            if key not in data:
                raise CatalogueError(f'{path.name}: needs {key} (or configurations = "folder")')
        template_path = base / str(data["template"])
        template = _read_toml(template_path, "template")
        rows_source = data["catalogue"]
        if isinstance(rows_source, str):
            csv_path = base / rows_source
            rows, row_base = _rows_from_csv(csv_path), csv_path.parent
            source = csv_path.name
        elif isinstance(rows_source, list) and all(isinstance(r, dict) for r in rows_source):
            rows, row_base, source = rows_source, base, path.name
        else:
            raise CatalogueError(
                f"{path.name}: catalogue must be a CSV file path or [[catalogue]] tables"
            )
        if not rows:
            raise CatalogueError(f"{source}: the catalogue lists no lens")
        ids = []
        for n, row in enumerate(rows):
            if "id" not in row:
                raise CatalogueError(f"{source}: row {n + 1} has no id")
            ids.append(str(row["id"]))
        _check_ids(ids, source)
        for lens_id, row in zip(ids, rows, strict=True):
            where = f"{source}: lens {lens_id}"
            config = _lens_config(template, row, where)
            tasks.append(LensTask(lens_id, config, str(row_base), _truths(row, where)))
    backend = backend or data.get("backend")
    for task in tasks:
        _check_lens_config(task, backend)
    output = Path(str(data.get("output", f"{path.stem}_output")))
    cluster = data.get("cluster", {})
    if not isinstance(cluster, dict):
        raise CatalogueError(f"{path.name}: cluster must be a [cluster] table")
    return Catalogue(
        path, tasks, output if output.is_absolute() else base / output, cluster, backend
    )

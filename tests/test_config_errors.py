"""Every configuration mistake is one ConfigError, raised at load time (before anything is
written or sampled), whose message names the TOML entry, the bad value and what is allowed,
in TOML terms rather than Python's."""

from __future__ import annotations

import copy
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from twinlens.cli import main
from twinlens.job import example
from twinlens.job.config import ConfigError, load_config, parse_config

# words a TOML user never wrote: Python's names for values, arguments and types
PYTHON_SPEAK = re.compile(
    r"__init__|keyword argument|positional argument|\bTrue\b|\bFalse\b|\bNone\b|array\(|"
    r"overwrite=|\bdict\b|\bNoneType\b|\bstr\b|\bfloat\b"
)


@pytest.fixture(scope="module")
def example_folder(tmp_path_factory) -> Path:
    """The example's data and fit.toml, written once (simulating it is the slow part)."""
    folder = tmp_path_factory.mktemp("example")
    example.write_example(folder, search={"name": "nautilus", "n_live": 50, "seed": 1})
    return folder


@pytest.fixture
def folder(example_folder, tmp_path) -> Path:
    """A private copy of the example folder, free to edit."""
    for path in example_folder.iterdir():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


@pytest.fixture
def data(example_folder) -> dict:
    return tomllib.loads((example_folder / "fit.toml").read_text())


def _sie(d: dict) -> dict:
    mass = d["lens"][0]["mass"][0]
    assert mass["type"] == "SIE"  # the example's first lens mass; the cases below edit it
    return mass


def _rename(table: dict, old: str, new: str) -> None:
    table[new] = table.pop(old)


def _set(section: str, **values):
    def change(d: dict) -> None:
        d.setdefault(section, {}).update(values)

    return change


# (change to the parsed example, TOML entry, bad value, an allowed value) as the message
# must show them
MISTAKES = {
    "search name typo": (
        _set("search", name="nautlius"),
        "[search].name",
        '"nautlius"',
        "nautilus",
    ),
    "search name unknown": (
        _set("search", name="multinest"),
        "[search].name",
        "multinest",
        "emcee",
    ),
    "search name not text": (_set("search", name=3), "[search].name", "3", "nautilus"),
    "search setting typo": (_set("search", n_lives=100), "[search].n_lives", "100", "n_live"),
    "search setting of another search": (
        _set("search", n_walkers=64),
        "[search].n_walkers",
        "64",
        "n_live",
    ),
    "search setting out of range": (_set("search", n_live=0), "[search].n_live", "0", ">= 1"),
    "search setting not whole": (_set("search", n_live=50.5), "[search].n_live", "50.5", "integer"),
    "search seed negative": (_set("search", seed=-1), "[search].seed", "-1", ">= 0"),
    "search f_live out of range": (
        _set("search", f_live=1.5),
        "[search].f_live",
        "1.5",
        "(0.0, 1.0)",
    ),
    "search flag not a boolean": (
        _set("search", discard_exploration="yes"),
        "[search].discard_exploration",
        '"yes"',
        "true or false",
    ),
    "emcee too few walkers": (
        lambda d: d.__setitem__("search", {"name": "emcee", "n_walkers": 2}),
        "[search].n_walkers",
        "2",
        "n_walkers >=",
    ),
    "emcee burn_in out of range": (
        lambda d: d.__setitem__("search", {"name": "emcee", "burn_in": 1.0}),
        "[search].burn_in",
        "1.0",
        "[0.0, 1.0)",
    ),
    "map on numba": (
        lambda d: d.update(backend="numba", search={"name": "map"}),
        "[search].name",
        '"map"',
        'backend = "jax"',
    ),
    "nuts on numba": (
        lambda d: d.update(backend="numba", search={"name": "nuts"}),
        "[search].name",
        '"nuts"',
        'backend = "jax"',
    ),
    "search not a table": (
        lambda d: d.__setitem__("search", "nautilus"),
        "search",
        '"nautilus"',
        "[search] table",
    ),
    "unknown profile parameter": (
        lambda d: _rename(_sie(d), "einstein_radius", "einstien_radius"),
        "lens[0].mass[0]",
        "einstien_radius",
        "einstein_radius",
    ),
    "missing profile parameter": (
        lambda d: d["lens"][0]["mass"].append({"type": "MGE", "mass_to_light_ratio": 1.0}),
        "lens[0].mass[",
        "sigmas",
        "light = i",
    ),
    "unknown profile type": (
        lambda d: _sie(d).__setitem__("type", "SIEE"),
        "lens[0].mass[0].type",
        '"SIEE"',
        "PowerLaw",
    ),
    "missing profile type": (
        lambda d: _sie(d).pop("type"),
        "lens[0].mass[0].type",
        "missing",
        "SIE",
    ),
    "profile value out of range": (
        lambda d: _sie(d).__setitem__("einstein_radius", -1.0),
        "lens[0].mass[0]",
        "-1.0",
        "> 0",
    ),
    "pair that is one number": (
        lambda d: _sie(d).__setitem__("centre", 0.1),
        "lens[0].mass[0].centre",
        "0.1",
        "[x, y]",
    ),
    "pair of three": (
        lambda d: _sie(d).__setitem__("centre", [0.0, 0.0, 0.0]),
        "lens[0].mass[0].centre",
        "[0.0, 0.0, 0.0]",
        "[x, y]",
    ),
    "boolean parameter": (
        lambda d: _sie(d).__setitem__("einstein_radius", True),
        "lens[0].mass[0].einstein_radius",
        "true",
        "prior table",
    ),
    "text parameter": (
        lambda d: _sie(d).__setitem__("einstein_radius", "1.0"),
        "lens[0].mass[0].einstein_radius",
        '"1.0"',
        "a number",
    ),
    "prior kind typo": (
        lambda d: _sie(d).__setitem__("einstein_radius", {"unifrom": [0.5, 2.0]}),
        "lens[0].mass[0].einstein_radius",
        "unifrom",
        "uniform",
    ),
    "prior bounds reversed": (
        lambda d: _sie(d).__setitem__("einstein_radius", {"uniform": [2.0, 0.5]}),
        "lens[0].mass[0].einstein_radius",
        "[2.0, 0.5]",
        "lower < upper",
    ),
    "prior arguments not numbers": (
        lambda d: _sie(d).__setitem__("einstein_radius", {"uniform": ["a", 2.0]}),
        "lens[0].mass[0].einstein_radius",
        '"a"',
        "2 numbers",
    ),
    "prior start not a number": (
        lambda d: _sie(d).__setitem__("einstein_radius", {"uniform": [0.5, 2.0], "start": "x"}),
        "lens[0].mass[0].einstein_radius",
        '"x"',
        "a number",
    ),
    "prior start outside": (
        lambda d: _sie(d).__setitem__("einstein_radius", {"uniform": [0.5, 2.0], "start": 3.0}),
        "lens[0].mass[0].einstein_radius",
        "start = 3.0",
        "uniform = [0.5, 2.0]",
    ),
    "galaxy entry typo": (
        lambda d: _rename(d["lens"][0], "mass", "mas"),
        "lens[0]",
        "mas",
        "mass",
    ),
    "unknown section": (lambda d: _rename(d, "search", "serach"), "serach", "serach", "search"),
    "dataset key typo": (
        lambda d: _rename(d["dataset"], "sub_size", "subsize"),
        "[dataset]",
        "subsize",
        "sub_size",
    ),
    "dataset sub_size not whole": (
        _set("dataset", sub_size="two"),
        "[dataset].sub_size",
        '"two"',
        "1 to 64",
    ),
    "dataset sub_size zero": (_set("dataset", sub_size=0), "sub_size", "0", "1 to 64"),
    "dataset mask radius negative": (
        _set("dataset", mask_radius=-1.0),
        "[dataset].mask_radius",
        "-1.0",
        "> 0",
    ),
    "dataset path not text": (_set("dataset", psf=3), "[dataset].psf", "3", "path"),
    "backend unknown": (lambda d: d.update(backend="cuda"), "backend", '"cuda"', "numba"),
    "output not text": (lambda d: d.update(output=3), "output", "3", "text"),
}


@pytest.mark.parametrize("case", list(MISTAKES))
def test_each_mistake_names_the_entry_the_value_and_a_choice(data, example_folder, case):
    change, key, bad, allowed = MISTAKES[case]
    data = copy.deepcopy(data)
    change(data)
    with pytest.raises(ConfigError) as caught:
        parse_config(data, example_folder)
    message = str(caught.value)
    for part in (key, bad, allowed):
        assert part in message, f"{part!r} not in {message!r}"
    assert not PYTHON_SPEAK.search(message), message
    assert "\n" not in message


def test_typos_get_the_closest_name(data, example_folder):
    data = copy.deepcopy(data)
    data["search"] = {"name": "nautilus", "n_lives": 100}
    with pytest.raises(ConfigError, match=r'did you mean "n_live"\?'):
        parse_config(data, example_folder)


def test_whole_number_settings_of_profiles_stay_whole(data, example_folder):
    # an NFW's n_gaussians = 41 in TOML is an integer, and the profile takes it as one
    data = copy.deepcopy(data)
    data["lens"][0]["mass"].append({"type": "NFW", "kappa_s": 0.05, "n_gaussians": 41})
    config = parse_config(data, example_folder)
    nfw = config.model.tracer.lenses[0].mass[-1]
    assert type(nfw).__name__ == "NFW" and nfw.n_gaussians == 41
    data["lens"][0]["mass"][-1]["n_gaussians"] = 41.5
    with pytest.raises(ConfigError, match=r"n_gaussians = 41\.5: expected a whole number"):
        parse_config(data, example_folder)


def test_the_backend_override_is_checked_with_the_search(folder):
    path = folder / "fit.toml"
    text = path.read_text()
    path.write_text(re.sub(r'(?m)^name = "nautilus"\nn_live = 50$', 'name = "map"', text))
    with pytest.raises(ConfigError, match="jax"):
        load_config(path)  # the file says numba
    config = load_config(path, backend="jax")  # as --backend jax would
    assert config.backend == "jax" and config.search["name"] == "map"
    with pytest.raises(ConfigError, match=r'backend = "numba"'):
        load_config(path, backend="numba")


def test_a_valid_search_table_is_kept_as_written(data, example_folder):
    data = copy.deepcopy(data)
    data["search"] = {"name": "emcee", "n_walkers": 64, "n_steps": 10}
    config = parse_config(data, example_folder)
    assert config.search == {"name": "emcee", "n_walkers": 64, "n_steps": 10}
    del data["search"]
    assert parse_config(data, example_folder).search == {"name": "nautilus"}


# edits of the TOML text: (pattern, replacement, text the error line must hold)
CLI_MISTAKES = {
    "search name": (r'(?m)^name = "nautilus"$', 'name = "nautlius"', '[search].name = "nautlius"'),
    "search setting": (r"(?m)^n_live = 50$", "n_lives = 50", "[search].n_lives"),
    "search range": (r"(?m)^n_live = 50$", "n_live = 0", "[search].n_live = 0"),
    "map on numba": (r'(?m)^name = "nautilus"$', 'name = "map"', 'set backend = "jax"'),
    "profile parameter": (
        r"(?m)^einstein_radius =",
        "einstien_radius =",
        "has no parameter 'einstien_radius'",
    ),
}


@pytest.mark.parametrize("case", list(CLI_MISTAKES))
def test_the_command_line_reports_one_line_and_writes_nothing(folder, capsys, case):
    pattern, replacement, expected = CLI_MISTAKES[case]
    path = folder / "fit.toml"
    text, n = re.subn(pattern, replacement, path.read_text(), count=1)
    assert n == 1, "the example's fit.toml changed: update the pattern"
    path.write_text(text)
    output = folder / tomllib.loads(text)["output"]
    before = sorted(p.name for p in folder.iterdir())
    assert main(["fit", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err, err
    assert not output.exists() or not any(output.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == before  # no checkpoint, nothing

"""The house's rooms import only downwards (docs/contributing.rst, "The rooms of the house").

Every ``import`` in ``src/twinlens``, at the top of a module or inside a function, is read
with ``ast``; a module may import modules of its own room or of a room below it, never above,
and no two modules import each other by any path (no circle, inside a room either).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "twinlens"

# lowest first; a module's room is the first entry its dotted name starts with
ROOMS = [
    ["backend", "memo", "fields", "environment", "messages", "user_warnings"],
    ["kernels"],
    ["grids", "cosmology", "posterior_stats", "special"],
    # parameter paths into value-identity objects: what the likelihoods' vectors set
    ["profiles", "mass", "light", "extend", "model.paths"],
    ["imaging"],
    ["lensing", "kinematics"],
    ["inversion"],
    ["likelihood"],
    ["model"],
    ["search"],
    ["convert", "export", "coolest", "peers"],
    ["job"],
    ["catalogue"],
    ["cli", "validate", "info", "__main__", "__init__"],
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__") or "__init__"] = path
    return out


def _room(name: str) -> int:
    for rank, room in enumerate(ROOMS):
        if any(name == r or name.startswith(r + ".") for r in room):
            return rank
    raise AssertionError(f"twinlens.{name} is in no room of ROOMS: add it to the table")


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for t in targets:
            short = t.removeprefix("twinlens.")
            if t.startswith("twinlens.") and short in modules and short != name:
                if not name.startswith(short + "."):  # a module's own package
                    found.add(short)
    return found


def test_every_import_goes_down_or_stays_in_its_room():
    modules = _modules()
    upward = []
    for name, path in modules.items():
        for target in _imports(name, path, modules):
            if _room(target) > _room(name):
                upward.append(f"twinlens.{name} imports twinlens.{target}")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_circle():
    modules = _modules()
    graph = {n: _imports(n, p, modules) for n, p in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not circles, "\n".join(circles)

"""The one numba generator: its fingerprint names the files the math comes from, every
registered kernel is a module constant, and generated modules import their point functions by
reference, never through names injected into a namespace."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from twinlens.kernels import compile as kernel_compile
from twinlens.kernels import isothermal, multipole
from twinlens.kernels.registry import Kernel, all_kernels


def test_every_registered_kernel_is_a_constant_of_its_module():
    """Code reaches kernels by name (go to definition), not by registry strings."""
    modules = [m for n, m in sys.modules.items() if n.startswith("twinlens.kernels.")]
    reachable: set[int] = set()
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, Kernel):
                reachable.add(id(value))
            elif isinstance(value, dict):  # KERNELS tables, ELLIPTICAL[m][name]
                for entry in value.values():
                    inner = entry.values() if isinstance(entry, dict) else (entry,)
                    reachable |= {id(k) for k in inner if isinstance(k, Kernel)}
    missing = [
        k.name
        for k in all_kernels()
        if id(k) not in reachable and not k.name.startswith("examples.")
    ]
    assert not missing, missing


def test_math_inputs_follow_the_namespaces_the_math_uses():
    inputs = kernel_compile.math_inputs(["twinlens.kernels.isothermal"])
    # the isothermal math calls the Gaussian quadratic form, the frame rotations, the smooth
    # inverse-trig ratios and the ellipticity conversion; it never touches the multipoles
    for used in ("gaussian", "geometry", "inverse_trig", "ellipticity", "ops", "isothermal"):
        assert f"twinlens.kernels.{used}" in inputs
    assert "twinlens.kernels.multipole" not in inputs
    assert "twinlens.kernels.power_law" not in inputs


def test_fingerprint_names_its_files_and_changes_with_them(tmp_path, monkeypatch):
    digest, files = kernel_compile.math_fingerprint(("twinlens.kernels.isothermal",))
    assert {"isothermal.py", "gaussian.py", "compile.py", "ops.py"} <= set(files)
    source = kernel_compile.numba_source(isothermal.DEFLECTIONS_ELLIPTICAL)
    assert f"# math fingerprint: {digest} (" in source
    assert "from twinlens.kernels.isothermal import deflections_elliptical as _point_source" in (
        source
    )
    # a point function outside the package: its own file is part of the fingerprint
    (tmp_path / "my_lens_math.py").write_text(
        "def point(x, y, a):\n    return a * x * y\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("my_lens_math")
    before, names = kernel_compile.math_fingerprint(("my_lens_math",))
    assert "my_lens_math.py" in names
    kernel_compile.math_fingerprint.cache_clear()
    Path(module.__file__).write_text(
        "def point(x, y, a):\n    return a * x * y * 2.0\n", encoding="utf-8"
    )
    after, _ = kernel_compile.math_fingerprint(("my_lens_math",))
    assert after != before


def test_a_point_made_in_a_loop_is_imported_through_its_kernel():
    kernel = multipole.ELLIPTICAL[3]["deflections_closed"]
    module, expression = kernel_compile.point_reference(kernel)
    assert module == "twinlens.kernels.multipole"
    resolved = eval(f"_m.{expression}", {"_m": importlib.import_module(module)})
    assert resolved is kernel.point
    batched = kernel_compile.numba_batched_source(kernel)
    assert "import twinlens.kernels.multipole as _point_module" in batched
    assert f"_point_source = _point_module.{expression}" in batched
    assert "globals()" not in batched


def test_a_loop_made_point_without_a_reference_is_refused():
    def point(x, y, a):
        return a * x

    from twinlens.kernels.domains import Arg, Domain

    kernel = Kernel(
        name="local.point",
        point=point,
        inputs=(Arg("x", Domain(-1, 1)), Arg("y", Domain(-1, 1))),
        params=(Arg("a", Domain(0, 1)),),
        outputs=("v",),
    )
    try:
        kernel_compile.numba_source(kernel)
    except TypeError as err:
        assert "module-level name" in str(err) and "point_from" in str(err)
    else:
        raise AssertionError("a local point function was accepted")


SRC = Path(kernel_compile.__file__).resolve().parents[1]


def test_one_module_generates_numba_source():
    """No other module writes numba source: no string of code with ``njit``/``numba`` imports,
    no call of ``import_generated`` (the generated-module importer), no ``exec``."""
    import ast

    writers = set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and ("from numba import" in text or "@njit" in text):
                writers.add(path.name)
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if called in ("import_generated", "exec"):
                    writers.add(path.name)
    assert writers <= {"compile.py", "numba_runtime.py"}, writers


def test_a_plain_python_module_is_copied_as_written_and_runs_the_same():
    """The lens-equation loops: the function text verbatim, numba's prange in place of the
    module's ``prange = range``, parallel only where a prange loop is, equal results."""
    import inspect

    import numpy as np

    from twinlens.lensing import lens_equation_loops as loops

    source = kernel_compile.numba_copy_source(loops, loops._FUNCTIONS)
    for name in loops._FUNCTIONS:
        assert inspect.getsource(getattr(loops, name)) in source
    assert "prange = range" not in source
    assert "find_triangles = njit(parallel=True, cache=" in source
    assert "barycentric = njit(parallel=False, cache=" in source
    rng = np.random.default_rng(3)
    tri = rng.uniform(-1, 1, (2 * 8, 6))
    boxes = np.array([[-1.0, 1.0, -1.0, 1.0]] * 2)
    sources = rng.uniform(-0.5, 0.5, (40, 2))
    found = []
    for find in (loops.find_triangles, loops.compiled().find_triangles):
        index, count = np.empty((40, 3), dtype=np.int64), np.empty(40, dtype=np.int64)
        find(tri, boxes, sources, 1e-12, index, count)
        found.append((index, count))
    np.testing.assert_array_equal(found[0][0], found[1][0])
    np.testing.assert_array_equal(found[0][1], found[1][1])
    assert found[0][1].sum() > 0  # some source lies in some triangle


def test_a_copy_imports_the_globals_it_reads_and_binds_aliases():
    from twinlens.inversion import nnls

    functions = ("_passive_solve_loops", "_solve_one", "_solve_batch")
    source = kernel_compile.numba_copy_source(
        nnls, functions, aliases={"_passive_solve": "_passive_solve_loops"}
    )
    assert "from twinlens.inversion.nnls import TOLERANCE" in source
    assert "_passive_solve = _passive_solve_loops" in source
    assert "nnls.py" in source.splitlines()[1]  # the fingerprint covers the module it copies


def test_a_copy_fingerprints_the_files_of_the_helpers_it_imports(tmp_path, monkeypatch):
    """A copied function calling a helper from another twinlens module: that module's file is
    part of the fingerprint, so editing the helper recompiles the copy."""
    (tmp_path / "copy_me.py").write_text(
        "from twinlens.inversion.border import kernel_radius\n\nprange = range\n\n\n"
        "def f(d2, radii):\n    return kernel_radius(d2, radii)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("copy_me")
    source = kernel_compile.numba_copy_source(module, ("f",))
    assert "from copy_me import kernel_radius" in source
    fingerprint_line = source.splitlines()[1]
    assert "border.py" in fingerprint_line and "copy_me.py" in fingerprint_line

"""A table of a benchmark run: the JSON lines of ``deflections.py``, ``likelihood.py`` or
``scaling.py`` (files, or standard input) as a reStructuredText list-table, one row per line.

    python benchmarks/deflections.py > run.jsonl && python benchmarks/summarize.py run.jsonl

Columns: the workload and line name (the size is in the JSON line), the median, minimum and
CPU milliseconds per call (for W5/W6 batches the median per vector too), the first call or, for
JAX, the compile seconds, and each peer's median over ours from the run's ``speedup`` line.
Skipped cases and the ``fit`` lines of ``scaling.py`` are listed after the table.
"""

from __future__ import annotations

import fileinput
import json
import sys


def _ms(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _ratio(value: float) -> str:
    return f"{value:.2g}" if value < 100 else f"{value:.0f}"


def _rows(lines: list[dict]) -> tuple[list[list[str]], list[str]]:
    speedups = {ln["workload"]: ln["speedup"] for ln in lines if ln.get("case") == "speedup"}
    rows, notes = [], []
    for ln in lines:
        if "skipped" in ln:
            why = ln["skipped"].split(". ")[0]
            notes.append(f"{ln['workload']} {ln['name']}: skipped ({why})")
            continue
        if ln.get("case") == "fit":
            unit = "per_point_ns" if "per_point_ns" in ln else "per_member_ms"
            notes.append(
                f"{ln['workload']} {ln['name']}: overhead {ln['overhead_ms']:.3g} ms, "
                f"{unit} {ln[unit]:.3g}, largest relative residual {ln['max_rel_residual']:.2f}"
            )
            continue
        if "wall_median_ms" not in ln or "name" not in ln:
            continue
        batch = ln.get("batch") or 1
        per = ln["wall_median_ms"] / batch
        median = _ms(ln["wall_median_ms"]) + (f" ({_ms(per)} per vector)" if batch > 1 else "")
        first = ln.get("compile_s", ln.get("first_call_s"))
        label = "compile" if "compile_s" in ln else "first"
        ratios = speedups.get(ln["workload"], {}).get(ln["name"], {})
        rows.append(
            [
                ln["workload"],
                ln["name"],
                median,
                _ms(ln["wall_min_ms"]),
                _ms(ln["cpu_ms"]),
                f"{label} {first:.2g}" if first is not None else "",
                ", ".join(f"{k} {_ratio(v)}" for k, v in ratios.items()),
            ]
        )
    return rows, notes


def table(lines: list[dict]) -> str:
    """The list-table and the notes below it, as text."""
    rows, notes = _rows(lines)
    head = ["workload", "line", "median ms", "min ms", "CPU ms", "first call / compile s"]
    head.append("peer / ours")
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [head, *rows]:
        out.append(f"   * - {row[0]}")
        out += [f"     - {cell}".rstrip() for cell in row[1:]]
    out.append("")
    out += [f"* {note}" for note in notes]
    return "\n".join(out)


def main() -> None:
    lines = []
    for raw in fileinput.input(sys.argv[1:]):
        if raw.startswith("{"):
            lines.append(json.loads(raw))
    print(table(lines))


if __name__ == "__main__":
    main()

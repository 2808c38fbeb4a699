"""The ``twinlens`` command."""

from __future__ import annotations

import argparse
import json
import sys

from twinlens.backend import BACKENDS


def _cmd_validate(args: argparse.Namespace) -> int:
    from twinlens import validate

    backends = args.backend or validate.available_backends()
    if "numpy" not in backends:
        backends = ["numpy", *backends]  # the reference is always computed
    missing = [b for b in backends if b not in validate.available_backends()]
    if missing:
        print(f"backend(s) not installed: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = validate.run(backends, seed=args.seed, n_points=args.points)
    failed = [r for r in rows if not r.passed]
    if args.json:
        print(json.dumps({"rows": validate.as_dicts(rows), "passed": not failed}, indent=1))
    else:
        print(validate.format_table(rows))
        skipped = [b for b in ("numba", "jax") if b not in backends]
        if skipped:
            print(f"\nnot checked (not installed): {', '.join(skipped)}")
        print(f"\n{len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def _cmd_info(args: argparse.Namespace) -> int:
    from twinlens import info

    data = info.collect()
    print(json.dumps(data, indent=1) if args.json else info.format_info(data))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="twinlens", description="Strong lensing on numba and JAX with the same answers."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser(
        "validate", help="check that every kernel agrees across backends (non-zero exit on failure)"
    )
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.add_argument(
        "--backend", action="append", choices=BACKENDS, help="backend to check (repeatable)"
    )
    v.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    v.add_argument("--points", type=int, default=512, help="points per parameter case")
    v.set_defaults(func=_cmd_validate)
    i = sub.add_parser("info", help="version, backends, threads and devices")
    i.add_argument("--json", action="store_true", help="machine-readable output")
    i.set_defaults(func=_cmd_info)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)

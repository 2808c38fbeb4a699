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
    try:
        kernels = validate.select_kernels(args.kernel)
    except ValueError as err:
        return _usage_error(str(err))
    # progress on standard error, so that --json keeps standard output machine-readable
    progress = None if args.quiet else validate.print_progress()
    rows = validate.run(
        backends,
        seed=args.seed,
        n_points=args.points,
        kernels=[k.name for k in kernels],
        progress=progress,
    )
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


def _cmd_fit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from twinlens.job import run_fit
    from twinlens.job.config import ConfigError, load_config
    from twinlens.search import SEARCHES
    from twinlens.search.checkpoint import CheckpointMismatch
    from twinlens.search.stopping import EXIT_STOPPED, SearchStopped

    if args.example == (args.config is not None):
        return _usage_error("give a configuration file, or --example (not both)")
    if args.quick and not args.example:
        return _usage_error(
            "--quick applies to --example only; set the search's settings in the file's "
            "[search] table (see docs/searches.rst)"
        )
    truths = None
    if args.example:
        from twinlens.job import example

        # in the home folder, not the working directory (a clone would gain an untracked one)
        folder = Path(args.output) if args.output else Path.home() / "twinlens_example"
        settings = example.QUICK_SEARCH if args.quick else example.EXAMPLE_SEARCH
        search = {"name": "nautilus", **settings, "seed": args.seed}
        config_path = example.write_example(
            folder,
            seed=args.seed,
            search=search,
            backend=args.backend or "numba",
            overwrite=True,
        )
        print(f"simulated the example lens into {folder}; fitting it with {config_path}")
    else:
        config_path = Path(args.config)
    try:
        config = load_config(config_path)
    except ConfigError as err:
        return _usage_error(str(err))
    if args.backend:
        config.backend = args.backend
    allowed = SEARCHES[config.search["name"]].backends
    if config.backend not in allowed:
        return _usage_error(
            f"the {config.search['name']} search runs on {' or '.join(allowed)}, not on "
            f"{config.backend} (--backend / the file's backend)"
        )
    if args.example:
        truths = [example.TRUTH[p] for p in config.model.paths]
        output = folder / "fit_output"
    else:
        output = Path(args.output) if args.output else None
    try:
        run_fit(
            config,
            output=output,
            progress=not args.quiet,
            truths=truths,
            restart=args.restart,
            hard_exit=True,
        )
    except CheckpointMismatch as err:
        return _usage_error(str(err))
    except SearchStopped as stop:
        print(f"twinlens: {stop}", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt:
        print(
            "twinlens: interrupted outside the search; the search's checkpoint (if any) is "
            "complete: run the same command again to finish",
            file=sys.stderr,
        )
        return 130
    return 0


def _usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _cmd_simulate(args: argparse.Namespace) -> int:
    from twinlens.job import example

    try:
        path = example.write_example(
            args.directory,
            seed=args.seed,
            backend=args.backend or "numba",
            overwrite=args.overwrite,
        )
    except FileExistsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote data.fits, noise_map.fits, psf.fits and {path.name} to {args.directory}")
    print(f"fit it with: twinlens fit {path}")
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
    v.add_argument(
        "--kernel",
        action="append",
        metavar="NAME",
        help="a kernel (isothermal.deflections) or family (isothermal) to check (repeatable)",
    )
    v.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    v.set_defaults(func=_cmd_validate)
    i = sub.add_parser("info", help="version, backends, threads and devices")
    i.add_argument("--json", action="store_true", help="machine-readable output")
    i.set_defaults(func=_cmd_info)
    f = sub.add_parser(
        "fit", help="fit a model to imaging data (a TOML configuration, or --example)"
    )
    f.add_argument("config", nargs="?", help="the TOML configuration file (see docs/fitting.rst)")
    f.add_argument("--example", action="store_true", help="simulate the built-in lens and fit it")
    f.add_argument("--quick", action="store_true", help="with --example: fewer live points")
    f.add_argument("--backend", choices=("numba", "jax"), help="override the file's backend")
    f.add_argument(
        "--output",
        help="output folder (default: the file's `output`, or ~/twinlens_example for --example)",
    )
    f.add_argument(
        "--restart",
        action="store_true",
        help="discard the output folder's checkpoint and start the search afresh",
    )
    f.add_argument("--seed", type=int, default=1, help="with --example: noise and search seed")
    f.add_argument("--quiet", action="store_true", help="no progress output")
    f.set_defaults(func=_cmd_fit)
    s = sub.add_parser("simulate", help="write the built-in example dataset and its fit.toml")
    s.add_argument("directory", help="folder to write into")
    s.add_argument("--seed", type=int, default=1, help="noise seed")
    s.add_argument("--backend", choices=("numba", "jax"), help="backend written to fit.toml")
    s.add_argument("--overwrite", action="store_true", help="replace existing files")
    s.set_defaults(func=_cmd_simulate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)

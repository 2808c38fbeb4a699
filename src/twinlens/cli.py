"""The ``twinlens`` command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

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
        full=args.full,
        jobs=validate.default_jobs() if args.jobs is None else args.jobs,
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
    from twinlens.job import run_fit
    from twinlens.job.config import ConfigError, load_config
    from twinlens.job.results import ExportFailed
    from twinlens.search.checkpoint import CheckpointMismatch, CheckpointUnreadable
    from twinlens.search.stopping import EXIT_STOPPED, SearchStopped

    if (args.example is not None) == (args.config is not None):
        return _usage_error("give a configuration file, or --example (not both)")
    if args.quick and args.example is None:
        return _usage_error(
            "--quick applies to --example only; set the search's settings in the file's "
            "[search] table (see docs/searches.rst)"
        )
    output = Path(args.output) if args.output and args.example is None else None
    if args.example is not None:
        from twinlens.job.example_folder import ExampleFolderError
        from twinlens.job.example_table import EXAMPLES, prepare_example

        spec = EXAMPLES[args.example]
        # in the home folder, not the working directory (a clone would gain an untracked one)
        folder = Path(args.output) if args.output else Path.home() / spec.folder
        try:
            config_path, notes = prepare_example(
                args.example,
                folder,
                seed=args.seed,
                quick=args.quick,
                backend=args.backend or "numba",
            )
        except ExampleFolderError as err:
            return _usage_error(str(err))
        for note in notes:
            print(note)
        print(f"the example lens is in {folder}; fitting it with {config_path}")
        output = folder / "fit_output"
    else:
        config_path = Path(args.config)
    try:  # the search is checked against the backend that will run it
        config = load_config(config_path, backend=args.backend)
    except ConfigError as err:
        return _usage_error(str(err))
    truths = None
    if args.example is not None:
        known = EXAMPLES[args.example].truth()
        truths = [known.get(p, float("nan")) for p in config.model.paths]
    try:
        run_fit(
            config,
            output=output,
            progress=not args.quiet,
            truths=truths,
            restart=args.restart,
            hard_exit=True,
        )
    except (CheckpointMismatch, CheckpointUnreadable, ExportFailed) as err:
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _cmd_batch(args: argparse.Namespace) -> int:
    from twinlens.catalogue import CatalogueError, ClusterError, load_catalogue, run_catalogue

    if args.example is None and args.catalogue is None:
        return _usage_error("give a catalogue file, or --example [N]")
    if args.example is not None:
        if args.catalogue is not None:
            return _usage_error("give a catalogue file, or --example [N] (not both)")
        from twinlens.catalogue import example
        from twinlens.job.example_folder import ExampleFolderError, place_example

        folder = Path(args.output) if args.output else Path.home() / "twinlens_batch_example"
        try:
            path, notes = place_example(
                lambda staging: example.write_example(staging, args.example, args.seed),
                folder,
                args.seed,
            )
        except ExampleFolderError as err:
            return _usage_error(str(err))
        for note in notes:
            print(note)
        print(f"the example's {args.example} lenses are in {folder}; fitting them with {path}")
    else:
        path = Path(args.catalogue)
    try:
        catalogue = load_catalogue(path, backend=args.backend)
        if args.output and args.example is None:
            catalogue.output = Path(args.output)
        table = run_catalogue(
            catalogue,
            cluster=args.cluster,
            workers=args.workers,
            threads_per_worker=args.threads_per_worker,
            gpus=args.gpus,
            retries=args.retries,
            progress=not args.quiet,
            keep_stale=args.keep_stale,
        )
    except (CatalogueError, ClusterError) as err:
        return _usage_error(str(err))
    except KeyboardInterrupt:
        print(
            "twinlens: interrupted; finished lenses are kept and interrupted ones resume from "
            "their checkpoints: run the same command again",
            file=sys.stderr,
        )
        return 130
    if args.example is not None:
        from twinlens.catalogue import example

        example.report(catalogue, table)
    failed = [r["id"] for r in table if r["status"] not in ("done", "stale")]
    if failed:
        print(
            f"twinlens: {len(failed)} of {len(table)} lenses did not finish: "
            f"{', '.join(failed[:10])}{' ...' if len(failed) > 10 else ''}; errors and logs in "
            f"{catalogue.output / 'catalogue.csv'}",
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_debug_source(args: argparse.Namespace) -> int:
    """Print the numba source generated for a kernel, or for a configuration's fused loop."""
    if (args.kernel is None) == (args.config is None):
        return _usage_error("give a kernel name (twinlens validate lists them), or --config FILE")
    if args.config is not None:
        from twinlens.job.config import ConfigError, load_config
        from twinlens.lensing.fused import fused_sources

        try:
            config = load_config(args.config, backend="numba")
        except ConfigError as err:
            return _usage_error(str(err))
        sources = fused_sources(config.model.instance(config.model.start))
        if not sources:
            return _usage_error(
                f"{args.config}: the model's profiles are not fused into one loop (a sum of "
                "profiles, or a kernel numba runs by hand): each runs its own kernel"
            )
        print("\n\n".join(sources))
        return 0
    from twinlens.kernels import compile as generator
    from twinlens.kernels.registry import get

    try:
        kernel = get(args.kernel)
        make = generator.numba_batched_source if args.batched else generator.numba_source
        print(make(kernel))
    except KeyError:
        return _usage_error(
            f"no kernel named {args.kernel!r}; `twinlens validate --kernel FAMILY` lists them"
        )
    except TypeError as err:  # a hand-written numba implementation: nothing is generated
        return _usage_error(f"{args.kernel}: {err}")
    return 0


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


def _add_fit(sub: Any) -> None:
    """The ``fit`` subcommand's arguments."""
    f = sub.add_parser(
        "fit",
        help="fit a model to imaging data and/or a lensed point source (a TOML configuration, "
        "or --example)",
    )
    f.add_argument("config", nargs="?", help="the TOML configuration file (see docs/fitting.rst)")
    f.add_argument(
        "--example",
        nargs="?",
        const="parametric",
        choices=("parametric", "pixelised", "multiband", "timedelay", "tdcosmo", "quasar"),
        help="simulate the built-in lens and fit it; --example pixelised: an irregular source "
        "fitted with a pixelised source in two stages; --example multiband: the lens in two "
        "bands at different pixel scales and PSFs; --example timedelay: a lensed "
        "quasar's imaging, image positions and delays, reporting H0; --example tdcosmo: the "
        "same with the lens's velocity dispersion and the mass sheet free (time-delay "
        "cosmography); --example quasar: its image positions and delays alone, without imaging",
    )
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


def _add_batch(sub: Any) -> None:
    """The ``batch`` subcommand's arguments."""
    b = sub.add_parser(
        "batch",
        help="fit every lens of a catalogue on a Dask cluster (local, SLURM, PBS or a scheduler)",
    )
    b.add_argument("catalogue", nargs="?", help="the catalogue TOML file (see docs/cluster.rst)")
    b.add_argument(
        "--example",
        nargs="?",
        type=_positive_int,
        const=8,
        metavar="N",
        help="simulate N varied lenses (default 8) and fit them on a local cluster",
    )
    b.add_argument(
        "--cluster",
        metavar="KIND",
        help="local (default), slurm, pbs or tcp://HOST:PORT (replaces [cluster].kind)",
    )
    b.add_argument("--workers", type=int, help="worker processes (local) or most jobs")
    b.add_argument("--threads-per-worker", type=int, help="threads of each worker (default 1)")
    b.add_argument(
        "--gpus",
        action="store_true",
        default=None,
        help="one worker per GPU, each pinned to its own (JAX backend; a local cluster needs "
        "dask-cuda); sets [cluster].gpus = true",
    )
    b.add_argument("--output", help="output folder (default: the catalogue's)")
    b.add_argument(
        "--retries", type=int, default=2, help="tries again of a lens whose worker died (2)"
    )
    b.add_argument(
        "--keep-stale",
        action="store_true",
        help="keep finished lenses whose template, row or data changed since their fit "
        "(marked stale in the table) instead of refitting them",
    )
    b.add_argument("--backend", choices=("numba", "jax"), help="override the template's")
    b.add_argument("--seed", type=int, default=1, help="with --example: the simulation seed")
    b.add_argument("--quiet", action="store_true", help="no progress output")
    b.set_defaults(func=_cmd_batch)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``twinlens`` command and its subcommands."""
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
    v.add_argument(
        "--full",
        action="store_true",
        help="the full sweep: more random parameter sets per kernel (every special value of "
        "every parameter is checked either way)",
    )
    v.add_argument(
        "--jobs",
        type=_positive_int,
        metavar="N",
        help="worker processes (default: one per core, at most 4; 1 checks in this process)",
    )
    v.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    v.set_defaults(func=_cmd_validate)
    i = sub.add_parser("info", help="version, backends, threads and devices")
    i.add_argument("--json", action="store_true", help="machine-readable output")
    i.set_defaults(func=_cmd_info)
    _add_fit(sub)
    _add_batch(sub)
    d = sub.add_parser(
        "debug-source",
        help="print the numba source generated for a kernel, or for a configuration's fused loop",
    )
    d.add_argument("kernel", nargs="?", help="a kernel's name, e.g. isothermal.deflections")
    d.add_argument("--batched", action="store_true", help="the kernel's batched loop")
    d.add_argument("--config", help="a fit configuration: its model's fused loop")
    d.set_defaults(func=_cmd_debug_source)
    s = sub.add_parser("simulate", help="write the built-in example dataset and its fit.toml")
    s.add_argument("directory", help="folder to write into")
    s.add_argument("--seed", type=int, default=1, help="noise seed")
    s.add_argument("--backend", choices=("numba", "jax"), help="backend written to fit.toml")
    s.add_argument("--overwrite", action="store_true", help="replace existing files")
    s.set_defaults(func=_cmd_simulate)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``twinlens`` command on ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    from twinlens.environment import EnvironmentVariableError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except EnvironmentVariableError as err:  # a bad setting, not a bug: one line, no traceback
        return _usage_error(str(err))

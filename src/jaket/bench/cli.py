"""``jaket bench NAME``: each benchmark is a module ``jaket.bench.NAME`` with
``add_arguments(parser)`` and ``run(args) -> dict`` (the figures, printed as JSON with ``--json``
or as a small table otherwise)."""

from __future__ import annotations

import argparse
import importlib

from jaket.output import print_json

#: benchmark name -> module; a module not written yet is simply not offered
BENCHMARKS = {
    "sampler": "jaket.bench.sampler",
    "model": "jaket.bench.model",
    "memory": "jaket.bench.memory",
    "pretrain": "jaket.bench.pretrain",
    "precision": "jaket.bench.precision",
    "sense-texts": "jaket.bench.sense_texts",
    "link": "jaket.bench.link",
}


def _print_figures(figures: dict, as_json: bool) -> None:
    if as_json:
        print_json(figures, sort_keys=True)  # strict JSON, alone on stdout
        return
    width = max((len(k) for k in figures), default=0)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser("bench", help="measure the speed of one part")
    names = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    for name, module_name in BENCHMARKS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                continue
            raise
        parser = names.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")
        module.add_arguments(parser)

        def _run(args, module=module):
            from jaket.model.device import machine_description  # --help: torch loads when a benchmark runs

            _print_figures({**module.run(args), "machine": machine_description()}, args.json)
            return 0

        parser.set_defaults(func=_run)

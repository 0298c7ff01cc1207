"""``jaket bench NAME``: each benchmark is a module ``jaket.bench.NAME`` with
``add_arguments(parser)`` and ``run(args) -> dict`` (the figures, printed as JSON with ``--json``
or as a small table otherwise)."""

from __future__ import annotations

import argparse
import importlib
from functools import partial

from jaket.flags import int_list, non_negative_int, positive_int
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


#: comma-list flags of the benchmarks, and the least value of their items
_LISTS = {"--fanouts": 1, "--workers": 0, "--batch-sizes": 1}


def _validated(parser: argparse.ArgumentParser) -> None:
    """Every number a benchmark takes checked as the rest of the tree checks it (issue 69, item 6):
    a count at least 1, a seed (or a flag whose default is 0) at least 0, a comma list of such; so
    ``--threads -2`` or ``--seeds 0`` is one usage line, never a traceback from the measurement."""
    for action in parser._actions:
        name = next((o for o in action.option_strings if o.startswith("--")), "")
        if action.type is int:
            action.type = non_negative_int if name == "--random-seed" or action.default == 0 else positive_int
        elif name in _LISTS and action.type is None:
            action.type = partial(int_list, least=_LISTS[name])
            action.type.__name__ = "int_list"  # argparse names the type in its message


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
        _validated(parser)

        def _run(args, module=module):
            from jaket.model.device import machine_description  # --help: torch loads when a benchmark runs

            _print_figures({**module.run(args), "machine": machine_description()}, args.json)
            return 0

        parser.set_defaults(func=_run)

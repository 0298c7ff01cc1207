"""`jaket kg` picks up the build/import commands of jaket.kg.sources.cli when that module exists."""

from __future__ import annotations

import sys
import types

from jaket.cli import build_parser


def test_sources_commands_are_registered(monkeypatch):
    fake = types.ModuleType("jaket.kg.sources.cli")

    def register(commands):
        build = commands.add_parser("build")
        build.add_argument("source")
        build.set_defaults(func=lambda args: 0)

    fake.register = register
    monkeypatch.setitem(sys.modules, "jaket.kg.sources.cli", fake)
    args = build_parser().parse_args(["kg", "build", "wordnet"])
    assert args.kg_command == "build" and args.source == "wordnet"
    assert build_parser().parse_args(["kg", "stats", "DIR", "--json"]).json is True

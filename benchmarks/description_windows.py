"""How many descriptions a window of N tokens cuts, and how many entities it leaves indistinguishable,
on real ontologies and jaket's own KGs (issue 65, item 2; docs/data.md, "The description window").

    python -m benchmarks.description_windows [--windows 8,16,32,64] [--encoder PATH]

Each KG is imported as ``jaket kg import`` would (the ontologies of ``../shared/data/ontologies`` when
present, the fixtures, the film KG, a 10,000-synset WordNet), then every description is encoded with
the encoder's tokenizer as the entity memory reads it (Eq. 7: specials included, cut at N). Printed
as JSON: per KG and window, the descriptions cut and the entities whose window another entity shares.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from jaket.kg.sources.registry import build_source
from jaket.kg.windows import description_windows, load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "ontologies"


def _sources() -> list[tuple[str, str, dict]]:
    found = []
    if SHARED.is_dir():
        pato = SHARED / "pato"
        found += [("PATO (pato.obo)", "obo", {"file": pato / "pato.obo"}),
                  ("PATO (pato-base.owl)", "owl", {"file": pato / "pato-base.owl"}),
                  ("PATO (pato-base.json)", "obo", {"file": pato / "pato-base.json"}),
                  ("UBERON import module (obo)", "obo", {"file": pato / "src/ontology/imports/uberon_import.obo"}),
                  ("GO import module (owl)", "owl", {"file": pato / "imports/go_import.owl"}),
                  ("pizza (owl)", "owl", {"file": SHARED / "pizza.owl"})]
    fixtures = ROOT / "tests" / "fixtures" / "ontologies"
    found += [("upper ontology fixture (owl)", "owl", {"file": fixtures / "upper.owl"}),
              ("film KG (rdf)", "rdf", {"file": ROOT / "examples" / "films" / "film.ttl"}),
              ("WordNet, 10,000 synsets", "wordnet", {"max_entities": 10_000})]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="8,16,32,64")
    parser.add_argument("--encoder", default=None)
    args = parser.parse_args(argv)
    windows = [int(w) for w in args.windows.split(",")]
    tokenizer = load_tokenizer(args.encoder)
    rows = []
    for title, source, options in _sources():
        kg = build_source(source, **options).kg
        row = {"kg": title, "entities": kg.num_entities}
        for window in windows:
            measure = description_windows(kg, tokenizer, window)
            row[str(window)] = {"cut": measure.cut, "indistinguishable": measure.indistinguishable,
                                "example": measure.as_dict(kg).get("examples", [])[:1]}
        rows.append(row)
    print(json.dumps({"cpu": platform.processor() or platform.machine(), "tokenizer": str(args.encoder or "MiniLM-L6"),
                      "kgs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What an ontology or RDF file is, read from its first bytes rather than its name, and which
``jaket kg import`` command reads it.

A file given to the wrong command is refused with one line saying what it is and the command that
reads it (``pato_ext.owl: OWL functional syntax ... jaket kg import owl``), where before an OWL
functional file was "malformed xml" and an OBO Graphs JSON file was read by accident.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path


class OntologyError(ValueError):
    """An ontology file, or an option about it, that cannot be read as given (one line: the file, why)."""


#: kind -> (what it is, in words; the import command that reads it)
KINDS = {
    "obo": ("an OBO flat file", "obo"),
    "obographs": ("OBO Graphs JSON", "obo"),
    "owl-functional": ("OWL functional syntax (Prefix(...) Ontology(...))", "owl"),
    "owl-xml": ("OWL/XML", "owl"),
    "owl-manchester": ("OWL Manchester syntax", "owl"),
    "rdf-xml": ("RDF/XML", "owl"),
    "turtle": ("Turtle", "rdf"),
    "ntriples": ("N-Triples", "rdf"),
    "json-ld": ("JSON-LD", "rdf"),
    "json": ("JSON that is neither OBO Graphs nor JSON-LD", None),
    "jsonl": ("JSON lines (a KG folder's entities.jsonl or relations.jsonl?)", None),
    "tsv": ("tab-separated text (a KG folder's triples.tsv?)", None),
}
_SNIFF_BYTES = 65536


def _start(path: Path) -> str:
    """The first characters of the file (decompressed when ``.gz``), byte order mark dropped."""
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    return head.decode("utf-8", errors="replace").lstrip("\ufeff")


def sniff(path) -> str | None:
    """The kind of the file (a key of :data:`KINDS`) from its content, None when it cannot tell."""
    try:
        text = _start(Path(path))
    except OSError:
        return None
    meaningful = [line.strip() for line in text.splitlines()
                  if line.strip() and not line.lstrip().startswith(("#", "!", "//"))]
    if not meaningful:
        return None
    first = meaningful[0]
    if first.startswith("{"):
        if re.search(r'"graphs"\s*:', text):
            return "obographs"
        if '"@context"' in text or '"@id"' in text:
            return "json-ld"
        return "jsonl" if len(meaningful) > 1 and meaningful[1].startswith("{") and first.endswith("}") else "json"
    if first.startswith("["):
        return "json-ld" if '"@id"' in text else "obo" if first in ("[Term]", "[Typedef]", "[Instance]") else "json"
    if first.startswith("<?xml") or first.startswith("<"):
        root = re.search(r"<(?!\?|!)([\w.-]+:)?([\w.-]+)", text)
        if root and root.group(2) == "RDF":
            return "rdf-xml"
        if root and root.group(2) == "Ontology":
            return "owl-xml"
        if re.match(r"<[^>\s]+>\s+<[^>\s]+>\s+", first):
            return "ntriples"
        return "rdf-xml" if "rdf:RDF" in text[:4096] else None
    if re.match(r"(Prefix|Ontology)\(", first):
        return "owl-functional"
    if re.match(r"(Prefix|Ontology):", first):
        return "owl-manchester"
    if re.match(r"(@prefix|@base|PREFIX|BASE)\b", first, flags=re.IGNORECASE):
        return "turtle"
    if re.match(r"(format-version|data-version|ontology|subsetdef|synonymtypedef|idspace|default-namespace"
                r"|date|saved-by|auto-generated-by|import|remark)\s*:", first):
        return "obo"
    if first.count("\t") >= 2:
        return "tsv"
    return None


def wrong_command(path, command: str) -> str | None:
    """The one-line refusal of ``path`` given to ``jaket kg import COMMAND``, None when that command
    reads it (or the kind is unknown: the reader's own error then says what is wrong)."""
    kind = sniff(path)
    if kind is None:
        return None
    what, reader = KINDS[kind]
    if reader == command or (command == "rdf" and reader == "owl" and kind == "rdf-xml") or \
            (command == "owl" and kind in ("turtle", "ntriples", "json-ld")):
        return None
    if reader is None:
        return f"{path}: this is {what}, not an ontology file; a KG folder is read as it is (--kg DIR)"
    return f"{path}: this is {what}; read it with: jaket kg import {reader} {path} --out DIR"


__all__ = ["KINDS", "OntologyError", "sniff", "wrong_command"]

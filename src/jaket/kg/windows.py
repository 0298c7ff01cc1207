"""The description window: the first tokens of each entity's description that the model reads (Eq. 7
embeds the description through LM1, cut at ``description_max_length`` tokens, 16 in pre-training).

Two distinct entities whose windows are the same token ids get the same memory row, the same
description embedding and, through the knowledge module, nearly the same vector: the model cannot
tell them apart (an upper ontology's ``object`` and ``site``, both read as "an independent
continuant [snap:...", were at cosine 1.000). Importers start every description with the entity's
name (:func:`jaket.kg.sources.ontology.name_first`), which separates most; this module finds the
ones that remain, for ``jaket kg validate`` and for pre-training's start, and measures how many
descriptions a window cuts (``benchmarks/description_windows.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.corpus import DescriptionTokens
from jaket.kg.errors import Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.kg.parsing import ENTITIES
from jaket.paths import default_model_path

#: the window pre-training reads (``model.description_max_length``'s default for ``jaket pretrain``)
DEFAULT_WINDOW = 16
SHOWN_PAIRS = 5


@dataclass
class WindowReport:
    """What a window of ``window`` tokens does to a KG's descriptions."""

    window: int
    entities: int
    cut: int  # descriptions longer than the window
    groups: list[list[int]] = field(default_factory=list)  # entities sharing one window, each group sorted

    @property
    def indistinguishable(self) -> int:
        """Entities whose window is another entity's too."""
        return sum(len(g) for g in self.groups)

    def as_dict(self, kg: KnowledgeGraph | None = None) -> dict:
        out = {"window": self.window, "entities": self.entities, "descriptions_cut": self.cut,
               "indistinguishable_entities": self.indistinguishable, "groups": len(self.groups)}
        if kg is not None:
            out["examples"] = [[kg.entity_ids[i] for i in g[:2]] for g in self.groups[:SHOWN_PAIRS]]
        return out


def description_windows(kg: KnowledgeGraph, tokenizer, window: int = DEFAULT_WINDOW,
                        tokens: DescriptionTokens | None = None) -> WindowReport:
    """Encode every description as the memory does (specials included, cut at ``window`` tokens) and
    group the entities whose windows are identical. ``tokens``: the entity descriptions of ``kg``
    already tokenised at this window (the memory's table,
    :meth:`jaket.model.memory.EntityContextMemory.description_tokens`), which pre-training passes so
    that a run tokenises its descriptions once; None tokenises them here."""
    if tokens is None:
        tokens = DescriptionTokens(list(kg.entity_descriptions), list(kg.entity_names), tokenizer, window)
    elif len(tokens) != kg.num_entities or tokens.max_length != window:
        raise ValueError(f"the description table holds {len(tokens)} rows of {tokens.max_length} tokens, "
                         f"the KG {kg.num_entities} entities read at {window}")
    tokens.ensure()
    if not len(tokens):
        return WindowReport(window, 0, 0, [])
    # one key a row: its length, then its ids (padded with one id, so equal keys are equal windows)
    keys = np.concatenate([tokens.lengths[:, None], tokens.ids.astype(np.int64)], axis=1)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    shared = np.flatnonzero(counts[inverse] > 1)
    owners: dict[int, list[int]] = {}
    for row in shared:  # in row order, so each group is sorted
        owners.setdefault(int(inverse[row]), []).append(int(row))
    groups = sorted(owners.values(), key=lambda g: (-len(g), g[0]))
    return WindowReport(window, kg.num_entities, int(tokens.cut.sum()), groups)


def _short(entity_id: str) -> str:
    """An id as a reader finds it: an IRI's last segment, any other id as it is."""
    if "://" in entity_id:
        return entity_id.rstrip("/#").rsplit("#", 1)[-1].rsplit("/", 1)[-1] or entity_id
    return entity_id


def window_problems(kg: KnowledgeGraph, report: WindowReport, path: Path | str) -> list[Problem]:
    """One warning naming the first pairs of entities whose windows are identical (none when every
    window is its entity's own)."""
    if not report.groups:
        return []
    def named(i: int) -> str:
        return f"{quote(kg.entity_names[i])} ({_short(kg.entity_ids[i])})"

    pairs = "; ".join(f"{named(g[0])} and {named(g[1])}{f' (+{len(g) - 2} more)' if len(g) > 2 else ''}"
                      for g in report.groups[:SHOWN_PAIRS])
    more = len(report.groups) - SHOWN_PAIRS
    return [Problem(str(path), None, f"{report.indistinguishable} entities share their description window with "
                    f"another ({report.window} tokens: the same memory row, so the model cannot tell them apart): "
                    f"{pairs}{f'; and {more} more group(s)' if more > 0 else ''}. Make their descriptions differ in "
                    "their first words (start each with its own name), or read more tokens "
                    "(--set model.description_max_length=N)", "warning")]


def load_tokenizer(encoder: str | Path | None = None):
    """The tokenizer of ``encoder`` (a Hugging Face folder, or a jaket model folder whose
    ``config.json`` names its encoder), the default encoder's when None."""
    from transformers import AutoTokenizer  # (transformers: loaded only when a window is checked)

    path = Path(encoder) if encoder is not None else default_model_path()
    config = path / "config.json"
    if config.is_file() and not (path / "tokenizer_config.json").is_file() and not (path / "tokenizer.json").is_file():
        named = json.loads(config.read_text(encoding="utf-8")).get("encoder")  # a jaket model folder
        if isinstance(named, str):
            path = path / named if (path / named).is_dir() else Path(named)
    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def check_windows(directory: Path | str, encoder: str | Path | None = None,
                  window: int = DEFAULT_WINDOW) -> tuple[list[Problem], dict]:
    """``jaket kg validate``'s window check of a KG folder: its warning (or none) and the measure."""
    kg = load_kg(directory)
    report = description_windows(kg, load_tokenizer(encoder), window)
    return window_problems(kg, report, Path(directory) / ENTITIES), report.as_dict(kg)


__all__ = ["DEFAULT_WINDOW", "WindowReport", "check_windows", "description_windows", "load_tokenizer",
           "window_problems"]

"""Question answering over a KG (the paper's Table 2).

A question names its topic entity (a character span). The question is read by LM1, the topic
entity's KM embedding is fused at its mention (Eq. 8-9), LM2 reads the result (Eq. 10) and the
[CLS] output, linearly mapped, is the question embedding. The candidates are all entities within
``k`` hops of the topic (``k`` = the question's hop count) in the KG given to the model; each is
scored by the inner product with its KM embedding (LM1 description memory -> KM over the KG).
Training is cross-entropy against the answers among the candidates (uniform over them); the metric
is Hits@1 (the top candidate is an answer; a question whose answers are all outside its candidate
set counts as a miss). **KG-Full** uses every triple; **KG-50%** drops each triple with probability
0.5 (seeded) before the candidates and the KM graph are built, the questions stay the same.

Data: :func:`jaket.kg.sources.metaqa.load_metaqa` reads MetaQA (descriptions = one sampled question
per entity, relation descriptions by hand, as the paper does). MetaQA is not shipped here, so
:func:`wordnet_questions` writes templated 1-hop and 2-hop questions over the hypernym, part and
member relations of a WordNet KG (entity descriptions: the WordNet ones, lemmas + gloss).

Settings: ``lm`` reads the question with the full encoder (no fusion) and scores candidates by a
projection of their description embedding; ``lm+g`` / ``lm+g+m`` / ``jaket`` as in
:mod:`jaket.tasks.variants`. ``gnn`` cannot read a question and is rejected.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from jaket.kg.sources.metaqa import QAExample
from jaket.tasks import report as rep
from jaket.tasks.variants import (VARIANT_LABELS, Backbone, BackboneSettings, FrozenMemory, VariantError,
                                  full_graph, kg_memory, load_backbone)

logger = logging.getLogger(__name__)

SUPPORTED_VARIANTS = ("lm", "lm+g", "lm+g+m", "jaket")

#: relation kinds used for WordNet questions: kind -> (forward template, inverse template)
_TEMPLATES = {
    "hypernym": ("what is {x} a kind of?", "name a kind of {x}."),
    "part": ("what is the {rel} of {x}?", "what has {x} as its {rel}?"),
    "member": ("what is the {rel} of {x}?", "what has {x} as its {rel}?"),
    "other": ("what is the {rel} of {x}?", "what has {x} as its {rel}?"),
}


@dataclass
class KGQAConfig(BackboneSettings):
    variants: tuple[str, ...] = ("lm", "lm+g+m", "jaket")
    kg_settings: tuple[str, ...] = ("full", "50%")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    steps: int = 300
    batch_size: int = 16
    lr: float = 3e-5
    head_lr: float = 1e-3
    km_lr: float = 5e-4
    max_length: int = 48
    split: tuple[float, float, float] = (0.6, 0.1, 0.3)
    max_candidates: int = 2000


# ----------------------------------------------------------------------------- WordNet questions


def _relation_kind(relation_id: str, relation_name: str) -> str | None:
    text = f"{relation_id} {relation_name}".lower()
    if ("hypernym" in text and "instance" not in text) or text.split()[-2:] == ["is", "a"]:
        return "hypernym"
    if "part" in text and ("holonym" in text or "meronym" in text):
        return "part"
    if "member" in text and ("holonym" in text or "meronym" in text):
        return "member"
    return None


def wordnet_questions(kg, seed: int = 0, max_questions: int = 2000, max_answers: int = 10,
                      two_hop_share: float = 0.5) -> list[QAExample]:
    """Templated 1-hop and 2-hop questions over the hypernym, part and member relations of ``kg``.

    1-hop: ``what is [X] a kind of?`` (answers: X's hypernyms), ``name a kind of [X].`` (its
    hyponyms), ``what is the part holonym of [X]?`` ... 2-hop: ``what is the R2 of the R1 of [X]?``
    (answers: entities reached by r1 then r2, X excluded). Questions with more than
    ``max_answers`` answers are not generated. The topic mention is the entity's name.
    """
    rng = np.random.default_rng(seed)
    kinds = {p: _relation_kind(kg.relation_ids[p], kg.relation_names[p]) for p in range(kg.num_relations)}
    chosen = [p for p, k in kinds.items() if k]
    if not chosen:  # not WordNet-like: ask about every relation with the generic template
        logger.info("no hypernym, part or member relation: generic questions over every relation")
        kinds = {p: "other" for p in range(kg.num_relations)}
        chosen = list(kinds)
    triples = np.asarray(kg.triples)
    forward: dict[tuple[int, int], set[int]] = {}
    backward: dict[tuple[int, int], set[int]] = {}
    for h, r, t in triples.tolist():
        if r in kinds and kinds[r]:
            forward.setdefault((h, r), set()).add(t)
            backward.setdefault((t, r), set()).add(h)
    names = list(kg.entity_names)

    def rel_text(p: int) -> str:
        if kinds[p] == "hypernym":
            return "broader kind"
        return str(kg.relation_names[p]).replace("_", " ").strip()

    def make(template: str, x: int, answers: set[int], hops: int) -> QAExample | None:
        answers = set(answers) - {x}
        if not answers or len(answers) > max_answers or not names[x]:
            return None
        marker = "\x00"
        text = template.replace("{x}", marker)
        start = text.index(marker)
        text = text.replace(marker, names[x])
        return QAExample(text, x, start, start + len(names[x]), sorted(answers), hops)

    one_hop: list[QAExample] = []
    for (x, r), answers in forward.items():
        kind = kinds[r]
        q = make(_TEMPLATES[kind][0].replace("{rel}", rel_text(r)), x, answers, 1)
        if q:
            one_hop.append(q)
    for (x, r), answers in backward.items():
        kind = kinds[r]
        q = make(_TEMPLATES[kind][1].replace("{rel}", rel_text(r)), x, answers, 1)
        if q:
            one_hop.append(q)
    two_hop: list[QAExample] = []
    for (x, r1), middle in forward.items():
        for r2 in chosen:
            answers: set[int] = set()
            for y in middle:
                answers |= forward.get((y, r2), set())
            if answers:
                template = f"what is the {rel_text(r2)} of the {rel_text(r1)} of {{x}}?"
                q = make(template, x, answers, 2)
                if q:
                    two_hop.append(q)
    n_two = min(len(two_hop), int(round(max_questions * two_hop_share)))
    n_one = min(len(one_hop), max_questions - n_two)
    picked = [one_hop[i] for i in rng.permutation(len(one_hop))[:n_one]]
    picked += [two_hop[i] for i in rng.permutation(len(two_hop))[:n_two]]
    return [picked[i] for i in rng.permutation(len(picked))]


# ----------------------------------------------------------------------------- candidates


def drop_triples_mask(num_triples: int, probability: float, seed: int) -> np.ndarray:
    """KG-50%: keep each triple with probability ``1 - probability`` (seeded)."""
    return np.random.default_rng(seed).random(num_triples) >= probability


def k_hop_candidates(kg, keep: np.ndarray, topic: int, hops: int, limit: int) -> np.ndarray:
    """Entities within ``hops`` hops of ``topic`` (either direction) over the kept triples,
    the topic itself excluded; at most ``limit`` (nearest hops first)."""
    adjacency = _undirected(kg, keep)
    frontier, seen = {topic}, {topic}
    ordered: list[int] = []
    for _ in range(hops):
        nxt = set()
        for node in frontier:
            nxt.update(adjacency[node])
        nxt -= seen
        seen |= nxt
        ordered += sorted(nxt)
        frontier = nxt
    return np.asarray(ordered[:limit], dtype=np.int64)


_ADJ_CACHE: dict[int, tuple[np.ndarray, list[list[int]]]] = {}


def _undirected(kg, keep: np.ndarray) -> list[list[int]]:
    key = id(keep)
    cached = _ADJ_CACHE.get(key)
    if cached is not None and cached[0] is keep:
        return cached[1]
    adjacency: list[list[int]] = [[] for _ in range(kg.num_entities)]
    for h, _, t in np.asarray(kg.triples)[keep].tolist():
        adjacency[h].append(t)
        adjacency[t].append(h)
    _ADJ_CACHE.clear()
    _ADJ_CACHE[key] = (keep, adjacency)
    return adjacency


# ----------------------------------------------------------------------------- model


class QuestionAnswerer(nn.Module):
    def __init__(self, backbone: Backbone):
        super().__init__()
        if backbone.variant not in SUPPORTED_VARIANTS or backbone.language is None:
            raise VariantError(f"variant {backbone.variant!r} cannot read a question; KGQA supports "
                               f"{', '.join(SUPPORTED_VARIANTS)}")
        f = backbone.hidden_size
        self.variant = backbone.variant
        self.language = copy.deepcopy(backbone.language)
        self.knowledge = copy.deepcopy(backbone.knowledge) if backbone.knowledge is not None else None
        self.fusion = copy.deepcopy(backbone.fusion) if self.knowledge is not None else None
        if self.knowledge is not None and self.fusion is None:
            from jaket.model.fusion import MentionFusion

            self.fusion = MentionFusion(f)
        self.question_projection = nn.Linear(f, f)
        self.entity_projection = nn.Linear(f, f) if self.knowledge is None else None
        for p in self.language.lm1_parameters():  # LM1 made the frozen memory: keep them aligned
            p.requires_grad_(False)

    def entities(self, memory: FrozenMemory, edge_index, edge_type) -> torch.Tensor:
        if self.knowledge is not None:
            return self.knowledge(memory.entities, edge_index, edge_type, memory.relations)
        return self.entity_projection(memory.entities)

    def questions(self, ids, mask, span_start, span_end, topic_embedding) -> torch.Tensor:
        z = self.language.lm1(ids, mask)
        if self.knowledge is not None:
            batch = torch.arange(ids.shape[0])
            z = self.fusion(z, batch, span_start, span_end, topic_embedding,
                            torch.ones(ids.shape[0], dtype=torch.bool))
        z = self.language.lm2(z, mask)
        return self.question_projection(z[:, 0])


def _encode_questions(tokenizer, questions: list[QAExample], max_length: int):
    enc = tokenizer([q.text for q in questions], truncation=True, max_length=max_length, padding=True,
                    return_offsets_mapping=True, return_tensors="pt")
    starts, ends = [], []
    for row, q in enumerate(questions):
        offsets = enc["offset_mapping"][row].tolist()
        tokens = [i for i, (a, b) in enumerate(offsets) if b > a and a < q.topic_end and b > q.topic_start]
        starts.append(tokens[0] if tokens else 1)
        ends.append(tokens[-1] if tokens else 1)
    return enc["input_ids"], enc["attention_mask"], torch.tensor(starts), torch.tensor(ends)


def _split(n: int, fractions, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    a = int(round(fractions[0] * n))
    b = a + int(round(fractions[1] * n))
    return order[:a], order[a:b], order[b:]


def _hits_at_1(model, memory, edges, questions, candidates, config, batch_size=64) -> dict:
    model.eval()
    hits = {1: [], 2: []}
    with torch.no_grad():
        entities = model.entities(memory, *edges)
        for begin in range(0, len(questions), batch_size):
            chunk = questions[begin:begin + batch_size]
            ids, mask, s, o = _encode_questions(model.language.tokenizer, chunk, config.max_length)
            topic = entities[torch.tensor([q.topic for q in chunk])]
            qv = model.questions(ids, mask, s, o, topic)
            for row, q in enumerate(chunk):
                cand = candidates[begin + row]
                if len(cand) == 0:
                    hits.setdefault(q.hops, []).append(0.0)
                    continue
                best = int(cand[int((entities[torch.as_tensor(cand)] @ qv[row]).argmax())])
                hits.setdefault(q.hops, []).append(float(best in q.answers))
    out = {f"{k}-hop": float(np.mean(v)) for k, v in hits.items() if v}
    out["all"] = float(np.mean([x for v in hits.values() for x in v])) if any(hits.values()) else 0.0
    return out


def train_qa(backbone: Backbone, memory: FrozenMemory, kg, keep: np.ndarray, questions: list[QAExample],
             train_idx, dev_idx, test_idx, config: KGQAConfig, seed: int, progress=None) -> dict:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = QuestionAnswerer(backbone)
    edges = full_graph(kg, keep)
    cands = [k_hop_candidates(kg, keep, q.topic, q.hops, config.max_candidates) for q in questions]
    trainable = [i for i in train_idx if np.isin(questions[i].answers, cands[i]).any()]
    groups = [{"params": [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("language.")],
               "lr": config.lr},
              {"params": [p for n, p in model.named_parameters()
                          if p.requires_grad and not n.startswith(("language.", "knowledge."))], "lr": config.head_lr}]
    if model.knowledge is not None:
        groups.append({"params": model.knowledge.parameters(), "lr": config.km_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    losses = []
    for _ in range(config.steps):
        model.train()
        if not trainable:
            break
        batch = [trainable[i] for i in rng.integers(len(trainable), size=min(config.batch_size, len(trainable)))]
        chunk = [questions[i] for i in batch]
        entities = model.entities(memory, *edges)
        ids, mask, s, o = _encode_questions(model.language.tokenizer, chunk, config.max_length)
        qv = model.questions(ids, mask, s, o, entities[torch.tensor([q.topic for q in chunk])])
        loss = 0.0
        for row, i in enumerate(batch):
            cand = torch.as_tensor(cands[i])
            logits = entities[cand] @ qv[row]
            target = torch.as_tensor(np.isin(cands[i], questions[i].answers), dtype=torch.float32)
            loss = loss - (torch.log_softmax(logits, -1) * target / target.sum()).sum()
        loss = loss / len(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if progress is not None:
            progress.update(1)
    if progress is not None and len(losses) < config.steps:
        progress.update(config.steps - len(losses))
    pick = lambda idx: ([questions[i] for i in idx], [cands[i] for i in idx])  # noqa: E731
    dev = _hits_at_1(model, memory, edges, *pick(dev_idx), config)
    test = _hits_at_1(model, memory, edges, *pick(test_idx), config)
    reachable = float(np.mean([np.isin(questions[i].answers, cands[i]).any() for i in test_idx])) if len(test_idx) else 0.0
    return {"train_loss": losses, "dev": dev, "test": test, "test_answer_reachable": reachable,
            "trainable_questions": len(trainable)}


def run_kgqa(kg, questions: list[QAExample], config: KGQAConfig, out_dir: Path | None = None) -> dict:
    if not questions:
        raise ValueError("no questions")
    for v in config.variants:
        if v not in SUPPORTED_VARIANTS:
            raise VariantError(f"variant {v!r} cannot read a question; KGQA supports {', '.join(SUPPORTED_VARIANTS)}")
    results: dict = {"task": "kgqa",
                     "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
                     "data": {"entities": int(kg.num_entities), "triples": int(len(kg.triples)),
                              "questions": len(questions),
                              "1-hop": sum(q.hops == 1 for q in questions),
                              "2-hop": sum(q.hops == 2 for q in questions)},
                     "runs": {}, "summary": {},
                     "km": {v: config.variant_config(v).km_structure() for v in config.variants if v != "lm"}}
    total = len(config.variants) * len(config.kg_settings) * len(config.seeds) * config.steps
    with tqdm(total=total, desc="kgqa", unit="step") as progress:
        for variant in config.variants:
            memory = None
            for seed in config.seeds:
                backbone = load_backbone(config.variant_config(variant), seed=seed)
                if memory is None or variant in ("gnn", "lm+g"):
                    memory = kg_memory(backbone, kg, seed, max_length=config.description_max_length,
                                       relation_memory=config.relation_memory)
                train_idx, dev_idx, test_idx = _split(len(questions), config.split, seed)
                for setting in config.kg_settings:
                    progress.set_postfix_str(f"{variant} KG-{setting} seed {seed}")
                    keep = (np.ones(len(kg.triples), dtype=bool) if setting == "full"
                            else drop_triples_mask(len(kg.triples), 0.5, seed))
                    started = time.perf_counter()
                    run = train_qa(backbone, memory, kg, keep, questions, train_idx, dev_idx, test_idx,
                                   config, seed, progress)
                    run["seed"] = seed
                    run["seconds"] = time.perf_counter() - started
                    results["runs"].setdefault(variant, {}).setdefault(setting, []).append(run)
            results["summary"][variant] = {
                s: rep.summarize_seeds([r["test"] for r in runs]) for s, runs in results["runs"][variant].items()}
    if out_dir is not None:
        write_report(results, Path(out_dir))
    return results


def results_table(results: dict) -> str:
    settings = results["config"]["kg_settings"]
    headers = ["Model"] + [f"KG-{s.capitalize() if s == 'full' else s} {h}" for s in settings for h in ("1-hop", "2-hop")]
    rows = []
    for variant, by_setting in results["summary"].items():
        row = [VARIANT_LABELS.get(variant, variant)]
        for s in settings:
            for h in ("1-hop", "2-hop"):
                m = by_setting.get(s, {}).get(h)
                row.append(rep.format_mean_std(m["values"]) if m else "-")
        rows.append(row)
    return rep.markdown_table(headers, rows)


def write_report(results: dict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rep.write_json_atomic(out_dir / "metrics.json", results)
    curves = {f"{v} KG-{s}": runs[0]["train_loss"] for v, by in results["runs"].items() for s, runs in by.items()}
    rep.plot_curves(curves, out_dir / "learning_curves.png", title="KGQA training loss", ylabel="cross-entropy")
    d = results["data"]
    text = ["# Question answering over the KG", "",
            f"{d['questions']} questions ({d['1-hop']} 1-hop, {d['2-hop']} 2-hop) over {d['entities']} entities and "
            f"{d['triples']} triples. Hits@1 (%) on the test questions, mean ± std over seeds "
            f"{results['config']['seeds']}.", "", results_table(results), "",
            "![learning curves](learning_curves.png)", ""]
    rep.write_text_atomic(out_dir / "report.md", "\n".join(text))

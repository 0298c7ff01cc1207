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

The step's KM pass covers only the computation subgraph of the batch's topics and candidates
(:mod:`jaket.tasks.kgqa.model`), which gives the same scores as a pass over the whole KG at a
fraction of its cost. Model selection: every ``select_every`` steps Hits@1 on the selection
questions, the best state is kept and tested.

Data: :func:`jaket.tasks.kgqa.data.load_metaqa_task` reads MetaQA (its protocol, and descriptions =
one sampled training question per entity, relation descriptions by hand, as the paper does);
without it :func:`wordnet_questions` writes templated 1-hop and 2-hop questions over the
hypernym, part and member relations of a WordNet KG (entity descriptions: the WordNet ones,
lemmas + gloss). A fine-tuned model is saved and used by :mod:`jaket.tasks.kgqa.finetuned`.

Settings: ``lm`` reads the question with the full encoder (no fusion) and scores candidates by a
projection of their description embedding; ``lm+g`` / ``lm+g+m`` / ``jaket`` as in
:mod:`jaket.tasks.variants`. ``gnn`` cannot read a question and is rejected.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.verbalize import Phrasing, default_phrasing, describe_entities
from jaket.model.device import autocast
from jaket.tasks.kgqa.model import QAGraph, drop_triples_mask
from jaket.tasks.kgqa.model import (SUPPORTED_VARIANTS, QuestionAnswerer, batch_logits,  # noqa: F401 (re-exported)
                                   encode_questions, rank_candidates)
from jaket.tasks.kgqa.finetuned import FinetunedQuestionAnswerer
from jaket.tasks.kgqa.data import RELATION_TEMPLATES, QAExample, load_data, wordnet_questions  # noqa: F401
from jaket.tasks.grid import Cell, Grid, GridTask, RunOutcome, run_grid
from jaket.tasks.results import TaskResult
from jaket.tasks.training import fine_tuning_step
from jaket.tasks.kgqa.job import TASK, KGQAConfig, KGQAJob  # noqa: F401 (re-exported)
from jaket.tasks.variants import Backbone, SettingCache, VariantError
from jaket.model.memory import FrozenMemory

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- model


def split_indices(n: int, fractions, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seeded train / selection / test division of ``n`` questions by ``fractions``."""
    order = np.random.default_rng(seed).permutation(n)
    a = int(round(fractions[0] * n))
    b = a + int(round(fractions[1] * n))
    return order[:a], order[a:b], order[b:]


def hits_at_1(model: QuestionAnswerer, memory: FrozenMemory, graph: QAGraph, questions: list[QAExample],
              candidates: list[np.ndarray], config: KGQAConfig) -> dict:
    """Hits@1 per hop count and over all (a question without candidates is a miss)."""
    hits: dict[int, list[float]] = {}
    for q, (cand, scores) in zip(questions, rank_candidates(model, memory, graph, questions, candidates, config)):
        hit = float(int(cand[int(scores.argmax())]) in q.answers) if len(cand) else 0.0
        hits.setdefault(q.hops, []).append(hit)
    out = {f"{k}-hop": float(np.mean(v)) for k, v in sorted(hits.items())}
    values = [x for v in hits.values() for x in v]
    out["all"] = float(np.mean(values)) if values else 0.0
    return out


def train_qa(backbone: Backbone, memory: FrozenMemory, graph: QAGraph, questions: list[QAExample],
             train_idx, selection_idx, test_idx, config: KGQAConfig, seed: int,
             progress=None) -> tuple[dict, QuestionAnswerer]:
    """Fine-tune on the training questions; every ``config.select_every`` steps Hits@1 on (at most
    ``config.max_selection``) selection questions picks the state kept. Returns (run, model)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    device = memory.entities.device
    model = QuestionAnswerer(backbone).to(device)  # its new layers are seeded on the CPU, then moved
    cands = {i: graph.candidates(questions[i].topic, questions[i].hops, config.max_candidates)
             for i in (*train_idx, *selection_idx, *test_idx)}
    trainable = [i for i in train_idx if np.isin(questions[i].answers, cands[i]).any()]
    groups = [{"params": [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("language.")],
               "lr": config.lr},
              {"params": [p for n, p in model.named_parameters()
                          if p.requires_grad and not n.startswith(("language.", "knowledge."))], "lr": config.head_lr}]
    if model.knowledge is not None:
        groups.append({"params": model.knowledge.parameters(), "lr": config.km_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    selection = [int(i) for i in selection_idx[: config.max_selection]]
    pick = lambda idx: ([questions[i] for i in idx], [cands[i] for i in idx])  # noqa: E731
    losses, curve, best = [], [], (-1.0, 0, None)
    for step in range(1, config.steps + 1):
        if not trainable:
            break
        model.train()
        batch = [trainable[i] for i in rng.integers(len(trainable), size=min(config.batch_size, len(trainable)))]
        with autocast(device, config.bf16):
            logits = batch_logits(model, memory, graph, [questions[i] for i in batch], [cands[i] for i in batch],
                                  config, whole_graph=not config.subgraph, generator=rng)
        logits = [row.float() for row in logits]  # the loss in fp32 (the same tensors without bf16)
        loss = 0.0
        for row, i in enumerate(batch):
            target = torch.as_tensor(np.isin(cands[i], questions[i].answers), dtype=torch.float32).to(device)
            loss = loss - (torch.log_softmax(logits[row], -1) * target / target.sum()).sum()
        loss = loss / len(batch)
        fine_tuning_step(optimizer, loss, losses, progress)
        if selection and config.select_every and (step % config.select_every == 0 or step == config.steps):
            score = hits_at_1(model, memory, graph, *pick(selection), config)["all"]
            curve.append((step, score))
            if score > best[0]:
                best = (score, step, copy.deepcopy(model.state_dict()))
    if progress is not None and len(losses) < config.steps:
        progress.update(config.steps - len(losses))
    if best[2] is not None:
        model.load_state_dict(best[2])
    run = {"train_loss": losses, "selection_curve": curve, "selected_step": best[1] or len(losses),
           "selection": hits_at_1(model, memory, graph, *pick(selection_idx), config) if len(selection_idx) else {},
           "test": hits_at_1(model, memory, graph, *pick(test_idx), config),
           "test_answer_reachable": float(np.mean([np.isin(questions[i].answers, cands[i]).any()
                                                   for i in test_idx])) if len(test_idx) else 0.0,
           "trainable_questions": len(trainable)}
    return run, model


@dataclass
class TrainedAnswerer:
    """The kept run's trained parts (:attr:`jaket.tasks.grid.RunOutcome.trained`): the question
    answerer, the setting's backbone (LM1, the KM; the memory's source) and the hop counts it was
    trained on."""

    model: QuestionAnswerer
    backbone: Backbone
    hops: list[int]


class QuestionAnsweringRuns(GridTask):
    """The runs of one comparison (:mod:`jaket.tasks.grid`): the budgets are the KG settings (full,
    50%: a different half dropped per seed); a run is :func:`train_qa`. Without ``kg`` (reading a
    finished run's results) only the tables and the report are available."""

    name = TASK
    title = "Question answering over the KG"
    progress_name = TASK
    curve_ylabel = "cross-entropy"
    bars_file = "hits_at_1.png"
    bars_ylabel = "Hits@1 (%)"

    def __init__(self, kg: KnowledgeGraph | None = None, questions: list[QAExample] | None = None,
                 config: KGQAConfig | None = None, *, splits=None, device="cpu"):
        self.kg, self.questions, self.config, self.splits = kg, questions, config, splits
        self.graphs: dict[tuple[str, int], QAGraph] = {}
        if kg is not None:
            self.units_per_run = config.steps
            self.cache = SettingCache(config, kg, device, max_length=config.description_max_length,
                                      relation_memory=config.relation_memory, need_language=True)

    def graph(self, setting: str, seed: int) -> QAGraph:
        """The KG a run answers over: the whole KG, or KG-50% (a different half dropped per seed)."""
        key = (setting, 0 if setting == "full" else seed)
        if key not in self.graphs:
            mask = None if setting == "full" else drop_triples_mask(self.kg.num_triples, 0.5, seed)
            self.graphs[key] = QAGraph(self.kg, mask)
        return self.graphs[key]

    def described(self, setting: str, seed: int) -> KnowledgeGraph:
        """The KG with every entity described from the triples this setting keeps (``descriptions="kg"``):
        the 50% KG's own for KG-50%, never the whole KB's (:mod:`jaket.kg.verbalize`)."""
        graph = self.graph(setting, seed)
        kept = self.kg.triples[graph.keep]
        bare = replace(self.kg, entity_descriptions=list(self.kg.entity_names), triples=kept)
        phrasings = [Phrasing(*relation_phrasing(str(r), str(n))) for r, n in zip(self.kg.relation_ids, self.kg.relation_names)]
        made, _ = describe_entities(bare, phrasings, max_words=self.config.description_max_length)
        return replace(self.kg, entity_descriptions=list(made.entity_descriptions))

    def memory(self, variant: str, setting: str, seed: int):
        """The run's memory: the task's descriptions, or the setting's own KG-made ones (cached per KG)."""
        if self.config.descriptions != "kg":
            return self.cache.memory(variant, seed)
        key = (setting, 0 if setting == "full" else seed)
        return self.cache.memory(variant, seed, kg=self.described(setting, seed), tag=key)

    def describe(self, cell: Cell) -> str:
        return f"{cell.variant} KG-{cell.budget} seed {cell.seed}"

    def run(self, cell: Cell, progress, keep: bool) -> RunOutcome:
        backbone = self.cache.backbone(cell.variant, cell.seed)
        memory = self.memory(cell.variant, cell.budget, cell.seed)
        train_idx, sel_idx, test_idx = self.splits if self.splits is not None else split_indices(
            len(self.questions), self.config.split, cell.seed)
        run, model = train_qa(backbone, memory, self.graph(cell.budget, cell.seed), self.questions, train_idx,
                              sel_idx, test_idx, self.config, cell.seed, progress)
        hops = sorted({self.questions[i].hops for i in train_idx})
        return RunOutcome(run, TrainedAnswerer(model, backbone, hops) if keep else None)

    def finetuned(self, cell: Cell, run: dict, trained: TrainedAnswerer) -> FinetunedQuestionAnswerer:
        config = self.config
        return FinetunedQuestionAnswerer(
            trained.model, settings={"variant": cell.variant, "kg_setting": cell.budget, "memory_seed": cell.seed,
                                     "hops": trained.hops, "max_candidates": config.max_candidates,
                                     "max_length": config.max_length,
                                     "description_max_length": config.description_max_length,
                                     "relation_memory": config.relation_memory,
                                     "training": {"seed": cell.seed, "steps": config.steps,
                                                  "selection": run["selection"], "test": run["test"]}},
            variant_config=config.variant_config(cell.variant), backbone=trained.backbone, kg=self.kg)

    def scores(self, run: dict) -> dict[str, float]:
        """Hits@1 on the test questions, per hop count and over all."""
        return dict(run["test"])

    def header(self, budget: str | None, score: str) -> str:
        return f"KG-{'Full' if budget == 'full' else budget} {score}"

    def intro(self, results: dict) -> list[str]:
        d = results["data"]
        lines = [f"{d['questions']} questions ({d['1-hop']} 1-hop, {d['2-hop']} 2-hop) over {d['entities']} "
                 f"entities and {d['triples']} triples. Hits@1 (%) on the test questions, mean ± std over seeds "
                 f"{results['config']['seeds']}.", ""]
        missing = {split: r for split, r in (d.get("missing_answers") or {}).items() if r.get("answers")}
        if missing:
            lines += ["Gold answers not in the KG (not scored; a question left with none is skipped): " +
                      "; ".join(f"{r['answers']} in {r['questions']} {split} question(s), e.g. {r['examples'][0]}"
                                for split, r in missing.items()) + ".", ""]
        if "split" in d:
            split = d["split"]
            source = (f"the {d['eval_split']} split" if d.get("eval_split") else
                      f"a held-out part of the {d.get('train_split', 'given')} questions")
            lines += [f"Questions: {split['train']} train, {split['selection']} model selection, {split['test']} "
                      f"test ({source}; {split['test 1-hop']} 1-hop, {split['test 2-hop']} 2-hop); split seed "
                      f"{d.get('split_seed', 0)}, the same for every training seed.", ""]
        return lines


def relation_phrasing(relation: str, name: str) -> tuple[str, str, str]:
    """``(template, forward phrase, inverse phrase)`` of a relation: MetaQA's hand-written templates
    (:data:`RELATION_TEMPLATES`), else its name in words."""
    if relation not in RELATION_TEMPLATES:
        default = default_phrasing(name)
        return default.template, default.forward, default.inverse
    forward, inverse = RELATION_TEMPLATES[relation]
    return forward, forward[len("{head}"):].strip().replace("{tail}", "{}"), inverse[len("{tail}"):].strip().replace(
        "{head}", "{}")


def run_kgqa(kg: KnowledgeGraph, questions: list[QAExample], config: KGQAConfig, out_dir: Path | None = None, *,
             splits: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, data_info: dict | None = None,
             save_dir: Path | None = None, device="cpu", log_with=(), keep_model: bool = False) -> TaskResult:
    """Every setting x KG setting x seed. ``splits`` (train, selection, test indices) fixes the
    question split for every seed; without it each seed divides the questions by ``config.split``.
    ``save_dir``: the first run's model is written there (:class:`FinetunedQuestionAnswerer`);
    ``keep_model``: the result's ``model`` is that model in memory.
    ``device``: where the backbone, the memory, the model and every batch run. ``log_with``:
    trackers of each step's loss (:mod:`jaket.tasks.tracking`)."""
    if not questions:
        raise ValueError("no questions")
    for v in config.variants:
        if v not in SUPPORTED_VARIANTS:
            raise VariantError(f"variant {v!r} cannot read a question; KGQA supports {', '.join(SUPPORTED_VARIANTS)}")
    results: dict = {"task": TASK, "device": str(torch.device(device)),
                     "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
                     "data": {"entities": int(kg.num_entities), "triples": int(len(kg.triples)),
                              "questions": len(questions),
                              "1-hop": sum(q.hops == 1 for q in questions),
                              "2-hop": sum(q.hops == 2 for q in questions), **(data_info or {})},
                     "km": {v: config.variant_config(v).km_structure() for v in config.variants if v != "lm"}}
    if splits is not None:
        test = [questions[i] for i in splits[2]]
        results["data"]["split"] = {"train": len(splits[0]), "selection": len(splits[1]), "test": len(splits[2]),
                                    "test 1-hop": sum(q.hops == 1 for q in test),
                                    "test 2-hop": sum(q.hops == 2 for q in test)}
    task = QuestionAnsweringRuns(kg, questions, config, splits=splits, device=device)
    grid = Grid(tuple(config.variants), tuple(config.seeds), tuple(config.kg_settings))
    return run_grid(task, grid, results, out_dir=out_dir, save_dir=save_dir, log_with=log_with,
                    keep_model=keep_model)


def run_job(job: KGQAJob, out_dir: Path | None = None, *, save_dir: Path | None = None, device="cpu",
            log_with=(), keep_model: bool = False, inputs: tuple | None = None) -> TaskResult:
    """The task of a resolved job (:func:`jaket.tasks.cli_common.resolve_job`): its data (``inputs``:
    ``(KG, questions, splits, info)`` as :func:`jaket.tasks.kgqa.data.load_data` read them from
    ``job.data``; read here when None), then :func:`run_kgqa`. ``jaket finetune|evaluate kgqa`` and
    :func:`jaket.pipelines.pipeline` run this through the spec's runner (:func:`jaket.tasks.kgqa.cli.run_job`),
    which reads the data before this module's model code is imported."""
    kg, questions, splits, info = inputs if inputs is not None else load_data(job.data)
    return run_kgqa(kg, questions, job, out_dir, splits=splits, data_info=info, save_dir=save_dir, device=device,
                    log_with=log_with, keep_model=keep_model)


def results_table(results) -> str:
    """Hits@1 (%) per KG setting and hop count, mean ± std over seeds; the paired differences below."""
    return QuestionAnsweringRuns().table(results)

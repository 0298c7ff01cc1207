"""Building a pre-training run: the KG and corpus named by the config (checked), the tokenised
training and held-out texts, and the model with its empty entity context memory.

A KG folder without a corpus (no ``corpus.jsonl``, no ``data.corpus``) pre-trains on the KG
tasks only (entity category and relation prediction): ``PretrainData.train`` is then None."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from jaket.kg.corpus import DescriptionTokens, EncodedCorpus, MentionCorpus
from jaket.kg.exclusion import exclude_texts
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.windows import description_windows, window_problems
from jaket.kg.io import CORPUS, ENTITIES, TRIPLES, load_corpus
from jaket.kg.sources.registry import build_source
from jaket.model.config import STRUCTURE_FIELDS
from jaket.model.jaket import ENCODER_DIR, JaketModel, check_fits_encoder, encoder_shape
from jaket.model.memory import EntityContextMemory
from jaket.paths import default_model_path
from jaket.train.config import PretrainConfig

log = logging.getLogger(__name__)


@dataclass
class PretrainData:
    kg: KnowledgeGraph
    train: EncodedCorpus | None  # None: no corpus, the KG tasks only
    heldout: EncodedCorpus | None
    pad_id: int
    special_ids: list[int]
    mask_id: int
    vocab_size: int
    report: dict = field(default_factory=dict)

    @property
    def has_texts(self) -> bool:
        """False for a KG-only run (no corpus): masked token and masked entity prediction off."""
        return self.train is not None


def prepare_data(kg: KnowledgeGraph, corpus: MentionCorpus | None, tokenizer, config: PretrainConfig,
                 report: dict | None = None, descriptions: DescriptionTokens | None = None) -> PretrainData:
    """Split the corpus (held-out share for the final evaluation) and tokenise both parts;
    mentions lost to truncation or alignment are counted in the report and logged. ``corpus``
    None (a KG without texts): no text on either side, the report says so. ``descriptions``: the
    memory's table of the KG's entity descriptions
    (:meth:`jaket.model.memory.EntityContextMemory.description_tokens`), which the window check
    reads so that the run tokenises them once; None tokenises them for the check."""
    special = dict(pad_id=int(tokenizer.pad_token_id), special_ids=list(tokenizer.all_special_ids),
                   mask_id=int(tokenizer.mask_token_id), vocab_size=int(len(tokenizer)))
    report = dict(report or {})
    _check_windows(kg, tokenizer, config, report, descriptions)
    if corpus is None:
        report["pretraining"] = {"train_texts": 0, "heldout_texts": 0, "train_mentions": 0,
                                 "heldout_mentions": 0}
        return PretrainData(kg=kg, train=None, heldout=None, report=report, **special)
    heldout, train = corpus.split(config.data.heldout_fraction, seed=config.seed)
    encoded_train = train.encode(tokenizer, max_length=config.data.max_length)
    encoded_heldout = heldout.encode(tokenizer, max_length=config.data.max_length)
    _require_texts(_corpus_name(config), len(encoded_train), encoded_train.num_mentions, config,
                   f" in the training share (data.heldout_fraction={config.data.heldout_fraction}, "
                   f"texts cut at data.max_length={config.data.max_length})")
    dropped = encoded_train.dropped_mentions + encoded_heldout.dropped_mentions
    unaligned = encoded_train.unaligned_mentions + encoded_heldout.unaligned_mentions
    if dropped or unaligned:
        log.warning("%d mentions cut off by data.max_length=%d and %d covering no token are not "
                    "used", dropped, config.data.max_length, unaligned)
    report["pretraining"] = {
        "train_texts": len(encoded_train), "heldout_texts": len(encoded_heldout),
        "train_mentions": encoded_train.num_mentions, "heldout_mentions": encoded_heldout.num_mentions,
        "texts_without_mentions": int(sum(1 for m in encoded_train.mentions if len(m) == 0)),
        "mentions_cut_by_max_length": int(dropped), "mentions_without_tokens": int(unaligned)}
    return PretrainData(kg=kg, train=encoded_train, heldout=encoded_heldout, report=report,
                        **special)


def _check_windows(kg: KnowledgeGraph, tokenizer, config: PretrainConfig, report: dict,
                   descriptions: DescriptionTokens | None = None) -> None:
    """Warn, naming them, about distinct entities whose description windows (the first
    ``model.description_max_length`` tokens, what the memory reads) are identical; the measure goes
    into the data report (:mod:`jaket.kg.windows`)."""
    window = descriptions.max_length if descriptions is not None else config.model.description_max_length
    measure = description_windows(kg, tokenizer, window, descriptions)
    report["description_windows"] = measure.as_dict(kg)
    for problem in window_problems(kg, measure, _kg_file(config, ENTITIES)):
        log.warning("%s", problem)


class PretrainDataError(ValueError):
    """The KG or corpus cannot be pre-trained on; the message names the file and what to do."""


def _corpus_name(config: PretrainConfig) -> str:
    data = config.data
    if data.corpus is not None:
        return str(data.corpus)
    return str(Path(data.path) / "corpus.jsonl") if data.source == "dir" else f"the {data.source} corpus"


def tasks_run(kg: KnowledgeGraph, has_texts: bool, config: PretrainConfig) -> list[str]:
    """The pre-training tasks this KG and corpus give examples to (weight > 0): ``category``
    (some entity has a category), ``relation`` (the KG has triples), ``mlm`` and ``entity`` (texts;
    mentions are checked by :func:`check_pretraining_data`)."""
    t = config.tasks
    has = {"category": t.weight_category > 0 and _distinct(kg.entity_category[kg.entity_category >= 0]) > 1,
           "relation": t.weight_relation > 0 and _distinct(kg.triples[:, 1]) > 1,
           "mlm": t.weight_mlm > 0 and has_texts, "entity": t.weight_entity > 0 and has_texts}
    return [name for name, on in has.items() if on]


def _distinct(values) -> int:
    """How many different values: a prediction task over fewer than two classes has nothing to learn."""
    return int(len(np.unique(np.asarray(values)))) if len(values) else 0


def tasks_dropped(kg: KnowledgeGraph, has_texts: bool, config: PretrainConfig) -> dict[str, str]:
    """The pre-training tasks switched on (weight > 0) that this KG and corpus give no example, each
    with why (the data report says so, beside :func:`tasks_run`)."""
    t = config.tasks
    categories = _distinct(kg.entity_category[kg.entity_category >= 0])
    relations = _distinct(kg.triples[:, 1])
    why = {"category": (t.weight_category, categories > 1,
                        f"no entity of {_kg_file(config, ENTITIES)} has a category" if not categories else
                        f"every entity of {_kg_file(config, ENTITIES)} with a category has the same one, so "
                        "category prediction has one answer and nothing to learn"),
           "relation": (t.weight_relation, relations > 1,
                        f"{_kg_file(config, TRIPLES)} has no triple" if not relations else
                        f"every triple of {_kg_file(config, TRIPLES)} has the same relation, so relation "
                        "prediction has one answer and nothing to learn (its loss would be 0 at every step)"),
           "mlm": (t.weight_mlm, has_texts, "no corpus"), "entity": (t.weight_entity, has_texts, "no corpus")}
    return {name: reason for name, (weight, has, reason) in why.items() if weight > 0 and not has}


def _kg_file(config: PretrainConfig, name: str) -> str:
    """A file of the KG folder pre-training reads (``the wordnet KG`` for a built source)."""
    data = config.data
    return str(Path(data.path) / name) if data.source == "dir" else f"the {data.source} KG"


def count_each_triple_once(kg: KnowledgeGraph, config: PretrainConfig, report: dict) -> KnowledgeGraph:
    """``kg`` without the triples that repeat an earlier one (a fact given twice is one fact: relation
    prediction would see it twice as often and the knowledge module get a double edge), their count
    logged and kept in ``report`` (``repeated_triples_counted_once``)."""
    repeated = kg.repeated_triples()
    if not repeated.any():
        return kg
    report["repeated_triples_counted_once"] = int(repeated.sum())
    log.warning("%s: %d triple(s) given again (the same head, relation and tail as an earlier one); "
                "pre-training counts each once", _kg_file(config, TRIPLES), int(repeated.sum()))
    return kg.drop_triples(repeated)


def check_pretraining_data(kg: KnowledgeGraph, corpus: MentionCorpus | None, config: PretrainConfig) -> None:
    """Refuse, with the file and a remedy, a KG or corpus on which a task would silently vanish or
    the sampler fail: no entity, no triple, no text, no mention (masked entity prediction on).
    ``corpus`` None (a KG-only run) needs a KG task with examples."""
    if kg.num_entities == 0:
        raise PretrainDataError(f"{_kg_file(config, ENTITIES)}: the KG has no entity; pre-training needs "
                                f"entities with descriptions")
    if kg.num_triples == 0:
        raise PretrainDataError(f"{_kg_file(config, TRIPLES)}: the KG has no triple; the knowledge module "
                                f"and relation prediction need some (head<TAB>relation<TAB>tail lines)")
    if corpus is None:
        if not tasks_run(kg, False, config):
            raise PretrainDataError(
                f"{_corpus_name(config)}: missing, and the KG tasks have nothing to learn "
                f"({int((kg.entity_category >= 0).sum())} entities with a category, "
                f"tasks.weight_category={config.tasks.weight_category}, tasks.weight_relation="
                f"{config.tasks.weight_relation}); create a corpus with `jaket link --kg DIR "
                f"--texts FILE --out {_corpus_name(config)}`")
        return
    _require_texts(_corpus_name(config), len(corpus), corpus.num_mentions, config)


def _require_texts(name: str, texts: int, mentions: int, config: PretrainConfig, where: str = "") -> None:
    if texts == 0:
        raise PretrainDataError(f"{name}: no text{where}; pre-training needs texts with entity "
                                f"mentions (`jaket link` finds them in plain text)")
    if mentions == 0 and config.tasks.weight_entity > 0:
        raise PretrainDataError(
            f"{name}: no text mentions an entity{where}, so masked entity prediction has nothing to "
            f"predict; link the texts (`jaket link --kg DIR --texts FILE --out CORPUS`) or switch the "
            f"task off with --set tasks.weight_entity=0")


def load_kg_and_corpus(config: PretrainConfig) -> tuple[KnowledgeGraph, MentionCorpus | None, dict]:
    """``(kg, corpus, report)`` named by ``config.data`` (checked by :func:`check_pretraining_data`)."""
    data = config.data
    if data.corpus is not None and not Path(data.corpus).is_file():
        raise PretrainDataError(f"{data.corpus}: no such corpus file (data.corpus); create it "
                                f"with `jaket link --kg DIR --texts FILE --out {data.corpus}`")
    options = {"toy": {},
               "wordnet": {"max_entities": data.max_entities, "roots": data.wordnet_roots, "seed": config.seed},
               "dir": {"path": data.path, "corpus": data.corpus, "with_splits": False}}[data.source]
    bundle = build_source(data.source, **options)  # the registry of KG sources (jaket.kg.sources.registry)
    kg, corpus, report = bundle.kg, bundle.corpus, dict(bundle.report)
    if data.source == "wordnet":
        log.info("WordNet subset: %d entities, %d relations, %d triples, %d categories, %d texts "
                 "(%d usage examples without a mention left out)", report["entities"],
                 report["relations"], report["triples"], report["categories"], report["texts"],
                 report["examples_without_mention"])
    if data.corpus is not None and data.source != "dir":
        corpus = load_corpus(data.corpus, kg)
        report["corpus"] = str(data.corpus)
    if data.exclude_texts:
        if corpus is None:
            raise PretrainDataError(f"data.exclude_texts: {_corpus_name(config)} has no text to exclude from")
        corpus, report["excluded_texts"] = exclude_texts(corpus, list(data.exclude_texts))
        report["texts_before_exclusion"] = len(corpus) + report["excluded_texts"]["texts_dropped"]
        report["texts"] = len(corpus)
        log.info("data.exclude_texts: %d corpus texts dropped (%d distinct sentences in %d files); "
                 "%d matches remain", report["excluded_texts"]["texts_dropped"],
                 report["excluded_texts"]["distinct_sentences"], len(data.exclude_texts),
                 report["excluded_texts"]["matches_remaining"])
    kg = count_each_triple_once(kg, config, report)
    check_pretraining_data(kg, corpus, config)
    if corpus is None:
        log.warning("%s: no corpus, so pre-training runs the KG tasks only (%s); the text tasks "
                    "(masked token and masked entity prediction) are off: add a corpus with "
                    "`jaket link --kg %s --texts FILE --out %s`, or, without texts, one verbalised from the "
                    "KG's own triples with `jaket kg corpus %s --out %s`", Path(data.path) / CORPUS,
                    " and ".join(tasks_run(kg, False, config)), data.path, Path(data.path) / CORPUS,
                    data.path, Path(data.path) / CORPUS)
    report.setdefault("entities", kg.num_entities)
    report.setdefault("relations", kg.num_relations)
    report.setdefault("triples", kg.num_triples)
    report.setdefault("texts", len(corpus) if corpus is not None else 0)
    report["tasks"] = tasks_run(kg, corpus is not None, config)
    report["tasks_dropped"] = tasks_dropped(kg, corpus is not None, config)
    for task, reason in report["tasks_dropped"].items():  # each task with nothing to learn, named at start
        if task in ("category", "relation"):  # (a missing corpus is said above, for the text tasks)
            log.warning("pre-training drops the %s task (tasks.weight_%s=%g): %s; %s", task, task,
                        getattr(config.tasks, f"weight_{task}"), reason,
                        "give entities categories to train it" if task == "category" else
                        "a KG of several relations trains it")
    return kg, corpus, report


def build_model(config: PretrainConfig, kg: KnowledgeGraph) -> JaketModel:
    """A JaketModel of ``config.model`` for ``kg`` (:meth:`JaketConfig.for_kg`), with its (empty)
    entity context memory attached; with ``config.init`` the folder's encoder, structure
    (:data:`STRUCTURE_FIELDS`) and weights."""
    jcfg = config.model.for_kg(kg)
    start = JaketModel.from_pretrained(config.init, load_memory=False) if config.init is not None else None
    if start is not None:  # the folder's structure wins: its weights must fit
        structure = {k: getattr(start.config, k) for k in STRUCTURE_FIELDS}
        changed = [f"model.{k} {getattr(jcfg, k)} -> {v}" for k, v in structure.items()
                   if getattr(jcfg, k) is not None and getattr(jcfg, k) != v]
        if changed:
            log.info("init=%s: structure taken from the folder (%s)", config.init, ", ".join(changed))
        jcfg = replace(jcfg, encoder=str(Path(config.init) / ENCODER_DIR), **structure)
    elif jcfg.encoder is None:
        jcfg = replace(jcfg, encoder=str(default_model_path()))
    check_fits_encoder(jcfg, *encoder_shape(jcfg.encoder), where=f"model.encoder={jcfg.encoder}",
                       prefix="model.")
    model = JaketModel(jcfg)
    if start is not None:
        continue_from(model, start, config.init)
    memory = EntityContextMemory(kg.num_entities, kg.num_relations, model.hidden_size,
                                 dtype=jcfg.memory_dtype, path=config.memory.path, momentum=jcfg.memory_momentum)
    model.attach_memory(memory, kg)
    return model


def continue_from(model: JaketModel, start: JaketModel, where) -> None:
    """Load ``start``'s weights (a jaket model folder, ``--init``) into ``model`` wherever the shapes
    agree; the rest (the category and relation heads of a KG with other categories or relations)
    keeps its fresh initialisation, and the log names it. The language module comes from the
    folder's ``encoder/`` already."""
    own = model.state_dict()
    loaded = {k: v for k, v in start.state_dict().items()
              if not k.startswith("language.") and k in own and own[k].shape == v.shape}
    fresh = sorted({k.rsplit(".", 2)[0] for k in own if not k.startswith("language.") and k not in loaded})
    with torch.no_grad():
        model.load_state_dict(loaded, strict=False)
    log.info("init=%s: %d tensors continued%s", where, len(loaded),
             f"; fresh (another KG's shape): {', '.join(fresh)}" if fresh else "")

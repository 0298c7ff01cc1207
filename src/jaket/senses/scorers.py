"""Which of its candidate senses does a word in context name? The scorers shared by sense linking
and word-sense disambiguation (both run by :mod:`jaket.tasks.word_sense.run`); nothing is fine-tuned.

A :class:`SenseExample` is a target ``[start, end)`` of a text, its candidate senses (entity
indices of the sense KG, WordNet's most frequent first; possibly none) and its gold senses (any
of them is right). Each scorer gives every candidate a score; the answer is the best one, the
earlier candidate on a tie, and no answer without candidates. Scorers (:data:`SCORERS`):

* ``first sense``: the first candidate (WordNet's most frequent sense);
* ``random``: a uniformly random candidate, counted as its expectation;
* ``lesk``: the ambiguity rule of ``jaket link`` (:meth:`jaket.kg.linking.EntityLinker.choice_keys`:
  overlap of the context's content words with the description, then the word being the
  candidate's name, its degree, its index), a simplified Lesk;
* ``lm``: the base encoder, cosine between the word in context ``(Z_s + Z_o) / 2`` and each
  candidate's description read the same way (LM1 + LM2, at the synset's name);
* ``lm+g+m``: the base encoder's context against the candidates' E^KM from the base memory through
  a KM without joint pre-training (fresh weights, one run per seed): what that setting knows
  before any fine-tuning;
* ``jaket``: the pre-trained masked-entity head restricted to the candidates (pre-training's task
  4: ``q = g((Z_s + Z_o) / 2)`` against the candidates' E^context rows by JAKET's LM1), computed by
  the linker of ``jaket link --model`` (:class:`jaket.senses.linker.ContextLinker`);
* ``jaket (cosine)``: JAKET's encoder read as the base encoder is (the ``lm`` scorer);
* ``lm (text)`` / ``jaket (text)``: the word in context (as ``lm``) against each candidate's *text*
  read as the sentence encoder reads a sentence (the mean of its tokens through LM1 + LM2): its
  names and aliases, its description and, where :class:`SenseTexts` gives them, its usage examples
  (:func:`jaket.senses.texts.sense_text`);
* ``lm (text + kg)`` / ``jaket (text + kg)``: the same, each candidate's row being its text's
  vector plus ``β`` times the mean of its KG neighbours' text vectors
  (:func:`jaket.senses.texts.text_kg_rows`): one
  step of message passing over the KG (Eq. 1-5's aggregation with uniform attention, identity
  composition and no weights), so a sense is also read from the senses it is linked to (its
  hypernyms, hyponyms, derived forms, ...). Nothing is trained: the base encoder's rows are ``LM +
  G`` before any fine-tuning, the pre-trained encoder's are what joint pre-training adds.

**The sense-order prior** (:func:`with_prior`, an explicit option, never part of a scorer): WordNet
orders a lemma's senses by their frequency in its tagged corpora, so the candidate of rank ``r``
(0 = first) gets the Zipf prior ``p(r) ∝ 1 / (r + 1)``. A scorer whose scores are logits is
combined with it as a product of experts, ``log softmax(s / T) + w log p(r)``: ``T = 1`` for the
masked-entity head (its scores are the logits pre-training's softmax was trained on) and
:data:`COSINE_TEMPERATURE` for the cosine scorers; ``w = 0`` is the scorer alone, and large ``w``
tends to the first sense. The rule-based scorers (first sense, random, Lesk) take no prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from jaket.jsonio import quote
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.linking import EntityLinker
from jaket.model.heads import span_mean
from jaket.model.knowledge import KnowledgeModule
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import length_sorted_batches
from jaket.paths import default_model_path
from jaket.model.memory_cache import TextVectorCache
from jaket.stages import StageTimes
from jaket.senses.linker import ContextLinker
from jaket.senses.texts import COSINE_TEMPERATURE, SenseTexts, text_kg_rows
from jaket.model.memory import FrozenMemory, description_features
from jaket.senses.inventory import lemma_key
from jaket.senses.graph import SenseGraph, km_embeddings, neighbourhood, target_spans

#: every scorer, in the order they are computed and reported
SCORERS = ("first sense", "random", "lesk", "lm", "lm+g+m", "jaket", "jaket (cosine)", "lm (text)",
           "lm (text + kg)", "jaket (text)", "jaket (text + kg)")
#: how the reports name them
SCORER_LABELS = {"first sense": "WordNet first sense", "random": "(random candidate)",
                 "lesk": "jaket link's rule (simplified Lesk)", "lm": "LM only (cosine)",
                 "lm+g+m": "LM+G+M (fresh KM, cosine)", "jaket": "JAKET (masked-entity head)",
                 "jaket (cosine)": "JAKET encoder (cosine)", "lm (text)": "LM only, sense texts (cosine)",
                 "lm (text + kg)": "LM + KG neighbours, sense texts (cosine)",
                 "jaket (text)": "JAKET encoder, sense texts (cosine)",
                 "jaket (text + kg)": "JAKET encoder + KG neighbours, sense texts (cosine)"}
#: the scorers that need a pre-trained model / the base encoder
PRETRAINED_SCORERS = ("jaket", "jaket (cosine)", "jaket (text)", "jaket (text + kg)")
ENCODER_SCORERS = ("lm", "lm+g+m", "lm (text)", "lm (text + kg)")
#: the scorers that read the senses' texts (:class:`SenseTexts`)
TEXT_SCORERS = ("lm (text)", "lm (text + kg)", "jaket (text)", "jaket (text + kg)")
#: the fresh KM of ``lm+g+m`` unless a task gives its own (sense linking's: 2 layers, 4 heads)
FRESH_KM = {"layers": 2, "heads": 4, "composition": "add"}


@dataclass(frozen=True)
class SenseExample:
    """A target ``[start, end)`` of ``text`` with its candidate senses (indices of the sense KG, the
    most frequent first; empty: no answer) and its gold senses (any is right; empty: unknown).
    ``lemma`` is the word as the inventory knows it (Lesk's name rule)."""

    text: str
    start: int
    end: int
    gold: frozenset[int]
    candidates: tuple[int, ...]
    lemma: str = ""


@dataclass
class ScorerOutput:
    """One scorer's scores of every example's candidates: one list per run (one run per seed for a
    scorer with a fresh part, ``seeds`` naming them; one run otherwise). ``temperature``: the scores
    are logits at this temperature (the prior combines with them); None for a rule."""

    runs: list[list[np.ndarray]]
    seeds: tuple[int, ...] | None = None
    temperature: float | None = None
    expected: bool = False  # ``random``: counted as its expectation, not its argmax


def answers(examples: list[SenseExample], scores: list[np.ndarray]) -> list[int | None]:
    """The chosen candidate of each example (the earlier on a tie; None without candidates)."""
    return [e.candidates[int(np.argmax(s))] if e.candidates else None for e, s in zip(examples, scores)]


def correctness(examples: list[SenseExample], output: ScorerOutput, run: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(correct, answered)`` per example for one run: 1/0 (the answer is a gold sense), or for
    ``random`` the expected share ``|gold ∩ candidates| / |candidates|``; answered = has candidates."""
    answered = np.asarray([bool(e.candidates) for e in examples])
    if output.expected:
        correct = [len(e.gold.intersection(e.candidates)) / len(e.candidates) if e.candidates else 0.0
                   for e in examples]
    else:
        correct = [float(a is not None and a in e.gold) for e, a in zip(examples, answers(examples, output.runs[run]))]
    return np.asarray(correct, dtype=np.float64), answered


def with_prior(examples: list[SenseExample], output: ScorerOutput, weight: float) -> ScorerOutput:
    """``output`` combined with the sense-order prior of weight ``weight`` (module docstring)."""
    if output.temperature is None:
        raise ValueError("the sense-order prior combines with logits, not with a rule")

    def combine(scores: np.ndarray) -> np.ndarray:
        if not len(scores):
            return scores
        logits = scores / output.temperature
        log_p = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
        return log_p - weight * np.log1p(np.arange(len(scores)))

    return ScorerOutput([[combine(s) for s in run] for run in output.runs], output.seeds, output.temperature)


# ----------------------------------------------------------------------------- the encoders' pieces


class TargetPastLimit(ValueError):
    """Targets that lie past the first ``limit`` tokens of their text (``max_length``, special tokens
    included), found by :func:`targets_past` before any text is encoded: ``index`` is the first of
    them (a position in the examples), ``count`` how many there are."""

    def __init__(self, message: str, index: int, count: int, limit: int):
        super().__init__(message)
        self.index, self.count, self.limit = index, count, limit


def token_offsets(tokenizer, examples: list[SenseExample], max_length: int) -> list[list[tuple[int, int]]]:
    """Each example's token offsets in its text, the first ``max_length`` tokens (special tokens
    included, as ``(0, 0)``): one tokenizer pass over the distinct texts, nothing encoded."""
    texts = list(dict.fromkeys(e.text for e in examples))
    if not texts:
        return []
    row = {text: k for k, text in enumerate(texts)}
    offsets = tokenizer(texts, truncation=True, max_length=max_length, return_offsets_mapping=True)["offset_mapping"]
    return [offsets[row[e.text]] for e in examples]


def targets_past(tokenizer, examples: list[SenseExample], max_length: int,
                 offsets: list[list[tuple[int, int]]] | None = None) -> list[int]:
    """The positions of the examples whose target has no token among the first ``max_length`` of its
    text, as :func:`jaket.senses.graph.target_spans` reads them (a token overlapping
    the span counts), from :func:`token_offsets` (read now unless given)."""
    if offsets is None:
        offsets = token_offsets(tokenizer, examples, max_length)
    return [i for i, (e, spans) in enumerate(zip(examples, offsets))
            if not any(b > a and a < e.end and b > e.start for a, b in spans)]


@torch.no_grad()
def context_vectors(language: SplitLanguageModel, examples: list[SenseExample], batch_size: int = 64,
                    max_length: int = 96) -> torch.Tensor:
    """``(Z_s + Z_o) / 2`` of each target through LM1 + LM2 (a progress bar beyond a few batches). A
    target past the first ``max_length`` tokens of its text is a :class:`TargetPastLimit`, raised
    before any text is encoded."""
    offsets = token_offsets(language.tokenizer, examples, max_length)  # one pass: the limit and the lengths
    past = targets_past(language.tokenizer, examples, max_length, offsets)
    if past:
        first = examples[past[0]]
        more = f"; {len(past) - 1} more target(s) lie past it too" if len(past) > 1 else ""
        raise TargetPastLimit(f"sense example {past[0] + 1}: the target {quote(first.text[first.start:first.end])} "
                              f"[{first.start}, {first.end}) lies past the first {max_length} tokens of its text"
                              f"{more}; raise max_length", past[0], len(past), max_length)
    language.eval()
    device = next(language.parameters()).device
    out = torch.zeros(len(examples), int(language.hidden_size))
    # texts of like length together (a batch is padded to its longest): the refresh's batching
    batches = length_sorted_batches([len(spans) for spans in offsets], batch_size)
    for positions in tqdm(batches, desc="contexts", unit="batch", leave=False, disable=len(batches) <= 4):
        chunk = [examples[i] for i in positions]
        ids, start, end = target_spans(language.tokenizer, [e.text for e in chunk], [(e.start, e.end) for e in chunk],
                                       max_length, [f"sense example {i + 1}" for i in positions])
        width = max(len(x) for x in ids)
        pad = int(language.tokenizer.pad_token_id)
        tokens = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, x in enumerate(ids):
            tokens[i, :len(x)] = torch.from_numpy(x)
            mask[i, :len(x)] = 1
        hidden = language(tokens.to(device), mask.to(device)).float()
        out[torch.from_numpy(positions)] = span_mean(
            hidden, torch.arange(len(chunk), device=device), torch.from_numpy(start).to(device),
            torch.from_numpy(end).to(device)).cpu()
    return out.to(device)


def similarity_scores(examples: list[SenseExample], vectors: torch.Tensor, candidate_vectors: torch.Tensor,
                      index: dict[int, int], cosine: bool) -> list[np.ndarray]:
    """Each example's vector against its candidates' rows (``index``: entity -> row): cosine or dot."""
    out = []
    for e, v in zip(examples, vectors):
        if not e.candidates:
            out.append(np.zeros(0, dtype=np.float32))
            continue
        rows = candidate_vectors[[index[c] for c in e.candidates]]
        s = F.cosine_similarity(v[None], rows) if cosine else rows @ v
        out.append(s.float().cpu().numpy())
    return out


def text_scores(examples: list[SenseExample], kg: KnowledgeGraph, language: SplitLanguageModel,
                context: torch.Tensor, texts: SenseTexts, prefix: str) -> dict[str, ScorerOutput]:
    """``PREFIX (text)`` and ``PREFIX (text + kg)`` (module docstring) of the contexts ``context``;
    the texts' vectors are kept in the encoder's text-vector cache (JAKET_CACHE), so a second run
    reads none of them again."""
    candidates = _Candidates.of(examples, kg)
    own, spread = text_kg_rows(language, kg, candidates.used, texts,
                               cache=TextVectorCache.for_encoder(language, texts.max_length))
    return {f"{prefix} (text)": ScorerOutput([similarity_scores(examples, context, own, candidates.index, cosine=True)],
                                             temperature=COSINE_TEMPERATURE),
            f"{prefix} (text + kg)": ScorerOutput([similarity_scores(examples, context, spread, candidates.index,
                                                                     cosine=True)], temperature=COSINE_TEMPERATURE)}


@dataclass
class _Candidates:
    """Every candidate of the examples once (sorted), with its description and name."""

    used: np.ndarray
    index: dict[int, int]
    texts: list[str]
    names: list[str]

    @classmethod
    def of(cls, examples: list[SenseExample], kg: KnowledgeGraph) -> "_Candidates":
        used = sorted({c for e in examples for c in e.candidates})
        return cls(np.asarray(used, dtype=np.int64), {c: i for i, c in enumerate(used)},
                   [kg.entity_descriptions[c] for c in used], [kg.entity_names[c] for c in used])


# ----------------------------------------------------------------------------- the scorers


def first_sense_scores(examples: list[SenseExample]) -> ScorerOutput:
    return ScorerOutput([[np.asarray([1.0] + [0.0] * (len(e.candidates) - 1)) if e.candidates else np.zeros(0)
                          for e in examples]])


def random_scores(examples: list[SenseExample]) -> ScorerOutput:
    return ScorerOutput([[np.zeros(len(e.candidates)) for e in examples]], expected=True)


def lesk_scores(examples: list[SenseExample], kg: KnowledgeGraph, linker: EntityLinker | None = None) -> ScorerOutput:
    """``jaket link``'s rule over each example's candidates, as scores: minus the rank of each
    candidate's key (so the best key is the answer); ``linker`` over ``kg`` (default: built here)."""
    linker = linker or EntityLinker.from_kg(kg, min_length=1)
    out = []
    for e in examples:
        if not e.candidates:
            out.append(np.zeros(0))
            continue
        names = [lemma_key(kg.entity_names[c]) == lemma_key(e.lemma) for c in e.candidates]
        keys = linker.choice_keys(e.candidates, names, linker.context_of(e.text, e.start, e.end))
        order = sorted(range(len(keys)), key=keys.__getitem__, reverse=True)
        scores = np.zeros(len(keys))
        scores[order] = -np.arange(len(keys), dtype=np.float64)
        out.append(scores)
    return ScorerOutput([out])


@torch.no_grad()
def encoder_scores(examples: list[SenseExample], kg: KnowledgeGraph, *, encoder=None, seeds=(0, 1, 2),
                   description_max_length: int = 32, max_length: int = 96, km: dict | None = None,
                   with_km: bool = True, texts: SenseTexts | None = None, device="cpu",
                   stages: StageTimes | None = None) -> dict[str, ScorerOutput]:
    """The ``lm`` and (``with_km``) ``lm+g+m`` scorers of the module docstring, and ``lm (text)`` /
    ``lm (text + kg)`` with ``texts``; ``km``: the fresh KM's ``{"layers", "heads", "composition"}``
    (default :data:`FRESH_KM`); ``stages``: where each stage's time is kept."""
    km = km or FRESH_KM
    stages = stages or StageTimes()
    candidates = _Candidates.of(examples, kg)
    with stages("base encoder: load"):
        base = SplitLanguageModel.from_pretrained(encoder or default_model_path()).to(device)
    with stages("base encoder: contexts"):
        context = context_vectors(base, examples, max_length=max_length)
    with stages("base encoder: descriptions"):
        described = description_features(base, candidates.texts, candidates.names, full=True,
                                          max_length=description_max_length)
    out = {"lm": ScorerOutput([similarity_scores(examples, context, described, candidates.index, cosine=True)],
                              temperature=COSINE_TEMPERATURE)}
    if texts is not None:
        with stages("base encoder: sense texts"):
            out.update(text_scores(examples, kg, base, context, texts, "lm"))
    if not with_km:
        return out
    with stages("lm+g+m"):
        out["lm+g+m"] = _fresh_km_scores(examples, kg, base, context, candidates, seeds, description_max_length,
                                         km, device)
    return out


def _fresh_km_scores(examples, kg, base, context, candidates, seeds, description_max_length, km,
                     device) -> ScorerOutput:
    """``lm+g+m``: the base encoder's contexts against E^KM of a fresh KM per seed (module docstring)."""
    # LM+G+M before fine-tuning: E^KM of a fresh KM over the base memory (LM1 of the descriptions)
    old = neighbourhood(kg, candidates.used, 2)
    ball, _ = kg.induced_subgraph(old)
    local = np.searchsorted(old, candidates.used)
    memory = description_features(base, list(ball.entity_descriptions), list(ball.entity_names), full=False,
                                  max_length=description_max_length)
    # R = 0 as in pre-training (the KM adds its direction embeddings)
    graph = SenseGraph(ball, FrozenMemory(memory, memory.new_zeros(max(1, ball.num_relations), memory.shape[1])),
                       (5, 5))
    runs = []
    for seed in seeds:
        torch.manual_seed(seed)
        knowledge = KnowledgeModule(int(base.hidden_size), num_layers=km["layers"], heads=km["heads"],
                                    composition=km["composition"]).to(device).eval()
        rows = km_embeddings(knowledge, graph, local, np.random.default_rng(seed))
        runs.append(similarity_scores(examples, context, rows, candidates.index, cosine=True))
    return ScorerOutput(runs, tuple(seeds), COSINE_TEMPERATURE)


@torch.no_grad()
def jaket_scores(examples: list[SenseExample], kg: KnowledgeGraph, pretrained, *, description_max_length: int = 32,
                 max_length: int = 96, texts: SenseTexts | None = None, device="cpu",
                 stages: StageTimes | None = None) -> dict[str, ScorerOutput]:
    """The ``jaket`` scorer (the masked-entity head, pre-training task 4, restricted to the
    candidates: :meth:`jaket.senses.linker.ContextLinker.logits`, the linker of ``jaket link
    --model``) and ``jaket (cosine)`` of the module docstring, and ``jaket (text)`` / ``jaket (text +
    kg)`` with ``texts``."""
    stages = stages or StageTimes()
    candidates = _Candidates.of(examples, kg)
    with stages("JAKET: load"):
        linker = ContextLinker.from_pretrained(pretrained, kg, scorer="head", device=device,  # its logits: the head
                                               max_length=max_length)
    language = linker.model.language
    with stages("JAKET: contexts"):
        context = context_vectors(language, examples, max_length=max_length)  # names a target it cannot read
    with stages("JAKET: masked-entity head"):
        head = linker.logits([e.text for e in examples], [(e.start, e.end) for e in examples],
                             [e.candidates for e in examples])
    with stages("JAKET: descriptions"):
        described = description_features(language, candidates.texts, candidates.names, full=True,
                                         max_length=description_max_length)
    out = {"jaket": ScorerOutput([list(head)], temperature=1.0),
           "jaket (cosine)": ScorerOutput([similarity_scores(examples, context, described, candidates.index,
                                                             cosine=True)], temperature=COSINE_TEMPERATURE)}
    if texts is not None:
        with stages("JAKET: sense texts"):
            out.update(text_scores(examples, kg, language, context, texts, "jaket"))
    return out


def score_senses(examples: list[SenseExample], kg: KnowledgeGraph, *, scorers=None, pretrained=None,
                 encoder=None, seeds=(0, 1, 2), description_max_length: int = 32, max_length: int = 96,
                 km: dict | None = None, texts: SenseTexts | None = None, device="cpu",
                 stages: StageTimes | None = None) -> dict[str, ScorerOutput]:
    """The ``scorers`` asked for (None: all of :data:`SCORERS`, those of :data:`TEXT_SCORERS` only
    with ``texts``; those of :data:`PRETRAINED_SCORERS` only with ``pretrained``), in
    :data:`SCORERS`' order; a text scorer asked for without ``texts`` is an error. ``stages``:
    where each stage's time is kept (:class:`jaket.stages.StageTimes`)."""
    stages = stages or StageTimes()
    if scorers is None:
        scorers = tuple(s for s in SCORERS if texts is not None or s not in TEXT_SCORERS)
    if texts is None and any(s in scorers for s in TEXT_SCORERS):
        raise ValueError("the (text) scorers read the senses' texts: give texts=SenseTexts(...)")
    wants_text = any(s in scorers for s in TEXT_SCORERS)
    out: dict[str, ScorerOutput] = {"first sense": first_sense_scores(examples), "random": random_scores(examples)}
    if "lesk" in scorers:
        with stages("lesk"):
            out["lesk"] = lesk_scores(examples, kg)
    if any(s in scorers for s in ENCODER_SCORERS):
        out.update(encoder_scores(examples, kg, encoder=encoder, seeds=seeds,
                                  description_max_length=description_max_length, max_length=max_length,
                                  km=km, with_km="lm+g+m" in scorers,
                                  texts=texts if wants_text else None, device=device, stages=stages))
    if pretrained is not None and any(s in scorers for s in PRETRAINED_SCORERS):
        out.update(jaket_scores(examples, kg, pretrained, description_max_length=description_max_length,
                                max_length=max_length, texts=texts if wants_text else None, device=device,
                                stages=stages))
    return {name: out[name] for name in SCORERS if name in out and name in scorers}

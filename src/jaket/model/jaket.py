"""JaketModel: the language module (LM1 / LM2), the knowledge module, the fusion and the heads.

The data flow of the paper's "Solving the Cyclic Dependency" section:

1. ``Z = LM1(x)`` over the text (Eq. 6);
2. ``E^(0)`` = rows of the entity context memory, computed by LM1 from descriptions (Eq. 7, 11-12);
3. ``E^KM = KM(E^(0), R)`` over a sampled subgraph (Eq. 1-5), merged into ``Z`` at the mentions
   (Eq. 8-9);
4. ``Z^LM = LM2(Z')`` (Eq. 10).

KG-only tasks (entity classification, link prediction) use LM1 + KM only (:meth:`encode_entities`);
a KG never seen in pre-training is handled by recomputing the memory from its descriptions
(:meth:`memory_for`). ``save_pretrained`` / ``from_pretrained`` follow Transformers: a folder with
``config.json``, safetensors weights, the encoder as a plain Transformers folder (``encoder/``) and
the memory in its own file (``memory/``); loading needs no network and unpickles nothing. The
config (:class:`JaketConfig`, ``config.json``'s format and its upgrade) is :mod:`jaket.model.config`.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from jaket.version import __version__
from jaket.atomic import atomic_directory
from jaket.jsonio import read_json
from jaket.kg.corpus import Mention, collate_texts
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.linking import EntityLinker
from jaket.kg.sampling import sample_neighbors
from jaket.model.config import (JaketConfig, ModelFolderError, check_fits_encoder,  # noqa: F401 (re-exported)
                                encoder_shape, read_model_config)
from jaket.model.device import resolve_device
from jaket.model.fusion import MentionFusion
from jaket.model.heads import CategoryHead, EntityHead, RelationHead, span_mean
from jaket.model.hub import IGNORED_HUB_ARGUMENTS, model_card_text, push_folder, register, resolve_folder
from jaket.model.knowledge import KnowledgeModule
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import MEMORY_FILE, MEMORY_META, EntityContextMemory, padding_groups
from jaket.output import check_folder_to_replace
from jaket.paths import default_model_path

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "jaket.safetensors"
ENCODER_DIR = "encoder"
MEMORY_DIR = "memory"


class KGMismatchError(ValueError):
    """A subgraph (or KG) is not the one whose entity context memory the model would use."""


@dataclass(frozen=True)
class LinkedMention(Mention):
    """A mention :meth:`JaketModel.encode_texts` encoded: ``entity`` is the entity's index in the
    KG (as in every :class:`jaket.kg.corpus.Mention`), ``entity_id`` its id (``"Q42"``)."""

    entity_id: str


@dataclass
class TextEncoding:
    """What :meth:`JaketModel.encode_texts` returns, one entry per text.

    ``tokens[i]`` (L_i, F) is ``Z^LM`` (Eq. 10) at every token of text ``i`` (special tokens
    included, in the order of ``input_ids[i]``; ``offsets[i]`` (L_i, 2) is each token's character
    span, ``(0, 0)`` for special tokens). ``mentions[i]`` are the linked mentions that were encoded
    (:class:`LinkedMention`: character spans, end exclusive, the entity's index ``entity`` and id
    ``entity_id``; :attr:`entity_ids` lists the ids per text; mentions cut off by ``max_length`` are
    left out and counted in ``dropped_mentions``), ``mention_spans[i]`` (k_i, 2) their inclusive token spans
    ``(s, o)``, ``mention_embeddings[i]`` (k_i, F) ``(Z^LM_s + Z^LM_o) / 2`` and
    ``entity_embeddings[i]`` (k_i, F) the linked entity's ``E^KM`` (Eq. 1-5) that was fused there.
    """

    texts: list[str]
    input_ids: list[torch.Tensor]
    offsets: list[np.ndarray]
    tokens: list[torch.Tensor]
    mentions: list[list]
    mention_spans: list[np.ndarray]
    mention_embeddings: list[torch.Tensor]
    entity_embeddings: list[torch.Tensor]
    dropped_mentions: int = 0

    @property
    def entity_ids(self) -> list[list[str]]:
        """The id of each mention's entity, per text (``mentions[i][j].entity_id``)."""
        return [[m.entity_id for m in mentions] for mentions in self.mentions]


def check_memory_fits(memory: EntityContextMemory, subgraph) -> None:
    """Raise :class:`KGMismatchError` unless ``subgraph`` was sampled from the KG ``memory``
    describes (compared by :meth:`KnowledgeGraph.fingerprint` when both are known, and always by
    the entity indices the subgraph holds)."""
    sampled_from = getattr(subgraph, "kg_fingerprint", None)
    if sampled_from is not None and memory.kg_fingerprint is not None and sampled_from != memory.kg_fingerprint:
        raise KGMismatchError(
            f"the subgraph was sampled from another KG ({_describe_fingerprint(sampled_from)}) than the "
            f"one the entity context memory describes ({_describe_fingerprint(memory.kg_fingerprint)}): "
            f"compute that KG's memory with model.memory_for(kg) and pass it (memory=...) or attach it "
            f"(model.attach_memory(memory, kg)); model.encode_texts(texts, kg) does all of this")
    if subgraph.num_nodes and int(subgraph.node_ids.max()) >= memory.num_entities:
        raise KGMismatchError(f"the subgraph holds entity index {int(subgraph.node_ids.max())}, the entity "
                              f"context memory only {memory.num_entities} rows: it describes another KG")


def text_list(texts) -> list[str]:
    """``texts`` as a list of strings (one string alone is one text); anything else in it is a
    ``TypeError`` naming its position (it failed inside the linker's regular expressions)."""
    if isinstance(texts, str):
        return [texts]
    if not isinstance(texts, Iterable):
        raise TypeError(f"texts: give a list of strings (or one string), got {type(texts).__name__}")
    texts = list(texts)
    wrong = next((i for i, text in enumerate(texts) if not isinstance(text, str)), None)
    if wrong is not None:
        raise TypeError(f"texts[{wrong}]: expected a string, got {type(texts[wrong]).__name__}")
    return texts


def _check_batch_size(batch_size: int) -> None:
    """A batch size below 1 encoded nothing (negative: an empty result without a word; 0: ``range()``'s error)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer of at least 1, got {batch_size!r}")


def _describe_fingerprint(fingerprint: str) -> str:
    entities, relations, digest = (fingerprint.split(":") + ["", "", ""])[:3]
    return f"{entities} entities, {relations} relations, ids hash {digest[:8]}"


@dataclass
class JaketOutput:
    """``hidden`` = Z^LM (B, L, F); ``entity_km`` = E^KM of the subgraph's seeds (num_seeds, F),
    indexed by their local ids (``subgraph.seed_local``; the seeds are the first nodes);
    ``mlm_logits`` (B, L, V) only when asked for (decoding every position is the costliest part of
    a step, so the trainer decodes the masked positions only)."""

    hidden: torch.Tensor
    entity_km: torch.Tensor
    mlm_logits: torch.Tensor | None = None


class JaketModel(nn.Module):
    """The joint model. ``JaketModel(config)`` loads the encoder named by ``config.encoder``;
    ``JaketModel.from_pretrained(dir)`` loads a saved model."""

    def __init__(self, config: JaketConfig, language: SplitLanguageModel | None = None):
        super().__init__()
        if language is None:
            encoder = config.encoder
            if not encoder:
                encoder = str(default_model_path())
            language = SplitLanguageModel.from_pretrained(encoder, lm1_layers=config.lm1_layers)
        self.config = config
        self.language = language
        hidden = language.hidden_size
        eps = float(getattr(language.config, "layer_norm_eps", 1e-12))
        self.knowledge = KnowledgeModule(hidden, num_layers=config.km_layers, heads=config.km_heads,
                                         composition=config.composition,
                                         activation=config.km_activation, dropout=config.km_dropout,
                                         layer_norm_eps=eps)
        self.fusion = MentionFusion(hidden, normalize=config.fusion_normalize, layer_norm_eps=eps)
        self.entity_head = EntityHead(hidden)
        self.category_head = CategoryHead(hidden, config.num_categories)
        self.relation_head = RelationHead(hidden, config.num_relations)
        self.memory: EntityContextMemory | None = None
        self._memory_kg: weakref.ref | None = None
        self._kg_memories: dict[int, tuple[weakref.ref, EntityContextMemory]] = {}
        self._kg_linkers: dict[int, tuple[weakref.ref, object]] = {}

    @property
    def use_relation_memory(self) -> bool:
        return self.config.use_relation_memory

    @use_relation_memory.setter
    def use_relation_memory(self, value: bool) -> None:
        self.config.use_relation_memory = bool(value)

    @property
    def hidden_size(self) -> int:
        return self.language.hidden_size

    # ------------------------------------------------------------------ memory
    def attach_memory(self, memory: EntityContextMemory, kg=None) -> None:
        """Use ``memory`` as E^context / R^context (``kg``: the graph it describes, if known).

        With ``kg`` the memory is tied to that graph's :meth:`KnowledgeGraph.fingerprint`, and
        :meth:`forward` refuses subgraphs sampled from any other graph."""
        if memory.dim != self.hidden_size:
            raise ValueError(f"memory rows have {memory.dim} dims, the model {self.hidden_size}")
        if kg is not None:
            fingerprint = kg.fingerprint()
            if memory.num_entities != kg.num_entities or memory.num_relations != kg.num_relations:
                raise KGMismatchError(f"the memory has {memory.num_entities} entity / {memory.num_relations} "
                                      f"relation rows, the KG {kg.num_entities} / {kg.num_relations}")
            if memory.kg_fingerprint not in (None, fingerprint):
                raise KGMismatchError(f"the memory was computed for another KG ({memory.kg_fingerprint}) "
                                      f"than this one ({fingerprint}); use model.memory_for(kg)")
            memory.kg_fingerprint = fingerprint
        self.memory = memory
        self._memory_kg = weakref.ref(kg) if kg is not None else None

    @property
    def device(self) -> torch.device:
        """Where the parameters are (the knowledge module's)."""
        return next(self.knowledge.parameters()).device

    def place(self, device=None, dtype: torch.dtype | None = None) -> "JaketModel":
        """Move the parameters to ``device`` (None = :func:`jaket.model.device.default_device`)
        and, if given, ``dtype``; the attached memory follows
        (:meth:`EntityContextMemory.place`: on the device when it fits, else host memory)."""
        device = resolve_device(device)
        self.to(device=device, dtype=dtype)
        if self.memory is not None:
            self.memory.place(device)
        return self

    @torch.no_grad()
    def memory_for(self, kg: KnowledgeGraph, progress: bool = True, path=None) -> EntityContextMemory:
        """E^context / R^context of ``kg`` from its descriptions by this model's LM1 (Eq. 7),
        served to this model's device (:meth:`EntityContextMemory.place`).

        For a KG never seen in pre-training this *is* the adaptation step of the paper's
        fine-tuning section. The result is cached for the lifetime of ``kg``.
        """
        if self.memory is not None and self._memory_kg is not None and self._memory_kg() is kg:
            return self.memory
        cached = self._kg_memories.get(id(kg))
        if cached is not None and cached[0]() is kg:
            return cached[1]
        memory = EntityContextMemory.from_kg(
            self.language, kg, dtype=self.config.memory_dtype, path=path,
            momentum=self.config.memory_momentum, max_length=self.config.description_max_length,
            progress=progress)
        memory.place(self.device)
        self._kg_memories = {id(kg): (weakref.ref(kg), memory)}
        return memory

    # ------------------------------------------------------------------ knowledge module
    def knowledge_forward(self, subgraph, memory: EntityContextMemory | None = None,
                          seeds_only: bool = True, fresh_rows: tuple[torch.Tensor, torch.Tensor] | None = None
                          ) -> torch.Tensor:
        """``E^KM`` of the subgraph's seeds (``(num_seeds, F)``; the seeds are its first nodes):
        memory rows -> KM (Eq. 1-5), each layer restricted to what the seeds need. With
        ``seeds_only=False`` every node's row ``(n, F)`` (the untrimmed computation).

        ``fresh_rows = (local, rows)`` replaces the memory rows ``E^(0)`` of the local nodes
        ``local`` by ``rows`` (e.g. Eq. 7 computed with gradients: :meth:`describe`)."""
        memory = memory if memory is not None else self.memory
        if memory is None:
            raise RuntimeError("no entity context memory: call attach_memory() or pass memory=")
        check_memory_fits(memory, subgraph)
        device = subgraph.edge_index.device
        dtype = next(self.knowledge.parameters()).dtype
        x = memory.entity_rows(subgraph.node_ids, device=device).to(dtype)
        if fresh_rows is not None and len(fresh_rows[0]):
            x = x.index_put((fresh_rows[0].to(device),), fresh_rows[1].to(x.dtype))
        relations = memory.relation_rows(device=device).to(dtype) if self.config.use_relation_memory else None
        hops = None
        if seeds_only and subgraph.nodes_per_hop is not None:
            hops = (subgraph.nodes_per_hop, subgraph.edges_per_hop)
        return self.knowledge(x, subgraph.edge_index, subgraph.edge_type, relations,
                              num_relations=memory.num_relations, hops=hops)

    def describe(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, start: torch.Tensor,
                 end: torch.Tensor) -> torch.Tensor:
        """Eq. 7 with gradients: ``(Z_s + Z_o) / 2`` of LM1 over tokenised descriptions (n, F).

        The rows are read in groups of like length, each cut to its own longest row
        (:func:`jaket.model.memory.padding_groups`): a row's result does not depend on its group
        (the attention mask hides the padding), only the padded positions are no longer computed."""
        lengths = attention_mask.sum(1)
        groups = padding_groups(lengths.cpu().numpy())
        if len(groups) == 1:
            z = self.language.lm1(input_ids, attention_mask)
            return span_mean(z, torch.arange(len(input_ids), device=z.device), start, end)
        parts, order = [], []
        for rows in groups:
            index = torch.from_numpy(rows).to(input_ids.device)
            width = int(lengths[index].max())
            z = self.language.lm1(input_ids[index, :width], attention_mask[index, :width])
            parts.append(span_mean(z, torch.arange(len(rows), device=z.device), start[index], end[index]))
            order.append(index)
        return torch.cat(parts)[torch.argsort(torch.cat(order))]

    @torch.no_grad()
    def encode_entities(self, kg: KnowledgeGraph, entities, memory: EntityContextMemory | None = None,
                        batch_size: int = 1024, generator: np.random.Generator | None = None,
                        progress: bool = False) -> torch.Tensor:
        """``E^KM`` of the given entities of ``kg`` (LM1 + KM; LM2 unused), (len, F), row ``i``
        for ``entities[i]``.

        ``entities``: entity ids (``["py", "rust"]``), entity indices (ints, an int array, a
        ``range``) or a mix (:meth:`KnowledgeGraph.entity_indices`; an unknown id is a
        ``ValueError`` naming it). Each batch of entities gets its sampled neighbourhood
        (``config.fanouts``); the memory is ``kg``'s own (recomputed from its descriptions when
        ``kg`` is not the attached one). Runs without gradients, in the model's current mode
        (call ``eval()`` for inference).
        """
        _check_batch_size(batch_size)
        ids = kg.entity_indices(entities)  # first: a wrong id fails before the memory is computed
        memory = memory if memory is not None else self.memory_for(kg, progress=progress)
        generator = generator if generator is not None else np.random.default_rng(0)
        device = next(self.knowledge.parameters()).device
        out = []
        for begin in range(0, len(ids), batch_size):
            subgraph = sample_neighbors(kg, ids[begin:begin + batch_size], self.config.fanouts,
                                        generator).to(device)
            out.append(self.knowledge_forward(subgraph, memory)[subgraph.seed_local])
        if not out:
            return torch.zeros(0, self.hidden_size, device=device)
        return torch.cat(out)

    # ------------------------------------------------------------------ text
    def forward(self, text, subgraph, mention_node: torch.Tensor, fuse_mask: torch.Tensor | None = None,
                return_mlm_logits: bool = False, memory: EntityContextMemory | None = None,
                fresh_rows: tuple[torch.Tensor, torch.Tensor] | None = None) -> JaketOutput:
        """Steps 1-4 on a text batch and the subgraph around its entities.

        ``mention_node`` (M,): local index in ``subgraph`` of each mention's entity;
        ``fuse_mask`` (M,) False = the mention is removed (masked entity prediction) and gets no
        KG embedding; ``memory``: E^context of the subgraph's KG (default: the attached one);
        ``fresh_rows``: see :meth:`knowledge_forward`.
        Raises :class:`KGMismatchError` when the subgraph comes from another KG than the memory's.
        """
        entity_km = self.knowledge_forward(subgraph, memory, fresh_rows=fresh_rows)  # Eq. 1-5
        z = self.language.lm1(text.input_ids, text.attention_mask)  # Eq. 6
        if fuse_mask is None:
            fuse_mask = torch.ones_like(mention_node, dtype=torch.bool)
        mention_embedding = entity_km[mention_node.clamp(min=0)]
        z = self.fusion(z, text.mention_batch, text.mention_start, text.mention_end,
                        mention_embedding, fuse_mask & (mention_node >= 0))  # Eq. 8-9
        hidden = self.language.lm2(z, text.attention_mask)  # Eq. 10
        logits = self.language.mlm_logits(hidden) if return_mlm_logits else None
        return JaketOutput(hidden=hidden, entity_km=entity_km, mlm_logits=logits)

    def encode_text(self, text, subgraph=None, mention_node: torch.Tensor | None = None) -> torch.Tensor:
        """``Z^LM`` of a text batch: with a subgraph, the mentions get their KG embedding fused;
        without one, the plain encoder (LM2(LM1(x)))."""
        if subgraph is None:
            return self.language(text.input_ids, text.attention_mask)
        return self.forward(text, subgraph, mention_node).hidden

    @torch.no_grad()
    def encode_texts(self, texts, kg: KnowledgeGraph, *, max_length: int = 128, batch_size: int = 16,
                     memory: EntityContextMemory | None = None, linker=None,
                     generator: np.random.Generator | None = None) -> TextEncoding:
        """Plain texts in, ``Z^LM`` and mention embeddings out, in one call.

        Every step of the paper's data flow on ``kg`` (which may be unseen): the texts are linked
        to ``kg``'s entities by their names and aliases (:class:`jaket.kg.linking.EntityLinker`,
        built once per KG), tokenised (at most ``max_length`` tokens), each batch's mentioned
        entities get their sampled neighbourhood (``config.fanouts``), the knowledge module runs
        over ``kg``'s memory (:meth:`memory_for`, or ``memory``; Eq. 1-5), its output is fused at
        the mentions (Eq. 8-9) and LM2 finishes (Eq. 10). See :class:`TextEncoding`: each mention
        carries its entity's index (``entity``) and id (``entity_id``).
        """
        texts = text_list(texts)
        _check_batch_size(batch_size)
        if linker is None:
            linker = self._linker_for(kg)
        corpus = linker.link_texts(texts)
        memory = memory if memory is not None else self.memory_for(kg, progress=False)
        generator = generator if generator is not None else np.random.default_rng(0)
        tokenizer = self.language.tokenizer
        encoded = corpus.encode(tokenizer, max_length=max_length)
        offsets = [np.asarray(o, dtype=np.int64).reshape(-1, 2) for o in tokenizer(
            texts, truncation=True, max_length=max_length, return_offsets_mapping=True,
            return_attention_mask=False, return_token_type_ids=False)["offset_mapping"]] if texts else []
        device = next(self.knowledge.parameters()).device
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        result = TextEncoding(texts, [], offsets, [], [], [], [], [], encoded.dropped_mentions)
        was_training = self.training
        self.eval()
        try:
            for begin in range(0, len(texts), batch_size):
                rows = list(range(begin, min(len(texts), begin + batch_size)))
                batch = collate_texts(encoded, rows, pad)
                entities = batch.mention_entity.numpy()
                seeds = entities if len(entities) else np.zeros(1, dtype=np.int64)
                subgraph = sample_neighbors(kg, seeds, self.config.fanouts if len(entities) else (),
                                            generator)
                mention_node = subgraph.seed_local[:len(entities)]
                out = self.forward(batch.to(device), subgraph.to(device), mention_node.to(device),
                                   memory=memory)
                hidden = out.hidden.float().cpu()
                b, s, o = batch.mention_batch, batch.mention_start, batch.mention_end
                spans = span_mean(hidden, b, s, o)
                fused = out.entity_km.float().cpu()[mention_node]
                for j, row in enumerate(rows):
                    length = len(encoded.input_ids[row])
                    mine = (b == j).numpy()
                    token_spans = np.stack([s.numpy()[mine], o.numpy()[mine]], axis=1)
                    result.input_ids.append(torch.from_numpy(encoded.input_ids[row].astype(np.int64)))
                    result.tokens.append(hidden[j, :length])
                    result.mention_spans.append(token_spans)
                    result.mentions.append([LinkedMention(int(offsets[row][a, 0]), int(offsets[row][z, 1]), int(e),
                                                          str(kg.entity_ids[int(e)]))
                                            for (a, z), e in zip(token_spans, entities[mine])])
                    result.mention_embeddings.append(spans[mine])
                    result.entity_embeddings.append(fused[mine])
        finally:
            self.train(was_training)
        return result

    def _linker_for(self, kg: KnowledgeGraph) -> EntityLinker:
        """The gazetteer linker of ``kg`` (built on first use, kept for the lifetime of ``kg``)."""
        cached = self._kg_linkers.get(id(kg))
        if cached is not None and cached[0]() is kg:
            return cached[1]
        linker = EntityLinker.from_kg(kg)
        self._kg_linkers = {id(kg): (weakref.ref(kg), linker)}
        return linker

    # ------------------------------------------------------------------ files
    def _head_state(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.state_dict().items() if not k.startswith("language.")}

    def save_pretrained(self, directory: str | Path, save_memory: bool = True, card: dict | None = None,
                        model_card: bool = True) -> Path:
        """Write ``config.json``, ``jaket.safetensors`` (KM, fusion, heads), ``encoder/`` (a plain
        Transformers folder), ``memory/`` and, with ``model_card``, a model card ``README.md``
        (``card``: sections the caller adds to it, e.g. pre-training's configuration and data
        report); the folder is replaced atomically. ``directory`` may be new, empty or an earlier model
        folder (one with ``jaket.safetensors``; the model's own is fine): a file or another folder is a
        ``ValueError``, as replacing it would delete what it holds."""
        from safetensors.torch import save_file

        directory = Path(directory)
        check_folder_to_replace(directory, WEIGHTS_FILE, "jaket model")
        with atomic_directory(directory) as tmp:
            self.language.save_pretrained(tmp / ENCODER_DIR)
            save_file({k: v.detach().contiguous() for k, v in self._head_state().items()},
                      str(tmp / WEIGHTS_FILE))
            config = self.config.to_dict()
            config.update(encoder=ENCODER_DIR, model_type="jaket", lm1_layers=self.language.lm1_layers)
            config["jaket_version"] = __version__
            (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
            memory = self.memory if save_memory else None
            if memory is not None:
                memory.save(tmp / MEMORY_DIR)
            base = {"base_encoder": self.config.encoder or "the bundled MiniLM-L6 (all-MiniLM-L6-v2)"}
            if model_card:
                (tmp / "README.md").write_text(model_card_text(config, memory.num_entities if memory is not None else None,
                                                          {**base, **(card or {})}), encoding="utf-8")
        return directory

    def push_to_hub(self, repo_id: str, private: bool | None = None, token: str | None = None,
                    commit_message: str = "Upload jaket model", card: dict | None = None) -> str:
        """:meth:`save_pretrained` into a temporary folder and upload it to the Hub repo
        ``repo_id`` (created when missing) with ``huggingface_hub``; returns the commit URL."""
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            self.save_pretrained(Path(folder) / "model", card=card)
            return push_folder(Path(folder) / "model", repo_id, private=private, token=token,
                               commit_message=commit_message)

    @classmethod
    def from_pretrained(cls, directory: str | Path, load_memory: bool = True, *, device=None,
                        dtype: torch.dtype | None = None, revision: str | None = None, cache_dir=None,
                        local_files_only: bool | None = None, token=None, config=None,
                        **hub_arguments) -> "JaketModel":
        """Load a folder written by :meth:`save_pretrained` (safetensors only), or a Hub repo id
        (``org/model``, through ``huggingface_hub``: ``revision``, ``cache_dir``,
        ``local_files_only``, ``token``; offline it is read from the local cache), in eval mode,
        on ``device`` (default ``cpu``, as Transformers; the commands' ``--device`` defaults to
        ``cuda`` when a GPU is visible) in ``dtype`` (default: as saved, float32); the memory is
        served as :meth:`place` says. ``transformers.AutoModel.from_pretrained`` calls this (its
        ``config`` is read again here, validated).

        Everything is checked before the weights are loaded: ``config.json`` (types and bounds,
        :meth:`JaketConfig.from_dict`), that it fits the encoder (:func:`check_fits_encoder`) and
        that the tensors of ``jaket.safetensors`` have the shapes the config implies; any problem
        is a :class:`ModelFolderError` naming the file."""
        from safetensors import safe_open
        from safetensors.torch import load_file

        unknown = sorted(set(hub_arguments) - IGNORED_HUB_ARGUMENTS)
        if unknown:
            raise TypeError(f"JaketModel.from_pretrained() got unexpected keyword arguments {unknown}")
        where = resolve_device("cpu" if device is None else device, flag="device")  # before any loading
        directory = resolve_folder(directory, revision=revision, cache_dir=cache_dir,
                                   local_files_only=local_files_only, token=token)
        config_path = directory / CONFIG_FILE
        data = read_model_config(directory)  # the one reading of a pre-trained folder's config
        config = JaketConfig.from_dict(data, where=str(config_path))
        config.encoder = str(directory / ENCODER_DIR)
        check_fits_encoder(config, *encoder_shape(config.encoder), where=str(config_path))
        weights = directory / WEIGHTS_FILE
        try:
            with safe_open(str(weights), framework="pt") as handle:
                shapes = {k: list(handle.get_slice(k).get_shape()) for k in handle.keys()}
        except FileNotFoundError:
            raise ModelFolderError(f"{weights}: missing") from None
        except Exception as error:  # safetensors' own SafetensorError: a truncated or foreign file
            raise ModelFolderError(f"{weights}: not a readable safetensors file ({error})") from None
        for key, size, name in (("category_head.classifier.weight", config.num_categories, "num_categories"),
                                ("relation_head.out.weight", config.num_relations, "num_relations")):
            if key not in shapes or shapes[key][0] != size:  # checked before they are allocated
                found = f"has {shapes[key][0]} rows" if key in shapes else "is missing"
                raise ModelFolderError(f"{weights}: {key} {found}; {config_path} says {name}={size}")
        model = cls(config)
        expected = {k: list(v.shape) for k, v in model._head_state().items()}
        wrong = [f"{k} is {shapes[k]}, the config implies {expected[k]}"
                 for k in expected if k in shapes and shapes[k] != expected[k]]
        missing = [k for k in expected if k not in shapes]
        unexpected = [k for k in shapes if k not in expected]
        if wrong or missing or unexpected:
            raise ModelFolderError(f"{weights}: does not fit {config_path}: "
                                   + "; ".join(wrong[:3] + [f"missing {missing[:5]}"] * bool(missing)
                                               + [f"unexpected {unexpected[:5]}"] * bool(unexpected)))
        try:
            state = load_file(str(weights))
        except Exception as error:
            raise ModelFolderError(f"{weights}: not a readable safetensors file ({error})") from None
        model.load_state_dict(state, strict=False)
        if load_memory and (directory / MEMORY_DIR).is_dir():
            model.attach_memory(_load_memory(directory / MEMORY_DIR, model.hidden_size))
        return model.place(where, dtype).eval()


def _load_memory(folder: Path, hidden_size: int) -> EntityContextMemory:
    """The memory of a model folder, its ``memory.json`` checked against the tensors' shapes in
    the safetensors header first (so no size is allocated that the file does not hold)."""
    from safetensors import safe_open

    try:
        meta = read_json(folder / MEMORY_META)
        with safe_open(str(folder / MEMORY_FILE), framework="pt") as handle:
            shapes = {k: list(handle.get_slice(k).get_shape()) for k in handle.keys()}
        expected = {"entities": [meta["num_entities"], meta["dim"]],
                    "relations": [meta["num_relations"], meta["dim"]]}
    except Exception as error:  # OSError, ValueError, KeyError, TypeError, SafetensorError
        raise ModelFolderError(f"{folder}: unreadable memory ({type(error).__name__}: {error})") from None
    if shapes != expected or meta["dim"] != hidden_size:
        raise ModelFolderError(f"{folder}: {MEMORY_META} says entities {expected['entities']}, relations "
                               f"{expected['relations']} for a model of width {hidden_size}; "
                               f"{MEMORY_FILE} holds {shapes}")
    try:
        return EntityContextMemory.load(folder)
    except Exception as error:  # OSError, ValueError, KeyError, SafetensorError
        raise ModelFolderError(f"{folder}: unreadable memory ({type(error).__name__}: {error})") from None


register(JaketModel)  # transformers.AutoConfig / AutoModel know model_type 'jaket'
